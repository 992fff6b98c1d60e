//! Kriging: interpolation of one or many surfaces from scattered samples, with the kriging
//! variance, variograms and cross-validation.
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
//! - [`global`]: every sample in one system, factored once; predictions by dual kriging,
//!   variance from the factor, closed-form leave-one-out (Dubrule 1983).
//! - [`local`]: the k nearest samples within an optional radius, one small system per node.
//! - [`space`]: centring, geometric anisotropy ([`Anisotropy`], gstat's convention), the
//!   covariance with the exactness rule.
//! - [`samples`]: sample sets, missing values, merging of duplicates.
//! - [`empirical`], [`variogram`]: empirical variograms, weighted least-squares fits, models.
//! - [`paper`]: the paper's per-node Gaussian elimination, for the benchmark.
//!
//! Many surfaces (the paper's H stratum surfaces sampled at the same wells) share one factor;
//! a surface with missing values at some wells, or with its own variogram, gets its own system
//! (surfaces are grouped by (variogram, set of wells)).
//!
//! Reference: Meng Li, Lanfang Dong, "Research on CUDA-based Kriging Interpolation Algorithm"
//! (USTC); the project note `notes/kriging.md`. Dual kriging: Matheron; Dubrule, "Cross
//! validation of kriging in a unique neighborhood", Math. Geol. 15 (1983) 687–699,
//! doi:10.1007/BF01033232.

pub mod cuda;
pub mod empirical;
pub mod global;
#[cfg(feature = "io")]
pub mod io;
pub mod local;
pub mod paper;
pub mod params;
pub mod samples;
pub mod space;
pub mod strata;
pub mod variogram;

use std::collections::BTreeMap;

use geofield_core::GridSpec;

pub use empirical::{Estimator, Fit, LagBin, LagSpec, empirical, fit, pool, surface_bins};
pub use global::{CrossValidation, GlobalKriging};
pub use local::LocalKriging;
pub use params::{
    Anisotropy, Drift, Kind, KrigeOptions, MergeRule, Neighbourhood, NuggetMode, Precision,
};
pub use samples::{SampleSet, Surface};
pub use variogram::{Model, Structure, Variogram};

use crate::{Backend, GeofieldError};

/// Predictions per surface and, when asked, the variance, at a set of nodes.
pub type Evaluated = (Vec<Vec<f64>>, Option<Vec<f64>>);

/// One system: global or local.
pub enum System {
    Global(GlobalKriging),
    Local(LocalKriging),
}

impl System {
    pub fn frame(&self) -> &space::Frame {
        match self {
            System::Global(g) => &g.frame,
            System::Local(l) => &l.frame,
        }
    }

    pub fn samples(&self) -> usize {
        match self {
            System::Global(g) => g.samples(),
            System::Local(l) => l.samples(),
        }
    }

    fn merged(&self) -> &[Vec<usize>] {
        match self {
            System::Global(g) => &g.merged,
            System::Local(l) => &l.merged,
        }
    }

    /// Predictions (`pred[h][j]`) and variances at kriging-space nodes, on the CPU.
    pub fn eval_nodes(
        &self,
        nx: &[f64],
        ny: &[f64],
        variance: bool,
    ) -> Result<Evaluated, GeofieldError> {
        match self {
            System::Global(g) => Ok(g.eval_nodes(nx, ny, variance)),
            System::Local(l) => l.eval_nodes(nx, ny, variance),
        }
    }
}

/// Surfaces kriged together: same variogram, same wells.
pub struct Group {
    /// Indices into the sample set's surfaces.
    pub surfaces: Vec<usize>,
    pub system: System,
}

/// What the kriging did, per group of surfaces.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct GroupReport {
    pub surfaces: Vec<String>,
    /// Distinct sample locations in the system.
    pub samples: usize,
    /// Samples missing for these surfaces.
    pub missing: usize,
    /// Samples merged into one location (described by file and line).
    pub merged: Vec<Vec<String>>,
}

