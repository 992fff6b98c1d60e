//! 3-D kriging from numpy: `geofield.krige3d`, `geofield.variogram3d` and the PyKrige 3-D
//! drop-ins end here.

use geofield::kriging::volume::{
    self, Anisotropy3, Axes3, Krige3Params, Samples3, Target3, drift_residuals3, empirical3,
};
use geofield::kriging::{Drift, Kind, NuggetMode, fit_models};
use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

use crate::backend::open;
use crate::errors;
use crate::kriging::{VariogramArg, variogram};

type Xyz<'py> = (
    PyReadonlyArray1<'py, f64>,
    PyReadonlyArray1<'py, f64>,
    PyReadonlyArray1<'py, f64>,
);

fn vecs(a: &Xyz<'_>) -> PyResult<(Vec<f64>, Vec<f64>, Vec<f64>)> {
    Ok((
        a.0.as_slice()?.to_vec(),
        a.1.as_slice()?.to_vec(),
        a.2.as_slice()?.to_vec(),
    ))
}

/// The anisotropy Python passes: `(convention, parameters)` with convention `"gstat"` (azimuth,
/// dip, rake degrees, ratio 1, ratio 2), `"gstools"` (three angles in radians, two length-scale
/// ratios) or `"pykrige"` (scaling y, scaling z, angles about x, y, z in degrees).
fn anisotropy(a: Option<(String, Vec<f64>)>) -> PyResult<Anisotropy3> {
    let Some((conv, p)) = a else {
        return Ok(Anisotropy3::isotropic());
    };
    if p.len() != 5 {
        return Err(errors::arg(
            "anisotropy",
            format!("{conv}: expected 5 numbers, got {}", p.len()),
        ));
    }
    match conv.as_str() {
        "gstat" => Anisotropy3::gstat(p[0], p[1], p[2], p[3], p[4]),
        "gstools" => Anisotropy3::gstools([p[0], p[1], p[2]], [p[3], p[4]]),
        "pykrige" => Anisotropy3::pykrige(p[0], p[1], p[2], p[3], p[4]),
        c => {
            return Err(errors::arg(
                "anisotropy",
                format!("{c:?} is not 'gstat', 'gstools' or 'pykrige'"),
            ));
        }
    }
    .map_err(errors::lib)
}

fn kind(kind: &str, mean: Option<f64>) -> PyResult<Kind> {
    Ok(match (kind, mean) {
        ("ordinary", None) => Kind::Ordinary,
        ("simple", Some(mean)) => Kind::Simple { mean },
        ("simple", None) => return Err(errors::arg("mean", "simple kriging needs the mean")),
        ("universal", None) => Kind::Universal {
            drift: Drift::Linear,
        },
        ("ordinary" | "universal", Some(_)) => {
            return Err(errors::arg(
                "mean",
                "only simple kriging takes a known mean",
            ));
        }
        (k, _) => {
            return Err(errors::arg(
                "kind",
                format!("{k:?} is not one of 'ordinary', 'simple', 'universal'"),
            ));
        }
    })
}

fn samples(s: &Xyz<'_>, v: &PyReadonlyArray1<'_, f64>) -> PyResult<Samples3> {
    let (xs, ys, zs) = vecs(s)?;
    Ok(Samples3 {
        xs,
        ys,
        zs,
        values: v.as_slice()?.to_vec(),
    })
}

