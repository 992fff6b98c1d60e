//! Conditional simulation from numpy: `geofield.simulate` ends here.

use geofield::kriging::{self, KrigeParams, SimParams, Target};
use numpy::{PyArray1, PyArrayMethods, PyReadonlyArray1};
use pyo3::prelude::*;

use crate::backend::open;
use crate::grid::{Grid, grid_tuple};
use crate::interrupt::run_interruptible;
use crate::kriging::{Setup, VariogramArg, options, samples, target, variogram};

/// N realisations of one surface at points or on a grid. Returns `(values (n, nodes), grid or
/// None, info JSON, backend label)`; on a grid the nodes are row-major from the north-west
/// corner. Interruptible (Ctrl-C); `progress` is called with the fraction done.
#[pyfunction]
#[pyo3(signature = (xs, ys, values, name, variograms, setup, points, grid, n, seed, modes, precision, backend, progress = None))]
#[allow(clippy::too_many_arguments)]
pub fn simulate<'py>(
    py: Python<'py>,
    xs: PyReadonlyArray1<'py, f64>,
    ys: PyReadonlyArray1<'py, f64>,
    values: PyReadonlyArray1<'py, f64>,
    name: String,
    variograms: Vec<VariogramArg>,
    setup: Setup,
    points: Option<(PyReadonlyArray1<'py, f64>, PyReadonlyArray1<'py, f64>)>,
    grid: Option<(f64, f64, f64, usize, usize)>,
    n: usize,
    seed: u64,
    modes: usize,
    precision: &str,
    backend: &str,
    progress: Option<Bound<'py, PyAny>>,
) -> PyResult<(Bound<'py, PyAny>, Option<Grid>, String, String)> {
    let set = samples(&xs, &ys, &[values], vec![name])?;
    let params = KrigeParams {
        variograms: variograms.iter().map(variogram).collect::<PyResult<_>>()?,
        options: options(&setup, precision)?,
        target: target(points, grid)?,
        variance: false,
        resolve_crossings: false,
        external_drift: None,
    };
    let sim = SimParams {
        realisations: n,
        seed,
        modes,
    };
    let sel = open(backend)?;
    let be = sel.backend.clone();
    let out = run_interruptible(py, progress.as_ref(), |cancel, sink| {
        kriging::simulate_with_progress(&be, &set, &params, &sim, &|f| sink.set(f), cancel)
    })?;
    let grid_out = match &params.target {
        Target::Grid(g) => Some(grid_tuple(g)),
        Target::Points { .. } => None,
    };
    let info = serde_json::json!({
        "evaluated": out.evaluated,
        "seconds_unconditional": out.seconds_unconditional,
        "seconds_conditioning": out.seconds_conditioning,
        "device_seconds": out.device_seconds,
        "variograms": params.variograms.iter().map(|v| v.to_string()).collect::<Vec<_>>(),
    })
    .to_string();
    // The library's realisation-major array becomes numpy's without a copy.
    let nodes = out.nodes;
    let arr = PyArray1::from_vec(py, out.values)
        .reshape([n, nodes])?
        .into_any();
    Ok((arr, grid_out, info, be.label()))
}
