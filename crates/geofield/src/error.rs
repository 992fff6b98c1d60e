use thiserror::Error;

/// Errors from geofield's library functions.
#[derive(Debug, Error)]
pub enum GeofieldError {
    #[error(transparent)]
    Core(#[from] geofield_core::CoreError),
    #[error("CUDA backend: {0}")]
    Cuda(#[from] geofield_cuda::CudaError),
    /// The caller asked for something the inputs do not allow.
    #[error("{0}")]
    Invalid(String),
    /// A parameter is out of its domain; `name` is the library's field name (e.g. `sill`).
    #[error("{name} = {value}: must be {expected}")]
    InvalidParameter {
        name: &'static str,
        value: String,
        expected: String,
    },
    /// A requested combination is not supported.
    #[error("not supported: {0}")]
    Unsupported(String),
}
