//! The paper's divergence minimisation (Pinheiro et al. 2017, Fig. 2) in velocity form.
//!
//! For each cell of the active colour, with face coefficients c_f and spacings Δ:
//!
//! ```text
//!   S  = Σ_f c_f / (Δ_c Δ_f)        (the paper's 1/TOT; Δ_c = Δx, Δy or Δz_k, Δ_f the centre distance)
//!   D  = (u_E − u_W)/Δx + (v_N − v_S)/Δy + (w_T − w_B)/Δz_k
//!   δ  = ω D / S
//!   u_W += c_W δ/Δx,  u_E −= c_E δ/Δx   (v and w alike)
//! ```
//!
//! After the update the cell's divergence is (1 − ω) D. Cells with odd col + row + k ("red")
//! go first, then even ("black"); one iteration is both. Cells of one colour share no face,
//! so the updates of a colour are independent and are done in place (Gauss–Seidel between the
//! colours). On the CPU the planes of a colour run in parallel in two phases, even k then odd
//! k, so that no two threads touch the same z faces; the result does not depend on the order.
//! This is point SOR on Sherman's problem with α = 1 ([`super::sor`] solves the same in φ form).

use rayon::prelude::*;

use super::grid::WindGrid;
use super::ops::{Coeffs, divergence, divergence_stats};

/// Pre-scaled coefficients of the velocity-form sweep.
pub struct WestOperator {
    /// c_f/Δ_f per face (1/m).
    pub gu: Vec<f64>,
    pub gv: Vec<f64>,
    pub gw: Vec<f64>,
    /// ω/S per cell (m²); 0 for solid cells and cells with every face closed.
    pub factor: Vec<f64>,
    pub omega: f64,
}

impl WestOperator {
    pub fn new(grid: &WindGrid, coeffs: &Coeffs, omega: f64) -> Self {
        let (rows, cols, nz) = (grid.rows(), grid.cols(), grid.nz);
        let inv_dx = 1.0 / grid.dx_m();
        let gu: Vec<f64> = coeffs.cu.iter().map(|c| c * inv_dx).collect();
        let gv: Vec<f64> = coeffs.cv.iter().map(|c| c * inv_dx).collect();
        let plane = rows * cols;
        let gw: Vec<f64> = coeffs
            .cw
            .iter()
            .enumerate()
            .map(|(i, c)| c / coeffs.dzc_m[i / plane])
            .collect();
        let mut factor = vec![0.0; grid.n_cells()];
        for k in 0..nz {
            let inv_dz = 1.0 / grid.dz_m(k);
            for row in 0..rows {
                for col in 0..cols {
                    if grid.is_solid(k, row, col) {
                        continue;
                    }
                    let iu = (k * rows + row) * (cols + 1) + col;
                    let iv = (k * (rows + 1) + row) * cols + col;
                    let iw = k * plane + row * cols + col;
                    let s = (gu[iu] + gu[iu + 1]) * inv_dx
                        + (gv[iv] + gv[iv + cols]) * inv_dx
                        + (gw[iw] + gw[iw + plane]) * inv_dz;
                    if s > 0.0 {
                        factor[iw] = omega / s;
                    }
                }
            }
        }
        Self {
            gu,
            gv,
            gw,
            factor,
            omega,
        }
    }

