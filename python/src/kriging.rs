//! Kriging from numpy: `geofield.krige`, `geofield.krige_points`, `geofield.cross_validate` and
//! the PyKrige drop-ins all end here.

use geofield::kriging::{
    self, Anisotropy, Block, Discretisation, Drift, Kind, KrigeOptions, KrigeParams, Model,
    Neighbourhood, NuggetMode, Precision, SampleSet, Surface, Target, Variogram,
};
use geofield_core::GridSpec;
use numpy::{PyArray1, PyArrayMethods, PyReadonlyArray1};
use pyo3::prelude::*;

use crate::backend::open;
use crate::errors;
use crate::grid::{Grid, grid_tuple};
use crate::interrupt::run_interruptible;

/// The variogram `(model, sills, ranges, nugget)` in geofield's practical-range convention:
/// `model` one structure or nested ones joined by `+`, one partial sill per structure, one
/// range per structure or per bounded structure ([`Variogram::nested`]).
pub type VariogramArg = (String, Vec<f64>, Vec<f64>, f64);

pub(crate) fn variogram(v: &VariogramArg) -> PyResult<Variogram> {
    let models = Model::parse_nested(&v.0).map_err(|e| errors::arg("model", shown(&e)))?;
    Variogram::nested(&models, &v.1, &v.2, v.3).map_err(errors::lib)
}

fn shown(e: &dyn std::error::Error) -> String {
    e.to_string()
}

/// How to krige, as Python passes it: `(kind, mean, drift, anisotropy (azimuth_deg, ratio),
/// neighbors, radius, measurement_error, block (size_x, size_y, "gauss" | "N"))`.
#[derive(FromPyObject)]
pub struct Setup(
    String,
    Option<f64>,
    Option<String>,
    Option<(f64, f64)>,
    Option<usize>,
    Option<f64>,
    bool,
    Option<(f64, f64, String)>,
);

/// Kriging options from the Python arguments.
pub(crate) fn options(setup: &Setup, precision: &str) -> PyResult<KrigeOptions> {
    let Setup(kind, mean, drift, anisotropy, neighbors, radius, measurement_error, block) = setup;
    let block = match block {
        None => None,
        Some((sx, sy, rule)) => Some(Block {
            size_x_m: *sx,
            size_y_m: *sy,
            discretisation: match rule.as_str() {
                "gauss" => Discretisation::Gauss,
                n => Discretisation::Regular {
                    n: n.parse().map_err(|_| {
                        errors::arg(
                            "block_discretisation",
                            format!("{n:?} is not 'gauss' or a number of points a side"),
                        )
                    })?,
                },
            },
        }),
    };
    let (kind, mean, drift, anisotropy, neighbors, radius, measurement_error) = (
        kind.as_str(),
        *mean,
        drift.as_deref(),
        *anisotropy,
        *neighbors,
        *radius,
        *measurement_error,
    );
    let kind = match (kind, mean, drift) {
        ("ordinary", None, None) => Kind::Ordinary,
        ("simple", Some(mean), None) => Kind::Simple { mean },
        ("simple", None, _) => return Err(errors::arg("mean", "simple kriging needs the mean")),
        ("universal", None, Some("linear") | None) => Kind::Universal {
            drift: Drift::Linear,
        },
        ("universal", None, Some("quadratic")) => Kind::Universal {
            drift: Drift::Quadratic,
        },
        ("universal", None, Some("external")) => Kind::Universal {
            drift: Drift::External,
        },
        ("universal", None, Some("linear-external")) => Kind::Universal {
            drift: Drift::LinearExternal,
        },
        ("universal", None, Some(d)) => {
            return Err(errors::arg(
                "drift",
                format!("{d:?} is not 'linear', 'quadratic', 'external' or 'linear-external'"),
            ));
        }
        ("ordinary" | "universal", Some(_), _) => {
            return Err(errors::arg(
                "mean",
                "only simple kriging takes a known mean",
            ));
        }
        ("ordinary" | "simple", _, Some(_)) => {
            return Err(errors::arg("drift", "only universal kriging takes a drift"));
        }
        (k, _, _) => {
            return Err(errors::arg(
                "kind",
                format!("{k:?} is not one of 'ordinary', 'simple', 'universal'"),
            ));
        }
    };
    let neighbourhood = match neighbors {
        None if radius.is_some() => {
            return Err(errors::arg("radius", "needs neighbors (local kriging)"));
        }
        None => Neighbourhood::Global,
        Some(k) => Neighbourhood::Local { k, radius },
    };
    let precision = match precision {
        "float64" | "f64" => Precision::F64,
        "float32" | "f32" => Precision::F32,
        p => {
            return Err(errors::arg(
                "precision",
                format!("{p:?} is not 'float64' or 'float32'"),
            ));
        }
    };
    Ok(KrigeOptions {
        kind,
        anisotropy: anisotropy.map(|(azimuth_deg, ratio)| Anisotropy { azimuth_deg, ratio }),
        neighbourhood,
        nugget: if measurement_error {
            NuggetMode::MeasurementError
        } else {
            NuggetMode::Exact
        },
        precision,
        block,
        ..KrigeOptions::default()
    })
}

