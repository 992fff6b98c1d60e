//! The radius queries on CUDA: the host's cell list (the CPU's own) handed to
//! `geofield_cuda::neighbors::ball`, whose kernels visit the same cells in the same order with
//! the same arithmetic, so rows, counts and fixed-point sums equal the CPU's bit for bit.

use std::sync::Arc;

use geofield_cuda::Gpu;
use geofield_cuda::neighbors::ball::{Cells, Reach};

use super::cells::CellList;
use super::{Ball, Metric, Order, sort_row};
use crate::GeofieldError;
use rayon::prelude::*;

/// The cell list's arrays, flattened for the device.
pub(crate) struct Flat {
    pts: Vec<f64>,
    dim: usize,
    period: [f64; 3],
    origin: [f64; 3],
    width: [f64; 3],
    dims: [u32; 3],
}

impl Flat {
    pub(crate) fn of<const D: usize>(list: &CellList<D>) -> Result<Self, GeofieldError> {
        let mut f = Flat {
            pts: list.pts.iter().flatten().copied().collect(),
            dim: D,
            period: [0.0; 3],
            origin: [0.0; 3],
            width: [1.0; 3],
            dims: [1; 3],
        };
        for a in 0..D {
            f.period[a] = list.period[a];
            f.origin[a] = list.origin[a];
            f.width[a] = list.width[a];
            f.dims[a] = u32::try_from(list.dims[a])
                .map_err(|_| GeofieldError::Unsupported("too many cells for the GPU".into()))?;
        }
        Ok(f)
    }

    pub(crate) fn cells<'a, const D: usize>(&'a self, list: &'a CellList<D>) -> Cells<'a> {
        Cells {
            dim: self.dim,
            period: self.period,
            origin: self.origin,
            width: self.width,
            dims: self.dims,
            pts: &self.pts,
            ids: &list.ids,
            starts: &list.starts,
        }
    }
}

pub(crate) fn metric_code(m: Metric) -> u32 {
    match m {
        Metric::Euclidean => 0,
        Metric::Manhattan => 1,
        Metric::Chebyshev => 2,
    }
}

/// [`super::rows`] on the device: the same rows, then each sorted on the host by `order`.
pub(crate) fn rows<const D: usize>(
    gpu: &Arc<Gpu>,
    list: &CellList<D>,
    queries: &[[f64; D]],
    metric: Metric,
    r: f64,
    order: Order,
    keep: geofield_cuda::neighbors::ball::Keep,
) -> Result<Ball, GeofieldError> {
    let flat = Flat::of(list)?;
    let q: Vec<f64> = queries.iter().flatten().copied().collect();
    let reach = Reach {
        metric: metric_code(metric),
        r,
        thr: metric.threshold(r),
    };
    let (offsets, mut indices, mut dist) =
        geofield_cuda::neighbors::ball::ball_rows(gpu, &flat.cells(list), &q, reach, keep)?;
    if order != Order::Unsorted {
        let mut parts: Vec<(&mut [u32], &mut [f64])> = Vec::with_capacity(queries.len());
        let (mut ri, mut rd) = (&mut indices[..], &mut dist[..]);
        for w in offsets.windows(2) {
            let c = (w[1] - w[0]) as usize;
            let (a, b) = std::mem::take(&mut ri).split_at_mut(c);
            let (x, y) = std::mem::take(&mut rd).split_at_mut(c);
            parts.push((a, x));
            ri = b;
            rd = y;
        }
        parts
            .par_iter_mut()
            .for_each(|(i, d)| sort_row(i, d, order));
    }
    Ok(Ball {
        offsets,
        indices,
        dist,
    })
}

