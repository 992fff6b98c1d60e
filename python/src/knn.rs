//! `geofield.NeighborIndex`: exact k-nearest neighbours from numpy arrays.

use geofield::neighbors::{self, IndexKind, KnnParams};
use numpy::{PyArray1, PyArrayMethods, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;

use crate::backend::open;
use crate::errors;
use crate::interrupt::run_interruptible;

/// Points of either precision: each is searched in its own arithmetic.
#[derive(FromPyObject)]
pub enum Points<'py> {
    F64(PyReadonlyArray2<'py, f64>),
    F32(PyReadonlyArray2<'py, f32>),
}

fn index_kind(name: &str, cell_size: Option<f64>) -> PyResult<IndexKind> {
    Ok(match name {
        "auto" => IndexKind::Auto,
        "brute" => IndexKind::Brute,
        "uniform" => IndexKind::Uniform { cell_size },
        "dynamic" => IndexKind::Dynamic { max_per_leaf: 32 },
        _ => {
            return Err(errors::arg(
                "index",
                format!("{name:?} is not one of 'auto', 'brute', 'uniform', 'dynamic'"),
            ));
        }
    })
}

/// The k nearest points of each query (or of each point, without queries), as
/// `(distances (m, k) float64, indices (m, k) int64)`: Euclidean distances in ascending
/// (distance, index) order; where fewer than k qualify the distance is `inf` and the index is
/// `missing_index` (scipy's convention is the number of points). Interruptible (Ctrl-C);
/// `progress` is called with the fraction of the queries answered.
#[pyfunction]
#[pyo3(signature = (points, queries, k, radius, exclude_self, index, cell_size, backend, missing_index, progress = None))]
#[allow(clippy::too_many_arguments)]
pub fn knn<'py>(
    py: Python<'py>,
    points: Points<'py>,
    queries: Option<Points<'py>>,
    k: usize,
    radius: Option<f64>,
    exclude_self: bool,
    index: &str,
    cell_size: Option<f64>,
    backend: &str,
    missing_index: i64,
    progress: Option<Bound<'py, PyAny>>,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>, String)> {
    let params = KnnParams {
        k,
        radius,
        exclude_self,
        index: index_kind(index, cell_size)?,
    };
    let sel = open(backend)?;
    let be = sel.backend.clone();
    // Points and queries in one precision, each searched in its own arithmetic.
    let (f64s, f32s) = (
        "float32 queries of float64 points",
        "float64 queries of float32 points",
    );
    let found = match (&points, &queries) {
        (Points::F64(p), None) => search(py, &be, p, None, &params, missing_index, &progress),
        (Points::F64(p), Some(Points::F64(q))) => {
            search(py, &be, p, Some(q), &params, missing_index, &progress)
        }
        (Points::F32(p), None) => search(py, &be, p, None, &params, missing_index, &progress),
        (Points::F32(p), Some(Points::F32(q))) => {
            search(py, &be, p, Some(q), &params, missing_index, &progress)
        }
        (Points::F64(_), Some(Points::F32(_))) => Err(errors::arg("x", f64s)),
        (Points::F32(_), Some(Points::F64(_))) => Err(errors::arg("x", f32s)),
    }?;
    // The library fills both arrays in their final form (distances, `missing_index` / inf);
    // numpy takes the vectors over without a copy.
    let kk = found.k;
    let m = found.indices.len().checked_div(kk).unwrap_or(0);
    let d = PyArray1::from_vec(py, found.dist)
        .reshape([m, kk])?
        .into_any();
    let idx = PyArray1::from_vec(py, found.indices)
        .reshape([m, kk])?
        .into_any();
    Ok((d, idx, be.label()))
}

/// One search of `points` (n, dim) for `queries` (or the points themselves) on the backend,
/// interruptible, with `progress` called with the fraction answered.
fn search<T: geofield::neighbors::Coord + numpy::Element>(
    py: Python<'_>,
    be: &geofield::Backend,
    points: &PyReadonlyArray2<'_, T>,
    queries: Option<&PyReadonlyArray2<'_, T>>,
    params: &KnnParams,
    missing_index: i64,
    progress: &Option<Bound<'_, PyAny>>,
) -> PyResult<neighbors::NeighborDistances> {
    let dim = points.shape()[1];
    let q = queries.map(|q| q.as_slice()).transpose()?;
    let p = points.as_slice()?;
    run_interruptible(py, progress.as_ref(), |cancel, sink| {
        neighbors::knn_distances_with_progress(
            be,
            p,
            q,
            dim,
            params,
            missing_index,
            &|f| sink.set(f),
            cancel,
        )
    })
}

/// Raise `GeofieldValueError` ("NAME: point 3 has a non-finite coordinate (axis 1: NaN)") unless
/// every coordinate of the (n, dim) `points` is finite: the library's check, in parallel.
#[pyfunction]
pub fn check_points(py: Python<'_>, points: Points<'_>, name: &str) -> PyResult<()> {
    let found = match &points {
        Points::F64(p) => {
            let (dim, s) = (p.shape()[1], p.as_slice()?);
            py.detach(|| neighbors::check_finite(s, dim, "point"))
        }
        Points::F32(p) => {
            let (dim, s) = (p.shape()[1], p.as_slice()?);
            py.detach(|| neighbors::check_finite(s, dim, "point"))
        }
    };
    found.map(|_| ()).map_err(|e| errors::arg(name, e))
}
