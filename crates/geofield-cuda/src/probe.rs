//! Is CUDA usable here? Library presence, versions, device properties and an end-to-end probe.
//!
//! cudarc panics when a library it needs cannot be loaded, so every entry point of this crate
//! checks [`driver_present`] / [`nvrtc_present`] before it touches cudarc.

use std::sync::{Arc, OnceLock};

use cudarc::driver::sys as drv;
use cudarc::driver::{CudaContext, LaunchConfig, PushKernelArg};

use crate::context::Gpu;
use crate::error::{CudaError, DriverResultExt};

/// Properties of one CUDA device.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceInfo {
    pub ordinal: usize,
    pub name: String,
    pub compute_capability: (i32, i32),
    pub total_memory_bytes: u64,
    pub multiprocessors: u32,
    /// Peak SM clock in kHz (0 if the driver no longer reports it).
    pub clock_rate_khz: u32,
    pub l2_bytes: u64,
    /// Shared memory a block may opt in to (bytes).
    pub shared_mem_per_block_optin: u64,
    /// Nominal DRAM bandwidth, 2 × memory clock × bus width (bytes/s; 0 if not reported).
    pub peak_bandwidth_bytes_per_s: f64,
}

/// The outcome of [`probe`].
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeReport {
    /// CUDA is usable: libraries present, context opens, a kernel compiles, runs and is right.
    pub ok: bool,
    /// One line: why CUDA is unusable (None when `ok`).
    pub reason: Option<String>,
    /// Driver's CUDA version, e.g. 13000 for 13.0.
    pub driver_version: Option<i32>,
    pub nvrtc_version: Option<(i32, i32)>,
    pub device: Option<DeviceInfo>,
}

/// Whether `libcuda` can be loaded. Cached after the first call.
pub fn driver_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: only tries to dlopen the candidate library names and drops the handles.
    *PRESENT.get_or_init(|| unsafe { drv::is_culib_present() })
}

/// Whether `libnvrtc` can be loaded. Cached after the first call.
pub fn nvrtc_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: only tries to dlopen the candidate library names and drops the handles.
    *PRESENT.get_or_init(|| unsafe { cudarc::nvrtc::sys::is_culib_present() })
}

/// Whether `libcublas` can be loaded. Cached after the first call.
pub fn cublas_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: only tries to dlopen the candidate library names and drops the handles.
    *PRESENT.get_or_init(|| unsafe { cudarc::cublas::sys::is_culib_present() })
}

/// Whether `libcufft` can be loaded. Cached after the first call.
pub fn cufft_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: only tries to dlopen the candidate library names and drops the handles.
    *PRESENT.get_or_init(|| unsafe { cudarc::cufft::sys::is_culib_present() })
}

/// The CUDA version the driver supports (e.g. 13000), if the driver is present.
pub fn driver_version() -> Option<i32> {
    if !driver_present() {
        return None;
    }
    let mut v: std::ffi::c_int = 0;
    // SAFETY: the driver library is present (checked above); the call writes one int and needs
    // no cuInit.
    let r = unsafe { drv::cuDriverGetVersion(&mut v) };
    (r == drv::CUresult::CUDA_SUCCESS).then_some(v)
}

/// NVRTC's (major, minor) version, if NVRTC is present.
pub fn nvrtc_version() -> Option<(i32, i32)> {
    if !nvrtc_present() {
        return None;
    }
    let (mut major, mut minor): (std::ffi::c_int, std::ffi::c_int) = (0, 0);
    // SAFETY: NVRTC is present (checked above); the call writes two ints.
    let r = unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
    (r == cudarc::nvrtc::sys::nvrtcResult::NVRTC_SUCCESS).then_some((major, minor))
}

/// Number of CUDA devices (initialises the driver).
pub fn device_count() -> Result<usize, CudaError> {
    if !driver_present() {
        return Err(CudaError::DriverMissing);
    }
    let n =
        CudaContext::device_count().doing("counting CUDA devices (cuInit, cuDeviceGetCount)")?;
    Ok(usize::try_from(n).unwrap_or(0))
}