/// [`super::count_rows`] on the device.
pub(crate) fn counts<const D: usize>(
    gpu: &Arc<Gpu>,
    list: &CellList<D>,
    queries: &[[f64; D]],
    metric: Metric,
    r: f64,
    keep: geofield_cuda::neighbors::ball::Keep,
) -> Result<Vec<u64>, GeofieldError> {
    let flat = Flat::of(list)?;
    let q: Vec<f64> = queries.iter().flatten().copied().collect();
    let reach = Reach {
        metric: metric_code(metric),
        r,
        thr: metric.threshold(r),
    };
    let c = geofield_cuda::neighbors::ball::ball_counts(gpu, &flat.cells(list), &q, reach, keep)?;
    Ok(c.into_iter().map(u64::from).collect())
}

/// [`super::knn_in`]'s rounds on the device: every query starts at `r0`; each round counts the
/// candidates of the queries still open at their own radius, and [`super::knn::Rounds`] (the
/// CPU's rule) answers or doubles each. Then the k best of each query at its final radius:
/// kept on the device for k ≤ 64, else every candidate selected on the host as the CPU does.
/// Rows are written into `ri` / `rd` (k per query, pre-filled as missing).
#[allow(clippy::too_many_arguments)]
pub(crate) fn knn<const D: usize>(
    gpu: &Arc<Gpu>,
    list: &CellList<D>,
    queries: &[[f64; D]],
    metric: Metric,
    r0: f64,
    rounds: &super::knn::Rounds,
    keep: geofield_cuda::neighbors::ball::Keep,
    ri: &mut [i64],
    rd: &mut [f64],
) -> Result<(), GeofieldError> {
    use geofield_cuda::neighbors::ball_knn::{BEST_K_MAX, KnnSearch};
    let k = rounds.k;
    let nq = queries.len();
    let flat = Flat::of(list)?;
    let q: Vec<f64> = queries.iter().flatten().copied().collect();
    let far: Vec<f64> = queries
        .par_iter()
        .map(|q| super::knn::reach(list, q))
        .collect();
    let mut search = KnnSearch::new(gpu, &flat.cells(list), &q, metric_code(metric), keep)?;
    // The final radius of each query, and the reach of the round (r < 0: answered).
    let mut fin = vec![r0; nq];
    let mut reach: Vec<f64> = (0..nq).flat_map(|_| [r0, metric.threshold(r0)]).collect();
    let mut counts = vec![0u32; nq];
    let mut open = nq;
    while open > 0 {
        let c = search.counts(&reach)?;
        open = 0;
        for i in 0..nq {
            let r = reach[2 * i];
            if r < 0.0 {
                continue;
            }
            counts[i] = c[i];
            match rounds.next(r, far[i], c[i] as usize) {
                Some(next) => {
                    reach[2 * i] = next;
                    reach[2 * i + 1] = metric.threshold(next);
                    fin[i] = next;
                    open += 1;
                }
                None => reach[2 * i] = -1.0,
            }
        }
    }
    for i in 0..nq {
        reach[2 * i] = fin[i];
        reach[2 * i + 1] = metric.threshold(fin[i]);
    }
    if k <= BEST_K_MAX {
        let (idx, val) = search.best(&reach, k)?;
        ri.par_iter_mut()
            .zip(rd.par_iter_mut())
            .zip(idx.par_iter().zip(val.par_iter()))
            .for_each(|((i, d), (&j, &v))| {
                if j != u32::MAX {
                    *i = i64::from(j);
                    *d = metric.distance(v);
                }
            });
        return Ok(());
    }
    let (offsets, idx, val) = search.keys(&reach, &counts)?;
    drop(search);
    ri.par_chunks_mut(k)
        .zip(rd.par_chunks_mut(k))
        .enumerate()
        .for_each_init(Vec::new, |cand: &mut Vec<(u64, u32)>, (qi, (ri, rd))| {
            let (a, b) = (offsets[qi] as usize, offsets[qi + 1] as usize);
            cand.clear();
            cand.extend(
                val[a..b]
                    .iter()
                    .zip(&idx[a..b])
                    .map(|(v, &j)| (v.to_bits(), j)),
            );
            super::knn::select_row(cand, metric, ri, rd);
        });
    Ok(())
}
