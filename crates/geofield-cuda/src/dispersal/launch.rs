//! The safe wrappers: plan (validate), upload, launch between two timing events, download.

use cudarc::driver::{
    CudaFunction, CudaSlice, CudaViewMut, DriverError, LaunchArgs, LaunchConfig, PushKernelArg,
};

use super::params::{BlendParams, FinalizeParams};
use super::plan::{THREADS, plan_cutoff, plan_exact, plan_multires};
use super::{
    CUTOFF_TILE, GridDims, HostOut, KernelShape, NearBlend, OutPrecision, Pyramid, TileBins,
};
use crate::context::Gpu;
use crate::error::{CudaError, invalid};

const MODULE: &str = "dispersal";

/// The output buffer in the requested precision, or a caller's f32 device map.
enum OutBuf<'a> {
    F32(CudaSlice<f32>),
    F64(CudaSlice<f64>),
    Into(CudaViewMut<'a, f32>),
}

impl OutBuf<'_> {
    fn new(gpu: &Gpu, p: OutPrecision, n: usize) -> Result<OutBuf<'static>, CudaError> {
        Ok(match p {
            OutPrecision::F32 => OutBuf::F32(gpu.zeros(n, "the output")?),
            OutPrecision::F64 => OutBuf::F64(gpu.zeros(n, "the output")?),
        })
    }
    fn push<'b>(&'b mut self, b: &mut LaunchArgs<'b>) {
        match self {
            OutBuf::F32(o) => b.arg(o),
            OutBuf::F64(o) => b.arg(o),
            OutBuf::Into(o) => b.arg(o),
        };
    }
    fn download(&self, gpu: &Gpu, n: usize) -> Result<HostOut, CudaError> {
        Ok(match self {
            OutBuf::F32(o) => HostOut::F32(gpu.download(o, n, "the output")?),
            OutBuf::F64(o) => HostOut::F64(gpu.download(o, n, "the output")?),
            OutBuf::Into(_) => {
                return Err(invalid("dispersal", "a caller's device map stays there"));
            }
        })
    }
}

fn cfg(grid_dim: (u32, u32, u32)) -> LaunchConfig {
    LaunchConfig {
        grid_dim,
        block_dim: THREADS,
        shared_mem_bytes: 0,
    }
}

fn cells(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

pub(super) fn launch_err(kernel: &str) -> impl FnOnce(DriverError) -> CudaError + '_ {
    move |source| CudaError::Driver {
        action: format!("launching {kernel}"),
        source,
    }
}

fn kernel(gpu: &Gpu, name: &str) -> Result<CudaFunction, CudaError> {
    gpu.function(MODULE, name)
}

