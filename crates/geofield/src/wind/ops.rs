//! Face coefficients, divergence and the gradient of the potential on the MAC grid.
//!
//! Discretisation (note §3.3): D_c = (u_{i+1} − u_i)/Δx + (v_north − v_south)/Δy +
//! (w_{k+1} − w_k)/Δz_k; (Gφ)_f = (φ_high − φ_low)/Δ_f with Δ_f the distance between the two
//! centres (Δx, or (Δz_{k−1} + Δz_k)/2 across a z face, Δz_{nz−1} across the top) and φ = 0 in
//! ghost cells beyond open faces. u_f = u0_f + c_f (Gφ)_f. Faces with c_f = 0 never change.
//!
//! With cut cells ([`super::cut`]) the face velocities are those of the fluid on the open part
//! of the face: the flux through face f is a_f · area_f · u_f, the divergence is the net
//! outflow over max(θ, floor) · V, and the operator's conductances are c_f a_f area_f / Δ_f
//! ([`Coeffs::operator`]); u_f = u0_f + c_f (Gφ)_f is unchanged. With stair steps a_f = 1
//! on every open face and θ = 1 in every fluid cell: the formulas above.

use std::borrow::Cow;

use rayon::prelude::*;

use super::grid::WindGrid;
use super::params::Top;

/// Face transparencies times the moduli ratio: c_f = T_f (x, y faces), α² T_f (z faces).
#[derive(Debug, Clone)]
pub struct Coeffs {
    pub cu: Vec<f64>,
    pub cv: Vec<f64>,
    pub cw: Vec<f64>,
    /// Distance between the centres either side of z face k (m), `nz + 1`; entry 0 unused
    /// (the bottom is always closed).
    pub dzc_m: Vec<f64>,
    pub alpha: f64,
}

impl Coeffs {
    /// Transparencies: 1 between fluid cells and on open edges of fluid cells, 0 at the bottom,
    /// on every face touching a solid cell and (cut cells) on faces with no open part; the top
    /// per `top`.
    pub fn new(grid: &WindGrid, alpha: f64, top: Top) -> Self {
        let mut c = Self::stairs(grid, alpha, top);
        if let Some(cut) = &grid.cut {
            for (c, a) in [
                (&mut c.cu, &cut.ax),
                (&mut c.cv, &cut.ay),
                (&mut c.cw, &cut.az),
            ] {
                c.par_iter_mut().zip(a.par_iter()).for_each(|(c, &a)| {
                    if a <= 0.0 {
                        *c = 0.0;
                    }
                });
            }
        }
        c
    }