/// 3-D kriging. `grid` = (x, y, z node axes) or `points` = (x, y, z). Returns `(values,
/// variance or None, info JSON, backend label)`; grid nodes x fastest, then y, then z.
#[pyfunction]
#[pyo3(signature = (coords, values, vgm, kind_name, mean, aniso, neighbors, radius, measurement_error, grid, points, variance, backend, given_drift = None))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub fn krige3d<'py>(
    py: Python<'py>,
    coords: Xyz<'py>,
    values: PyReadonlyArray1<'py, f64>,
    vgm: VariogramArg,
    kind_name: &str,
    mean: Option<f64>,
    aniso: Option<(String, Vec<f64>)>,
    neighbors: Option<usize>,
    radius: Option<f64>,
    measurement_error: bool,
    grid: Option<Xyz<'py>>,
    points: Option<Xyz<'py>>,
    variance: bool,
    backend: &str,
    given_drift: Option<crate::kriging::GivenArg<'py>>,
) -> PyResult<(
    Bound<'py, PyArray1<f64>>,
    Option<Bound<'py, PyArray1<f64>>>,
    String,
    String,
)> {
    let s = samples(&coords, &values)?;
    let target = match (grid, points) {
        (Some(g), None) => {
            let (x, y, z) = vecs(&g)?;
            Target3::Grid(Axes3 { x, y, z })
        }
        (None, Some(p)) => {
            let (xs, ys, zs) = vecs(&p)?;
            Target3::Points { xs, ys, zs }
        }
        _ => return Err(errors::arg("target", "give either points or a grid")),
    };
    if radius.is_some() && neighbors.is_none() {
        return Err(errors::arg("radius", "needs neighbors (local kriging)"));
    }
    let params = Krige3Params {
        variogram: variogram(&vgm)?,
        kind: kind(kind_name, mean)?,
        anisotropy: anisotropy(aniso)?,
        neighbors,
        radius,
        nugget: if measurement_error {
            NuggetMode::MeasurementError
        } else {
            NuggetMode::Exact
        },
        variance,
        target,
    };
    let sel = open(backend)?;
    let be = sel.backend.clone();
    let drift = given_drift
        .as_ref()
        .map(crate::kriging::given)
        .transpose()?;
    let k = py
        .detach(|| match &drift {
            Some(d) => volume::krige3d_given(&be, &s, &params, d),
            None => volume::krige3d(&be, &s, &params),
        })
        .map_err(errors::lib)?;
    let info = serde_json::json!({
        "evaluated": k.evaluated,
        "seconds": k.seconds,
        "locations": k.locations,
        "merged": k.merged,
        "missing": k.missing,
        "variogram": params.variogram.to_string(),
    })
    .to_string();
    let var = k.variance.map(|v| PyArray1::from_vec(py, v));
    Ok((PyArray1::from_vec(py, k.values), var, info, be.label()))
}

/// The 3-D empirical variogram (anisotropy-corrected distances; with `drift`, of the
/// residuals of a least-squares linear drift) and, with `models`, its fit. Returns
/// `(lo, hi, distance, gamma, pairs, fit or None)`; fit = (variogram tuple, wrss).
#[pyfunction]
#[pyo3(signature = (coords, values, aniso, lags, max_lag, drift, models))]
#[allow(clippy::type_complexity, clippy::too_many_arguments)]
pub fn variogram3d(
    py: Python<'_>,
    coords: Xyz<'_>,
    values: PyReadonlyArray1<'_, f64>,
    aniso: Option<(String, Vec<f64>)>,
    lags: usize,
    max_lag: Option<f64>,
    drift: bool,
    models: Option<String>,
) -> PyResult<(
    Vec<f64>,
    Vec<f64>,
    Vec<f64>,
    Vec<f64>,
    Vec<u64>,
    Option<(VariogramArg, f64)>,
)> {
    let s = samples(&coords, &values)?;
    let a = anisotropy(aniso)?;
    let models = models
        .map(|m| geofield::kriging::Model::parse_nested(&m).map_err(|e| errors::arg("model", e)))
        .transpose()?;
    let (bins, fit) = py
        .detach(|| {
            let s = if drift { drift_residuals3(&s)? } else { s };
            let bins = empirical3(&s, &a, lags, max_lag)?;
            let fit = models
                .as_ref()
                .map(|m| fit_models(m, &bins, true))
                .transpose()?;
            Ok::<_, geofield::GeofieldError>((bins, fit))
        })
        .map_err(errors::lib)?;
    let fit = fit.map(|f| {
        let v = &f.variogram;
        let arg: VariogramArg = (
            v.models_name(),
            v.structures.iter().map(|s| s.sill).collect(),
            v.structures.iter().map(|s| s.range).collect(),
            v.nugget,
        );
        (arg, f.wrss)
    });
    Ok((
        bins.iter().map(|b| b.lo).collect(),
        bins.iter().map(|b| b.hi).collect(),
        bins.iter().map(|b| b.distance).collect(),
        bins.iter().map(|b| b.gamma).collect(),
        bins.iter().map(|b| b.pairs).collect(),
        fit,
    ))
}