pub(crate) fn samples(
    xs: &PyReadonlyArray1<'_, f64>,
    ys: &PyReadonlyArray1<'_, f64>,
    values: &[PyReadonlyArray1<'_, f64>],
    names: Vec<String>,
) -> PyResult<SampleSet> {
    let mut set = SampleSet::new(
        xs.as_slice()?.to_vec(),
        ys.as_slice()?.to_vec(),
        values
            .iter()
            .map(|v| v.as_slice().map(<[f64]>::to_vec))
            .collect::<Result<_, _>>()?,
    );
    for (s, name) in set.surfaces.iter_mut().zip(names) {
        *s = Surface {
            name,
            values: std::mem::take(&mut s.values),
        };
    }
    set.source = Some("the samples".into());
    Ok(set)
}

/// The kriging target from Python's `points` = (xp, yp) or `grid` = (x_min, y_max, cell size,
/// rows, cols).
pub(crate) fn target(
    points: Option<(PyReadonlyArray1<'_, f64>, PyReadonlyArray1<'_, f64>)>,
    grid: Option<(f64, f64, f64, usize, usize)>,
) -> PyResult<Target> {
    Ok(match (points, grid) {
        (Some((px, py_)), None) => Target::Points {
            xs: px.as_slice()?.to_vec(),
            ys: py_.as_slice()?.to_vec(),
        },
        (None, Some((x_min_m, y_max_m, cell_size_m, rows, cols))) => {
            let extent = geofield_core::Extent::new(
                x_min_m,
                y_max_m - rows as f64 * cell_size_m,
                x_min_m + cols as f64 * cell_size_m,
                y_max_m,
            )
            .map_err(|e| errors::arg("grid", e))?;
            Target::Grid(
                GridSpec::from_extent(extent, cell_size_m).map_err(|e| errors::arg("grid", e))?,
            )
        }
        _ => return Err(errors::arg("target", "give either points or a grid")),
    })
}

/// The external drift raster Python passes: (values row-major, row 0 north; the grid).
fn external(
    ed: Option<(PyReadonlyArray1<'_, f64>, Grid)>,
) -> PyResult<Option<std::sync::Arc<kriging::ExternalDrift>>> {
    let Some((v, g)) = ed else {
        return Ok(None);
    };
    let Target::Grid(grid) = target(None, Some(g))? else {
        return Err(errors::arg("external_drift", "expected a grid"));
    };
    let e = kriging::ExternalDrift::new(grid, v.as_slice()?.to_vec(), "external_drift")
        .map_err(|e| errors::arg("external_drift", shown(&e)))?;
    Ok(Some(std::sync::Arc::new(e)))
}

/// A given drift from Python: one (name, values at the samples, values at the nodes) per
/// variable.
pub(crate) type GivenArg<'py> = Vec<(
    String,
    PyReadonlyArray1<'py, f64>,
    PyReadonlyArray1<'py, f64>,
)>;

/// The library's [`kriging::GivenDrift`] from Python's variables.
pub(crate) fn given(g: &GivenArg<'_>) -> PyResult<kriging::GivenDrift> {
    let mut names = vec![];
    let (mut at_s, mut at_n) = (vec![], vec![]);
    for (name, s, n) in g {
        names.push(name.clone());
        at_s.push(s.as_slice()?.to_vec());
        at_n.push(n.as_slice()?.to_vec());
    }
    kriging::GivenDrift::new(names, at_s, at_n).map_err(|e| errors::arg("given_drift", shown(&e)))
}

/// Predictions (and variances) of one or more surfaces at points or on a grid. Returns
/// `(values (surfaces, nodes), variance (surfaces, nodes) or None, grid or None, info JSON,
/// backend label)`; on a grid the nodes are row-major from the north-west corner. Interruptible
/// (Ctrl-C); `progress` is called with the fraction of the nodes done.
#[pyfunction]
#[pyo3(signature = (xs, ys, values, names, variograms, setup, points, grid, variance, precision, backend, progress = None, indicator = None, external_drift = None, given_drift = None))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub fn krige<'py>(
    py: Python<'py>,
    xs: PyReadonlyArray1<'py, f64>,
    ys: PyReadonlyArray1<'py, f64>,
    values: Vec<PyReadonlyArray1<'py, f64>>,
    names: Vec<String>,
    variograms: Vec<VariogramArg>,
    setup: Setup,
    points: Option<(PyReadonlyArray1<'py, f64>, PyReadonlyArray1<'py, f64>)>,
    grid: Option<(f64, f64, f64, usize, usize)>,
    variance: bool,
    precision: &str,
    backend: &str,
    progress: Option<Bound<'py, PyAny>>,
    indicator: Option<(Vec<f64>, String)>,
    external_drift: Option<(PyReadonlyArray1<'py, f64>, Grid)>,
    given_drift: Option<GivenArg<'py>>,
) -> PyResult<(
    Bound<'py, PyAny>,
    Option<Bound<'py, PyAny>>,
    Option<Grid>,
    String,
    String,
)> {
    let mut set = samples(&xs, &ys, &values, names)?;
    // Indicator kriging: the thresholds' indicators kriged, then the order correction.
    let correction = match &indicator {
        Some((t, c)) => {
            let c = kriging::OrderCorrection::parse(c)
                .map_err(|e| errors::arg("correction", shown(&e)))?;
            set = kriging::indicator_set(&set, t)
                .map_err(|e| errors::arg("thresholds", shown(&e)))?;
            Some(c)
        }
        None => None,
    };
    let external_drift = external(external_drift)?;
    let target = target(points, grid)?;
    let params = KrigeParams {
        variograms: variograms.iter().map(variogram).collect::<PyResult<_>>()?,
        options: options(&setup, precision)?,
        target,
        variance,
        resolve_crossings: false,
        external_drift,
    };
    let sel = open(backend)?;
    let be = sel.backend.clone();
    let grid_out = match &params.target {
        Target::Grid(g) => Some(grid_tuple(g)),
        Target::Points { .. } => None,
    };
    let h = set.surfaces.len();
    let to_array = |bands: Vec<Vec<f64>>| -> PyResult<Bound<'py, PyAny>> {
        let n = bands.first().map_or(0, Vec::len);
        let flat: Vec<f64> = bands.into_iter().flatten().collect();
        Ok(PyArray1::from_vec(py, flat).reshape([h, n])?.into_any())
    };
    if let Some(g) = &given_drift {
        // Drift variables given by value (PyKrige's specified and functional drifts).
        let drift = given(g)?;
        let mut out = py
            .detach(|| kriging::krige_given(&be, &set, &params, &drift))
            .map_err(errors::lib)?;
        if let Some(c) = correction {
            c.apply(&mut out.values);
        }
        let info = serde_json::json!({
            "evaluated": out.evaluated,
            "variograms": params.variograms.iter().map(|v| v.to_string()).collect::<Vec<_>>(),
        })
        .to_string();
        let var = out.variance.map(to_array).transpose()?;
        return Ok((to_array(out.values)?, var, grid_out, info, be.label()));
    }
    let mut out = run_interruptible(py, progress.as_ref(), |cancel, sink| {
        kriging::krige_with_progress(&be, &set, &params, &|f| sink.set(f), cancel)
    })?;
    if let Some(c) = correction {
        c.apply(&mut out.prediction.values);
    }
    let info = serde_json::json!({
        "evaluated": out.prediction.evaluated,
        "groups": out.prediction.groups,
        "seconds_factor": out.seconds_factor,
        "seconds_grid": out.seconds_grid,
        "device_seconds": out.prediction.device_seconds,
        "variograms": params.variograms.iter().map(|v| v.to_string()).collect::<Vec<_>>(),
    })
    .to_string();
    let var = match out.prediction.variance {
        Some(v) => Some(to_array(v)?),
        None => None,
    };
    Ok((
        to_array(out.prediction.values)?,
        var,
        grid_out,
        info,
        be.label(),
    ))
}

