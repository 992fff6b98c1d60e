//! Empirical variograms and weighted least-squares fitting.
//!
//! # Empirical variogram
//!
//! Every pair (i, j), i < j, with separation h = |xᵢ − xⱼ| ≤ `max_lag` (and, with a direction,
//! whose undirected azimuth lies within ± `tolerance` of it) falls into one of `lags` equal bins
//! of [0, max_lag]. Per bin, with N pairs and differences Δ = zᵢ − zⱼ:
//!
//! - Matheron: γ̂ = Σ Δ² / (2N);
//! - Cressie–Hawkins (robust): γ̂ = (Σ |Δ|^½ / N)⁴ / (2 (0.457 + 0.494/N + 0.045/N²)), GSTools'
//!   form (gstat drops the 0.045/N² term).
//!
//! The default `max_lag` is a third of the bounding-box diagonal (gstat's `cutoff` default).
//! Directions are azimuths in degrees clockwise from north (+y), as gstat's `alpha`; a pair's
//! azimuth is taken modulo 180°.
//!
//! # Fitting
//!
//! The weighted least-squares fit minimises Σₖ wₖ (γ̂ₖ − γ(hₖ))² over the bins with pairs, hₖ
//! being the bin's mean pair distance and wₖ = Nₖ / hₖ² (gstat's default `fit.method = 7`). For a
//! fixed range (power: exponent) γ is linear in the nugget and the sill, solved exactly with both
//! kept ≥ 0; the range is searched on a log grid over [h_min / 10, 10 h_max] and refined by
//! golden sections. A model's shape parameter (stable α, Matérn ν) is kept as given.

use rayon::prelude::*;

use super::variogram::{Model, Structure, Variogram};
use crate::GeofieldError;

/// Estimator of the empirical variogram.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Estimator {
    Matheron,
    CressieHawkins,
}

/// How pairs are binned.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LagSpec {
    /// Number of equal-width bins (≥ 1).
    pub lags: usize,
    /// Largest separation kept; `None`: a third of the bounding-box diagonal.
    pub max_lag: Option<f64>,
    /// (azimuth, tolerance) in degrees: keep pairs whose undirected azimuth is within the
    /// tolerance of the azimuth (clockwise from north).
    pub direction: Option<(f64, f64)>,
}

impl Default for LagSpec {
    fn default() -> Self {
        LagSpec {
            lags: 15,
            max_lag: None,
            direction: None,
        }
    }
}

/// One bin of an empirical variogram.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct LagBin {
    pub lo: f64,
    pub hi: f64,
    /// Mean separation of the bin's pairs (the bin centre when empty).
    pub distance: f64,
    /// γ̂ (NaN when the bin has no pair).
    pub gamma: f64,
    pub pairs: u64,
}

#[derive(Clone, Copy, Default)]
struct Acc {
    n: u64,
    h: f64,
    sq: f64,
    root: f64,
}

impl Acc {
    /// γ̂ of the pairs summed here (NaN with none); see the module docs.
    fn gamma(&self, estimator: Estimator) -> f64 {
        let nf = self.n as f64;
        if self.n == 0 {
            return f64::NAN;
        }
        match estimator {
            Estimator::Matheron => self.sq / (2.0 * nf),
            Estimator::CressieHawkins => {
                (self.root / nf).powi(4) / (2.0 * (0.457 + 0.494 / nf + 0.045 / (nf * nf)))
            }
        }
    }

    fn add(&mut self, o: &Acc) {
        self.n += o.n;
        self.h += o.h;
        self.sq += o.sq;
        self.root += o.root;
    }
}

/// Lengths equal, at least 2 samples, every coordinate and value finite.
fn check_samples(xs: &[f64], ys: &[f64], values: &[f64]) -> Result<(), GeofieldError> {
    let n = xs.len();
    if ys.len() != n || values.len() != n {
        return Err(GeofieldError::Invalid(format!(
            "{} x, {} y and {} values: the lengths differ",
            n,
            ys.len(),
            values.len()
        )));
    }
    if n < 2 {
        return Err(GeofieldError::Invalid(format!(
            "{n} samples: a variogram needs at least 2"
        )));
    }
    for (i, ((&x, &y), &v)) in xs.iter().zip(ys).zip(values).enumerate() {
        if !(x.is_finite() && y.is_finite() && v.is_finite()) {
            return Err(GeofieldError::Invalid(format!(
                "sample {i} has a non-finite coordinate or value ({x}, {y}, {v})"
            )));
        }
    }
    Ok(())
}

