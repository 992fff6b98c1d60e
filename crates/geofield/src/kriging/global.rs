//! Global (unique-neighbourhood) simple, ordinary and universal kriging of one or many surfaces
//! sharing the same sample locations, by dual kriging, with the kriging variance (CPU, f64).
//!
//! # Method (note §4.3–4.5)
//!
//! In the kriging space of [`Frame`] (centred, anisotropy-corrected), C is the n × n covariance
//! matrix of the samples (the diagonal holds the total sill even with a nugget); it is factored
//! once, C = L Lᵀ (faer's Cholesky). F is the n × p drift matrix (p = 1 for ordinary kriging, its
//! column all ones; 3 or 6 for universal kriging; none for simple kriging), G = L⁻¹F and
//! GᵀG = FᵀC⁻¹F = R Rᵀ (a p × p Cholesky).
//!
//! - Per surface z: y = L⁻¹z, β = (GᵀG)⁻¹ Gᵀy (the generalised-least-squares drift) and
//!   α = L⁻ᵀ(y − Gβ) = C⁻¹(z − Fβ). Simple kriging (mean m): β = m, α = C⁻¹(z − m).
//! - Prediction at x₀: z* = kᵀα + f(x₀)ᵀβ with kᵢ = C(|x₀ − xᵢ|): n covariance evaluations and
//!   2nH flops per node, no solve (dual kriging).
//! - Variance: w = L⁻¹k (a triangular solve, blocked over tiles of nodes),
//!   σ² = C(0) − wᵀw + |R⁻¹(f(x₀) − Gᵀw)|² (simple: C(0) − wᵀw); clamped at 0.
//!
//! **Exact at the samples, even with a nugget** (the gstat and PyKrige convention): a distance of
//! at most ε = 1e-12 × (the samples' bounding-box diagonal) counts as 0, so k there is the
//! sample's column of C and the prediction is the datum, the variance 0 (to rounding). With
//! [`super::NuggetMode::MeasurementError`] the nugget is left out of k at such nodes (GSTools'
//! `exact=False`).
//!
//! Memory: C and L (n² each, L kept), plus tile × n per thread for the variance; never nodes × n.
//! Cost: n³/3 once, then per node n covariance evaluations + 2nH flops (+ n² for the variance).

use faer::{Mat, MatRef, Par, Side};
use rayon::prelude::*;

use super::params::{Kind, KrigeOptions};
use super::samples::{Merged, SampleSet, merge};
use super::space::{Covariance, Frame, Support, eps_for};
use super::variogram::Variogram;
use crate::{Cancel, GeofieldError};

/// Nodes evaluated together (one covariance row per sample at a time; vectorised).
pub(crate) const TILE: usize = 256;

/// A kriging system factored once, ready to predict any number of nodes.
pub struct GlobalKriging {
    pub(crate) kind: Kind,
    pub(crate) frame: Frame,
    pub(crate) cov: Covariance,
    /// Points or blocks ([`super::params::Block`]).
    pub(crate) support: Support,
    /// Kriging-space coordinates of the (merged) samples.
    pub(crate) xs: Vec<f64>,
    pub(crate) ys: Vec<f64>,
    /// L (lower, column-major n × n).
    pub(crate) l: Mat<f64>,
    /// α: n × H, sample-major (α[i·H + h]).
    pub(crate) alpha: Vec<f64>,
    /// Drift terms evaluated at a node (1 for simple kriging: the mean) and their coefficients
    /// β: p_eval × H (β[l·H + h]).
    pub(crate) p_eval: usize,
    pub(crate) beta: Vec<f64>,
    /// Drift terms in the system (0 for simple kriging), G = L⁻¹F (n × p_var, row-major) and
    /// R⁻¹ (p_var × p_var, lower, row-major) with GᵀG = R Rᵀ.
    pub(crate) p_var: usize,
    pub(crate) g: Vec<f64>,
    pub(crate) rinv: Vec<f64>,
    pub(crate) surfaces: usize,
    /// The (merged) values, sample-major (z[i·H + h]), for the explicit-weights evaluation.
    pub(crate) z: Vec<f64>,
    /// L⁻¹ (row-major), formed on first use by the GPU variance.
    linv: std::sync::OnceLock<Vec<f64>>,
    /// Groups of input sample indices merged into one location.
    pub merged: Vec<Vec<usize>>,
    /// Input index of each location's first sample.
    pub first: Vec<usize>,
}