/// The empirical variogram of one surface and, with `model`, its weighted least-squares fit.
/// Returns `(lo, hi, distance, gamma, pairs, fit)` with `fit = (model, sills, ranges, nugget,
/// wrss, warnings)` (one sill and range per structure) or None.
#[pyfunction]
#[pyo3(signature = (xs, ys, values, lags, max_lag, direction, estimator, model, fit_nugget, drift = None, external_drift = None))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub fn variogram_bins<'py>(
    py: Python<'py>,
    xs: PyReadonlyArray1<'py, f64>,
    ys: PyReadonlyArray1<'py, f64>,
    values: PyReadonlyArray1<'py, f64>,
    lags: usize,
    max_lag: Option<f64>,
    direction: Option<(f64, f64)>,
    estimator: &str,
    model: Option<&str>,
    fit_nugget: bool,
    drift: Option<String>,
    external_drift: Option<(PyReadonlyArray1<'py, f64>, Grid)>,
) -> PyResult<(
    Vec<f64>,
    Vec<f64>,
    Vec<f64>,
    Vec<f64>,
    Vec<u64>,
    Option<(String, Vec<f64>, Vec<f64>, f64, f64, Vec<String>)>,
)> {
    let estimator = estimator_arg(estimator)?;
    let model = match model {
        Some(m) => Some(Model::parse_nested(m).map_err(|e| errors::arg("model", shown(&e)))?),
        None => None,
    };
    let spec = kriging::LagSpec {
        lags,
        max_lag,
        direction,
    };
    let (xs, ys, values) = (xs.as_slice()?, ys.as_slice()?, values.as_slice()?);
    let mut set = SampleSet::new(xs.to_vec(), ys.to_vec(), vec![values.to_vec()]);
    // With a drift: the residuals of its least-squares fit (gstat's `variogram(z ~ drift)`).
    if let Some(d) = drift {
        let setup = Setup(
            "universal".into(),
            None,
            Some(d),
            None,
            None,
            None,
            false,
            None,
        );
        let kind = options(&setup, "float64")?.kind;
        let ext = external(external_drift)?;
        set = kriging::drift_residuals(&set, kind, ext.as_deref())
            .map_err(|e| errors::arg("drift", shown(&e)))?;
    }
    let bins = py
        .detach(|| kriging::surface_bins(&set, &spec, estimator))
        .map_err(errors::lib)?
        .pop()
        .unwrap_or_default();
    let fit = match model {
        Some(m) => {
            let f = kriging::fit_models(&m, &bins, fit_nugget).map_err(errors::lib)?;
            let warnings = f.warnings(&bins);
            let v = &f.variogram;
            Some((
                v.models_name(),
                v.structures.iter().map(|s| s.sill).collect(),
                v.structures.iter().map(|s| s.range).collect(),
                v.nugget,
                f.wrss,
                warnings,
            ))
        }
        None => None,
    };
    Ok((
        bins.iter().map(|b| b.lo).collect(),
        bins.iter().map(|b| b.hi).collect(),
        bins.iter().map(|b| b.distance).collect(),
        bins.iter().map(|b| b.gamma).collect(),
        bins.iter().map(|b| b.pairs).collect(),
        fit,
    ))
}

