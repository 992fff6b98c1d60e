//! GeoTIFF tiles of f32 maps compressed on the device (`kernels/tiles.cu`): each 256 × 256
//! tile through TIFF's floating-point predictor and DEFLATE (a zlib stream), one block a tile.
//! The bytes are those of geofield-io's CPU encoder `geotiff::segdeflate::compress` applied to
//! the tile's predictor bytes, which the tests check byte for byte.

use cudarc::driver::{LaunchConfig, PushKernelArg};
use rayon::prelude::*;

use crate::context::Gpu;
use crate::error::{CudaError, DriverResultExt, invalid};

const MODULE: &str = "tiles";
/// Tile side in pixels (the kernel's `TD_ROWS`; geofield-io's `TILE_SIZE`).
pub const TILE: usize = 256;
/// Predictor bytes of one f32 tile.
const TILE_BYTES: usize = TILE * TILE * 4;
/// Bytes reserved for each tile's stream: stored blocks (5 of them, 5 header bytes each), the
/// zlib header and Adler-32, rounded up to whole words. The encoder stores a tile that would
/// not shrink, so no stream is longer.
const CAP: usize = (TILE_BYTES + 5 * 5 + 6).div_ceil(4) * 4;
/// Tiles per launch: their scratch (predictor bytes, tokens and reserved output, ~1 MB a
/// tile) stays near 1 GB.
const BATCH: usize = 1024;

/// Mirror of `TileParams` in tiles.cu.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct TileParams {
    cols: u64,
    rows: u64,
    cap: u64,
    across: u32,
    tiles: u32,
    fill: u32,
    has_fill: u32,
}
const _: () = assert!(std::mem::size_of::<TileParams>() == 40);
// SAFETY: plain old data, mirrored in C.
unsafe impl cudarc::driver::DeviceRepr for TileParams {}

/// The kernels a compression launches, compiled together on first use.
pub fn prepare(gpu: &Gpu) -> Result<(), CudaError> {
    gpu.prepare(MODULE, &["tiles_deflate_f32", "tiles_pack"])
}

/// Where [`deflate_f32_timed`]'s time went: seconds of the whole call, and milliseconds of
/// the compressing kernel (device events).
#[derive(Debug, Clone, Copy, Default)]
pub struct TileTimes {
    pub total_s: f64,
    pub kernel_ms: f64,
}

/// The tiles of a `cols` × `rows` f32 image (row-major), compressed: tile rows north to south,
/// tiles west to east, edge tiles padded with zeros, NaN cells stored as `fill` when given.
pub fn deflate_f32(
    gpu: &Gpu,
    values: &[f32],
    cols: usize,
    rows: usize,
    fill: Option<f32>,
) -> Result<Vec<Vec<u8>>, CudaError> {
    deflate_f32_timed(gpu, values, cols, rows, fill).map(|(t, _)| t)
}

/// [`deflate_f32`] and where its time went.
pub fn deflate_f32_timed(
    gpu: &Gpu,
    values: &[f32],
    cols: usize,
    rows: usize,
    fill: Option<f32>,
) -> Result<(Vec<Vec<u8>>, TileTimes), CudaError> {
    let t0 = std::time::Instant::now();
    let mut times = TileTimes::default();
    if values.len() != cols * rows {
        return Err(invalid(
            "tiles",
            format!("{} values for {cols} x {rows} cells", values.len()),
        ));
    }
    let (across, down) = (cols.div_ceil(TILE), rows.div_ceil(TILE));
    let mut tiles = Vec::with_capacity(across * down);
    if across == 0 || down == 0 {
        return Ok((tiles, times));
    }
    prepare(gpu)?;
    let _held = gpu.hold();
    let tile_rows_per_batch = (BATCH / across).max(1);
    for tr0 in (0..down).step_by(tile_rows_per_batch) {
        let tr1 = (tr0 + tile_rows_per_batch).min(down);
        let (r0, r1) = (tr0 * TILE, (tr1 * TILE).min(rows));
        let part = &values[r0 * cols..r1 * cols];
        let (t, ms) = batch(gpu, part, cols, r1 - r0, across, tr1 - tr0, fill)?;
        tiles.extend(t);
        times.kernel_ms += ms;
    }
    times.total_s = t0.elapsed().as_secs_f64();
    Ok((tiles, times))
}

