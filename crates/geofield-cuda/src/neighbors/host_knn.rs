//! k-NN of host data through a [`DeviceGrid`]: upload, build, search, download, with the kernel
//! times (the library's path and the benchmark's).

use super::{DeviceGrid, DeviceIndex, GpuCoord, KnnTimes, check_coords, check_k_r2};
use crate::context::Gpu;
use crate::error::{CudaError, invalid};

/// k-NN of host data on a device-built grid: upload, build, search, download. Same contract as
/// [`super::knn_brute`]; also returns the kernel times of the build and the search.
#[allow(clippy::too_many_arguments)]
pub fn knn_device<T: GpuCoord>(
    gpu: &Gpu,
    points: &[T],
    queries: Option<&[T]>,
    dim: usize,
    k: usize,
    r2: Option<T>,
    exclude_self: bool,
    index: DeviceIndex,
) -> Result<(super::KnnRows<T>, KnnTimes), CudaError> {
    const K: &str = "neighbors (device grid)";
    let n = check_coords("point", points, dim, K)?;
    let nq = match queries {
        Some(q) => check_coords("query", q, dim, K)?,
        None => n,
    };
    check_k_r2(k, r2, K)?;
    let out_len = nq
        .checked_mul(k)
        .ok_or_else(|| invalid(K, "queries × k overflows"))?;
    let _held = gpu.hold();
    let dp = gpu.upload(points, "the points")?;
    let dq = match queries {
        Some(q) => Some(gpu.upload(q, "the queries")?),
        None => None,
    };
    let mut grid = DeviceGrid::<T>::new(gpu, n, dim, index)?;
    let mut oi = gpu.zeros::<i64>(out_len, "the neighbour indices")?;
    let mut od = gpu.zeros::<T>(out_len, "the neighbour distances")?;
    let t0 = gpu.mark()?;
    grid.build(gpu, &dp)?;
    let t1 = gpu.mark()?;
    grid.knn(
        gpu,
        dq.as_ref().map(|q| (q, nq)),
        k,
        r2,
        exclude_self,
        &mut oi,
        &mut od,
    )?;
    let query_ms = gpu.elapsed_ms(&t1)?;
    let build_ms = t0.elapsed_ms(&t1).map_err(|source| CudaError::Driver {
        action: "timing the grid build".into(),
        source,
    })?;
    let idx = gpu.download(&oi, out_len, "the neighbour indices")?;
    let d2 = gpu.download(&od, out_len, "the neighbour distances")?;
    Ok((
        (idx, d2, build_ms + query_ms),
        KnnTimes { build_ms, query_ms },
    ))
}

/// Build + search times of `repeats` device-resident runs (points uploaded once, buffers reused,
/// `warmup` runs first), for `geofield bench knn`: the self-query k-NN (self excluded) of
/// `points`. Also returns the last run's rows for checking.
pub fn bench_device<T: GpuCoord>(
    gpu: &Gpu,
    points: &[T],
    dim: usize,
    k: usize,
    index: DeviceIndex,
    warmup: usize,
    repeats: usize,
) -> Result<(Vec<KnnTimes>, super::KnnRows<T>), CudaError> {
    const K: &str = "neighbors (device bench)";
    let n = check_coords("point", points, dim, K)?;
    check_k_r2::<T>(k, None, K)?;
    let out_len = n * k;
    let _held = gpu.hold();
    let dp = gpu.upload(points, "the points")?;
    let mut grid = DeviceGrid::<T>::new(gpu, n, dim, index)?;
    let mut oi = gpu.zeros::<i64>(out_len, "the neighbour indices")?;
    let mut od = gpu.zeros::<T>(out_len, "the neighbour distances")?;
    let mut times = Vec::with_capacity(repeats);
    for it in 0..warmup + repeats {
        let t0 = gpu.mark()?;
        grid.build(gpu, &dp)?;
        let t1 = gpu.mark()?;
        grid.knn(gpu, None, k, None, true, &mut oi, &mut od)?;
        let query_ms = gpu.elapsed_ms(&t1)?;
        let build_ms = t0.elapsed_ms(&t1).map_err(|source| CudaError::Driver {
            action: "timing the grid build".into(),
            source,
        })?;
        if it >= warmup {
            times.push(KnnTimes { build_ms, query_ms });
        }
    }
    let idx = gpu.download(&oi, out_len, "the neighbour indices")?;
    let d2 = gpu.download(&od, out_len, "the neighbour distances")?;
    Ok((times, (idx, d2, 0.0)))
}
