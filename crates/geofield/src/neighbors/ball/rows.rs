//! The rows of the radius queries on the CPU: counted in a first pass, written in a second into
//! one exact allocation (a result too large to hold is an error, not an abort), each row sorted
//! by its [`Order`].

use rayon::prelude::*;

use super::cells::CellList;
use super::{Ball, Metric, Order, value};
use crate::GeofieldError;

/// Queries per parallel task of the two passes.
const TASK: usize = 512;

/// The rows of `queries` against `list`: each kept point (value ≤ the threshold and
/// `keep(query, id)`), counted in a first pass and written in a second into one allocation.
pub(crate) fn rows<const D: usize>(
    list: &CellList<D>,
    queries: &[[f64; D]],
    metric: Metric,
    r: f64,
    order: Order,
    keep: &(dyn Fn(usize, u32) -> bool + Sync),
) -> Result<Ball, GeofieldError> {
    let t = metric.threshold(r);
    let period = list.period;
    let scan = |qi: usize, f: &mut dyn FnMut(u32, f64)| {
        let q = &queries[qi];
        list.visit(q, r, |pts, ids| {
            for (p, &id) in pts.iter().zip(ids) {
                let v = value(metric, &period, q, p);
                if v <= t && keep(qi, id) {
                    f(id, v);
                }
            }
        });
    };
    let counts = count_rows(list, queries, metric, r, keep);
    let mut offsets = Vec::with_capacity(queries.len() + 1);
    offsets.push(0u64);
    let mut total = 0u64;
    for c in &counts {
        total += c;
        offsets.push(total);
    }
    let total = usize::try_from(total).map_err(|_| too_many(total))?;
    let mut indices: Vec<u32> = Vec::new();
    let mut dist: Vec<f64> = Vec::new();
    indices
        .try_reserve_exact(total)
        .map_err(|_| too_many(total as u64))?;
    dist.try_reserve_exact(total)
        .map_err(|_| too_many(total as u64))?;
    indices.resize(total, 0);
    dist.resize(total, 0.0);
    // Split the outputs by row and fill each row in place.
    let mut rows_out: Vec<(&mut [u32], &mut [f64])> = Vec::with_capacity(queries.len());
    let (mut ri, mut rd) = (&mut indices[..], &mut dist[..]);
    for c in &counts {
        let (a, b) = std::mem::take(&mut ri).split_at_mut(*c as usize);
        let (x, y) = std::mem::take(&mut rd).split_at_mut(*c as usize);
        rows_out.push((a, x));
        ri = b;
        rd = y;
    }
    rows_out
        .par_iter_mut()
        .with_min_len(TASK)
        .enumerate()
        .for_each(|(qi, (ri, rd))| {
            let mut k = 0;
            scan(qi, &mut |id, v| {
                ri[k] = id;
                rd[k] = metric.distance(v);
                k += 1;
            });
            sort_row(ri, rd, order);
        });
    drop(rows_out);
    Ok(Ball {
        offsets,
        indices,
        dist,
    })
}

/// The length of each row of [`rows`] (its first pass).
pub(crate) fn count_rows<const D: usize>(
    list: &CellList<D>,
    queries: &[[f64; D]],
    metric: Metric,
    r: f64,
    keep: &(dyn Fn(usize, u32) -> bool + Sync),
) -> Vec<u64> {
    let t = metric.threshold(r);
    let period = list.period;
    (0..queries.len())
        .into_par_iter()
        .with_min_len(TASK)
        .map(|qi| {
            let q = &queries[qi];
            let mut c = 0u64;
            list.visit(q, r, |pts, ids| {
                for (p, &id) in pts.iter().zip(ids) {
                    if value(metric, &period, q, p) <= t && keep(qi, id) {
                        c += 1;
                    }
                }
            });
            c
        })
        .collect()
}

pub(super) fn too_many(total: u64) -> GeofieldError {
    GeofieldError::Unsupported(format!(
        "the result has {total} neighbours ({:.1} GB), more than can be allocated: use a smaller \
         radius or fewer queries at a time",
        total as f64 * 12.0 / 1e9
    ))
}

/// Sort one row by `order` (stable keys: ties in distance by index).
pub(crate) fn sort_row(idx: &mut [u32], dist: &mut [f64], order: Order) {
    if order == Order::Unsorted || idx.len() < 2 {
        return;
    }
    let mut row: Vec<(u64, u32)> = idx
        .iter()
        .zip(dist.iter())
        .map(|(&i, &d)| (d.to_bits(), i))
        .collect();
    match order {
        Order::Distance => row.sort_unstable(),
        _ => row.sort_unstable_by_key(|&(_, i)| i),
    }
    for (k, (d, i)) in row.into_iter().enumerate() {
        idx[k] = i;
        dist[k] = f64::from_bits(d);
    }
}
