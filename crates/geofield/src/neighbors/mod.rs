//! Exact k-nearest-neighbour queries on 2-D and 3-D point sets, on the CPU (rayon) and on
//! CUDA: [`knn`] with the backend, the points, optional queries and one [`KnnParams`].
//!
//! # Semantics
//!
//! For a query q, the result is the up to k points j (k ∈ 1..=64) with the smallest keys
//! (d²(q, p_j), j), compared lexicographically, among the points with d² ≤ r² when a radius r is
//! given (inclusive), and with j ≠ i when the queries are the points themselves and
//! `exclude_self` is set. Results are returned in ascending key order, padded with index −1 and
//! squared distance NaN when fewer than k points qualify.
//!
//! **Tie rule.** Equal squared distances are ordered by point index, exactly. Every index visits
//! candidates in a different order but keeps the same k smallest keys of a total order, so all
//! indexes return the same output as brute force, bit for bit.
//!
//! **Precision rule.** The search runs in the input precision `T` (f32 or f64):
//! d² = ((p₀ − q₀)² + (p₁ − q₁)²) + (p₂ − q₂)², each operation rounded in `T`, no fused
//! multiply-add, axes summed in order. The radius threshold is r² computed in f64 and rounded to
//! `T`. Squared distances are returned widened (exactly) to f64. Pruning uses box lower bounds
//! computed in `T` from exact point coordinates; because rounding is monotone they never exceed
//! the computed d² of a point inside the box, and a box is skipped only when its bound is
//! strictly above the current k-th key distance, so pruning never changes the result.
//!
//! # Indexes ([`IndexKind`])
//!
//! - Brute force: every query against every point, O(Q·N).
//! - Uniform grid: the paper's static grid: a counting sort into equal cells (≈ 2 points per cell
//!   by default), searched shell by shell outwards with an exact stopping rule. O(N + cells) build,
//!   about O(k) per query on evenly spread points. When the queries are the points themselves,
//!   they are answered cell by cell against the block of cells around each cell, gathered once.
//! - Dynamic grid: the paper's dynamic grid: a recursive partition into leaves of at most
//!   `max_per_leaf` points (median splits), searched depth first with box pruning.
//!   O(N log N) build, about O(log N + k) per query, robust to clustering.
//! - `Auto`: brute force for at most [`AUTO_BRUTE_MAX`] points; else the uniform grid on evenly
//!   spread points (about twice as fast as the dynamic grid there) and the dynamic grid with
//!   [`AUTO_LEAF`] points per leaf on clustered ones. The measure is [`clustering_of`]: the mean
//!   occupancy of the coarse cell a point falls in, over what evenly spread (Poisson) points
//!   would give (1 for those; about 1/f for points crowded into a fraction f of their bounding
//!   box); the dynamic grid above [`AUTO_CLUSTERING_MAX`].
//!
//! On [`Backend::Cuda`] every index is built and searched on the device and returns the same
//! rows bit for bit: brute force the brute-force kernel, the uniform grid searched shell by
//! shell, the dynamic grid as Morton-ordered cells searched as an implicit tree with the given
//! leaf size; `Auto` is brute force up to [`AUTO_BRUTE_MAX`] points and the uniform grid above
//! (the fastest on the GPU for every set the bench measures).
//!
//! All CPU queries run in parallel on rayon; every output is independent of the thread count.
//! When the queries are the points themselves, indexes that reorder the points answer them in
//! their storage order (neighbouring queries share cells) and write each row straight to its
//! query's place in the output.
//!
//! Reference: J. Breitbart, "Data structure design for GPU based heterogeneous systems",
//! Int. Conf. on High Performance Computing & Simulation (HPCS) 2009 (full text in the project's
//! `shared/papers/knn-grids-boids-gpu.txt`).

mod answer;
mod auto;
pub mod ball;
pub(crate) mod brute;
mod cpu;
pub(crate) mod cuda;
pub(crate) mod dynamic;
pub mod envelope;
pub mod global;
#[cfg(feature = "io")]
pub mod io;
pub(crate) mod kbest;
pub mod pcf;
pub mod ripley;
pub(crate) mod uniform;

