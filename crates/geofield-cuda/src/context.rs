//! [`Gpu`]: one device, its context and stream, and a compile-once cache of kernels (one NVRTC
//! unit per kernel, the units a run needs compiled together in parallel threads).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use cudarc::driver::sys as drv;
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr,
    DevicePtrMut, DeviceRepr, PinnedHostSlice, ValidAsZeroBits,
};
use cudarc::nvrtc::Ptx;
use rayon::prelude::*;

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
    /// Page-locked host memory for copies (two halves of [`STAGE_SLOT`] bytes, allocated on
    /// first use and kept): transfers from pinned memory run at the bus's speed and overlap
    /// with the host copying the next chunk, where pageable memory goes through the driver's own
    /// staging at a fraction of it.
    staging: Mutex<Option<PinnedHostSlice<u64>>>,
}

/// Bytes of each half of a [`Gpu`]'s pinned staging buffer.
const STAGE_SLOT: usize = 8 << 20;
/// Freed device memory the stream-ordered allocator keeps for reuse instead of returning it to
/// the driver at each synchronisation (its default is none: every call's buffers would be mapped
/// afresh).
const POOL_KEEP_BYTES: u64 = 2 << 30;
/// Elements per task when the host copies or converts in parallel.
const PAR_CHUNK: usize = 1 << 15;

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
            keep_pool_memory(&ctx);
        }
        Ok(Arc::new(Gpu {
            ctx,
            stream,
            info,
            arch,
            modules: Mutex::new(HashMap::new()),
            compiling: Mutex::new(()),
            blas: Mutex::new(None),
            busy: Mutex::new(()),
            staging: Mutex::new(None),
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

    /// Copies `data` to the device through the pinned staging buffer, in chunks: the host copies
    /// one chunk (in parallel) while the previous one is in flight. Returns when the copy is
    /// done. An empty slice becomes a one-element zero buffer, as [`Gpu::upload`].
    pub(crate) fn upload_staged<T: DeviceRepr + ValidAsZeroBits + Copy + Send + Sync>(
        &self,
        data: &[T],
        what: &str,
    ) -> Result<CudaSlice<T>, CudaError> {
        if data.is_empty() || std::mem::size_of::<T>() == 0 {
            return self.upload(data, what);
        }
        let doing = format!("copying {what} to the device");
        let size = std::mem::size_of::<T>();
        let per = STAGE_SLOT / size;
        let mut stage = self.staging()?;
        let base = staging_base(&mut stage)?;
        // SAFETY: an allocation of data.len() elements; every element is written by the copies
        // below before any kernel reads it (stream order).
        let mut dst = unsafe { self.stream.alloc::<T>(data.len()) }.doing(&doing)?;
        let mut pending: [Option<CudaEvent>; 2] = [None, None];
        {
            let (dptr, _written) = dst.device_ptr_mut(&self.stream);
            for (c, chunk) in data.chunks(per).enumerate() {
                let slot = c % 2;
                if let Some(e) = pending[slot].take() {
                    e.synchronize().doing(&doing)?;
                }
                // SAFETY: half `slot` of the staging buffer (2 · STAGE_SLOT bytes, page-aligned;
                // STAGE_SLOT is a multiple of every alignment) holds `per` ≥ chunk.len()
                // elements of T; the copy that last read it has completed (its event above), and
                // nothing else uses the buffer while `stage` is locked.
                let host: &mut [T] = unsafe {
                    std::slice::from_raw_parts_mut(
                        base.cast::<u8>().add(slot * STAGE_SLOT).cast::<T>(),
                        chunk.len(),
                    )
                };
                host.par_chunks_mut(PAR_CHUNK)
                    .zip(chunk.par_chunks(PAR_CHUNK))
                    .for_each(|(h, d)| h.copy_from_slice(d));
                let at = dptr + (c * per * size) as u64;
                // SAFETY: `at` .. + chunk bytes lies inside `dst` (c·per + chunk.len() ≤
                // data.len() elements); the host slice stays untouched until the event recorded
                // next has completed.
                unsafe {
                    cudarc::driver::result::memcpy_htod_async(at, host, self.stream.cu_stream())
                }
                .doing(&doing)?;
                pending[slot] = Some(self.mark()?);
            }
        }
        for e in pending.into_iter().flatten() {
            e.synchronize().doing(&doing)?;
        }
        Ok(dst)
    }

    /// A device buffer of `len` (at least 1) elements left unset, for outputs a kernel writes
    /// in full before anything reads them (no memset).
    ///
    /// # Safety
    /// Every element read later (by a kernel or a download) must have been written first.
    pub(crate) unsafe fn alloc_unset<T: DeviceRepr>(
        &self,
        len: usize,
        what: &str,
    ) -> Result<CudaSlice<T>, CudaError> {
        // SAFETY: the caller's contract.
        unsafe { self.stream.alloc::<T>(len.max(1)) }
            .doing(&format!("allocating {what} ({len} elements)"))
    }

    /// Copies the first `len` elements of `a` and of `b` back through the pinned staging buffer
    /// in chunks, calling `sink(first, a_chunk, b_chunk)` for each chunk (in order, on this
    /// thread) while the next one is in flight: a caller converting into its own layout overlaps
    /// the conversion with the transfer. Returns the milliseconds spent inside `sink`.
    pub(crate) fn download_pair_with<A: DeviceRepr + Copy, B: DeviceRepr + Copy>(
        &self,
        a: &CudaSlice<A>,
        b: &CudaSlice<B>,
        len: usize,
        what: &str,
        mut sink: impl FnMut(usize, &[A], &[B]),
    ) -> Result<f64, CudaError> {
        let doing = format!("copying {what} back from the device");
        if len == 0 {
            return Ok(0.0);
        }
        if len > a.len() || len > b.len() {
            return Err(crate::error::invalid(
                "download",
                format!(
                    "{len} elements asked of buffers of {} and {}",
                    a.len(),
                    b.len()
                ),
            ));
        }
        let (sa, sb) = (std::mem::size_of::<A>(), std::mem::size_of::<B>());
        // Elements per chunk: a multiple of 64, so B's part starts 8-byte aligned.
        let per = (STAGE_SLOT / (sa + sb).max(1)) / 64 * 64;
        let chunks = len.div_ceil(per);
        let mut stage = self.staging()?;
        let base = staging_base(&mut stage)?;
        let (pa, _read_a) = a.device_ptr(&self.stream);
        let (pb, _read_b) = b.device_ptr(&self.stream);
        let host_of = |c: usize| {
            let m = per.min(len - c * per);
            // SAFETY: half c % 2 of the staging buffer (STAGE_SLOT bytes) holds per·sa bytes of
            // A then per·sb bytes of B, both aligned (page-aligned base, per a multiple of 64).
            unsafe {
                let slot = base.cast::<u8>().add((c % 2) * STAGE_SLOT);
                (slot.cast::<A>(), slot.add(per * sa).cast::<B>(), m)
            }
        };
        let enqueue = |c: usize| -> Result<CudaEvent, CudaError> {
            let (ha, hb, m) = host_of(c);
            let off = c * per;
            // SAFETY: the device ranges lie inside `a` and `b` (off + m ≤ len ≤ their lengths);
            // the host halves are not read until the event recorded here has completed, and the
            // previous chunk in the same half has been consumed by `sink` (chunks are enqueued
            // two ahead, after the sink of the chunk two behind returned).
            unsafe {
                let da = std::slice::from_raw_parts_mut(ha, m);
                cudarc::driver::result::memcpy_dtoh_async(
                    da,
                    pa + (off * sa) as u64,
                    self.stream.cu_stream(),
                )
                .doing(&doing)?;
                let db = std::slice::from_raw_parts_mut(hb, m);
                cudarc::driver::result::memcpy_dtoh_async(
                    db,
                    pb + (off * sb) as u64,
                    self.stream.cu_stream(),
                )
                .doing(&doing)?;
            }
            self.mark()
        };
        let mut events: [Option<CudaEvent>; 2] = [None, None];
        for c in 0..chunks.min(2) {
            events[c % 2] = Some(enqueue(c)?);
        }
        let mut sink_s = 0.0;
        for c in 0..chunks {
            if let Some(e) = events[c % 2].take() {
                e.synchronize()
                    .doing("waiting for the rows (a kernel fault shows up here)")?;
            }
            let (ha, hb, m) = host_of(c);
            let t = std::time::Instant::now();
            // SAFETY: the chunk's copies have completed (its event); m elements of each were
            // written there.
            let (ca, cb) = unsafe {
                (
                    std::slice::from_raw_parts(ha.cast_const(), m),
                    std::slice::from_raw_parts(hb.cast_const(), m),
                )
            };
            sink(c * per, ca, cb);
            sink_s += t.elapsed().as_secs_f64();
            if c + 2 < chunks {
                events[c % 2] = Some(enqueue(c + 2)?);
            }
        }
        Ok(sink_s * 1e3)
    }

    /// The staging buffer, allocated on first use.
    fn staging(&self) -> Result<MutexGuard<'_, Option<PinnedHostSlice<u64>>>, CudaError> {
        let mut g = lock(&self.staging);
        if g.is_none() {
            // SAFETY: the memory is left unset; it is only read back after a copy into it.
            // Flags 0: cached (not write-combined) memory, which the host reads at full speed.
            let p = unsafe {
                self.ctx
                    .alloc_pinned_with_flags::<u64>(2 * STAGE_SLOT / 8, 0)
            }
            .doing("allocating the pinned staging buffer")?;
            *g = Some(p);
        }
        Ok(g)
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

/// The staging buffer's base address (allocated by [`Gpu::staging`]).
fn staging_base(stage: &mut Option<PinnedHostSlice<u64>>) -> Result<*mut u64, CudaError> {
    match stage.as_mut() {
        Some(p) => p
            .as_mut_ptr()
            .doing("waiting for the pinned staging buffer"),
        None => Err(crate::error::invalid(
            "staging",
            "the pinned staging buffer is missing",
        )),
    }
}

/// Lets the device's default memory pool keep up to [`POOL_KEEP_BYTES`] of freed memory
/// instead of releasing it at every synchronisation. Best effort: a failure leaves the default.
fn keep_pool_memory(ctx: &CudaContext) {
    let mut pool: drv::CUmemoryPool = std::ptr::null_mut();
    let mut keep: u64 = POOL_KEEP_BYTES;
    // SAFETY: plain driver calls on this context's device with valid out/in pointers; the
    // attribute takes a cuuint64_t.
    unsafe {
        if ctx.bind_to_thread().is_ok()
            && drv::cuDeviceGetDefaultMemPool(&mut pool, ctx.cu_device())
                .result()
                .is_ok()
        {
            let _ = drv::cuMemPoolSetAttribute(
                pool,
                drv::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                (&mut keep as *mut u64).cast(),
            );
        }
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
