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

use super::{Coord, IndexKind, KnnQuery, Neighbors};
use crate::GeofieldError;

fn check_finite<T: Coord>(v: &[T], dim: usize, what: &str) -> Result<usize, GeofieldError> {
    if let Some(i) = v.iter().position(|x| !x.is_finite()) {
        return Err(GeofieldError::Invalid(format!(
            "{what} {} has a non-finite coordinate (axis {})",
            i / dim,
            i % dim
        )));
    }
    Ok(v.len() / dim)
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
    knn_split(gpu, points, queries, dim, q, index, None)
}

/// [`knn`], timing each step on the host clock into `split` when given (for
/// `geofield bench knn --host`).
pub(crate) fn knn_split<T: Coord>(
    gpu: &Gpu,
    points: &[T],
    queries: Option<&[T]>,
    dim: usize,
    q: &KnnQuery,
    index: IndexKind,
    mut split: Option<&mut gn::HostSplit>,
) -> Result<Neighbors, GeofieldError> {
    let t_check = std::time::Instant::now();
    super::check_inputs(points, queries, dim, q, index)?;
    let n = check_finite(points, dim, "point")?;
    if let Some(qs) = queries {
        check_finite(qs, dim, "query")?;
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
    let r2 = q.radius.map(|r| T::from_f64(r * r));
    let brute = matches!(index, IndexKind::Brute)
        || (matches!(index, IndexKind::Auto) && n <= super::AUTO_BRUTE_MAX);
    let (indices, d2, _ms) = match index {
        _ if brute => gn::knn_brute(
            gpu,
            points,
            queries.unwrap_or(points),
            dim,
            q.k,
            r2,
            q.exclude_self && queries.is_none(),
        )?,
        IndexKind::Brute
        | IndexKind::Uniform { .. }
        | IndexKind::Dynamic { .. }
        | IndexKind::Auto => {
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
            let (rows, _times) = gn::knn_device_split(
                gpu,
                points,
                queries,
                dim,
                q.k,
                r2,
                q.exclude_self,
                dev,
                split.as_deref_mut(),
            )?;
            rows
        }
    };
    let t_convert = std::time::Instant::now();
    let dist2 = indices
        .iter()
        .zip(&d2)
        .map(|(&i, &d)| if i < 0 { f64::NAN } else { d.to_f64() })
        .collect();
    if let Some(s) = split {
        s.convert_ms += t_convert.elapsed().as_secs_f64() * 1e3;
    }
    Ok(Neighbors {
        k: q.k,
        indices,
        dist2,
    })
}
