//! k nearest neighbours in any [`Space`] (Manhattan or Chebyshev, periodic boxes) and for any
//! k: the radius queries' cell list searched with a growing radius.
//!
//! Each query collects every point within r (exactly, as [`super::within`]); when at least k
//! are found (or r reaches every point) the k smallest keys (value, index) among them are the
//! answer: a point not collected is farther than r, beyond each of them. Otherwise r doubles.
//! r starts where a ball holds about k + 1 points at the points' mean density. Distances are
//! those of [`super::within`] (for Euclidean open axes the same bits as
//! [`crate::neighbors::knn_distances`] on f64 points).

use rayon::prelude::*;

use super::cells::{CellList, period_of};
use super::{Metric, Space, check_shape, gpu, query_points, stored_points, value};
use crate::neighbors::{Coord, NeighborDistances};
use crate::{Backend, GeofieldError};
use geofield_cuda::neighbors::ball::Keep;

/// Most neighbours per query of [`knn_in`].
pub const K_MAX_SPACE: usize = 1 << 16;

/// The k nearest points of each query (of each point, without `queries`, then leaving each
/// point out of its own row when `exclude_self`) in `space`, keeping only points within
/// `radius` (inclusive) when given. Rows as [`NeighborDistances`]: ascending (distance, index),
/// missing entries `missing_index` and +inf. On CUDA the rounds run on the device (each
/// query's radius its own) and the rows equal the CPU's bit for bit.
#[allow(clippy::too_many_arguments)]
pub fn knn_in<T: Coord>(
    backend: &Backend,
    points: &[T],
    queries: Option<&[T]>,
    dim: usize,
    k: usize,
    space: &Space,
    exclude_self: bool,
    radius: Option<f64>,
    missing_index: i64,
) -> Result<NeighborDistances, GeofieldError> {
    check_shape(points, queries, dim, space)?;
    if k == 0 || k > K_MAX_SPACE {
        return Err(GeofieldError::Invalid(format!(
            "k = {k} is out of range 1..={K_MAX_SPACE}"
        )));
    }
    if let Some(r) = radius
        && (r.is_nan() || r < 0.0)
    {
        return Err(GeofieldError::InvalidParameter {
            name: "radius".into(),
            value: format!("{r}"),
            expected: "a number >= 0".into(),
        });
    }
    if dim == 2 {
        knn_d::<T, 2>(
            backend,
            points,
            queries,
            k,
            space,
            exclude_self,
            radius,
            missing_index,
        )
    } else {
        knn_d::<T, 3>(
            backend,
            points,
            queries,
            k,
            space,
            exclude_self,
            radius,
            missing_index,
        )
    }
}

#[allow(clippy::too_many_arguments)]
fn knn_d<T: Coord, const D: usize>(
    backend: &Backend,
    points: &[T],
    queries: Option<&[T]>,
    k: usize,
    space: &Space,
    exclude_self: bool,
    radius: Option<f64>,
    missing_index: i64,
) -> Result<NeighborDistances, GeofieldError> {
    let period = period_of::<D>(space);
    let pts = stored_points::<T, D>(points, &period, "point")?;
    let qs = match queries {
        Some(q) => Some(query_points::<T, D>(q, &period)?),
        None => None,
    };
    let n = pts.len();
    let start = start_radius(&pts, &period, k);
    let list = CellList::build(&pts, period, start)?;
    let qref = qs.as_deref().unwrap_or(&pts);
    let skip_self = qs.is_none() && exclude_self;
    let metric = space.metric;
    let cap = radius.unwrap_or(f64::INFINITY);
    let r0 = start.min(cap);
    let rounds = Rounds {
        k,
        n,
        cap,
        skip_self,
    };
    let mut indices = vec![missing_index; qref.len() * k];
    let mut dist = vec![f64::INFINITY; qref.len() * k];
    if let Backend::Cuda(gpu) = backend {
        let keep = if skip_self { Keep::NotSelf } else { Keep::All };
        gpu::knn(
            gpu,
            &list,
            qref,
            metric,
            r0,
            &rounds,
            keep,
            &mut indices,
            &mut dist,
        )?;
        return Ok(NeighborDistances { k, indices, dist });
    }
    indices
        .par_chunks_mut(k)
        .zip(dist.par_chunks_mut(k))
        .enumerate()
        .with_min_len(64)
        .for_each_init(Vec::new, |cand: &mut Vec<(u64, u32)>, (qi, (ri, rd))| {
            let q = &qref[qi];
            let far = reach(&list, q);
            let mut r = r0;
            loop {
                let t = metric.threshold(r);
                cand.clear();
                list.visit(q, r, |ps, ids| {
                    for (p, &j) in ps.iter().zip(ids) {
                        let v = value(metric, &period, q, p);
                        if v <= t && !(skip_self && j as usize == qi) {
                            cand.push((v.to_bits(), j));
                        }
                    }
                });
                match rounds.next(r, far, cand.len()) {
                    Some(next) => r = next,
                    None => break,
                }
            }
            select_row(cand, metric, ri, rd);
        });
    Ok(NeighborDistances { k, indices, dist })
}