use std::fmt::Debug;
use std::ops::{Add, Mul, Sub};

use rayon::prelude::*;

use crate::{Backend, Cancel, GeofieldError};
pub(crate) use answer::RowSink;
use answer::Watch;
pub use auto::{AUTO_BRUTE_MAX, AUTO_CLUSTERING_MAX, AUTO_LEAF, auto_index, clustering_of};
pub(crate) use cpu::knn_cpu;
use cpu::knn_cpu_watched;
use geofield_cuda::neighbors::GpuCoord;
pub use kbest::K_MAX;
use kbest::KBest;

/// A coordinate type the search can run in (f32 or f64), on the CPU and on the GPU.
pub trait Coord:
    GpuCoord
    + Copy
    + PartialOrd
    + Debug
    + Send
    + Sync
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + 'static
{
    const ZERO: Self;
    const INFINITY: Self;
    const NEG_INFINITY: Self;
    /// Exact widening (f32) or identity (f64).
    fn to_f64(self) -> f64;
    /// Round to nearest.
    fn from_f64(v: f64) -> Self;
    fn is_finite(self) -> bool;
}

impl Coord for f32 {
    const ZERO: Self = 0.0;
    const INFINITY: Self = f32::INFINITY;
    const NEG_INFINITY: Self = f32::NEG_INFINITY;
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn is_finite(self) -> bool {
        f32::is_finite(self)
    }
}

impl Coord for f64 {
    const ZERO: Self = 0.0;
    const INFINITY: Self = f64::INFINITY;
    const NEG_INFINITY: Self = f64::NEG_INFINITY;
    fn to_f64(self) -> f64 {
        self
    }
    fn from_f64(v: f64) -> Self {
        v
    }
    fn is_finite(self) -> bool {
        f64::is_finite(self)
    }
}

/// The parameters of [`knn`]: what to ask of each query and which index answers it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KnnParams {
    /// Neighbours per query, 1..=64.
    pub k: usize,
    /// Keep only points with d ≤ radius (in coordinate units); `None` for no cap.
    pub radius: Option<f64>,
    /// When the queries are the points themselves, skip the query's own index. Ignored when
    /// separate queries are given.
    pub exclude_self: bool,
    /// The spatial index (every index returns the same rows).
    pub index: IndexKind,
}

impl KnnParams {
    /// `k` nearest others of each point: no radius, self excluded, [`IndexKind::Auto`].
    pub fn new(k: usize) -> Self {
        KnnParams {
            k,
            radius: None,
            exclude_self: true,
            index: IndexKind::Auto,
        }
    }

    /// The same query answered by `index`.
    pub fn with_index(self, index: IndexKind) -> Self {
        KnnParams { index, ..self }
    }

    /// Check the fields; errors name the offending one.
    pub fn validate(&self) -> Result<(), GeofieldError> {
        self.query().validate()?;
        self.index.validate()
    }

    pub(crate) fn query(&self) -> KnnQuery {
        KnnQuery {
            k: self.k,
            radius: self.radius,
            exclude_self: self.exclude_self,
        }
    }
}

/// What to ask of each query ([`KnnParams`] without the index), for the crate's own callers
/// of [`knn_cpu`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct KnnQuery {
    /// Neighbours per query, 1..=64.
    pub(crate) k: usize,
    /// Keep only points with d ≤ radius (in coordinate units); `None` for no cap.
    pub(crate) radius: Option<f64>,
    /// When the queries are the points themselves, skip the query's own index.
    pub(crate) exclude_self: bool,
}

impl KnnQuery {
    /// Check the fields; errors name the offending one.
    pub(crate) fn validate(&self) -> Result<(), GeofieldError> {
        if self.k == 0 || self.k > K_MAX {
            return Err(GeofieldError::Invalid(format!(
                "k = {} is out of range 1..={K_MAX}",
                self.k
            )));
        }
        if let Some(r) = self.radius
            && (r.is_nan() || r < 0.0)
        {
            return Err(GeofieldError::Invalid(format!(
                "radius = {r} must be a non-negative number"
            )));
        }
        Ok(())
    }
}

