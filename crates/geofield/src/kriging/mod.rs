//! Kriging: interpolation of one or many surfaces from scattered samples, with the kriging
//! variance, variograms and cross-validation.
//!
//! The entry point is [`krige`] (samples, [`KrigeParams`] → [`Kriged`]); [`cross_validate`]
//! takes the same inputs. Variograms come from [`Variogram::new`] or are fitted
//! ([`empirical()`], [`fit`], [`fit_surfaces`]); [`io`] reads sample CSVs and writes the
//! capability's files.
//!
//! # Model
//!
//! A surface Z(x) is a random field with variogram γ(h) = ½ E[(Z(x + h) − Z(x))²] (see
//! [`variogram`]: practical-range convention, nugget, nested structures) and a mean that is
//! known (simple kriging), an unknown constant (ordinary kriging, the paper's) or an unknown
//! polynomial drift in x, y (universal kriging). The kriging predictor z*(x₀) = Σ λᵢ zᵢ is the
//! best linear unbiased one; its variance σ²(x₀) = E[(z* − Z(x₀))²]. Units: coordinates in metres
//! (x east, y north), values in the samples' units, variances in their square.
//!
//! - `global`: every sample in one system, factored once; predictions by dual kriging,
//!   variance from the factor, closed-form leave-one-out (Dubrule 1983).
//! - `local`: the k nearest samples within an optional radius, one small system per node.
//! - `space`: centring, geometric anisotropy ([`Anisotropy`], gstat's convention), the
//!   covariance with the exactness rule.
//! - [`samples`]: sample sets, missing values, merging of duplicates.
//! - [`empirical`](mod@empirical), [`variogram`]: empirical variograms, weighted least-squares fits, models;
//!   [`fit_models`]: fits of nested models.
//! - [`indicator`]: indicator kriging (probability maps) and order-relation corrections.
//! - [`volume`]: 3-D kriging; [`cokriging`]: cokriging with a linear model of coregionalisation.
//! - [`simulate`]: conditional Gaussian simulation (N realisations honouring the samples).
//! - [`strata`]: crossings of stratum surfaces, voxel models.
//! - `paper`: the paper's per-node Gaussian elimination, for the benchmark
//!   ([`crate::bench::kriging`]).
//!
//! Many surfaces (the paper's H stratum surfaces sampled at the same wells) share one factor;
//! a surface with missing values at some wells, or with its own variogram, gets its own system
//! (surfaces are grouped by (variogram, set of wells)).
//!
//! Reference: Meng Li, Lanfang Dong, "Research on CUDA-based Kriging Interpolation Algorithm"
//! (USTC); the project note `notes/kriging.md`. Dual kriging: Matheron; Dubrule, "Cross
//! validation of kriging in a unique neighborhood", Math. Geol. 15 (1983) 687–699,
//! doi:10.1007/BF01033232.

pub mod cokriging;
pub(crate) mod cuda;
mod cv;
pub mod drift;
pub(crate) mod dual;
pub mod empirical;
pub(crate) mod eval;
mod fitting;
pub mod given;
pub(crate) mod global;
pub mod indicator;
#[cfg(feature = "io")]
pub mod io;
mod kriged;
pub(crate) mod local;
mod nested;
pub(crate) mod paper;
pub mod params;
pub mod samples;
pub mod simulate;
pub(crate) mod space;
#[cfg(feature = "mpi")]
mod split;
pub mod strata;
pub(crate) mod systems;
pub mod variogram;
pub mod volume;

use std::time::Instant;

pub use cv::{CvSummary, SurfaceCv};
pub use drift::{ExternalDrift, drift_residuals};
pub use empirical::{
    Estimator, Fit, LagBin, LagSpec, VariogramMap, empirical, fit, pool, surface_bins,
    variogram_map,
};
pub use fitting::{SurfaceFit, fit_surfaces};
pub use given::{GivenDrift, GivenKriged, krige_given};
pub use indicator::{OrderCorrection, indicator_set};
pub use kriged::{Band, Kriged, Prediction};
pub use nested::fit_models;
pub use params::{
    Anisotropy, Block, Discretisation, Drift, Kind, KrigeOptions, KrigeParams, MergeRule,
    Neighbourhood, NuggetMode, Precision, Target,
};
pub use samples::{SampleSet, Surface};
pub use simulate::{SimParams, Simulated, simulate, simulate_with_progress};
#[cfg(feature = "mpi")]
pub use split::krige_split;
pub use systems::GroupReport;
pub use variogram::{Model, Structure, Variogram};

use geofield_core::GridSpec;

use crate::{Backend, Cancel, GeofieldError};

