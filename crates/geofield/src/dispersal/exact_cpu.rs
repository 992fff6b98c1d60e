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
    out.par_chunks_mut(grid.cols)
        .enumerate()
        .for_each(|(r, line)| {
            let cv = ((row0 + r) as f64 + 0.5) * h;
            if torus {
                for (col, cell) in line.iter_mut().enumerate() {
                    let cu = (col as f64 + 0.5) * h;
                    let mut acc = 0.0;
                    for k in 0..sources.len() {
                        let du = min_image(sources.u[k] - cu, lx);
                        let dv = min_image(sources.v[k] - cv, ly);
                        acc += sources.w[k] * kernel.eval_r2(du * du + dv * dv);
                    }
                    *cell = acc;
                }
            } else {
                for (col, cell) in line.iter_mut().enumerate() {
                    let cu = (col as f64 + 0.5) * h;
                    *cell = fastmath::sum_pairs(
                        kernel,
                        &sources.u,
                        &sources.v,
                        &sources.w,
                        cu,
                        cv,
                        f64::INFINITY,
                    );
                }
            }
        });
}
