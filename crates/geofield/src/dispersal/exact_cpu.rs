//! Exact method on the CPU: every tree to every cell, f64, rayon over rows. Each cell is summed
//! by one thread in tree order, so results are bitwise reproducible.

use geofield_core::GridSpec;
use rayon::prelude::*;

use super::fastmath;
use super::params::Kernel;
use super::sources::{Sources, min_image};

/// Exact sum over `sources` for every cell (row-major), open plot or minimum-image torus.
pub fn exact(grid: &GridSpec, kernel: &Kernel, sources: &Sources, torus: bool) -> Vec<f64> {
    let mut out = vec![0.0; grid.n_cells()];
    exact_rows(grid, kernel, sources, torus, 0, &mut out);
    out
}

/// The exact sum for the rows starting at `row0`, as many as `out` holds (a window of the map;
/// used to compare against fast methods on maps too large for a full exact run).
pub fn exact_rows(
    grid: &GridSpec,
    kernel: &Kernel,
    sources: &Sources,
    torus: bool,
    row0: usize,
    out: &mut [f64],
) {
    let h = grid.cell_size_m;
    let (lx, ly) = (grid.width_m(), grid.height_m());
    if grid.cols == 0 {
        return;
    }
    // Chunks of cells (not rows) so that even a one-row window uses every core.
    const CHUNK: usize = 64;
    let cols = grid.cols;
    out.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(c, chunk)| {
            for (i, cell) in chunk.iter_mut().enumerate() {
                let idx = c * CHUNK + i;
                let (row, col) = (row0 + idx / cols, idx % cols);
                let (cu, cv) = ((col as f64 + 0.5) * h, (row as f64 + 0.5) * h);
                *cell = if torus {
                    let mut acc = 0.0;
                    for k in 0..sources.len() {
                        let du = min_image(sources.u[k] - cu, lx);
                        let dv = min_image(sources.v[k] - cv, ly);
                        acc += sources.w[k] * kernel.eval_r2(du * du + dv * dv);
                    }
                    acc
                } else {
                    let (u, v, w) = (&sources.u, &sources.v, &sources.w);
                    fastmath::sum_pairs(kernel, u, v, w, cu, cv, f64::INFINITY)
                };
            }
        });
}
