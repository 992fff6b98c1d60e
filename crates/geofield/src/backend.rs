//! Backend selection: `auto` probes CUDA and falls back to the CPU with a one-line reason;
//! an explicit `cuda[:N]` that cannot be used is an error.

use std::str::FromStr;
use std::sync::Arc;

use geofield_cuda::Gpu;
pub use geofield_cuda::{DeviceInfo, ProbeReport, probe};

use crate::GeofieldError;

/// What the user asked for (`--backend auto|cpu|cuda[:N]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendChoice {
    Auto,
    Cpu,
    Cuda(usize),
}

impl FromStr for BackendChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim().to_ascii_lowercase();
        match s.as_str() {
            "auto" => Ok(Self::Auto),
            "cpu" => Ok(Self::Cpu),
            "cuda" | "gpu" => Ok(Self::Cuda(0)),
            _ => match s.strip_prefix("cuda:") {
                Some(n) => n.parse::<usize>().map(Self::Cuda).map_err(|_| {
                    format!(
                        "bad device ordinal in backend {s:?}: expected cuda:N with N = 0, 1, ..."
                    )
                }),
                None => Err(format!(
                    "unknown backend {s:?}: expected auto, cpu, cuda or cuda:N"
                )),
            },
        }
    }
}

/// A ready backend.
#[derive(Clone)]
pub enum Backend {
    Cpu,
    Cuda(Arc<Gpu>),
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.label())
    }
}

impl Backend {
    /// Give back a map (a strip or band a computation handed out) that the caller is done
    /// with: on a GPU its buffer serves a later download without page faults; on the CPU it is
    /// dropped.
    pub fn recycle(&self, data: geofield_core::RasterData) {
        if let Backend::Cuda(gpu) = self {
            match data {
                geofield_core::RasterData::F32(v) => gpu.recycle_host(v),
                geofield_core::RasterData::F64(v) => gpu.recycle_host(v),
            }
        }
    }

    /// "cpu" or "cuda:N".
    pub fn label(&self) -> String {
        match self {
            Backend::Cpu => "cpu".into(),
            Backend::Cuda(g) => format!("cuda:{}", g.info().ordinal),
        }
    }
    /// A human description of the device: CPU threads, or the GPU's name.
    pub fn device_name(&self) -> String {
        match self {
            Backend::Cpu => format!("CPU, {} threads", rayon::current_num_threads()),
            Backend::Cuda(g) => g.info().name.clone(),
        }
    }
    pub fn is_cuda(&self) -> bool {
        matches!(self, Backend::Cuda(_))
    }
}

/// The selected backend and, for `auto` falling back to the CPU, why.
#[derive(Debug, Clone)]
pub struct BackendSelection {
    pub backend: Backend,
    pub fallback_reason: Option<String>,
}

/// Select a backend. `auto` probes device 0 and falls back to the CPU with a reason.
pub fn select(choice: BackendChoice) -> Result<BackendSelection, GeofieldError> {
    match choice {
        BackendChoice::Cpu => Ok(BackendSelection {
            backend: Backend::Cpu,
            fallback_reason: None,
        }),
        BackendChoice::Cuda(n) => {
            let report = geofield_cuda::probe(n);
            if !report.ok {
                return Err(GeofieldError::Invalid(format!(
                    "CUDA device {n} was requested but CUDA is unusable: {}",
                    report.reason.unwrap_or_else(|| "unknown reason".into())
                )));
            }
            Ok(BackendSelection {
                backend: Backend::Cuda(Gpu::open(n)?),
                fallback_reason: None,
            })
        }
        BackendChoice::Auto => {
            let report: ProbeReport = geofield_cuda::probe(0);
            if report.ok {
                match Gpu::open(0) {
                    Ok(g) => Ok(BackendSelection {
                        backend: Backend::Cuda(g),
                        fallback_reason: None,
                    }),
                    Err(e) => Ok(BackendSelection {
                        backend: Backend::Cpu,
                        fallback_reason: Some(e.to_string()),
                    }),
                }
            } else {
                Ok(BackendSelection {
                    backend: Backend::Cpu,
                    fallback_reason: Some(
                        report.reason.unwrap_or_else(|| "CUDA probe failed".into()),
                    ),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_choices() {
        assert_eq!("auto".parse::<BackendChoice>(), Ok(BackendChoice::Auto));
        assert_eq!("CPU".parse::<BackendChoice>(), Ok(BackendChoice::Cpu));
        assert_eq!("cuda".parse::<BackendChoice>(), Ok(BackendChoice::Cuda(0)));
        assert_eq!(
            "cuda:3".parse::<BackendChoice>(),
            Ok(BackendChoice::Cuda(3))
        );
        assert!("cuda:x".parse::<BackendChoice>().is_err());
        assert!("tpu".parse::<BackendChoice>().is_err());
    }
}
