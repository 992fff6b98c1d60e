//! Weighted least-squares fits of nested variograms: a nugget plus up to
//! [`MAX_STRUCTURES`](super::variogram::MAX_STRUCTURES) structures (gstat's `fit.variogram` of a
//! `vgm(..., add.to = vgm(...))` model).
//!
//! The criterion is the one-structure fit's ([`super::fit`]): Σₖ wₖ (γ̂ₖ − γ(hₖ))² with
//! wₖ = Nₖ / hₖ² (gstat `fit.method = 7`). For fixed shape parameters (each bounded structure's
//! range, each power structure's exponent) γ is linear in the nugget and the partial sills, and the
//! best non-negative ones are found exactly: the non-negative least-squares optimum is the
//! unconstrained optimum on its support, so every subset of the coefficients is solved and the
//! best feasible kept (at most 2⁵ small systems). The shape parameters are searched: a grid over
//! the same intervals as the one-structure fit (ranges log-spaced over [h_min/10, 10 h_max],
//! exponents over [0.01, 1.99]), then Nelder–Mead from the best grid point, restarted once from
//! its optimum. Unlike gstat, whose Gauss–Newton iterations start from the user's guesses and may
//! stop at a local optimum, no starting values are needed.

use super::empirical::{Fit, LagBin, fit, fit_points};
use super::variogram::{Model, Structure, Variogram};
use crate::GeofieldError;

/// Fits `models` (nested, in the order given) and a nugget (none with `fit_nugget = false`) to
/// the `bins` with pairs. One model is [`super::fit`]'s fit.
///
/// ```
/// use geofield::kriging::{LagBin, Model, Variogram, fit_models};
/// // Bins on an exact nested variogram: the fit recovers it.
/// let truth = Variogram::nested(&[Model::Spherical, Model::Exponential],
///     &[1.0, 0.5], &[300.0, 2000.0], 0.1)?;
/// let bins: Vec<LagBin> = (1..=30).map(|k| {
///     let h = 100.0 * k as f64;
///     LagBin { lo: h - 50.0, hi: h + 50.0, distance: h, gamma: truth.gamma(h), pairs: 100 }
/// }).collect();
/// let f = fit_models(&[Model::Spherical, Model::Exponential], &bins, true)?;
/// assert!((f.variogram.structures[0].range - 300.0).abs() < 1e-3);
/// assert!((f.variogram.nugget - 0.1).abs() < 1e-6);
/// # Ok::<(), geofield::GeofieldError>(())
/// ```
pub fn fit_models(
    models: &[Model],
    bins: &[LagBin],
    fit_nugget: bool,
) -> Result<Fit, GeofieldError> {
    match models {
        [] => Err(GeofieldError::Invalid("no variogram model to fit".into())),
        [m] => fit(*m, bins, fit_nugget),
        _ => fit_nested(models, bins, fit_nugget),
    }
}

/// A shape parameter searched in t ∈ [0, 1].
#[derive(Clone, Copy)]
struct Axis {
    lo: f64,
    hi: f64,
    log: bool,
}

impl Axis {
    fn at(&self, t: f64) -> f64 {
        let t = t.clamp(0.0, 1.0);
        if self.log {
            (self.lo.ln() + t * (self.hi.ln() - self.lo.ln())).exp()
        } else {
            self.lo + t * (self.hi - self.lo)
        }
    }
}

