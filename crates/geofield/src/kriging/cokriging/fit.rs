//! The empirical direct and cross variograms of several variables, gstat's `fit.lmc`, and the
//! positive semi-definite projection of a symmetric matrix (see the module docs of
//! [`super`]).

use rayon::prelude::*;

use super::super::empirical::LagBin;
use super::super::params::Anisotropy;
use super::super::samples::SampleSet;
use super::super::space::Frame;
use super::super::variogram::Structure;
use super::{Lmc, unit};
use crate::GeofieldError;

/// The pairs (k, l), k ≤ l, in the order [`cross_bins`] returns them: (0,0), (0,1), …, (1,1), ….
pub fn pair_order(k: usize) -> Vec<(usize, usize)> {
    (0..k).flat_map(|a| (a..k).map(move |b| (a, b))).collect()
}

/// The direct (k = l) and cross variograms of every pair of `set`'s surfaces ([`pair_order`]) in
/// `lags` common bins from 0 to `max_lag` (default a third of the locations' bounding-box
/// diagonal), distances after the anisotropy map. A pair of locations counts for (k, l) when
/// both variables are known at both.
pub fn cross_bins(
    set: &SampleSet,
    anisotropy: Option<Anisotropy>,
    lags: usize,
    max_lag: Option<f64>,
) -> Result<Vec<Vec<LagBin>>, GeofieldError> {
    set.validate()?;
    if !(1..=10_000).contains(&lags) {
        return Err(GeofieldError::InvalidParameter {
            name: "lags".into(),
            value: lags.to_string(),
            expected: "1..=10000".into(),
        });
    }
    let frame = Frame::new(&set.xs, &set.ys, anisotropy);
    let (px, py): (Vec<f64>, Vec<f64>) = set
        .xs
        .iter()
        .zip(&set.ys)
        .map(|(&x, &y)| frame.apply(x, y))
        .unzip();
    let max_lag = match max_lag {
        Some(m) if m.is_finite() && m > 0.0 => m,
        Some(m) => {
            return Err(GeofieldError::InvalidParameter {
                name: "max_lag".into(),
                value: m.to_string(),
                expected: "a finite distance > 0".into(),
            });
        }
        None => {
            let d = super::super::global::bbox_diagonal(&px, &py) / 3.0;
            if d > 0.0 {
                d
            } else {
                return Err(GeofieldError::Invalid(
                    "all samples are at one location: no separation to bin".into(),
                ));
            }
        }
    };
    let kv = set.surfaces.len();
    let pairs = pair_order(kv);
    let width = max_lag / lags as f64;
    let n = px.len();
    let v = |k: usize, i: usize| set.surfaces[k].values[i];
    const ROWS: usize = 32;
    // Per pair and bin: (count, Σh, Σ product).
    let zero = || vec![vec![(0u64, 0.0f64, 0.0f64); lags]; pairs.len()];
    let blocks: Vec<_> = (0..n.div_ceil(ROWS))
        .into_par_iter()
        .map(|b| {
            let mut acc = zero();
            for i in b * ROWS..((b + 1) * ROWS).min(n) {
                for j in i + 1..n {
                    let h = (px[j] - px[i]).hypot(py[j] - py[i]);
                    if h > max_lag {
                        continue;
                    }
                    let bin = ((h / width) as usize).min(lags - 1);
                    for (q, &(k, l)) in pairs.iter().enumerate() {
                        let dk = v(k, i) - v(k, j);
                        let dl = v(l, i) - v(l, j);
                        if dk.is_finite() && dl.is_finite() {
                            let e = &mut acc[q][bin];
                            e.0 += 1;
                            e.1 += h;
                            e.2 += dk * dl;
                        }
                    }
                }
            }
            acc
        })
        .collect();
    let mut total = zero();
    for b in &blocks {
        for (t, e) in total.iter_mut().zip(b) {
            for (x, y) in t.iter_mut().zip(e) {
                x.0 += y.0;
                x.1 += y.1;
                x.2 += y.2;
            }
        }
    }
    Ok(total
        .iter()
        .map(|acc| {
            acc.iter()
                .enumerate()
                .map(|(k, &(np, sh, sp))| {
                    let (lo, hi) = (k as f64 * width, (k + 1) as f64 * width);
                    LagBin {
                        lo,
                        hi,
                        distance: if np == 0 {
                            0.5 * (lo + hi)
                        } else {
                            sh / np as f64
                        },
                        gamma: if np == 0 {
                            f64::NAN
                        } else {
                            sp / (2.0 * np as f64)
                        },
                        pairs: np,
                    }
                })
                .collect()
        })
        .collect())
}

/// Eigenvalues and eigenvectors (columns, row-major k × k) of a symmetric k × k matrix by
/// cyclic Jacobi rotations (k is the number of variables: small).
pub(crate) fn eigen_sym(a: &[f64], k: usize) -> (Vec<f64>, Vec<f64>) {
    let mut m = a.to_vec();
    let mut v: Vec<f64> = (0..k * k)
        .map(|i| f64::from(u8::from(i / k == i % k)))
        .collect();
    for _ in 0..100 {
        let off: f64 = (0..k)
            .flat_map(|r| (0..k).filter(move |&c| c != r).map(move |c| (r, c)))
            .map(|(r, c)| m[r * k + c] * m[r * k + c])
            .sum();
        let scale: f64 = m.iter().map(|x| x * x).sum();
        if off <= 1e-30 * scale.max(f64::MIN_POSITIVE) {
            break;
        }
        for p in 0..k {
            for q in p + 1..k {
                let apq = m[p * k + q];
                if apq == 0.0 {
                    continue;
                }
                let theta = (m[q * k + q] - m[p * k + p]) / (2.0 * apq);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for r in 0..k {
                    let (mrp, mrq) = (m[r * k + p], m[r * k + q]);
                    m[r * k + p] = c * mrp - s * mrq;
                    m[r * k + q] = s * mrp + c * mrq;
                }
                for r in 0..k {
                    let (mpr, mqr) = (m[p * k + r], m[q * k + r]);
                    m[p * k + r] = c * mpr - s * mqr;
                    m[q * k + r] = s * mpr + c * mqr;
                }
                for r in 0..k {
                    let (vrp, vrq) = (v[r * k + p], v[r * k + q]);
                    v[r * k + p] = c * vrp - s * vrq;
                    v[r * k + q] = s * vrp + c * vrq;
                }
            }
        }
    }
    ((0..k).map(|i| m[i * k + i]).collect(), v)
}

