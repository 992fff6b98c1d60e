//! Launch plans: validated inputs turned into kernel name, parameter struct and launch shape.
//! Pure host code (no GPU), so it is unit-tested here and can drive kernel emulators.

use super::params::{CutoffParams, ExactParams, MultiresParams, ShapeConsts};
use super::{
    CUTOFF_TILE, EXACT_TILE, GridDims, KernelShape, MULTIRES_BLOCK, OutPrecision, Pyramid,
    TileBins, check,
};
use crate::error::CudaError;

/// Threads per block of every dispersal kernel (32 x 8: one warp per row of cells).
pub const THREADS: (u32, u32, u32) = (32, 8, 1);

/// What to launch: kernel name, parameters, grid of blocks (block = [`THREADS`]), and for the
/// exact kernel the number of tree slices (> 1: the output is written as f64 partials of
/// `slices * n_cells` elements, summed in slice order by `dispersal_finalize`).
#[derive(Clone, Debug, PartialEq)]
pub struct Plan<P> {
    pub kernel: String,
    pub params: P,
    pub grid_dim: (u32, u32, u32),
    pub n_cells: u64,
    pub slices: u32,
}

fn out_f64(out: OutPrecision) -> u32 {
    u32::from(out == OutPrecision::F64)
}

fn blocks(g: &GridDims, tile: (u32, u32), z: u32) -> (u32, u32, u32) {
    (g.cols.div_ceil(tile.0), g.rows.div_ceil(tile.1), z)
}

/// Plan for [`super::dispersal_exact`]; `None` for an empty grid. `multiprocessors` sets the
/// tree slicing (see `check::exact_slices`).
#[allow(clippy::too_many_arguments)]
pub fn plan_exact(
    grid: GridDims,
    shape: KernelShape,
    torus: Option<(f64, f64)>,
    u: &[f64],
    v: &[f64],
    w: &[f32],
    out: OutPrecision,
    multiprocessors: u32,
) -> Result<Option<Plan<ExactParams>>, CudaError> {
    const K: &str = "dispersal_exact";
    let sc = ShapeConsts::new(&shape, K)?;
    let n_cells = check::grid(K, &grid, EXACT_TILE.1)?;
    let n = check::same_len(K, "u, v and w", &[u.len(), v.len(), w.len()])?;
    let n = check::count_u32(K, "trees", n)?;
    check::finite64(K, "u", u)?;
    check::finite64(K, "v", v)?;
    check::finite32(K, "w", w)?;
    if let Some(l) = torus {
        check::torus(K, &grid, l, EXACT_TILE.0, EXACT_TILE.1)?;
    }
    if n_cells == 0 {
        return Ok(None);
    }
    let (tx, ty, _) = blocks(&grid, EXACT_TILE, 1);
    let slices = check::exact_slices(u64::from(tx) * u64::from(ty), n, n_cells, multiprocessors);
    let (lx, ly) = torus.unwrap_or((0.0, 0.0));
    let kind = if torus.is_some() { "torus" } else { "open" };
    Ok(Some(Plan {
        kernel: format!("dispersal_exact_{}_{kind}", sc.tag),
        params: ExactParams {
            cell_size_m: grid.cell_size_m,
            scale: sc.scale,
            torus_lx_m: lx,
            torus_ly_m: ly,
            slice_stride: if slices > 1 { n_cells } else { 0 },
            a: sc.a,
            b: sc.b,
            cols: grid.cols,
            rows: grid.rows,
            n_trees: n,
            trees_per_slice: n.div_ceil(slices).max(1),
            out_f64: if slices > 1 { 1 } else { out_f64(out) },
            pad0: 0,
        },
        grid_dim: blocks(&grid, EXACT_TILE, slices),
        n_cells,
        slices,
    }))
}

/// Plan for [`super::dispersal_cutoff`]; `None` for an empty grid.
pub fn plan_cutoff(
    grid: GridDims,
    shape: KernelShape,
    bins: &TileBins<'_>,
    radius_m: f64,
    out: OutPrecision,
) -> Result<Option<Plan<CutoffParams>>, CudaError> {
    const K: &str = "dispersal_cutoff";
    let sc = ShapeConsts::new(&shape, K)?;
    let n_cells = check::grid(K, &grid, CUTOFF_TILE.1)?;
    check::bins(K, bins, radius_m)?;
    if n_cells == 0 {
        return Ok(None);
    }
    let t = bins.tile_size_m;
    let rs = radius_m * sc.scale;
    Ok(Some(Plan {
        kernel: format!("dispersal_cutoff_{}", sc.tag),
        params: CutoffParams {
            cell_size_m: grid.cell_size_m,
            scale: sc.scale,
            tile_size_m: t,
            origin_u_m: bins.origin_u_m,
            origin_v_m: bins.origin_v_m,
            // A superset margin: the per-pair f32 test decides, tiles are skipped only when
            // clearly out of reach.
            visit_radius_m: radius_m + 1e-5 * (radius_m + 2.0 * t + grid.cell_size_m),
            a: sc.a,
            b: sc.b,
            cut2: (rs * rs) as f32,
            cols: grid.cols,
            rows: grid.rows,
            tiles_x: bins.tiles_x,
            tiles_y: bins.tiles_y,
            out_f64: out_f64(out),
            row_offset: 0,
            pad0: 0,
        },
        grid_dim: blocks(&grid, CUTOFF_TILE, 1),
        n_cells,
        slices: 1,
    }))
}

/// Plan for [`super::dispersal_multires`]; `None` for an empty grid.
pub fn plan_multires(
    grid: GridDims,
    shape: KernelShape,
    pyr: &Pyramid<'_>,
    out: OutPrecision,
) -> Result<Option<Plan<MultiresParams>>, CudaError> {
    const K: &str = "dispersal_multires";
    let sc = ShapeConsts::new(&shape, K)?;
    let n_cells = check::grid(K, &grid, MULTIRES_BLOCK.1)?;
    check::pyramid(K, &grid, pyr)?;
    if n_cells == 0 {
        return Ok(None);
    }
    let levels = pyr.levels as usize;
    let mut params = MultiresParams {
        cell_size_m: grid.cell_size_m,
        scale2: (sc.scale * sc.scale) as f32,
        a: sc.a,
        b: sc.b,
        shape: sc.id,
        cols: grid.cols,
        rows: grid.rows,
        levels: pyr.levels,
        out_f64: out_f64(out),
        ..MultiresParams::default()
    };
    params.level_offset[..levels].copy_from_slice(pyr.level_offset);
    params.rho_m[..levels].copy_from_slice(pyr.rho_m);
    Ok(Some(Plan {
        kernel: "dispersal_multires".to_string(),
        params,
        grid_dim: blocks(&grid, MULTIRES_BLOCK, 1),
        n_cells,
        slices: 1,
    }))
}
