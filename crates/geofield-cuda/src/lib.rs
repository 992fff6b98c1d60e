//! geofield's CUDA layer: the only crate of the workspace with `unsafe`.
//!
//! - [`probe`]: is CUDA usable (driver and NVRTC libraries, a context, a one-line kernel that
//!   compiles, runs and returns the right value)? Never panics: cudarc panics when a library is
//!   missing, so presence is checked first ([`driver_present`], [`nvrtc_present`]).
//! - [`Gpu`]: an open device (context, one stream, [`DeviceInfo`]) with a compile-once cache of
//!   kernels. Modules are CUDA C in `kernels/*.cu`, embedded in the binary; NVRTC compiles only
//!   the kernels a run launches ([`Gpu::prepare`]: one unit per kernel, in parallel threads, for
//!   the device's own `sm_XY` with `common.cuh` prepended, cached on disk), and tells a hook
//!   ([`set_compile_hook`]) when it does; the registry is [`MODULES`], and [`compile_check`] /
//!   [`compile_kernels`] compile any of them without a GPU.
//! - [`dispersal`]: safe wrappers over the seed-dispersal kernels (exact, cutoff, multires).
//! - [`neighbors`]: exact k-nearest-neighbour search (brute force and a uniform grid).
//! - [`forest`]: per-seed seed placement (every seed drawn and counted in its cell), bitwise
//!   equal to the CPU.
//! - [`tiles`]: GeoTIFF tiles of f32 maps compressed on the device (predictor and DEFLATE), the
//!   same bytes as geofield-io's `segdeflate`.
//! - [`kriging`]: dual predictions, global variance (a fused product-and-reduction kernel over node tiles; cuBLAS above 4,096 samples), local
//!   kriging (warp per node) and the paper's per-node bordered solve.
//! - [`flock`]: OpenSteer's boids flock with the whole step (grid build, search, steering,
//!   integration) on the device, bitwise equal to the CPU in the nearest-k mode.
//! - [`wind`]: the mass-consistent wind field: the paper's WEST sweeps (velocity form, compact
//!   or parity-test threads), and Sherman's problem by z-line multigrid, MG-preconditioned CG
//!   (f64 CG, f32 V-cycle) and red-black SOR, with the state resident on the device.
//!
//! Kernel conventions: `extern "C" __global__ void <capability>_<op>_<variant>`, parameters in a
//! `#[repr(C)]` struct passed by value and mirrored in C with a size check on both sides, each
//! launch behind a wrapper that checks lengths and reports kernel time from CUDA events.
//!
//! Testing: unit tests need no GPU (NVRTC compile checks run when `libnvrtc` is loadable);
//! GPU tests call [`test_gpu`], which skips with a notice on machines without a GPU and fails
//! when `GEOFIELD_REQUIRE_GPU=1`.

mod compile;
mod context;
mod disk_cache;
pub mod dispersal;
mod error;
pub mod flock;
pub mod forest;
pub mod kriging;
pub mod neighbors;
mod probe;
pub mod tiles;
pub mod wind;

pub use compile::{
    COMMON_SOURCE, Compiled, MODULES, arch_for, compile_check, compile_kernels, compile_options,
    compile_with_log, full_source, module_source, nvrtc_supported_archs, selected_source,
};
pub use context::{CompileEvent, Gpu, set_compile_hook, test_gpu};
/// A device buffer (cudarc's), for callers that keep results on the device.
pub use cudarc::driver::CudaSlice;
pub use error::CudaError;
pub use probe::{
    DeviceInfo, ProbeReport, cublas_present, device_count, driver_present, driver_version,
    nvrtc_present, nvrtc_version, probe,
};
