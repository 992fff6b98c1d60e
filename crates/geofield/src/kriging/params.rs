//! Kriging options: the kind (simple, ordinary, universal), geometric anisotropy, the
//! neighbourhood (global or the k nearest samples), the nugget convention, precision and the
//! rule for duplicate samples; and [`KrigeParams`], all the parameters of [`super::krige`].

use geofield_core::GridSpec;

use super::variogram::Variogram;
use crate::GeofieldError;

/// Drift (trend) of universal kriging, a polynomial in the centred, scaled coordinates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Drift {
    /// 1, x, y (3 terms; needs 3 non-collinear samples).
    Linear,
    /// 1, x, y, x², xy, y² (6 terms; needs 6 samples not on one conic).
    Quadratic,
    /// 1 and an external variable e (kriging with external drift; gstat `z ~ dem`, PyKrige
    /// `external_Z`); needs [`KrigeParams::external_drift`] (see [`super::drift`]).
    External,
    /// 1, x, y and the external variable.
    LinearExternal,
}

impl Drift {
    /// The drift uses the external variable.
    pub fn is_external(&self) -> bool {
        matches!(self, Drift::External | Drift::LinearExternal)
    }

    /// The polynomial terms (1, x, y, ...) of the basis; the external term comes after them.
    pub fn polynomial_terms(&self) -> usize {
        match self {
            Drift::External => 1,
            Drift::Linear | Drift::LinearExternal => 3,
            Drift::Quadratic => 6,
        }
    }
}

/// Which kriging.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Kind {
    /// Unknown constant mean (the paper's).
    Ordinary,
    /// Known mean (the same for every surface).
    Simple { mean: f64 },
    /// Unknown polynomial drift.
    Universal { drift: Drift },
}

impl Kind {
    /// Terms of the drift basis inside the system: 0 (simple), 1 (ordinary), 3 or 6.
    pub fn drift_terms(&self) -> usize {
        match self {
            Kind::Simple { .. } => 0,
            Kind::Ordinary => 1,
            Kind::Universal { drift } => {
                drift.polynomial_terms() + usize::from(drift.is_external())
            }
        }
    }

    /// The kind's drift uses the external variable.
    pub fn is_external(&self) -> bool {
        matches!(self, Kind::Universal { drift } if drift.is_external())
    }

    /// The fewest samples the kind can work with.
    pub fn min_samples(&self) -> usize {
        self.drift_terms().max(1)
    }

    pub fn name(&self) -> &'static str {
        match self {
            Kind::Simple { .. } => "simple",
            Kind::Ordinary => "ordinary",
            Kind::Universal {
                drift: Drift::Linear,
            } => "universal (linear drift)",
            Kind::Universal {
                drift: Drift::Quadratic,
            } => "universal (quadratic drift)",
            Kind::Universal {
                drift: Drift::External,
            } => "universal (external drift)",
            Kind::Universal {
                drift: Drift::LinearExternal,
            } => "universal (linear and external drift)",
        }
    }
}

/// 2-D geometric anisotropy, gstat's convention: the range is longest along the azimuth
/// `azimuth_deg` (degrees clockwise from north) and `ratio` (0 < ratio ≤ 1) times that across it.
///
/// Distances are taken after rotating the separation into (major, minor) axes and dividing the
/// minor component by `ratio`, so the variogram's range is the major range. The same mapping for
/// the peers: PyKrige `anisotropy_angle = 90 − azimuth` (degrees counter-clockwise from +x),
/// `anisotropy_scaling = 1 / ratio`; GSTools `angles = radians(90 − azimuth)`, `anis = ratio`;
/// gstat `anis = c(azimuth, ratio)`.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Anisotropy {
    pub azimuth_deg: f64,
    pub ratio: f64,
}

impl Anisotropy {
    pub fn validate(&self) -> Result<(), GeofieldError> {
        if !self.azimuth_deg.is_finite() {
            return Err(GeofieldError::Invalid(format!(
                "anisotropy angle = {} must be finite",
                self.azimuth_deg
            )));
        }
        if !(self.ratio.is_finite() && self.ratio > 0.0 && self.ratio <= 1.0) {
            return Err(GeofieldError::Invalid(format!(
                "anisotropy ratio = {} must be in (0, 1]: the minor range over the major range",
                self.ratio
            )));
        }
        Ok(())
    }
}

/// Which samples enter each node's system.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
#[serde(tag = "neighbourhood", rename_all = "lowercase")]
pub enum Neighbourhood {
    /// Every sample (one system for the whole grid).
    Global,
    /// The `k` nearest samples (1..=64), optionally only those within `radius` (in metres,
    /// measured in the anisotropy-corrected space; inclusive). gstat `nmax`/`maxdist`, PyKrige
    /// `n_closest_points`. Ties in distance go to the sample that comes first in the input.
    /// A node with fewer samples than the kind needs gets no value (NaN), as gstat's `nmin`.
    Local { k: usize, radius: Option<f64> },
}

