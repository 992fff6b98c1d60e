//! Cokriging: a primary variable kriged from its own samples and those of one or more
//! secondary variables, with a linear model of coregionalisation ([`Lmc`]; gstat's `gstat()`
//! with several variables, `fit.lmc`).
//!
//! # Model
//!
//! K variables Z₁ … Z_K (the primary first) with direct and cross covariances
//! C_kl(h) = b⁰_kl·[h = 0] + Σ_s bˢ_kl ρ_s(h): S basic structures ρ_s = 1 − g_s (bounded models
//! of unit sill, each with its range; [`super::Model`]), a nugget matrix B⁰ and one
//! coregionalisation matrix Bˢ per structure, each symmetric positive semi-definite (that makes
//! every linear combination of the variables a valid covariance). Samples are heterotopic:
//! variable k is known where its column has a value.
//!
//! **Ordinary cokriging** (the traditional unbiasedness conditions, gstat's default): the weights
//! of the primary sum to one and those of each secondary to zero; **simple cokriging** takes the
//! K means as known. The system is solved once, globally, in f64 by the dual form of
//! [`super::dual`] with the K indicator columns as the drift: prediction cᵀα + β₁, variance
//! σ² = C₁₁(0) − |L⁻¹c|² + |R⁻¹(e₁ − GᵀL⁻¹c)|². Exact at the primary's samples.
//!
//! # Fitting ([`fit_lmc`])
//!
//! gstat's `fit.lmc`: the direct and cross empirical variograms in common lag bins (a cross
//! variogram ½·mean((Z_k(x) − Z_k(x+h))(Z_l(x) − Z_l(x+h))) over the pairs where both are known
//! at both ends), each fitted with the structures' shapes fixed (ranges given or fitted to the
//! primary first) by weighted least squares of its nugget and sills (weights N/h², gstat's
//! `fit.method = 7`, signs free), then each matrix Bˢ made positive semi-definite by setting its
//! negative eigenvalues to zero.

pub mod fit;
#[cfg(test)]
mod tests;

use faer::Mat;
use geofield_core::GridSpec;
use rayon::prelude::*;

pub use fit::{cross_bins, fit_lmc, psd_projection};

use super::dual::{DualSystem, Fail};
use super::params::Anisotropy;
use super::samples::SampleSet;
use super::space::{Frame, eps_for};
use super::variogram::{Model, Structure};
use super::{Target, global::bbox_diagonal};
use crate::{Backend, GeofieldError};

/// A linear model of coregionalisation of `variables` variables (see the module docs); the
/// matrices are K × K, row-major.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Lmc {
    pub variables: usize,
    /// The basic structures' shapes (their `sill` is ignored: unit sill).
    pub structures: Vec<Structure>,
    pub nugget: Vec<f64>,
    /// One matrix per structure.
    pub sills: Vec<Vec<f64>>,
}

impl Lmc {
    /// Sizes, finite entries, bounded models with ranges > 0, each matrix symmetric and positive
    /// semi-definite (eigenvalues ≥ −1e-10 of the largest).
    pub fn validate(&self) -> Result<(), GeofieldError> {
        let k = self.variables;
        if k == 0 || self.sills.len() != self.structures.len() {
            return Err(GeofieldError::Invalid(format!(
                "the coregionalisation model has {} variables, {} structures and {} sill matrices",
                k,
                self.structures.len(),
                self.sills.len()
            )));
        }
        for s in &self.structures {
            if !(s.model.is_bounded() && s.range.is_finite() && s.range > 0.0) {
                return Err(GeofieldError::Invalid(format!(
                    "cokriging needs bounded structures with a range > 0, got {} range {}",
                    s.model.name(),
                    s.range
                )));
            }
        }
        let named = std::iter::once(("nugget".to_string(), &self.nugget)).chain(
            self.structures
                .iter()
                .zip(&self.sills)
                .map(|(s, b)| (s.model.name().to_string(), b)),
        );
        for (name, b) in named {
            if b.len() != k * k || b.iter().any(|v| !v.is_finite()) {
                return Err(GeofieldError::Invalid(format!(
                    "the {name} matrix must hold {k} x {k} finite numbers"
                )));
            }
            for r in 0..k {
                for c in 0..r {
                    let (a, bb) = (b[r * k + c], b[c * k + r]);
                    if (a - bb).abs() > 1e-12 * a.abs().max(bb.abs()).max(1e-300) {
                        return Err(GeofieldError::Invalid(format!(
                            "the {name} matrix is not symmetric ({a} vs {bb})"
                        )));
                    }
                }
            }
            let (vals, _) = fit::eigen_sym(b, k);
            let big = vals.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            if vals
                .iter()
                .any(|&v| v < -1e-10 * big.max(f64::MIN_POSITIVE))
            {
                return Err(GeofieldError::Invalid(format!(
                    "the {name} matrix is not positive semi-definite (eigenvalues {vals:?}): the \
                     model would give negative variances"
                )));
            }
        }
        Ok(())
    }

