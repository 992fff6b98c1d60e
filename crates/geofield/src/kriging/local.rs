//! Local (moving-neighbourhood) kriging: each node's system holds only its k nearest samples,
//! optionally within a radius (gstat `nmax`/`maxdist`, PyKrige `n_closest_points`).
//!
//! # Method (note §4.6)
//!
//! Neighbours: the k smallest keys (d², index) in kriging space, d² = (xᵢ − x)² + (yᵢ − y)² in
//! f64 (the exact k-NN of [`crate::neighbors`]: ties go to the lower sample index, the radius
//! test is d ≤ r). Per node, with the m ≤ k neighbours: C = L Lᵀ (m × m), w = L⁻¹k,
//! G = L⁻¹F, GᵀG = R Rᵀ, y = L⁻¹z; β = (GᵀG)⁻¹Gᵀy, z* = wᵀ(y − Gβ) + f(x₀)ᵀβ and
//! σ² = C(0) − wᵀw + |R⁻¹(f(x₀) − Gᵀw)|² (simple kriging: z* = m + wᵀL⁻¹(z − m),
//! σ² = C(0) − wᵀw). A node with fewer neighbours than the kind needs (1, or the drift's 3 or 6),
//! or whose neighbours cannot carry the drift (collinear), gets NaN, as gstat's `nmin`.
//!
//! With k ≥ n and no radius this is global kriging, to rounding. Local kriging is not global
//! kriging: the surface jumps where a node's neighbour set changes.
//!
//! Cost per node: a k-NN query, m(m+1)/2 covariances, m³/6 + m²(H + p) flops.

#![allow(clippy::needless_range_loop)] // index loops over small dense systems read as the formulas

use rayon::prelude::*;

use super::global::{invert_lower, lower_mul, small_cholesky};
use super::params::{Kind, KrigeOptions};
use super::samples::{Merged, SampleSet};
use super::space::{Covariance, Frame, Support, eps_for};
use super::variogram::Variogram;
use crate::neighbors::{IndexKind, KnnQuery, knn_cpu as knn};
use crate::{Cancel, GeofieldError};

/// Local kriging of the surfaces of one sample set.
pub struct LocalKriging {
    pub(crate) kind: Kind,
    pub(crate) frame: Frame,
    pub(crate) cov: Covariance,
    /// Points or blocks ([`super::params::Block`]).
    pub(crate) support: Support,
    pub(crate) xs: Vec<f64>,
    pub(crate) ys: Vec<f64>,
    /// Values, sample-major (z[i·H + h]).
    pub(crate) z: Vec<f64>,
    pub(crate) k: usize,
    pub(crate) radius: Option<f64>,
    pub(crate) surfaces: usize,
    pub merged: Vec<Vec<usize>>,
    pub first: Vec<usize>,
}

impl LocalKriging {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn from_merged(
        _set: &SampleSet,
        m: &Merged,
        frame: Frame,
        variogram: &Variogram,
        opts: &KrigeOptions,
        k: usize,
        radius: Option<f64>,
        external: Option<&std::sync::Arc<super::drift::ExternalDrift>>,
    ) -> Result<Self, GeofieldError> {
        let kind = opts.kind;
        let n = m.xs.len();
        if n < kind.min_samples() {
            return Err(GeofieldError::Invalid(format!(
                "{n} distinct sample location(s): {} kriging needs at least {}",
                kind.name(),
                kind.min_samples()
            )));
        }
        if !variogram.is_bounded() {
            return Err(GeofieldError::Unsupported(
                "local kriging with a variogram without a sill (power, linear); use global \
                 kriging or a bounded model"
                    .into(),
            ));
        }
        let (xs, ys): (Vec<f64>, Vec<f64>) =
            m.xs.iter()
                .zip(&m.ys)
                .map(|(&x, &y)| frame.apply(x, y))
                .unzip();
        let eps = eps_for(super::global::bbox_diagonal(&xs, &ys));
        let cov = Covariance::new(variogram, eps, opts.nugget, 0.0);
        let hc = m.values.len();
        let mut z = vec![0.0; n * hc];
        for h in 0..hc {
            for i in 0..n {
                z[i * hc + h] = m.values[h][i];
            }
        }
        Ok(LocalKriging {
            support: Support::new(&frame, &cov, opts.block.as_ref(), external),
            kind,
            frame,
            cov,
            xs,
            ys,
            z,
            k,
            radius,
            surfaces: hc,
            merged: m.merged.clone(),
            first: m.first.clone(),
        })
    }

