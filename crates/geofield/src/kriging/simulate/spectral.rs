//! Unconditional Gaussian fields by the randomisation method (spectral sums), on the CPU; the
//! CUDA kernels (`kernels/sim.cu`) evaluate the same sums with the same arithmetic.
//!
//! # Modes
//!
//! A stationary covariance c·ρ(h) in the plane is c times the characteristic function of a
//! spectral distribution F: ρ(h) = E_F[cos(k·h)]. With M modes k_j ~ F and a_j, b_j ~ N(0, 1), all
//! independent, Z(x) = √(c/M) Σ_j (a_j cos(k_j·x) + b_j sin(k_j·x)) has mean 0 and covariance
//! exactly c·ρ(h) (Shinozuka 1971; Hesse, Heße et al. 2014, GSTools' `RandMeth`). Nested
//! structures are independent sums, each with its own modes. The draws per structure and
//! mode, in this order, are the direction, the radial variable, then a, b:
//!
//! | model (practical range a) | direction | k |
//! |---|---|---|
//! | gaussian, exp(−3h²/a²) | g₁, g₂ ~ N(0, 1) | (√6/a)·g (a normal law) |
//! | exponential, exp(−3h/a) | g₁, g₂ | (3/a)·g/\|w\|, w ~ N(0, 1) (Cauchy) |
//! | matérn(ν) | g₁, g₂ | (s_ν/a)·g/√W, W ~ χ²(2ν) (Student's t with 2ν degrees) |
//! | stable(α), exp(−3(h/a)^α) | g₁, g₂ | √(2S)·3^(1/α)/a·g, S positive α/2-stable, E e^(−λS) = e^(−λ^(α/2)) (Kanter 1975) |
//! | spherical, cubic | g₁, g₂, g₃ ~ N(0, 1) | (κ/a)·(g₁, g₂)/\|(g₁, g₂, g₃)\|, κ = G⁻¹(U), U ~ U(0, 1) |
//!
//! (g = (g₁, g₂); s_ν: [`super::super::variogram::matern_scale`]; matérn with ν = ½ is the
//! exponential's law.) Spherical and cubic have no closed-form sampler: they are covariances in
//! R³, whose wave numbers κ (range 1) have a radial law G tabulated once per model and
//! inverted ([`super::tabulated`], with the formulas); the 2-D field is the restriction of
//! the 3-D one to the plane, so the direction is uniform on the sphere and k its projection.
//! Power and linear, which have no stationary field, are refused.
//!
//! # Arithmetic on grids
//!
//! At grid nodes x = o_r + col·s (o_r the node (row, 0), s the column step, both in kriging
//! space), e^(ik·x) = e^(ik·o_r)·e^(i·col·(k·s)): one table per row and one per column, then
//! Z = Σ_j Re(A_rj B_jc) with A_rj = √(c/M)(a_j − i b_j) e^(ik_j·o_r), B_jc = e^(i·col·(k_j·s)):
//! a complex matrix product instead of a sine and a cosine per node and mode. Every step is a
//! plain f64 operation in a pinned order, and [`sincos`] is our own (Cody–Waite reduction,
//! Taylor polynomials), so the CUDA kernels give the same bits.

use rand::Rng;
use rand_distr::{ChiSquared, Distribution, Exp1, StandardNormal};
use rand_pcg::Pcg64;
use rayon::prelude::*;

use super::super::space::NodeGrid;
use super::super::variogram::{Model, Variogram, matern_scale};
use super::tabulated::{self, RadialTable};
use crate::GeofieldError;

/// π/2 in three parts (fdlibm's split: the first two have 33 significant bits, so n·P for
/// |n| < 2^20 is exact).
const PIO2_1: f64 = f64::from_bits(0x3FF9_21FB_5440_0000);
const PIO2_2: f64 = f64::from_bits(0x3DD0_B461_1A60_0000);
const PIO2_3: f64 = f64::from_bits(0x3BA3_198A_2E03_7073);
/// 2/π (the same double as the kernels' literal 0.6366197723675814).
const TWO_OVER_PI: f64 = std::f64::consts::FRAC_2_PI;