impl GlobalKriging {
    /// Isotropic, exact, identical coordinates merged (any values averaged): for samples
    /// (`xs`, `ys`) with `values[h][i]` the value of surface h at sample i (all finite).
    pub fn new(
        xs: &[f64],
        ys: &[f64],
        values: &[Vec<f64>],
        variogram: &Variogram,
        kind: Kind,
    ) -> Result<Self, GeofieldError> {
        let mut opts = KrigeOptions {
            kind,
            ..KrigeOptions::default()
        };
        opts.merge.distance_m = Some(0.0);
        opts.merge.tolerance = Some(f64::INFINITY);
        let set = SampleSet::new(xs.to_vec(), ys.to_vec(), values.to_vec());
        set.validate()?;
        for (h, s) in set.surfaces.iter().enumerate() {
            if let Some(i) = s.values.iter().position(|v| v.is_nan()) {
                return Err(GeofieldError::Invalid(format!(
                    "sample {i}: the value of surface {} is missing (NaN)",
                    h + 1
                )));
            }
        }
        let all: Vec<usize> = (0..set.len()).collect();
        let surf: Vec<usize> = (0..set.surfaces.len()).collect();
        Self::with_options(&set, &all, &surf, variogram, &opts)
    }

    /// The system for the samples `subset` of `set` (every surface of `surfaces` present at
    /// each), merged under `opts.merge`.
    pub fn with_options(
        set: &SampleSet,
        subset: &[usize],
        surfaces: &[usize],
        variogram: &Variogram,
        opts: &KrigeOptions,
    ) -> Result<Self, GeofieldError> {
        variogram.validate()?;
        opts.validate()?;
        let m = merge(set, subset, surfaces, &opts.merge)?;
        let frame = Frame::new(&m.xs, &m.ys, opts.anisotropy);
        Self::from_merged(set, &m, frame, variogram, opts, None)
    }