fn estimator_arg(estimator: &str) -> PyResult<kriging::Estimator> {
    match estimator {
        "matheron" => Ok(kriging::Estimator::Matheron),
        "cressie-hawkins" | "cressie" => Ok(kriging::Estimator::CressieHawkins),
        e => Err(errors::arg(
            "estimator",
            format!("{e:?} is not 'matheron' or 'cressie-hawkins'"),
        )),
    }
}

/// The variogram map of one surface ([`kriging::variogram_map`]): `(lags, gamma, pairs)`, the
/// (2·lags + 1)² cells row-major, row 0 at the largest +dy.
#[pyfunction]
#[pyo3(signature = (xs, ys, values, cutoff, width, estimator))]
pub fn variogram_map<'py>(
    py: Python<'py>,
    xs: PyReadonlyArray1<'py, f64>,
    ys: PyReadonlyArray1<'py, f64>,
    values: PyReadonlyArray1<'py, f64>,
    cutoff: f64,
    width: f64,
    estimator: &str,
) -> PyResult<(usize, Vec<f64>, Vec<u64>)> {
    let estimator = estimator_arg(estimator)?;
    let (xs, ys, values) = (xs.as_slice()?, ys.as_slice()?, values.as_slice()?);
    let m = py
        .detach(|| kriging::variogram_map(xs, ys, values, cutoff, width, estimator))
        .map_err(errors::lib)?;
    Ok((m.lags, m.gamma, m.pairs))
}

