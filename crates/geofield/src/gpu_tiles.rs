//! GeoTIFF tiles compressed on the run's GPU: [`install`] hands geofield-io's COG writer a
//! [`TileAccelerator`] that runs `geofield_cuda::tiles` on a stream of its own, so a map's
//! tiles compress on the device beside the next map's computing, and each GPU of a split run
//! compresses its own rows. The bytes are those of the CPU encoder
//! `geofield_io::geotiff::segdeflate` (tested byte for byte on the device).

use std::sync::{Arc, OnceLock};

use geofield_cuda::Gpu;
use geofield_io::geotiff::segdeflate::{TileAccelerator, set_tile_accelerator};

use crate::Backend;

/// The accelerator: the run's GPU, and (opened on first use) a handle on it with a stream of
/// its own, its kernels compiled; `None` there when that failed (the CPU's codec then).
struct GpuTiles {
    gpu: Arc<Gpu>,
    own: OnceLock<Option<Arc<Gpu>>>,
}

impl TileAccelerator for GpuTiles {
    fn deflate_f32(
        &self,
        values: &[f32],
        cols: usize,
        rows: usize,
        fill: Option<f32>,
    ) -> Result<Vec<Vec<u8>>, String> {
        let own = self.own.get_or_init(|| {
            let own = self.gpu.beside().ok()?;
            geofield_cuda::tiles::prepare(&own).ok()?;
            Some(own)
        });
        let Some(gpu) = own else {
            return Err("the GPU's tile compressor could not be opened".into());
        };
        geofield_cuda::tiles::deflate_f32(gpu, values, cols, rows, fill).map_err(|e| e.to_string())
    }
}

/// The variable that turns GPU tile compression off (`0`): GeoTIFFs are then compressed by
/// libdeflate on the CPU, as on CPU runs.
pub const DISABLE_VAR: &str = "GEOFIELD_GPU_TILES";

/// With a CUDA backend (and [`DISABLE_VAR`] not `0`), compress every f32 GeoTIFF's DEFLATE
/// tiles on that GPU from now on; returns whether it did. Nothing is opened or compiled until
/// a tile is compressed, and a GPU that fails then leaves the tiles to the CPU's codec.
pub fn install(backend: &Backend) -> bool {
    let Backend::Cuda(gpu) = backend else {
        return false;
    };
    if std::env::var(DISABLE_VAR).is_ok_and(|v| v.trim() == "0") {
        return false;
    }
    set_tile_accelerator(Some(Arc::new(GpuTiles {
        gpu: Arc::clone(gpu),
        own: OnceLock::new(),
    })));
    true
}