    pub(crate) fn from_merged(
        set: &SampleSet,
        m: &Merged,
        frame: Frame,
        variogram: &Variogram,
        opts: &KrigeOptions,
        external: Option<&std::sync::Arc<super::drift::ExternalDrift>>,
    ) -> Result<Self, GeofieldError> {
        let kind = opts.kind;
        let n = m.xs.len();
        if n < kind.min_samples() || (n < 2 && matches!(kind, Kind::Ordinary)) {
            return Err(GeofieldError::Invalid(format!(
                "{n} distinct sample location(s): {} kriging needs at least {}",
                kind.name(),
                kind.min_samples()
                    .max(if matches!(kind, Kind::Ordinary) { 2 } else { 1 })
            )));
        }
        if !variogram.is_bounded() && matches!(kind, Kind::Simple { .. }) {
            return Err(GeofieldError::Invalid(
                "simple kriging needs a variogram with a sill; power and linear have none \
                 (use ordinary or universal kriging)"
                    .into(),
            ));
        }
        let (xs, ys): (Vec<f64>, Vec<f64>) =
            m.xs.iter()
                .zip(&m.ys)
                .map(|(&x, &y)| frame.apply(x, y))
                .unzip();
        let eps = eps_for(bbox_diagonal(&xs, &ys));
        let dist = |i: usize, j: usize| {
            let (dx, dy) = (xs[i] - xs[j], ys[i] - ys[j]);
            (dx * dx + dy * dy).sqrt()
        };
        let mut max_gamma = 0.0f64;
        if !variogram.is_bounded() {
            for i in 0..n {
                for j in i + 1..n {
                    max_gamma = max_gamma.max(variogram.gamma(dist(i, j)));
                }
            }
        }
        let mut cov = Covariance::new(variogram, eps, opts.nugget, max_gamma);
        let mut tries = 0;
        // The factorisation splits its work as `linalg_par` says, whatever the thread count.
        faer::set_global_parallelism(linalg_par());
        let llt = loop {
            let cmat = Mat::<f64>::from_fn(n, n, |i, j| {
                if i == j {
                    cov.c0
                } else {
                    cov.between_samples(dist(i, j))
                }
            });
            match cmat.llt(Side::Lower) {
                Ok(f) => break f,
                Err(_) if cov.pseudo && tries < 3 => {
                    // A larger pseudo-covariance constant (the result does not depend on it).
                    tries += 1;
                    cov =
                        Covariance::new(variogram, eps, opts.nugget, 10f64.powi(tries) * max_gamma);
                }
                Err(_) => return Err(singular(set, m)),
            }
        };
        let l = llt.L().to_owned();
        let p_var = kind.drift_terms();
        let support = Support::new(&frame, &cov, opts.block.as_ref(), external);
        // F (n × p), G = L⁻¹F.
        let mut gm = Mat::<f64>::from_fn(n, p_var, |i, c| {
            let mut f = [0.0; 6];
            support.point_drift(&frame, xs[i], ys[i], p_var, &mut f);
            f[c]
        });
        faer::linalg::triangular_solve::solve_lower_triangular_in_place(
            l.as_ref(),
            gm.as_mut(),
            linalg_par(),
        );
        let g: Vec<f64> = (0..n * p_var).map(|k| gm[(k / p_var, k % p_var)]).collect();
        let mut mtm = vec![0.0; p_var * p_var];
        for a in 0..p_var {
            for b in 0..=a {
                mtm[a * p_var + b] = (0..n).map(|i| gm[(i, a)] * gm[(i, b)]).sum();
            }
        }
        let r = small_cholesky(&mtm, p_var).ok_or_else(|| drift_error(kind, n))?;
        let rinv = invert_lower(&r, p_var);

        // Values: y = L⁻¹(z − offset), β, α.
        let hc = m.values.len();
        let offset = match kind {
            Kind::Simple { mean } => mean,
            _ => 0.0,
        };
        let mut ymat = Mat::<f64>::from_fn(n, hc, |i, h| m.values[h][i] - offset);
        faer::linalg::triangular_solve::solve_lower_triangular_in_place(
            l.as_ref(),
            ymat.as_mut(),
            linalg_par(),
        );
        let (p_eval, beta) = match kind {
            Kind::Simple { mean } => (1, vec![mean; hc]),
            _ => {
                let mut beta = vec![0.0; p_var * hc];
                for h in 0..hc {
                    // t = Gᵀy; β = R⁻ᵀ R⁻¹ t.
                    let t: Vec<f64> = (0..p_var)
                        .map(|c| (0..n).map(|i| gm[(i, c)] * ymat[(i, h)]).sum())
                        .collect();
                    let s = lower_mul(&rinv, p_var, &t);
                    for c in 0..p_var {
                        beta[c * hc + h] = (c..p_var).map(|k| rinv[k * p_var + c] * s[k]).sum();
                    }
                }
                (p_var, beta)
            }
        };
        if p_var > 0 {
            for h in 0..hc {
                for i in 0..n {
                    let fb: f64 = (0..p_var).map(|c| gm[(i, c)] * beta[c * hc + h]).sum();
                    ymat[(i, h)] -= fb;
                }
            }
        }
        // α = L⁻ᵀ(y − Gβ).
        faer::linalg::triangular_solve::solve_upper_triangular_in_place(
            l.as_ref().transpose(),
            ymat.as_mut(),
            linalg_par(),
        );
        let mut alpha = vec![0.0; n * hc];
        for i in 0..n {
            for h in 0..hc {
                alpha[i * hc + h] = ymat[(i, h)];
            }
        }
        Ok(GlobalKriging {
            kind,
            support,
            frame,
            cov,
            xs,
            ys,
            l,
            alpha,
            p_eval,
            beta,
            p_var,
            g,
            rinv,
            surfaces: hc,
            z: (0..n * hc).map(|k| m.values[k % hc][k / hc]).collect(),
            linv: std::sync::OnceLock::new(),
            merged: m.merged.clone(),
            first: m.first.clone(),
        })
    }

    /// The dual coefficients: α (n × H), β (p × H) and p, the drift terms evaluated at a node.
    pub fn dual_coefficients(&self) -> (&[f64], &[f64], usize) {
        (&self.alpha, &self.beta, self.p_eval)
    }

    /// The covariance in kriging space.
    pub fn covariance(&self) -> &Covariance {
        &self.cov
    }

    /// Kriging-space coordinates of the (merged) samples.
    pub fn sample_coords(&self) -> (&[f64], &[f64]) {
        (&self.xs, &self.ys)
    }

    /// The (merged) values, `z[i·H + h]`.
    pub fn values(&self) -> &[f64] {
        &self.z
    }

    /// The kind of kriging.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// Number of surfaces.
    pub fn surfaces(&self) -> usize {
        self.surfaces
    }

    /// Number of (merged) samples.
    pub fn samples(&self) -> usize {
        self.xs.len()
    }

    /// The frame (world → kriging space).
    pub fn frame(&self) -> &Frame {
        &self.frame
    }

