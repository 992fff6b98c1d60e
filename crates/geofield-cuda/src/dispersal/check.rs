//! Input validation for the dispersal wrappers (errors, never panics) and launch-shape choices.

use super::{GridDims, Pyramid, TileBins};
use crate::dispersal::params::MULTIRES_MAX_LEVELS;
use crate::error::{CudaError, invalid};

/// Largest grid dimension a launch accepts (CUDA's grid.y limit).
const MAX_GRID_Y: u64 = 65_535;

/// Validates the grid for a kernel whose blocks cover `block_rows` rows; returns the cell count.
pub(crate) fn grid(kernel: &'static str, g: &GridDims, block_rows: u32) -> Result<u64, CudaError> {
    if !(g.cell_size_m.is_finite() && g.cell_size_m > 0.0) {
        return Err(invalid(
            kernel,
            format!("cell size must be finite and > 0, got {}", g.cell_size_m),
        ));
    }
    if u64::from(g.rows).div_ceil(u64::from(block_rows)) > MAX_GRID_Y {
        return Err(invalid(
            kernel,
            format!(
                "{} rows exceed the {} a single launch covers; split the grid into row bands",
                g.rows,
                MAX_GRID_Y * u64::from(block_rows)
            ),
        ));
    }
    Ok(u64::from(g.cols) * u64::from(g.rows))
}

pub(crate) fn same_len(
    kernel: &'static str,
    what: &str,
    lens: &[usize],
) -> Result<usize, CudaError> {
    let n = lens.first().copied().unwrap_or(0);
    if lens.iter().any(|&l| l != n) {
        return Err(invalid(
            kernel,
            format!("{what} have different lengths {lens:?}"),
        ));
    }
    Ok(n)
}

pub(crate) fn count_u32(kernel: &'static str, what: &str, n: usize) -> Result<u32, CudaError> {
    u32::try_from(n)
        .ok()
        .filter(|&n| n < u32::MAX)
        .ok_or_else(|| {
            invalid(
                kernel,
                format!("{n} {what}: at most {} per call", u32::MAX - 1),
            )
        })
}

pub(crate) fn finite64(kernel: &'static str, what: &str, x: &[f64]) -> Result<(), CudaError> {
    match x.iter().position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(i) => Err(invalid(
            kernel,
            format!("{what}[{i}] = {} is not finite", x[i]),
        )),
    }
}

pub(crate) fn finite32(kernel: &'static str, what: &str, x: &[f32]) -> Result<(), CudaError> {
    match x.iter().position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(i) => Err(invalid(
            kernel,
            format!("{what}[{i}] = {} is not finite", x[i]),
        )),
    }
}

/// The exact kernel's two-image minimum image needs each tile's span of cell centres
/// (at most (tile_cols - 1) h wide) to fit in the period.
pub(crate) fn torus(
    kernel: &'static str,
    g: &GridDims,
    (lx, ly): (f64, f64),
    tile_cols: u32,
    tile_rows: u32,
) -> Result<(), CudaError> {
    let h = g.cell_size_m;
    for (name, l, n, t) in [("Lx", lx, g.cols, tile_cols), ("Ly", ly, g.rows, tile_rows)] {
        let span = f64::from(n.min(t).saturating_sub(1)) * h;
        if !(l.is_finite() && l > 0.0 && l >= span) {
            return Err(invalid(
                kernel,
                format!(
                    "torus period {name} = {l} m must be finite, > 0 and >= {span} m (use the grid's extent, cells x cell size)"
                ),
            ));
        }
    }
    Ok(())
}

