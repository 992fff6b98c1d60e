//! The empirical variogram of 3-D samples: Matheron's estimator over every pair, binned by
//! the anisotropy-corrected distance |M (pⱼ − pᵢ)| in equal-width lags (what PyKrige bins
//! for its 3-D fit, and gstat's omnidirectional `variogram()` on x, y, z).

use rayon::prelude::*;

use super::super::empirical::LagBin;
use super::{Anisotropy3, Samples3};
use crate::GeofieldError;

/// `lags` bins of equal width from 0 to `max_lag` (default a third of the bounding-box
/// diagonal in kriging space); the sums are taken over fixed blocks of rows and added in order
/// (the same bits on any thread count).
pub fn empirical3(
    s: &Samples3,
    anisotropy: &Anisotropy3,
    lags: usize,
    max_lag: Option<f64>,
) -> Result<Vec<LagBin>, GeofieldError> {
    s.validate()?;
    anisotropy.validate()?;
    if s.len() < 2 {
        return Err(GeofieldError::Invalid(format!(
            "{} samples: a variogram needs at least 2",
            s.len()
        )));
    }
    if !(1..=10_000).contains(&lags) {
        return Err(GeofieldError::InvalidParameter {
            name: "lags".into(),
            value: lags.to_string(),
            expected: "1..=10000".into(),
        });
    }
    let pts: Vec<[f64; 3]> = (0..s.len())
        .map(|i| anisotropy.apply([s.xs[i], s.ys[i], s.zs[i]]))
        .collect();
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
            let mut lo = [f64::MAX; 3];
            let mut hi = [f64::MIN; 3];
            for q in &pts {
                for a in 0..3 {
                    lo[a] = lo[a].min(q[a]);
                    hi[a] = hi[a].max(q[a]);
                }
            }
            let d = (0..3).map(|a| (hi[a] - lo[a]).powi(2)).sum::<f64>().sqrt() / 3.0;
            if d > 0.0 {
                d
            } else {
                return Err(GeofieldError::Invalid(
                    "all samples are at one location: no separation to bin".into(),
                ));
            }
        }
    };
    let width = max_lag / lags as f64;
    const ROWS: usize = 32;
    let n = pts.len();
    // (pairs, Σh, Σ(Δz)²) per bin.
    let blocks: Vec<Vec<(u64, f64, f64)>> = (0..n.div_ceil(ROWS))
        .into_par_iter()
        .map(|b| {
            let mut acc = vec![(0u64, 0.0, 0.0); lags];
            for i in b * ROWS..((b + 1) * ROWS).min(n) {
                for j in i + 1..n {
                    let (dx, dy, dz) = (
                        pts[j][0] - pts[i][0],
                        pts[j][1] - pts[i][1],
                        pts[j][2] - pts[i][2],
                    );
                    let h = (dx * dx + dy * dy + dz * dz).sqrt();
                    if h > max_lag {
                        continue;
                    }
                    let e = &mut acc[((h / width) as usize).min(lags - 1)];
                    let d = s.values[i] - s.values[j];
                    e.0 += 1;
                    e.1 += h;
                    e.2 += d * d;
                }
            }
            acc
        })
        .collect();
    let mut total = vec![(0u64, 0.0, 0.0); lags];
    for b in &blocks {
        for (t, e) in total.iter_mut().zip(b) {
            t.0 += e.0;
            t.1 += e.1;
            t.2 += e.2;
        }
    }
    Ok(total
        .iter()
        .enumerate()
        .map(|(k, &(np, sh, sq))| {
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
                    sq / (2.0 * np as f64)
                },
                pairs: np,
            }
        })
        .collect())
}

/// The residuals of `s`'s values from their ordinary least-squares fit of a linear drift
/// (1, x, y, z), what the variogram of universal kriging is fitted to (gstat's
/// `variogram(v ~ x + y + z)`).
pub fn drift_residuals3(s: &Samples3) -> Result<Samples3, GeofieldError> {
    s.validate()?;
    let n = s.len();
    let mean = |v: &[f64]| v.iter().sum::<f64>() / n as f64;
    let c = [mean(&s.xs), mean(&s.ys), mean(&s.zs)];
    let scale = (0..n)
        .map(|i| {
            (s.xs[i] - c[0])
                .abs()
                .max((s.ys[i] - c[1]).abs())
                .max((s.zs[i] - c[2]).abs())
        })
        .fold(0.0f64, f64::max)
        .max(f64::MIN_POSITIVE);
    let row = |i: usize| {
        [
            1.0,
            (s.xs[i] - c[0]) / scale,
            (s.ys[i] - c[1]) / scale,
            (s.zs[i] - c[2]) / scale,
        ]
    };
    let mut ata = vec![0.0; 16];
    let mut atb = [0.0; 4];
    for i in 0..n {
        let f = row(i);
        for a in 0..4 {
            for b in 0..=a {
                ata[a * 4 + b] += f[a] * f[b];
            }
            atb[a] += f[a] * s.values[i];
        }
    }
    let r = super::super::global::small::small_cholesky(&ata, 4).ok_or_else(|| {
        GeofieldError::Invalid(format!(
            "the linear drift (1, x, y, z) cannot be fitted to these {n} samples: they lie \
             (nearly) on one plane"
        ))
    })?;
    // (RRᵀ) β = Aᵀb.
    let mut y = [0.0; 4];
    for a in 0..4 {
        y[a] = (atb[a] - (0..a).map(|k| r[a * 4 + k] * y[k]).sum::<f64>()) / r[a * 4 + a];
    }
    let mut beta = [0.0; 4];
    for a in (0..4).rev() {
        beta[a] = (y[a] - (a + 1..4).map(|k| r[k * 4 + a] * beta[k]).sum::<f64>()) / r[a * 4 + a];
    }
    let mut out = s.clone();
    for i in 0..n {
        let f = row(i);
        out.values[i] -= (0..4).map(|a| f[a] * beta[a]).sum::<f64>();
    }
    Ok(out)
}
