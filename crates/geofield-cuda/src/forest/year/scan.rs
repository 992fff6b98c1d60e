//! The scans of the device stand: prefix sums over the cells and the trees in chunks.

use super::*;

impl DeviceStand<'_> {
    /// The exclusive prefix sums of the first `n` values of `v` into `out` (may not alias: the
    /// caller passes distinct buffers), and their total. Errors if a sum passes u32::MAX.
    pub(super) fn scan(
        gpu: &Gpu,
        v: &CudaSlice<u32>,
        n: usize,
        out: &mut CudaSlice<u32>,
    ) -> Result<u64, CudaError> {
        if n == 0 {
            return Ok(0);
        }
        let host = Self::block_sums(gpu, v, n)?;
        let mut off = Vec::with_capacity(host.len());
        let mut run = 0u64;
        for h in host {
            off.push(run);
            run += h;
        }
        if run > u64::from(u32::MAX) {
            return Err(invalid(
                "forest_block_scan",
                format!("a prefix sum reaches {run}, beyond 32 bits"),
            ));
        }
        let doff = gpu.upload(&off, "block offsets")?;
        let nn = n as u64;
        let f = gpu.function(MODULE, "forest_block_scan")?;
        let mut b = gpu.stream().launch_builder(&f);
        b.arg(v).arg(&nn).arg(&doff).arg(out);
        // SAFETY: forest_block_scan(const u32* v, u64 n, const u64* block_off, u32* out); v and
        // out hold ≥ n values, block_off one per block of CHUNK values.
        unsafe { b.launch(Self::chunk_cfg(n)) }.map_err(launch_err("forest_block_scan"))?;
        Ok(run)
    }

    /// One block per CHUNK values.
    pub(super) fn chunk_cfg(n: usize) -> LaunchConfig {
        LaunchConfig {
            grid_dim: (n.div_ceil(CHUNK).max(1) as u32, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    /// The u64 sums of the first `n` values of `v` by blocks of CHUNK, on the host.
    pub(super) fn block_sums(
        gpu: &Gpu,
        v: &CudaSlice<u32>,
        n: usize,
    ) -> Result<Vec<u64>, CudaError> {
        let mut sums = gpu.zeros::<u64>(n.div_ceil(CHUNK), "block sums")?;
        let nn = n as u64;
        let f = gpu.function(MODULE, "forest_block_sums")?;
        let mut b = gpu.stream().launch_builder(&f);
        b.arg(v).arg(&nn).arg(&mut sums);
        // SAFETY: forest_block_sums(const u32* v, u64 n, u64* sums); v holds ≥ n values, sums
        // one per block of CHUNK values (⌈n / CHUNK⌉ blocks).
        unsafe { b.launch(Self::chunk_cfg(n)) }.map_err(launch_err("forest_block_sums"))?;
        gpu.stream()
            .clone_dtoh(&sums)
            .doing("copying block sums back")
    }
}
