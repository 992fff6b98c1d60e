//! GeoTIFF tiles compressed on the run's GPU: [`install`] hands geofield-io's COG writer a
//! [`TileAccelerator`] that runs `geofield_cuda::tiles` on a stream of its own, so a map's
//! tiles compress on the device beside the next map's computing, and each GPU of a split run
//! compresses its own rows. The bytes are those of the CPU encoder
//! `geofield_io::geotiff::segdeflate` (tested byte for byte on the device).

use std::sync::{Arc, OnceLock};

use geofield_cuda::Gpu;
use geofield_io::geotiff::segdeflate::{TileAccelerator, set_tile_accelerator};

use crate::Backend;

/// Streams the tiles are compressed on: while one stream's tiles compute, the other's rows and
/// tiles cross the bus.
const STREAMS: usize = 2;

/// The accelerator: the run's GPU, and (opened on first use) [`STREAMS`] handles on it, each
/// with a stream of its own, the kernels compiled; `None` there when that failed (the CPU's
/// codec then).
struct GpuTiles {
    gpu: Arc<Gpu>,
    own: OnceLock<Option<Vec<Arc<Gpu>>>>,
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
            let handles: Option<Vec<Arc<Gpu>>> =
                (0..STREAMS).map(|_| self.gpu.beside().ok()).collect();
            let handles = handles?;
            for h in &handles {
                geofield_cuda::tiles::prepare(h).ok()?;
            }
            Some(handles)
        });
        let Some(handles) = own else {
            return Err("the GPU's tile compressor could not be opened".into());
        };
        let run = |gpu: &Gpu, v: &[f32], r: usize| {
            geofield_cuda::tiles::deflate_f32(gpu, v, cols, r, fill).map_err(|e| e.to_string())
        };
        // Tile rows split between the streams (tiles do not depend on each other: the same
        // bytes as one call).
        let tile_rows = rows.div_ceil(geofield_cuda::tiles::TILE);
        if tile_rows < 2 {
            return run(&handles[0], values, rows);
        }
        let split = tile_rows.div_ceil(2) * geofield_cuda::tiles::TILE * cols;
        let (a, b) = values.split_at(split.min(values.len()));
        let rows_a = a.len() / cols.max(1);
        let (ta, tb) = std::thread::scope(|s| {
            let second = s.spawn(|| run(&handles[1], b, rows - rows_a));
            let first = run(&handles[0], a, rows_a);
            (first, second.join())
        });
        let mut tiles = ta?;
        tiles.extend(tb.map_err(|_| "a tile thread panicked".to_string())??);
        Ok(tiles)
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