    /// Predictions (`pred[h·m + j]`, surface-major over the m nodes of the tile) and variances
    /// at kriging-space nodes (`nx`, `ny`), m ≤ [`TILE`].
    pub(crate) fn eval_tile(
        &self,
        nx: &[f64],
        ny: &[f64],
        pred: &mut [f64],
        var: Option<&mut [f64]>,
    ) {
        let m = nx.len();
        let n = self.samples();
        let hc = self.surfaces;
        let mut d = [0.0; TILE];
        let mut c = [0.0; TILE];
        let mut t = [0.0; TILE];
        let (d, c, t) = (&mut d[..m], &mut c[..m], &mut t[..m]);
        pred[..hc * m].fill(0.0);
        let mut kmat = var.as_ref().map(|_| Mat::<f64>::zeros(n, m));
        for i in 0..n {
            self.support
                .row(&self.cov, self.xs[i], self.ys[i], nx, ny, d, t, c);
            let a = &self.alpha[i * hc..(i + 1) * hc];
            for (h, &ah) in a.iter().enumerate() {
                let p = &mut pred[h * m..(h + 1) * m];
                for j in 0..m {
                    p[j] += c[j] * ah;
                }
            }
            if let Some(k) = kmat.as_mut() {
                for j in 0..m {
                    k[(i, j)] = c[j];
                }
            }
        }
        let mut f = [0.0; 6];
        for j in 0..m {
            self.support.drift(
                &self.frame,
                nx[j],
                ny[j],
                self.p_eval.max(self.p_var),
                &mut f,
            );
            for h in 0..hc {
                let fb: f64 = (0..self.p_eval).map(|l| f[l] * self.beta[l * hc + h]).sum();
                pred[h * m + j] += fb;
            }
        }
        if let (Some(var), Some(mut k)) = (var, kmat) {
            faer::linalg::triangular_solve::solve_lower_triangular_in_place(
                self.l.as_ref(),
                k.as_mut(),
                Par::Seq,
            );
            self.variance_from_w(nx, ny, k.as_ref(), &mut var[..m]);
        }
    }

    /// σ² from W = L⁻¹K (n × m).
    fn variance_from_w(&self, nx: &[f64], ny: &[f64], w: MatRef<'_, f64>, var: &mut [f64]) {
        let n = self.samples();
        let p = self.p_var;
        let mut f = [0.0; 6];
        for (j, v) in var.iter_mut().enumerate() {
            let col = w.col(j);
            let mut ww = 0.0;
            for i in 0..n {
                ww += col[i] * col[i];
            }
            let mut extra = 0.0;
            if p > 0 {
                self.support.drift(&self.frame, nx[j], ny[j], p, &mut f);
                let mut r = [0.0; 6];
                for (c, rc) in r.iter_mut().enumerate().take(p) {
                    let mut s = 0.0;
                    for i in 0..n {
                        s += self.g[i * p + c] * col[i];
                    }
                    *rc = f[c] - s;
                }
                let t = lower_mul(&self.rinv, p, &r[..p]);
                extra = t.iter().map(|v| v * v).sum();
            }
            *v = (self.support.c0(&self.cov) - ww + extra).max(0.0);
        }
    }

    /// Predictions (`pred[h][j]`) and, if asked, variances at kriging-space nodes.
    pub(crate) fn eval_nodes(
        &self,
        nx: &[f64],
        ny: &[f64],
        variance: bool,
    ) -> (Vec<Vec<f64>>, Option<Vec<f64>>) {
        self.eval_nodes_until(nx, ny, variance, &Cancel::new())
    }

    /// [`Self::eval_nodes`] that skips the tiles not started once `cancel` is set (their
    /// values are left at zero: the caller checks the token afterwards).
    pub(crate) fn eval_nodes_until(
        &self,
        nx: &[f64],
        ny: &[f64],
        variance: bool,
        cancel: &Cancel,
    ) -> (Vec<Vec<f64>>, Option<Vec<f64>>) {
        let m = nx.len().min(ny.len());
        let hc = self.surfaces;
        let tiles: Vec<(Vec<f64>, Vec<f64>)> = nx[..m]
            .par_chunks(TILE)
            .zip(ny[..m].par_chunks(TILE))
            .map(|(tx, ty)| {
                let mut p = vec![0.0; hc * tx.len()];
                let mut v = vec![f64::NAN; if variance { tx.len() } else { 0 }];
                if !cancel.is_cancelled() {
                    self.eval_tile(tx, ty, &mut p, variance.then_some(&mut v[..]));
                }
                (p, v)
            })
            .collect();
        let mut pred = vec![Vec::with_capacity(m); hc];
        let mut var = variance.then(|| Vec::with_capacity(m));
        for (p, v) in tiles {
            let t = p.len() / hc.max(1);
            for (h, ph) in pred.iter_mut().enumerate() {
                ph.extend_from_slice(&p[h * t..(h + 1) * t]);
            }
            if let Some(var) = var.as_mut() {
                var.extend_from_slice(&v);
            }
        }
        (pred, var)
    }