/// One launch: `n_down` tile rows of `rows` image rows.
fn batch(
    gpu: &Gpu,
    part: &[f32],
    cols: usize,
    rows: usize,
    across: usize,
    n_down: usize,
    fill: Option<f32>,
) -> Result<(Vec<Vec<u8>>, f64), CudaError> {
    let n = across * n_down;
    let p = TileParams {
        cols: cols as u64,
        rows: rows as u64,
        cap: CAP as u64,
        across: across as u32,
        tiles: n as u32,
        fill: fill.map_or(0, f32::to_bits),
        has_fill: u32::from(fill.is_some()),
    };
    gpu.ensure_free(
        "compressing GeoTIFF tiles",
        (n * (3 * TILE_BYTES + CAP) + std::mem::size_of_val(part)) as u64,
    )?;
    let vals = gpu.upload_staged(part, "the map's rows")?;
    // SAFETY: the kernel writes every tile's predictor bytes before reading them.
    let mut raw = unsafe { gpu.alloc_unset::<u8>(n * TILE_BYTES, "the predictor bytes") }?;
    // SAFETY: each thread writes its tokens before reading them back.
    let mut tok = unsafe { gpu.alloc_unset::<u16>(n * TILE_BYTES, "the parse's tokens") }?;
    let mut out = gpu.zeros::<u32>(n * CAP / 4, "the compressed tiles")?;
    let mut lens = gpu.zeros::<u32>(n, "the tiles' lengths")?;
    let f = gpu.function(MODULE, "tiles_deflate_f32")?;
    let cfg = LaunchConfig {
        grid_dim: (n as u32, 1, 1),
        block_dim: (TILE as u32, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut b = gpu.stream().launch_builder(&f);
    b.arg(&p)
        .arg(&vals)
        .arg(&mut raw)
        .arg(&mut tok)
        .arg(&mut out)
        .arg(&mut lens);
    // SAFETY: tiles_deflate_f32(params, vals (rows × cols), raw (n × TILE_BYTES), tok (n ×
    // TILE_BYTES u16: at most one token a byte), out (n × CAP bytes, zeroed), lens (n)):
    // block k < n reads the cells of tile k inside rows × cols, writes raw[k], its tokens, at
    // most CAP bytes of out[k] (a stored tile is the longest stream) and lens[k].
    let start = gpu.mark()?;
    unsafe { b.launch(cfg) }.doing("launching tiles_deflate_f32")?;
    let ms = f64::from(gpu.elapsed_ms(&start)?);
    let lengths = gpu.download(&lens, n, "the tiles' lengths")?;
    let mut offsets = Vec::with_capacity(n + 1);
    let mut total = 0u64;
    for &l in &lengths {
        if l as usize > CAP {
            return Err(invalid(
                "tiles",
                format!("a tile of {l} bytes (at most {CAP})"),
            ));
        }
        offsets.push(total);
        total += u64::from(l);
    }
    let off = gpu.upload(&offsets, "the tiles' offsets")?;
    // SAFETY: tiles_pack writes every byte of `packed` (the lengths sum to its size).
    let mut packed = unsafe { gpu.alloc_unset::<u8>(total as usize, "the packed tiles") }?;
    let pack = gpu.function(MODULE, "tiles_pack")?;
    let cfg = LaunchConfig {
        grid_dim: (n as u32, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    let (cap, count) = (CAP as u64, n as u32);
    let mut b = gpu.stream().launch_builder(&pack);
    b.arg(&out)
        .arg(&cap)
        .arg(&count)
        .arg(&lens)
        .arg(&off)
        .arg(&mut packed);
    // SAFETY: tiles_pack(out, cap, tiles, len, offset, packed): block k copies len[k] ≤ cap
    // bytes of tile k to packed[offset[k]..], inside `packed` (offsets are the lengths'
    // prefix sums).
    unsafe { b.launch(cfg) }.doing("launching tiles_pack")?;
    let bytes = gpu.download(&packed, total as usize, "the compressed tiles")?;
    let tiles = lengths
        .par_iter()
        .zip(&offsets)
        .map(|(&l, &o)| bytes[o as usize..o as usize + l as usize].to_vec())
        .collect();
    Ok((tiles, ms))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{compile_with_log, module_source, nvrtc_present};

    #[test]
    fn tiles_module_compiles_and_its_params_match() {
        assert_eq!(std::mem::size_of::<TileParams>(), 40);
        assert_eq!(CAP % 4, 0);
        if !nvrtc_present() {
            eprintln!("skipping: {}", CudaError::NvrtcMissing);
            return;
        }
        let src = module_source(MODULE).expect("registered");
        for arch in ["sm_80", "sm_90"] {
            match compile_with_log(MODULE, src, arch) {
                Ok(c) => eprintln!("{arch}: {}", c.log),
                Err(e) => panic!("{e}"),
            }
        }
    }
}