/// Builds the systems: surfaces grouped by (variogram, wells present), each group merged and
/// factored. `variograms` has one entry (for every surface) or one per surface.
pub fn build(
    set: &SampleSet,
    variograms: &[Variogram],
    opts: &KrigeOptions,
) -> Result<(Vec<Group>, Vec<GroupReport>), GeofieldError> {
    set.validate()?;
    opts.validate()?;
    let hc = set.surfaces.len();
    if variograms.len() != 1 && variograms.len() != hc {
        return Err(GeofieldError::Invalid(format!(
            "{} variograms for {hc} surfaces: give one for all or one per surface",
            variograms.len()
        )));
    }
    for v in variograms {
        v.validate()?;
    }
    let mut keys: BTreeMap<(usize, Vec<usize>), Vec<usize>> = BTreeMap::new();
    for h in 0..hc {
        let present: Vec<usize> = (0..set.len())
            .filter(|&i| !set.surfaces[h].values[i].is_nan())
            .collect();
        let vi = if variograms.len() == 1 { 0 } else { h };
        keys.entry((vi, present)).or_default().push(h);
    }
    let mut groups = vec![];
    let mut reports = vec![];
    for ((vi, present), surfaces) in keys {
        let names: Vec<String> = surfaces
            .iter()
            .map(|&h| set.surfaces[h].name.clone())
            .collect();
        let m = samples::merge(set, &present, &surfaces, &opts.merge)?;
        let frame = space::Frame::new(&m.xs, &m.ys, opts.anisotropy);
        let context = |e: GeofieldError| match e {
            GeofieldError::Invalid(s) => {
                GeofieldError::Invalid(format!("{}: {s}", names.join(", ")))
            }
            e => e,
        };
        let system = match opts.neighbourhood {
            Neighbourhood::Global => System::Global(
                GlobalKriging::from_merged(set, &m, frame, &variograms[vi], opts)
                    .map_err(context)?,
            ),
            Neighbourhood::Local { k, radius } => System::Local(
                LocalKriging::from_merged(set, &m, frame, &variograms[vi], opts, k, radius)
                    .map_err(context)?,
            ),
        };
        reports.push(GroupReport {
            surfaces: names,
            samples: system.samples(),
            missing: set.len() - present.len(),
            merged: system
                .merged()
                .iter()
                .map(|g| g.iter().map(|&i| set.describe(i)).collect())
                .collect(),
        });
        groups.push(Group { surfaces, system });
    }
    // Keep the input order of the surfaces' first appearance.
    let mut order: Vec<usize> = (0..groups.len()).collect();
    order.sort_by_key(|&g| groups[g].surfaces[0]);
    let mut gs: Vec<Option<Group>> = groups.into_iter().map(Some).collect();
    let groups = order.iter().filter_map(|&g| gs[g].take()).collect();
    let reports = order.iter().map(|&g| reports[g].clone()).collect();
    Ok((groups, reports))
}

/// Kriging results: `values[h]` and `variance[h]` per surface, in the order of the sample
/// set's surfaces, over the nodes (row-major rows × cols for a grid).
#[derive(Clone, Debug, PartialEq)]
pub struct Prediction {
    pub values: Vec<Vec<f64>>,
    pub variance: Option<Vec<Vec<f64>>>,
    pub groups: Vec<GroupReport>,
    /// Which arithmetic evaluated the nodes, e.g. "cpu f64".
    pub evaluated: String,
    /// GPU: seconds spent in kernels (CUDA events), all groups together.
    pub device_seconds: Option<f64>,
}

impl Prediction {
    /// An error unless every prediction and variance is finite, except the NaN that local
    /// kriging leaves where a node has fewer samples within reach than the kind needs
    /// ([`Neighbourhood::Local`]). The error names the surface, the node and the largest sample
    /// value of that surface (values near the f64 limit overflow the weighted sums).
    pub fn check_finite(&self, set: &SampleSet, opts: &KrigeOptions) -> Result<(), GeofieldError> {
        let nan_allowed = matches!(opts.neighbourhood, Neighbourhood::Local { .. });
        let bad = |v: f64| v.is_infinite() || (v.is_nan() && !nan_allowed);
        let predictions = self
            .values
            .iter()
            .enumerate()
            .map(|(h, b)| ("prediction", h, b));
        let variances = self
            .variance
            .iter()
            .flat_map(|v| v.iter().enumerate().map(|(h, b)| ("variance", h, b)));
        for (what, h, band) in predictions.chain(variances) {
            if let Some(node) = band.iter().position(|&v| bad(v)) {
                let surface = set.surfaces.get(h);
                let largest = surface
                    .map(|s| s.values.iter().fold(0.0f64, |m, v| m.max(v.abs())))
                    .unwrap_or(f64::NAN);
                return Err(GeofieldError::NonFinite {
                    what: format!(
                        "kriging {what} of {} at node {node}",
                        surface.map_or("?", |s| s.name.as_str())
                    ),
                    cause: format!(
                        "the largest |sample value| is {largest:.3e}; values that large overflow \
                         the kriging sums: rescale the values"
                    ),
                });
            }
        }
        Ok(())
    }
}

