//! The slow, obviously correct f64 direct sum, used by tests and as the benches' yardstick.
//! O(cells × trees); no tiling, no cutoff.

use geofield_core::GridSpec;

use super::params::Kernel;
use super::sources::{Sources, min_image};

/// R(c) = Σ_k w_k K(d(k, c)) at every cell centre, row-major from the north edge. With `torus`,
/// distances use the minimum image on the grid rectangle.
pub fn direct_sum(grid: &GridSpec, kernel: &Kernel, sources: &Sources, torus: bool) -> Vec<f64> {
    let h = grid.cell_size_m;
    let (lx, ly) = (grid.width_m(), grid.height_m());
    let mut out = vec![0.0; grid.n_cells()];
    for row in 0..grid.rows {
        for col in 0..grid.cols {
            let (cu, cv) = ((col as f64 + 0.5) * h, (row as f64 + 0.5) * h);
            let mut acc = 0.0;
            for k in 0..sources.len() {
                let mut du = sources.u[k] - cu;
                let mut dv = sources.v[k] - cv;
                if torus {
                    du = min_image(du, lx);
                    dv = min_image(dv, ly);
                }
                acc += sources.w[k] * kernel.eval((du * du + dv * dv).sqrt());
            }
            out[row * grid.cols + col] = acc;
        }
    }
    out
}