    pub fn samples(&self) -> usize {
        self.xs.len()
    }

    /// The k-NN rows of kriging-space nodes.
    pub(crate) fn neighbours(
        &self,
        nx: &[f64],
        ny: &[f64],
    ) -> Result<crate::neighbors::Neighbors, GeofieldError> {
        let pts: Vec<f64> = self
            .xs
            .iter()
            .zip(&self.ys)
            .flat_map(|(&x, &y)| [x, y])
            .collect();
        let qs: Vec<f64> = nx.iter().zip(ny).flat_map(|(&x, &y)| [x, y]).collect();
        let q = KnnQuery {
            k: self.k,
            radius: self.radius,
            exclude_self: false,
        };
        knn(&pts, Some(&qs), 2, &q, IndexKind::Auto)
    }

    /// Predictions (`pred[h][j]`) and variances at kriging-space nodes. Consecutive nodes with
    /// the same neighbour set share one factored system (the set changes rarely from one node
    /// to the next along a grid row): per node then only k covariances and 2kH flops (plus k²
    /// for the variance).
    pub(crate) fn eval_nodes(
        &self,
        nx: &[f64],
        ny: &[f64],
        variance: bool,
        cancel: &Cancel,
    ) -> Result<super::systems::Evaluated, GeofieldError> {
        let nb = self.neighbours(nx, ny)?;
        let hc = self.surfaces;
        let m = nx.len();
        const CHUNK: usize = 512;
        let chunks: Vec<(Vec<f64>, Vec<f64>)> = (0..m.div_ceil(CHUNK))
            .into_par_iter()
            .map(|c| {
                let (j0, j1) = (c * CHUNK, ((c + 1) * CHUNK).min(m));
                let mut pred = vec![0.0; hc * (j1 - j0)];
                let mut var = vec![f64::NAN; if variance { j1 - j0 } else { 0 }];
                let mut cached: Option<LocalSystem> = None;
                let mut ids: Vec<usize> = Vec::with_capacity(self.k);
                let mut out = vec![0.0; hc];
                // Chunks not started once cancelled are skipped; the caller checks the token.
                if cancel.is_cancelled() {
                    return (pred, var);
                }
                for j in j0..j1 {
                    let (idx, _) = nb.row(j);
                    ids.clear();
                    ids.extend(idx.iter().filter(|&&i| i >= 0).map(|&i| i as usize));
                    ids.sort_unstable();
                    if cached.as_ref().is_none_or(|c| c.ids != ids) {
                        cached = Some(self.factor(&ids));
                    }
                    let v = match &cached {
                        Some(sys) => sys.eval(self, nx[j], ny[j], variance, &mut out),
                        None => f64::NAN,
                    };
                    for h in 0..hc {
                        pred[h * (j1 - j0) + (j - j0)] = out[h];
                    }
                    if variance {
                        var[j - j0] = v;
                    }
                }
                (pred, var)
            })
            .collect();
        let mut pred = vec![Vec::with_capacity(m); hc];
        let mut var = variance.then(|| Vec::with_capacity(m));
        for (p, v) in chunks {
            let t = p.len() / hc.max(1);
            for (h, ph) in pred.iter_mut().enumerate() {
                ph.extend_from_slice(&p[h * t..(h + 1) * t]);
            }
            if let Some(var) = var.as_mut() {
                var.extend_from_slice(&v);
            }
        }
        Ok((pred, var))
    }

