//! Grids over a point set built on the device (`kernels/grid.cu`) and the k-NN kernels that
//! search them (`neighbors_grid_*`, `neighbors_tree_*` in `kernels/neighbors.cu`).
//!
//! [`DeviceGrid::build`] is six kernel launches with no host round trip: bounds (its last block
//! writes the plan), clear, count, scan, scatter, slab ranges. The plan (cell size, dims) lives on
//! the device; [`DeviceGrid::plan`] copies it back when asked. Buffers are allocated once by
//! [`DeviceGrid::new`] for up to `n` points and reused by every build.

use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};

use super::{GpuCoord, KnnIndex, MAX_CELLS, TARGET_PER_CELL, check_coords, check_k_r2, launch_err};
use crate::context::Gpu;
use crate::error::{CudaError, invalid};

const GRID_MODULE: &str = "grid";
const BUILD_THREADS: u32 = 256;
const TILE: usize = 4096;
const PLAN_WORDS: usize = 11;

/// Which grid [`DeviceGrid`] builds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DeviceIndex {
    /// Uniform cells, about [`TARGET_PER_CELL`] points each (as the CPU's uniform grid), chosen
    /// on the device from the points' bounding box; searched shell by shell.
    Uniform,
    /// Uniform cells of size `h`; `cells` is the cell count [`uniform_cells`] gave for the same
    /// points (allocated; the device never uses more).
    UniformCell { h: f64, cells: usize },
    /// The dynamic grid: 2^L cells per axis in Morton order, searched as the implicit 2^d-ary
    /// tree of aligned cell blocks, a block of at most `max_leaf` points being a leaf.
    Morton { max_leaf: u32 },
}

/// Cells of a uniform grid of cell size `h` over `points` (`dim` values each), as the device
/// will compute them; an error when `h` is not finite and positive or gives more than
/// [`MAX_CELLS`] cells.
pub fn uniform_cells<T: GpuCoord>(points: &[T], dim: usize, h: f64) -> Result<usize, CudaError> {
    const K: &str = "grid (cell size)";
    check_coords("point", points, dim, K)?;
    if !(h.is_finite() && h > 0.0) {
        return Err(invalid(
            K,
            format!("cell_size = {h} must be finite and > 0"),
        ));
    }
    let mut total = 1.0f64;
    for a in 0..dim {
        let mut lo = f64::INFINITY;
        let mut hi = f64::NEG_INFINITY;
        for p in points.chunks_exact(dim) {
            lo = lo.min(p[a].widen());
            hi = hi.max(p[a].widen());
        }
        let ext = if points.is_empty() { 0.0 } else { hi - lo };
        if ext.is_nan() || ext > 1e300 {
            // The device plans one cell for such extents (grid.cu `huge`: brute force, exact);
            // e.g. points from -1e308 to 1e308, whose extent overflows to infinity.
            return Ok(1);
        }
        let d = (ext / h).floor() + 1.0;
        total *= if d.is_finite() && d >= 1.0 { d } else { 1e12 };
    }
    if total > MAX_CELLS {
        return Err(invalid(
            K,
            format!("cell_size {h} gives {total:.3e} cells; at most {MAX_CELLS:.3e}"),
        ));
    }
    Ok(total as usize)
}

/// Parameters of the `grid_*` kernels (C: `GridBuildParams`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BuildParams {
    pub n: u32,
    pub dim: u32,
    pub kind: u32,
    pub cell_cap: u32,
    pub slab_cap: u32,
    pub pad: u32,
    pub cell: f64,
    pub per_cell: f64,
}
// SAFETY: #[repr(C)] plain old data matching GridBuildParams (sizes checked on both sides).
unsafe impl cudarc::driver::DeviceRepr for BuildParams {}

/// The device-side plan of a built grid (C: `GfGridPlan` in common.cuh), copied back.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GridPlan {
    pub origin: [f64; 3],
    pub h: f64,
    pub inv_h: f64,
    pub dims: [u32; 3],
    pub ncells: u32,
    pub ntiles: u32,
    pub levels: u32,
    pub slab_off: [u32; 3],
    pub nslabs: u32,
    pub kind: u32,
}