/// Sums over every pair (i, j > i) of the bin `classify(xⱼ − xᵢ, yⱼ − yᵢ)` gives it (none:
/// skipped), into `bins` accumulators. The sums are taken over fixed blocks of rows i (in
/// parallel), then the blocks are added in order: the same bits on any thread count.
fn pair_sums(
    xs: &[f64],
    ys: &[f64],
    values: &[f64],
    bins: usize,
    classify: impl Fn(f64, f64) -> Option<usize> + Sync,
) -> Vec<Acc> {
    const ROWS_PER_BLOCK: usize = 32;
    let n = xs.len();
    let add_row = |acc: &mut Vec<Acc>, i: usize| {
        for j in i + 1..n {
            let (dx, dy) = (xs[j] - xs[i], ys[j] - ys[i]);
            let Some(b) = classify(dx, dy) else {
                continue;
            };
            let d = values[i] - values[j];
            let e = &mut acc[b];
            e.n += 1;
            e.h += dx.hypot(dy);
            e.sq += d * d;
            e.root += d.abs().sqrt();
        }
    };
    let blocks: Vec<Vec<Acc>> = (0..n.div_ceil(ROWS_PER_BLOCK))
        .into_par_iter()
        .map(|k| {
            let mut acc = vec![Acc::default(); bins];
            for i in k * ROWS_PER_BLOCK..((k + 1) * ROWS_PER_BLOCK).min(n) {
                add_row(&mut acc, i);
            }
            acc
        })
        .collect();
    blocks
        .into_iter()
        .fold(vec![Acc::default(); bins], |mut a, b| {
            for (x, y) in a.iter_mut().zip(&b) {
                x.add(y);
            }
            a
        })
}

/// The empirical variogram of `values` at points (`xs`, `ys`); see the module docs.
pub fn empirical(
    xs: &[f64],
    ys: &[f64],
    values: &[f64],
    spec: &LagSpec,
    estimator: Estimator,
) -> Result<Vec<LagBin>, GeofieldError> {
    check_samples(xs, ys, values)?;
    if spec.lags == 0 {
        return Err(GeofieldError::Invalid("lags must be at least 1".into()));
    }
    // Each rayon worker accumulates a copy of every bin, the reduction one more, and the result
    // holds one LagBin per bin: refuse up front a lag count whose bins would not fit in memory.
    let copies = rayon::current_num_threads() as u128 + 2;
    geofield_core::check_memory(
        || format!("lags = {}: the variogram's bins", spec.lags),
        spec.lags as u128
            * (copies * std::mem::size_of::<Acc>() as u128 + std::mem::size_of::<LagBin>() as u128),
    )?;
    let max_lag = match spec.max_lag {
        Some(m) if m.is_finite() && m > 0.0 => m,
        Some(m) => {
            return Err(GeofieldError::Invalid(format!(
                "max lag {m} must be finite and > 0"
            )));
        }
        None => {
            let (mut x0, mut x1, mut y0, mut y1) = (xs[0], xs[0], ys[0], ys[0]);
            for (&x, &y) in xs.iter().zip(ys) {
                x0 = x0.min(x);
                x1 = x1.max(x);
                y0 = y0.min(y);
                y1 = y1.max(y);
            }
            let d = (x1 - x0).hypot(y1 - y0) / 3.0;
            if d > 0.0 {
                d
            } else {
                return Err(GeofieldError::Invalid(
                    "all samples are at one location: no separation to bin".into(),
                ));
            }
        }
    };
    let dir = match spec.direction {
        None => None,
        Some((az, tol)) if az.is_finite() && tol.is_finite() && tol > 0.0 && tol <= 90.0 => {
            Some((az.rem_euclid(180.0), tol))
        }
        Some((az, tol)) => {
            return Err(GeofieldError::Invalid(format!(
                "direction {az}° ± {tol}°: the azimuth must be finite and the tolerance in (0, 90]"
            )));
        }
    };
    let lags = spec.lags;
    let width = max_lag / lags as f64;
    // Each pair (i, j > i) goes to its lag bin.
    let accs = pair_sums(xs, ys, values, lags, |dx, dy| {
        let h = dx.hypot(dy);
        if h > max_lag {
            return None;
        }
        if let Some((az, tol)) = dir {
            if h == 0.0 {
                return None;
            }
            // Azimuth clockwise from north, undirected.
            let a = dx.atan2(dy).to_degrees().rem_euclid(180.0);
            let diff = (a - az).abs();
            if diff.min(180.0 - diff) > tol {
                return None;
            }
        }
        Some(((h / width) as usize).min(lags - 1))
    });
    Ok(accs
        .iter()
        .enumerate()
        .map(|(k, a)| {
            let (lo, hi) = (k as f64 * width, (k + 1) as f64 * width);
            let nf = a.n as f64;
            let gamma = a.gamma(estimator);
            LagBin {
                lo,
                hi,
                distance: if a.n == 0 { 0.5 * (lo + hi) } else { a.h / nf },
                gamma,
                pairs: a.n,
            }
        })
        .collect())
}

