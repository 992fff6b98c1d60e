//! Exact k-nearest-neighbour search: safe wrappers over `kernels/neighbors.cu`.
//!
//! Semantics are those of geofield's CPU backend (`geofield::neighbors`): per query, the up to k
//! (≤ [`K_MAX`]) points with the smallest keys (d², index) among those with d² ≤ r² (and, with
//! `exclude_self`, index ≠ the query's), ascending, padded with index −1 and d² NaN. d² is
//! computed in the coordinate type `T` as ((p₀−q₀)² + (p₁−q₁)²) + (p₂−q₂)², each operation
//! rounded to nearest, without FMA or flush-to-zero (inline PTX in the kernel), so results equal
//! the CPU's bit for bit.
//!
//! - [`knn_brute`]: every query against every point (points staged in shared memory).
//! - [`GpuGrid::build`] + [`knn_grid`]: a uniform grid built on the host (counting sort into
//!   cells, per-axis slab ranges with prefix maxima and suffix minima) and searched by the
//!   kernel shell by shell with the CPU grid's exact stopping rule.

use cudarc::driver::{DeviceRepr, LaunchConfig, PushKernelArg, ValidAsZeroBits};

use crate::context::Gpu;
use crate::error::{CudaError, invalid};

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
    DeviceRepr + ValidAsZeroBits + Copy + PartialOrd + std::fmt::Debug + Send + Sync + 'static
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
    pub pad0: u32,
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
    pub origin: [f64; 3],
    pub inv_cell: f64,
    pub dims: [u32; 3],
    pub pad1: u32,
}

// SAFETY: both are #[repr(C)] plain-old-data structs of integers and floats whose layout matches
// the C mirrors (sizes checked on both sides: GF_CHECK_SIZE and the unit test below).
unsafe impl DeviceRepr for BruteParams {}
// SAFETY: as above.
unsafe impl DeviceRepr for GridParams {}

/// Rows of a kNN answer: `indices` (−1 padding) and `d2` in `T` (NaN padding), row-major with
/// `k` per query, plus the kernel time in ms.
pub type KnnRows<T> = (Vec<i64>, Vec<T>, f32);

/// A uniform grid over the points, built on the host, in the layout the grid kernel reads.
#[derive(Clone, Debug)]
pub struct GpuGrid<T: GpuCoord> {
    pub dim: usize,
    /// Grid origin (minimum of the points per axis), in f64.
    pub origin: [f64; 3],
    /// Cell size in coordinate units.
    pub cell: f64,
    /// Cells per axis (unused axes 1); cells are stored x fastest.
    pub dims: [u32; 3],
    /// Cell c holds stored points `starts[c]..starts[c+1]`.
    pub starts: Vec<u32>,
    /// Points in storage order (cell by cell, index order inside a cell), `dim` values each.
    pub pts: Vec<T>,
    /// Original index of each stored point.
    pub ids: Vec<u32>,
    /// Per axis a, per slab s (concatenated: axis a at offset dims[0] + … + dims[a-1]): the
    /// minimum / maximum coordinate of the points binned there (±inf when empty).
    pub slab_lo: Vec<T>,
    pub slab_hi: Vec<T>,
    /// Prefix maximum of `slab_hi` and suffix minimum of `slab_lo`, per axis.
    pub pre_max: Vec<T>,
    pub suf_min: Vec<T>,
}

fn grid_dims(ext: &[f64], cell: f64) -> ([usize; 3], f64) {
    let mut dims = [1usize; 3];
    let mut total = 1.0f64;
    for (a, &e) in ext.iter().enumerate() {
        let n = (e / cell).floor() + 1.0;
        let n = if n.is_finite() && n >= 1.0 {
            n.min(1e12)
        } else {
            1e12
        };
        total *= n;
        dims[a] = n as usize;
    }
    (dims, total)
}