/// Exact sum over every tree for every cell. `torus = Some((Lx, Ly))` uses the minimum image
/// per axis (periods in m; at least the span of a 32 x 64-cell tile, in practice the grid's
/// extent). `u`, `v` are grid-relative tree positions (m), `w` their weights. Returns the output
/// and the kernels' time in ms.
#[allow(clippy::too_many_arguments)]
pub fn dispersal_exact(
    gpu: &Gpu,
    grid: GridDims,
    shape: KernelShape,
    torus: Option<(f64, f64)>,
    u: &[f64],
    v: &[f64],
    w: &[f32],
    out: OutPrecision,
) -> Result<(HostOut, f32), CudaError> {
    let sms = gpu.info().multiprocessors;
    let Some(plan) = plan_exact(grid, shape, torus, u, v, w, out, sms)? else {
        return Ok((HostOut::empty(out), 0.0));
    };
    if plan.slices > 1 {
        gpu.prepare(MODULE, &[&plan.kernel, "dispersal_finalize"])?;
    }
    let f = kernel(gpu, &plan.kernel)?;
    let n_cells = cells(plan.n_cells);
    let _held = gpu.hold();
    let du = gpu.upload(u, "tree u")?;
    let dv = gpu.upload(v, "tree v")?;
    let dw = gpu.upload(w, "tree weights")?;
    let mut outbuf = OutBuf::new(gpu, out, n_cells)?;
    let mut partial = match plan.slices {
        1 => None,
        s => Some(gpu.zeros::<f64>(n_cells * s as usize, "per-slice partial sums")?),
    };
    let start = gpu.mark()?;
    {
        let mut b = gpu.stream().launch_builder(&f);
        b.arg(&plan.params).arg(&du).arg(&dv).arg(&dw);
        match partial.as_mut() {
            Some(p) => {
                b.arg(p);
            }
            None => outbuf.push(&mut b),
        }
        // SAFETY: the arguments match dispersal_exact_*(DispersalExactParams by value, const
        // double* u, const double* v, const float* w, void* out) in order and type. u, v, w hold
        // n_trees elements (1-element dummies when n_trees = 0, never read). The kernel writes
        // only cells with row < rows, col < cols, at slice * slice_stride + row * cols + col:
        // inside the n_cells elements of `out` (one slice; dtype as out_f64 says) or the
        // slices * n_cells f64 partials.
        unsafe { b.launch(cfg(plan.grid_dim)) }.map_err(launch_err(&plan.kernel))?;
    }
    if let Some(p) = partial.as_ref() {
        let fin = kernel(gpu, "dispersal_finalize")?;
        let fp = FinalizeParams {
            n_cells: plan.n_cells,
            slices: plan.slices,
            out_f64: u32::from(out == OutPrecision::F64),
        };
        let blocks = plan.n_cells.div_ceil(256).min(1 << 20);
        let fcfg = LaunchConfig {
            grid_dim: (u32::try_from(blocks).unwrap_or(1 << 20), 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = gpu.stream().launch_builder(&fin);
        b.arg(&fp).arg(p);
        outbuf.push(&mut b);
        // SAFETY: dispersal_finalize(DispersalFinalizeParams, const double* partial, void* out):
        // `partial` holds slices * n_cells f64, `out` n_cells elements of the dtype out_f64
        // names; the grid-stride loop stays below n_cells.
        unsafe { b.launch(fcfg) }.map_err(launch_err("dispersal_finalize"))?;
    }
    let ms = gpu.elapsed_ms(&start)?;
    Ok((outbuf.download(gpu, n_cells)?, ms))
}

/// Sum over the trees within `radius_m` of each cell (d² ≤ R², decided per pair), from trees
/// binned by the host into square tiles. Open plot only: for a torus the host adds ghost copies.
pub fn dispersal_cutoff(
    gpu: &Gpu,
    grid: GridDims,
    shape: KernelShape,
    bins: &TileBins<'_>,
    radius_m: f64,
    out: OutPrecision,
) -> Result<(HostOut, f32), CudaError> {
    dispersal_cutoff_blend(gpu, grid, shape, bins, radius_m, None, out)
}

/// [`dispersal_cutoff`] with each pair weighted by the near/far blend's near factor (`None`:
/// the plain cutoff).
pub fn dispersal_cutoff_blend(
    gpu: &Gpu,
    grid: GridDims,
    shape: KernelShape,
    bins: &TileBins<'_>,
    radius_m: f64,
    blend: Option<&NearBlend>,
    out: OutPrecision,
) -> Result<(HostOut, f32), CudaError> {
    let Some(plan) = plan_cutoff(grid, shape, bins, radius_m, out)? else {
        return Ok((HostOut::empty(out), 0.0));
    };
    let n_cells = cells(plan.n_cells);
    let _held = gpu.hold();
    let mut outbuf = OutBuf::new(gpu, out, n_cells)?;
    let ms = cutoff_launch(gpu, plan, bins, radius_m, blend, &mut outbuf)?;
    Ok((outbuf.download(gpu, n_cells)?, ms))
}

/// [`dispersal_cutoff`] in f32 written into `dst` on the device (its first cols · rows values;
/// the others are left alone), for a caller that keeps the map there: the same values as the
/// host's copy, without the copy. Returns the kernel's time in ms.
pub fn dispersal_cutoff_into(
    gpu: &Gpu,
    grid: GridDims,
    shape: KernelShape,
    bins: &TileBins<'_>,
    radius_m: f64,
    dst: &mut CudaSlice<f32>,
) -> Result<f32, CudaError> {
    let n_cells = cells(u64::from(grid.cols) * u64::from(grid.rows));
    if dst.len() < n_cells {
        return Err(invalid(
            "dispersal_cutoff",
            format!("a device map of {} values for {n_cells} cells", dst.len()),
        ));
    }
    let _held = gpu.hold();
    let mut view = dst.slice_mut(0..n_cells);
    gpu.stream()
        .memset_zeros(&mut view)
        .map_err(|source| CudaError::Driver {
            action: "zeroing a device map".into(),
            source,
        })?;
    let Some(plan) = plan_cutoff(grid, shape, bins, radius_m, OutPrecision::F32)? else {
        return Ok(0.0);
    };
    let mut target = OutBuf::Into(view);
    cutoff_launch(gpu, plan, bins, radius_m, None, &mut target)
}

/// Uploads the bins and launches the planned cutoff (with the blend's factor if given) into
/// `out`; the caller holds the device. Returns the kernel's time in ms.
fn cutoff_launch(
    gpu: &Gpu,
    mut plan: super::plan::Plan<super::params::CutoffParams>,
    bins: &TileBins<'_>,
    radius_m: f64,
    blend: Option<&NearBlend>,
    out: &mut OutBuf<'_>,
) -> Result<f32, CudaError> {
    let bl = match blend {
        Some(b) => Some(blend_params(b, plan.params.scale, radius_m)?),
        None => None,
    };
    if let Some(b) = blend {
        plan.kernel = blend_kernel(&plan.kernel, b.coef.len());
    }
    let f = kernel(gpu, &plan.kernel)?;
    let (ts, du, dv, dw) = upload_bins(gpu, bins)?;
    let start = gpu.mark()?;
    {
        let mut b = gpu.stream().launch_builder(&f);
        b.arg(&plan.params);
        if let Some(bl) = &bl {
            b.arg(bl);
        }
        b.arg(&ts).arg(&du).arg(&dv).arg(&dw);
        out.push(&mut b);
        // SAFETY: the arguments match dispersal_cutoff_*(DispersalCutoffParams, const u32*
        // tile_start, const float* du, dv, w, void* out), and dispersal_cutoff_blend{4,6}_* the same
        // with DispersalBlendParams after the first (its order 4 or 6, checked). tile_start has
        // tiles_x * tiles_y + 1 entries, non-decreasing from 0 to the tree count (checked), so
        // every tree index the kernel forms is below len(du) = len(dv) = len(w) (1-element
        // dummies when there are no trees, never read); the kernel writes only cells inside the
        // grid (< n_cells), which `out` holds (of the plan's precision: f32 for `Into`).
        unsafe { b.launch(cfg(plan.grid_dim)) }.map_err(launch_err(&plan.kernel))?;
    }
    gpu.elapsed_ms(&start)
}

/// The cutoff computed strip by strip: the bins are uploaded once, then each call of
/// [`CutoffStrips::rows`] computes and downloads a range of grid rows. Every cell gets exactly
/// the value [`dispersal_cutoff`] gives it (the same blocks and arithmetic, offset by the
/// strip's first row), so a map can be handed on, compressed or written while the next strip
/// computes, and only a strip of it needs device memory.
pub struct CutoffStrips<'g> {
    gpu: &'g Gpu,
    f: CudaFunction,
    plan: super::plan::Plan<super::params::CutoffParams>,
    out: OutPrecision,
    bins: (
        CudaSlice<u32>,
        CudaSlice<f32>,
        CudaSlice<f32>,
        CudaSlice<f32>,
    ),
}

impl<'g> CutoffStrips<'g> {
    /// Validate and upload the bins; `None` for an empty grid.
    pub fn new(
        gpu: &'g Gpu,
        grid: GridDims,
        shape: KernelShape,
        bins: &TileBins<'_>,
        radius_m: f64,
        out: OutPrecision,
    ) -> Result<Option<Self>, CudaError> {
        let Some(plan) = plan_cutoff(grid, shape, bins, radius_m, out)? else {
            return Ok(None);
        };
        let f = kernel(gpu, &plan.kernel)?;
        let bins = {
            let _held = gpu.hold();
            upload_bins(gpu, bins)?
        };
        Ok(Some(Self {
            gpu,
            f,
            plan,
            out,
            bins,
        }))
    }

    /// Rows a strip's start must be a multiple of (the kernel's block height).
    pub const ROW_ALIGN: u32 = CUTOFF_TILE.1;

    /// Rows `row0 .. row0 + nrows` (row-major, `nrows · cols` values) and the kernel's time in
    /// ms. `row0` must be a multiple of [`Self::ROW_ALIGN`] and the rows inside the grid.
    pub fn rows(&mut self, row0: u32, nrows: u32) -> Result<(HostOut, f32), CudaError> {
        let p = &self.plan.params;
        if !row0.is_multiple_of(Self::ROW_ALIGN)
            || nrows == 0
            || row0.checked_add(nrows).is_none_or(|end| end > p.rows)
        {
            return Err(invalid(
                "dispersal_cutoff",
                format!(
                    "strip of rows {row0} + {nrows} of a grid of {} rows (the start must be a multiple of {})",
                    p.rows,
                    Self::ROW_ALIGN
                ),
            ));
        }
        let params = super::params::CutoffParams {
            row_offset: row0,
            rows: row0 + nrows,
            ..*p
        };
        let grid_dim = (
            self.plan.grid_dim.0,
            nrows.div_ceil(CUTOFF_TILE.1),
            self.plan.grid_dim.2,
        );
        let n_cells = cells(u64::from(nrows) * u64::from(p.cols));
        let gpu = self.gpu;
        let _held = gpu.hold();
        let mut outbuf = OutBuf::new(gpu, self.out, n_cells)?;
        let start = gpu.mark()?;
        {
            let (ts, du, dv, dw) = &self.bins;
            let mut b = gpu.stream().launch_builder(&self.f);
            b.arg(&params).arg(ts).arg(du).arg(dv).arg(dw);
            outbuf.push(&mut b);
            // SAFETY: as in dispersal_cutoff_blend without a blend (the plan's kernel and bins,
            // checked by plan_cutoff). The blocks cover rows row_offset .. rows (< the grid's
            // rows, checked above) and the kernel writes cell (row - row_offset) · cols + col
            // only for row < rows and col < cols: below nrows · cols = n_cells.
            unsafe { b.launch(cfg(grid_dim)) }.map_err(launch_err(&self.plan.kernel))?;
        }
        let ms = gpu.elapsed_ms(&start)?;
        Ok((outbuf.download(gpu, n_cells)?, ms))
    }
}

/// The blended cutoff into a device buffer (f32) kept on the device, and its kernel time; `None`
/// for an empty grid.
pub(super) fn cutoff_blend_device(
    gpu: &Gpu,
    grid: GridDims,
    shape: KernelShape,
    bins: &TileBins<'_>,
    radius_m: f64,
    blend: &NearBlend,
) -> Result<(Option<CudaSlice<f32>>, f32), CudaError> {
    let Some(mut plan) = plan_cutoff(grid, shape, bins, radius_m, OutPrecision::F32)? else {
        return Ok((None, 0.0));
    };
    let bl = blend_params(blend, plan.params.scale, radius_m)?;
    plan.kernel = blend_kernel(&plan.kernel, blend.coef.len());
    let f = kernel(gpu, &plan.kernel)?;
    let n_cells = cells(plan.n_cells);
    let _held = gpu.hold();
    let (ts, du, dv, dw) = upload_bins(gpu, bins)?;
    let mut out = gpu.zeros::<f32>(n_cells, "the output")?;
    let start = gpu.mark()?;
    {
        let mut b = gpu.stream().launch_builder(&f);
        b.arg(&plan.params)
            .arg(&bl)
            .arg(&ts)
            .arg(&du)
            .arg(&dv)
            .arg(&dw)
            .arg(&mut out);
        // SAFETY: as in dispersal_cutoff_blend (same kernel, same arguments, f32 output).
        unsafe { b.launch(cfg(plan.grid_dim)) }.map_err(launch_err(&plan.kernel))?;
    }
    let ms = gpu.elapsed_ms(&start)?;
    Ok((Some(out), ms))
}

/// The bins on the device: tile starts, du, dv, weights.
#[allow(clippy::type_complexity)]
fn upload_bins(
    gpu: &Gpu,
    bins: &TileBins<'_>,
) -> Result<
    (
        CudaSlice<u32>,
        CudaSlice<f32>,
        CudaSlice<f32>,
        CudaSlice<f32>,
    ),
    CudaError,
> {
    Ok((
        gpu.upload(bins.tile_start, "tile starts")?,
        gpu.upload(bins.du, "tree du")?,
        gpu.upload(bins.dv, "tree dv")?,
        gpu.upload(bins.w, "tree weights")?,
    ))
}

/// The blended cutoff kernel of `cutoff` (`dispersal_cutoff_<shape>`) for blend order n.
fn blend_kernel(cutoff: &str, n: usize) -> String {
    cutoff.replacen(
        "dispersal_cutoff_",
        &format!("dispersal_cutoff_blend{n}_"),
        1,
    )
}

/// The blend's constants in the kernel's scaled squared distances.
fn blend_params(b: &NearBlend, scale: f64, radius_m: f64) -> Result<BlendParams, CudaError> {
    let n = b.coef.len();
    if !(n == 4 || n == 6)
        || !(b.inner_m >= 0.0 && b.inner_m < b.outer_m && b.outer_m <= radius_m * (1.0 + 1e-12))
        || b.coef.iter().any(|c| !(c.is_finite() && *c > 0.0))
    {
        return Err(invalid(
            "dispersal_cutoff_blend",
            format!(
                "blend needs 4 or 6 positive coefficients (its order) and 0 <= R1 < R <= the radius, got {} coefficients, R1 = {} m, R = {} m, radius {} m",
                n, b.inner_m, b.outer_m, radius_m
            ),
        ));
    }
    let x1 = (b.inner_m * scale).powi(2);
    let x2 = (b.outer_m * scale).powi(2);
    let mut c = [0.0f32; 8];
    for (d, s) in c.iter_mut().zip(&b.coef) {
        *d = *s as f32;
    }
    Ok(BlendParams {
        x1: x1 as f32,
        inv_w: (1.0 / (x2 - x1)) as f32,
        order: n as u32,
        pad0: 0,
        c,
    })
}

/// The paper's multi-resolution approximation: per cell, a depth-first walk of the pyramid that
/// uses a whole node when it is farther than its level's ρ_q and opens it otherwise.
pub fn dispersal_multires(
    gpu: &Gpu,
    grid: GridDims,
    shape: KernelShape,
    pyr: &Pyramid<'_>,
    out: OutPrecision,
) -> Result<(HostOut, f32), CudaError> {
    let Some(plan) = plan_multires(grid, shape, pyr, out)? else {
        return Ok((HostOut::empty(out), 0.0));
    };
    let f = kernel(gpu, &plan.kernel)?;
    let n_cells = cells(plan.n_cells);
    let _held = gpu.hold();
    let nu = gpu.upload(pyr.node_u, "node u")?;
    let nv = gpu.upload(pyr.node_v, "node v")?;
    let nw = gpu.upload(pyr.node_w, "node weights")?;
    let mut outbuf = OutBuf::new(gpu, out, n_cells)?;
    let start = gpu.mark()?;
    {
        let mut b = gpu.stream().launch_builder(&f);
        b.arg(&plan.params).arg(&nu).arg(&nv).arg(&nw);
        outbuf.push(&mut b);
        // SAFETY: the arguments match dispersal_multires(DispersalMultiresParams, const float*
        // node_u, node_v, node_w, void* out). For every level q < levels, level_offset[q] +
        // side_q^2 <= node count (checked) and the walk only forms (i, j) with i, j < side_q;
        // the kernel writes only cells inside the grid (< n_cells).
        unsafe { b.launch(cfg(plan.grid_dim)) }.map_err(launch_err(&plan.kernel))?;
    }
    let ms = gpu.elapsed_ms(&start)?;
    Ok((outbuf.download(gpu, n_cells)?, ms))
}