/// (sin t, cos t) with our own arithmetic (mirrored by `sim_sincos` in `kernels/sim.cu`):
/// t = n·π/2 + r, |r| ≤ π/4 (Cody–Waite with three parts of π/2), Taylor polynomials to r¹⁵
/// and r¹⁶ (remainders below 5e-17). About 1 ulp for |t| < 1.6e6 (n·P exact); beyond, the
/// reduction loses about log2(|t|/1.6e6) bits, irrelevant for random phases. r is clamped to
/// ±0.8 so that a huge t still gives values in [−1, 1].
#[inline]
pub fn sincos(t: f64) -> (f64, f64) {
    let n = (t * TWO_OVER_PI).round();
    let quadrant = n - 4.0 * (n * 0.25).floor();
    let r = ((t - n * PIO2_1) - n * PIO2_2) - n * PIO2_3;
    let r = r.clamp(-0.8, 0.8);
    let r2 = r * r;
    let mut s = -7.647163731819816e-13;
    s = 1.6059043836821613e-10 + r2 * s;
    s = -2.505210838544172e-08 + r2 * s;
    s = 2.7557319223985893e-06 + r2 * s;
    s = -0.0001984126984126984 + r2 * s;
    s = 0.008333333333333333 + r2 * s;
    s = -0.16666666666666666 + r2 * s;
    let sin_r = r + (r * r2) * s;
    let mut c = 4.779477332387385e-14;
    c = -1.1470745597729725e-11 + r2 * c;
    c = 2.08767569878681e-09 + r2 * c;
    c = -2.755731922398589e-07 + r2 * c;
    c = 2.48015873015873e-05 + r2 * c;
    c = -0.001388888888888889 + r2 * c;
    c = 0.041666666666666664 + r2 * c;
    c = -0.5 + r2 * c;
    let cos_r = 1.0 + r2 * c;
    if quadrant == 0.0 {
        (sin_r, cos_r)
    } else if quadrant == 1.0 {
        (cos_r, -sin_r)
    } else if quadrant == 2.0 {
        (-sin_r, -cos_r)
    } else {
        (-cos_r, sin_r)
    }
}

/// One mode: wave vector (kx, ky) in kriging space and amplitudes √(c/M)·a, √(c/M)·b.
pub type Mode = [f64; 4];

/// The radial law of one structure's wave numbers.
#[derive(Clone, Copy, Debug)]
enum Radial {
    /// k = scale·g.
    Normal { scale: f64 },
    /// k = scale·g/√W, W ~ χ²(2ν) (the exponential: ν = ½).
    Student { scale: f64, dof: f64 },
    /// k = scale·√(2S)·g, S positive β-stable.
    SubGaussian { scale: f64, beta: f64 },
    /// k = scale·κ·(g₁, g₂)/|(g₁, g₂, g₃)|, κ from the unit-range table.
    Tabulated {
        scale: f64,
        law: &'static RadialTable,
    },
}

/// The structure's law, or why it cannot be simulated.
fn radial(model: Model, range: f64) -> Result<Radial, GeofieldError> {
    let a = range;
    if let Some(law) = tabulated::table(model) {
        return Ok(Radial::Tabulated {
            scale: 1.0 / a,
            law,
        });
    }
    Ok(match model {
        Model::Gaussian => Radial::Normal {
            scale: 6f64.sqrt() / a,
        },
        Model::Stable { alpha } if alpha >= 2.0 => Radial::Normal {
            scale: 6f64.sqrt() / a,
        },
        Model::Exponential => Radial::Student {
            scale: 3.0 / a,
            dof: 1.0,
        },
        Model::Matern { nu } => Radial::Student {
            scale: matern_scale(nu) / a,
            dof: 2.0 * nu,
        },
        Model::Stable { alpha } => Radial::SubGaussian {
            scale: 3f64.powf(1.0 / alpha) / a,
            beta: alpha / 2.0,
        },
        other => {
            return Err(GeofieldError::Invalid(format!(
                "conditional simulation supports exponential, gaussian, spherical, cubic, \
                 matern and stable structures; `{}` has no stationary field (no sill)",
                other.name(),
            )));
        }
    })
}

/// Checks that every structure of `vg` can be simulated.
pub fn check_variogram(vg: &Variogram) -> Result<(), GeofieldError> {
    for s in &vg.structures {
        radial(s.model, s.range)?;
    }
    Ok(())
}

fn normal(rng: &mut Pcg64) -> f64 {
    rng.sample(StandardNormal)
}

/// A positive β-stable variable (0 < β < 1) with E e^(−λS) = e^(−λ^β): Kanter's
/// representation, S = sin(βU)/sin(U)^(1/β) · (sin((1−β)U)/E)^((1−β)/β), U ~ U(0, π),
/// E ~ Exp(1).
fn positive_stable(rng: &mut Pcg64, beta: f64) -> f64 {
    loop {
        let u = std::f64::consts::PI * rng.random::<f64>();
        let e: f64 = rng.sample(Exp1);
        let s = (beta * u).sin() / u.sin().powf(1.0 / beta)
            * ((1.0 - beta) * u).sin().powf((1.0 - beta) / beta)
            / e.powf((1.0 - beta) / beta);
        if s.is_finite() && s > 0.0 {
            return s;
        }
    }
}