fn fit_nested(models: &[Model], bins: &[LagBin], fit_nugget: bool) -> Result<Fit, GeofieldError> {
    if models.len() > super::variogram::MAX_STRUCTURES {
        return Err(GeofieldError::Invalid(format!(
            "{} nested structures: at most {} are fitted",
            models.len(),
            super::variogram::MAX_STRUCTURES
        )));
    }
    // Which structure each axis belongs to (linear structures have none).
    let mut axes: Vec<(usize, Axis)> = Vec::new();
    let probe = fit_points(bins, 1)?;
    let (hmin, hmax) = probe.iter().fold((f64::INFINITY, 0.0f64), |(a, b), p| {
        (a.min(p.0), b.max(p.0))
    });
    for (i, m) in models.iter().enumerate() {
        match m {
            Model::Linear => {}
            Model::Power { .. } => axes.push((
                i,
                Axis {
                    lo: 0.01,
                    hi: 1.99,
                    log: false,
                },
            )),
            _ => axes.push((
                i,
                Axis {
                    lo: hmin / 10.0,
                    hi: hmax * 10.0,
                    log: true,
                },
            )),
        }
    }
    let coefs = models.len() + usize::from(fit_nugget);
    let pts = fit_points(bins, coefs + axes.len())?;
    let shapes = |t: &[f64]| -> Vec<Structure> {
        let mut s: Vec<Structure> = models
            .iter()
            .map(|&m| Structure::new(m, 1.0, 1.0))
            .collect();
        for (&(i, ax), &ti) in axes.iter().zip(t) {
            let p = ax.at(ti);
            match &mut s[i].model {
                Model::Power { exponent } => *exponent = p,
                _ => s[i].range = p,
            }
        }
        s
    };
    let eval = |t: &[f64]| -> (f64, Vec<f64>) {
        let s = shapes(t);
        // Columns: the nugget (1 at every h > 0), then each structure at unit sill.
        let cols: Vec<Vec<f64>> = fit_nugget
            .then(|| vec![1.0; pts.len()])
            .into_iter()
            .chain(
                s.iter()
                    .map(|st| pts.iter().map(|p| st.gamma(p.0)).collect()),
            )
            .collect();
        nnls(&cols, &pts)
    };
    let d = axes.len();
    let best_t = if d == 0 {
        vec![]
    } else {
        let n = match d {
            1 => 240,
            2 => 40,
            3 => 14,
            _ => 8,
        };
        let mut best = (f64::INFINITY, vec![0.0; d]);
        let total = (n + 1usize).pow(d as u32);
        let mut t = vec![0.0; d];
        for idx in 0..total {
            let mut r = idx;
            for tj in t.iter_mut() {
                *tj = (r % (n + 1)) as f64 / n as f64;
                r /= n + 1;
            }
            let w = eval(&t).0;
            if w < best.0 {
                best = (w, t.clone());
            }
        }
        let step = 1.0 / n as f64;
        let t1 = nelder_mead(&|t| eval(t).0, &best.1, step);
        nelder_mead(&|t| eval(t).0, &t1, step / 4.0)
    };
    let (wrss, c) = eval(&best_t);
    let mut structures = shapes(&best_t);
    let off = usize::from(fit_nugget);
    for (i, s) in structures.iter_mut().enumerate() {
        s.sill = c[off + i];
    }
    let variogram = Variogram {
        nugget: if fit_nugget { c[0] } else { 0.0 },
        structures,
    };
    variogram.validate()?;
    Ok(Fit { variogram, wrss })
}

/// Non-negative weighted least squares of `pts` (h, y, w) on `cols`: every support solved by its
/// normal equations, the best with all coefficients ≥ 0 kept. Returns (WRSS, coefficients).
fn nnls(cols: &[Vec<f64>], pts: &[(f64, f64, f64)]) -> (f64, Vec<f64>) {
    let m = cols.len();
    let wrss = |c: &[f64]| -> f64 {
        pts.iter()
            .enumerate()
            .map(|(k, &(_, y, w))| {
                let r = y - (0..m).map(|j| c[j] * cols[j][k]).sum::<f64>();
                w * r * r
            })
            .sum()
    };
    let mut best = (wrss(&vec![0.0; m]), vec![0.0; m]);
    for mask in 1u32..(1 << m) {
        let sup: Vec<usize> = (0..m).filter(|j| mask & (1 << j) != 0).collect();
        let q = sup.len();
        // Normal equations G c = b on the support.
        let mut g = vec![0.0; q * (q + 1)];
        for (a, &ja) in sup.iter().enumerate() {
            for (b, &jb) in sup.iter().enumerate() {
                g[a * (q + 1) + b] = pts
                    .iter()
                    .enumerate()
                    .map(|(k, p)| p.2 * cols[ja][k] * cols[jb][k])
                    .sum();
            }
            g[a * (q + 1) + q] = pts
                .iter()
                .enumerate()
                .map(|(k, p)| p.2 * cols[ja][k] * p.1)
                .sum();
        }
        let Some(x) = solve_augmented(&mut g, q) else {
            continue;
        };
        if x.iter().any(|&v| !(v >= 0.0 && v.is_finite())) {
            continue;
        }
        let mut c = vec![0.0; m];
        for (&j, &v) in sup.iter().zip(&x) {
            c[j] = v;
        }
        let r = wrss(&c);
        if r < best.0 {
            best = (r, c);
        }
    }
    best
}

