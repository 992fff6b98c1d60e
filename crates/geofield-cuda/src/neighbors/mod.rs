//! Exact k-nearest-neighbour search: safe wrappers over `kernels/neighbors.cu`.
//!
//! Semantics are those of geofield's CPU backend (`geofield::neighbors`): per query, the up to k
//! (≤ [`K_MAX`]) points with the smallest keys (d², index) among those with d² ≤ r² (and, with
//! `exclude_self`, index ≠ the query's), ascending, padded with index −1 (`u32::MAX` in u32
//! outputs, see [`KnnIndex`]) and d² NaN. d² is
//! computed in the coordinate type `T` as ((p₀−q₀)² + (p₁−q₁)²) + (p₂−q₂)², each operation
//! rounded to nearest, without FMA or flush-to-zero (inline PTX in the kernel), so results equal
//! the CPU's bit for bit.
//!
//! - [`knn_brute`]: every query against every point (points staged in shared memory).
//! - [`DeviceGrid`] ([`knn_device`] for host data): a grid built on the device without a host
//!   round trip (`kernels/grid.cu`: bounds, counting sort into cells, per-axis slab ranges),
//!   either uniform (searched shell by shell with the CPU grid's exact stopping rule) or the
//!   dynamic grid (Morton-ordered cells searched as an implicit tree with leaves of at most
//!   `max_leaf` points).

use cudarc::driver::{DeviceRepr, LaunchConfig, PushKernelArg, ValidAsZeroBits};
use rayon::prelude::*;

use crate::context::Gpu;
use crate::error::{CudaError, invalid};

pub mod ball;
pub mod ball_knn;
mod device;
mod host_knn;
pub use device::{BuildParams, DeviceGrid, DeviceIndex, GridPlan, KnnTimes, uniform_cells};
pub use host_knn::{HostSplit, bench_device, knn_device, knn_device_rows};

const MODULE: &str = "neighbors";
const THREADS: u32 = 128;

/// Largest supported k.
pub const K_MAX: usize = 64;
/// Mean number of points per cell aimed at by the default cell size.
pub const TARGET_PER_CELL: f64 = 2.0;
/// Hard cap on the number of grid cells.
pub const MAX_CELLS: f64 = (1u64 << 26) as f64;

/// A coordinate type with kernels (f32 or f64).
pub trait GpuCoord:
    DeviceRepr + ValidAsZeroBits + Default + Copy + PartialOrd + std::fmt::Debug + Send + Sync + 'static
{
    /// Kernel name suffix (`f32` / `f64`).
    const SUFFIX: &'static str;
    /// +inf, −inf and +0 (names distinct from geofield's `Coord`, so both traits can be bounds).
    const POS_INF: Self;
    const NEG_INF: Self;
    const ZERO_VAL: Self;
    /// Exact widening (f32) or identity (f64).
    fn widen(self) -> f64;
    fn finite(self) -> bool;
}

impl GpuCoord for f32 {
    const SUFFIX: &'static str = "f32";
    const POS_INF: Self = f32::INFINITY;
    const NEG_INF: Self = f32::NEG_INFINITY;
    const ZERO_VAL: Self = 0.0;
    fn widen(self) -> f64 {
        f64::from(self)
    }
    fn finite(self) -> bool {
        f32::is_finite(self)
    }
}

impl GpuCoord for f64 {
    const SUFFIX: &'static str = "f64";
    const POS_INF: Self = f64::INFINITY;
    const NEG_INF: Self = f64::NEG_INFINITY;
    const ZERO_VAL: Self = 0.0;
    fn widen(self) -> f64 {
        self
    }
    fn finite(self) -> bool {
        f64::is_finite(self)
    }
}

/// Parameters of `neighbors_brute_*` (C: `NeighborsBruteParams`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BruteParams {
    pub n_points: u32,
    pub n_queries: u32,
    pub k: u32,
    pub dim: u32,
    pub exclude_self: u32,
    /// 1: the index output is u32 (missing: `u32::MAX`); 0: i64 (missing: −1).
    pub idx32: u32,
    pub r2: f64,
}

/// Parameters of `neighbors_grid_*` (C: `NeighborsGridParams`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GridParams {
    pub n_points: u32,
    pub n_queries: u32,
    pub k: u32,
    pub dim: u32,
    pub exclude_self: u32,
    pub self_query: u32,
    pub r2: f64,
    pub max_leaf: u32,
    /// 1: the index output is u32 (missing: `u32::MAX`); 0: i64 (missing: −1).
    pub idx32: u32,
}

// SAFETY: both are #[repr(C)] plain-old-data structs of integers and floats whose layout matches
// the C mirrors (sizes checked on both sides: GF_CHECK_SIZE and the unit test below).
unsafe impl DeviceRepr for BruteParams {}
// SAFETY: as above.
unsafe impl DeviceRepr for GridParams {}

/// An index type the k-NN kernels write: `i64` (missing neighbours −1) or `u32` (missing
/// neighbours `u32::MAX`, never a point's index since fewer than `u32::MAX` points are
/// accepted; half the bytes to move).
pub trait KnnIndex: DeviceRepr + Copy + Send + Sync + 'static + sealed::Sealed {
    /// The kernels' `idx32` flag.
    const IDX32: u32;
}

impl KnnIndex for i64 {
    const IDX32: u32 = 0;
}