impl GridPlan {
    fn from_words(w: &[u64]) -> Self {
        let f = |i: usize| f64::from_bits(w.get(i).copied().unwrap_or(0));
        let u = |j: usize| {
            let word = w.get(5 + j / 2).copied().unwrap_or(0);
            if j.is_multiple_of(2) {
                word as u32
            } else {
                (word >> 32) as u32
            }
        };
        GridPlan {
            origin: [f(0), f(1), f(2)],
            h: f(3),
            inv_h: f(4),
            dims: [u(0), u(1), u(2)],
            ncells: u(3),
            ntiles: u(4),
            levels: u(5),
            slab_off: [u(6), u(7), u(8)],
            nslabs: u(9),
            kind: u(10),
        }
    }
}

/// Kernel times of one build + search (CUDA events), ms.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KnnTimes {
    pub build_ms: f32,
    pub query_ms: f32,
}

/// A grid's storage copied back: (cell starts, points in storage order, original indices).
pub type Storage<T> = (Vec<u32>, Vec<T>, Vec<u32>);

/// A grid over up to `n` points, built on the device (see the module docs).
pub struct DeviceGrid<T: GpuCoord> {
    n: usize,
    dim: usize,
    index: DeviceIndex,
    params: BuildParams,
    tile_cap: usize,
    sync: CudaSlice<u64>,
    plan: CudaSlice<u64>,
    counts: CudaSlice<u32>,
    tile_sums: CudaSlice<u32>,
    starts: CudaSlice<u32>,
    rank: CudaSlice<u32>,
    pts: CudaSlice<T>,
    ids: CudaSlice<u32>,
    enc_lo: CudaSlice<u64>,
    enc_hi: CudaSlice<u64>,
    slab_lo: CudaSlice<T>,
    slab_hi: CudaSlice<T>,
    pre_max: CudaSlice<T>,
    suf_min: CudaSlice<T>,
}

fn build_cfg(items: usize, max_blocks: usize) -> LaunchConfig {
    let blocks = items.div_ceil(BUILD_THREADS as usize).clamp(1, max_blocks);
    LaunchConfig {
        grid_dim: (u32::try_from(blocks).unwrap_or(u32::MAX), 1, 1),
        block_dim: (BUILD_THREADS, 1, 1),
        shared_mem_bytes: 0,
    }
}

impl<T: GpuCoord> DeviceGrid<T> {
    /// Allocates the buffers for `n` points of dimension `dim` (2 or 3).
    pub fn new(gpu: &Gpu, n: usize, dim: usize, index: DeviceIndex) -> Result<Self, CudaError> {
        const K: &str = "grid (new)";
        if dim != 2 && dim != 3 {
            return Err(invalid(K, format!("dim = {dim} (2 or 3 supported)")));
        }
        if n >= u32::MAX as usize {
            return Err(invalid(K, format!("{n} points is too many")));
        }
        let auto_cap = (4.0 * n as f64).clamp(64.0, MAX_CELLS) as usize;
        let (kind, cell, cell_cap) = match index {
            DeviceIndex::Uniform => (0, 0.0, auto_cap),
            DeviceIndex::UniformCell { h, cells } => {
                if !(h.is_finite() && h > 0.0) || cells == 0 || cells as f64 > MAX_CELLS {
                    return Err(invalid(
                        K,
                        format!("cell size {h} with {cells} cells (see uniform_cells)"),
                    ));
                }
                (0, h, cells)
            }
            DeviceIndex::Morton { max_leaf } => {
                if max_leaf == 0 {
                    return Err(invalid(K, "max_leaf must be at least 1"));
                }
                (1, 0.0, auto_cap)
            }
        };
        // Slab entries: a uniform grid has sum(dims) <= prod(dims) + 2; a Morton pyramid
        // d (2^(L+1) - 1) with 2^(d L) <= cells, L <= 13 (2-D) or 8 (3-D).
        let max_levels = if dim == 3 { 8 } else { 13 };
        let mut levels = 0u32;
        while levels < max_levels && (1usize << (dim * (levels as usize + 1))) <= cell_cap {
            levels += 1;
        }
        let slab_cap = (cell_cap + 2).max(dim * ((2usize << levels) - 1));
        let tile_cap = (cell_cap >> 12) + 1;
        let params = BuildParams {
            n: n as u32,
            dim: dim as u32,
            kind,
            cell_cap: u32::try_from(cell_cap).unwrap_or(u32::MAX),
            slab_cap: u32::try_from(slab_cap).unwrap_or(u32::MAX),
            pad: 0,
            cell,
            per_cell: TARGET_PER_CELL,
        };
        let sync_init = [u64::MAX, u64::MAX, u64::MAX, 0, 0, 0, 0, 0];
        Ok(DeviceGrid {
            n,
            dim,
            index,
            params,
            tile_cap,
            sync: gpu.upload(&sync_init, "the bounds accumulators")?,
            plan: gpu.zeros::<u64>(PLAN_WORDS, "the grid plan")?,
            counts: gpu.zeros::<u32>(tile_cap * TILE, "the cell counts")?,
            tile_sums: gpu.zeros::<u32>(tile_cap, "the scan tile totals")?,
            starts: gpu.zeros::<u32>(tile_cap * TILE, "the cell starts")?,
            rank: gpu.zeros::<u32>(n, "the ranks in cells")?,
            pts: gpu.zeros::<T>(n * dim, "the sorted points")?,
            ids: gpu.zeros::<u32>(n, "the sorted point indices")?,
            enc_lo: gpu.zeros::<u64>(slab_cap, "the slab minima (encoded)")?,
            enc_hi: gpu.zeros::<u64>(slab_cap, "the slab maxima (encoded)")?,
            slab_lo: gpu.zeros::<T>(slab_cap, "the slab minima")?,
            slab_hi: gpu.zeros::<T>(slab_cap, "the slab maxima")?,
            pre_max: gpu.zeros::<T>(slab_cap, "the slab prefix maxima")?,
            suf_min: gpu.zeros::<T>(slab_cap, "the slab suffix minima")?,
        })
    }