    /// C_kl(h); `coincident` when the two points are one location (the nugget counts).
    #[inline]
    pub fn cov(&self, k: usize, l: usize, h: f64, coincident: bool) -> f64 {
        let kk = self.variables;
        let mut c = if coincident {
            self.nugget[k * kk + l]
        } else {
            0.0
        };
        for (s, b) in self.structures.iter().zip(&self.sills) {
            c += b[k * kk + l] * (1.0 - unit(s).gamma(h));
        }
        c
    }

    /// γ_kl(h) = C_kl(0) − C_kl(h) for h > 0.
    pub fn gamma(&self, k: usize, l: usize, h: f64) -> f64 {
        self.cov(k, l, 0.0, true) - self.cov(k, l, h, h == 0.0)
    }

    /// The direct variogram of variable k as a [`super::Variogram`]-style description.
    pub fn describe(&self, k: usize, l: usize) -> String {
        let kk = self.variables;
        let mut s = format!("nugget {:.6}", self.nugget[k * kk + l]);
        for (st, b) in self.structures.iter().zip(&self.sills) {
            s += &format!(
                " + {} sill {:.6} range {}",
                st.model.name(),
                b[k * kk + l],
                st.range
            );
        }
        s
    }
}

/// A structure of unit sill with `s`'s shape.
#[inline]
fn unit(s: &Structure) -> Structure {
    Structure::new(s.model, 1.0, s.range)
}

/// Cokriging's kind.
#[derive(Clone, Debug, PartialEq)]
pub enum CoKind {
    Ordinary,
    /// The K variables' means.
    Simple {
        means: Vec<f64>,
    },
}

/// The parameters of [`cokrige`].
#[derive(Clone, Debug, PartialEq)]
pub struct CoParams {
    pub lmc: Lmc,
    pub kind: CoKind,
    pub anisotropy: Option<Anisotropy>,
    pub variance: bool,
    /// A grid or points.
    pub target: Target,
}

/// The cokriged primary (nodes in the target's order) and its variance.
#[derive(Clone, Debug, PartialEq)]
pub struct CoKriged {
    pub values: Vec<f64>,
    pub variance: Option<Vec<f64>>,
    /// Samples used per variable.
    pub samples: Vec<usize>,
    /// What evaluated the nodes ("CPU, global, f64", "CUDA, global, f64").
    pub evaluated: String,
    pub seconds: f64,
}

/// Ordinary or simple cokriging of the first surface of `set` from all its surfaces (one per
/// variable of the model; NaN where a variable is not known). Global, on the CPU, f64.
pub fn cokrige(set: &SampleSet, params: &CoParams) -> Result<CoKriged, GeofieldError> {
    cokrige_on(&Backend::Cpu, set, params)
}