    /// The coefficients of the operator's conductances: c_f · a_f (the aperture of each face;
    /// `self` unchanged with stair steps).
    pub fn operator(&self, grid: &WindGrid) -> Cow<'_, Coeffs> {
        match &grid.cut {
            None => Cow::Borrowed(self),
            Some(cut) => {
                let mul = |c: &[f64], a: &[f64]| -> Vec<f64> {
                    c.par_iter().zip(a.par_iter()).map(|(c, a)| c * a).collect()
                };
                Cow::Owned(Self {
                    cu: mul(&self.cu, &cut.ax),
                    cv: mul(&self.cv, &cut.ay),
                    cw: mul(&self.cw, &cut.az),
                    dzc_m: self.dzc_m.clone(),
                    alpha: self.alpha,
                })
            }
        }
    }

    fn stairs(grid: &WindGrid, alpha: f64, top: Top) -> Self {
        let (rows, cols, nz) = (grid.rows(), grid.cols(), grid.nz);
        let fluid = |k: usize, row: usize, col: usize| !grid.is_solid(k, row, col);
        let mut cu = vec![0.0; grid.n_u()];
        let mut cv = vec![0.0; grid.n_v()];
        let mut cw = vec![0.0; grid.n_w()];
        // A face is open when every cell beside it (one on domain edges) is fluid.
        cu.par_chunks_mut(cols + 1)
            .enumerate()
            .for_each(|(kr, line)| {
                let (k, row) = (kr / rows, kr % rows);
                for (i, c) in line.iter_mut().enumerate() {
                    let west = i == 0 || fluid(k, row, i - 1);
                    let east = i == cols || fluid(k, row, i);
                    if west && east {
                        *c = 1.0;
                    }
                }
            });
        cv.par_chunks_mut(cols).enumerate().for_each(|(kr, line)| {
            let (k, r) = (kr / (rows + 1), kr % (rows + 1));
            for (col, c) in line.iter_mut().enumerate() {
                let north = r == 0 || fluid(k, r - 1, col);
                let south = r == rows || fluid(k, r, col);
                if north && south {
                    *c = 1.0;
                }
            }
        });
        let a2 = alpha * alpha;
        cw.par_chunks_mut(rows * cols)
            .enumerate()
            .for_each(|(k, plane)| {
                if k == 0 {
                    return;
                }
                for (rc, c) in plane.iter_mut().enumerate() {
                    let open = if k == nz {
                        top == Top::Open
                    } else {
                        fluid(k - 1, rc / cols, rc % cols)
                    };
                    if open {
                        *c = a2;
                    }
                }
            });
        let mut dzc_m = vec![grid.dz_m(0); nz + 1];
        for (k, d) in dzc_m.iter_mut().enumerate().take(nz).skip(1) {
            *d = 0.5 * (grid.dz_m(k - 1) + grid.dz_m(k));
        }
        dzc_m[nz] = grid.dz_m(nz - 1);
        Self {
            cu,
            cv,
            cw,
            dzc_m,
            alpha,
        }
    }
}

/// Cell divergence (s⁻¹) of a face field, `nz * rows * cols`; 0 in solid cells. With cut
/// cells, the net outflow through the open parts of the faces over max(θ, floor) · V.
pub fn divergence(grid: &WindGrid, u: &[f64], v: &[f64], w: &[f64]) -> Vec<f64> {
    let (rows, cols) = (grid.rows(), grid.cols());
    let inv_dx = 1.0 / grid.dx_m();
    let cut = grid.cut.as_ref();
    let (ax, ay, az) = (cut.map(|c| &c.ax), cut.map(|c| &c.ay), cut.map(|c| &c.az));
    // A face's open fraction: its aperture with cut cells, 1 on stair steps (where the products
    // and the division by `div_fraction` = 1 leave every value unchanged, bit for bit).
    let open = |a: Option<&Vec<f64>>, i: usize| a.map_or(1.0, |a| a[i]);
    let mut d = vec![0.0; grid.n_cells()];
    d.par_chunks_mut(rows * cols)
        .enumerate()
        .for_each(|(k, plane)| {
            let inv_dz = 1.0 / grid.dz_m(k);
            for row in 0..rows {
                for col in 0..cols {
                    if grid.is_solid(k, row, col) {
                        continue;
                    }
                    let iu = (k * rows + row) * (cols + 1) + col;
                    let iv = (k * (rows + 1) + row) * cols + col;
                    let iw = (k * rows + row) * cols + col;
                    let it = iw + rows * cols;
                    let net = (open(ax, iu + 1) * u[iu + 1] - open(ax, iu) * u[iu]) * inv_dx
                        + (open(ay, iv) * v[iv] - open(ay, iv + cols) * v[iv + cols]) * inv_dx
                        + (open(az, it) * w[it] - open(az, iw) * w[iw]) * inv_dz;
                    plane[row * cols + col] = net / grid.div_fraction(iw);
                }
            }
        });
    d
}

/// (max |D|, RMS of D) over fluid cells. Planes are reduced in parallel and their partial
/// sums combined in plane order, so the result does not depend on the thread count.
pub fn divergence_stats(grid: &WindGrid, div: &[f64]) -> (f64, f64) {
    let plane = grid.rows() * grid.cols();
    let parts: Vec<(f64, f64, usize)> = div
        .par_chunks(plane.max(1))
        .enumerate()
        .map(|(k, p)| {
            let (mut max, mut sum2, mut n) = (0.0f64, 0.0f64, 0usize);
            for (&d, &g) in p.iter().zip(&grid.ground_k) {
                if (k as u32) >= g {
                    max = max.max(d.abs());
                    sum2 += d * d;
                    n += 1;
                }
            }
            (max, sum2, n)
        })
        .collect();
    let (max, sum2, n) = parts
        .iter()
        .fold((0.0f64, 0.0f64, 0usize), |(m, s, c), &(pm, ps, pc)| {
            (m.max(pm), s + ps, c + pc)
        });
    (max, if n > 0 { (sum2 / n as f64).sqrt() } else { 0.0 })
}

