//! The crate's error type. Every message says what failed and what to do about it.

use cudarc::driver::DriverError;
use cudarc::nvrtc::result::NvrtcError;

/// Everything that can go wrong between looking for the CUDA libraries and downloading a result.
#[derive(Debug, thiserror::Error)]
pub enum CudaError {
    /// `libcuda.so` could not be loaded.
    #[error(
        "libcuda.so not found: no NVIDIA driver is installed or its folder is not on \
         LD_LIBRARY_PATH; install the driver or run with --backend cpu"
    )]
    DriverMissing,

    /// `libnvrtc.so` could not be loaded.
    #[error(
        "libnvrtc.so not found: the CUDA runtime compiler (NVRTC, part of the CUDA toolkit or the \
         `nvidia-cuda-nvrtc` wheel) is not installed or its folder is not on LD_LIBRARY_PATH; \
         install it or run with --backend cpu"
    )]
    NvrtcMissing,

    /// `libcublas.so` could not be loaded (needed by the global kriging variance).
    #[error(
        "libcublas.so not found: cuBLAS (part of the CUDA toolkit or the `nvidia-cublas` wheel) \
         is not installed or its folder is not on LD_LIBRARY_PATH; install it or run with \
         --backend cpu"
    )]
    CublasMissing,

    /// A cuBLAS call failed.
    #[error("cuBLAS call failed while {action}: {source}")]
    Cublas {
        action: String,
        #[source]
        source: cudarc::cublas::result::CublasError,
    },

    /// `libcufft.so` could not be loaded (needed by the dispersal near/far far field).
    #[error(
        "libcufft.so not found: cuFFT (part of the CUDA toolkit or the `nvidia-cufft` wheel) is \
         not installed or its folder is not on LD_LIBRARY_PATH; install it, or use the cutoff or \
         exact method, or run with --backend cpu"
    )]
    CufftMissing,

    /// A cuFFT call failed.
    #[error("cuFFT call failed while {action}: {source}")]
    Cufft {
        action: String,
        #[source]
        source: cudarc::cufft::result::CufftError,
    },

    /// The requested device ordinal does not exist.
    #[error("CUDA device {ordinal} does not exist: this machine has {count} CUDA device(s)")]
    NoSuchDevice { ordinal: usize, count: usize },

    /// A CUDA driver call failed.
    #[error("CUDA driver call failed while {action}: {source}")]
    Driver {
        action: String,
        #[source]
        source: DriverError,
    },

    /// NVRTC rejected a kernel module; `log` is the compiler's full output.
    #[error(
        "NVRTC failed to compile kernel module `{module}` for {arch} (options: {options}); \
         compiler log:\n{log}"
    )]
    Compile {
        module: String,
        arch: String,
        options: String,
        log: String,
    },

    /// An NVRTC call other than the compilation itself failed.
    #[error("NVRTC call failed while {action} for kernel module `{module}`: {source}")]
    Nvrtc {
        module: String,
        action: &'static str,
        #[source]
        source: NvrtcError,
    },

    /// NVRTC cannot target this device.
    #[error(
        "NVRTC {nvrtc_major}.{nvrtc_minor} cannot generate code for compute capability \
         {major}.{minor} (it supports {supported}); install an NVRTC that supports this GPU"
    )]
    UnsupportedArch {
        major: i32,
        minor: i32,
        nvrtc_major: i32,
        nvrtc_minor: i32,
        supported: String,
    },

    /// The driver refused the PTX NVRTC produced (usually: NVRTC newer than the driver).
    #[error(
        "the CUDA driver (supports CUDA {driver}) could not load kernel module `{module}` \
         compiled by NVRTC {nvrtc}: {source}; if NVRTC is newer than the driver, upgrade the \
         driver or put a matching libnvrtc first on LD_LIBRARY_PATH"
    )]
    ModuleLoad {
        module: String,
        driver: String,
        nvrtc: String,
        #[source]
        source: DriverError,
    },

    /// A module name that is not in [`crate::MODULES`].
    #[error("unknown kernel module `{0}`: it is not registered in geofield_cuda::MODULES")]
    UnknownModule(String),

    /// Inputs that a kernel cannot take (length mismatch, non-finite value, bad parameter).
    #[error("invalid input to {kernel}: {detail}")]
    InvalidInput {
        kernel: &'static str,
        detail: String,
    },

    /// A problem larger than the device memory that is free (checked before allocating).
    #[error(
        "{what} needs about {need_gb:.1} GB of GPU memory, but the GPU has {free_gb:.1} GB free: \
         use --backend cpu, a coarser grid, or a GPU with more memory"
    )]
    DeviceMemory {
        what: String,
        need_gb: f64,
        free_gb: f64,
    },

    /// The device computed something other than the known answer (probe kernel).
    #[error("the probe kernel ran but returned {got} instead of {expected}: the GPU is not usable")]
    WrongResult { expected: i32, got: i32 },
}

impl CudaError {
    /// The message on one line (newlines of compiler logs folded), at most `max` characters.
    pub fn one_line(&self, max: usize) -> String {
        let s = self.to_string().replace('\n', " | ");
        if s.chars().count() <= max {
            s
        } else {
            let mut t: String = s.chars().take(max.saturating_sub(3)).collect();
            t.push_str("...");
            t
        }
    }
}

/// Attaches what was being done to a driver error.
pub(crate) trait DriverResultExt<T> {
    fn doing(self, action: &str) -> Result<T, CudaError>;
}

impl<T> DriverResultExt<T> for Result<T, DriverError> {
    fn doing(self, action: &str) -> Result<T, CudaError> {
        self.map_err(|source| CudaError::Driver {
            action: action.to_string(),
            source,
        })
    }
}

/// Shorthand for an [`CudaError::InvalidInput`].
pub(crate) fn invalid(kernel: &'static str, detail: impl Into<String>) -> CudaError {
    CudaError::InvalidInput {
        kernel,
        detail: detail.into(),
    }
}