/// What the nugget means at a node that coincides with a sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum NuggetMode {
    /// The kriging honours the data: prediction = datum, variance 0 (gstat, PyKrige).
    Exact,
    /// The nugget is measurement error: smoothed at the samples (GSTools' default
    /// `exact=False`); identical to `Exact` away from the samples.
    MeasurementError,
}

/// Arithmetic of the node evaluation (the system is always solved in f64).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    F32,
    F64,
}

/// How samples that share a location are treated.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct MergeRule {
    /// Samples closer than this (metres, in world coordinates) are one location. `None`: 1e-9 of
    /// the samples' bounding-box diagonal (1 µm over a kilometre), or of the bulk's extent when
    /// outliers widen the box (see [`super::samples`]).
    pub distance_m: Option<f64>,
    /// Values at one location may differ by at most this much (value units) to be averaged;
    /// a larger disagreement is an error naming the samples. `None`: a tenth of the surface's
    /// standard deviation over all samples. `Some(f64::INFINITY)` always averages.
    pub tolerance: Option<f64>,
}

/// How a block is discretised: its covariances are weighted means over these points.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "rule", rename_all = "lowercase")]
pub enum Discretisation {
    /// 4 × 4 Gauss–Legendre points (±0.33998, ±0.86114 of the half-size) with the product of
    /// the Legendre weights: gstat's default block integration (its published Meuse results
    /// are reproduced with it, `tests/kriging_block.rs`).
    Gauss,
    /// n × n points at the centres of an n × n subdivision, equal weights (gstat
    /// `set = list(nblockdiscr = n)`).
    Regular { n: usize },
}

/// The most points along each side of a regular block discretisation.
pub const MAX_BLOCK_DISCRETISATION: usize = 16;

/// Block kriging (gstat `block = c(sx, sy)`): each node's value is the mean over a rectangle of
/// `size_x_m` × `size_y_m` centred on it, as the block's discretisation points average it
/// (weights wₐ): the covariance between a sample and the block is Σ wₐ C(xᵢ, xₐ), the block's
/// own C̄(B, B) = Σₐ Σ_b wₐ w_b C(xₐ − x_b) with the nugget left out (a point with itself counts
/// the structured sill only: the nugget's micro-scale variation averages out over a block, as
/// gstat has it), and the drift Σ wₐ f(xₐ). The prediction is then the weighted mean of the point
/// predictions at the points, and σ²_B the point formula's with these terms.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Block {
    pub size_x_m: f64,
    pub size_y_m: f64,
    pub discretisation: Discretisation,
}

/// 4-point Gauss–Legendre nodes on [−1, 1] and their weights (summing to 2).
const GAUSS4: [(f64, f64); 4] = [
    (-0.861_136_311_594_052_6, 0.347_854_845_137_453_8),
    (-0.339_981_043_584_856_3, 0.652_145_154_862_546_1),
    (0.339_981_043_584_856_3, 0.652_145_154_862_546_1),
    (0.861_136_311_594_052_6, 0.347_854_845_137_453_8),
];

impl Block {
    pub fn validate(&self) -> Result<(), GeofieldError> {
        for (v, what) in [(self.size_x_m, "x"), (self.size_y_m, "y")] {
            if !(v.is_finite() && v > 0.0) {
                return Err(GeofieldError::Invalid(format!(
                    "block size along {what} = {v} must be finite and > 0 metres"
                )));
            }
        }
        if let Discretisation::Regular { n } = self.discretisation
            && !(1..=MAX_BLOCK_DISCRETISATION).contains(&n)
        {
            return Err(GeofieldError::Invalid(format!(
                "block discretisation {n} must be 1 to {MAX_BLOCK_DISCRETISATION} points a side"
            )));
        }
        Ok(())
    }

    /// The discretisation points as (dx, dy, weight): offsets from the block's centre in world
    /// metres (x east, y north), row by row from the south-west, symmetric about the centre;
    /// the weights sum to 1.
    pub fn points(&self) -> Vec<(f64, f64, f64)> {
        let along = |size: f64| -> Vec<(f64, f64)> {
            match self.discretisation {
                Discretisation::Gauss => GAUSS4
                    .iter()
                    .map(|&(t, w)| (0.5 * size * t, 0.5 * w))
                    .collect(),
                Discretisation::Regular { n } => (0..n)
                    .map(|i| (size * ((i as f64 + 0.5) / n as f64 - 0.5), 1.0 / n as f64))
                    .collect(),
            }
        };
        let (xs, ys) = (along(self.size_x_m), along(self.size_y_m));
        ys.iter()
            .flat_map(|&(y, wy)| xs.iter().map(move |&(x, wx)| (x, y, wx * wy)))
            .collect()
    }
}