/// [`cokrige`] on `backend`: the system is solved on the host in f64 either way; on CUDA the
/// nodes' covariances, predictions and variances are evaluated on the device in f64 (up to
/// [`geofield_cuda::kriging::POINTS_MAX_COVS`] variables; more run on the CPU, and
/// [`CoKriged::evaluated`] says so).
pub fn cokrige_on(
    backend: &Backend,
    set: &SampleSet,
    params: &CoParams,
) -> Result<CoKriged, GeofieldError> {
    let t0 = std::time::Instant::now();
    set.validate()?;
    let lmc = &params.lmc;
    lmc.validate()?;
    let kv = lmc.variables;
    if set.surfaces.len() != kv {
        return Err(GeofieldError::Invalid(format!(
            "{} value columns for a coregionalisation model of {kv} variables",
            set.surfaces.len()
        )));
    }
    if let Some(a) = params.anisotropy {
        a.validate()?;
    }
    // (variable, location) of every known value, primary first.
    let mut entries: Vec<(usize, usize)> = vec![];
    let mut counts = vec![0usize; kv];
    for (k, s) in set.surfaces.iter().enumerate() {
        for (i, v) in s.values.iter().enumerate() {
            if v.is_finite() {
                entries.push((k, i));
                counts[k] += 1;
            }
        }
    }
    if counts[0] < 1 || (matches!(params.kind, CoKind::Ordinary) && counts[0] < 2) {
        return Err(GeofieldError::Invalid(format!(
            "the primary variable {} has {} sample(s): cokriging needs at least 2",
            set.surfaces[0].name, counts[0]
        )));
    }
    let n = entries.len();
    let need = 3 * (n as u128) * (n as u128) * 8;
    if let Err(geofield_core::CoreError::TooLarge {
        need_bytes,
        available_bytes,
        ..
    }) = geofield_core::check_memory(String::new, need)
    {
        return Err(GeofieldError::KrigingTooLarge {
            samples: n,
            need_bytes,
            available_bytes,
        });
    }
    let (means, p) = match &params.kind {
        CoKind::Ordinary => (vec![0.0; kv], kv),
        CoKind::Simple { means } => {
            if means.len() != kv || means.iter().any(|m| !m.is_finite()) {
                return Err(GeofieldError::Invalid(format!(
                    "simple cokriging needs {kv} finite means, got {means:?}"
                )));
            }
            (means.clone(), 0)
        }
    };
    let frame = Frame::new(&set.xs, &set.ys, params.anisotropy);
    let (px, py): (Vec<f64>, Vec<f64>) = set
        .xs
        .iter()
        .zip(&set.ys)
        .map(|(&x, &y)| frame.apply(x, y))
        .unzip();
    let eps = eps_for(bbox_diagonal(&px, &py));
    let dist = |a: usize, b: usize| (px[a] - px[b]).hypot(py[a] - py[b]);
    let cmat = Mat::<f64>::from_fn(n, n, |r, c| {
        let ((k, i), (l, j)) = (entries[r], entries[c]);
        let h = dist(i, j);
        lmc.cov(k, l, h, h <= eps)
    });
    let z: Vec<f64> = entries
        .iter()
        .map(|&(k, i)| set.surfaces[k].values[i] - means[k])
        .collect();
    let sys = DualSystem::new(cmat, |r, c| f64::from(u8::from(entries[r].0 == c)), p, &z).map_err(
        |e| match e {
            Fail::Singular => GeofieldError::Invalid(
                "the cokriging system is singular: samples at one location (merge them), or a \
                 coregionalisation model without a nugget whose matrices are rank-deficient with \
                 collocated samples of several variables (add a nugget)"
                    .into(),
            ),
            Fail::Drift => GeofieldError::Invalid(
                "a secondary variable without samples cannot carry an ordinary-cokriging \
                 constraint"
                    .into(),
            ),
        },
    )?;
    let nodes: Vec<(f64, f64)> = match &params.target {
        Target::Grid(g) => grid_nodes(g),
        Target::Points { xs, ys } => {
            if xs.len() != ys.len() || xs.iter().chain(ys).any(|v| !v.is_finite()) {
                return Err(GeofieldError::Invalid(
                    "the points' x and y must be finite and as many".into(),
                ));
            }
            xs.iter().copied().zip(ys.iter().copied()).collect()
        }
    };
    let c00 = lmc.cov(0, 0, 0.0, true);
    let f0: Vec<f64> = (0..p).map(|c| f64::from(u8::from(c == 0))).collect();
    let gpu = match backend {
        Backend::Cuda(g) if kv <= geofield_cuda::kriging::POINTS_MAX_COVS => Some(g),
        _ => None,
    };
    let evaluated = match (backend, gpu) {
        (_, Some(_)) => "CUDA, global, f64".to_string(),
        (Backend::Cuda(_), None) => format!(
            "CPU, global, f64 (the GPU evaluates up to {} variables)",
            geofield_cuda::kriging::POINTS_MAX_COVS
        ),
        _ => "CPU, global, f64".to_string(),
    };
    if let Some(gpu) = gpu {
        let samples: Vec<f64> = entries.iter().flat_map(|&(_, i)| [px[i], py[i]]).collect();
        let cov_of: Vec<u32> = entries.iter().map(|&(k, _)| k as u32).collect();
        let covs = super::cuda::lmc_covariances(lmc, eps, c00)?;
        let q: Vec<f64> = nodes
            .par_iter()
            .flat_map_iter(|&(x, y)| {
                let (a, b) = frame.apply(x, y);
                [a, b]
            })
            .collect();
        let fnode: Vec<f64> = f0.repeat(nodes.len());
        let (mut values, variance, _) = super::cuda::eval_dual_points(
            gpu,
            &sys,
            2,
            &samples,
            &covs,
            &cov_of,
            &q,
            &fnode,
            params.variance.then_some(c00),
        )?;
        for v in &mut values {
            *v += means[0];
        }
        return finish(values, variance, counts, evaluated, t0);
    }
    const TILE: usize = 256;
    let mut values = vec![0.0; nodes.len()];
    let mut variance = params.variance.then(|| vec![0.0; nodes.len()]);
    let eval = |t: usize, vals: &mut [f64], vars: Option<&mut [f64]>| {
        let m = vals.len();
        let mut c = Mat::<f64>::zeros(n, m);
        let mut col = vec![0.0; n];
        for (j, out) in vals.iter_mut().enumerate() {
            let (x, y) = nodes[t * TILE + j];
            let (qx, qy) = frame.apply(x, y);
            for (r, &(k, i)) in entries.iter().enumerate() {
                let h = (px[i] - qx).hypot(py[i] - qy);
                col[r] = lmc.cov(k, 0, h, h <= eps);
                c[(r, j)] = col[r];
            }
            *out = sys.predict(&col, &f0) + means[0];
        }
        if let Some(v) = vars {
            sys.variances(&mut c, |_| f0.clone(), c00, v);
        }
    };
    match variance.as_mut() {
        Some(var) => values
            .par_chunks_mut(TILE)
            .zip(var.par_chunks_mut(TILE))
            .enumerate()
            .for_each(|(t, (v, s))| eval(t, v, Some(s))),
        None => values
            .par_chunks_mut(TILE)
            .enumerate()
            .for_each(|(t, v)| eval(t, v, None)),
    }
    finish(values, variance, counts, evaluated, t0)
}

