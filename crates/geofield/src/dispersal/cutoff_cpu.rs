//! Cutoff method on the CPU: R_cut(c) = Σ_{d(k,c) ≤ R} w_k K(d), a tiled gather over binned trees
//! (with a blend, the near part of the near/far split: K·(1 − S_n) instead of K).
//! Rayon over bands of output tiles; each cell is summed by one thread in a fixed order (source
//! tiles row-major, trees in bin order), so results are bitwise reproducible.

use geofield_core::GridSpec;
use rayon::prelude::*;

use super::bins::Bins;
use super::fastmath;
use super::nearfar::Blend;
use super::params::Kernel;
use crate::Cancel;

/// Output tile side in cells of the GPU kernel (used by the cost model).
pub const OUT_TILE: usize = 32;
/// Output tile side in cells on the CPU: smaller tiles waste fewer candidate pairs.
const CPU_OUT_TILE: usize = 16;

/// Rows a strip given to [`cutoff_rows`] must start at a multiple of: its output tiles are
/// then the whole grid's, and every cell gets the same value.
pub const ROW_ALIGN: usize = CPU_OUT_TILE;

/// The cutoff sum for the grid rows `rows` (row-major, `rows.len() · cols` values), open plot (tori
/// are handled by periodic images); a strip starting at a multiple of [`ROW_ALIGN`] gets exactly
/// the values of the whole grid's run. Output tiles not started when `cancel` is set are skipped
/// (left at zero): the caller checks the token afterwards.
pub fn cutoff_rows(
    grid: &GridSpec,
    kernel: &Kernel,
    bins: &Bins,
    radius_m: f64,
    blend: Option<&Blend>,
    cancel: &Cancel,
    rows: std::ops::Range<usize>,
) -> Vec<f64> {
    let (cols, h) = (grid.cols, grid.cell_size_m);
    let rows = rows.start.min(grid.rows)..rows.end.min(grid.rows);
    let mut out = vec![0.0; rows.len() * cols];
    if cols == 0 || rows.is_empty() {
        return out;
    }
    let first = rows.start;
    let r2 = radius_m * radius_m;
    let near = blend.map(|b| fastmath::NearBlend {
        inner2: b.inner_m * b.inner_m,
        inv_span: 1.0 / (b.outer_m * b.outer_m - b.inner_m * b.inner_m),
        order: b.order,
    });
    out.par_chunks_mut(CPU_OUT_TILE * cols)
        .enumerate()
        .for_each(|(band, chunk)| {
            let row0 = first + band * CPU_OUT_TILE;
            let nrows = chunk.len() / cols;
            let (mut cu, mut cv, mut cw) = (Vec::new(), Vec::new(), Vec::new());
            for col0 in (0..cols).step_by(CPU_OUT_TILE) {
                if cancel.is_cancelled() {
                    return;
                }
                let ncols = CPU_OUT_TILE.min(cols - col0);
                let (u0, u1) = (col0 as f64 * h, (col0 + ncols) as f64 * h);
                let (v0, v1) = (row0 as f64 * h, (row0 + nrows) as f64 * h);
                // Candidate trees relative to this output tile's corner.
                cu.clear();
                cv.clear();
                cw.clear();
                let (ax, bx) = bins.tile_range(u0, u1, radius_m, bins.origin_u_m, bins.tiles_x);
                let (ay, by) = bins.tile_range(v0, v1, radius_m, bins.origin_v_m, bins.tiles_y);
                if ax <= bx && ay <= by {
                    for ty in ay..=by {
                        for tx in ax..=bx {
                            if bins.tile_rect_distance(tx, ty, u0, u1, v0, v1) > radius_m {
                                continue;
                            }
                            let t = ty * bins.tiles_x + tx;
                            let off_u = bins.origin_u_m + tx as f64 * bins.tile_size_m - u0;
                            let off_v = bins.origin_v_m + ty as f64 * bins.tile_size_m - v0;
                            for k in bins.tile_start[t] as usize..bins.tile_start[t + 1] as usize {
                                let (tu, tv) = (off_u + bins.du[k], off_v + bins.dv[k]);
                                // Keep trees within R of this output tile's rectangle only.
                                let eu = (-tu).max(tu - (u1 - u0)).max(0.0);
                                let ev = (-tv).max(tv - (v1 - v0)).max(0.0);
                                if eu * eu + ev * ev <= r2 {
                                    cu.push(tu);
                                    cv.push(tv);
                                    cw.push(bins.w[k]);
                                }
                            }
                        }
                    }
                }
                for r in 0..nrows {
                    let y = (r as f64 + 0.5) * h;
                    let line = &mut chunk[r * cols + col0..r * cols + col0 + ncols];
                    for (c, cell) in line.iter_mut().enumerate() {
                        let x = (c as f64 + 0.5) * h;
                        // With a blend, the near part of a near/far split: K·(1 − S_n) within R.
                        *cell = fastmath::sum_pairs_with(kernel, near, &cu, &cv, &cw, x, y, r2);
                    }
                }
            }
        });
    out
}
