//! Global (unique-neighbourhood) simple and ordinary kriging of one or many surfaces sharing
//! the same sample locations, by dual kriging, with the kriging variance (CPU, f64).
//!
//! # Method (note §4.3–4.5)
//!
//! Coordinates are centred (their mean subtracted, in f64) before anything else. C is the n × n
//! covariance matrix of the samples, C(h) = C(0) − γ(h) with C(0) the total sill, so the diagonal
//! holds the full sill even with a nugget; it is factored once, C = L Lᵀ (faer's Cholesky).
//!
//! - Ordinary: u = C⁻¹1, s = 1ᵀu; per surface z: β = uᵀz / s (the GLS mean) and
//!   α = C⁻¹(z − β1). Simple (known mean m): β = m, α = C⁻¹(z − m).
//! - Prediction at x₀: z* = kᵀα + β with kᵢ = C(|x₀ − xᵢ|): n covariance evaluations and 2nH
//!   flops, no solve.
//! - Variance: w = L⁻¹k, g = L⁻¹1; ordinary σ² = C(0) − wᵀw + (1 − gᵀw)² / s, simple
//!   σ² = C(0) − wᵀw; clamped at 0.
//!
//! **Exact at the samples, even with a nugget** (the gstat and PyKrige convention): a distance of
//! at most ε = 1e-12 × (the samples' bounding-box diagonal) counts as 0, so k there is the
//! sample's column of C and the prediction is the datum, the variance 0 (to rounding).
//!
//! Samples at identical coordinates are merged (mean value per surface) and reported in
//! [`GlobalKriging::merged`]; a covariance matrix that is not positive definite (near-duplicate
//! samples without a nugget, an invalid model) is an error naming the closest pair of samples.

use faer::linalg::solvers::Solve;
use faer::{Mat, Side};
use rayon::prelude::*;

use super::variogram::Variogram;
use crate::GeofieldError;

/// Which kriging.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    /// Unknown constant mean (the paper's).
    Ordinary,
    /// Known mean.
    Simple { mean: f64 },
}

/// A kriging system factored once, ready to predict any number of nodes.
pub struct GlobalKriging {
    kind: Kind,
    variogram: Variogram,
    c0: f64,
    eps: f64,
    centre: (f64, f64),
    /// Centred coordinates of the (merged) samples.
    xs: Vec<f64>,
    ys: Vec<f64>,
    /// L (lower), row-major n × n, for the variance.
    l: Vec<f64>,
    /// α: n × H, sample-major (α[i·H + h]).
    alpha: Vec<f64>,
    /// β per surface.
    beta: Vec<f64>,
    /// g = L⁻¹1 and s = 1ᵀC⁻¹1 (ordinary).
    g: Vec<f64>,
    s: f64,
    surfaces: usize,
    /// Groups of input sample indices merged into one (identical coordinates).
    pub merged: Vec<Vec<usize>>,
}