fn check_coords<T: GpuCoord>(
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
    if let Some(i) = v.iter().position(|x| !x.finite()) {
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

fn check_k_r2<T: GpuCoord>(
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

impl<T: GpuCoord> GpuGrid<T> {
    /// Counting-sort `points` (`dim` = 2 or 3 values each, finite) into cells of size
    /// `cell_size` (default: about [`TARGET_PER_CELL`] points per cell, doubled while the grid
    /// has more than max(4N, 64) cells), as the CPU's uniform grid.
    pub fn build(points: &[T], dim: usize, cell_size: Option<f64>) -> Result<Self, CudaError> {
        const K: &str = "neighbors_grid (build)";
        let n = check_coords("point", points, dim, K)?;
        let mut lo = [0.0f64; 3];
        let mut hi = [0.0f64; 3];
        if n > 0 {
            lo = [f64::INFINITY; 3];
            hi = [f64::NEG_INFINITY; 3];
            for p in points.chunks_exact(dim) {
                for a in 0..dim {
                    let v = p[a].widen();
                    lo[a] = lo[a].min(v);
                    hi[a] = hi[a].max(v);
                }
            }
            for a in dim..3 {
                lo[a] = 0.0;
                hi[a] = 0.0;
            }
        }
        let ext: Vec<f64> = (0..dim).map(|a| hi[a] - lo[a]).collect();
        let (cell, dims) = match cell_size {
            Some(h) => {
                if !(h.is_finite() && h > 0.0) {
                    return Err(invalid(
                        K,
                        format!("cell_size = {h} must be finite and > 0"),
                    ));
                }
                let (dims, total) = grid_dims(&ext, h);
                if total > MAX_CELLS {
                    return Err(invalid(
                        K,
                        format!("cell_size {h} gives {total:.3e} cells; at most {MAX_CELLS:.3e}"),
                    ));
                }
                (h, dims)
            }
            None => {
                let mut vol = 1.0f64;
                let mut dpos = 0;
                for &e in &ext {
                    if e > 0.0 {
                        vol *= e;
                        dpos += 1;
                    }
                }
                let mut h = if dpos == 0 {
                    1.0
                } else {
                    (vol * TARGET_PER_CELL / n.max(1) as f64).powf(1.0 / f64::from(dpos))
                };
                if !(h.is_finite() && h > 0.0) {
                    h = ext.iter().copied().fold(0.0, f64::max);
                    if !(h.is_finite() && h > 0.0) {
                        h = 1.0;
                    }
                }
                let limit = (4.0 * n as f64).clamp(64.0, MAX_CELLS);
                let (mut dims, mut total) = grid_dims(&ext, h);
                while total > limit {
                    h *= 2.0;
                    (dims, total) = grid_dims(&ext, h);
                }
                (h, dims)
            }
        };
        let ncells: usize = dims.iter().product();
        let mut coords = vec![[0u32; 3]; n];
        let mut cell_ids = vec![0usize; n];
        for (i, p) in points.chunks_exact(dim).enumerate() {
            let mut id = 0usize;
            for a in (0..dim).rev() {
                let f = ((p[a].widen() - lo[a]) / cell).floor();
                let last = dims[a] - 1;
                let c = if f >= 0.0 { (f as usize).min(last) } else { 0 };
                coords[i][a] = c as u32;
                id = id * dims[a] + c;
            }
            cell_ids[i] = id;
        }
        let mut starts = vec![0u32; ncells + 1];
        for &c in &cell_ids {
            starts[c + 1] += 1;
        }
        for c in 0..ncells {
            starts[c + 1] += starts[c];
        }
        let mut cursor: Vec<u32> = starts[..ncells].to_vec();
        let mut pts = vec![T::ZERO_VAL; n * dim];
        let mut ids = vec![0u32; n];
        for (i, &c) in cell_ids.iter().enumerate() {
            let pos = cursor[c] as usize;
            cursor[c] += 1;
            pts[pos * dim..(pos + 1) * dim].copy_from_slice(&points[i * dim..(i + 1) * dim]);
            ids[pos] = i as u32;
        }
        let total_slabs: usize = dims.iter().sum();
        let mut off = [0usize; 3];
        for a in 1..3 {
            off[a] = off[a - 1] + dims[a - 1];
        }
        let mut slab_lo = vec![T::POS_INF; total_slabs];
        let mut slab_hi = vec![T::NEG_INF; total_slabs];
        for (p, c) in points.chunks_exact(dim).zip(&coords) {
            for a in 0..dim {
                let s = off[a] + c[a] as usize;
                if p[a] < slab_lo[s] {
                    slab_lo[s] = p[a];
                }
                if p[a] > slab_hi[s] {
                    slab_hi[s] = p[a];
                }
            }
        }
        let mut pre_max = slab_hi.clone();
        let mut suf_min = slab_lo.clone();
        for a in 0..3 {
            let r = off[a]..off[a] + dims[a];
            let mut acc = T::NEG_INF;
            for v in &mut pre_max[r.clone()] {
                if *v > acc {
                    acc = *v;
                }
                *v = acc;
            }
            let mut acc = T::POS_INF;
            for v in suf_min[r].iter_mut().rev() {
                if *v < acc {
                    acc = *v;
                }
                *v = acc;
            }
        }
        let dims32 = dims.map(|d| u32::try_from(d).unwrap_or(u32::MAX));
        Ok(GpuGrid {
            dim,
            origin: lo,
            cell,
            dims: dims32,
            starts,
            pts,
            ids,
            slab_lo,
            slab_hi,
            pre_max,
            suf_min,
        })
    }

    /// Number of points in the grid.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Internal consistency (lengths), so that the kernel never reads out of bounds.
    fn check(&self, kernel: &'static str) -> Result<(), CudaError> {
        let n = self.ids.len();
        let ncells = self
            .dims
            .iter()
            .try_fold(1usize, |acc, &d| acc.checked_mul(d as usize));
        let total_slabs: usize = self.dims.iter().map(|&d| d as usize).sum();
        let ok = (self.dim == 2 || self.dim == 3)
            && self.dims.iter().all(|&d| d >= 1)
            && (self.dim == 3 || self.dims[2] == 1)
            && ncells.is_some_and(|c| c < u32::MAX as usize && self.starts.len() == c + 1)
            && self.starts.first() == Some(&0)
            && self.starts.last().map(|&l| l as usize) == Some(n)
            && self.starts.windows(2).all(|w| w[0] <= w[1])
            && self.pts.len() == n * self.dim
            && self.ids.iter().all(|&i| (i as usize) < n)
            && [&self.slab_lo, &self.slab_hi, &self.pre_max, &self.suf_min]
                .iter()
                .all(|v| v.len() == total_slabs)
            && self.cell.is_finite()
            && self.cell > 0.0;
        if ok {
            Ok(())
        } else {
            Err(invalid(kernel, "the grid's arrays are inconsistent"))
        }
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
        pad0: 0,
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
        // long long* out_idx, T* out_d2): pts holds n_points*dim values (a 1-element dummy when
        // empty, never read), qs n_queries*dim, the outputs n_queries*k each; the kernel reads
        // pts below n_points, qs and writes outputs only for query < n_queries, k (≤ 64) each.
        unsafe { b.launch(cfg(nq)) }.map_err(launch_err(name.clone()))?;
    }
    let ms = gpu.elapsed_ms(&start)?;
    let idx = gpu.download(&oi, out_len, "the neighbour indices")?;
    let d2 = gpu.download(&od, out_len, "the neighbour distances")?;
    Ok((idx, d2, ms))
}

/// kNN on a prepared [`GpuGrid`]. `queries = None`: the grid's own points are the queries
/// (answered in storage order, rows returned in original index order) and `exclude_self` skips
/// each query's own index; `Some(q)`: separate queries (`exclude_self` ignored). Returns
/// (indices, d², kernel ms).
pub fn knn_grid<T: GpuCoord>(
    gpu: &Gpu,
    grid: &GpuGrid<T>,
    queries: Option<&[T]>,
    k: usize,
    r2: Option<T>,
    exclude_self: bool,
) -> Result<KnnRows<T>, CudaError> {
    const K: &str = "neighbors_grid";
    grid.check(K)?;
    let dim = grid.dim;
    let n = grid.len();
    let nq = match queries {
        Some(q) => check_coords("query", q, dim, K)?,
        None => n,
    };
    let r2 = check_k_r2(k, r2, K)?;
    let out_len = nq
        .checked_mul(k)
        .ok_or_else(|| invalid(K, "queries × k overflows"))?;
    if nq == 0 {
        return Ok((Vec::new(), Vec::new(), 0.0));
    }
    let params = GridParams {
        n_points: n as u32,
        n_queries: nq as u32,
        k: k as u32,
        dim: dim as u32,
        exclude_self: u32::from(exclude_self && queries.is_none()),
        self_query: u32::from(queries.is_none()),
        r2,
        origin: grid.origin,
        inv_cell: 1.0 / grid.cell,
        dims: grid.dims,
        pad1: 0,
    };
    let name = format!("neighbors_grid_{}", T::SUFFIX);
    let f = gpu.function(MODULE, &name)?;
    let _held = gpu.hold();
    let ds = gpu.upload(&grid.starts, "the cell starts")?;
    let dp = gpu.upload(&grid.pts, "the sorted points")?;
    let di = gpu.upload(&grid.ids, "the sorted point indices")?;
    let dlo = gpu.upload(&grid.slab_lo, "the slab minima")?;
    let dhi = gpu.upload(&grid.slab_hi, "the slab maxima")?;
    let dpre = gpu.upload(&grid.pre_max, "the slab prefix maxima")?;
    let dsuf = gpu.upload(&grid.suf_min, "the slab suffix minima")?;
    let dq = gpu.upload(queries.unwrap_or(&[]), "the queries")?;
    let mut oi = gpu.zeros::<i64>(out_len, "the neighbour indices")?;
    let mut od = gpu.zeros::<T>(out_len, "the neighbour distances")?;
    let start = gpu.mark()?;
    {
        let mut b = gpu.stream().launch_builder(&f);
        b.arg(&params)
            .arg(&ds)
            .arg(&dp)
            .arg(&di)
            .arg(&dlo)
            .arg(&dhi)
            .arg(&dpre)
            .arg(&dsuf)
            .arg(&dq)
            .arg(&mut oi)
            .arg(&mut od);
        // SAFETY: neighbors_grid_*(NeighborsGridParams, const u32* starts, const T* pts,
        // const u32* ids, const T* slab_lo, slab_hi, pre_max, suf_min, const T* qs,
        // long long* out_idx, T* out_d2) in order and type. grid.check() verified: starts has
        // prod(dims)+1 non-decreasing entries ending at n, pts n*dim, ids n entries < n, the slab
        // arrays sum(dims); cells visited are clamped into dims. qs holds n_queries*dim values
        // when self_query = 0 (else a never-read dummy); rows written are < n_queries (ids < n =
        // n_queries in self-query mode), k each.
        unsafe { b.launch(cfg(nq)) }.map_err(launch_err(name.clone()))?;
    }
    let ms = gpu.elapsed_ms(&start)?;
    let idx = gpu.download(&oi, out_len, "the neighbour indices")?;
    let d2 = gpu.download(&od, out_len, "the neighbour distances")?;
    Ok((idx, d2, ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn param_sizes_match_the_kernel() {
        assert_eq!(std::mem::size_of::<BruteParams>(), 32);
        assert_eq!(std::mem::size_of::<GridParams>(), 80);
        let src = crate::module_source("neighbors").unwrap_or("");
        assert!(src.contains("GF_CHECK_SIZE(NeighborsBruteParams, 32)"));
        assert!(src.contains("GF_CHECK_SIZE(NeighborsGridParams, 80)"));
        assert!(src.contains("#define NB_K_MAX 64"));
        assert_eq!(K_MAX, 64);
    }

    #[test]
    fn grid_build_is_a_consistent_counting_sort() {
        // 2-D lattice with duplicates, plus a 3-D cloud.
        let mut p2 = Vec::new();
        for i in 0..200u32 {
            p2.push((i % 7) as f32);
            p2.push((i % 5) as f32 * 0.5);
        }
        let g = GpuGrid::build(&p2, 2, None).unwrap();
        g.check("test").unwrap();
        assert_eq!(g.dims[2], 1);
        let mut seen = [false; 200];
        for (pos, &i) in g.ids.iter().enumerate() {
            assert!(!seen[i as usize]);
            seen[i as usize] = true;
            assert_eq!(
                &g.pts[pos * 2..pos * 2 + 2],
                &p2[i as usize * 2..i as usize * 2 + 2]
            );
        }
        // Inside a cell, index order (stable sort).
        for c in 0..g.starts.len() - 1 {
            let r = g.starts[c] as usize..g.starts[c + 1] as usize;
            assert!(g.ids[r].windows(2).all(|w| w[0] < w[1]));
        }
        let p3: Vec<f64> = (0..300).map(|i| ((i * 37) % 101) as f64 / 7.0).collect();
        let g3 = GpuGrid::build(&p3, 3, Some(1.5)).unwrap();
        g3.check("test").unwrap();
        // Every point lies in its slabs' ranges, and prefix/suffix arrays bound them.
        let off = [0, g3.dims[0] as usize, (g3.dims[0] + g3.dims[1]) as usize];
        for (pos, p) in g3.pts.chunks_exact(3).enumerate() {
            let c = g3.starts.partition_point(|&s| s as usize <= pos) - 1;
            let cc = [
                c % g3.dims[0] as usize,
                (c / g3.dims[0] as usize) % g3.dims[1] as usize,
                c / (g3.dims[0] * g3.dims[1]) as usize,
            ];
            for a in 0..3 {
                let s = off[a] + cc[a];
                assert!(g3.slab_lo[s] <= p[a] && p[a] <= g3.slab_hi[s]);
                assert!(p[a] <= g3.pre_max[s] && g3.suf_min[s] <= p[a]);
            }
        }
        let empty = GpuGrid::<f32>::build(&[], 3, None).unwrap();
        empty.check("test").unwrap();
        assert!(empty.is_empty());
    }

    /// A line-by-line Rust copy of the grid kernel's search (nb_grid in neighbors.cu, f64
    /// arithmetic; the copy checks the host grid and the shell/stopping logic, not NVRTC).
    fn emulate(
        g: &GpuGrid<f64>,
        q: &[f64],
        skip: Option<u32>,
        k: usize,
        r2: f64,
    ) -> Vec<(f64, u32)> {
        let d = g.dim;
        let dist2 = |p: &[f64]| {
            let mut s = 0.0;
            for a in 0..d {
                let t = p[a] - q[a];
                s += t * t;
            }
            s
        };
        let off = [0usize, g.dims[0] as usize, (g.dims[0] + g.dims[1]) as usize];
        let dims = g.dims.map(|x| x as i64);
        let mut best: Vec<(f64, u32)> = Vec::new();
        let bound = |b: &Vec<(f64, u32)>| if b.len() == k { b[k - 1].0.min(r2) } else { r2 };
        let offer = |b: &mut Vec<(f64, u32)>, dd: f64, j: u32| {
            if dd <= bound(b) && Some(j) != skip {
                b.push((dd, j));
                b.sort_by(|x, y| x.partial_cmp(y).unwrap());
                b.truncate(k);
            }
        };
        if g.is_empty() {
            return best;
        }
        let mut c0 = [0i64; 3];
        let mut smax = 0;
        for a in 0..3 {
            if a < d {
                let f = ((q[a] - g.origin[a]) * (1.0 / g.cell)).floor();
                c0[a] = if f >= 0.0 {
                    (f as i64).min(dims[a] - 1)
                } else {
                    0
                };
            }
            smax = smax.max(c0[a]).max(dims[a] - 1 - c0[a]);
        }
        let visit = |b: &mut Vec<(f64, u32)>, x: i64, y: i64, z: i64| {
            let id = ((z * dims[1] + y) * dims[0] + x) as usize;
            let (s, e) = (g.starts[id] as usize, g.starts[id + 1] as usize);
            if s == e {
                return;
            }
            let c = [x as usize, y as usize, z as usize];
            let mut lb = 0.0;
            for a in 0..d {
                let (lo, hi) = (g.slab_lo[off[a] + c[a]], g.slab_hi[off[a] + c[a]]);
                let gap = if q[a] < lo {
                    lo - q[a]
                } else if q[a] > hi {
                    q[a] - hi
                } else {
                    0.0
                };
                lb += gap * gap;
            }
            if lb > bound(b) {
                return;
            }
            for t in s..e {
                offer(b, dist2(&g.pts[t * d..(t + 1) * d]), g.ids[t]);
            }
        };
        for s in 0..=smax {
            if s > 0 {
                let t = s - 1;
                let mut lb = f64::INFINITY;
                for a in 0..d {
                    if c0[a] > t {
                        let m = g.pre_max[off[a] + (c0[a] - t - 1) as usize];
                        let gap = if q[a] > m { q[a] - m } else { 0.0 };
                        lb = lb.min(gap * gap);
                    }
                    let up = c0[a] + t + 1;
                    if up < dims[a] {
                        let m = g.suf_min[off[a] + up as usize];
                        let gap = if m > q[a] { m - q[a] } else { 0.0 };
                        lb = lb.min(gap * gap);
                    }
                }
                if lb > bound(&best) {
                    break;
                }
            }
            for z in (c0[2] - s).max(0)..=(c0[2] + s).min(dims[2] - 1) {
                let onz = z == c0[2] - s || z == c0[2] + s;
                for y in (c0[1] - s).max(0)..=(c0[1] + s).min(dims[1] - 1) {
                    if onz || y == c0[1] - s || y == c0[1] + s {
                        for x in (c0[0] - s).max(0)..=(c0[0] + s).min(dims[0] - 1) {
                            visit(&mut best, x, y, z);
                        }
                    } else {
                        if c0[0] - s >= 0 {
                            visit(&mut best, c0[0] - s, y, z);
                        }
                        if s > 0 && c0[0] + s < dims[0] {
                            visit(&mut best, c0[0] + s, y, z);
                        }
                    }
                }
            }
        }
        best
    }

    #[test]
    fn emulated_grid_search_equals_brute_force() {
        let mut seed = 12345u64;
        let mut rnd = move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as f64 / (1u64 << 31) as f64
        };
        for dim in [2usize, 3] {
            for (label, scale, lattice) in [("uniform", 50.0, false), ("lattice", 6.0, true)] {
                let n = 1500;
                let pts: Vec<f64> = (0..n * dim)
                    .map(|_| {
                        let v = rnd() * scale;
                        if lattice { v.floor() } else { v }
                    })
                    .collect();
                for cell in [None, Some(0.3), Some(7.0)] {
                    let g = GpuGrid::build(&pts, dim, cell).unwrap();
                    for k in [1usize, 7, 64] {
                        for r2 in [f64::INFINITY, 4.0, 1.0] {
                            for (i, q) in pts.chunks_exact(dim).enumerate().step_by(7) {
                                let skip = Some(i as u32);
                                let mut want: Vec<(f64, u32)> = pts
                                    .chunks_exact(dim)
                                    .enumerate()
                                    .filter(|&(j, _)| j != i)
                                    .map(|(j, p)| {
                                        let mut s = 0.0;
                                        for a in 0..dim {
                                            let t = p[a] - q[a];
                                            s += t * t;
                                        }
                                        (s, j as u32)
                                    })
                                    .filter(|&(s, _)| s <= r2)
                                    .collect();
                                want.sort_by(|x, y| x.partial_cmp(y).unwrap());
                                want.truncate(k);
                                let got = emulate(&g, q, skip, k, r2);
                                assert_eq!(
                                    got, want,
                                    "{label} dim {dim} cell {cell:?} k {k} r2 {r2} query {i}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn bad_inputs_are_errors() {
        assert!(GpuGrid::<f32>::build(&[1.0, 2.0, 3.0], 2, None).is_err());
        assert!(GpuGrid::<f32>::build(&[1.0, f32::NAN], 2, None).is_err());
        assert!(GpuGrid::<f32>::build(&[1.0, 2.0], 4, None).is_err());
        assert!(GpuGrid::<f64>::build(&[0.0, 0.0, 1e9, 1e9], 2, Some(1e-3)).is_err());
        assert!(check_k_r2::<f32>(0, None, "t").is_err());
        assert!(check_k_r2::<f32>(65, None, "t").is_err());
        assert!(check_k_r2::<f32>(3, Some(-1.0), "t").is_err());
        assert_eq!(check_k_r2::<f32>(3, Some(0.25), "t").ok(), Some(0.25));
    }
}