/// A fitted variogram and its weighted residual sum of squares.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Fit {
    pub variogram: Variogram,
    pub wrss: f64,
}

/// How far beyond the largest lag a fitted range may reach before the fit is suspect: the bins
/// then only see the rising part of the model, so sill and range trade off against each other
/// and neither is determined by the data.
pub const RANGE_BEYOND_LAGS_FACTOR: f64 = 2.0;

impl Fit {
    /// Warnings about the fit against the `bins` it was fitted to: a practical range more than
    /// [`RANGE_BEYOND_LAGS_FACTOR`] times the largest lag.
    pub fn warnings(&self, bins: &[LagBin]) -> Vec<String> {
        let Some(largest) = bins.iter().map(|b| b.hi).reduce(f64::max) else {
            return Vec::new();
        };
        self.variogram
            .structures
            .iter()
            .filter(|s| s.model.is_bounded() && s.range > RANGE_BEYOND_LAGS_FACTOR * largest)
            .map(|s| {
                format!(
                    "the fitted {} range {:.4e} m is {:.1}x the largest lag ({:.4e} m): the bins \
                     do not reach the sill, so sill and range are poorly determined; raise the \
                     largest lag or fix the range",
                    s.model.name(),
                    s.range,
                    s.range / largest,
                    largest
                )
            })
            .collect()
    }
}

/// The empirical variogram of every surface of `set` over the samples where it is present, all
/// on the same bins: without a `max_lag`, a third of the whole set's bounding-box diagonal.
pub fn surface_bins(
    set: &super::SampleSet,
    spec: &LagSpec,
    estimator: Estimator,
) -> Result<Vec<Vec<LagBin>>, GeofieldError> {
    let mut spec = *spec;
    if spec.max_lag.is_none() {
        spec.max_lag = Some(super::global::bbox_diagonal(&set.xs, &set.ys) / 3.0);
    }
    set.surfaces
        .iter()
        .map(|s| {
            let keep: Vec<usize> = (0..set.len()).filter(|&i| !s.values[i].is_nan()).collect();
            let xs: Vec<f64> = keep.iter().map(|&i| set.xs[i]).collect();
            let ys: Vec<f64> = keep.iter().map(|&i| set.ys[i]).collect();
            let vs: Vec<f64> = keep.iter().map(|&i| s.values[i]).collect();
            empirical(&xs, &ys, &vs, &spec, estimator).map_err(|e| match e {
                GeofieldError::Invalid(m) => GeofieldError::Invalid(format!("{}: {m}", s.name)),
                e => e,
            })
        })
        .collect()
}

/// Pools variograms computed on the same bins: per bin, the pair-weighted mean of γ̂ and of the
/// distance, and the total pair count (γ̂ NaN where no variogram has a pair).
pub fn pool(variograms: &[Vec<LagBin>]) -> Vec<LagBin> {
    let Some(first) = variograms.first() else {
        return vec![];
    };
    first
        .iter()
        .enumerate()
        .map(|(k, b)| {
            let (mut n, mut g, mut d) = (0u64, 0.0, 0.0);
            for x in variograms
                .iter()
                .filter_map(|v| v.get(k))
                .filter(|x| x.pairs > 0)
            {
                n += x.pairs;
                g += x.pairs as f64 * x.gamma;
                d += x.pairs as f64 * x.distance;
            }
            LagBin {
                pairs: n,
                gamma: if n > 0 { g / n as f64 } else { f64::NAN },
                distance: if n > 0 { d / n as f64 } else { b.distance },
                ..*b
            }
        })
        .collect()
}

/// The bins a fit uses, as (distance, γ̂, weight): those with pairs, a finite γ̂ and a distance
/// > 0, weighted by pairs / h² (gstat's `fit.method = 7`); an error with fewer than `need`.
pub(super) fn fit_points(
    bins: &[LagBin],
    need: usize,
) -> Result<Vec<(f64, f64, f64)>, GeofieldError> {
    let pts: Vec<(f64, f64, f64)> = bins
        .iter()
        .filter(|b| b.pairs > 0 && b.gamma.is_finite() && b.distance > 0.0)
        .map(|b| {
            (
                b.distance,
                b.gamma,
                b.pairs as f64 / (b.distance * b.distance),
            )
        })
        .collect();
    if pts.len() < need {
        return Err(GeofieldError::Invalid(format!(
            "{} lag bins with pairs: fitting needs at least {need}",
            pts.len()
        )));
    }
    Ok(pts)
}

