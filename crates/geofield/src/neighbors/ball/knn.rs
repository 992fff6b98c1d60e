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
use super::{Space, check_shape, query_points, stored_points, value};
use crate::neighbors::{Coord, NeighborDistances};
use crate::{Backend, GeofieldError};

/// Most neighbours per query of [`knn_in`].
pub const K_MAX_SPACE: usize = 1 << 16;

/// The k nearest points of each query (of each point, without `queries`, then leaving each
/// point out of its own row when `exclude_self`) in `space`, keeping only points within
/// `radius` (inclusive) when given. Rows as [`NeighborDistances`]: ascending (distance, index),
/// missing entries `missing_index` and +inf. Runs on the CPU's threads whatever `backend`
/// says (this search has no GPU path yet; [`crate::neighbors::knn_distances`] has one for
/// Euclidean open axes and k ≤ 64).
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
    let _ = backend;
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

fn knn_d<T: Coord, const D: usize>(
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
    let mut indices = vec![missing_index; qref.len() * k];
    let mut dist = vec![f64::INFINITY; qref.len() * k];
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
                let last = r >= cap || r >= far;
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
                if cand.len() >= k || last || cand.len() + usize::from(skip_self) >= n {
                    break;
                }
                r = (r * 2.0).min(cap);
                if r == 0.0 {
                    r = f64::MIN_POSITIVE;
                }
            }
            let m = cand.len().min(k);
            if cand.len() > k {
                cand.select_nth_unstable(k - 1);
            }
            cand[..m].sort_unstable();
            for (s, &(v, j)) in cand[..m].iter().enumerate() {
                ri[s] = i64::from(j);
                rd[s] = metric.distance(f64::from_bits(v));
            }
        });
    Ok(NeighborDistances { k, indices, dist })
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
fn reach<const D: usize>(list: &CellList<D>, q: &[f64; D]) -> f64 {
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
