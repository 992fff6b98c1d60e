//! CUDA glue for [`super::knn`]: validates like the CPU path, then calls the safe wrappers in
//! `geofield_cuda::neighbors` (kernels in `crates/geofield-cuda/kernels/neighbors.cu`).
//!
//! Index mapping: [`IndexKind::Brute`] runs the brute-force kernel; [`IndexKind::Uniform`] the
//! uniform grid built on the device (a given cell size is checked on the host, as the CPU does);
//! [`IndexKind::Dynamic`] the dynamic grid built on the device (Morton-ordered cells searched as
//! an implicit tree with leaves of at most `max_per_leaf` points); [`IndexKind::Auto`] brute force
//! up to [`super::AUTO_BRUTE_MAX`] points, else the uniform grid (the fastest on the GPU for
//! every set the bench measures). Every index returns the same rows as the CPU's brute force, bit
//! for bit.

use geofield_cuda::Gpu;
use geofield_cuda::neighbors as gn;

use rayon::prelude::*;

use super::{Coord, IndexKind, KnnQuery, Neighbors};
use crate::GeofieldError;

/// How [`knn_rows`] reports each entry.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Form {
    /// [`Neighbors`]: squared distances widened to f64, missing entries index −1 and NaN.
    Squared,
    /// [`super::NeighborDistances`]: Euclidean distances (the f64 square root of the widened
    /// squared distance), missing entries index `missing` and +inf.
    Distance { missing: i64 },
}

impl Form {
    /// One entry from the device's index (u32::MAX: missing) and squared distance.
    #[inline]
    fn entry<T: Coord>(self, i: u32, d2: T) -> (i64, f64) {
        match (self, i == u32::MAX) {
            (Form::Squared, true) => (-1, f64::NAN),
            (Form::Squared, false) => (i64::from(i), d2.to_f64()),
            (Form::Distance { missing }, true) => (missing, f64::INFINITY),
            (Form::Distance { .. }, false) => (i64::from(i), d2.to_f64().sqrt()),
        }
    }
}

/// Entries per parallel task of the conversion.
const CONVERT_CHUNK: usize = 1 << 14;

/// Converts device entries into the final layout, in parallel.
fn convert<T: Coord>(form: Form, ci: &[u32], cd: &[T], oi: &mut [i64], od: &mut [f64]) {
    oi.par_chunks_mut(CONVERT_CHUNK)
        .zip(od.par_chunks_mut(CONVERT_CHUNK))
        .zip(ci.par_chunks(CONVERT_CHUNK))
        .zip(cd.par_chunks(CONVERT_CHUNK))
        .for_each(|(((oi, od), ci), cd)| {
            for (((oi, od), &i), &d) in oi.iter_mut().zip(od.iter_mut()).zip(ci).zip(cd) {
                (*oi, *od) = form.entry(i, d);
            }
        });
}

/// kNN on the GPU; same contract as the CPU's [`super::knn_cpu`].
pub(super) fn knn<T: Coord>(
    gpu: &Gpu,
    points: &[T],
    queries: Option<&[T]>,
    dim: usize,
    q: &KnnQuery,
    index: IndexKind,
) -> Result<Neighbors, GeofieldError> {
    let (indices, dist2) = knn_rows(gpu, points, queries, dim, q, index, Form::Squared, None)?;
    Ok(Neighbors {
        k: q.k,
        indices,
        dist2,
    })
}

/// kNN on the GPU, the rows in `form`: (indices, distances), row-major, `q.k` per query. The
/// outputs are allocated once in their final type and filled as the rows come back from the
/// device (the conversion overlapping the transfer). `split`: the host time of each step
/// (`geofield bench knn --host`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn knn_rows<T: Coord>(
    gpu: &Gpu,
    points: &[T],
    queries: Option<&[T]>,
    dim: usize,
    q: &KnnQuery,
    index: IndexKind,
    form: Form,
    mut split: Option<&mut gn::HostSplit>,
) -> Result<(Vec<i64>, Vec<f64>), GeofieldError> {
    let t_check = std::time::Instant::now();
    super::check_inputs(points, queries, dim, q, index)?;
    let n = super::check_finite(points, dim, "point")?;
    if let Some(qs) = queries {
        super::check_finite(qs, dim, "query")?;
    }
    if n >= u32::MAX as usize {
        return Err(GeofieldError::Unsupported(format!(
            "{n} points; fewer than {} are supported on the GPU",
            u32::MAX
        )));
    }
    if let Some(s) = split.as_deref_mut() {
        s.check_ms += t_check.elapsed().as_secs_f64() * 1e3;
    }
    let nq = queries.map_or(n, |qs| qs.len() / dim);
    let len = nq
        .checked_mul(q.k)
        .ok_or_else(|| GeofieldError::Invalid("queries × k overflows".into()))?;
    let r2 = q.radius.map(|r| T::from_f64(r * r));
    let brute = matches!(index, IndexKind::Brute)
        || (matches!(index, IndexKind::Auto) && n <= super::AUTO_BRUTE_MAX);
    if brute {
        let (idx, d2, _ms) = gn::knn_brute(
            gpu,
            points,
            queries.unwrap_or(points),
            dim,
            q.k,
            r2,
            q.exclude_self && queries.is_none(),
        )?;
        let t = std::time::Instant::now();
        let out = idx
            .par_iter()
            .zip(&d2)
            .map(|(&i, &d)| form.entry(u32::try_from(i).unwrap_or(u32::MAX), d))
            .unzip();
        if let Some(s) = split {
            s.convert_ms += t.elapsed().as_secs_f64() * 1e3;
        }
        return Ok(out);
    }
    let dev = match index {
        IndexKind::Uniform { cell_size: Some(h) } => gn::DeviceIndex::UniformCell {
            h,
            cells: gn::uniform_cells(points, dim, h)?,
        },
        IndexKind::Dynamic { max_per_leaf } => gn::DeviceIndex::Morton {
            max_leaf: u32::try_from(max_per_leaf).unwrap_or(u32::MAX),
        },
        _ => gn::DeviceIndex::Uniform,
    };
    // Zeroed allocations are fresh pages from the system (no clearing pass); each is written
    // once, by the conversion. (Asking for transparent huge pages, madvise(MADV_HUGEPAGE), was
    // measured slower on the H100 host and is not done.)
    let mut indices = vec![0i64; len];
    let mut dist = vec![0f64; len];
    gn::knn_device_rows(
        gpu,
        points,
        queries,
        dim,
        q.k,
        r2,
        q.exclude_self,
        dev,
        split,
        |first, ci, cd| {
            let end = first + ci.len();
            if let (Some(oi), Some(od)) = (indices.get_mut(first..end), dist.get_mut(first..end)) {
                convert(form, ci, cd, oi, od);
            }
        },
    )?;
    Ok((indices, dist))
}