/// Kriging of every surface of `samples` at `params.target`: the surfaces are grouped by
/// (variogram, wells present), each group's samples merged and its system built (global
/// kriging refused up front when it would not fit in memory,
/// [`GeofieldError::KrigingTooLarge`]; a grid target refused when its bands would not,
/// [`KrigeParams::check_memory`]), then evaluated on the backend (a grid; points on the CPU).
/// An error unless every value is finite (see [`Prediction::check_finite`]).
///
/// ```
/// use geofield::Backend;
/// use geofield::kriging::{self, KrigeParams, Model, SampleSet, Target, Variogram};
/// use geofield_core::{Extent, GridSpec};
///
/// let set = SampleSet::new(vec![5.0, 25.0, 15.0], vec![5.0, 15.0, 25.0],
///     vec![vec![1.0, 2.0, 3.0]]);
/// let vg = Variogram::new(Model::Exponential, 1.0, 30.0, 0.0)?;
/// let grid = GridSpec::from_extent(Extent::new(0.0, 0.0, 30.0, 30.0)?, 10.0)?;
/// let params = KrigeParams { variance: true, ..KrigeParams::new(vg, Target::Grid(grid)) };
/// let k = kriging::krige(&Backend::Cpu, &set, &params)?;
/// // Kriging is exact at a sample: (5, 5) is the centre of the south-west cell.
/// let sw = (grid.rows - 1) * grid.cols;
/// let p = &k.prediction;
/// assert!((p.values[0][sw] - 1.0).abs() < 1e-9);
/// assert!(p.variance.as_ref().is_some_and(|v| v[0][sw].abs() < 1e-9));
/// // Leave-one-out cross-validation with the same systems.
/// let cv = k.cross_validate(&set)?;
/// assert_eq!(cv[0].error.len(), 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn krige(
    backend: &Backend,
    samples: &SampleSet,
    params: &KrigeParams,
) -> Result<Kriged, GeofieldError> {
    run(backend, samples, params, None, &Cancel::new())
}

/// [`krige`], calling `progress` with the fraction of the nodes done (from any thread), and
/// stopping with [`GeofieldError::Cancelled`] soon after `cancel` is set (see
/// [`crate::cancel`]; building and factoring a global system is not interrupted).
///
/// ```
/// use geofield::kriging::{self, KrigeParams, Model, SampleSet, Target, Variogram};
/// use geofield::{Backend, Cancel, GeofieldError};
/// use geofield_core::{Extent, GridSpec};
///
/// let set = SampleSet::new(vec![5.0, 25.0, 15.0], vec![5.0, 15.0, 25.0],
///     vec![vec![1.0, 2.0, 3.0]]);
/// let vg = Variogram::new(Model::Exponential, 1.0, 30.0, 0.0)?;
/// let grid = GridSpec::from_extent(Extent::new(0.0, 0.0, 30.0, 30.0)?, 10.0)?;
/// let params = KrigeParams::new(vg, Target::Grid(grid));
/// let last = std::sync::Mutex::new(0.0);
/// let cancel = Cancel::new();
/// kriging::krige_with_progress(&Backend::Cpu, &set, &params,
///     &|f| if let Ok(mut l) = last.lock() { *l = f }, &cancel)?;
/// assert_eq!(*last.lock().map_err(|_| "poisoned")?, 1.0);
/// cancel.cancel();
/// let r = kriging::krige_with_progress(&Backend::Cpu, &set, &params, &|_| {}, &cancel);
/// assert!(matches!(r, Err(GeofieldError::Cancelled)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn krige_with_progress(
    backend: &Backend,
    samples: &SampleSet,
    params: &KrigeParams,
    progress: &(dyn Fn(f64) + Sync),
    cancel: &Cancel,
) -> Result<Kriged, GeofieldError> {
    run(backend, samples, params, Some(progress), cancel)
}

fn run(
    backend: &Backend,
    samples: &SampleSet,
    params: &KrigeParams,
    progress: Option<&(dyn Fn(f64) + Sync)>,
    cancel: &Cancel,
) -> Result<Kriged, GeofieldError> {
    let k = run_window(backend, samples, params, None, progress, cancel)?;
    finish(k, samples, params)
}