/// Which spatial index answers the queries (all give identical results).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum IndexKind {
    /// Every query against every point.
    Brute,
    /// Uniform grid; `cell_size` in coordinate units, default from the point density.
    Uniform { cell_size: Option<f64> },
    /// Recursive partition into leaves of at most `max_per_leaf` points (≥ 1).
    Dynamic { max_per_leaf: usize },
    /// Chosen from the number of points (see the module docs).
    Auto,
}

impl IndexKind {
    /// Check the parameters; errors name the offending field.
    pub fn validate(&self) -> Result<(), GeofieldError> {
        match *self {
            IndexKind::Uniform { cell_size: Some(h) } if !(h.is_finite() && h > 0.0) => Err(
                GeofieldError::Invalid(format!("cell_size = {h} must be finite and positive")),
            ),
            IndexKind::Dynamic { max_per_leaf: 0 } => Err(GeofieldError::Invalid(
                "max_per_leaf = 0 must be at least 1".into(),
            )),
            _ => Ok(()),
        }
    }
}

/// Query results, row-major: query i's neighbours are entries `i*k .. (i+1)*k`.
#[derive(Debug, Clone, PartialEq)]
pub struct Neighbors {
    /// Neighbours per query (the row length).
    pub k: usize,
    /// Point indices in ascending (d², index) order; −1 where fewer than k qualify.
    pub indices: Vec<i64>,
    /// Squared distances computed in the input precision, widened to f64; NaN where absent.
    pub dist2: Vec<f64>,
}

impl Neighbors {
    /// Number of queries.
    pub fn queries(&self) -> usize {
        self.indices.len().checked_div(self.k).unwrap_or(0)
    }

    /// Query i's (indices, squared distances) row.
    pub fn row(&self, i: usize) -> (&[i64], &[f64]) {
        let r = i * self.k..(i + 1) * self.k;
        (&self.indices[r.clone()], &self.dist2[r])
    }
}

/// Query results as Euclidean distances, the form of scipy's `cKDTree.query` ([`knn_distances`]),
/// row-major: query i's neighbours are entries `i*k .. (i+1)*k`.
#[derive(Debug, Clone, PartialEq)]
pub struct NeighborDistances {
    /// Neighbours per query (the row length).
    pub k: usize,
    /// Point indices in ascending (distance, index) order; the caller's `missing_index` where
    /// fewer than k qualify.
    pub indices: Vec<i64>,
    /// Distances: the square root (in f64) of [`Neighbors::dist2`]; +inf where absent.
    pub dist: Vec<f64>,
}

/// A built index that answers one query into a [`KBest`] buffer.
pub(crate) trait Search<T: Coord, const D: usize>: Sync {
    fn search(&self, q: &[T; D], skip: Option<u32>, r2: T, best: &mut KBest<T>);

    /// Append every point j ≠ `skip` with d² ≤ `r2` to `out` as (d², j), in no particular order.
    fn within(&self, q: &[T; D], skip: Option<u32>, r2: T, out: &mut Vec<(T, u32)>);

    /// Original point indices in storage order: when the queries are the points, answering them
    /// in this order keeps neighbouring queries on the same cells (better cache reuse).
    fn storage_order(&self) -> Option<&[u32]> {
        None
    }

    /// Answer every stored point as a query (skipping its own index when `exclude_self`),
    /// handing [`RowSink::put`] each one's storage position and result. Returns false, having
    /// done nothing, when the index has no such batch path (the caller then runs
    /// [`Search::search`] per point).
    fn search_stored(&self, _k: usize, _exclude_self: bool, _r2: T, _sink: &RowSink<'_>) -> bool {
        false
    }
}

/// Coordinates checked per task by [`check_finite`].
const CHECK_CHUNK: usize = 1 << 14;