/// u = u0 + c·Gφ on every face; `phi` in cell order (`nz * rows * cols`).
pub fn apply_potential(
    grid: &WindGrid,
    coeffs: &Coeffs,
    phi: &[f64],
    u: &mut [f64],
    v: &mut [f64],
    w: &mut [f64],
) {
    let (rows, cols, nz) = (grid.rows(), grid.cols(), grid.nz);
    let inv_dx = 1.0 / grid.dx_m();
    let p = |k: usize, row: usize, col: usize| phi[(k * rows + row) * cols + col];
    u.par_chunks_mut(cols + 1)
        .enumerate()
        .for_each(|(kr, line)| {
            let (k, row) = (kr / rows, kr % rows);
            for (i, f) in line.iter_mut().enumerate() {
                let c = coeffs.cu[kr * (cols + 1) + i];
                if c != 0.0 {
                    let lo = if i > 0 { p(k, row, i - 1) } else { 0.0 };
                    let hi = if i < cols { p(k, row, i) } else { 0.0 };
                    *f += c * (hi - lo) * inv_dx;
                }
            }
        });
    v.par_chunks_mut(cols).enumerate().for_each(|(kr, line)| {
        let (k, r) = (kr / (rows + 1), kr % (rows + 1));
        for (col, f) in line.iter_mut().enumerate() {
            let c = coeffs.cv[kr * cols + col];
            if c != 0.0 {
                // Positive north: the high side is the row to the north (r - 1).
                let hi = if r > 0 { p(k, r - 1, col) } else { 0.0 };
                let lo = if r < rows { p(k, r, col) } else { 0.0 };
                *f += c * (hi - lo) * inv_dx;
            }
        }
    });
    w.par_chunks_mut(rows * cols)
        .enumerate()
        .for_each(|(k, plane)| {
            if k == 0 {
                return;
            }
            let inv = 1.0 / coeffs.dzc_m[k];
            for (rc, f) in plane.iter_mut().enumerate() {
                let c = coeffs.cw[k * rows * cols + rc];
                if c != 0.0 {
                    let lo = phi[(k - 1) * rows * cols + rc];
                    let hi = if k < nz {
                        phi[k * rows * cols + rc]
                    } else {
                        0.0
                    };
                    *f += c * (hi - lo) * inv;
                }
            }
        });
}

/// WEST divergence removal (paper step 9, CALMET's column integration): in every column, w at
/// the ground face stays 0 and each face above is set so that the cell below has zero
/// divergence. Returns the largest change made to w (m/s).
pub fn remove_divergence(grid: &WindGrid, u: &[f64], v: &[f64], w: &mut [f64]) -> f64 {
    let (rows, cols, nz) = (grid.rows(), grid.cols(), grid.nz);
    let plane = rows * cols;
    let inv_dx = 1.0 / grid.dx_m();
    let mut max_dw = 0.0f64;
    for row in 0..rows {
        for col in 0..cols {
            let g = grid.ground_k[row * cols + col] as usize;
            for k in g..nz {
                let iu = (k * rows + row) * (cols + 1) + col;
                let iv = (k * (rows + 1) + row) * cols + col;
                let horiz = (u[iu + 1] - u[iu]) * inv_dx + (v[iv] - v[iv + cols]) * inv_dx;
                let below = w[k * plane + row * cols + col];
                let new = below - grid.dz_m(k) * horiz;
                let f = &mut w[(k + 1) * plane + row * cols + col];
                max_dw = max_dw.max((new - *f).abs());
                *f = new;
            }
        }
    }
    max_dw
}
