//! What [`super::krige`] returns: the predictions (and variances) per surface, what each
//! group of surfaces did, the timings, and the systems for cross-validation; rasters of a grid
//! target at the requested precision.

use std::fmt;

use rayon::prelude::*;

use geofield_core::{GridSpec, Raster, RasterData};

use super::cv::{SurfaceCv, cross_validate_groups};
use super::params::{KrigeOptions, Neighbourhood, Precision};
use super::samples::SampleSet;
use super::strata::{self, VoxelModel};
use super::systems::{Group, GroupReport};
use crate::GeofieldError;

/// Kriging results: `values[h]` and `variance[h]` per surface, in the order of the sample
/// set's surfaces, over the nodes (row-major rows × cols for a grid).
#[derive(Clone, Debug, PartialEq)]
pub struct Prediction {
    /// Predictions, `values[h][node]`.
    pub values: Vec<Vec<f64>>,
    /// Kriging variances, `variance[h][node]`, when asked for.
    pub variance: Option<Vec<Vec<f64>>>,
    /// What each group of surfaces (same variogram, same wells) did.
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
            if let Some(node) = band.par_iter().position_first(|&v| bad(v)) {
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

/// Which band of a [`Kriged`] grid [`Kriged::to_raster`] makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Band {
    /// The predictions.
    Prediction,
    /// The kriging variances (values' units squared).
    Variance,
    /// The kriging standard deviations, the square roots of the variances.
    StandardDeviation,
}

/// The result of [`super::krige`].
pub struct Kriged {
    /// Predictions (and variances) per surface; with [`super::KrigeParams::resolve_crossings`]
    /// the predictions are already clipped.
    pub prediction: Prediction,
    /// With [`super::KrigeParams::resolve_crossings`]: per surface, the nodes clipped to the
    /// surface above.
    pub crossings_clipped: Option<Vec<usize>>,
    /// Seconds spent merging the samples and building (factoring) the systems.
    pub seconds_factor: f64,
    /// Seconds spent evaluating the target's nodes.
    pub seconds_grid: f64,
    pub(crate) grid: Option<GridSpec>,
    pub(crate) options: KrigeOptions,
    pub(crate) names: Vec<String>,
    pub(crate) groups: Vec<Group>,
}

impl fmt::Debug for Kriged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kriged")
            .field("prediction", &self.prediction)
            .field("crossings_clipped", &self.crossings_clipped)
            .field("seconds_factor", &self.seconds_factor)
            .field("seconds_grid", &self.seconds_grid)
            .field("grid", &self.grid)
            .field("options", &self.options)
            .field("surfaces", &self.names)
            .finish_non_exhaustive()
    }
}

impl Kriged {
    /// The grid of a grid target (`None` for points).
    pub fn grid(&self) -> Option<&GridSpec> {
        self.grid.as_ref()
    }

    /// The options the systems were built with.
    pub fn options(&self) -> &KrigeOptions {
        &self.options
    }

    /// The surfaces' names, in the samples' order.
    pub fn surfaces(&self) -> &[String] {
        &self.names
    }

    /// What each group of surfaces (same variogram, same wells) did.
    pub fn groups(&self) -> &[GroupReport] {
        &self.prediction.groups
    }

    /// One warning per set of samples merged into one location (values averaged), naming them.
    pub fn warnings(&self) -> Vec<String> {
        self.groups()
            .iter()
            .flat_map(|r| &r.merged)
            .map(|m| {
                format!(
                    "{} samples at one location were merged (values averaged): {}",
                    m.len(),
                    m.join(", ")
                )
            })
            .collect()
    }

    fn grid_or_err(&self) -> Result<&GridSpec, GeofieldError> {
        self.grid.as_ref().ok_or_else(|| {
            GeofieldError::Invalid("the kriging target is points, not a grid".into())
        })
    }

    /// A band per surface, on the grid target, as f32 or f64 by
    /// [`KrigeOptions::precision`]. An error for a points target, and for the variance (or
    /// standard deviation) when it was not computed.
    pub fn to_raster(&self, band: Band) -> Result<Raster, GeofieldError> {
        let grid = self.grid_or_err()?;
        let bands = match band {
            Band::Prediction => &self.prediction.values,
            Band::Variance | Band::StandardDeviation => {
                self.prediction.variance.as_ref().ok_or_else(|| {
                    GeofieldError::Invalid(
                        "the kriging variance was not computed (KrigeParams::variance)".into(),
                    )
                })?
            }
        };
        let value = |v: f64| {
            if band == Band::StandardDeviation {
                v.sqrt()
            } else {
                v
            }
        };
        let values = bands.iter().flatten().map(|&v| value(v));
        let data = match self.options.precision {
            Precision::F64 => RasterData::F64(values.collect()),
            Precision::F32 => RasterData::F32(values.map(|v| v as f32).collect()),
        };
        Ok(Raster::new(*grid, self.names.clone(), data)?)
    }

    /// A map title: the kind, the neighbourhood, blocks and the arithmetic, e.g. "ordinary
    /// kriging, global (cpu f64)", "ordinary kriging, global, 20 x 20 m blocks (cpu f64)".
    pub fn title(&self) -> String {
        format!(
            "{} kriging, {}{} ({})",
            self.options.kind.name(),
            match self.options.neighbourhood {
                Neighbourhood::Global => "global".to_string(),
                Neighbourhood::Local { k, .. } => format!("{k} nearest"),
            },
            self.options.block.map_or(String::new(), |b| format!(
                ", {} x {} m blocks",
                b.size_x_m, b.size_y_m
            )),
            self.prediction.evaluated
        )
    }

    /// Leave-one-out cross-validation of every surface with the systems already built (see
    /// [`SurfaceCv`]); `samples` are the ones given to [`super::krige`].
    pub fn cross_validate(&self, samples: &SampleSet) -> Result<Vec<SurfaceCv>, GeofieldError> {
        let names = samples.surfaces.iter().map(|s| &s.name);
        if !names.eq(self.names.iter()) {
            return Err(GeofieldError::Invalid(
                "cross-validation needs the samples that were kriged".into(),
            ));
        }
        cross_validate_groups(samples, &self.groups, None, &crate::Cancel::new())
    }

    /// The voxel model of the predicted surfaces (strata, top first) with slabs of `dz_m`
    /// metres (see [`strata::voxelise`]), refused beyond a quarter of the available memory
    /// (at most 2³² voxels).
    pub fn voxels(&self, dz_m: f64) -> Result<VoxelModel, GeofieldError> {
        let grid = self.grid_or_err()?;
        let max_voxels = geofield_core::available_memory_bytes()
            .map_or(1 << 31, |m| (m / 4) as usize)
            .min(1 << 32);
        strata::voxelise(
            &self.prediction.values,
            grid.rows,
            grid.cols,
            dz_m,
            max_voxels,
        )
    }
}