/// The `modes` modes of each structure of `vg` for one realisation, drawn from `rng` in the
/// documented order. Wave vectors that are not finite (a radial draw of 0) are drawn again.
pub fn draw_modes(
    vg: &Variogram,
    modes: usize,
    rng: &mut Pcg64,
) -> Result<Vec<Mode>, GeofieldError> {
    let mut out = Vec::with_capacity(modes * vg.structures.len());
    for s in &vg.structures {
        let law = radial(s.model, s.range)?;
        let amp = (s.sill / modes as f64).sqrt();
        let chi = match law {
            Radial::Student { dof, .. } => Some(
                ChiSquared::new(dof).map_err(|e| GeofieldError::Invalid(format!("matern: {e}")))?,
            ),
            _ => None,
        };
        for _ in 0..modes {
            let (kx, ky) = loop {
                let (g1, g2) = (normal(rng), normal(rng));
                let f = match law {
                    Radial::Tabulated { scale, law } => {
                        let g3 = normal(rng);
                        let u: f64 = rng.random();
                        scale * law.quantile(u) / (g1 * g1 + g2 * g2 + g3 * g3).sqrt()
                    }
                    Radial::Normal { scale } => scale,
                    Radial::Student { scale, .. } => {
                        let w: f64 = chi.map_or(1.0, |c| c.sample(rng));
                        scale / w.sqrt()
                    }
                    Radial::SubGaussian { scale, beta } => {
                        scale * (2.0 * positive_stable(rng, beta)).sqrt()
                    }
                };
                let (kx, ky) = (f * g1, f * g2);
                if kx.is_finite() && ky.is_finite() {
                    break (kx, ky);
                }
            };
            let (a, b) = (normal(rng), normal(rng));
            out.push([kx, ky, amp * a, amp * b]);
        }
    }
    Ok(out)
}

/// Z at kriging-space points (`xs`, `ys`): Σ_j (sa_j cos θ + sb_j sin θ), θ = kx·x + ky·y,
/// summed in mode order.
pub fn field_points(xs: &[f64], ys: &[f64], modes: &[Mode]) -> Vec<f64> {
    xs.par_iter()
        .zip(ys.par_iter())
        .with_min_len(256)
        .map(|(&x, &y)| {
            let mut z = 0.0;
            for &[kx, ky, sa, sb] in modes {
                let (s, c) = sincos(kx * x + ky * y);
                z += sa * c + sb * s;
            }
            z
        })
        .collect()
}

/// The row table A (rows × M, interleaved re, im) and the column table B (M × cols: cos, then
/// sin) of one realisation; the arithmetic of `sim_tables` in `kernels/sim.cu`.
pub fn tables(map: &NodeGrid, modes: &[Mode]) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let m = modes.len();
    let mut a = vec![0.0; map.rows * m * 2];
    a.par_chunks_mut(m * 2).enumerate().for_each(|(row, out)| {
        let (x0, y0) = map.node(row, 0);
        for (o, &[kx, ky, sa, sb]) in out.chunks_exact_mut(2).zip(modes) {
            let (s, c) = sincos(kx * x0 + ky * y0);
            o[0] = sa * c + sb * s;
            o[1] = sa * s - sb * c;
        }
    });
    let cols = map.cols;
    let mut bc = vec![0.0; m * cols];
    let mut bs = vec![0.0; m * cols];
    bc.par_chunks_mut(cols.max(1))
        .zip(bs.par_chunks_mut(cols.max(1)))
        .zip(modes.par_iter())
        .for_each(|((oc, os), &[kx, ky, _, _])| {
            let psi = kx * map.col_step[0] + ky * map.col_step[1];
            for (col, (c_out, s_out)) in oc.iter_mut().zip(os.iter_mut()).enumerate() {
                let (s, c) = sincos(col as f64 * psi);
                *c_out = c;
                *s_out = s;
            }
        });
    (a, bc, bs)
}

/// Rows per block and columns per tile of the CPU's product.
const ROW_BLOCK: usize = 4;
const COL_TILE: usize = 64;

/// Z at every node of `map` (row-major), the sum over modes in mode order:
/// z ← z + (A_re·cos − A_im·sin) per mode (the arithmetic of `sim_field`).
pub fn field_grid(map: &NodeGrid, modes: &[Mode]) -> Vec<f64> {
    let (rows, cols, m) = (map.rows, map.cols, modes.len());
    let (a, bc, bs) = tables(map, modes);
    let mut z = vec![0.0; rows * cols];
    if cols == 0 {
        return z;
    }
    z.par_chunks_mut(ROW_BLOCK * cols)
        .enumerate()
        .for_each(|(blk, out)| {
            let r0 = blk * ROW_BLOCK;
            let nr = out.len() / cols;
            for c0 in (0..cols).step_by(COL_TILE) {
                let w = COL_TILE.min(cols - c0);
                let mut acc = [[0.0f64; COL_TILE]; ROW_BLOCK];
                for j in 0..m {
                    let cj = &bc[j * cols + c0..j * cols + c0 + w];
                    let sj = &bs[j * cols + c0..j * cols + c0 + w];
                    for (r, acc_r) in acc.iter_mut().enumerate().take(nr) {
                        let ar = a[((r0 + r) * m + j) * 2];
                        let ai = a[((r0 + r) * m + j) * 2 + 1];
                        for ((z, &c), &s) in acc_r[..w].iter_mut().zip(cj).zip(sj) {
                            *z += ar * c - ai * s;
                        }
                    }
                }
                for (r, acc_r) in acc.iter().enumerate().take(nr) {
                    out[r * cols + c0..r * cols + c0 + w].copy_from_slice(&acc_r[..w]);
                }
            }
        });
    z
}