/// The target's nodes of `window` (grid rows, or points by index; `None`: all), the systems
/// built and factored whole: what [`run`] does before its checks ([`finish`]). The window's
/// values are the whole run's, bit for bit.
fn run_window(
    backend: &Backend,
    samples: &SampleSet,
    params: &KrigeParams,
    window: Option<std::ops::Range<usize>>,
    progress: Option<&(dyn Fn(f64) + Sync)>,
    cancel: &Cancel,
) -> Result<Kriged, GeofieldError> {
    params.check_memory(samples.surfaces.len())?;
    cancel.check()?;
    let opts = &params.options;
    let t0 = Instant::now();
    let external = if opts.kind.is_external() {
        params.external_drift.as_ref()
    } else {
        None
    };
    // A block's drift is the mean over its points: each needs a value (points of the grid's
    // cells or of the target points, shifted by the block's offsets).
    let shifts: Vec<(f64, f64)> = match &opts.block {
        Some(b) => b.points().into_iter().map(|(dx, dy, _)| (dx, dy)).collect(),
        None => vec![(0.0, 0.0)],
    };
    if let Some(e) = external {
        for &(dx, dy) in &shifts {
            let at = |what: String| {
                if opts.block.is_some() {
                    format!("{what}'s block point offset ({dx}, {dy})")
                } else {
                    what
                }
            };
            match &params.target {
                Target::Points { xs, ys } => {
                    let (sx, sy): (Vec<f64>, Vec<f64>) =
                        xs.iter().zip(ys).map(|(x, y)| (x + dx, y + dy)).unzip();
                    e.check_points(&sx, &sy, &|j| at(format!("point {j}")))?;
                }
                Target::Grid(grid) => check_grid_drift(e, grid, (dx, dy), &at)?,
            }
        }
    }
    let (groups, reports) = systems::build(samples, &params.variograms, opts, external)?;
    cancel.check()?;
    let seconds_factor = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let (prediction, grid) = match &params.target {
        Target::Grid(grid) => {
            let p = eval::krige_grid_until(
                backend,
                samples,
                &groups,
                reports,
                opts,
                grid,
                window.unwrap_or(0..grid.rows),
                params.variance,
                progress,
                cancel,
            )?;
            (p, Some(*grid))
        }
        Target::Points { xs, ys } => {
            let w = window.unwrap_or(0..xs.len());
            let (Some(wx), Some(wy)) = (xs.get(w.clone()), ys.get(w.clone())) else {
                return Err(GeofieldError::Invalid(format!(
                    "points {}..{} are not among the target's {} points",
                    w.start,
                    w.end,
                    xs.len().min(ys.len())
                )));
            };
            let p = eval::eval_points(
                backend,
                samples,
                &groups,
                reports,
                wx,
                wy,
                params.variance,
                progress,
                cancel,
            )?;
            (p, None)
        }
    };
    Ok(Kriged {
        prediction,
        crossings_clipped: None,
        seconds_factor,
        seconds_grid: t1.elapsed().as_secs_f64(),
        grid,
        options: *opts,
        names: samples.surfaces.iter().map(|s| s.name.clone()).collect(),
        groups,
    })
}

/// Every cell centre of `grid`, shifted by `(dx, dy)`, has an external drift value, or an error
/// naming the first that has none (`at` words the place).
fn check_grid_drift(
    e: &drift::ExternalDrift,
    grid: &GridSpec,
    (dx, dy): (f64, f64),
    at: &dyn Fn(String) -> String,
) -> Result<(), GeofieldError> {
    let cs = grid.cell_size_m;
    for r in 0..grid.rows {
        let y = grid.y_max_m - (r as f64 + 0.5) * cs + dy;
        let xs: Vec<f64> = (0..grid.cols)
            .map(|c| grid.x_min_m + (c as f64 + 0.5) * cs + dx)
            .collect();
        e.check_points(&xs, &vec![y; grid.cols], &|c| {
            at(format!("the grid's cell (row {r}, column {c})"))
        })?;
    }
    Ok(())
}

/// The checks and the clipping of a whole prediction: an error unless every value is finite;
/// the crossings resolved when asked.
fn finish(
    mut k: Kriged,
    samples: &SampleSet,
    params: &KrigeParams,
) -> Result<Kriged, GeofieldError> {
    k.prediction.check_finite(samples, &params.options)?;
    k.crossings_clipped = params
        .resolve_crossings
        .then(|| strata::resolve_crossings(&mut k.prediction.values));
    Ok(k)
}

/// Leave-one-out cross-validation of every surface of `samples` under `params` (the target is
/// not used): closed form for global kriging (Dubrule 1983), refits without each sample for
/// local kriging; on the CPU whatever the backend. [`Kriged::cross_validate`] does the same
/// with the systems of a [`krige`] run.
pub fn cross_validate(
    backend: &Backend,
    samples: &SampleSet,
    params: &KrigeParams,
) -> Result<Vec<SurfaceCv>, GeofieldError> {
    cross_validate_with_progress(backend, samples, params, &|_| {}, &Cancel::new())
}

/// [`cross_validate`], calling `progress` with the fraction of the folds done (from any
/// thread), and stopping with [`GeofieldError::Cancelled`] soon after `cancel` is set (between
/// groups and, for local kriging, between folds; the closed form of global kriging is one step).
pub fn cross_validate_with_progress(
    backend: &Backend,
    samples: &SampleSet,
    params: &KrigeParams,
    progress: &(dyn Fn(f64) + Sync),
    cancel: &Cancel,
) -> Result<Vec<SurfaceCv>, GeofieldError> {
    let _ = backend;
    cancel.check()?;
    let external = params
        .external_drift
        .as_ref()
        .filter(|_| params.options.kind.is_external());
    let (groups, _) = systems::build(samples, &params.variograms, &params.options, external)?;
    cv::cross_validate_groups(samples, &groups, Some(progress), cancel)
}

#[cfg(test)]
mod tests;
