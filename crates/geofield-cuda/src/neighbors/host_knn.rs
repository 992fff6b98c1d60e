//! k-NN of host data through a [`DeviceGrid`]: upload, build, search, download, with the kernel
//! times (the library's path and the benchmark's). Host data moves through the device's pinned
//! staging buffer in chunks (see [`Gpu`]), the rows come back as u32 indices and d² in the
//! coordinate type, and the caller converts each chunk into its own layout while the next one
//! is in flight.

use std::time::Instant;

use super::{DeviceGrid, DeviceIndex, GpuCoord, KnnTimes, check_coords, check_k_r2};
use crate::context::Gpu;
use crate::error::{CudaError, DriverResultExt, invalid};

/// Host wall-clock milliseconds of each step of a k-NN from host data, each step ended by a
/// device synchronisation (filled only when asked for: the extra synchronisations cost a few
/// microseconds each). `geofield bench knn --host` prints it.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct HostSplit {
    /// Argument checks (dimensions, finite coordinates).
    pub check_ms: f64,
    /// The points (and queries) to the device.
    pub upload_ms: f64,
    /// Device buffers: the grid's and the outputs'.
    pub setup_ms: f64,
    /// The grid build (kernels).
    pub build_ms: f64,
    /// The search kernel.
    pub search_ms: f64,
    /// The rows back to host memory: the time spent waiting for the transfer, the part not
    /// hidden behind the conversion.
    pub download_ms: f64,
    /// Host conversion of the rows into the caller's final layout (done chunk by chunk while
    /// the next chunk is in flight).
    pub convert_ms: f64,
}

impl HostSplit {
    /// The sum of the steps.
    pub fn total_ms(&self) -> f64 {
        self.check_ms
            + self.upload_ms
            + self.setup_ms
            + self.build_ms
            + self.search_ms
            + self.download_ms
            + self.convert_ms
    }
}

/// Laps of a [`HostSplit`]: each [`Laps::lap`] synchronises the device and adds the time since
/// the previous lap to one field. Without a split it does nothing.
pub(crate) struct Laps<'a> {
    split: Option<&'a mut HostSplit>,
    t: Instant,
}

impl<'a> Laps<'a> {
    pub(crate) fn new(split: Option<&'a mut HostSplit>) -> Self {
        Laps {
            split,
            t: Instant::now(),
        }
    }

    /// Moves `ms` from one field to another (a part of a step measured inside it).
    pub(crate) fn move_ms(
        &mut self,
        ms: f64,
        from: fn(&mut HostSplit) -> &mut f64,
        to: fn(&mut HostSplit) -> &mut f64,
    ) {
        if let Some(s) = self.split.as_deref_mut() {
            *from(s) -= ms;
            *to(s) += ms;
        }
    }

    /// Ends a step: waits for the device, then adds the elapsed time to `field`.
    pub(crate) fn lap(
        &mut self,
        gpu: &Gpu,
        field: fn(&mut HostSplit) -> &mut f64,
    ) -> Result<(), CudaError> {
        if let Some(s) = self.split.as_deref_mut() {
            gpu.stream()
                .synchronize()
                .doing("waiting for the device (timing a step)")?;
            let now = Instant::now();
            *field(s) += (now - self.t).as_secs_f64() * 1e3;
            self.t = now;
        }
        Ok(())
    }
}

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
    let nq = queries.map_or(points.len(), <[T]>::len) / dim.max(1);
    let len = nq.saturating_mul(k);
    let mut idx: Vec<i64> = Vec::new();
    let mut d2: Vec<T> = Vec::new();
    let times = knn_device_rows(
        gpu,
        points,
        queries,
        dim,
        k,
        r2,
        exclude_self,
        index,
        None,
        |first, ci, cd| {
            if first == 0 {
                idx.reserve_exact(len);
                d2.reserve_exact(len);
            }
            idx.extend(
                ci.iter()
                    .map(|&i| if i == u32::MAX { -1 } else { i64::from(i) }),
            );
            d2.extend_from_slice(cd);
        },
    )?;
    let ms = times.build_ms + times.query_ms;
    Ok(((idx, d2, ms), times))
}

/// k-NN of host data on a device-built grid, the rows handed to `sink` as they come back:
/// the points go up through the pinned staging buffer, the grid is built and searched on the
/// device (outputs unset: the kernel writes every entry; indices as u32), and the rows come back
/// in chunks, `sink(first, indices, d2)` being called (in order, on this thread) for entries
/// `first ..` of the row-major output while the next chunk is in flight. Missing neighbours
/// have index `u32::MAX` and d² NaN. `split`: the host time of each step (the device is then
/// synchronised after each). Returns the kernel times of the build and the search.
#[allow(clippy::too_many_arguments)]
pub fn knn_device_rows<T: GpuCoord>(
    gpu: &Gpu,
    points: &[T],
    queries: Option<&[T]>,
    dim: usize,
    k: usize,
    r2: Option<T>,
    exclude_self: bool,
    index: DeviceIndex,
    split: Option<&mut HostSplit>,
    sink: impl FnMut(usize, &[u32], &[T]),
) -> Result<KnnTimes, CudaError> {
    const K: &str = "neighbors (device grid)";
    let mut laps = Laps::new(split);
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
    laps.lap(gpu, |s| &mut s.check_ms)?;
    let dp = gpu.upload_staged(points, "the points")?;
    let dq = match queries {
        Some(q) => Some(gpu.upload_staged(q, "the queries")?),
        None => None,
    };
    laps.lap(gpu, |s| &mut s.upload_ms)?;
    let mut grid = DeviceGrid::<T>::new(gpu, n, dim, index)?;
    // SAFETY: the search writes all k entries of each of its nq rows (nb_write), and only the
    // first out_len = nq·k entries are read back.
    let mut oi = unsafe { gpu.alloc_unset::<u32>(out_len, "the neighbour indices")? };
    // SAFETY: as above.
    let mut od = unsafe { gpu.alloc_unset::<T>(out_len, "the neighbour distances")? };
    // Compiled (or loaded from the disk cache) here on a first run, not inside the build's lap.
    let units = grid.kernels();
    let refs: Vec<(&'static str, &str)> = units.iter().map(|(m, k)| (*m, k.as_str())).collect();
    gpu.prepare_units(&refs)?;
    laps.lap(gpu, |s| &mut s.setup_ms)?;
    let t0 = gpu.mark()?;
    grid.build(gpu, &dp)?;
    let t1 = gpu.mark()?;
    laps.lap(gpu, |s| &mut s.build_ms)?;
    grid.knn(
        gpu,
        dq.as_ref().map(|q| (q, nq)),
        k,
        r2,
        exclude_self,
        &mut oi,
        &mut od,
    )?;
    let t2 = gpu.mark()?;
    laps.lap(gpu, |s| &mut s.search_ms)?;
    let sink_ms = gpu.download_pair_with(&oi, &od, out_len, "the neighbour rows", sink)?;
    laps.lap(gpu, |s| &mut s.download_ms)?;
    laps.move_ms(sink_ms, |s| &mut s.download_ms, |s| &mut s.convert_ms);
    let event_ms = |a: &cudarc::driver::CudaEvent, b: &cudarc::driver::CudaEvent, what: &str| {
        a.elapsed_ms(b).map_err(|source| CudaError::Driver {
            action: format!("timing the {what}"),
            source,
        })
    };
    Ok(KnnTimes {
        build_ms: event_ms(&t0, &t1, "grid build")?,
        query_ms: event_ms(&t1, &t2, "search")?,
    })
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
