//! Benchmark and test hooks of [`crate::neighbors`]: the CPU indexes behind
//! [`crate::neighbors::knn`], to time their builds one by one, and the GPU call from host arrays
//! with the host time of each step.

use crate::GeofieldError;
use crate::neighbors::{Coord, KnnParams, Neighbors};
use geofield_cuda::Gpu;
pub use geofield_cuda::neighbors::HostSplit;

pub use crate::neighbors::dynamic::DynamicGrid;
pub use crate::neighbors::uniform::UniformGrid;

/// [`crate::neighbors::knn`] on `gpu`, the device synchronised after each step and the host
/// time of each step returned (the same rows as the plain call).
pub fn knn_cuda_split<T: Coord>(
    gpu: &Gpu,
    points: &[T],
    queries: Option<&[T]>,
    dim: usize,
    params: &KnnParams,
) -> Result<(Neighbors, HostSplit), GeofieldError> {
    let mut split = HostSplit::default();
    let nb = crate::neighbors::cuda::knn_split(
        gpu,
        points,
        queries,
        dim,
        &params.query(),
        params.index,
        Some(&mut split),
    )?;
    Ok((nb, split))
}