/// Everything but the samples, the variogram and the nodes.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct KrigeOptions {
    pub kind: Kind,
    pub anisotropy: Option<Anisotropy>,
    pub neighbourhood: Neighbourhood,
    pub nugget: NuggetMode,
    pub precision: Precision,
    pub merge: MergeRule,
    /// Block kriging: the mean over a block around each node instead of the node's value.
    pub block: Option<Block>,
}

impl Default for KrigeOptions {
    fn default() -> Self {
        KrigeOptions {
            kind: Kind::Ordinary,
            anisotropy: None,
            neighbourhood: Neighbourhood::Global,
            nugget: NuggetMode::Exact,
            precision: Precision::F64,
            merge: MergeRule::default(),
            block: None,
        }
    }
}

impl KrigeOptions {
    /// Checks every field; errors name it.
    pub fn validate(&self) -> Result<(), GeofieldError> {
        if let Kind::Simple { mean } = self.kind
            && !mean.is_finite()
        {
            return Err(GeofieldError::Invalid(format!(
                "mean = {mean} must be finite"
            )));
        }
        if let Some(a) = &self.anisotropy {
            a.validate()?;
        }
        if let Some(b) = &self.block {
            b.validate()?;
        }
        if let Neighbourhood::Local { k, radius } = self.neighbourhood {
            if k == 0 || k > crate::neighbors::K_MAX {
                return Err(GeofieldError::Invalid(format!(
                    "neighbors = {k} must be in 1..={} (use global kriging for more)",
                    crate::neighbors::K_MAX
                )));
            }
            if k < self.kind.min_samples() {
                return Err(GeofieldError::Invalid(format!(
                    "neighbors = {k}: {} kriging needs at least {} samples per node",
                    self.kind.name(),
                    self.kind.min_samples()
                )));
            }
            if let Some(r) = radius
                && !(r.is_finite() && r > 0.0)
            {
                return Err(GeofieldError::Invalid(format!(
                    "radius = {r} must be finite and > 0"
                )));
            }
        }
        if let Some(d) = self.merge.distance_m
            && !(d.is_finite() && d >= 0.0)
        {
            return Err(GeofieldError::Invalid(format!(
                "merge distance = {d} must be finite and >= 0"
            )));
        }
        if let Some(t) = self.merge.tolerance
            && (t.is_nan() || t < 0.0)
        {
            return Err(GeofieldError::Invalid(format!(
                "merge tolerance = {t} must be >= 0"
            )));
        }
        Ok(())
    }
}

/// Where [`super::krige`] predicts.
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    /// Every cell centre of a grid (row 0 north), evaluated on the backend.
    Grid(GridSpec),
    /// Arbitrary world points (`xs[j]`, `ys[j]`), evaluated on the CPU.
    Points { xs: Vec<f64>, ys: Vec<f64> },
}

/// Everything [`super::krige`] needs besides the backend and the samples.
#[derive(Clone, Debug, PartialEq)]
pub struct KrigeParams {
    /// One variogram for every surface, or one per surface (in the samples' order).
    pub variograms: Vec<Variogram>,
    pub options: KrigeOptions,
    pub target: Target,
    /// Compute the kriging variance too.
    pub variance: bool,
    /// The surfaces are strata, top first: clip each to the one above
    /// ([`super::strata::resolve_crossings`]) and report the nodes changed.
    pub resolve_crossings: bool,
    /// The external variable of [`Drift::External`] / [`Drift::LinearExternal`].
    pub external_drift: Option<std::sync::Arc<super::drift::ExternalDrift>>,
}

impl KrigeParams {
    /// Ordinary global kriging of every surface with `variogram` at `target`, no variance.
    pub fn new(variogram: Variogram, target: Target) -> Self {
        KrigeParams {
            variograms: vec![variogram],
            options: KrigeOptions::default(),
            target,
            variance: false,
            resolve_crossings: false,
            external_drift: None,
        }
    }

    /// Bytes per output value: 4 for [`Precision::F32`], 8 for [`Precision::F64`].
    pub fn output_bytes(&self) -> usize {
        match self.options.precision {
            Precision::F32 => 4,
            Precision::F64 => 8,
        }
    }

    /// For a grid target, refuses a grid whose predictions (and variances) of `surfaces`
    /// surfaces, at the output precision plus the f64 working copies, would not fit in the
    /// available memory (`MemAvailable`; no check where it cannot be read). [`super::krige`]
    /// checks this first; a caller may check before reading the samples.
    pub fn check_memory(&self, surfaces: usize) -> Result<(), GeofieldError> {
        let Target::Grid(grid) = &self.target else {
            return Ok(());
        };
        let bands = surfaces * if self.variance { 2 } else { 1 };
        if let Some(avail) = geofield_core::available_memory_bytes() {
            grid.check_memory(bands.max(1), 8 + self.output_bytes(), u128::from(avail))?;
        }
        Ok(())
    }
}