/// The number of `dim`-D points in `v`, or an error naming the first non-finite coordinate
/// ("point 3 has a non-finite coordinate (axis 1: NaN)"); chunks are checked in parallel.
pub fn check_finite<T: Coord>(v: &[T], dim: usize, what: &str) -> Result<usize, GeofieldError> {
    let first_bad = v
        .par_chunks(CHECK_CHUNK)
        .position_first(|c| !c.iter().fold(true, |ok, x| ok & x.is_finite()))
        .and_then(|b| {
            let start = b * CHECK_CHUNK;
            v.get(start..)?
                .iter()
                .position(|x| !x.is_finite())
                .map(|i| start + i)
        });
    if let Some(i) = first_bad {
        return Err(GeofieldError::Invalid(format!(
            "{what} {} has a non-finite coordinate (axis {}: {:?})",
            i / dim,
            i % dim,
            v[i].to_f64()
        )));
    }
    Ok(v.len() / dim.max(1))
}

/// The checks shared by every backend: the query and index parameters, `dim`, array lengths
/// and the point-count limit (ids are u32). Coordinates are checked for finiteness where they
/// are converted.
fn check_inputs<T: Coord>(
    points: &[T],
    queries: Option<&[T]>,
    dim: usize,
    q: &KnnQuery,
    index: IndexKind,
) -> Result<(), GeofieldError> {
    q.validate()?;
    index.validate()?;
    if dim != 2 && dim != 3 {
        return Err(GeofieldError::Invalid(format!(
            "dim = {dim} is not supported (2 or 3)"
        )));
    }
    if !points.len().is_multiple_of(dim) {
        return Err(GeofieldError::Invalid(format!(
            "points has {} values, not a multiple of dim = {dim}",
            points.len()
        )));
    }
    if let Some(qs) = queries
        && !qs.len().is_multiple_of(dim)
    {
        return Err(GeofieldError::Invalid(format!(
            "queries has {} values, not a multiple of dim = {dim}",
            qs.len()
        )));
    }
    if points.len() / dim > u32::MAX as usize {
        return Err(GeofieldError::Unsupported(format!(
            "{} points; at most {} are supported",
            points.len() / dim,
            u32::MAX
        )));
    }
    Ok(())
}

/// Exact k-nearest-neighbour search on `backend` (see the module docs for the semantics; the
/// CPU and the GPU return the same rows bit for bit).
///
/// `points` and `queries` are flat coordinate arrays, `dim` (2 or 3) values per point, in f32
/// or f64 (the search runs in that precision). Without `queries`, every point is a query (and
/// `params.exclude_self` applies).
///
/// ```
/// use geofield::Backend;
/// use geofield::neighbors::{self, KnnParams};
///
/// // Four points on a line; each point's nearest other point.
/// let pts = [0.0, 0.0, 1.0, 0.0, 3.0, 0.0, 7.0, 0.0];
/// let nb = neighbors::knn(&Backend::Cpu, &pts[..], None, 2, &KnnParams::new(1))?;
/// assert_eq!(nb.indices, vec![1, 0, 1, 2]);
/// assert_eq!(nb.dist2, vec![1.0, 1.0, 4.0, 16.0]);
/// # Ok::<(), geofield::GeofieldError>(())
/// ```
pub fn knn<T: Coord>(
    backend: &Backend,
    points: &[T],
    queries: Option<&[T]>,
    dim: usize,
    params: &KnnParams,
) -> Result<Neighbors, GeofieldError> {
    knn_with_progress(
        backend,
        points,
        queries,
        dim,
        params,
        &|_| {},
        &Cancel::new(),
    )
}