/// Gaussian elimination with partial pivoting of the q × (q + 1) augmented matrix `g`; `None`
/// when a pivot is negligible against the matrix's scale (a support whose columns are dependent).
pub(super) fn solve_augmented(g: &mut [f64], q: usize) -> Option<Vec<f64>> {
    let w = q + 1;
    let scale = g.iter().fold(0.0f64, |a, v| a.max(v.abs()));
    for col in 0..q {
        let piv =
            (col..q).max_by(|&a, &b| g[a * w + col].abs().total_cmp(&g[b * w + col].abs()))?;
        if g[piv * w + col].abs() <= 1e-13 * scale {
            return None;
        }
        for k in 0..w {
            g.swap(col * w + k, piv * w + k);
        }
        for r in col + 1..q {
            let f = g[r * w + col] / g[col * w + col];
            for k in col..w {
                g[r * w + k] -= f * g[col * w + k];
            }
        }
    }
    let mut x = vec![0.0; q];
    for r in (0..q).rev() {
        let s: f64 = (r + 1..q).map(|k| g[r * w + k] * x[k]).sum();
        x[r] = (g[r * w + q] - s) / g[r * w + r];
    }
    Some(x)
}

/// Nelder–Mead (reflection 1, expansion 2, contraction ½, shrink ½) of `f` on [0, 1]^d from
/// `x0` with initial steps `step`; stops when the simplex's spread in f and in x is negligible.
fn nelder_mead(f: &dyn Fn(&[f64]) -> f64, x0: &[f64], step: f64) -> Vec<f64> {
    let d = x0.len();
    let clamp = |x: Vec<f64>| -> Vec<f64> { x.into_iter().map(|v| v.clamp(0.0, 1.0)).collect() };
    let mut simplex: Vec<(f64, Vec<f64>)> = Vec::with_capacity(d + 1);
    simplex.push((f(x0), x0.to_vec()));
    for i in 0..d {
        let mut x = x0.to_vec();
        x[i] = if x[i] + step <= 1.0 {
            x[i] + step
        } else {
            x[i] - step
        };
        let x = clamp(x);
        simplex.push((f(&x), x));
    }
    for _ in 0..4000 {
        simplex.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (fbest, fworst) = (simplex[0].0, simplex[d].0);
        let spread = simplex
            .iter()
            .flat_map(|(_, x)| x.iter().zip(&simplex[0].1).map(|(a, b)| (a - b).abs()))
            .fold(0.0f64, f64::max);
        if spread < 1e-12 || ((fworst - fbest).abs() <= 1e-15 * fbest.abs() && spread < 1e-9) {
            break;
        }
        let centroid: Vec<f64> = (0..d)
            .map(|j| simplex[..d].iter().map(|(_, x)| x[j]).sum::<f64>() / d as f64)
            .collect();
        let along = |a: f64| -> Vec<f64> {
            clamp(
                (0..d)
                    .map(|j| centroid[j] + a * (simplex[d].1[j] - centroid[j]))
                    .collect(),
            )
        };
        let xr = along(-1.0);
        let fr = f(&xr);
        if fr < simplex[0].0 {
            let xe = along(-2.0);
            let fe = f(&xe);
            simplex[d] = if fe < fr { (fe, xe) } else { (fr, xr) };
        } else if fr < simplex[d - 1].0 {
            simplex[d] = (fr, xr);
        } else {
            let xc = if fr < fworst { along(-0.5) } else { along(0.5) };
            let fc = f(&xc);
            if fc < fworst.min(fr) {
                simplex[d] = (fc, xc);
            } else {
                let best = simplex[0].1.clone();
                for (fx, x) in simplex.iter_mut().skip(1) {
                    *x = clamp(
                        x.iter()
                            .zip(&best)
                            .map(|(a, b)| b + 0.5 * (a - b))
                            .collect(),
                    );
                    *fx = f(x);
                }
            }
        }
    }
    simplex.sort_by(|a, b| a.0.total_cmp(&b.0));
    simplex.swap_remove(0).1
}

#[cfg(test)]
mod tests;