impl KnnIndex for u32 {
    const IDX32: u32 = 1;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for i64 {}
    impl Sealed for u32 {}
}

/// Rows of a kNN answer: `indices` (−1 padding) and `d2` in `T` (NaN padding), row-major with
/// `k` per query, plus the kernel time in ms.
pub type KnnRows<T> = (Vec<i64>, Vec<T>, f32);

pub(crate) fn check_coords<T: GpuCoord>(
    what: &str,
    v: &[T],
    dim: usize,
    kernel: &'static str,
) -> Result<usize, CudaError> {
    if dim != 2 && dim != 3 {
        return Err(invalid(kernel, format!("dim = {dim} (2 or 3 supported)")));
    }
    if !v.len().is_multiple_of(dim) {
        return Err(invalid(
            kernel,
            format!(
                "{what} has {} values, not a multiple of dim = {dim}",
                v.len()
            ),
        ));
    }
    // Chunks folded without an early exit (vectorised), then the bad chunk searched.
    const CHUNK: usize = 1 << 14;
    let first_bad = v
        .par_chunks(CHUNK)
        .position_first(|c| !c.iter().fold(true, |ok, x| ok & x.finite()))
        .and_then(|b| {
            let start = b * CHUNK;
            v.get(start..)?
                .iter()
                .position(|x| !x.finite())
                .map(|i| start + i)
        });
    if let Some(i) = first_bad {
        return Err(invalid(
            kernel,
            format!("{what} {} has a non-finite coordinate", i / dim),
        ));
    }
    let n = v.len() / dim;
    if n >= u32::MAX as usize {
        return Err(invalid(kernel, format!("{n} {what}s is too many")));
    }
    Ok(n)
}

pub(crate) fn check_k_r2<T: GpuCoord>(
    k: usize,
    r2: Option<T>,
    kernel: &'static str,
) -> Result<f64, CudaError> {
    if k == 0 || k > K_MAX {
        return Err(invalid(
            kernel,
            format!("k = {k} is out of range 1..={K_MAX}"),
        ));
    }
    match r2 {
        None => Ok(f64::INFINITY),
        Some(r) if r.widen() >= 0.0 => Ok(r.widen()),
        Some(r) => Err(invalid(kernel, format!("r2 = {r:?} must be >= 0"))),
    }
}

fn launch_err(kernel: String) -> impl FnOnce(cudarc::driver::DriverError) -> CudaError {
    move |source| CudaError::Driver {
        action: format!("launching {kernel}"),
        source,
    }
}

fn cfg(n_queries: usize) -> LaunchConfig {
    let blocks = n_queries.div_ceil(THREADS as usize).max(1);
    LaunchConfig {
        grid_dim: (u32::try_from(blocks).unwrap_or(u32::MAX), 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Brute-force kNN of every query (`queries`, `dim` values each) among `points`. `r2`: keep
/// d² ≤ r2 (already rounded to `T`); `exclude_self`: skip point j == query index (pass the points
/// as the queries). Returns (indices, d², kernel ms).
pub fn knn_brute<T: GpuCoord>(
    gpu: &Gpu,
    points: &[T],
    queries: &[T],
    dim: usize,
    k: usize,
    r2: Option<T>,
    exclude_self: bool,
) -> Result<KnnRows<T>, CudaError> {
    const K: &str = "neighbors_brute";
    let n = check_coords("point", points, dim, K)?;
    let nq = check_coords("query", queries, dim, K)?;
    let r2 = check_k_r2(k, r2, K)?;
    let out_len = nq
        .checked_mul(k)
        .ok_or_else(|| invalid(K, "queries × k overflows"))?;
    if nq == 0 {
        return Ok((Vec::new(), Vec::new(), 0.0));
    }
    let params = BruteParams {
        n_points: n as u32,
        n_queries: nq as u32,
        k: k as u32,
        dim: dim as u32,
        exclude_self: u32::from(exclude_self),
        idx32: 0,
        r2,
    };
    let name = format!("neighbors_brute_{}", T::SUFFIX);
    let f = gpu.function(MODULE, &name)?;
    let _held = gpu.hold();
    let dp = gpu.upload(points, "the points")?;
    let dq = gpu.upload(queries, "the queries")?;
    let mut oi = gpu.zeros::<i64>(out_len, "the neighbour indices")?;
    let mut od = gpu.zeros::<T>(out_len, "the neighbour distances")?;
    let start = gpu.mark()?;
    {
        let mut b = gpu.stream().launch_builder(&f);
        b.arg(&params).arg(&dp).arg(&dq).arg(&mut oi).arg(&mut od);
        // SAFETY: neighbors_brute_*(NeighborsBruteParams by value, const T* pts, const T* qs,
        // void* out_idx (long long: idx32 = 0), T* out_d2): pts holds n_points*dim values (a 1-element dummy when
        // empty, never read), qs n_queries*dim, the outputs n_queries*k each; the kernel reads
        // pts below n_points, qs and writes outputs only for query < n_queries, k (≤ 64) each.
        unsafe { b.launch(cfg(nq)) }.map_err(launch_err(name.clone()))?;
    }
    let ms = gpu.elapsed_ms(&start)?;
    let idx = gpu.download(&oi, out_len, "the neighbour indices")?;
    let d2 = gpu.download(&od, out_len, "the neighbour distances")?;
    Ok((idx, d2, ms))
}

#[cfg(test)]
mod tests;