/// Reads a device's properties from an open context.
pub(crate) fn device_info(ctx: &Arc<CudaContext>) -> Result<DeviceInfo, CudaError> {
    use drv::CUdevice_attribute as A;
    let attr = |a: A| ctx.attribute(a).doing("reading a device attribute");
    let non_neg = |v: i32| u32::try_from(v).unwrap_or(0);
    Ok(DeviceInfo {
        ordinal: ctx.ordinal(),
        name: ctx.name().doing("reading the device name")?,
        compute_capability: ctx
            .compute_capability()
            .doing("reading the compute capability")?,
        total_memory_bytes: ctx.total_mem().doing("reading the device memory size")? as u64,
        multiprocessors: non_neg(attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?),
        // Deprecated in CUDA 13 and may be refused: report 0 rather than fail.
        clock_rate_khz: attr(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE).map_or(0, non_neg),
        l2_bytes: u64::from(non_neg(attr(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?)),
        shared_mem_per_block_optin: u64::from(non_neg(attr(
            A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
        )?)),
        // Like the SM clock, the memory clock may be refused by CUDA 13: 0 then.
        peak_bandwidth_bytes_per_s: match (
            attr(A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE),
            attr(A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH),
        ) {
            (Ok(khz), Ok(bits)) => {
                2.0 * f64::from(non_neg(khz)) * 1e3 * f64::from(non_neg(bits)) / 8.0
            }
            _ => 0.0,
        },
    })
}

/// Compiles and runs the one-line probe kernel on `gpu`; Ok if it returns 2*20+1.
pub(crate) fn run_probe_kernel(gpu: &Gpu) -> Result<(), CudaError> {
    const X: i32 = 20;
    const EXPECTED: i32 = 2 * X + 1;
    let f = gpu.function("probe", "geofield_probe")?;
    let stream = gpu.stream();
    let mut out = stream
        .alloc_zeros::<i32>(1)
        .doing("allocating the probe's output")?;
    let cfg = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (1, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut launch = stream.launch_builder(&f);
    launch.arg(&mut out).arg(&X);
    // SAFETY: geofield_probe(int* out, int x) writes out[0] only; `out` holds one i32 and the
    // arguments match the kernel's signature in order and type.
    unsafe { launch.launch(cfg) }.doing("launching the probe kernel")?;
    let got = stream
        .clone_dtoh(&out)
        .doing("copying the probe's result back")?;
    match got.first() {
        Some(&v) if v == EXPECTED => Ok(()),
        Some(&v) => Err(CudaError::WrongResult {
            expected: EXPECTED,
            got: v,
        }),
        None => Err(CudaError::WrongResult {
            expected: EXPECTED,
            got: 0,
        }),
    }
}

/// Checks that CUDA is usable on device `ordinal`: driver library, NVRTC, a context, a one-line
/// kernel compiled by NVRTC that runs and returns the right value. Never panics: when a library
/// is missing it returns `ok = false` with the reason (e.g. "libcuda.so not found: ...").
pub fn probe(ordinal: usize) -> ProbeReport {
    let mut report = ProbeReport {
        ok: false,
        reason: None,
        driver_version: None,
        nvrtc_version: None,
        device: None,
    };
    let fail = |mut r: ProbeReport, e: CudaError| {
        r.reason = Some(e.one_line(400));
        r
    };
    if !driver_present() {
        return fail(report, CudaError::DriverMissing);
    }
    report.driver_version = driver_version();
    if !nvrtc_present() {
        return fail(report, CudaError::NvrtcMissing);
    }
    report.nvrtc_version = nvrtc_version();
    let count = match device_count() {
        Ok(n) => n,
        Err(e) => return fail(report, e),
    };
    if ordinal >= count {
        return fail(report, CudaError::NoSuchDevice { ordinal, count });
    }
    let gpu = match Gpu::open(ordinal) {
        Ok(g) => g,
        Err(e) => return fail(report, e),
    };
    report.device = Some(gpu.info().clone());
    if let Err(e) = run_probe_kernel(&gpu) {
        return fail(report, e);
    }
    report.ok = true;
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a machine without the driver (the dev machine, CI) the probe must say so, not panic.
    #[test]
    fn probe_never_panics_and_explains() {
        let r = probe(0);
        eprintln!("probe(0) = {r:?}");
        if r.ok {
            assert!(r.reason.is_none());
            assert!(r.device.is_some() && r.driver_version.is_some());
        } else {
            let reason = r.reason.unwrap_or_default();
            assert!(
                !reason.is_empty() && !reason.contains('\n'),
                "bad reason {reason:?}"
            );
            if !driver_present() {
                assert!(reason.contains("libcuda.so not found"), "{reason}");
                assert!(r.driver_version.is_none() && r.device.is_none());
                assert!(device_count().is_err());
                assert!(Gpu::open(0).is_err());
            }
        }
        // An ordinal far beyond any machine is refused, never a panic.
        let far = probe(10_000);
        assert!(!far.ok && far.reason.is_some());
    }

    #[test]
    fn versions_follow_presence() {
        assert_eq!(nvrtc_version().is_some(), nvrtc_present());
        if !driver_present() {
            assert_eq!(driver_version(), None);
        }
    }
}
