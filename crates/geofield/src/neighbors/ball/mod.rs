//! Radius queries: every point within r of each query ([`within`], scipy's `query_ball_point`,
//! kiddo's `within`), the pairs within r ([`pairs`], `query_pairs`) and pair counts at several
//! radii ([`count_pairs`], `count_neighbors`), the basis of Ripley's K ([`super::ripley`]).
//!
//! # Semantics
//!
//! Distances are computed in f64 (f32 coordinates are widened exactly), axis by axis in order:
//! on a periodic axis of length L (a [`Space::boxsize`] entry > 0) the difference δ = |p − q|
//! becomes L − δ when δ > L/2 (the nearest image). The [`Metric`] then combines them:
//! Euclidean Σδ² (each square and sum rounded, no fused multiply-add) compared with r·r (rounded
//! once), reported as its square root; Manhattan Σδ compared with r; Chebyshev max δ compared
//! with r. A point is within r when its value is **≤** the threshold (inclusive, as scipy's
//! `query_ball_point`, `query_pairs` and `count_neighbors`, and kiddo ≥ 5.3). These are scipy's
//! operations in scipy's order, so a point on the boundary is in or out the same way.
//!
//! On periodic axes the points must lie in [0, L) (as scipy's `cKDTree` requires); queries are
//! wrapped into it.
//!
//! # Index
//!
//! A cell list (`cells.rs`): cells about r/2 wide (fewer, wider ones when that would make more
//! than max(2N, 64) cells), a stable counting sort, the cells of [q − r, q + r] visited in a
//! fixed order. Each row is found twice (counted, then written into its place in one exact
//! allocation), so the output's size is known, and refused cleanly, before it is allocated.
//! Rows come out in the cells' order unless sorted ([`Order`]); every output is independent
//! of the thread count.

pub(crate) mod cells;
mod count;
pub(crate) mod gpu;
mod knn;
mod rows;

use rayon::prelude::*;

pub use count::{count_pairs, count_pairs_weighted};
pub use knn::{K_MAX_SPACE, knn_in};

use super::{Coord, check_finite};
use crate::{Backend, GeofieldError};
use cells::{CellList, period_of};
use rows::too_many;
pub(crate) use rows::{count_rows, rows, sort_row};

/// How the per-axis differences are combined (scipy's Minkowski `p`: 2, 1 or ∞).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Metric {
    /// p = 2: √Σδ².
    #[default]
    Euclidean,
    /// p = 1: Σδ (taxicab).
    Manhattan,
    /// p = ∞: max δ.
    Chebyshev,
}

impl Metric {
    /// The metric of Minkowski exponent `p` (1, 2 or ∞); other exponents are refused.
    pub fn from_p(p: f64) -> Result<Self, GeofieldError> {
        if p == 2.0 {
            Ok(Metric::Euclidean)
        } else if p == 1.0 {
            Ok(Metric::Manhattan)
        } else if p == f64::INFINITY {
            Ok(Metric::Chebyshev)
        } else {
            Err(GeofieldError::InvalidParameter {
                name: "p".into(),
                value: format!("{p}"),
                expected: "1 (Manhattan), 2 (Euclidean) or inf (Chebyshev)".into(),
            })
        }
    }

    /// The threshold a point's combined value is compared with for radius `r` (r·r for
    /// Euclidean; below every value for a negative r).
    #[inline]
    pub(crate) fn threshold(self, r: f64) -> f64 {
        if r < 0.0 {
            -1.0
        } else if self == Metric::Euclidean {
            r * r
        } else {
            r
        }
    }

    /// The distance reported for a combined value.
    #[inline]
    pub(crate) fn distance(self, v: f64) -> f64 {
        if self == Metric::Euclidean {
            v.sqrt()
        } else {
            v
        }
    }
}

/// The space the points live in: the metric and, optionally, a periodic box.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Space {
    pub metric: Metric,
    /// The box's length per axis (scipy's `boxsize`); an axis with 0 is open. `None`: all open.
    pub boxsize: Option<Vec<f64>>,
}

