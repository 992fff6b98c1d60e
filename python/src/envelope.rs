//! CSR simulation envelopes (pointwise and global), the MAD and DCLF tests and the simulated
//! patterns themselves (`geofield.csr_envelope`, `mad_test`, `dclf_test`, `csr_patterns`). The
//! library does the statistics; this only converts.

use geofield::neighbors::envelope::{self, Summary};
use geofield::neighbors::global::{Reference, Statistic};
use numpy::{PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::backend::open;
use crate::ball::{corrections_of, divisor_of, plane};
use crate::errors;

fn summary_of(fun: &str, bw: Option<f64>, divisor: &str) -> PyResult<Summary> {
    let divisor = divisor_of(divisor)?;
    Ok(match fun {
        "K" | "Kest" => Summary::K,
        "L" | "Lest" => Summary::L,
        "g" | "pcf" => Summary::G { bw, divisor },
        o => {
            return Err(errors::arg("fun", format!("{o:?} is not 'K', 'L' or 'g'")));
        }
    })
}

fn reference_of(use_theory: bool) -> Reference {
    if use_theory {
        Reference::Theory
    } else {
        Reference::Mean
    }
}

/// A CSR envelope (spatstat's `envelope`), pointwise or (`global_`) global over `ginterval`
/// with the theory (`use_theory`) or the separate simulations' mean as centre: a dict of
/// float64 arrays `r`, `obs`, `theo`, `lo`, `hi`, `mean` (+ `centre` when global), plus `alpha`,
/// `nsim`, `nrank`, `correction`, `backend` (+ `global`, `ginterval`, `width`, `use_theory`).
#[pyfunction]
#[pyo3(signature = (points, window, radii, fun, correction, nsim, nrank, seed, bw, divisor,
                    backend, global_, ginterval, use_theory))]
#[allow(clippy::too_many_arguments)]
pub fn csr_envelope<'py>(
    py: Python<'py>,
    points: PyReadonlyArray2<'py, f64>,
    window: Option<[f64; 4]>,
    radii: Option<PyReadonlyArray1<'py, f64>>,
    fun: &str,
    correction: String,
    nsim: usize,
    nrank: usize,
    seed: u64,
    bw: Option<f64>,
    divisor: &str,
    backend: &str,
    global_: bool,
    ginterval: Option<(f64, f64)>,
    use_theory: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let be = open(backend)?.backend;
    let (pts, window, radii) = plane(&points, window, radii.as_ref())?;
    let correction = corrections_of(&[correction])?[0];
    let summary = summary_of(fun, bw, divisor)?;
    let reference = reference_of(use_theory);
    let count = if global_ {
        reference.simulations(nsim)
    } else {
        nsim
    };
    let e = py
        .detach(|| {
            let c = envelope::simulate_curves(
                &be, pts, &window, &radii, correction, summary, count, seed,
            )?;
            if global_ {
                c.global(nsim, nrank, ginterval, reference)
            } else {
                c.pointwise(nsim, nrank)
            }
        })
        .map_err(errors::lib)?;
    let d = PyDict::new(py);
    for (name, v) in [
        ("r", &e.r),
        ("obs", &e.obs),
        ("theo", &e.theo),
        ("lo", &e.lo),
        ("hi", &e.hi),
        ("mean", &e.mean),
    ] {
        d.set_item(name, PyArray1::from_vec(py, v.clone()))?;
    }
    d.set_item("alpha", e.alpha())?;
    d.set_item("nsim", e.nsim)?;
    d.set_item("nrank", e.nrank)?;
    d.set_item("correction", e.correction.name())?;
    d.set_item("backend", be.label())?;
    d.set_item("global", e.global.is_some())?;
    if let Some(g) = &e.global {
        d.set_item("centre", PyArray1::from_vec(py, g.centre.clone()))?;
        d.set_item("ginterval", g.interval)?;
        d.set_item("width", g.width)?;
        d.set_item("use_theory", g.reference == Reference::Theory)?;
    }
    Ok(d)
}

/// The MAD or DCLF test (spatstat's `mad.test`, `dclf.test`): a dict with `statistic`,
/// `p_value`, `rank`, `ties`, `sim_statistics` (float64 array), `rinterval`, `nsim`, `test`,
/// `use_theory`.
#[pyfunction]
#[pyo3(signature = (points, window, radii, fun, correction, nsim, seed, bw, divisor, backend,
                    test, rinterval, use_theory))]
#[allow(clippy::too_many_arguments)]
pub fn csr_test<'py>(
    py: Python<'py>,
    points: PyReadonlyArray2<'py, f64>,
    window: Option<[f64; 4]>,
    radii: Option<PyReadonlyArray1<'py, f64>>,
    fun: &str,
    correction: String,
    nsim: usize,
    seed: u64,
    bw: Option<f64>,
    divisor: &str,
    backend: &str,
    test: &str,
    rinterval: Option<(f64, f64)>,
    use_theory: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let be = open(backend)?.backend;
    let (pts, window, radii) = plane(&points, window, radii.as_ref())?;
    let correction = corrections_of(&[correction])?[0];
    let summary = summary_of(fun, bw, divisor)?;
    let statistic = match test {
        "mad" => Statistic::Mad,
        "dclf" => Statistic::Dclf,
        o => return Err(errors::arg("test", format!("{o:?} is not 'mad' or 'dclf'"))),
    };
    let reference = reference_of(use_theory);
    let t = py
        .detach(|| {
            envelope::simulate_curves(&be, pts, &window, &radii, correction, summary, nsim, seed)?
                .deviation_test(statistic, nsim, rinterval, reference)
        })
        .map_err(errors::lib)?;
    let d = PyDict::new(py);
    d.set_item("test", t.statistic.name())?;
    d.set_item("statistic", t.observed)?;
    d.set_item("p_value", t.p_value)?;
    d.set_item("rank", t.rank)?;
    d.set_item("ties", t.ties)?;
    d.set_item("sim_statistics", PyArray1::from_vec(py, t.simulated))?;
    d.set_item("rinterval", t.interval)?;
    d.set_item("nsim", t.nsim)?;
    d.set_item("use_theory", use_theory)?;
    Ok(d)
}

/// The CSR patterns `first..first + count` that `csr_envelope` and the tests draw for `points`
/// in `window` with `seed`: a list of float64 arrays (m, 2).
#[pyfunction]
#[pyo3(signature = (points, window, count, seed, first))]
pub fn csr_patterns<'py>(
    py: Python<'py>,
    points: PyReadonlyArray2<'py, f64>,
    window: Option<[f64; 4]>,
    count: usize,
    seed: u64,
    first: usize,
) -> PyResult<Bound<'py, PyList>> {
    let (pts, window, _) = plane(&points, window, None)?;
    let n = pts.len() / 2;
    let list = PyList::empty(py);
    for s in first..first + count {
        let p = envelope::csr_pattern(&window, n, seed, s).map_err(errors::lib)?;
        let rows: Vec<Vec<f64>> = p.chunks_exact(2).map(|c| c.to_vec()).collect();
        list.append(PyArray2::from_vec2(py, &rows).map_err(|e| errors::arg("points", e))?)?;
    }
    Ok(list)
}