    /// Predictions (surface-major: `pred[h][p]`) and, if asked, variances at world points.
    pub fn predict(
        &self,
        px: &[f64],
        py: &[f64],
        variance: bool,
    ) -> (Vec<Vec<f64>>, Option<Vec<f64>>) {
        let (nx, ny): (Vec<f64>, Vec<f64>) = px
            .iter()
            .zip(py)
            .map(|(&x, &y)| self.frame.apply(x, y))
            .unzip();
        self.eval_nodes(&nx, &ny, variance)
    }

    /// L⁻¹ (row-major n × n, lower), for the GPU variance; formed once (n³/3 flops).
    pub fn l_inverse(&self) -> &[f64] {
        self.linv.get_or_init(|| self.form_l_inverse())
    }

    fn form_l_inverse(&self) -> Vec<f64> {
        lower_inverse(self.l.as_ref())
    }
}

/// The inverse of a lower-triangular L (n × n), row-major, for the GPU variance (n³/3 flops).
pub(crate) fn lower_inverse(l: MatRef<'_, f64>) -> Vec<f64> {
    let n = l.nrows();
    let mut inv = Mat::<f64>::zeros(n, n);
    faer::linalg::triangular_inverse::invert_lower_triangular(inv.as_mut(), l, linalg_par());
    let mut out = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..=i {
            out[i * n + j] = inv[(i, j)];
        }
    }
    out
}

/// Tasks the dense linear algebra (faer's factorisation, triangular solves and products) is
/// split into. A fixed count, not the pool's thread count (`Par::rayon(0)`): faer's partition of
/// the work, and so the order of its sums, follows this number, so the kriged values are the
/// same bits on 1 thread or 64 (a laptop and a server, or MPI ranks of one thread each against
/// one process); rayon runs the tasks on whatever threads there are.
pub(crate) const LINALG_TASKS: usize = 16;

pub(crate) fn linalg_par() -> Par {
    Par::rayon(LINALG_TASKS)
}

pub(crate) fn bbox_diagonal(xs: &[f64], ys: &[f64]) -> f64 {
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for (&x, &y) in xs.iter().zip(ys) {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if xs.is_empty() {
        0.0
    } else {
        (x1 - x0).hypot(y1 - y0)
    }
}

/// The error for a covariance matrix that is not positive definite: names the closest pair.
fn singular(set: &SampleSet, m: &Merged) -> GeofieldError {
    let n = m.xs.len();
    let mut best = (f64::INFINITY, 0, 0);
    for i in 0..n {
        for j in i + 1..n {
            let d = (m.xs[i] - m.xs[j]).hypot(m.ys[i] - m.ys[j]);
            if d < best.0 {
                best = (d, i, j);
            }
        }
    }
    GeofieldError::Invalid(format!(
        "the kriging system is singular (the covariance matrix is not positive definite); the \
         closest samples are {} and {}, {:.3e} m apart: merge them (a larger merge distance) or \
         add a nugget",
        set.describe(m.first[best.1]),
        set.describe(m.first[best.2]),
        best.0
    ))
}

fn drift_error(kind: Kind, n: usize) -> GeofieldError {
    use super::params::Drift;
    GeofieldError::Invalid(match kind {
        Kind::Universal { drift } => format!(
            "the {} drift cannot be estimated from these {n} sample locations: {}",
            match drift {
                Drift::Linear => "linear",
                Drift::Quadratic => "quadratic",
                Drift::External => "external",
                Drift::LinearExternal => "linear and external",
            },
            match drift {
                Drift::Linear =>
                    "they lie (nearly) on one line; linear drift needs 3 samples not on a line",
                Drift::Quadratic =>
                    "they lie (nearly) on one conic; quadratic drift needs 6 samples in general position",
                Drift::External =>
                    "the external variable is (nearly) the same at all of them; it must vary \
                     between the samples",
                Drift::LinearExternal =>
                    "the external variable is (nearly) a plane in x and y over them, or they lie \
                     on one line",
            }
        ),
        _ => format!("the mean cannot be estimated from these {n} sample locations"),
    })
}

mod crossval;
pub(crate) mod small;
mod weights;

pub(crate) use small::{invert_lower, lower_mul, small_cholesky};

pub use crossval::CrossValidation;
pub(crate) use crossval::summarise;

#[cfg(test)]
pub(crate) mod tests;
