//! [`Gpu`]: one device, its context and stream, and a compile-once cache of kernel modules.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use cudarc::driver::sys as drv;
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaModule, CudaSlice, CudaStream, DeviceRepr,
    ValidAsZeroBits,
};
use cudarc::nvrtc::Ptx;

use crate::compile::{arch_for, compile, compile_options, full_source, module_source};
use crate::disk_cache;
use crate::error::{CudaError, DriverResultExt};
use crate::probe::{
    DeviceInfo, device_count, device_info, driver_present, driver_version, nvrtc_present,
    nvrtc_version, probe,
};

/// An open CUDA device. Share it with `Arc`; calls through one `Gpu` are serialised on its
/// single stream (each wrapper holds the device for its upload, launches and download, so the
/// event timings it reports cover its own kernels only).
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    info: DeviceInfo,
    arch: String,
    modules: Mutex<HashMap<&'static str, Arc<CudaModule>>>,
    blas: Mutex<Option<Arc<cudarc::cublas::CudaBlas>>>,
    busy: Mutex<()>,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu")
            .field("info", &self.info)
            .field("arch", &self.arch)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock cannot leave the map or the unit inconsistent.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Gpu {
    /// Opens device `ordinal`: checks the libraries, creates (retains) its primary context and
    /// reads its properties. Kernel modules are compiled later, on first use.
    pub fn open(ordinal: usize) -> Result<Arc<Gpu>, CudaError> {
        if !driver_present() {
            return Err(CudaError::DriverMissing);
        }
        if !nvrtc_present() {
            return Err(CudaError::NvrtcMissing);
        }
        let count = device_count()?;
        if ordinal >= count {
            return Err(CudaError::NoSuchDevice { ordinal, count });
        }
        let ctx = CudaContext::new(ordinal).doing("creating the CUDA context")?;
        let info = device_info(&ctx)?;
        let (major, minor) = info.compute_capability;
        let arch = arch_for(major, minor)?;
        let stream = ctx.default_stream();
        Ok(Arc::new(Gpu {
            ctx,
            stream,
            info,
            arch,
            modules: Mutex::new(HashMap::new()),
            blas: Mutex::new(None),
            busy: Mutex::new(()),
        }))
    }

    /// The device's properties.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The NVRTC target, e.g. `sm_90`.
    pub fn arch(&self) -> &str {
        &self.arch
    }

    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// An error unless `need_bytes` of device memory are free (a clear refusal before a
    /// large allocation, rather than an out-of-memory failure halfway through).
    pub fn ensure_free(&self, what: &str, need_bytes: u64) -> Result<(), CudaError> {
        let (free, _) = self
            .ctx
            .mem_get_info()
            .doing("reading the free device memory")?;
        if need_bytes > free as u64 {
            return Err(CudaError::DeviceMemory {
                what: what.to_string(),
                need_gb: need_bytes as f64 / 1e9,
                free_gb: free as f64 / 1e9,
            });
        }
        Ok(())
    }

    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// The module `name` from [`crate::MODULES`], compiled by NVRTC for this device on first
    /// use and cached (concurrent first users wait for the one compilation).
    pub fn module(&self, name: &'static str) -> Result<Arc<CudaModule>, CudaError> {
        let mut cache = lock(&self.modules);
        if let Some(m) = cache.get(name) {
            return Ok(Arc::clone(m));
        }
        let source = module_source(name).ok_or_else(|| CudaError::UnknownModule(name.into()))?;
        let (major, minor) = self.info.compute_capability;
        let own_arch = self.arch == format!("sm_{}", major * 10 + minor);
        // A CUBIN compiled earlier for exactly this architecture, source and NVRTC version.
        let cached = own_arch
            .then(|| {
                disk_cache::path_for(
                    name,
                    &self.arch,
                    &full_source(name, source),
                    &compile_options(&self.arch, false),
                    nvrtc_version(),
                )
            })
            .flatten();
        if let Some(path) = &cached
            && let Some(image) = disk_cache::load(path)
            && let Ok(module) = self.ctx.load_module(Ptx::from_binary(image))
        {
            cache.insert(name, Arc::clone(&module));
            return Ok(module);
        }
        let compiled = compile(name, source, &self.arch, false)?;
        let image = match compiled.cubin {
            // Built by ptxas inside NVRTC for exactly this device: no JIT at load time.
            Some(cubin) if own_arch => {
                if let Some(path) = &cached {
                    disk_cache::store(path, &cubin);
                }
                Ptx::from_binary(cubin)
            }
            _ => Ptx::from_src(compiled.ptx),
        };
        let module = self
            .ctx
            .load_module(image)
            .map_err(|source| CudaError::ModuleLoad {
                module: name.to_string(),
                driver: driver_version()
                    .map_or("?".into(), |v| format!("{}.{}", v / 1000, (v % 1000) / 10)),
                nvrtc: nvrtc_version().map_or("?".into(), |(a, b)| format!("{a}.{b}")),
                source,
            })?;
        cache.insert(name, Arc::clone(&module));
        Ok(module)
    }

    /// The cuBLAS handle on this device's stream, created on first use; an error (never a
    /// panic) when `libcublas` is not installed.
    pub fn blas(&self) -> Result<Arc<cudarc::cublas::CudaBlas>, CudaError> {
        if !crate::probe::cublas_present() {
            return Err(CudaError::CublasMissing);
        }
        let mut slot = lock(&self.blas);
        if let Some(b) = slot.as_ref() {
            return Ok(Arc::clone(b));
        }
        let b = Arc::new(
            cudarc::cublas::CudaBlas::new(Arc::clone(&self.stream)).map_err(|source| {
                CudaError::Cublas {
                    action: "creating the cuBLAS handle".into(),
                    source,
                }
            })?,
        );
        *slot = Some(Arc::clone(&b));
        Ok(b)
    }

    /// Kernel `kernel` of module `module`.
    pub fn function(&self, module: &'static str, kernel: &str) -> Result<CudaFunction, CudaError> {
        self.module(module)?.load_function(kernel).doing(&format!(
            "looking up kernel `{kernel}` in module `{module}`"
        ))
    }

    /// Holds the device for one upload-launch-download sequence.
    pub(crate) fn hold(&self) -> MutexGuard<'_, ()> {
        lock(&self.busy)
    }

    /// Copies `data` to the device; an empty slice becomes a one-element zero buffer, so that
    /// kernels never receive a null or zero-sized allocation.
    pub(crate) fn upload<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        data: &[T],
        what: &str,
    ) -> Result<CudaSlice<T>, CudaError> {
        let r = if data.is_empty() {
            self.stream.alloc_zeros::<T>(1)
        } else {
            self.stream.clone_htod(data)
        };
        r.doing(&format!("copying {what} to the device"))
    }

    /// A zeroed device buffer of `len` (at least 1) elements.
    pub(crate) fn zeros<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        len: usize,
        what: &str,
    ) -> Result<CudaSlice<T>, CudaError> {
        self.stream
            .alloc_zeros::<T>(len.max(1))
            .doing(&format!("allocating {what} ({len} elements)"))
    }

    /// Copies a device buffer back, truncated to `len` elements.
    pub(crate) fn download<T: DeviceRepr>(
        &self,
        buf: &CudaSlice<T>,
        len: usize,
        what: &str,
    ) -> Result<Vec<T>, CudaError> {
        let mut v = self
            .stream
            .clone_dtoh(buf)
            .doing(&format!("copying {what} back from the device"))?;
        v.truncate(len);
        Ok(v)
    }

    /// Records a timing event on the stream.
    pub(crate) fn mark(&self) -> Result<CudaEvent, CudaError> {
        self.stream
            .record_event(Some(drv::CUevent_flags::CU_EVENT_DEFAULT))
            .doing("recording a timing event")
    }

    /// Milliseconds between `start` and a new event recorded now (waits for the stream).
    pub(crate) fn elapsed_ms(&self, start: &CudaEvent) -> Result<f32, CudaError> {
        let end = self.mark()?;
        start
            .elapsed_ms(&end)
            .doing("waiting for the kernels (a kernel fault shows up here)")
    }
}

/// For tests: the shared GPU 0, or None after printing "skipping: no GPU (<reason>)".
/// With `GEOFIELD_REQUIRE_GPU=1` a missing GPU is a failure instead (panics with the reason).
#[doc(hidden)]
#[allow(clippy::panic)]
pub fn test_gpu() -> Option<Arc<Gpu>> {
    static GPU: OnceLock<Result<Arc<Gpu>, String>> = OnceLock::new();
    let gpu = GPU.get_or_init(|| {
        let report = probe(0);
        if !report.ok {
            return Err(report.reason.unwrap_or_else(|| "probe failed".into()));
        }
        Gpu::open(0).map_err(|e| e.one_line(400))
    });
    match gpu {
        Ok(g) => Some(Arc::clone(g)),
        Err(reason) => {
            if std::env::var("GEOFIELD_REQUIRE_GPU").as_deref() == Ok("1") {
                panic!("GEOFIELD_REQUIRE_GPU=1 but no usable GPU: {reason}");
            }
            eprintln!("skipping: no GPU ({reason})");
            None
        }
    }
}
