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
    /// Global kriging of `samples` samples would hold more memory (the covariance matrix and its
    /// factor, 3 n² f64: `need_bytes`) than is available (`available_bytes`).
    #[error(
        "global kriging of {samples} samples needs about {:.1} GB for the covariance matrix and its factor, more than the {:.1} GB available: use local kriging (Neighbourhood::Local, e.g. k = 32)",
        *.need_bytes as f64 / 1e9, *.available_bytes as f64 / 1e9
    )]
    KrigingTooLarge {
        samples: usize,
        need_bytes: u128,
        available_bytes: u128,
    },
    /// A requested combination is not supported.
    #[error("not supported: {0}")]
    Unsupported(String),
    /// The call was cancelled through its [`Cancel`](crate::Cancel) token before it finished;
    /// nothing was returned.
    #[error("cancelled")]
    Cancelled,
}

/// A number as a message shows it: plain where short (`10`, `0.25`), in exponent form where the
/// plain form would be long (`1e308`, `2.5e-9`), so that no message prints hundreds of digits.
pub fn shown(v: f64) -> String {
    let a = v.abs();
    if v.is_finite() && a != 0.0 && !(1e-4..1e9).contains(&a) {
        format!("{v:e}")
    } else {
        v.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::shown;

    #[test]
    fn numbers_in_messages_stay_short() {
        assert_eq!(shown(10.0), "10");
        assert_eq!(shown(0.25), "0.25");
        assert_eq!(shown(0.0), "0");
        assert_eq!(shown(1e308), "1e308");
        assert_eq!(shown(-2.5e-9), "-2.5e-9");
        assert_eq!(shown(f64::NAN), "NaN");
        assert!(shown(f64::MAX).len() < 30);
    }
}