/// [`knn`], calling `progress` with the fraction of the queries answered (from any thread; on
/// the GPU only at the end), and stopping with [`GeofieldError::Cancelled`] soon after `cancel`
/// is set (see [`crate::cancel`]; the CPU checks before every query, the GPU between launches).
///
/// ```
/// use geofield::neighbors::{self, KnnParams};
/// use geofield::{Backend, Cancel, GeofieldError};
///
/// let pts = [0.0, 0.0, 1.0, 0.0, 3.0, 0.0, 7.0, 0.0];
/// let cancel = Cancel::new();
/// let nb = neighbors::knn_with_progress(&Backend::Cpu, &pts[..], None, 2, &KnnParams::new(1),
///     &|f| assert!((0.0..=1.0).contains(&f)), &cancel)?;
/// assert_eq!(nb.indices, vec![1, 0, 1, 2]);
/// cancel.cancel();
/// let r = neighbors::knn_with_progress(&Backend::Cpu, &pts[..], None, 2, &KnnParams::new(1),
///     &|_| {}, &cancel);
/// assert!(matches!(r, Err(GeofieldError::Cancelled)));
/// # Ok::<(), geofield::GeofieldError>(())
/// ```
pub fn knn_with_progress<T: Coord>(
    backend: &Backend,
    points: &[T],
    queries: Option<&[T]>,
    dim: usize,
    params: &KnnParams,
    progress: &(dyn Fn(f64) + Sync),
    cancel: &Cancel,
) -> Result<Neighbors, GeofieldError> {
    cancel.check()?;
    let q = params.query();
    let watch = Watch {
        cancel,
        progress: Some(progress),
    };
    match backend {
        Backend::Cpu => knn_cpu_watched(points, queries, dim, &q, params.index, &watch),
        Backend::Cuda(gpu) => {
            let nb = cuda::knn(gpu, points, queries, dim, &q, params.index)?;
            cancel.check()?;
            progress(1.0);
            Ok(nb)
        }
    }
}

/// [`knn`] with the rows as Euclidean distances (scipy `cKDTree.query`'s form): the same
/// neighbours in the same order, each distance the f64 square root of the squared distance
/// [`knn`] reports, and missing entries reported as index `missing_index` and distance +inf.
/// On the GPU the outputs are filled in this form as the rows come back (no second pass).
///
/// ```
/// use geofield::Backend;
/// use geofield::neighbors::{self, KnnParams};
///
/// // Three points on a line; the 2 nearest others of each, within distance 2.5.
/// let pts = [0.0, 0.0, 1.0, 0.0, 3.0, 0.0];
/// let q = KnnParams { radius: Some(2.5), ..KnnParams::new(2) };
/// let nb = neighbors::knn_distances(&Backend::Cpu, &pts[..], None, 2, &q, 3)?;
/// assert_eq!(nb.indices, vec![1, 3, 0, 2, 1, 3]);
/// assert_eq!(nb.dist, vec![1.0, f64::INFINITY, 1.0, 2.0, 2.0, f64::INFINITY]);
/// # Ok::<(), geofield::GeofieldError>(())
/// ```
pub fn knn_distances<T: Coord>(
    backend: &Backend,
    points: &[T],
    queries: Option<&[T]>,
    dim: usize,
    params: &KnnParams,
    missing_index: i64,
) -> Result<NeighborDistances, GeofieldError> {
    knn_distances_with_progress(
        backend,
        points,
        queries,
        dim,
        params,
        missing_index,
        &|_| {},
        &Cancel::new(),
    )
}

/// [`knn_distances`] with progress and cancellation as in [`knn_with_progress`].
#[allow(clippy::too_many_arguments)]
pub fn knn_distances_with_progress<T: Coord>(
    backend: &Backend,
    points: &[T],
    queries: Option<&[T]>,
    dim: usize,
    params: &KnnParams,
    missing_index: i64,
    progress: &(dyn Fn(f64) + Sync),
    cancel: &Cancel,
) -> Result<NeighborDistances, GeofieldError> {
    cancel.check()?;
    let q = params.query();
    let watch = Watch {
        cancel,
        progress: Some(progress),
    };
    let (indices, dist) = match backend {
        Backend::Cpu => {
            let Neighbors {
                indices: mut idx,
                dist2: mut d,
                ..
            } = knn_cpu_watched(points, queries, dim, &q, params.index, &watch)?;
            idx.par_iter_mut().zip(d.par_iter_mut()).for_each(|(i, d)| {
                if *i < 0 {
                    *i = missing_index;
                    *d = f64::INFINITY;
                } else {
                    *d = d.sqrt();
                }
            });
            (idx, d)
        }
        Backend::Cuda(gpu) => cuda::knn_rows(
            gpu,
            points,
            queries,
            dim,
            &q,
            params.index,
            cuda::Form::Distance {
                missing: missing_index,
            },
            None,
        )?,
    };
    cancel.check()?;
    progress(1.0);
    Ok(NeighborDistances {
        k: q.k,
        indices,
        dist,
    })
}