impl Space {
    /// Check the box against the dimension (lengths finite and ≥ 0, one per axis).
    pub fn validate(&self, dim: usize) -> Result<(), GeofieldError> {
        if let Some(b) = &self.boxsize {
            if b.len() != dim {
                return Err(GeofieldError::Invalid(format!(
                    "boxsize has {} lengths for {dim}-D points",
                    b.len()
                )));
            }
            if let Some(l) = b.iter().find(|l| !(l.is_finite() && **l >= 0.0)) {
                return Err(GeofieldError::InvalidParameter {
                    name: "boxsize".into(),
                    value: format!("{l}"),
                    expected: "finite lengths >= 0 (0: an open axis)".into(),
                });
            }
        }
        Ok(())
    }
}

/// The combined value (see the module docs) of p seen from q, with `period[a]` > 0 on periodic
/// axes.
#[inline]
pub(crate) fn value<const D: usize>(
    metric: Metric,
    period: &[f64; D],
    q: &[f64; D],
    p: &[f64; D],
) -> f64 {
    let mut v = 0.0f64;
    for a in 0..D {
        let mut d = (p[a] - q[a]).abs();
        if period[a] > 0.0 && d > 0.5 * period[a] {
            d = period[a] - d;
        }
        match metric {
            Metric::Euclidean => v += d * d,
            Metric::Manhattan => v += d,
            Metric::Chebyshev => v = v.max(d),
        }
    }
    v
}

/// The order of each row of a [`within`] result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Order {
    /// Ascending (distance, index).
    #[default]
    Distance,
    /// Ascending index (scipy's `return_sorted=True`).
    Index,
    /// The index's own order (fixed for given inputs, but no promise beyond that).
    Unsorted,
}

/// What [`within`] asks of each query.
#[derive(Debug, Clone, PartialEq)]
pub struct BallParams {
    /// Keep the points with distance ≤ radius (inclusive).
    pub radius: f64,
    pub space: Space,
    pub order: Order,
    /// When the queries are the points themselves, leave each point out of its own row.
    pub exclude_self: bool,
}

impl BallParams {
    /// Every point within `radius`, Euclidean, open axes, sorted by distance, self included
    /// (scipy's convention).
    pub fn new(radius: f64) -> Self {
        BallParams {
            radius,
            space: Space::default(),
            order: Order::Distance,
            exclude_self: false,
        }
    }
}

/// Rows of neighbours in compressed sparse row form: query i's neighbours are entries
/// `offsets[i] .. offsets[i + 1]` of `indices` and `dist`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Ball {
    pub offsets: Vec<u64>,
    pub indices: Vec<u32>,
    pub dist: Vec<f64>,
}

