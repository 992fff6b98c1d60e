//! [`Gpu`]'s transfers: plain and staged (pinned, chunked, overlapped) uploads and downloads,
//! device buffers, event timing, and the stream-ordered allocator's pool kept between calls.

use std::sync::MutexGuard;

use cudarc::driver::sys as drv;
use cudarc::driver::{
    CudaContext, CudaEvent, CudaSlice, DevicePtr, DevicePtrMut, DeviceRepr, PinnedHostSlice,
    ValidAsZeroBits,
};
use rayon::prelude::*;

use super::{Gpu, lock};
use crate::error::{CudaError, DriverResultExt};

/// Bytes of each half of a [`Gpu`]'s pinned staging buffer.
pub(super) const STAGE_SLOT: usize = 8 << 20;
/// Freed device memory the stream-ordered allocator keeps for reuse instead of returning it to
/// the driver at each synchronisation (its default is none: every call's buffers would be mapped
/// afresh).
const POOL_KEEP_BYTES: u64 = 2 << 30;
/// Downloads from this size up fault their output pages in on every core first.
const PREFAULT_BYTES: usize = 8 << 20;
/// Buffers [`Gpu::recycle_host`] keeps, and their most bytes in all.
const HOST_POOL_BUFFERS: usize = 8;
const HOST_POOL_BYTES: usize = 2 << 30;
/// Elements per task when the host copies or converts in parallel.
const PAR_CHUNK: usize = 1 << 15;

