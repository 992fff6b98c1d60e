//! Cokriging from numpy: `geofield.cokrige` ends here.

use geofield::kriging::cokriging::{CoKind, CoParams, cokrige_on, cross_bins, fit_lmc, shapes};
use geofield::kriging::{Anisotropy, Model, fit_models};
use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

use crate::backend::open;
use crate::errors;
use crate::grid::Grid;
use crate::kriging::{samples, target};

/// Cokriging of the first of `values` (NaN where a variable is not known) with a linear model
/// of coregionalisation of the structures `models` ("a+b") fitted as gstat's `fit.lmc` (ranges
/// given, or fitted to the primary's variogram), on `backend`. Returns `(values, variance or
/// None, LMC JSON, what evaluated it)`;
/// on a grid the nodes are row-major from the north-west corner.
#[pyfunction]
#[pyo3(signature = (xs, ys, values, names, models, ranges, fit_nugget, lags, max_lag, means, anisotropy, points, grid, variance, backend))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub fn cokrige_native<'py>(
    py: Python<'py>,
    xs: PyReadonlyArray1<'py, f64>,
    ys: PyReadonlyArray1<'py, f64>,
    values: Vec<PyReadonlyArray1<'py, f64>>,
    names: Vec<String>,
    models: String,
    ranges: Option<Vec<f64>>,
    fit_nugget: bool,
    lags: usize,
    max_lag: Option<f64>,
    means: Option<Vec<f64>>,
    anisotropy: Option<(f64, f64)>,
    points: Option<(PyReadonlyArray1<'py, f64>, PyReadonlyArray1<'py, f64>)>,
    grid: Option<Grid>,
    variance: bool,
    backend: &str,
) -> PyResult<(
    Bound<'py, PyArray1<f64>>,
    Option<Bound<'py, PyArray1<f64>>>,
    String,
    String,
)> {
    let sel = open(backend)?;
    let be = sel.backend.clone();
    let set = samples(&xs, &ys, &values, names)?;
    let target = target(points, grid)?;
    let models = Model::parse_nested(&models).map_err(|e| errors::arg("model", e))?;
    let anisotropy = anisotropy.map(|(azimuth_deg, ratio)| Anisotropy { azimuth_deg, ratio });
    let kind = match means {
        None => CoKind::Ordinary,
        Some(means) => CoKind::Simple { means },
    };
    let k = set.surfaces.len();
    let (out, lmc) = py
        .detach(|| {
            let bins = cross_bins(&set, anisotropy, lags, max_lag)?;
            let ranges = match ranges {
                Some(r) => r,
                None => fit_models(&models, &bins[0], fit_nugget)?
                    .variogram
                    .structures
                    .iter()
                    .map(|s| s.range)
                    .collect(),
            };
            let lmc = fit_lmc(&bins, k, &shapes(&models, &ranges)?, fit_nugget)?;
            let p = CoParams {
                lmc: lmc.clone(),
                kind,
                anisotropy,
                variance,
                target,
            };
            Ok::<_, geofield::GeofieldError>((cokrige_on(&be, &set, &p)?, lmc))
        })
        .map_err(errors::lib)?;
    let json = serde_json::to_string(&lmc).map_err(|e| errors::arg("model", e.to_string()))?;
    let var = out.variance.map(|v| PyArray1::from_vec(py, v));
    let evaluated = out.evaluated.clone();
    Ok((PyArray1::from_vec(py, out.values), var, json, evaluated))
}
