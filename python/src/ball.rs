//! Radius queries, pairs, pair counts, k-NN in any space and Ripley's K from numpy arrays
//! (`geofield.NeighborIndex`'s scipy methods and `geofield.ripley_k`). float64 throughout.

use geofield::neighbors::ball::{self, BallParams, Metric, Order, Space};
use geofield::neighbors::pcf::{self, Divisor};
use geofield::neighbors::ripley::{self, Correction, Window};
use numpy::{PyArray1, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::backend::open;
use crate::errors;

fn space(p: f64, boxsize: Option<Vec<f64>>) -> PyResult<Space> {
    Ok(Space {
        metric: Metric::from_p(p).map_err(|e| errors::arg("p", e))?,
        boxsize,
    })
}

fn flat<'a>(a: &'a PyReadonlyArray2<'_, f64>) -> PyResult<(&'a [f64], usize)> {
    Ok((a.as_slice()?, a.shape()[1]))
}

/// Every point within `r` of each query (or each point) as CSR: `(offsets (m + 1,) uint64,
/// indices int64, distances float64)`; `order` "distance", "index" or "none".
#[pyfunction]
#[pyo3(signature = (points, queries, r, p, boxsize, order, exclude_self, backend))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub fn ball_within<'py>(
    py: Python<'py>,
    points: PyReadonlyArray2<'py, f64>,
    queries: Option<PyReadonlyArray2<'py, f64>>,
    r: f64,
    p: f64,
    boxsize: Option<Vec<f64>>,
    order: &str,
    exclude_self: bool,
    backend: &str,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let be = open(backend)?.backend;
    let order = match order {
        "distance" => Order::Distance,
        "index" => Order::Index,
        "none" => Order::Unsorted,
        o => {
            return Err(errors::arg(
                "sort",
                format!("{o:?} is not 'distance', 'index' or 'none'"),
            ));
        }
    };
    let params = BallParams {
        radius: r,
        space: space(p, boxsize)?,
        order,
        exclude_self,
    };
    let (pts, dim) = flat(&points)?;
    let qs = queries.as_ref().map(|q| q.as_slice()).transpose()?;
    let b = py
        .detach(|| ball::within(&be, pts, qs, dim, &params))
        .map_err(errors::lib)?;
    let idx: Vec<i64> = b.indices.iter().map(|&i| i64::from(i)).collect();
    Ok((
        PyArray1::from_vec(py, b.offsets).into_any(),
        PyArray1::from_vec(py, idx).into_any(),
        PyArray1::from_vec(py, b.dist).into_any(),
    ))
}

/// The number of points within `r` of each query (uint64).
#[pyfunction]
#[pyo3(signature = (points, queries, r, p, boxsize, backend))]
pub fn ball_counts<'py>(
    py: Python<'py>,
    points: PyReadonlyArray2<'py, f64>,
    queries: Option<PyReadonlyArray2<'py, f64>>,
    r: f64,
    p: f64,
    boxsize: Option<Vec<f64>>,
    backend: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let be = open(backend)?.backend;
    let params = BallParams {
        radius: r,
        space: space(p, boxsize)?,
        order: Order::Unsorted,
        exclude_self: false,
    };
    let (pts, dim) = flat(&points)?;
    let qs = queries.as_ref().map(|q| q.as_slice()).transpose()?;
    let c = py
        .detach(|| ball::within_counts(&be, pts, qs, dim, &params))
        .map_err(errors::lib)?;
    Ok(PyArray1::from_vec(py, c).into_any())
}

/// Pairs (i < j) within `r`, as an (npairs, 2) int64 array in ascending order.
#[pyfunction]
pub fn ball_pairs<'py>(
    py: Python<'py>,
    points: PyReadonlyArray2<'py, f64>,
    r: f64,
    p: f64,
    boxsize: Option<Vec<f64>>,
    backend: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let be = open(backend)?.backend;
    let sp = space(p, boxsize)?;
    let (pts, dim) = flat(&points)?;
    let pairs = py
        .detach(|| ball::pairs(&be, pts, dim, r, &sp))
        .map_err(errors::lib)?;
    let n = pairs.len();
    let v: Vec<i64> = pairs
        .into_iter()
        .flat_map(|[i, j]| [i64::from(i), i64::from(j)])
        .collect();
    Ok(PyArray1::from_vec(py, v).reshape([n, 2])?.into_any())
}