/// Checks the binned trees: tile_start is a valid CSR index over tiles_x * tiles_y tiles, every
/// array has its length, positions are finite and inside their tile.
pub(crate) fn bins(
    kernel: &'static str,
    b: &TileBins<'_>,
    radius_m: f64,
) -> Result<u32, CudaError> {
    let t = b.tile_size_m;
    if !(t.is_finite() && t > 0.0) {
        return Err(invalid(
            kernel,
            format!("tile size must be finite and > 0, got {t}"),
        ));
    }
    if !(b.origin_u_m.is_finite() && b.origin_v_m.is_finite()) {
        return Err(invalid(kernel, "tile origin must be finite"));
    }
    if !(radius_m.is_finite() && radius_m >= 0.0) {
        return Err(invalid(
            kernel,
            format!("radius must be finite and >= 0, got {radius_m}"),
        ));
    }
    let tiles = u64::from(b.tiles_x) * u64::from(b.tiles_y);
    if tiles >= u64::from(u32::MAX) {
        return Err(invalid(
            kernel,
            format!("{tiles} tiles: at most {} per call", u32::MAX - 1),
        ));
    }
    if b.tile_start.len() as u64 != tiles + 1 {
        return Err(invalid(
            kernel,
            format!(
                "tile_start has {} entries, expected tiles_x * tiles_y + 1 = {}",
                b.tile_start.len(),
                tiles + 1
            ),
        ));
    }
    let n = same_len(kernel, "du, dv and w", &[b.du.len(), b.dv.len(), b.w.len()])?;
    let n = count_u32(kernel, "trees", n)?;
    if b.tile_start.first() != Some(&0) || b.tile_start.last() != Some(&n) {
        return Err(invalid(
            kernel,
            format!("tile_start must run from 0 to the tree count {n}"),
        ));
    }
    if let Some(i) = b.tile_start.windows(2).position(|p| p[1] < p[0]) {
        return Err(invalid(kernel, format!("tile_start decreases at tile {i}")));
    }
    // Positions relative to their tile corner: [0, T), with f32 rounding slack.
    let (lo, hi) = (-1e-6 * t, t * (1.0 + 1e-6));
    for (what, x) in [("du", b.du), ("dv", b.dv)] {
        if let Some(i) = x
            .iter()
            .position(|&v| !(f64::from(v) >= lo && f64::from(v) <= hi))
        {
            return Err(invalid(
                kernel,
                format!("{what}[{i}] = {} is not within its tile [0, {t})", x[i]),
            ));
        }
    }
    finite32(kernel, "w", b.w)?;
    Ok(n)
}

/// Checks the pyramid's shape against the grid; returns the node count.
pub(crate) fn pyramid(
    kernel: &'static str,
    g: &GridDims,
    p: &Pyramid<'_>,
) -> Result<u32, CudaError> {
    let levels = p.levels as usize;
    if !(1..=MULTIRES_MAX_LEVELS).contains(&levels) {
        return Err(invalid(
            kernel,
            format!("levels = {levels}: must be 1..={MULTIRES_MAX_LEVELS}"),
        ));
    }
    if p.level_offset.len() != levels || p.rho_m.len() != levels {
        return Err(invalid(
            kernel,
            format!(
                "level_offset ({}) and rho_m ({}) must have one entry per level ({levels})",
                p.level_offset.len(),
                p.rho_m.len()
            ),
        ));
    }
    let n = same_len(
        kernel,
        "node_u, node_v and node_w",
        &[p.node_u.len(), p.node_v.len(), p.node_w.len()],
    )?;
    let n = count_u32(kernel, "pyramid nodes", n)?;
    let k = levels - 1;
    let leaf_side = 1u64 << k;
    if u64::from(g.cols) > leaf_side || u64::from(g.rows) > leaf_side {
        return Err(invalid(
            kernel,
            format!(
                "the pyramid's {leaf_side} x {leaf_side} leaves do not cover the {} x {} grid",
                g.cols, g.rows
            ),
        ));
    }
    for q in 0..levels {
        let side = 1u64 << (k - q);
        if u64::from(p.level_offset[q]) + side * side > u64::from(n) {
            return Err(invalid(
                kernel,
                format!(
                    "level {q} ({side} x {side} nodes at offset {}) runs past the {n} nodes",
                    p.level_offset[q]
                ),
            ));
        }
        if q > 0 && !(p.rho_m[q].is_finite() && p.rho_m[q] >= 0.0) {
            return Err(invalid(
                kernel,
                format!("rho_m[{q}] = {} must be finite and >= 0", p.rho_m[q]),
            ));
        }
    }
    finite32(kernel, "node_u", p.node_u)?;
    finite32(kernel, "node_v", p.node_v)?;
    finite32(kernel, "node_w", p.node_w)?;
    Ok(n)
}

/// Tree slices for the exact kernel: enough blocks to fill the device (~8 waves of 3 resident
/// blocks per SM) when the grid alone has too few tiles, each slice keeping >= 4096 trees, the
/// f64 partials within 1 GiB. The result depends on the SM count only, so a given device
/// always sums in the same order (bitwise reproducible).
pub(crate) fn exact_slices(tiles: u64, n_trees: u32, n_cells: u64, multiprocessors: u32) -> u32 {
    let target_blocks = 24 * u64::from(multiprocessors.max(1));
    let want = target_blocks.div_ceil(tiles.max(1));
    let by_trees = u64::from(n_trees / 4096).max(1);
    let by_memory = ((1u64 << 30) / 8 / n_cells.max(1)).max(1);
    let s = want.min(by_trees).min(by_memory).clamp(1, MAX_GRID_Y);
    u32::try_from(s).unwrap_or(1)
}
