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
use crate::cancel::Proceed;

/// The velocity-form sweep's coefficients: one byte per cell saying which of its six faces are
/// open (bits W, E, N, S, bottom, top = 1, 2, 4, 8, 16, 32), and per layer the face factors
/// c_f/Δ_f and a table of ω/S for every mask, so a cell update reads its faces and one byte.
pub struct WestOperator {
    pub mask: Vec<u8>,
    /// ω/S per (layer, mask), `nz * 64` (m²); 0 for mask 0.
    pub lut: Vec<f64>,
    pub inv_dx: f64,
    /// 1/Δz_k per layer.
    pub inv_dz: Vec<f64>,
    /// c/Δ of the bottom and top z faces of layer k (α²/Δz_{k∓½}, 1/m).
    pub g_bottom: Vec<f64>,
    pub g_top: Vec<f64>,
    pub omega: f64,
    /// Parity swept first in each iteration: 1 (red, odd col + row + k, the paper's) or 0.
    pub first_parity: usize,
}

const W: u8 = 1;
const E: u8 = 2;
const N: u8 = 4;
const S: u8 = 8;
const B: u8 = 16;
const T: u8 = 32;

#[inline]
fn on(m: u8, bit: u8, g: f64) -> f64 {
    if m & bit != 0 { g } else { 0.0 }
}

impl WestOperator {
    pub fn new(grid: &WindGrid, coeffs: &Coeffs, omega: f64) -> Self {
        let (rows, cols, nz) = (grid.rows(), grid.cols(), grid.nz);
        let plane = rows * cols;
        let inv_dx = 1.0 / grid.dx_m();
        let a2 = coeffs.alpha * coeffs.alpha;
        let inv_dz: Vec<f64> = (0..nz).map(|k| 1.0 / grid.dz_m(k)).collect();
        let g_bottom: Vec<f64> = (0..nz).map(|k| a2 / coeffs.dzc_m[k]).collect();
        let g_top: Vec<f64> = (0..nz).map(|k| a2 / coeffs.dzc_m[k + 1]).collect();
        let mut mask = vec![0u8; grid.n_cells()];
        for k in 0..nz {
            for row in 0..rows {
                for col in 0..cols {
                    if grid.is_solid(k, row, col) {
                        continue;
                    }
                    let iu = (k * rows + row) * (cols + 1) + col;
                    let iv = (k * (rows + 1) + row) * cols + col;
                    let iw = k * plane + row * cols + col;
                    let mut m = 0u8;
                    for (c, bit) in [
                        (coeffs.cu[iu], W),
                        (coeffs.cu[iu + 1], E),
                        (coeffs.cv[iv], N),
                        (coeffs.cv[iv + cols], S),
                        (coeffs.cw[iw], B),
                        (coeffs.cw[iw + plane], T),
                    ] {
                        if c != 0.0 {
                            m |= bit;
                        }
                    }
                    mask[iw] = m;
                }
            }
        }
        let mut lut = vec![0.0; nz * 64];
        for k in 0..nz {
            for m in 1..64u8 {
                let s = (on(m, W, inv_dx) + on(m, E, inv_dx)) * inv_dx
                    + (on(m, N, inv_dx) + on(m, S, inv_dx)) * inv_dx
                    + (on(m, B, g_bottom[k]) + on(m, T, g_top[k])) * inv_dz[k];
                if s > 0.0 {
                    lut[k * 64 + m as usize] = omega / s;
                }
            }
        }
        Self {
            mask,
            lut,
            inv_dx,
            inv_dz,
            g_bottom,
            g_top,
            omega,
            first_parity: 1,
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
            let u_planes = u.chunks_mut(pu).skip(phase).step_by(2);
            let v_planes = v.chunks_mut(pv).skip(phase).step_by(2);
            let w_pairs = w[phase * pw..].chunks_mut(2 * pw);
            let jobs: Vec<_> = u_planes.zip(v_planes).zip(w_pairs).enumerate().collect();
            jobs.into_par_iter().for_each(|(j, ((up, vp), wp))| {
                self.plane(grid, 2 * j + phase, parity, up, vp, wp);
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
        let inv_dx = self.inv_dx;
        let inv_dz = self.inv_dz[k];
        let (gb, gt) = (self.g_bottom[k], self.g_top[k]);
        let lut = &self.lut[k * 64..(k + 1) * 64];
        let mask = &self.mask[k * pw..(k + 1) * pw];
        let (w_bottom, w_top) = w.split_at_mut(pw);
        for row in 0..rows {
            let start = (parity + row + k) % 2;
            let u_row = &mut u[row * (cols + 1)..(row + 1) * (cols + 1)];
            let (v_n, v_s) = v[row * cols..(row + 2) * cols].split_at_mut(cols);
            let w_b = &mut w_bottom[row * cols..(row + 1) * cols];
            let w_t = &mut w_top[row * cols..(row + 1) * cols];
            let m_row = &mask[row * cols..(row + 1) * cols];
            for col in (start..cols).step_by(2) {
                let m = m_row[col];
                if m == 0 {
                    continue;
                }
                let d = (u_row[col + 1] - u_row[col]) * inv_dx
                    + (v_n[col] - v_s[col]) * inv_dx
                    + (w_t[col] - w_b[col]) * inv_dz;
                let delta = lut[m as usize] * d;
                u_row[col] += on(m, W, inv_dx) * delta;
                u_row[col + 1] -= on(m, E, inv_dx) * delta;
                v_s[col] += on(m, S, inv_dx) * delta;
                v_n[col] -= on(m, N, inv_dx) * delta;
                w_b[col] += on(m, B, gb) * delta;
                w_t[col] -= on(m, T, gt) * delta;
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
/// (checked every `check_every` sweeps and at the end). `progress(iteration, max|D|)` is called
/// at every check; when it returns `ControlFlow::Break` (a [`crate::Cancel`]) the sweeps stop there.
#[allow(clippy::too_many_arguments)]
pub fn run<R: Proceed>(
    grid: &WindGrid,
    op: &WestOperator,
    u: &mut [f64],
    v: &mut [f64],
    w: &mut [f64],
    max_iterations: usize,
    fixed: bool,
    threshold: f64,
    check_every: usize,
    mut progress: impl FnMut(usize, f64) -> R,
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
        op.half_sweep(grid, op.first_parity, u, v, w);
        op.half_sweep(grid, 1 - op.first_parity, u, v, w);
        out.iterations = it;
        if it % check == 0 || it == max_iterations {
            let d = max_div(u, v, w);
            out.history.push((it, d));
            if progress(it, d).stops() {
                break;
            }
            out.converged = d <= threshold;
            if out.converged && !fixed {
                break;
            }
        }
    }
    out
}
