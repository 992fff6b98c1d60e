//! [`Gpu`]: one device, its context and stream, and a compile-once cache of kernels (one NVRTC
//! unit per kernel, the units a run needs compiled together in parallel threads).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream, PinnedHostSlice};
use cudarc::nvrtc::Ptx;

use crate::compile::{
    Compiled, arch_for, compile_options, compile_text, full_source, module_source, ptx_defines,
    selected_source,
};
use crate::disk_cache;
use crate::error::{CudaError, DriverResultExt};
use crate::probe::{
    DeviceInfo, device_count, device_info, driver_present, driver_version, nvrtc_present,
    nvrtc_version, probe,
};

mod transfer;

/// An open CUDA device. Share it with `Arc`; calls through one `Gpu` are serialised on its
/// single stream (each wrapper holds the device for its upload, launches and download, so the
/// event timings it reports cover its own kernels only).
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    info: DeviceInfo,
    arch: String,
    /// Loaded units: a whole module under its name, one kernel's unit under `module/kernel`.
    modules: Mutex<HashMap<String, Arc<CudaModule>>>,
    /// Held while units are compiled, so two threads never compile the same kernel twice.
    compiling: Mutex<()>,
    blas: Mutex<Option<Arc<cudarc::cublas::CudaBlas>>>,
    busy: Mutex<()>,
    /// Page-locked host memory for copies (two halves of [`transfer::STAGE_SLOT`] bytes, allocated on
    /// first use and kept): transfers from pinned memory run at the bus's speed and overlap
    /// with the host copying the next chunk, where pageable memory goes through the driver's own
    /// staging at a fraction of it.
    staging: Mutex<Option<PinnedHostSlice<u64>>>,
    /// Host buffers given back by callers ([`Gpu::recycle_host`]) for later downloads, with
    /// their sizes in bytes: their pages are already mapped, where a fresh buffer takes a page
    /// fault per 4 KiB page.
    host_pool: Mutex<Vec<(usize, Box<dyn std::any::Any + Send>)>>,
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
        if ctx.has_async_alloc() {
            transfer::keep_pool_memory(&ctx);
        }
        Ok(Gpu::with_stream(ctx, stream, info, arch))
    }

    /// A handle on `ctx` queueing its work on `stream`, with empty caches.
    fn with_stream(
        ctx: Arc<CudaContext>,
        stream: Arc<CudaStream>,
        info: DeviceInfo,
        arch: String,
    ) -> Arc<Gpu> {
        Arc::new(Gpu {
            ctx,
            stream,
            info,
            arch,
            modules: Mutex::new(HashMap::new()),
            compiling: Mutex::new(()),
            blas: Mutex::new(None),
            busy: Mutex::new(()),
            staging: Mutex::new(None),
            host_pool: Mutex::new(Vec::new()),
        })
    }

    /// The same device with a stream of its own (non-blocking): work queued on it runs beside
    /// this handle's (a compressor working while the maps compute), with its own kernel cache,
    /// staging buffer and lock.
    pub fn beside(&self) -> Result<Arc<Gpu>, CudaError> {
        let stream = self
            .ctx
            .new_stream()
            .doing("creating a second CUDA stream")?;
        Ok(Gpu::with_stream(
            Arc::clone(&self.ctx),
            stream,
            self.info.clone(),
            self.arch.clone(),
        ))
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

    /// The whole module `name` from [`crate::MODULES`] (every kernel in it), compiled by NVRTC
    /// for this device on first use and cached. Runs use [`Gpu::function`] and [`Gpu::prepare`],
    /// which compile only the kernels they need.
    pub fn module(&self, name: &'static str) -> Result<Arc<CudaModule>, CudaError> {
        if let Some(m) = lock(&self.modules).get(name) {
            return Ok(Arc::clone(m));
        }
        let _compiling = lock(&self.compiling);
        if let Some(m) = lock(&self.modules).get(name) {
            return Ok(Arc::clone(m));
        }
        let source = module_source(name).ok_or_else(|| CudaError::UnknownModule(name.into()))?;
        let text = full_source(name, source);
        let module = match self.cached_image(name, &text) {
            Some(m) => m,
            None => {
                notify(&CompileEvent::Start {
                    module: name,
                    kernels: &[],
                });
                let t0 = std::time::Instant::now();
                let compiled = compile_text(name, &text, &self.arch, false)?;
                notify(&CompileEvent::Done {
                    module: name,
                    kernels: &[],
                    seconds: t0.elapsed().as_secs_f64(),
                });
                self.load_compiled(name, &text, compiled)?
            }
        };
        lock(&self.modules).insert(name.to_string(), Arc::clone(&module));
        Ok(module)
    }

    /// Compiles (in parallel threads) and loads the kernels `kernels` of module `module` that
    /// are not loaded yet, each as its own unit; units found in the disk cache are loaded
    /// without compiling. Wrappers call this with every kernel a run will launch, so a first
    /// run compiles them together instead of one after the other.
    pub fn prepare(&self, module: &'static str, kernels: &[&str]) -> Result<(), CudaError> {
        let units: Vec<(&'static str, &str)> = kernels.iter().map(|k| (module, *k)).collect();
        self.prepare_units(&units)
    }

    /// [`Gpu::prepare`] for kernels of several modules at once: `(module, kernel)` pairs.
    pub fn prepare_units(&self, units: &[(&'static str, &str)]) -> Result<(), CudaError> {
        let missing = |cache: &HashMap<String, Arc<CudaModule>>| {
            let mut v: Vec<(&'static str, &str)> = Vec::new();
            for &(m, k) in units {
                if !cache.contains_key(m)
                    && !cache.contains_key(&unit_key(m, k))
                    && !v.contains(&(m, k))
                {
                    v.push((m, k));
                }
            }
            v
        };
        if missing(&lock(&self.modules)).is_empty() {
            return Ok(());
        }
        let _compiling = lock(&self.compiling);
        let todo = missing(&lock(&self.modules));
        // Disk cache first; what is left is compiled.
        let mut to_compile: Vec<(&'static str, &str, String)> = Vec::new();
        for &(module, kernel) in &todo {
            let source =
                module_source(module).ok_or_else(|| CudaError::UnknownModule(module.into()))?;
            let text = selected_source(module, source, &[kernel])?;
            let key = unit_key(module, kernel);
            match self.cached_image(&key, &text) {
                Some(m) => {
                    lock(&self.modules).insert(key, m);
                }
                None => to_compile.push((module, kernel, text)),
            }
        }
        if to_compile.is_empty() {
            return Ok(());
        }
        let names: Vec<&str> = to_compile.iter().map(|(_, k, _)| *k).collect();
        let modules = {
            let mut m: Vec<&str> = to_compile.iter().map(|(m, _, _)| *m).collect();
            m.sort_unstable();
            m.dedup();
            m.join(", ")
        };
        // The probe's one-line kernel (50 ms) is compiled before any command's: not announced.
        let announce = modules != "probe";
        if announce {
            notify(&CompileEvent::Start {
                module: &modules,
                kernels: &names,
            });
        }
        let t0 = std::time::Instant::now();
        let arch = self.arch.as_str();
        let results: Vec<Result<Compiled, CudaError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = to_compile
                .iter()
                .map(|(module, _, text)| {
                    scope.spawn(move || compile_text(module, text, arch, false))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(crate::error::invalid("NVRTC", "a compile thread panicked"))
                    })
                })
                .collect()
        });
        if announce {
            notify(&CompileEvent::Done {
                module: &modules,
                kernels: &names,
                seconds: t0.elapsed().as_secs_f64(),
            });
        }
        for ((module, kernel, text), compiled) in to_compile.iter().zip(results) {
            let compiled = compiled?;
            if !ptx_defines(&compiled.ptx, kernel) {
                return Err(crate::error::invalid(
                    "NVRTC",
                    format!("module `{module}` has no kernel `{kernel}`"),
                ));
            }
            let key = unit_key(module, kernel);
            let m = self.load_compiled(&key, text, compiled)?;
            lock(&self.modules).insert(key, m);
        }
        Ok(())
    }

    /// The disk-cache file of a unit (compiled for exactly this device's architecture), if any.
    fn cache_path(&self, key: &str, text: &str) -> Option<std::path::PathBuf> {
        let (major, minor) = self.info.compute_capability;
        let own_arch = self.arch == format!("sm_{}", major * 10 + minor);
        own_arch
            .then(|| {
                disk_cache::path_for(
                    &key.replace('/', "."),
                    &self.arch,
                    text,
                    &compile_options(&self.arch, false),
                    nvrtc_version(),
                )
            })
            .flatten()
    }

    /// A unit loaded from the disk cache, if it is there and loads.
    fn cached_image(&self, key: &str, text: &str) -> Option<Arc<CudaModule>> {
        let path = self.cache_path(key, text)?;
        let image = disk_cache::load(&path)?;
        self.ctx.load_module(Ptx::from_binary(image)).ok()
    }

    /// Loads a freshly compiled unit (its CUBIN when built for this very device, which is then
    /// stored in the disk cache; else its PTX, which the driver compiles).
    fn load_compiled(
        &self,
        key: &str,
        text: &str,
        compiled: Compiled,
    ) -> Result<Arc<CudaModule>, CudaError> {
        let cached = self.cache_path(key, text);
        let image = match compiled.cubin {
            // Built by ptxas inside NVRTC for exactly this device: no JIT at load time.
            Some(cubin) if cached.is_some() => {
                if let Some(path) = &cached {
                    disk_cache::store(path, &cubin);
                }
                Ptx::from_binary(cubin)
            }
            _ => Ptx::from_src(compiled.ptx),
        };
        self.ctx
            .load_module(image)
            .map_err(|source| CudaError::ModuleLoad {
                module: key.to_string(),
                driver: driver_version()
                    .map_or("?".into(), |v| format!("{}.{}", v / 1000, (v % 1000) / 10)),
                nvrtc: nvrtc_version().map_or("?".into(), |(a, b)| format!("{a}.{b}")),
                source,
            })
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

    /// Kernel `kernel` of module `module`: from the whole module when it is loaded, else from
    /// the kernel's own unit, compiled (or read from the disk cache) on first use.
    pub fn function(&self, module: &'static str, kernel: &str) -> Result<CudaFunction, CudaError> {
        let unit = {
            let cache = lock(&self.modules);
            cache
                .get(module)
                .or_else(|| cache.get(&unit_key(module, kernel)))
                .cloned()
        };
        let unit = match unit {
            Some(u) => u,
            None => {
                self.prepare(module, &[kernel])?;
                let cache = lock(&self.modules);
                cache
                    .get(module)
                    .or_else(|| cache.get(&unit_key(module, kernel)))
                    .cloned()
                    .ok_or_else(|| CudaError::UnknownModule(unit_key(module, kernel)))?
            }
        };
        unit.load_function(kernel).doing(&format!(
            "looking up kernel `{kernel}` in module `{module}`"
        ))
    }
}

/// The cache key of one kernel's unit.
fn unit_key(module: &str, kernel: &str) -> String {
    format!("{module}/{kernel}")
}

/// What [`set_compile_hook`]'s callback is told: NVRTC is about to compile (`Start`) or has
/// compiled (`Done`) kernels of a module (`kernels` empty: the whole module). Kernels found in
/// the disk cache are loaded silently.
#[derive(Debug, Clone, Copy)]
pub enum CompileEvent<'a> {
    Start {
        module: &'a str,
        kernels: &'a [&'a str],
    },
    Done {
        module: &'a str,
        kernels: &'a [&'a str],
        seconds: f64,
    },
}

type CompileHook = Box<dyn Fn(&CompileEvent) + Send + Sync>;

fn hook_slot() -> &'static Mutex<Option<CompileHook>> {
    static HOOK: OnceLock<Mutex<Option<CompileHook>>> = OnceLock::new();
    HOOK.get_or_init(|| Mutex::new(None))
}

/// Installs a process-wide callback told whenever kernels are compiled (the library itself
/// prints nothing; the command-line tool says "compiling GPU kernels" with it). Replaces any
/// earlier hook; `None` removes it.
pub fn set_compile_hook(hook: Option<CompileHook>) {
    *lock(hook_slot()) = hook;
}

fn notify(event: &CompileEvent) {
    if let Some(h) = lock(hook_slot()).as_ref() {
        h(event);
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