impl Gpu {
    /// Holds the device for one upload-launch-download sequence.
    pub(crate) fn hold(&self) -> MutexGuard<'_, ()> {
        lock(&self.busy)
    }

    /// Copies `data` to the device; an empty slice becomes a one-element zero buffer, so that
    /// kernels never receive a null or zero-sized allocation.
    pub(crate) fn upload<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        data: &[T],
        what: &str,
    ) -> Result<CudaSlice<T>, CudaError> {
        let r = if data.is_empty() {
            self.stream.alloc_zeros::<T>(1)
        } else {
            self.stream.clone_htod(data)
        };
        r.doing(&format!("copying {what} to the device"))
    }

    /// Copies `data` to the device through the pinned staging buffer, in chunks: the host copies
    /// one chunk (in parallel) while the previous one is in flight. Returns when the copy is
    /// done. An empty slice becomes a one-element zero buffer, as [`Gpu::upload`].
    pub(crate) fn upload_staged<T: DeviceRepr + ValidAsZeroBits + Copy + Send + Sync>(
        &self,
        data: &[T],
        what: &str,
    ) -> Result<CudaSlice<T>, CudaError> {
        if data.is_empty() || std::mem::size_of::<T>() == 0 {
            return self.upload(data, what);
        }
        let doing = format!("copying {what} to the device");
        let size = std::mem::size_of::<T>();
        let per = STAGE_SLOT / size;
        let mut stage = self.staging()?;
        let base = staging_base(&mut stage)?;
        // SAFETY: an allocation of data.len() elements; every element is written by the copies
        // below before any kernel reads it (stream order).
        let mut dst = unsafe { self.stream.alloc::<T>(data.len()) }.doing(&doing)?;
        let mut pending: [Option<CudaEvent>; 2] = [None, None];
        {
            let (dptr, _written) = dst.device_ptr_mut(&self.stream);
            for (c, chunk) in data.chunks(per).enumerate() {
                let slot = c % 2;
                if let Some(e) = pending[slot].take() {
                    e.synchronize().doing(&doing)?;
                }
                // SAFETY: half `slot` of the staging buffer (2 · STAGE_SLOT bytes, page-aligned;
                // STAGE_SLOT is a multiple of every alignment) holds `per` ≥ chunk.len()
                // elements of T; the copy that last read it has completed (its event above), and
                // nothing else uses the buffer while `stage` is locked.
                let host: &mut [T] = unsafe {
                    std::slice::from_raw_parts_mut(
                        base.cast::<u8>().add(slot * STAGE_SLOT).cast::<T>(),
                        chunk.len(),
                    )
                };
                host.par_chunks_mut(PAR_CHUNK)
                    .zip(chunk.par_chunks(PAR_CHUNK))
                    .for_each(|(h, d)| h.copy_from_slice(d));
                let at = dptr + (c * per * size) as u64;
                // SAFETY: `at` .. + chunk bytes lies inside `dst` (c·per + chunk.len() ≤
                // data.len() elements); the host slice stays untouched until the event recorded
                // next has completed.
                unsafe {
                    cudarc::driver::result::memcpy_htod_async(at, host, self.stream.cu_stream())
                }
                .doing(&doing)?;
                pending[slot] = Some(self.mark()?);
            }
        }
        for e in pending.into_iter().flatten() {
            e.synchronize().doing(&doing)?;
        }
        Ok(dst)
    }

    /// A device buffer of `len` (at least 1) elements left unset, for outputs a kernel writes
    /// in full before anything reads them (no memset).
    ///
    /// # Safety
    /// Every element read later (by a kernel or a download) must have been written first.
    pub(crate) unsafe fn alloc_unset<T: DeviceRepr>(
        &self,
        len: usize,
        what: &str,
    ) -> Result<CudaSlice<T>, CudaError> {
        // SAFETY: the caller's contract.
        unsafe { self.stream.alloc::<T>(len.max(1)) }
            .doing(&format!("allocating {what} ({len} elements)"))
    }

    /// Copies the first `len` elements of `a` and of `b` back through the pinned staging buffer
    /// in chunks, calling `sink(first, a_chunk, b_chunk)` for each chunk (in order, on this
    /// thread) while the next one is in flight: a caller converting into its own layout overlaps
    /// the conversion with the transfer. Returns the milliseconds spent inside `sink`.
    pub(crate) fn download_pair_with<A: DeviceRepr + Copy, B: DeviceRepr + Copy>(
        &self,
        a: &CudaSlice<A>,
        b: &CudaSlice<B>,
        len: usize,
        what: &str,
        mut sink: impl FnMut(usize, &[A], &[B]),
    ) -> Result<f64, CudaError> {
        let doing = format!("copying {what} back from the device");
        if len == 0 {
            return Ok(0.0);
        }
        if len > a.len() || len > b.len() {
            return Err(crate::error::invalid(
                "download",
                format!(
                    "{len} elements asked of buffers of {} and {}",
                    a.len(),
                    b.len()
                ),
            ));
        }
        let (sa, sb) = (std::mem::size_of::<A>(), std::mem::size_of::<B>());
        // Elements per chunk: a multiple of 64, so B's part starts 8-byte aligned.
        let per = (STAGE_SLOT / (sa + sb).max(1)) / 64 * 64;
        let chunks = len.div_ceil(per);
        let mut stage = self.staging()?;
        let base = staging_base(&mut stage)?;
        let (pa, _read_a) = a.device_ptr(&self.stream);
        let (pb, _read_b) = b.device_ptr(&self.stream);
        let host_of = |c: usize| {
            let m = per.min(len - c * per);
            // SAFETY: half c % 2 of the staging buffer (STAGE_SLOT bytes) holds per·sa bytes of
            // A then per·sb bytes of B, both aligned (page-aligned base, per a multiple of 64).
            unsafe {
                let slot = base.cast::<u8>().add((c % 2) * STAGE_SLOT);
                (slot.cast::<A>(), slot.add(per * sa).cast::<B>(), m)
            }
        };
        let enqueue = |c: usize| -> Result<CudaEvent, CudaError> {
            let (ha, hb, m) = host_of(c);
            let off = c * per;
            // SAFETY: the device ranges lie inside `a` and `b` (off + m ≤ len ≤ their lengths);
            // the host halves are not read until the event recorded here has completed, and the
            // previous chunk in the same half has been consumed by `sink` (chunks are enqueued
            // two ahead, after the sink of the chunk two behind returned).
            unsafe {
                let da = std::slice::from_raw_parts_mut(ha, m);
                cudarc::driver::result::memcpy_dtoh_async(
                    da,
                    pa + (off * sa) as u64,
                    self.stream.cu_stream(),
                )
                .doing(&doing)?;
                let db = std::slice::from_raw_parts_mut(hb, m);
                cudarc::driver::result::memcpy_dtoh_async(
                    db,
                    pb + (off * sb) as u64,
                    self.stream.cu_stream(),
                )
                .doing(&doing)?;
            }
            self.mark()
        };
        let mut events: [Option<CudaEvent>; 2] = [None, None];
        for c in 0..chunks.min(2) {
            events[c % 2] = Some(enqueue(c)?);
        }
        let mut sink_s = 0.0;
        for c in 0..chunks {
            if let Some(e) = events[c % 2].take() {
                e.synchronize()
                    .doing("waiting for the rows (a kernel fault shows up here)")?;
            }
            let (ha, hb, m) = host_of(c);
            let t = std::time::Instant::now();
            // SAFETY: the chunk's copies have completed (its event); m elements of each were
            // written there.
            let (ca, cb) = unsafe {
                (
                    std::slice::from_raw_parts(ha.cast_const(), m),
                    std::slice::from_raw_parts(hb.cast_const(), m),
                )
            };
            sink(c * per, ca, cb);
            sink_s += t.elapsed().as_secs_f64();
            if c + 2 < chunks {
                events[c % 2] = Some(enqueue(c + 2)?);
            }
        }
        Ok(sink_s * 1e3)
    }

    /// The staging buffer, allocated on first use.
    fn staging(&self) -> Result<MutexGuard<'_, Option<PinnedHostSlice<u64>>>, CudaError> {
        let mut g = lock(&self.staging);
        if g.is_none() {
            // SAFETY: the memory is left unset; it is only read back after a copy into it.
            // Flags 0: cached (not write-combined) memory, which the host reads at full speed.
            let p = unsafe {
                self.ctx
                    .alloc_pinned_with_flags::<u64>(2 * STAGE_SLOT / 8, 0)
            }
            .doing("allocating the pinned staging buffer")?;
            *g = Some(p);
        }
        Ok(g)
    }

    /// A zeroed device buffer of `len` (at least 1) elements.
    pub(crate) fn zeros<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        len: usize,
        what: &str,
    ) -> Result<CudaSlice<T>, CudaError> {
        self.stream
            .alloc_zeros::<T>(len.max(1))
            .doing(&format!("allocating {what} ({len} elements)"))
    }

    /// Copies a device buffer back, truncated to `len` elements.
    pub(crate) fn download<T: DeviceRepr + Default + Copy + Send + Sync + 'static>(
        &self,
        buf: &CudaSlice<T>,
        len: usize,
        what: &str,
    ) -> Result<Vec<T>, CudaError> {
        let doing = format!("copying {what} back from the device");
        let len = len.min(buf.len());
        if len * std::mem::size_of::<T>() < PREFAULT_BYTES {
            let mut v = self.stream.clone_dtoh(buf).doing(&doing)?;
            v.truncate(len);
            return Ok(v);
        }
        // A buffer given back (its pages mapped), else fresh output pages first touched on
        // every core (a page fault each); inside the driver's copy they would be taken one by
        // one on this thread (0.4 GB: ~0.1-0.2 s).
        let mut v: Vec<T> = match self.pooled::<T>(len) {
            Some(mut v) => {
                v.truncate(len);
                v
            }
            None => (0..len).into_par_iter().map(|_| T::default()).collect(),
        };
        self.stream
            .memcpy_dtoh(&buf.slice(0..len), v.as_mut_slice())
            .doing(&doing)?;
        self.stream.synchronize().doing(&doing)?;
        Ok(v)
    }

    /// Give a host buffer back for later downloads of up to `v.len()` elements of `T` (a caller
    /// done with a downloaded map): its pages stay mapped, so the next download into it takes
    /// no page faults. Buffers below the pooled size are dropped; the pool keeps a few, up to
    /// 2 GiB in all.
    pub fn recycle_host<T: Send + 'static>(&self, v: Vec<T>) {
        let bytes = v.len() * std::mem::size_of::<T>();
        if bytes < PREFAULT_BYTES {
            return;
        }
        let mut pool = super::lock(&self.host_pool);
        let held: usize = pool.iter().map(|(b, _)| b).sum();
        if pool.len() < HOST_POOL_BUFFERS && held + bytes <= HOST_POOL_BYTES {
            pool.push((bytes, Box::new(v)));
        }
    }

    /// A pooled buffer of at least `len` elements of `T`, if one was given back.
    fn pooled<T: Send + 'static>(&self, len: usize) -> Option<Vec<T>> {
        let mut pool = super::lock(&self.host_pool);
        let at = pool
            .iter()
            .position(|(_, b)| b.downcast_ref::<Vec<T>>().is_some_and(|v| v.len() >= len))?;
        pool.swap_remove(at).1.downcast::<Vec<T>>().ok().map(|b| *b)
    }

    /// Records a timing event on the stream.
    pub(crate) fn mark(&self) -> Result<CudaEvent, CudaError> {
        self.stream
            .record_event(Some(drv::CUevent_flags::CU_EVENT_DEFAULT))
            .doing("recording a timing event")
    }

    /// Milliseconds between `start` and a new event recorded now (waits for the stream).
    pub(crate) fn elapsed_ms(&self, start: &CudaEvent) -> Result<f32, CudaError> {
        let end = self.mark()?;
        start
            .elapsed_ms(&end)
            .doing("waiting for the kernels (a kernel fault shows up here)")
    }
}

