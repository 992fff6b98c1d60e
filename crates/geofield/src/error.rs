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
    /// A parameter outside its domain: `name` is the library's field name (e.g. `dz_m`).
    #[error("{name} = {value}: expected {expected}")]
    InvalidParameter {
        name: String,
        value: String,
        expected: String,
    },
    /// A computed result is not finite (an overflow or a degenerate input); `cause` names the
    /// input that led to it.
    #[error("the {what} is not finite ({cause}); nothing was written")]
    NonFinite { what: String, cause: String },
    /// A requested combination is not supported.
    #[error("not supported: {0}")]
    Unsupported(String),
}