/// Kriging at world points (`px`, `py`).
pub fn krige_points(
    backend: &Backend,
    set: &SampleSet,
    variograms: &[Variogram],
    opts: &KrigeOptions,
    px: &[f64],
    py: &[f64],
    variance: bool,
) -> Result<Prediction, GeofieldError> {
    if px.len() != py.len() {
        return Err(GeofieldError::Invalid(
            "the x and y coordinates of the points differ in length".into(),
        ));
    }
    let (groups, reports) = build(set, variograms, opts)?;
    let hc = set.surfaces.len();
    let mut values = vec![vec![]; hc];
    let mut var = variance.then(|| vec![vec![]; hc]);
    for g in &groups {
        let f = g.system.frame();
        let (nx, ny): (Vec<f64>, Vec<f64>) =
            px.iter().zip(py).map(|(&x, &y)| f.apply(x, y)).unzip();
        // The kernels take grids: arbitrary points are evaluated on the CPU (said in `evaluated`).
        let (p, v) = g.system.eval_nodes(&nx, &ny, variance)?;
        for (k, &h) in g.surfaces.iter().enumerate() {
            values[h] = p[k].clone();
            if let (Some(var), Some(v)) = (var.as_mut(), v.as_ref()) {
                var[h] = v.clone();
            }
        }
    }
    Ok(Prediction {
        values,
        variance: var,
        groups: reports,
        evaluated: match backend {
            Backend::Cpu => "cpu f64".into(),
            Backend::Cuda(_) => "cpu f64 (points are evaluated on the CPU)".into(),
        },
        device_seconds: None,
    })
}

fn evaluated(backend: &Backend, precision: Precision) -> String {
    match (backend, precision) {
        (Backend::Cpu, _) => "cpu f64".into(),
        (Backend::Cuda(_), Precision::F32) => "cuda f32".into(),
        (Backend::Cuda(_), Precision::F64) => "cuda f64".into(),
    }
}

/// Kriging at every cell centre of `grid` (row 0 north). Rows are processed in bands, so the
/// memory is the output plus O(band × n) scratch. `progress` gets the fraction done.
///
/// ```
/// use geofield::Backend;
/// use geofield::kriging::{self, KrigeOptions, Model, SampleSet, Variogram};
/// use geofield_core::{Extent, GridSpec};
///
/// let set = SampleSet::new(vec![5.0, 25.0, 15.0], vec![5.0, 15.0, 25.0],
///     vec![vec![1.0, 2.0, 3.0]]);
/// let vg = Variogram::new(Model::Exponential, 1.0, 30.0, 0.0)?;
/// let grid = GridSpec::from_extent(Extent::new(0.0, 0.0, 30.0, 30.0)?, 10.0)?;
/// let p = kriging::krige_grid(&Backend::Cpu, &set, &[vg], &KrigeOptions::default(), &grid,
///     true, None)?;
/// // Kriging is exact at a sample: (5, 5) is the centre of the south-west cell.
/// let sw = (grid.rows - 1) * grid.cols;
/// assert!((p.values[0][sw] - 1.0).abs() < 1e-9);
/// assert!(p.variance.as_ref().is_some_and(|v| v[0][sw].abs() < 1e-9));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn krige_grid(
    backend: &Backend,
    set: &SampleSet,
    variograms: &[Variogram],
    opts: &KrigeOptions,
    grid: &GridSpec,
    variance: bool,
    progress: Option<&(dyn Fn(f64) + Sync)>,
) -> Result<Prediction, GeofieldError> {
    let (groups, reports) = build(set, variograms, opts)?;
    krige_grid_with(
        backend, set, &groups, reports, opts, grid, variance, progress,
    )
}