    /// Number of points the grid holds.
    pub fn len(&self) -> usize {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The kernels of a build and of the search that follows, as (module, kernel) pairs: callers
    /// that launch their own kernels too can hand all of them to [`Gpu::prepare_units`] at once.
    pub(crate) fn kernels(&self) -> Vec<(&'static str, String)> {
        let sfx = T::SUFFIX;
        let tree = matches!(self.index, DeviceIndex::Morton { .. });
        vec![
            (GRID_MODULE, format!("grid_bounds_{sfx}")),
            (GRID_MODULE, "grid_clear".to_string()),
            (GRID_MODULE, format!("grid_count_{sfx}")),
            (GRID_MODULE, "grid_scan".to_string()),
            (GRID_MODULE, format!("grid_scatter_{sfx}")),
            (GRID_MODULE, format!("grid_slabs_{sfx}")),
            (
                super::MODULE,
                format!("neighbors_{}_{sfx}", if tree { "tree" } else { "grid" }),
            ),
        ]
    }

    /// Builds the grid over `points` (`n · dim` finite values on the device, checked by the
    /// caller: non-finite coordinates give a valid grid but unspecified neighbours). Launches
    /// only; no synchronisation.
    pub fn build(&mut self, gpu: &Gpu, points: &CudaSlice<T>) -> Result<(), CudaError> {
        const K: &str = "grid (build)";
        if points.len() < self.n * self.dim {
            return Err(invalid(
                K,
                format!(
                    "{} values on the device for {} points of dimension {}",
                    points.len(),
                    self.n,
                    self.dim
                ),
            ));
        }
        let sfx = T::SUFFIX;
        let n = self.n;
        let p = self.params;
        // Every kernel of a build and of the search that follows, compiled together on first use.
        let units = self.kernels();
        let refs: Vec<(&'static str, &str)> = units.iter().map(|(m, k)| (*m, k.as_str())).collect();
        gpu.prepare_units(&refs)?;
        let f = gpu.function(GRID_MODULE, &format!("grid_bounds_{sfx}"))?;
        {
            let mut b = gpu.stream().launch_builder(&f);
            b.arg(&p)
                .arg(points)
                .arg(&mut self.sync)
                .arg(&mut self.plan);
            // SAFETY: grid_bounds_*(GridBuildParams, const T* pts, u64* sync, GfGridPlan* plan):
            // pts holds n·dim values (checked above), sync 8 words (7 used, reset by the last
            // block), plan 11 words = sizeof(GfGridPlan) (asserted in C).
            unsafe { b.launch(build_cfg(n, 1024)) }.map_err(launch_err(f_name("bounds")))?;
        }
        let f = gpu.function(GRID_MODULE, "grid_clear")?;
        {
            let mut b = gpu.stream().launch_builder(&f);
            b.arg(&p)
                .arg(&self.plan)
                .arg(&mut self.counts)
                .arg(&mut self.tile_sums)
                .arg(&mut self.enc_lo)
                .arg(&mut self.enc_hi);
            // SAFETY: grid_clear(GridBuildParams, const GfGridPlan*, u32* counts, u32* tile_sums,
            // u64* enc_lo, u64* enc_hi): the plan keeps ncells <= cell_cap (so ntiles <=
            // tile_cap: counts hold tile_cap·4096) and nslabs <= slab_cap (both enc arrays).
            let items = (self.tile_cap * TILE).max(p.slab_cap as usize);
            unsafe { b.launch(build_cfg(items, 4096)) }.map_err(launch_err(f_name("clear")))?;
        }
        let f = gpu.function(GRID_MODULE, &format!("grid_count_{sfx}"))?;
        {
            let mut b = gpu.stream().launch_builder(&f);
            b.arg(&p)
                .arg(&self.plan)
                .arg(points)
                .arg(&mut self.counts)
                .arg(&mut self.tile_sums)
                .arg(&mut self.rank);
            // SAFETY: grid_count_*(GridBuildParams, const GfGridPlan*, const T* pts, u32* counts,
            // u32* tile_sums, u32* rank): one thread per point < n; cell ids < ncells, tiles <
            // ntiles; rank holds n entries.
            unsafe { b.launch(build_cfg(n, usize::MAX)) }.map_err(launch_err(f_name("count")))?;
        }
        let f = gpu.function(GRID_MODULE, "grid_scan")?;
        {
            let mut b = gpu.stream().launch_builder(&f);
            b.arg(&p)
                .arg(&self.plan)
                .arg(&self.counts)
                .arg(&self.tile_sums)
                .arg(&mut self.starts);
            // SAFETY: grid_scan(GridBuildParams, const GfGridPlan*, const u32* counts,
            // const u32* tile_sums, u32* starts): block b < tile_cap scans tile b when b <
            // ntiles (<= tile_cap); counts and starts hold tile_cap·4096 entries.
            let cfg = LaunchConfig {
                grid_dim: (u32::try_from(self.tile_cap).unwrap_or(u32::MAX), 1, 1),
                block_dim: (BUILD_THREADS, 1, 1),
                shared_mem_bytes: 0,
            };
            unsafe { b.launch(cfg) }.map_err(launch_err(f_name("scan")))?;
        }
        let f = gpu.function(GRID_MODULE, &format!("grid_scatter_{sfx}"))?;
        {
            let mut b = gpu.stream().launch_builder(&f);
            b.arg(&p)
                .arg(&self.plan)
                .arg(&self.starts)
                .arg(&self.rank)
                .arg(points)
                .arg(&mut self.pts)
                .arg(&mut self.ids)
                .arg(&mut self.enc_lo)
                .arg(&mut self.enc_hi);
            // SAFETY: grid_scatter_*(GridBuildParams, const GfGridPlan*, const u32* starts,
            // const u32* rank, const T* pts, T* out_pts, u32* out_ids, u64* enc_lo,
            // u64* enc_hi): slots starts[cell] + rank < n (a counting sort), out_pts n·dim,
            // out_ids n; slab entries < nslabs <= slab_cap.
            unsafe { b.launch(build_cfg(n, usize::MAX)) }.map_err(launch_err(f_name("scatter")))?;
        }
        let f = gpu.function(GRID_MODULE, &format!("grid_slabs_{sfx}"))?;
        {
            let mut b = gpu.stream().launch_builder(&f);
            b.arg(&p)
                .arg(&self.plan)
                .arg(&self.enc_lo)
                .arg(&self.enc_hi)
                .arg(&mut self.slab_lo)
                .arg(&mut self.slab_hi)
                .arg(&mut self.pre_max)
                .arg(&mut self.suf_min);
            // SAFETY: grid_slabs_*(GridBuildParams, const GfGridPlan*, const u64* enc_lo,
            // const u64* enc_hi, T* slab_lo, T* slab_hi, T* pre_max, T* suf_min): block a <
            // dim touches entries < nslabs <= slab_cap of each array.
            let cfg = LaunchConfig {
                grid_dim: (3, 1, 1),
                block_dim: (BUILD_THREADS, 1, 1),
                shared_mem_bytes: 0,
            };
            unsafe { b.launch(cfg) }.map_err(launch_err(f_name("slabs")))?;
        }
        Ok(())
    }

    /// k-NN on the built grid; same contract as [`super::knn_brute`]. `queries = None`: the
    /// grid's own points, rows in original index order, `exclude_self` skips the query's own
    /// index; `Some((q, nq))`: `nq` separate queries. Writes every one of the first `nq · k`
    /// entries of each output (no clearing needed); indices as `I` (see [`KnnIndex`]).
    #[allow(clippy::too_many_arguments)]
    pub fn knn<I: KnnIndex>(
        &self,
        gpu: &Gpu,
        queries: Option<(&CudaSlice<T>, usize)>,
        k: usize,
        r2: Option<T>,
        exclude_self: bool,
        out_idx: &mut CudaSlice<I>,
        out_d2: &mut CudaSlice<T>,
    ) -> Result<(), CudaError> {
        const K: &str = "neighbors (device grid)";
        let r2 = check_k_r2(k, r2, K)?;
        let nq = queries.map_or(self.n, |(_, nq)| nq);
        if let Some((q, nq)) = queries
            && q.len() < nq * self.dim
        {
            return Err(invalid(
                K,
                format!("{} query values for {nq} queries", q.len()),
            ));
        }
        let out_len = nq
            .checked_mul(k)
            .ok_or_else(|| invalid(K, "queries × k overflows"))?;
        if out_idx.len() < out_len || out_d2.len() < out_len {
            return Err(invalid(K, "output buffers are too short"));
        }
        if nq == 0 {
            return Ok(());
        }
        let params = super::GridParams {
            n_points: self.n as u32,
            n_queries: nq as u32,
            k: k as u32,
            dim: self.dim as u32,
            exclude_self: u32::from(exclude_self && queries.is_none()),
            self_query: u32::from(queries.is_none()),
            r2,
            max_leaf: match self.index {
                DeviceIndex::Morton { max_leaf } => max_leaf,
                _ => 0,
            },
            idx32: I::IDX32,
        };
        let qs = queries.map_or(&self.pts, |(q, _)| q);
        let tree = matches!(self.index, DeviceIndex::Morton { .. });
        let name = format!(
            "neighbors_{}_{}",
            if tree { "tree" } else { "grid" },
            T::SUFFIX
        );
        let f = gpu.function(super::MODULE, &name)?;
        let mut b = gpu.stream().launch_builder(&f);
        b.arg(&params)
            .arg(&self.plan)
            .arg(&self.starts)
            .arg(&self.pts)
            .arg(&self.ids)
            .arg(&self.slab_lo)
            .arg(&self.slab_hi);
        if !tree {
            b.arg(&self.pre_max).arg(&self.suf_min);
        }
        b.arg(qs).arg(out_idx).arg(out_d2);
        // SAFETY: neighbors_grid_*(NeighborsGridParams, const GfGridPlan*, const u32* starts,
        // const T* pts, const u32* ids, const T* slab_lo, slab_hi, pre_max, suf_min,
        // const T* qs, void* out_idx, T* out_d2) and neighbors_tree_* (the same without
        // pre_max and suf_min), in order and type. The grid was built by `build` (stream
        // order): starts[0..=ncells] is a counting sort of n points into pts/ids, slab entries
        // < nslabs. qs holds nq·dim values (checked) or is the grid's own points (self query);
        // rows written < nq (ids < n = nq in self-query mode), k each, within the outputs
        // (checked); out_idx holds elements of I, u32 exactly when idx32 = 1.
        unsafe { b.launch(super::cfg(nq)) }.map_err(launch_err(name.clone()))?;
        Ok(())
    }

    /// The plan of the last build (copied back; synchronises).
    pub fn plan(&self, gpu: &Gpu) -> Result<GridPlan, CudaError> {
        let w = gpu.download(&self.plan, PLAN_WORDS, "the grid plan")?;
        Ok(GridPlan::from_words(&w))
    }

    /// The last build's storage: (cell starts 0..=ncells, points in storage order, their
    /// original indices), copied back (for tests and diagnostics).
    pub fn storage(&self, gpu: &Gpu) -> Result<Storage<T>, CudaError> {
        let plan = self.plan(gpu)?;
        let starts = gpu.download(&self.starts, plan.ncells as usize + 1, "the cell starts")?;
        let pts = gpu.download(&self.pts, self.n * self.dim, "the sorted points")?;
        let ids = gpu.download(&self.ids, self.n, "the sorted point indices")?;
        Ok((starts, pts, ids))
    }

    /// The per-axis slab minima and maxima of the last build (`nslabs` each).
    pub fn slabs(&self, gpu: &Gpu) -> Result<(Vec<T>, Vec<T>), CudaError> {
        let plan = self.plan(gpu)?;
        let m = plan.nslabs as usize;
        Ok((
            gpu.download(&self.slab_lo, m, "the slab minima")?,
            gpu.download(&self.slab_hi, m, "the slab maxima")?,
        ))
    }
}

fn f_name(op: &str) -> String {
    format!("grid_{op}")
}