    /// The dual system of the samples `ids` (ascending).
    fn factor(&self, ids: &[usize]) -> LocalSystem {
        let hc = self.surfaces;
        let m = ids.len();
        let p = self.kind.drift_terms();
        let mut sys = LocalSystem {
            ids: ids.to_vec(),
            usable: false,
            xs: ids.iter().map(|&i| self.xs[i]).collect(),
            ys: ids.iter().map(|&i| self.ys[i]).collect(),
            l: vec![0.0; m * m],
            alpha: vec![0.0; m * hc],
            beta: vec![0.0; p.max(1) * hc],
            g: vec![0.0; p * m],
            rinv: vec![],
            p,
        };
        if m < self.kind.min_samples() {
            return sys;
        }
        // C row by row with the vectorised covariance.
        let mut d = vec![0.0; m];
        let mut c = vec![0.0; m];
        for a in 0..m {
            self.cov.row(
                sys.xs[a],
                sys.ys[a],
                &sys.xs[..a],
                &sys.ys[..a],
                &mut d[..a],
                &mut c[..a],
            );
            for b in 0..a {
                // The system's off-diagonal: coincident samples were merged, so C(0) is the sill.
                sys.l[a * m + b] = if d[b] <= self.cov.eps {
                    self.cov.c0
                } else {
                    c[b]
                };
            }
            sys.l[a * m + a] = self.cov.c0;
        }
        if !cholesky_in_place(&mut sys.l, m) {
            return sys;
        }
        let l = &sys.l;
        let fwd = |b: &mut [f64]| {
            for i in 0..m {
                let s: f64 = (0..i).map(|c| l[i * m + c] * b[c]).sum();
                b[i] = (b[i] - s) / l[i * m + i];
            }
        };
        let bwd = |b: &mut [f64]| {
            for i in (0..m).rev() {
                let s: f64 = (i + 1..m).map(|c| l[c * m + i] * b[c]).sum();
                b[i] = (b[i] - s) / l[i * m + i];
            }
        };
        let offset = match self.kind {
            Kind::Simple { mean } => mean,
            _ => 0.0,
        };
        let mut f = [0.0; 6];
        for (a, &i) in ids.iter().enumerate() {
            self.support
                .point_drift(&self.frame, self.xs[i], self.ys[i], p, &mut f);
            for q in 0..p {
                sys.g[q * m + a] = f[q];
            }
        }
        for q in 0..p {
            fwd(&mut sys.g[q * m..(q + 1) * m]);
        }
        if p > 0 {
            let mut mtm = vec![0.0; p * p];
            for a in 0..p {
                for b in 0..=a {
                    mtm[a * p + b] = (0..m).map(|i| sys.g[a * m + i] * sys.g[b * m + i]).sum();
                }
            }
            let Some(r) = small_cholesky(&mtm, p) else {
                return sys;
            };
            sys.rinv = invert_lower(&r, p);
        }
        let mut y = vec![0.0; m];
        for h in 0..hc {
            for (a, &i) in ids.iter().enumerate() {
                y[a] = self.z[i * hc + h] - offset;
            }
            fwd(&mut y);
            if p > 0 {
                let t: Vec<f64> = (0..p)
                    .map(|q| (0..m).map(|i| sys.g[q * m + i] * y[i]).sum())
                    .collect();
                let s = lower_mul(&sys.rinv, p, &t);
                for q in 0..p {
                    let b: f64 = (q..p).map(|k| sys.rinv[k * p + q] * s[k]).sum();
                    sys.beta[q * hc + h] = b;
                }
                for i in 0..m {
                    let gb: f64 = (0..p)
                        .map(|q| sys.g[q * m + i] * sys.beta[q * hc + h])
                        .sum();
                    y[i] -= gb;
                }
            } else {
                sys.beta[h] = offset;
            }
            bwd(&mut y);
            for a in 0..m {
                sys.alpha[a * hc + h] = y[a];
            }
        }
        sys.usable = true;
        sys
    }