/// [`krige_grid`] with systems already built by [`build`].
#[allow(clippy::too_many_arguments)]
pub fn krige_grid_with(
    backend: &Backend,
    set: &SampleSet,
    groups: &[Group],
    reports: Vec<GroupReport>,
    opts: &KrigeOptions,
    grid: &GridSpec,
    variance: bool,
    progress: Option<&(dyn Fn(f64) + Sync)>,
) -> Result<Prediction, GeofieldError> {
    let (rows, cols) = (grid.rows, grid.cols);
    let cells = rows
        .checked_mul(cols)
        .ok_or_else(|| GeofieldError::Invalid("the grid has too many cells".into()))?;
    let hc = set.surfaces.len();
    let mut values = vec![vec![]; hc];
    let mut var = variance.then(|| vec![vec![]; hc]);
    let total_work = groups.len() * rows;
    let mut done = 0usize;
    let mut device_seconds = None;
    for g in groups {
        let map = g.system.frame().node_map(grid);
        let (mut p, mut v) = if let Backend::Cuda(gpu) = backend {
            let (p, v, s) =
                cuda::eval_grid(gpu, &g.system, &map, rows, cols, variance, opts.precision)?;
            *device_seconds.get_or_insert(0.0) += s;
            done += rows;
            if let Some(f) = progress {
                f(done as f64 / total_work.max(1) as f64);
            }
            (p, v)
        } else {
            let mut p: Vec<Vec<f64>> = vec![Vec::with_capacity(cells); g.surfaces.len()];
            let mut v = variance.then(|| Vec::with_capacity(cells));
            let band = (65_536 / cols.max(1)).clamp(1, rows.max(1));
            let mut r0 = 0;
            while r0 < rows {
                let r1 = (r0 + band).min(rows);
                let mut nx = Vec::with_capacity((r1 - r0) * cols);
                let mut ny = Vec::with_capacity((r1 - r0) * cols);
                for r in r0..r1 {
                    for c in 0..cols {
                        let (x, y) = map.node(r, c);
                        nx.push(x);
                        ny.push(y);
                    }
                }
                let (bp, bv) = g.system.eval_nodes(&nx, &ny, variance)?;
                for (dst, src) in p.iter_mut().zip(bp) {
                    dst.extend_from_slice(&src);
                }
                if let (Some(v), Some(bv)) = (v.as_mut(), bv) {
                    v.extend_from_slice(&bv);
                }
                done += r1 - r0;
                if let Some(f) = progress {
                    f(done as f64 / total_work.max(1) as f64);
                }
                r0 = r1;
            }
            (p, v)
        };
        for (k, &h) in g.surfaces.iter().enumerate() {
            values[h] = std::mem::take(&mut p[k]);
            if let (Some(var), Some(v)) = (var.as_mut(), v.as_mut()) {
                var[h] = if k + 1 == g.surfaces.len() {
                    std::mem::take(v)
                } else {
                    v.clone()
                };
            }
        }
    }
    Ok(Prediction {
        values,
        variance: var,
        groups: reports,
        evaluated: evaluated(backend, opts.precision),
        device_seconds,
    })
}

/// Leave-one-out cross-validation of every surface: closed form for global kriging, refits
/// without each sample for local kriging. `cv[h]` per surface (errors per distinct location of
/// that surface's group, in the group's order; `locations[h]` gives each one's first input
/// sample).
pub struct SurfaceCv {
    pub surface: String,
    pub locations: Vec<usize>,
    pub error: Vec<f64>,
    pub variance: Vec<f64>,
    pub rmse: f64,
    pub mean_error: f64,
    pub mean_standardised: f64,
    pub mean_square_standardised: f64,
}

/// See [`SurfaceCv`].
pub fn cross_validate(set: &SampleSet, groups: &[Group]) -> Result<Vec<SurfaceCv>, GeofieldError> {
    let mut out: Vec<Option<SurfaceCv>> = (0..set.surfaces.len()).map(|_| None).collect();
    for g in groups {
        let (cv, first) = match &g.system {
            System::Global(s) => (s.cross_validate(), s.first.clone()),
            System::Local(s) => (local_loo(s)?, s.first.clone()),
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
fn local_loo(s: &LocalKriging) -> Result<CrossValidation, GeofieldError> {
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
    let error = (0..hc)
        .map(|h| rows.iter().map(|r| r.0[h]).collect())
        .collect();
    let variance = rows.iter().map(|r| r.1).collect();
    Ok(global::summarise(error, variance))
}

#[cfg(test)]
mod tests;