/// Pair counts at each radius (uint64), or weighted sums (float64) when weights are given.
#[pyfunction]
#[pyo3(signature = (points, others, radii, p, boxsize, w_points, w_others, cumulative, backend))]
#[allow(clippy::too_many_arguments)]
pub fn ball_count<'py>(
    py: Python<'py>,
    points: PyReadonlyArray2<'py, f64>,
    others: Option<PyReadonlyArray2<'py, f64>>,
    radii: PyReadonlyArray1<'py, f64>,
    p: f64,
    boxsize: Option<Vec<f64>>,
    w_points: Option<PyReadonlyArray1<'py, f64>>,
    w_others: Option<PyReadonlyArray1<'py, f64>>,
    cumulative: bool,
    backend: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let be = open(backend)?.backend;
    let sp = space(p, boxsize)?;
    let (pts, dim) = flat(&points)?;
    let oth = others.as_ref().map(|o| o.as_slice()).transpose()?;
    let radii = radii.as_slice()?;
    if w_points.is_none() && w_others.is_none() {
        let c = py
            .detach(|| ball::count_pairs(&be, pts, oth, dim, radii, &sp, cumulative))
            .map_err(errors::lib)?;
        return Ok(PyArray1::from_vec(py, c).into_any());
    }
    let w1 = w_points.as_ref().map(|w| w.as_slice()).transpose()?;
    let w2 = w_others.as_ref().map(|w| w.as_slice()).transpose()?;
    let c = py
        .detach(|| ball::count_pairs_weighted(&be, pts, oth, dim, radii, &sp, (w1, w2), cumulative))
        .map_err(errors::lib)?;
    Ok(PyArray1::from_vec(py, c).into_any())
}

/// k nearest neighbours in any space (p = 1, 2, inf; periodic boxes; k up to 65536):
/// `(distances (m, k), indices (m, k), backend label)`, missing `inf` / `missing_index`.
#[pyfunction]
#[pyo3(signature = (points, queries, k, p, boxsize, exclude_self, radius, missing_index, backend="cpu"))]
#[allow(clippy::too_many_arguments)]
pub fn ball_knn<'py>(
    py: Python<'py>,
    points: PyReadonlyArray2<'py, f64>,
    queries: Option<PyReadonlyArray2<'py, f64>>,
    k: usize,
    p: f64,
    boxsize: Option<Vec<f64>>,
    exclude_self: bool,
    radius: Option<f64>,
    missing_index: i64,
    backend: &str,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>, String)> {
    let be = open(backend)?.backend;
    let sp = space(p, boxsize)?;
    let (pts, dim) = flat(&points)?;
    let qs = queries.as_ref().map(|q| q.as_slice()).transpose()?;
    let nb = py
        .detach(|| {
            ball::knn_in(
                &be,
                pts,
                qs,
                dim,
                k,
                &sp,
                exclude_self,
                radius,
                missing_index,
            )
        })
        .map_err(errors::lib)?;
    let m = nb.indices.len().checked_div(k).unwrap_or(0);
    Ok((
        PyArray1::from_vec(py, nb.dist).reshape([m, k])?.into_any(),
        PyArray1::from_vec(py, nb.indices)
            .reshape([m, k])?
            .into_any(),
        be.label(),
    ))
}

/// Ripley's K: a dict of float64 arrays `r`, `theo` and one per correction (spatstat's names
/// `un`, `border`, `trans`, `iso`), plus `n` and `area`.
#[pyfunction]
pub fn ripley_k<'py>(
    py: Python<'py>,
    points: PyReadonlyArray2<'py, f64>,
    window: Option<[f64; 4]>,
    radii: Option<PyReadonlyArray1<'py, f64>>,
    corrections: Vec<String>,
    backend: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let be = open(backend)?.backend;
    let (pts, window, radii) = plane(&points, window, radii.as_ref())?;
    let cs = corrections_of(&corrections)?;
    let k = py
        .detach(|| ripley::ripley_k(&be, pts, &window, &radii, &cs))
        .map_err(errors::lib)?;
    let d = PyDict::new(py);
    d.set_item("r", PyArray1::from_vec(py, k.r.clone()))?;
    d.set_item("theo", PyArray1::from_vec(py, k.theo.clone()))?;
    for (c, v) in k.columns() {
        d.set_item(c.name(), PyArray1::from_vec(py, v.to_vec()))?;
    }
    d.set_item("n", k.n)?;
    d.set_item("area", k.area)?;
    d.set_item("window", (window.x0, window.y0, window.x1, window.y1))?;
    d.set_item("backend", be.label())?;
    Ok(d)
}