/// The nearest (Frobenius) positive semi-definite matrix to the symmetric `a` (k × k): its
/// negative eigenvalues set to zero (gstat's `fit.lmc`).
pub fn psd_projection(a: &[f64], k: usize) -> Vec<f64> {
    let (vals, v) = eigen_sym(a, k);
    let mut out = vec![0.0; k * k];
    for (e, &lam) in vals.iter().enumerate() {
        if lam <= 0.0 {
            continue;
        }
        for r in 0..k {
            for c in 0..k {
                out[r * k + c] += lam * v[r * k + e] * v[c * k + e];
            }
        }
    }
    // Exactly symmetric.
    for r in 0..k {
        for c in 0..r {
            let m = 0.5 * (out[r * k + c] + out[c * k + r]);
            out[r * k + c] = m;
            out[c * k + r] = m;
        }
    }
    out
}

/// gstat's `fit.lmc`: each of `bins` ([`pair_order`] of `variables`) fitted with the shapes of
/// `shapes` fixed (nugget too unless `fit_nugget` is false) by weighted least squares (weights
/// N/h², coefficients of any sign), then every matrix projected onto the positive semi-definite
/// ones ([`psd_projection`]).
pub fn fit_lmc(
    bins: &[Vec<LagBin>],
    variables: usize,
    shapes: &[Structure],
    fit_nugget: bool,
) -> Result<Lmc, GeofieldError> {
    let pairs = pair_order(variables);
    if bins.len() != pairs.len() {
        return Err(GeofieldError::Invalid(format!(
            "{} variograms for {variables} variables: expected {}",
            bins.len(),
            pairs.len()
        )));
    }
    if shapes.is_empty() {
        return Err(GeofieldError::Invalid(
            "the coregionalisation model needs at least one structure".into(),
        ));
    }
    let s = shapes.len();
    let m = s + usize::from(fit_nugget);
    let mut nugget = vec![0.0; variables * variables];
    let mut sills = vec![vec![0.0; variables * variables]; s];
    for (&(k, l), b) in pairs.iter().zip(bins) {
        let pts: Vec<(f64, f64, f64)> = b
            .iter()
            .filter(|x| x.pairs > 0 && x.gamma.is_finite() && x.distance > 0.0)
            .map(|x| {
                (
                    x.distance,
                    x.gamma,
                    x.pairs as f64 / (x.distance * x.distance),
                )
            })
            .collect();
        if pts.len() < m {
            return Err(GeofieldError::Invalid(format!(
                "the {} variogram of variables {} and {} has {} lag bins with pairs: fitting {m} \
                 coefficients needs at least {m} (collocated samples of both are needed for a \
                 cross variogram)",
                if k == l { "direct" } else { "cross" },
                k + 1,
                l + 1,
                pts.len()
            )));
        }
        // Basis: [1 (nugget)], g_s(h).
        let basis = |h: f64| -> Vec<f64> {
            let mut f = Vec::with_capacity(m);
            if fit_nugget {
                f.push(1.0);
            }
            f.extend(shapes.iter().map(|st| unit(st).gamma(h)));
            f
        };
        let mut ata = vec![0.0; m * m];
        let mut atb = vec![0.0; m];
        for &(h, g, w) in &pts {
            let f = basis(h);
            for a in 0..m {
                for c in 0..=a {
                    ata[a * m + c] += w * f[a] * f[c];
                }
                atb[a] += w * f[a] * g;
            }
        }
        let r = super::super::global::small::small_cholesky(&ata, m).ok_or_else(|| {
            GeofieldError::Invalid(format!(
                "the structures cannot be told apart on the bins of variables {} and {} (ranges \
                 too alike, or all beyond the largest lag)",
                k + 1,
                l + 1
            ))
        })?;
        let mut y = vec![0.0; m];
        for a in 0..m {
            y[a] = (atb[a] - (0..a).map(|c| r[a * m + c] * y[c]).sum::<f64>()) / r[a * m + a];
        }
        let mut x = vec![0.0; m];
        for a in (0..m).rev() {
            x[a] = (y[a] - (a + 1..m).map(|c| r[c * m + a] * x[c]).sum::<f64>()) / r[a * m + a];
        }
        let mut it = x.into_iter();
        let set = |mat: &mut Vec<f64>, v: f64| {
            mat[k * variables + l] = v;
            mat[l * variables + k] = v;
        };
        if fit_nugget {
            set(&mut nugget, it.next().unwrap_or(0.0));
        }
        for sm in sills.iter_mut() {
            set(sm, it.next().unwrap_or(0.0));
        }
    }
    let lmc = Lmc {
        variables,
        structures: shapes.to_vec(),
        nugget: psd_projection(&nugget, variables),
        sills: sills.iter().map(|b| psd_projection(b, variables)).collect(),
    };
    lmc.validate()?;
    Ok(lmc)
}
