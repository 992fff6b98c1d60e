//! The CPU path of [`super::knn`]: the points converted once, the index built (or chosen by
//! [`IndexKind::Auto`]), every query answered on rayon's threads.

use rayon::prelude::*;

use super::answer::{Watch, run};
use super::auto::resolve_auto;
use super::{Coord, IndexKind, KnnQuery, Neighbors, brute, check_inputs, dynamic, uniform};
use crate::{Cancel, GeofieldError};

/// [`knn`] on the CPU, for the crate's own callers (kriging's and the wind field's neighbour
/// searches).
pub(crate) fn knn_cpu<T: Coord>(
    points: &[T],
    queries: Option<&[T]>,
    dim: usize,
    q: &KnnQuery,
    index: IndexKind,
) -> Result<Neighbors, GeofieldError> {
    let cancel = Cancel::new();
    let watch = Watch {
        cancel: &cancel,
        progress: None,
    };
    knn_cpu_watched(points, queries, dim, q, index, &watch)
}

pub(super) fn knn_cpu_watched<T: Coord>(
    points: &[T],
    queries: Option<&[T]>,
    dim: usize,
    q: &KnnQuery,
    index: IndexKind,
    watch: &Watch<'_>,
) -> Result<Neighbors, GeofieldError> {
    check_inputs(points, queries, dim, q, index)?;
    if dim == 2 {
        knn_d::<T, 2>(points, queries, q, index, watch)
    } else {
        knn_d::<T, 3>(points, queries, q, index, watch)
    }
}

fn knn_d<T: Coord, const D: usize>(
    points: &[T],
    queries: Option<&[T]>,
    q: &KnnQuery,
    index: IndexKind,
    watch: &Watch<'_>,
) -> Result<Neighbors, GeofieldError> {
    let pts = to_points::<T, D>(points, "point")?;
    let qs = match queries {
        Some(qs) => Some(to_points::<T, D>(qs, "query")?),
        None => None,
    };
    // The queries are the points themselves (then `exclude_self` applies).
    let stored = qs.is_none();
    let ex = stored && q.exclude_self;
    let qref: &[[T; D]] = qs.as_deref().unwrap_or(&pts);
    let r2 = match q.radius {
        Some(r) => T::from_f64(r * r),
        None => T::INFINITY,
    };
    let index = match index {
        IndexKind::Auto => resolve_auto(&pts),
        other => other,
    };
    match index {
        IndexKind::Uniform { cell_size } => {
            let g = if stored {
                uniform::UniformGrid::build_for_batch(&pts, cell_size, q.k)?
            } else {
                uniform::UniformGrid::build(&pts, cell_size)?
            };
            run(&g, qref, stored, ex, q.k, r2, watch)
        }
        IndexKind::Dynamic { max_per_leaf } => {
            let g = dynamic::DynamicGrid::build(&pts, max_per_leaf);
            run(&g, qref, stored, ex, q.k, r2, watch)
        }
        IndexKind::Brute | IndexKind::Auto => {
            let b = brute::Brute::new(&pts);
            run(&b, qref, stored, ex, q.k, r2, watch)
        }
    }
}

pub(super) fn to_points<T: Coord, const D: usize>(
    flat: &[T],
    what: &str,
) -> Result<Vec<[T; D]>, GeofieldError> {
    super::check_finite(flat, D, what)?;
    Ok(flat
        .par_chunks_exact(D)
        .map(|c| std::array::from_fn(|a| c[a]))
        .collect())
}