impl GlobalKriging {
    /// Factors the system for samples (`xs`, `ys`) with `values[h][i]` the value of surface h at
    /// sample i (all finite).
    pub fn new(
        xs: &[f64],
        ys: &[f64],
        values: &[Vec<f64>],
        variogram: &Variogram,
        kind: Kind,
    ) -> Result<Self, GeofieldError> {
        variogram.validate()?;
        if !variogram.is_bounded() {
            return Err(GeofieldError::Unsupported(
                "kriging with an unbounded variogram (power, linear) needs the variogram form, \
                 which is not implemented yet; use a bounded model"
                    .into(),
            ));
        }
        let n_in = xs.len();
        if ys.len() != n_in || values.iter().any(|v| v.len() != n_in) {
            return Err(GeofieldError::Invalid(
                "the coordinates and every surface's values must have one entry per sample".into(),
            ));
        }
        if values.is_empty() {
            return Err(GeofieldError::Invalid("no surface to krige".into()));
        }
        let need = if matches!(kind, Kind::Ordinary) { 2 } else { 1 };
        if n_in < need {
            return Err(GeofieldError::Invalid(format!(
                "{n_in} samples: {} kriging needs at least {need}",
                if need == 2 { "ordinary" } else { "simple" }
            )));
        }
        for i in 0..n_in {
            if !(xs[i].is_finite() && ys[i].is_finite()) {
                return Err(GeofieldError::Invalid(format!(
                    "sample {i} has a non-finite coordinate"
                )));
            }
            if let Some(h) = values.iter().position(|v| !v[i].is_finite()) {
                return Err(GeofieldError::Invalid(format!(
                    "sample {i} has a non-finite value in surface {}",
                    h + 1
                )));
            }
        }
        if let Kind::Simple { mean } = kind
            && !mean.is_finite()
        {
            return Err(GeofieldError::Invalid(format!(
                "mean = {mean} must be finite"
            )));
        }
        // Merge identical coordinates (sorted by (x, y), ties kept together).
        let mut order: Vec<usize> = (0..n_in).collect();
        order.sort_by(|&a, &b| xs[a].total_cmp(&xs[b]).then(ys[a].total_cmp(&ys[b])));
        let mut groups: Vec<Vec<usize>> = Vec::new();
        for &i in &order {
            match groups.last_mut() {
                Some(g) if xs[g[0]] == xs[i] && ys[g[0]] == ys[i] => g.push(i),
                _ => groups.push(vec![i]),
            }
        }
        groups.sort_by_key(|g| g[0]);
        let n = groups.len();
        let h_count = values.len();
        let cx = groups.iter().map(|g| xs[g[0]]).sum::<f64>() / n as f64;
        let cy = groups.iter().map(|g| ys[g[0]]).sum::<f64>() / n as f64;
        let px: Vec<f64> = groups.iter().map(|g| xs[g[0]] - cx).collect();
        let py: Vec<f64> = groups.iter().map(|g| ys[g[0]] - cy).collect();
        let z: Vec<Vec<f64>> = values
            .iter()
            .map(|v| {
                groups
                    .iter()
                    .map(|g| g.iter().map(|&i| v[i]).sum::<f64>() / g.len() as f64)
                    .collect()
            })
            .collect();
        let first: Vec<usize> = groups.iter().map(|g| g[0]).collect();
        let merged: Vec<Vec<usize>> = groups.into_iter().filter(|g| g.len() > 1).collect();
        let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
        for i in 0..n {
            x0 = x0.min(px[i]);
            x1 = x1.max(px[i]);
            y0 = y0.min(py[i]);
            y1 = y1.max(py[i]);
        }
        let eps = 1e-12 * (x1 - x0).hypot(y1 - y0);
        let c0 = variogram.sill();
        let cov = |h: f64| {
            if h <= eps {
                c0
            } else {
                c0 - variogram.gamma(h)
            }
        };
        let cmat = Mat::<f64>::from_fn(n, n, |i, j| cov((px[i] - px[j]).hypot(py[i] - py[j])));
        let llt = cmat.llt(Side::Lower).map_err(|_| {
            let mut best = (f64::INFINITY, 0, 0);
            for i in 0..n {
                for j in i + 1..n {
                    let d = (px[i] - px[j]).hypot(py[i] - py[j]);
                    if d < best.0 {
                        best = (d, i, j);
                    }
                }
            }
            GeofieldError::Invalid(format!(
                "the kriging system is singular (the covariance matrix is not positive \
                 definite); the closest samples are {} and {}, {:.3e} apart: merge them or add \
                 a nugget",
                first[best.1], first[best.2], best.0
            ))
        })?;
        let ones = Mat::<f64>::from_fn(n, 1, |_, _| 1.0);
        let u = llt.solve(&ones);
        let s = (0..n).map(|i| u[(i, 0)]).sum::<f64>();
        let beta: Vec<f64> = z
            .iter()
            .map(|zh| match kind {
                Kind::Ordinary => (0..n).map(|i| u[(i, 0)] * zh[i]).sum::<f64>() / s,
                Kind::Simple { mean } => mean,
            })
            .collect();
        let rhs = Mat::<f64>::from_fn(n, h_count, |i, h| z[h][i] - beta[h]);
        let a = llt.solve(&rhs);
        let mut alpha = vec![0.0; n * h_count];
        for i in 0..n {
            for h in 0..h_count {
                alpha[i * h_count + h] = a[(i, h)];
            }
        }
        let lm = llt.L();
        let mut l = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..=i {
                l[i * n + j] = lm[(i, j)];
            }
        }
        let mut g = vec![1.0; n];
        forward(&l, n, &mut g);
        Ok(GlobalKriging {
            kind,
            variogram: variogram.clone(),
            c0,
            eps,
            centre: (cx, cy),
            xs: px,
            ys: py,
            l,
            alpha,
            beta,
            g,
            s,
            surfaces: h_count,
            merged,
        })
    }

    /// Number of surfaces.
    pub fn surfaces(&self) -> usize {
        self.surfaces
    }

    /// Number of (merged) samples.
    pub fn samples(&self) -> usize {
        self.xs.len()
    }

    fn k(&self, x: f64, y: f64, k: &mut [f64]) {
        let (qx, qy) = (x - self.centre.0, y - self.centre.1);
        for (i, ki) in k.iter_mut().enumerate() {
            let h = (self.xs[i] - qx).hypot(self.ys[i] - qy);
            *ki = if h <= self.eps {
                self.c0
            } else {
                self.c0 - self.variogram.gamma(h)
            };
        }
    }

    /// Predictions of every surface at (x, y) into `out` (length = surfaces), and the variance
    /// when `variance` is set; `k` is scratch of length n.
    fn at(&self, x: f64, y: f64, k: &mut [f64], out: &mut [f64], variance: bool) -> f64 {
        self.k(x, y, k);
        let hc = self.surfaces;
        out.copy_from_slice(&self.beta);
        for (i, &ki) in k.iter().enumerate() {
            let a = &self.alpha[i * hc..(i + 1) * hc];
            for (o, &ai) in out.iter_mut().zip(a) {
                *o += ki * ai;
            }
        }
        if !variance {
            return f64::NAN;
        }
        let n = k.len();
        forward(&self.l, n, k);
        let ww: f64 = k.iter().map(|w| w * w).sum();
        let v = match self.kind {
            Kind::Ordinary => {
                let gw: f64 = self.g.iter().zip(k.iter()).map(|(g, w)| g * w).sum();
                self.c0 - ww + (1.0 - gw) * (1.0 - gw) / self.s
            }
            Kind::Simple { .. } => self.c0 - ww,
        };
        v.max(0.0)
    }

    /// Predictions (surface-major: `pred[h][p]`) and, if asked, variances at the points.
    pub fn predict(
        &self,
        px: &[f64],
        py: &[f64],
        variance: bool,
    ) -> (Vec<Vec<f64>>, Option<Vec<f64>>) {
        let m = px.len().min(py.len());
        let hc = self.surfaces;
        let n = self.samples();
        let rows: Vec<(Vec<f64>, f64)> = (0..m)
            .into_par_iter()
            .map_init(
                || vec![0.0; n],
                |k, p| {
                    let mut out = vec![0.0; hc];
                    let v = self.at(px[p], py[p], k, &mut out, variance);
                    (out, v)
                },
            )
            .collect();
        let mut pred = vec![vec![0.0; m]; hc];
        for (p, (o, _)) in rows.iter().enumerate() {
            for h in 0..hc {
                pred[h][p] = o[h];
            }
        }
        let var = variance.then(|| rows.iter().map(|r| r.1).collect());
        (pred, var)
    }
}