    /// One half sweep: every cell with (col + row + k) % 2 == parity.
    pub fn half_sweep(
        &self,
        grid: &WindGrid,
        parity: usize,
        u: &mut [f64],
        v: &mut [f64],
        w: &mut [f64],
    ) {
        let (rows, cols) = (grid.rows(), grid.cols());
        let (pu, pv, pw) = (rows * (cols + 1), (rows + 1) * cols, rows * cols);
        for phase in 0..2 {
            // Planes k ≡ phase (mod 2): plane k owns u, v of plane k and w faces k, k + 1.
            let u_planes = u
                .par_chunks_mut(pu)
                .enumerate()
                .filter(|(k, _)| k % 2 == phase);
            let v_planes = v
                .par_chunks_mut(pv)
                .enumerate()
                .filter(|(k, _)| k % 2 == phase);
            let w_pairs = w[phase * pw..].par_chunks_mut(2 * pw);
            let jobs: Vec<_> = u_planes
                .map(|(k, up)| (k, up))
                .collect::<Vec<_>>()
                .into_iter()
                .zip(v_planes.map(|(_, vp)| vp).collect::<Vec<_>>())
                .zip(w_pairs.collect::<Vec<_>>())
                .collect();
            jobs.into_par_iter().for_each(|(((k, up), vp), wp)| {
                self.plane(grid, k, parity, up, vp, wp);
            });
        }
    }

    fn plane(
        &self,
        grid: &WindGrid,
        k: usize,
        parity: usize,
        u: &mut [f64],
        v: &mut [f64],
        w: &mut [f64],
    ) {
        let (rows, cols) = (grid.rows(), grid.cols());
        let pw = rows * cols;
        let inv_dx = 1.0 / grid.dx_m();
        let inv_dz = 1.0 / grid.dz_m(k);
        let (gu, gv) = (
            &self.gu[k * rows * (cols + 1)..],
            &self.gv[k * (rows + 1) * cols..],
        );
        let gw = &self.gw[k * pw..];
        let factor = &self.factor[k * pw..(k + 1) * pw];
        for row in 0..rows {
            let start = (parity + row + k) % 2;
            for col in (start..cols).step_by(2) {
                let f = factor[row * cols + col];
                if f == 0.0 {
                    continue;
                }
                let iu = row * (cols + 1) + col;
                let iv = row * cols + col;
                let ib = row * cols + col;
                let it = pw + ib;
                let d = (u[iu + 1] - u[iu]) * inv_dx
                    + (v[iv] - v[iv + cols]) * inv_dx
                    + (w[it] - w[ib]) * inv_dz;
                let delta = f * d;
                u[iu] += gu[iu] * delta;
                u[iu + 1] -= gu[iu + 1] * delta;
                v[iv + cols] += gv[iv + cols] * delta;
                v[iv] -= gv[iv] * delta;
                w[ib] += gw[ib] * delta;
                w[it] -= gw[it] * delta;
            }
        }
    }
}

/// The outcome of a run of sweeps.
#[derive(Debug, Clone, Default)]
pub struct SweepRun {
    pub iterations: usize,
    pub history: Vec<(usize, f64)>,
    pub converged: bool,
}

/// WEST sweeps in place: `max_iterations` of them when `fixed`, else until max|D| ≤ threshold
/// (checked every `check_every` sweeps and at the end).
#[allow(clippy::too_many_arguments)]
pub fn run(
    grid: &WindGrid,
    op: &WestOperator,
    u: &mut [f64],
    v: &mut [f64],
    w: &mut [f64],
    max_iterations: usize,
    fixed: bool,
    threshold: f64,
    check_every: usize,
    mut progress: impl FnMut(usize, f64),
) -> SweepRun {
    let mut out = SweepRun::default();
    let check = check_every.max(1);
    let max_div =
        |u: &[f64], v: &[f64], w: &[f64]| divergence_stats(grid, &divergence(grid, u, v, w)).0;
    let d0 = max_div(u, v, w);
    out.history.push((0, d0));
    if d0 <= threshold && !fixed {
        out.converged = true;
        return out;
    }
    for it in 1..=max_iterations {
        op.half_sweep(grid, 1, u, v, w);
        op.half_sweep(grid, 0, u, v, w);
        out.iterations = it;
        if it % check == 0 || it == max_iterations {
            let d = max_div(u, v, w);
            out.history.push((it, d));
            progress(it, d);
            out.converged = d <= threshold;
            if out.converged && !fixed {
                break;
            }
        }
    }
    out
}