/// The result, once every value is finite.
fn finish(
    values: Vec<f64>,
    variance: Option<Vec<f64>>,
    samples: Vec<usize>,
    evaluated: String,
    t0: std::time::Instant,
) -> Result<CoKriged, GeofieldError> {
    if let Some(t) = values.iter().position(|v| !v.is_finite()) {
        return Err(GeofieldError::NonFinite {
            what: format!("cokriged value at node {t}"),
            cause: "an overflowing or degenerate system".into(),
        });
    }
    Ok(CoKriged {
        values,
        variance,
        samples,
        evaluated,
        seconds: t0.elapsed().as_secs_f64(),
    })
}

/// Cell centres of `g`, row-major from the north-west corner.
fn grid_nodes(g: &GridSpec) -> Vec<(f64, f64)> {
    (0..g.rows)
        .flat_map(|r| (0..g.cols).map(move |c| g.cell_centre(r, c)))
        .collect()
}

/// The shapes of `models` with `ranges` (one per structure), for [`fit_lmc`].
pub fn shapes(models: &[Model], ranges: &[f64]) -> Result<Vec<Structure>, GeofieldError> {
    if models.len() != ranges.len() {
        return Err(GeofieldError::Invalid(format!(
            "{} structures and {} ranges: give one range per structure",
            models.len(),
            ranges.len()
        )));
    }
    Ok(models
        .iter()
        .zip(ranges)
        .map(|(&m, &r)| Structure::new(m, 1.0, r))
        .collect())
}