/// Leave-one-out cross-validation of a [`GlobalKriging`] (per merged sample).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct CrossValidation {
    /// `error[h][i]` = zᵢ − z*₋ᵢ: the datum minus the prediction from all other samples.
    pub error: Vec<Vec<f64>>,
    /// The kriging variance of each left-out prediction.
    pub variance: Vec<f64>,
    /// Per surface: root mean square error, mean error, mean and mean square of the
    /// standardised errors e / σ (≈ 0 and ≈ 1 for a well-fitted model).
    pub rmse: Vec<f64>,
    pub mean_error: Vec<f64>,
    pub mean_standardised: Vec<f64>,
    pub mean_square_standardised: Vec<f64>,
}

impl GlobalKriging {
    /// Leave-one-out cross-validation in closed form (Dubrule 1983): with Q the sample block of
    /// the inverse of the kriging matrix (C⁻¹ for simple kriging, C⁻¹ − uuᵀ/s for ordinary),
    /// eᵢ = αᵢ / Qᵢᵢ and σ²₋ᵢ = 1 / Qᵢᵢ, for every surface at once; O(n³) once instead of n
    /// refits. The model is held fixed. Samples merged at identical coordinates count as one.
    pub fn cross_validate(&self) -> CrossValidation {
        let n = self.samples();
        let hc = self.surfaces;
        // (C⁻¹)ⱼⱼ = |L⁻¹ eⱼ|² (C⁻¹ = L⁻ᵀL⁻¹): column j of L⁻¹ by a forward solve that starts
        // at row j (the rows above are zero).
        let diag: Vec<f64> = (0..n)
            .into_par_iter()
            .map(|j| {
                let mut e = vec![0.0; n];
                e[j] = 1.0;
                for i in j..n {
                    let row = &self.l[i * n + j..i * n + i];
                    let s: f64 = row.iter().zip(&e[j..i]).map(|(a, x)| a * x).sum();
                    e[i] = (e[i] - s) / self.l[i * n + i];
                }
                e[j..].iter().map(|v| v * v).sum()
            })
            .collect();
        // u = C⁻¹1 = L⁻ᵀ g.
        let mut u = self.g.clone();
        for i in (0..n).rev() {
            let s: f64 = (i + 1..n).map(|k| self.l[k * n + i] * u[k]).sum();
            u[i] = (u[i] - s) / self.l[i * n + i];
        }
        let q: Vec<f64> = (0..n)
            .map(|i| match self.kind {
                Kind::Ordinary => diag[i] - u[i] * u[i] / self.s,
                Kind::Simple { .. } => diag[i],
            })
            .collect();
        let variance: Vec<f64> = q.iter().map(|&v| 1.0 / v).collect();
        let error: Vec<Vec<f64>> = (0..hc)
            .map(|h| (0..n).map(|i| self.alpha[i * hc + h] / q[i]).collect())
            .collect();
        let nf = n as f64;
        let rmse = error
            .iter()
            .map(|e| (e.iter().map(|v| v * v).sum::<f64>() / nf).sqrt())
            .collect();
        let mean_error = error.iter().map(|e| e.iter().sum::<f64>() / nf).collect();
        let std = |e: &Vec<f64>| -> Vec<f64> {
            e.iter().zip(&variance).map(|(v, s)| v / s.sqrt()).collect()
        };
        let mean_standardised = error
            .iter()
            .map(|e| std(e).iter().sum::<f64>() / nf)
            .collect();
        let mean_square_standardised = error
            .iter()
            .map(|e| std(e).iter().map(|v| v * v).sum::<f64>() / nf)
            .collect();
        CrossValidation {
            error,
            variance,
            rmse,
            mean_error,
            mean_standardised,
            mean_square_standardised,
        }
    }
}

/// Solves L y = b in place (L lower triangular, row-major n × n).
fn forward(l: &[f64], n: usize, b: &mut [f64]) {
    for i in 0..n {
        let row = &l[i * n..i * n + i];
        let s: f64 = row.iter().zip(&b[..i]).map(|(a, x)| a * x).sum();
        b[i] = (b[i] - s) / l[i * n + i];
    }
}

#[cfg(test)]
mod tests;