    /// One node's local system on the samples `ids`: (predictions per surface, variance).
    pub(crate) fn solve_node(&self, x: f64, y: f64, ids: &[usize]) -> (Vec<f64>, f64) {
        let mut out = vec![0.0; self.surfaces];
        let v = self.factor(ids).eval(self, x, y, true, &mut out);
        (out, v)
    }
}

/// A factored local system: the dual coefficients of one neighbour set.
struct LocalSystem {
    /// The samples (ascending input indices) and their kriging-space coordinates.
    ids: Vec<usize>,
    usable: bool,
    xs: Vec<f64>,
    ys: Vec<f64>,
    /// L (row-major lower), α (m × H), β (p × H; simple: the mean), G = L⁻¹F (p × m), R⁻¹.
    l: Vec<f64>,
    alpha: Vec<f64>,
    beta: Vec<f64>,
    g: Vec<f64>,
    rinv: Vec<f64>,
    p: usize,
}

impl LocalSystem {
    /// Predictions into `out` (per surface) and the variance (NaN unless asked).
    fn eval(&self, lk: &LocalKriging, x: f64, y: f64, variance: bool, out: &mut [f64]) -> f64 {
        let hc = lk.surfaces;
        if !self.usable {
            out.fill(f64::NAN);
            return f64::NAN;
        }
        let m = self.ids.len();
        let mut d = [0.0; 64];
        let mut k = [0.0; 64];
        let mut t = [0.0; 64];
        lk.support.row(
            &lk.cov,
            x,
            y,
            &self.xs,
            &self.ys,
            &mut d[..m],
            &mut t[..m],
            &mut k[..m],
        );
        let p = self.p;
        let mut f = [0.0; 6];
        lk.support.drift(&lk.frame, x, y, p.max(1), &mut f);
        if p == 0 {
            f[0] = 1.0;
        }
        for (h, o) in out.iter_mut().enumerate() {
            let mut s = 0.0;
            for a in 0..m {
                s += k[a] * self.alpha[a * hc + h];
            }
            for q in 0..p.max(1) {
                s += f[q] * self.beta[q * hc + h];
            }
            *o = s;
        }
        if !variance {
            return f64::NAN;
        }
        let l = &self.l;
        for i in 0..m {
            let s: f64 = (0..i).map(|c| l[i * m + c] * k[c]).sum();
            k[i] = (k[i] - s) / l[i * m + i];
        }
        let ww: f64 = k[..m].iter().map(|v| v * v).sum();
        let mut extra = 0.0;
        if p > 0 {
            let r: Vec<f64> = (0..p)
                .map(|q| f[q] - (0..m).map(|i| self.g[q * m + i] * k[i]).sum::<f64>())
                .collect();
            let t = lower_mul(&self.rinv, p, &r);
            extra = t.iter().map(|v| v * v).sum();
        }
        (lk.support.c0(&lk.cov) - ww + extra).max(0.0)
    }
}

/// Cholesky of a row-major m × m SPD matrix (lower part read and written); false on a
/// non-positive pivot.
pub(crate) fn cholesky_in_place(a: &mut [f64], m: usize) -> bool {
    for i in 0..m {
        for j in 0..=i {
            let s: f64 = (0..j).map(|k| a[i * m + k] * a[j * m + k]).sum();
            if i == j {
                let d = a[i * m + i] - s;
                if d.is_nan() || d <= 0.0 {
                    return false;
                }
                a[i * m + i] = d.sqrt();
            } else {
                a[i * m + j] = (a[i * m + j] - s) / a[j * m + j];
            }
        }
    }
    true
}
