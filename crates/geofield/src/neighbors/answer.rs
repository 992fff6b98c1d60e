//! Answering the queries against a built index: separate queries in a spatial order, the stored
//! points in the index's storage order, rows written whole into the output in input order.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicU64, AtomicUsize};

use rayon::prelude::*;

use super::kbest::KBest;
use super::{Coord, Neighbors, Search};
use crate::Cancel;

/// Queries per rayon task (at least).
const MIN_TASK: usize = 256;

/// Rows answered between two progress reports (per thread, roughly).
const PROGRESS_ROWS: usize = 4096;

/// Where the answering reports progress and looks for a cancel.
pub(crate) struct Watch<'a> {
    pub(crate) cancel: &'a Cancel,
    pub(crate) progress: Option<&'a (dyn Fn(f64) + Sync)>,
}

/// Fewest separate queries worth putting in a spatial order first.
const SPATIAL_ORDER_MIN: usize = 4096;

/// A permutation of `queries` that visits them cell by cell on a grid of about 4 queries per
/// cell over their bounding box (a counting sort, O(n)), or None for few queries or a box that
/// is not finite. Answering queries in this order makes consecutive searches read the same
/// index cells: for queries given in a random order (a common case: the points themselves,
/// passed as queries) this is several times faster, and the result does not change (each row
/// is written whole by its own query).
fn spatial_order<T: Coord, const D: usize>(queries: &[[T; D]]) -> Option<Vec<u32>> {
    let n = queries.len();
    if n < SPATIAL_ORDER_MIN || u32::try_from(n).is_err() {
        return None;
    }
    let mut lo = [f64::INFINITY; D];
    let mut hi = [f64::NEG_INFINITY; D];
    for q in queries {
        for a in 0..D {
            let v = q[a].to_f64();
            lo[a] = lo[a].min(v);
            hi[a] = hi[a].max(v);
        }
    }
    let per_axis = ((n as f64 / 4.0).powf(1.0 / D as f64).ceil() as usize).clamp(1, 1 << 16);
    let mut scale = [0.0f64; D];
    for a in 0..D {
        let w = hi[a] - lo[a];
        if !w.is_finite() {
            return None;
        }
        scale[a] = if w > 0.0 { per_axis as f64 / w } else { 0.0 };
    }
    let cell = |q: &[T; D]| -> usize {
        let mut key = 0usize;
        for a in (0..D).rev() {
            let c = ((q[a].to_f64() - lo[a]) * scale[a]) as usize;
            key = key * per_axis + c.min(per_axis - 1);
        }
        key
    };
    let cells = per_axis.pow(D as u32);
    let mut start = vec![0u32; cells + 1];
    let keys: Vec<u32> = queries.iter().map(|q| cell(q) as u32).collect();
    for &c in &keys {
        start[c as usize + 1] += 1;
    }
    for c in 0..cells {
        start[c + 1] += start[c];
    }
    let mut order = vec![0u32; n];
    for (i, &c) in keys.iter().enumerate() {
        let slot = &mut start[c as usize];
        order[*slot as usize] = i as u32;
        *slot += 1;
    }
    Some(order)
}

/// The output rows, written in any order by any thread: row `q` is entries `q*k .. (q+1)*k`
/// (index as i64 bits, d² as f64 bits). Each row is written whole by exactly one query, so the
/// result does not depend on the order or on rayon's splitting.
pub(crate) struct RowSink<'a> {
    k: usize,
    /// Query answered by the point at each storage position (None: position = query).
    order: Option<&'a [u32]>,
    idx: &'a [AtomicU64],
    d2: &'a [AtomicU64],
    watch: &'a Watch<'a>,
    /// Rows answered so far (counted in steps of [`PROGRESS_ROWS`], for progress only).
    done: AtomicUsize,
    rows: usize,
}

impl RowSink<'_> {
    /// Whether the run was cancelled: the searches skip what they have not started (the caller
    /// checks the token and returns no rows).
    #[inline]
    pub(crate) fn stopped(&self) -> bool {
        self.watch.cancel.is_cancelled()
    }

    /// Count `rows` more rows answered, for the progress report.
    pub(crate) fn tick(&self, rows: usize) {
        if let Some(f) = self.watch.progress {
            let d = self.done.fetch_add(rows, Relaxed) + rows;
            f((d as f64 / self.rows.max(1) as f64).min(1.0));
        }
    }

    /// Write the row of the query at storage position `r`: the keys `(d[j], ix[j])`, ascending,
    /// at most k of them, then padding.
    #[inline]
    pub(crate) fn put<T: Coord>(&self, r: usize, d: &[T], ix: &[u32]) {
        let q = self.order.map_or(r, |o| o[r] as usize);
        let row = q * self.k..(q + 1) * self.k;
        let (oi, od) = (&self.idx[row.clone()], &self.d2[row]);
        let m = d.len().min(ix.len());
        for j in 0..self.k {
            let (i, v) = if j < m {
                (i64::from(ix[j]), d[j].to_f64())
            } else {
                (-1, f64::NAN)
            };
            oi[j].store(i as u64, Relaxed);
            od[j].store(v.to_bits(), Relaxed);
        }
    }
}

pub(crate) fn run<T: Coord, const D: usize, S: Search<T, D>>(
    index: &S,
    queries: &[[T; D]],
    stored: bool,
    exclude_self: bool,
    k: usize,
    r2: T,
    watch: &Watch<'_>,
) -> Result<Neighbors, crate::GeofieldError> {
    let n = queries.len();
    // Zero-filled allocations are lazy, and the conversions below are in place: the pages are
    // first touched, in parallel, by the writers.
    let idx: Vec<AtomicU64> = vec![0u64; n * k].into_iter().map(AtomicU64::new).collect();
    let d2: Vec<AtomicU64> = vec![0u64; n * k].into_iter().map(AtomicU64::new).collect();
    // Separate queries are answered in a spatial order (see `spatial_order`), so that
    // consecutive queries search the same cells; the rows still come out in input order.
    let query_order = if stored { None } else { spatial_order(queries) };
    let order = match index.storage_order() {
        Some(o) if stored && o.len() == n => Some(o),
        _ => query_order.as_deref(),
    };
    let sink = RowSink {
        k,
        order,
        idx: &idx,
        d2: &d2,
        watch,
        done: AtomicUsize::new(0),
        rows: n,
    };
    // Storage order (when the queries are the stored points) keeps neighbouring queries on the
    // same cells.
    if !stored || order.is_none() || !index.search_stored(k, exclude_self, r2, &sink) {
        (0..n).into_par_iter().with_min_len(MIN_TASK).for_each(|r| {
            // One relaxed load per query: no measurable cost, and a cancel stops every thread
            // within one query.
            if sink.stopped() {
                return;
            }
            if r % PROGRESS_ROWS == PROGRESS_ROWS - 1 {
                sink.tick(PROGRESS_ROWS);
            }
            let qi = order.map_or(r, |o| o[r] as usize);
            let mut best = KBest::new(k);
            let skip = exclude_self.then_some(qi as u32);
            index.search(&queries[qi], skip, r2, &mut best);
            let (d, ix) = best.keys();
            sink.put(r, d, ix);
        });
    }
    watch.cancel.check()?;
    if let Some(f) = watch.progress {
        f(1.0);
    }
    let indices = idx.into_iter().map(|v| v.into_inner() as i64).collect();
    let dist2 = d2
        .into_iter()
        .map(|v| f64::from_bits(v.into_inner()))
        .collect();
    Ok(Neighbors { k, indices, dist2 })
}
