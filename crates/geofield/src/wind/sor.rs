//! Red-black SOR on Sherman's problem in φ form (column layout of [`Level`]).
//!
//! φ_c ← (1 − ω) φ_c + ω (b_c + Σ_f K_f φ_nb) / Σ_f K_f over the cells of one colour
//! ((col + row + k) odd first, as WEST), then the other. The optimal ω of a box with
//! Dirichlet sides and top and a Neumann ground (note §2):
//!
//! ```text
//!   ρ_J = [cos(π/(nx+1))/Δx² + cos(π/(ny+1))/Δy² + α² cos(π/(2nz+1))/Δz²] / (1/Δx² + 1/Δy² + α²/Δz²)
//!   ω_opt = 2 / (1 + √(1 − ρ_J²))
//! ```

use rayon::prelude::*;

use super::grid::WindGrid;
use super::level::Level;

/// The optimal ω of the grid's bounding box (mean layer thickness, every layer fluid).
pub fn optimal_omega(grid: &WindGrid, alpha: f64) -> f64 {
    let pi = std::f64::consts::PI;
    let (nx, ny, nz) = (grid.cols() as f64, grid.rows() as f64, grid.nz as f64);
    let dx2 = grid.dx_m().powi(2);
    let dz = (grid.top_m() - grid.z_faces_m[0]) / nz;
    let wz = alpha * alpha / (dz * dz);
    let num = (pi / (nx + 1.0)).cos() / dx2
        + (pi / (ny + 1.0)).cos() / dx2
        + wz * (pi / (2.0 * nz + 1.0)).cos();
    let rho = num / (2.0 / dx2 + wz);
    2.0 / (1.0 + (1.0 - rho * rho).max(0.0).sqrt())
}

/// One half sweep over the cells with (col + row + k) % 2 == parity; `scratch` len n.
pub fn half_sweep(
    level: &Level,
    phi: &mut [f64],
    b: &[f64],
    parity: usize,
    omega: f64,
    scratch: &mut [f64],
) {
    let (rows, cols, nz) = (level.rows, level.cols, level.nz);
    {
        let p: &[f64] = phi;
        scratch
            .par_chunks_mut(cols * nz)
            .enumerate()
            .for_each(|(row, line)| {
                for col in 0..cols {
                    let c0 = (row * cols + col) * nz;
                    let zb = (row * cols + col) * (nz + 1);
                    for k in ((parity + row + col) % 2..nz).step_by(2) {
                        let d = level.diag[c0 + k];
                        if d == 0.0 {
                            line[col * nz + k] = 0.0;
                            continue;
                        }
                        let mut s = b[c0 + k];
                        if col > 0 {
                            s += level.kx[(row * (cols + 1) + col) * nz + k] * p[c0 - nz + k];
                        }
                        if col + 1 < cols {
                            s += level.kx[(row * (cols + 1) + col + 1) * nz + k] * p[c0 + nz + k];
                        }
                        if row > 0 {
                            s += level.ky[(row * cols + col) * nz + k] * p[c0 - cols * nz + k];
                        }
                        if row + 1 < rows {
                            s +=
                                level.ky[((row + 1) * cols + col) * nz + k] * p[c0 + cols * nz + k];
                        }
                        if k > 0 {
                            s += level.kz[zb + k] * p[c0 + k - 1];
                        }
                        if k + 1 < nz {
                            s += level.kz[zb + k + 1] * p[c0 + k + 1];
                        }
                        line[col * nz + k] = (1.0 - omega) * p[c0 + k] + omega * s / d;
                    }
                }
            });
    }
    phi.par_chunks_mut(cols * nz)
        .zip(scratch.par_chunks(cols * nz))
        .enumerate()
        .for_each(|(row, (p, s))| {
            for col in 0..cols {
                for k in ((parity + row + col) % 2..nz).step_by(2) {
                    p[col * nz + k] = s[col * nz + k];
                }
            }
        });
}
