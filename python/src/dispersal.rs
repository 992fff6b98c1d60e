//! `geofield.disperse`: seed density maps from a stem map.

use std::path::Path;

use geofield::dispersal::{self, DisperseOptions, Method, Precision, Stand};
use geofield_core::{Extent, GridSpec, RasterData};
use numpy::{PyArray1, PyArrayMethods, PyReadonlyArray1};
use pyo3::prelude::*;

use crate::backend::open;
use crate::errors;
use crate::grid::{Grid, grid_tuple};
use crate::interrupt::run_interruptible;

fn method(s: &str) -> PyResult<Method> {
    Ok(match s {
        "auto" => Method::Auto,
        "exact" => Method::Exact,
        "multires" => Method::Multires,
        "cutoff" => Method::Cutoff,
        "nearfar" => Method::NearFar,
        _ => {
            return Err(errors::arg(
                "method",
                format!("{s:?} is not one of 'auto', 'exact', 'multires', 'cutoff', 'nearfar'"),
            ));
        }
    })
}

/// A precision argument: `auto` (None: the caller's default), `float32`/`f32`, `float64`/`f64`.
pub(crate) fn precision(s: &str) -> PyResult<Option<Precision>> {
    Ok(match s {
        "auto" => None,
        "float32" | "f32" => Some(Precision::F32),
        "float64" | "f64" => Some(Precision::F64),
        _ => {
            return Err(errors::arg(
                "precision",
                format!("{s:?} is not one of 'auto', 'float32', 'float64'"),
            ));
        }
    })
}

/// The native half of `geofield.disperse`: the Python layer has turned the trees into
/// contiguous arrays and the species into TOML text (`species_source` names where it came from,
/// for error messages). Returns (bands as one (species, rows, cols) array, species names,
/// the per-species reports as JSON, the backend label, the grid). Interruptible (Ctrl-C);
/// `progress` is called with the fraction of the species done.
#[pyfunction]
#[pyo3(signature = (x_m, y_m, dbh_cm, species_index, species_toml, species_source, extent, cell_size_m, method_name, tolerance, torus, precision_name, backend, progress = None))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub fn disperse<'py>(
    py: Python<'py>,
    x_m: PyReadonlyArray1<'py, f64>,
    y_m: PyReadonlyArray1<'py, f64>,
    dbh_cm: PyReadonlyArray1<'py, f64>,
    species_index: PyReadonlyArray1<'py, u32>,
    species_toml: &str,
    species_source: &str,
    extent: (f64, f64, f64, f64),
    cell_size_m: f64,
    method_name: &str,
    tolerance: f64,
    torus: bool,
    precision_name: &str,
    backend: &str,
    progress: Option<Bound<'py, PyAny>>,
) -> PyResult<(Bound<'py, PyAny>, Vec<String>, String, String, Grid)> {
    let species = dispersal::io::parse_species(species_toml, Path::new(species_source))
        .map_err(errors::input)?;
    let n_species = species.len() as u32;
    let sp = species_index.as_slice()?;
    if let Some(i) = sp.iter().position(|&s| s >= n_species) {
        return Err(errors::arg(
            "trees",
            format!(
                "tree {i} has species index {} of {n_species} species",
                sp[i]
            ),
        ));
    }
    let stand = Stand::new(
        x_m.as_slice()?.to_vec(),
        y_m.as_slice()?.to_vec(),
        dbh_cm.as_slice()?.to_vec(),
        sp.to_vec(),
    )
    .map_err(|e| errors::arg("trees", e))?;
    let extent = Extent::new(extent.0, extent.1, extent.2, extent.3)
        .map_err(|e| errors::arg("extent", e))?;
    let grid =
        GridSpec::from_extent(extent, cell_size_m).map_err(|e| errors::arg("cell_size_m", e))?;
    let method = method(method_name)?;
    let precision = precision(precision_name)?;
    let sel = open(backend)?;
    let be = sel.backend.clone();
    let opts = DisperseOptions {
        method,
        tolerance,
        precision: precision.unwrap_or_else(|| dispersal::reference_precision(&be)),
        torus,
        multires_variant_b: false,
    };
    let n = species.len().max(1) as f64;
    let result = run_interruptible(py, progress.as_ref(), |cancel, sink| {
        dispersal::disperse_with_progress(
            &be,
            &grid,
            &species,
            &stand,
            &opts,
            &mut |step| {
                if let dispersal::SpeciesStep::Done { index, .. } = step {
                    sink.set((index + 1) as f64 / n);
                }
            },
            cancel,
        )
    })?;
    let reports = serde_json::to_string(&result.reports)
        .map_err(|e| errors::raise(errors::Class::Runtime, e.to_string()))?;
    let shape = [species.len(), grid.rows, grid.cols];
    let names = result.raster.band_names.clone();
    let array = match result.raster.data {
        RasterData::F64(v) => PyArray1::from_vec(py, v).reshape(shape)?.into_any(),
        RasterData::F32(v) => PyArray1::from_vec(py, v).reshape(shape)?.into_any(),
    };
    Ok((array, names, reports, be.label(), grid_tuple(&grid)))
}

/// The species names of a species file's text, checked by the library's parser.
#[pyfunction]
pub fn species_names(species_toml: &str, species_source: &str) -> PyResult<Vec<String>> {
    let species = dispersal::io::parse_species(species_toml, Path::new(species_source))
        .map_err(errors::input)?;
    Ok(species.into_iter().map(|s| s.name).collect())
}
