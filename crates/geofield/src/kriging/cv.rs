//! Leave-one-out cross-validation of built systems: closed form for global kriging (Dubrule
//! 1983), brute-force refits without each sample for local kriging.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::global::{self, CrossValidation};
use super::local::LocalKriging;
use super::samples::SampleSet;
use super::systems::{Group, System};
use crate::{Cancel, GeofieldError};

/// Leave-one-out cross-validation of one surface: closed form for global kriging, refits
/// without each sample for local kriging. Errors per distinct location of the surface's group,
/// in the group's order; `locations[j]` gives each one's first input sample.
#[derive(Clone, Debug, PartialEq)]
pub struct SurfaceCv {
    /// The surface's name (its value column).
    pub surface: String,
    /// Input index of the first sample of each location.
    pub locations: Vec<usize>,
    /// Datum minus the prediction from all other locations.
    pub error: Vec<f64>,
    /// Kriging variance of each left-out prediction.
    pub variance: Vec<f64>,
    /// Root mean square error.
    pub rmse: f64,
    /// Mean error.
    pub mean_error: f64,
    /// Mean standardised error e / σ (≈ 0 for a well-fitted model).
    pub mean_standardised: f64,
    /// Mean square standardised error (≈ 1 for a well-fitted model).
    pub mean_square_standardised: f64,
}

/// The summary statistics of one surface's cross-validation (as `geofield krige --json` writes
/// them).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct CvSummary {
    pub surface: String,
    /// Distinct locations left out.
    pub samples: usize,
    pub rmse: f64,
    pub mean_error: f64,
    pub mean_standardised_error: f64,
    pub mean_square_standardised_error: f64,
}

impl SurfaceCv {
    /// The summary statistics.
    pub fn summary(&self) -> CvSummary {
        CvSummary {
            surface: self.surface.clone(),
            samples: self.error.len(),
            rmse: self.rmse,
            mean_error: self.mean_error,
            mean_standardised_error: self.mean_standardised,
            mean_square_standardised_error: self.mean_square_standardised,
        }
    }
}

/// Cross-validation of every surface of `set` with systems already built by
/// [`build`](super::systems::build), in the order of the surfaces.
/// `progress` gets the fraction of the folds done; [`GeofieldError::Cancelled`] soon after
/// `cancel` is set.
pub fn cross_validate_groups(
    set: &SampleSet,
    groups: &[Group],
    progress: Option<&(dyn Fn(f64) + Sync)>,
    cancel: &Cancel,
) -> Result<Vec<SurfaceCv>, GeofieldError> {
    let mut out: Vec<Option<SurfaceCv>> = (0..set.surfaces.len()).map(|_| None).collect();
    let total = groups
        .iter()
        .map(|g| g.system.samples())
        .sum::<usize>()
        .max(1);
    let done = AtomicUsize::new(0);
    let report = |n: usize| {
        let d = done.fetch_add(n, Ordering::Relaxed) + n;
        if let Some(f) = progress {
            f(d as f64 / total as f64);
        }
    };
    for g in groups {
        cancel.check()?;
        let (cv, first) = match &g.system {
            System::Global(s) => {
                let cv = s.cross_validate();
                report(s.samples());
                (cv, s.first.clone())
            }
            System::Local(s) => (local_loo(s, &report, cancel)?, s.first.clone()),
        };
        for (k, &h) in g.surfaces.iter().enumerate() {
            out[h] = Some(SurfaceCv {
                surface: set.surfaces[h].name.clone(),
                locations: first.clone(),
                error: cv.error[k].clone(),
                variance: cv.variance.clone(),
                rmse: cv.rmse[k],
                mean_error: cv.mean_error[k],
                mean_standardised: cv.mean_standardised[k],
                mean_square_standardised: cv.mean_square_standardised[k],
            });
        }
    }
    Ok(out.into_iter().flatten().collect())
}

/// Brute-force leave-one-out for local kriging: each sample predicted from its k nearest others.
fn local_loo(
    s: &LocalKriging,
    report: &(dyn Fn(usize) + Sync),
    cancel: &Cancel,
) -> Result<CrossValidation, GeofieldError> {
    use crate::neighbors::{IndexKind, KnnQuery, knn_cpu as knn};
    use rayon::prelude::*;
    let pts: Vec<f64> = s.xs.iter().zip(&s.ys).flat_map(|(&x, &y)| [x, y]).collect();
    let q = KnnQuery {
        k: s.k,
        radius: s.radius,
        exclude_self: true,
    };
    let nb = knn(&pts, None, 2, &q, IndexKind::Auto)?;
    let hc = s.surfaces;
    let rows: Vec<(Vec<f64>, f64)> = (0..s.samples())
        .into_par_iter()
        .map(|i| {
            // Folds not started once cancelled are skipped; the token is checked below.
            if cancel.is_cancelled() {
                return (vec![], 0.0);
            }
            if i % 256 == 255 {
                report(256);
            }
            let ids: Vec<usize> = nb
                .row(i)
                .0
                .iter()
                .filter(|&&j| j >= 0)
                .map(|&j| j as usize)
                .collect();
            let (p, v) = s.solve_node(s.xs[i], s.ys[i], &ids);
            ((0..hc).map(|h| s.z[i * hc + h] - p[h]).collect(), v)
        })
        .collect();
    cancel.check()?;
    report(s.samples() % 256);
    let error = (0..hc)
        .map(|h| rows.iter().map(|r| r.0[h]).collect())
        .collect();
    let variance = rows.iter().map(|r| r.1).collect();
    Ok(global::summarise(error, variance))
}