/// Weighted least-squares fit of `model` (one structure plus a nugget, or no nugget with
/// `fit_nugget = false`) to the bins with pairs; see the module docs.
pub fn fit(model: Model, bins: &[LagBin], fit_nugget: bool) -> Result<Fit, GeofieldError> {
    let pts = fit_points(bins, if fit_nugget { 3 } else { 2 })?;
    let (hmin, hmax) = pts.iter().fold((f64::INFINITY, 0.0f64), |(a, b), p| {
        (a.min(p.0), b.max(p.0))
    });
    // For a fixed shape g (range / exponent fixed), the best (nugget, sill) >= 0.
    let solve = |g: &dyn Fn(f64) -> f64| -> (f64, f64, f64) {
        let (mut sw, mut sg, mut sgg, mut sy, mut sgy) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for &(h, y, w) in &pts {
            let gv = g(h);
            sw += w;
            sg += w * gv;
            sgg += w * gv * gv;
            sy += w * y;
            sgy += w * gv * y;
        }
        let wrss = |c0: f64, c: f64| {
            pts.iter()
                .map(|&(h, y, w)| {
                    let r = y - c0 - c * g(h);
                    w * r * r
                })
                .sum::<f64>()
        };
        let mut cands = vec![];
        if fit_nugget {
            let det = sw * sgg - sg * sg;
            if det.abs() > 1e-300 {
                let c0 = (sy * sgg - sg * sgy) / det;
                let c = (sw * sgy - sg * sy) / det;
                if c0 >= 0.0 && c >= 0.0 {
                    cands.push((c0, c));
                }
            }
            cands.push((sy / sw, 0.0));
        }
        cands.push((0.0, if sgg > 0.0 { (sgy / sgg).max(0.0) } else { 0.0 }));
        cands.into_iter().map(|(c0, c)| (c0, c, wrss(c0, c))).fold(
            (0.0, 0.0, f64::INFINITY),
            |b, x| if x.2 < b.2 { x } else { b },
        )
    };
    let make = |p: f64, c0: f64, c: f64| -> Variogram {
        let s = match model {
            Model::Power { .. } => Structure::new(Model::Power { exponent: p }, c, 1.0),
            Model::Linear => Structure::new(Model::Linear, c, 1.0),
            m => Structure::new(m, c, p),
        };
        Variogram {
            nugget: c0,
            structures: vec![s],
        }
    };
    // The searched parameter: the range (bounded models) or the exponent (power).
    let eval = |p: f64| -> (f64, f64, f64) {
        let unit = make(p, 0.0, 1.0);
        solve(&|h| unit.gamma(h))
    };
    let (lo, hi, log) = match model {
        Model::Linear => {
            let (c0, c, wrss) = eval(1.0);
            let variogram = make(1.0, c0, c);
            return Ok(Fit { variogram, wrss });
        }
        Model::Power { .. } => (0.01, 1.99, false),
        _ => (hmin / 10.0, hmax * 10.0, true),
    };
    let to = |t: f64| {
        if log {
            (lo.ln() + t * (hi.ln() - lo.ln())).exp()
        } else {
            lo + t * (hi - lo)
        }
    };
    let steps = 240;
    let mut best_t = 0.0;
    let mut best = f64::INFINITY;
    for s in 0..=steps {
        let t = s as f64 / steps as f64;
        let r = eval(to(t)).2;
        if r < best {
            best = r;
            best_t = t;
        }
    }
    // Golden sections on [t - dt, t + dt].
    let dt = 1.0 / steps as f64;
    let (mut a, mut b) = ((best_t - dt).max(0.0), (best_t + dt).min(1.0));
    let phi = 0.5 * (5f64.sqrt() - 1.0);
    let mut c = b - phi * (b - a);
    let mut d = a + phi * (b - a);
    let (mut fc, mut fd) = (eval(to(c)).2, eval(to(d)).2);
    for _ in 0..80 {
        if fc < fd {
            b = d;
            d = c;
            fd = fc;
            c = b - phi * (b - a);
            fc = eval(to(c)).2;
        } else {
            a = c;
            c = d;
            fc = fd;
            d = a + phi * (b - a);
            fd = eval(to(d)).2;
        }
    }
    let t = if fc < fd { c } else { d };
    let t = if eval(to(t)).2 <= best { t } else { best_t };
    let p = to(t);
    let (c0, cc, wrss) = eval(p);
    let variogram = make(p, c0, cc);
    variogram.validate()?;
    Ok(Fit { variogram, wrss })
}

mod map;
pub use map::{VariogramMap, variogram_map};

#[cfg(test)]
mod tests;