/// The staging buffer's base address (allocated by [`Gpu::staging`]).
fn staging_base(stage: &mut Option<PinnedHostSlice<u64>>) -> Result<*mut u64, CudaError> {
    match stage.as_mut() {
        Some(p) => p
            .as_mut_ptr()
            .doing("waiting for the pinned staging buffer"),
        None => Err(crate::error::invalid(
            "staging",
            "the pinned staging buffer is missing",
        )),
    }
}

/// Lets the device's default memory pool keep up to [`POOL_KEEP_BYTES`] of freed memory
/// instead of releasing it at every synchronisation. Best effort: a failure leaves the default.
pub(super) fn keep_pool_memory(ctx: &CudaContext) {
    let mut pool: drv::CUmemoryPool = std::ptr::null_mut();
    let mut keep: u64 = POOL_KEEP_BYTES;
    // SAFETY: plain driver calls on this context's device with valid out/in pointers; the
    // attribute takes a cuuint64_t.
    unsafe {
        if ctx.bind_to_thread().is_ok()
            && drv::cuDeviceGetDefaultMemPool(&mut pool, ctx.cu_device())
                .result()
                .is_ok()
        {
            let _ = drv::cuMemPoolSetAttribute(
                pool,
                drv::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                (&mut keep as *mut u64).cast(),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::test_gpu;

    #[test]
    fn staged_uploads_and_downloads_return_every_element_in_order() {
        let Some(gpu) = test_gpu() else { return };
        // Sizes around the staging buffer's chunks (8 MiB halves) and the download's prefault
        // threshold (8 MiB): below them, exactly one chunk, a chunk and one element, several
        // chunks and a tail.
        let slot = super::STAGE_SLOT / 4;
        for len in [1000, slot, slot + 1, 5 * slot + 12_345] {
            let data: Vec<u32> = (0..len as u32)
                .map(|i| i.wrapping_mul(2_654_435_761))
                .collect();
            let d = gpu.upload_staged(&data, "test data").unwrap();
            assert_eq!(
                gpu.download(&d, len, "test data").unwrap(),
                data,
                "len {len}"
            );
            // Truncated: the first len - 7 elements.
            let back = gpu.download(&d, len - 7, "test data").unwrap();
            assert_eq!(back, data[..len - 7], "len {len} - 7");
            // Into a buffer given back (holding other values, longer): the same elements.
            gpu.recycle_host(vec![7u32; len + 100]);
            assert_eq!(
                gpu.download(&d, len, "test data").unwrap(),
                data,
                "len {len}, reused"
            );
        }
    }
}
