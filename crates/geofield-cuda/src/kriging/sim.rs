//! Unconditional Gaussian fields on a grid (`kernels/sim.cu`, module "sim"): geofield's
//! `kriging::simulate::spectral::field_grid` on the device, bit for bit.

use cudarc::driver::{DeviceRepr, LaunchConfig, PushKernelArg};

use super::NodeGrid;
use crate::context::Gpu;
use crate::error::{CudaError, invalid};

const MODULE: &str = "sim";
const K: &str = "sim_field";

/// Parameters of the `sim_*` kernels (C: `SimKernelParams`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SimKernelParams {
    pub origin: [f64; 2],
    pub col_step: [f64; 2],
    pub row_step: [f64; 2],
    pub rows: u32,
    pub cols: u32,
    pub modes: u32,
    pub reals: u32,
}

// SAFETY: #[repr(C)] plain-old-data matching the C mirror (sizes checked on both sides:
// GF_CHECK_SIZE and the test below).
unsafe impl DeviceRepr for SimKernelParams {}

/// Device bytes for a batch of `reals` realisations: the two tables (16 bytes an entry) and
/// the fields (8 bytes a node).
fn batch_bytes(rows: usize, cols: usize, m: usize, reals: usize) -> u64 {
    ((rows * m + m * cols) as u64 * 16 + (rows * cols) as u64 * 8) * reals as u64
}

/// The unconditional fields of `reals` realisations at every node of `map` (whole grid,
/// `row0` = 0), `modes` holding reals × M × (kx, ky, sa, sb): `sink(i, z)` receives realisation
/// i's field (row-major) as each batch comes back. Returns the seconds in kernels.
pub fn field_grid(
    gpu: &Gpu,
    map: &NodeGrid,
    modes: &[f64],
    reals: usize,
    sink: &mut dyn FnMut(usize, &[f64]),
) -> Result<f64, CudaError> {
    map.check(K)?;
    if map.row0 != 0 {
        return Err(invalid(K, "the node grid must be a whole grid (row0 = 0)"));
    }
    if reals == 0 || !modes.len().is_multiple_of(4 * reals) || modes.is_empty() {
        return Err(invalid(K, "the modes must be realisations x M x 4 values"));
    }
    if modes.iter().any(|v| !v.is_finite()) {
        return Err(invalid(K, "a mode is not finite"));
    }
    let m = modes.len() / (4 * reals);
    let (rows, cols) = (map.rows, map.cols);
    let nodes = rows * cols;
    if nodes == 0 {
        for i in 0..reals {
            sink(i, &[]);
        }
        return Ok(0.0);
    }
    let mu = u32::try_from(m).map_err(|_| invalid(K, "too many modes"))?;
    // As many realisations a batch as fit in a quarter of the free memory (at most 2 GiB).
    let per = batch_bytes(rows, cols, m, 1);
    let free = gpu
        .context()
        .mem_get_info()
        .map_or(1 << 30, |(f, _)| f as u64);
    let budget = (free / 4).min(2 << 30);
    let batch = usize::try_from(budget / per.max(1))
        .unwrap_or(1)
        .clamp(1, reals.min(65_535));
    let _held = gpu.hold();
    gpu.ensure_free("the simulation tables", batch_bytes(rows, cols, m, batch))?;
    let mut a = gpu.zeros::<f64>(2 * rows * m * batch, "the row tables")?;
    let mut b = gpu.zeros::<f64>(2 * m * cols * batch, "the column tables")?;
    let mut z = gpu.zeros::<f64>(nodes * batch, "the fields")?;
    let tables = gpu.function(MODULE, "sim_tables")?;
    let field = gpu.function(MODULE, K)?;
    let mut seconds = 0.0;
    let mut first = 0;
    while first < reals {
        let nb = batch.min(reals - first);
        let p = SimKernelParams {
            origin: map.origin,
            col_step: map.col_step,
            row_step: map.row_step,
            rows: rows as u32,
            cols: cols as u32,
            modes: mu,
            reals: nb as u32,
        };
        let md = gpu.upload(&modes[first * m * 4..(first + nb) * m * 4], "the modes")?;
        let start = gpu.mark()?;
        let entries = (rows * m + m * cols) * nb;
        let mut l = gpu.stream().launch_builder(&tables);
        l.arg(&p).arg(&md).arg(&mut a).arg(&mut b);
        let cfg = LaunchConfig {
            grid_dim: (
                u32::try_from(entries.div_ceil(256))
                    .unwrap_or(1 << 20)
                    .min(1 << 20),
                1,
                1,
            ),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: sim_tables(params, modes (nb·M·4), a (nb·rows·M double2), b (nb·M·cols
        // double2)): a grid-stride loop over nb·(rows·M + M·cols) entries, each written once
        // inside the buffers sized above for `batch` ≥ nb realisations.
        unsafe { l.launch(cfg) }.map_err(|source| CudaError::Driver {
            action: "launching sim_tables".into(),
            source,
        })?;
        let mut l = gpu.stream().launch_builder(&field);
        l.arg(&p).arg(&a).arg(&b).arg(&mut z);
        let cfg = LaunchConfig {
            grid_dim: (
                cols.div_ceil(64) as u32,
                rows.div_ceil(64) as u32,
                nb as u32,
            ),
            block_dim: (16, 16, 1),
            shared_mem_bytes: 0,
        };
        if rows.div_ceil(64) > 65_535 {
            return Err(invalid(K, "more than 4,194,240 rows"));
        }
        // SAFETY: sim_field(params, a, b, z): block (x, y, real) reads rows/cols of its tile
        // within the tables of realisation `real` < nb, and writes nodes r < rows, c < cols of
        // that realisation's field, inside z (batch·nodes).
        unsafe { l.launch(cfg) }.map_err(|source| CudaError::Driver {
            action: format!("launching {K}"),
            source,
        })?;
        seconds += f64::from(gpu.elapsed_ms(&start)?) / 1e3;
        let host = gpu.download(&z, nodes * nb, "the fields")?;
        for (i, f) in host.chunks(nodes).enumerate() {
            sink(first + i, f);
        }
        gpu.recycle_host(host);
        first += nb;
    }
    Ok(seconds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_size_matches_the_c_mirror() {
        assert_eq!(std::mem::size_of::<SimKernelParams>(), 64);
    }
}
