//! Benchmark and test hooks of [`crate::neighbors`]: the CPU indexes behind
//! [`crate::neighbors::knn`], to time their builds one by one, and the GPU call from host arrays
//! with the host time of each step.

use crate::GeofieldError;
use crate::neighbors::{Coord, KnnParams, cuda};
use geofield_cuda::Gpu;
pub use geofield_cuda::neighbors::HostSplit;

pub use crate::neighbors::dynamic::DynamicGrid;
pub use crate::neighbors::uniform::UniformGrid;

/// [`crate::neighbors::knn`] (`missing_index` None) or [`crate::neighbors::knn_distances`]
/// (Some) on `gpu`, the device synchronised after each step and the host time of each step
/// returned with the (indices, distances) rows (the same rows as the plain call).
pub fn knn_cuda_split<T: Coord>(
    gpu: &Gpu,
    points: &[T],
    queries: Option<&[T]>,
    dim: usize,
    params: &KnnParams,
    missing_index: Option<i64>,
) -> Result<(Vec<i64>, Vec<f64>, HostSplit), GeofieldError> {
    let mut split = HostSplit::default();
    let form = match missing_index {
        None => cuda::Form::Squared,
        Some(missing) => cuda::Form::Distance { missing },
    };
    let (i, d) = cuda::knn_rows(
        gpu,
        points,
        queries,
        dim,
        &params.query(),
        params.index,
        form,
        Some(&mut split),
    )?;
    Ok((i, d, split))
}
