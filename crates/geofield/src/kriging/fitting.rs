//! Variograms fitted to the samples' surfaces: one per surface, or one to the pooled empirical
//! variogram of all of them (so that they share one kriging system, the paper's case).

use super::empirical::{Estimator, LagSpec, pool, surface_bins};
use super::nested::fit_models;
use super::samples::SampleSet;
use super::variogram::{Model, Variogram};
use crate::GeofieldError;

/// A variogram fitted to the empirical variogram of one or more surfaces.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SurfaceFit {
    /// The surfaces whose (pooled) bins were fitted.
    pub surfaces: Vec<String>,
    pub variogram: Variogram,
    /// Weighted residual sum of squares.
    pub wrss: f64,
    /// See [`super::Fit::warnings`].
    pub warnings: Vec<String>,
}

/// Fits `models` (one, or nested structures, see [`fit_models`]; with a nugget) to the Matheron variogram of every surface of `samples` on the
/// bins of `lags` (see [`surface_bins`]): one fit per surface, or with `pooled` one fit to the
/// pooled bins of all surfaces. Errors name the surface ("variogram fit of top: ...") or say
/// "pooled variogram fit".
pub fn fit_surfaces(
    samples: &SampleSet,
    models: &[Model],
    lags: &LagSpec,
    pooled: bool,
) -> Result<Vec<SurfaceFit>, GeofieldError> {
    let all_bins = surface_bins(samples, lags, Estimator::Matheron)?;
    let context =
        |what: String| move |e: GeofieldError| GeofieldError::Invalid(format!("{what}: {e}"));
    if pooled {
        let bins = pool(&all_bins);
        let f = fit_models(models, &bins, true).map_err(context("pooled variogram fit".into()))?;
        return Ok(vec![SurfaceFit {
            surfaces: samples.surfaces.iter().map(|s| s.name.clone()).collect(),
            warnings: f.warnings(&bins),
            variogram: f.variogram,
            wrss: f.wrss,
        }]);
    }
    samples
        .surfaces
        .iter()
        .zip(&all_bins)
        .map(|(s, bins)| {
            let f = fit_models(models, bins, true)
                .map_err(context(format!("variogram fit of {}", s.name)))?;
            Ok(SurfaceFit {
                surfaces: vec![s.name.clone()],
                warnings: f.warnings(bins),
                variogram: f.variogram,
                wrss: f.wrss,
            })
        })
        .collect()
}