/// A 2-D pattern's points (flat x, y), its window (given, or the bounding box) and radii
/// (given, or spatstat's default).
pub(crate) fn plane<'a>(
    points: &'a PyReadonlyArray2<'_, f64>,
    window: Option<[f64; 4]>,
    radii: Option<&PyReadonlyArray1<'_, f64>>,
) -> PyResult<(&'a [f64], Window, Vec<f64>)> {
    let (pts, dim) = flat(points)?;
    if dim != 2 {
        return Err(errors::arg(
            "points",
            format!("expected shape (n, 2), got (n, {dim})"),
        ));
    }
    let window = window_of(window, pts)?;
    let radii = match radii {
        Some(r) => r.as_slice()?.to_vec(),
        None => ripley::default_radii(pts.len() / 2, &window),
    };
    Ok((pts, window, radii))
}

/// g's divisor by spatstat's name.
pub(crate) fn divisor_of(divisor: &str) -> PyResult<Divisor> {
    match divisor {
        "r" => Ok(Divisor::R),
        "d" => Ok(Divisor::D),
        o => Err(errors::arg("divisor", format!("{o:?} is not 'r' or 'd'"))),
    }
}

/// The window given, or the points' bounding box.
fn window_of(window: Option<[f64; 4]>, pts: &[f64]) -> PyResult<Window> {
    let window = match window {
        Some([x0, y0, x1, y1]) => Window { x0, y0, x1, y1 },
        None => Window::around(pts).ok_or_else(|| {
            errors::arg(
                "window",
                "the points span no area: give the window (x0, y0, x1, y1)",
            )
        })?,
    };
    window.validate().map_err(|e| errors::arg("window", e))?;
    Ok(window)
}

/// spatstat's correction names (and ours).
pub(crate) fn corrections_of(names: &[String]) -> PyResult<Vec<Correction>> {
    names
        .iter()
        .map(|c| {
            Ok(match c.as_str() {
                "none" | "un" => Correction::None,
                "border" => Correction::Border,
                "translate" | "trans" => Correction::Translate,
                "isotropic" | "iso" | "Ripley" => Correction::Isotropic,
                o => {
                    return Err(errors::arg(
                        "correction",
                        format!("{o:?} is not one of 'none', 'border', 'translate', 'isotropic'"),
                    ));
                }
            })
        })
        .collect()
}

/// The pair-correlation function g(r) (spatstat's `pcf`): a dict of float64 arrays `r`, `theo`
/// and one per correction (`un`, `trans`, `iso`), plus `bw`, `half_width`, `n`, `area`.
#[pyfunction]
#[pyo3(signature = (points, window, radii, corrections, bw, divisor))]
pub fn pair_correlation<'py>(
    py: Python<'py>,
    points: PyReadonlyArray2<'py, f64>,
    window: Option<[f64; 4]>,
    radii: Option<PyReadonlyArray1<'py, f64>>,
    corrections: Vec<String>,
    bw: Option<f64>,
    divisor: &str,
) -> PyResult<Bound<'py, PyDict>> {
    let (pts, window, radii) = plane(&points, window, radii.as_ref())?;
    let cs = corrections_of(&corrections)?;
    let divisor = divisor_of(divisor)?;
    let g = py
        .detach(|| pcf::pair_correlation(pts, &window, &radii, &cs, bw, divisor))
        .map_err(errors::lib)?;
    let d = PyDict::new(py);
    d.set_item("r", PyArray1::from_vec(py, g.r.clone()))?;
    d.set_item("theo", PyArray1::from_vec(py, g.theo.clone()))?;
    for (c, v) in g.columns() {
        d.set_item(c.name(), PyArray1::from_vec(py, v.to_vec()))?;
    }
    d.set_item("bw", g.bw)?;
    d.set_item("half_width", g.half_width)?;
    d.set_item("n", g.n)?;
    d.set_item("area", g.area)?;
    d.set_item("window", (window.x0, window.y0, window.x1, window.y1))?;
    Ok(d)
}