/// Leave-one-out cross-validation of each surface: `[(name, locations, error, variance, rmse,
/// mean_error, mean_standardised, mean_square_standardised)]`. Interruptible (Ctrl-C);
/// `progress` is called with the fraction of the folds done.
#[pyfunction]
#[pyo3(signature = (xs, ys, values, names, variograms, setup, progress = None))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub fn cross_validate<'py>(
    py: Python<'py>,
    xs: PyReadonlyArray1<'py, f64>,
    ys: PyReadonlyArray1<'py, f64>,
    values: Vec<PyReadonlyArray1<'py, f64>>,
    names: Vec<String>,
    variograms: Vec<VariogramArg>,
    setup: Setup,
    progress: Option<Bound<'py, PyAny>>,
) -> PyResult<Vec<(String, Vec<usize>, Vec<f64>, Vec<f64>, f64, f64, f64, f64)>> {
    let set = samples(&xs, &ys, &values, names)?;
    let params = KrigeParams {
        variograms: variograms.iter().map(variogram).collect::<PyResult<_>>()?,
        options: options(&setup, "float64")?,
        target: Target::Points {
            xs: vec![],
            ys: vec![],
        },
        variance: true,
        resolve_crossings: false,
        external_drift: None,
    };
    let cv = run_interruptible(py, progress.as_ref(), |cancel, sink| {
        kriging::cross_validate_with_progress(
            &geofield::Backend::Cpu,
            &set,
            &params,
            &|f| sink.set(f),
            cancel,
        )
    })?;
    Ok(cv
        .into_iter()
        .map(|c| {
            (
                c.surface,
                c.locations,
                c.error,
                c.variance,
                c.rmse,
                c.mean_error,
                c.mean_standardised,
                c.mean_square_standardised,
            )
        })
        .collect())
}