impl Ball {
    /// Number of queries (rows).
    pub fn queries(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    /// Query i's (indices, distances).
    pub fn row(&self, i: usize) -> (&[u32], &[f64]) {
        let r = self.offsets[i] as usize..self.offsets[i + 1] as usize;
        (&self.indices[r.clone()], &self.dist[r])
    }
}

/// Points as `[f64; D]`: finite, inside [0, L) on periodic axes (`what` names them in errors).
pub(crate) fn stored_points<T: Coord, const D: usize>(
    flat: &[T],
    period: &[f64; D],
    what: &str,
) -> Result<Vec<[f64; D]>, GeofieldError> {
    check_finite(flat, D, what)?;
    let pts: Vec<[f64; D]> = flat
        .par_chunks_exact(D)
        .map(|c| std::array::from_fn(|a| c[a].to_f64()))
        .collect();
    let outside = pts
        .par_iter()
        .position_first(|p| (0..D).any(|a| period[a] > 0.0 && !(p[a] >= 0.0 && p[a] < period[a])));
    if let Some(i) = outside {
        let a = (0..D)
            .find(|&a| period[a] > 0.0 && !(pts[i][a] >= 0.0 && pts[i][a] < period[a]))
            .unwrap_or(0);
        return Err(GeofieldError::Invalid(format!(
            "{what} {i} is outside the periodic box (axis {a}: {} not in [0, {}))",
            pts[i][a], period[a]
        )));
    }
    Ok(pts)
}

/// Queries as `[f64; D]`, finite, wrapped into [0, L) on periodic axes.
pub(crate) fn query_points<T: Coord, const D: usize>(
    flat: &[T],
    period: &[f64; D],
) -> Result<Vec<[f64; D]>, GeofieldError> {
    check_finite(flat, D, "query")?;
    Ok(flat
        .par_chunks_exact(D)
        .map(|c| {
            std::array::from_fn(|a| {
                let x = c[a].to_f64();
                let l = period[a];
                if l > 0.0 {
                    let w = x.rem_euclid(l);
                    if w >= l { 0.0 } else { w }
                } else {
                    x
                }
            })
        })
        .collect())
}

/// The shape checks shared by the radius functions.
pub(crate) fn check_shape<T>(
    points: &[T],
    queries: Option<&[T]>,
    dim: usize,
    space: &Space,
) -> Result<(), GeofieldError> {
    if dim != 2 && dim != 3 {
        return Err(GeofieldError::Invalid(format!(
            "dim = {dim} is not supported (2 or 3)"
        )));
    }
    for (what, v) in [("points", Some(points)), ("queries", queries)] {
        if let Some(v) = v
            && !v.len().is_multiple_of(dim)
        {
            return Err(GeofieldError::Invalid(format!(
                "{what} has {} values, not a multiple of dim = {dim}",
                v.len()
            )));
        }
    }
    space.validate(dim)
}

fn check_radius(r: f64) -> Result<(), GeofieldError> {
    if r.is_nan() || r < 0.0 {
        return Err(GeofieldError::InvalidParameter {
            name: "radius".into(),
            value: format!("{r}"),
            expected: "a number >= 0".into(),
        });
    }
    Ok(())
}

/// Every point within `params.radius` of each query (of each point, without `queries`), as
/// CSR rows (see the module docs for the semantics). `points` and `queries` are flat arrays of
/// `dim` (2 or 3) coordinates per point.
///
/// ```
/// use geofield::Backend;
/// use geofield::neighbors::ball::{self, BallParams};
///
/// let pts = [0.0, 0.0, 1.0, 0.0, 3.0, 0.0];
/// let b = ball::within(&Backend::Cpu, &pts[..], None, 2, &BallParams::new(2.0))?;
/// assert_eq!(b.offsets, vec![0, 2, 5, 7]);
/// assert_eq!(b.row(1), (&[1u32, 0, 2][..], &[0.0, 1.0, 2.0][..]));
/// assert_eq!(b.row(2), (&[2u32, 1][..], &[0.0, 2.0][..]));
/// # Ok::<(), geofield::GeofieldError>(())
/// ```
pub fn within<T: Coord>(
    backend: &Backend,
    points: &[T],
    queries: Option<&[T]>,
    dim: usize,
    params: &BallParams,
) -> Result<Ball, GeofieldError> {
    check_shape(points, queries, dim, &params.space)?;
    check_radius(params.radius)?;
    if dim == 2 {
        within_d::<T, 2>(backend, points, queries, params)
    } else {
        within_d::<T, 3>(backend, points, queries, params)
    }
}

/// The stored points, the queries (wrapped; None: the points are the queries) and the cell
/// list for radius `r`.
#[allow(clippy::type_complexity)]
fn prepare<T: Coord, const D: usize>(
    points: &[T],
    queries: Option<&[T]>,
    space: &Space,
    r: f64,
) -> Result<(Vec<[f64; D]>, Option<Vec<[f64; D]>>, CellList<D>), GeofieldError> {
    let period = period_of::<D>(space);
    let pts = stored_points::<T, D>(points, &period, "point")?;
    let qs = match queries {
        Some(q) => Some(query_points::<T, D>(q, &period)?),
        None => None,
    };
    let list = CellList::build(&pts, period, r)?;
    Ok((pts, qs, list))
}

fn within_d<T: Coord, const D: usize>(
    backend: &Backend,
    points: &[T],
    queries: Option<&[T]>,
    params: &BallParams,
) -> Result<Ball, GeofieldError> {
    let (pts, qs, list) = prepare::<T, D>(points, queries, &params.space, params.radius)?;
    let skip_self = qs.is_none() && params.exclude_self;
    if let Backend::Cuda(g) = backend {
        use geofield_cuda::neighbors::ball::Keep;
        return gpu::rows(
            g,
            &list,
            qs.as_deref().unwrap_or(&pts),
            params.space.metric,
            params.radius,
            params.order,
            if skip_self { Keep::NotSelf } else { Keep::All },
        );
    }
    let keep = move |qi: usize, id: u32| !(skip_self && qi == id as usize);
    rows(
        &list,
        qs.as_deref().unwrap_or(&pts),
        params.space.metric,
        params.radius,
        params.order,
        &keep,
    )
}

/// The number of points within `params.radius` of each query (the row lengths of [`within`],
/// without the rows: scipy's `return_length=True`).
pub fn within_counts<T: Coord>(
    backend: &Backend,
    points: &[T],
    queries: Option<&[T]>,
    dim: usize,
    params: &BallParams,
) -> Result<Vec<u64>, GeofieldError> {
    check_shape(points, queries, dim, &params.space)?;
    check_radius(params.radius)?;
    if dim == 2 {
        counts_d::<T, 2>(backend, points, queries, params)
    } else {
        counts_d::<T, 3>(backend, points, queries, params)
    }
}

fn counts_d<T: Coord, const D: usize>(
    backend: &Backend,
    points: &[T],
    queries: Option<&[T]>,
    params: &BallParams,
) -> Result<Vec<u64>, GeofieldError> {
    let (pts, qs, list) = prepare::<T, D>(points, queries, &params.space, params.radius)?;
    let skip_self = qs.is_none() && params.exclude_self;
    let qref = qs.as_deref().unwrap_or(&pts);
    if let Backend::Cuda(g) = backend {
        use geofield_cuda::neighbors::ball::Keep;
        return gpu::counts(
            g,
            &list,
            qref,
            params.space.metric,
            params.radius,
            if skip_self { Keep::NotSelf } else { Keep::All },
        );
    }
    let keep = move |qi: usize, id: u32| !(skip_self && qi == id as usize);
    Ok(count_rows(
        &list,
        qref,
        params.space.metric,
        params.radius,
        &keep,
    ))
}

/// Every pair (i, j), i < j, of points within `r` of each other (scipy's `query_pairs`), in
/// ascending (i, j) order.
///
/// ```
/// use geofield::Backend;
/// use geofield::neighbors::ball::{self, Space};
///
/// let pts = [0.0, 0.0, 1.0, 0.0, 3.0, 0.0];
/// let p = ball::pairs(&Backend::Cpu, &pts[..], 2, 2.0, &Space::default())?;
/// assert_eq!(p, vec![[0, 1], [1, 2]]);
/// # Ok::<(), geofield::GeofieldError>(())
/// ```
pub fn pairs<T: Coord>(
    backend: &Backend,
    points: &[T],
    dim: usize,
    r: f64,
    space: &Space,
) -> Result<Vec<[u32; 2]>, GeofieldError> {
    check_shape(points, None, dim, space)?;
    check_radius(r)?;
    let b = if dim == 2 {
        pairs_d::<T, 2>(backend, points, r, space)?
    } else {
        pairs_d::<T, 3>(backend, points, r, space)?
    };
    let mut out = Vec::new();
    out.try_reserve_exact(b.indices.len())
        .map_err(|_| too_many(b.indices.len() as u64))?;
    for i in 0..b.queries() {
        out.extend(b.row(i).0.iter().map(|&j| [i as u32, j]));
    }
    Ok(out)
}

fn pairs_d<T: Coord, const D: usize>(
    backend: &Backend,
    points: &[T],
    r: f64,
    space: &Space,
) -> Result<Ball, GeofieldError> {
    let period = period_of::<D>(space);
    let pts = stored_points::<T, D>(points, &period, "point")?;
    let list = CellList::build(&pts, period, r)?;
    if let Backend::Cuda(g) = backend {
        use geofield_cuda::neighbors::ball::Keep;
        return gpu::rows(g, &list, &pts, space.metric, r, Order::Index, Keep::Above);
    }
    rows(&list, &pts, space.metric, r, Order::Index, &|qi, id| {
        id as usize > qi
    })
}