/// The rule of the rounds, one copy for the CPU and the GPU: a query with `found` candidates
/// within r is answered when they are k or more, when r reached the cap or every point (`far`),
/// or when every other point was found; else it searches again at twice r (capped).
pub(crate) struct Rounds {
    pub(crate) k: usize,
    pub(crate) n: usize,
    pub(crate) cap: f64,
    pub(crate) skip_self: bool,
}

impl Rounds {
    /// The next radius of a query that found `found` candidates within `r`; None when done.
    pub(crate) fn next(&self, r: f64, far: f64, found: usize) -> Option<f64> {
        let last = r >= self.cap || r >= far;
        if found >= self.k || last || found + usize::from(self.skip_self) >= self.n {
            return None;
        }
        let r = (r * 2.0).min(self.cap);
        Some(if r == 0.0 { f64::MIN_POSITIVE } else { r })
    }
}

/// The k = `ri.len()` smallest keys (value bits, index) of `cand` into one row: indices and
/// distances, ascending; the rest of the row is left as it is (missing).
pub(crate) fn select_row(cand: &mut [(u64, u32)], metric: Metric, ri: &mut [i64], rd: &mut [f64]) {
    let k = ri.len();
    let m = cand.len().min(k);
    if cand.len() > k {
        cand.select_nth_unstable(k - 1);
    }
    cand[..m].sort_unstable();
    for (s, &(v, j)) in cand[..m].iter().enumerate() {
        ri[s] = i64::from(j);
        rd[s] = metric.distance(f64::from_bits(v));
    }
}

/// A radius whose ball holds about k + 1 points at the mean density of the points' box.
fn start_radius<const D: usize>(pts: &[[f64; D]], period: &[f64; D], k: usize) -> f64 {
    let n = pts.len().max(1) as f64;
    let mut vol = 1.0f64;
    let mut widest = 0.0f64;
    let mut axes = 0i32;
    for a in 0..D {
        let e = if period[a] > 0.0 {
            period[a]
        } else {
            let lo = pts.iter().map(|p| p[a]).fold(f64::INFINITY, f64::min);
            let hi = pts.iter().map(|p| p[a]).fold(f64::NEG_INFINITY, f64::max);
            (hi - lo).max(0.0)
        };
        if e > 0.0 && e.is_finite() {
            vol *= e;
            axes += 1;
            widest = widest.max(e);
        }
    }
    if axes == 0 {
        return 1.0;
    }
    let r = 0.6 * (vol * (k + 1) as f64 / n).powf(1.0 / f64::from(axes));
    if r.is_finite() && r > 0.0 {
        r
    } else {
        widest.max(1.0)
    }
}

/// A radius beyond which every stored point lies from q, in every metric: the sum over axes of
/// the farthest the grid reaches from q (half the box on periodic axes).
pub(crate) fn reach<const D: usize>(list: &CellList<D>, q: &[f64; D]) -> f64 {
    let mut s = 0.0f64;
    for (a, &qa) in q.iter().enumerate() {
        s += if list.period[a] > 0.0 {
            0.5 * list.period[a]
        } else {
            let lo = list.origin[a];
            let hi = lo + list.width[a] * list.dims[a] as f64;
            (qa - lo).abs().max((hi - qa).abs())
        };
    }
    // Above the sum's rounding.
    s * (1.0 + 1e-9) + f64::MIN_POSITIVE
}
