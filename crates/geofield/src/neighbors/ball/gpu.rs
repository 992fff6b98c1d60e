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
