//! Tiles of the pyramid: overviews, the floating-point predictor and DEFLATE.

use super::*;

/// A float type the writer stores: f32 or f64.
pub(super) trait Sample: Copy + Send + Sync + PartialEq + 'static {
    const BYTES: usize;
    fn zero() -> Self;
    fn nan() -> Self;
    fn is_nan(self) -> bool;
    fn from_f64(v: f64) -> Self;
    fn to_f64(self) -> f64;
    /// Little-endian bytes in the first [`Sample::BYTES`] of eight.
    fn bytes_le(self) -> [u8; 8];
}

impl Sample for f32 {
    const BYTES: usize = 4;
    fn zero() -> Self {
        0.0
    }
    fn nan() -> Self {
        f32::NAN
    }
    fn is_nan(self) -> bool {
        self.is_nan()
    }
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn bytes_le(self) -> [u8; 8] {
        let b = self.to_le_bytes();
        [b[0], b[1], b[2], b[3], 0, 0, 0, 0]
    }
}

impl Sample for f64 {
    const BYTES: usize = 8;
    fn zero() -> Self {
        0.0
    }
    fn nan() -> Self {
        f64::NAN
    }
    fn is_nan(self) -> bool {
        self.is_nan()
    }
    fn from_f64(v: f64) -> Self {
        v
    }
    fn to_f64(self) -> f64 {
        self
    }
    fn bytes_le(self) -> [u8; 8] {
        self.to_le_bytes()
    }
}

/// One image of the pyramid, its tiles compressed, in file order (band, tile row, tile col).
pub(super) struct Level {
    pub(super) cols: usize,
    pub(super) rows: usize,
    pub(super) tiles: Vec<Vec<u8>>,
}

/// Compress one band's full-resolution image and every overview. Returned full resolution
/// first.
pub(super) fn encode_levels<T: Sample>(
    values: &[T],
    cols: usize,
    rows: usize,
    nodata: Option<f64>,
    codec: Compression,
) -> Vec<Level> {
    let (mut cols, mut rows) = (cols, rows);
    let mut levels = vec![Level {
        cols,
        rows,
        tiles: compress_image(values, cols, rows, 1, nodata, codec),
    }];
    let mut current: Option<Vec<T>> = None;
    while cols > TILE_SIZE || rows > TILE_SIZE {
        let src = current.as_deref().unwrap_or(values);
        let (half, c2, r2) = downsample(src, cols, rows, 1, nodata);
        levels.push(Level {
            cols: c2,
            rows: r2,
            tiles: compress_image(&half, c2, r2, 1, nodata, codec),
        });
        (cols, rows) = (c2, r2);
        current = Some(half);
    }
    levels
}

/// Halve an image (rounding up): each cell is the mean of the valid cells it covers.
pub(super) fn downsample<T: Sample>(
    src: &[T],
    cols: usize,
    rows: usize,
    bands: usize,
    nodata: Option<f64>,
) -> (Vec<T>, usize, usize) {
    let (c2, r2) = (cols.div_ceil(2), rows.div_ceil(2));
    let missing = |v: T| v.is_nan() || nodata.is_some_and(|nd| v.to_f64() == nd);
    let fill = nodata.map_or(T::nan(), T::from_f64);
    let mut out = vec![T::zero(); bands * c2 * r2];
    // Output rows in parallel (each is written by one task; the values do not depend on it).
    out.par_chunks_mut(c2.max(1))
        .enumerate()
        .for_each(|(br, line)| {
            let (b, r) = (br / r2.max(1), br % r2.max(1));
            let band = &src[b * cols * rows..(b + 1) * cols * rows];
            for (c, o) in line.iter_mut().enumerate() {
                let (mut sum, mut n) = (0.0f64, 0u32);
                for rr in 2 * r..(2 * r + 2).min(rows) {
                    for cc in 2 * c..(2 * c + 2).min(cols) {
                        let v = band[rr * cols + cc];
                        if !missing(v) {
                            sum += v.to_f64();
                            n += 1;
                        }
                    }
                }
                *o = if n == 0 {
                    fill
                } else {
                    T::from_f64(sum / f64::from(n))
                };
            }
        });
    (out, c2, r2)
}

/// DEFLATE level of the tiles (libdeflate's scale, 1 to 12). Level 1 compresses the
/// predictor's output of seed, kriging and wind maps to within about 3 % of level 6 (GDAL's
/// default) at nearly twice the speed (measured on seed maps: ratio 1.59 vs 1.64, 187 vs
/// 107 MB/s per core); the low mantissa bytes of float maps are nearly random, and no level
/// compresses them.
const DEFLATE_LEVEL: i32 = 1;

/// Zstandard level of the tiles. Level 1 (zstd's fastest regular level) matched DEFLATE level
/// 1's ratio on a seed map (1.47 against 1.49) at 2.7 times its speed (512 against 190 MB/s per
/// core); level 3 (zstd's default) gains 4 % of size for 1.5 times the time.
const ZSTD_LEVEL: i32 = 1;

/// A tile compressor; one per worker thread.
pub(super) enum Codec {
    Deflate(libdeflater::Compressor),
    /// `None` when zstd could not set up its context (out of memory): tiles then fall back to
    /// a one-shot context each.
    Zstd(Option<zstd::bulk::Compressor<'static>>),
}

impl Codec {
    pub(super) fn new(c: Compression) -> Self {
        match c {
            // DEFLATE_LEVEL is in libdeflate's range; the default level is the fallback.
            Compression::Deflate => Codec::Deflate(libdeflater::Compressor::new(
                libdeflater::CompressionLvl::new(DEFLATE_LEVEL).unwrap_or_default(),
            )),
            Compression::Zstd => Codec::Zstd(zstd::bulk::Compressor::new(ZSTD_LEVEL).ok()),
        }
    }

    /// `raw` compressed: a zlib stream, or a zstd frame (with the content size).
    pub(super) fn compress(&mut self, raw: &[u8]) -> Result<Vec<u8>, String> {
        match self {
            Codec::Deflate(z) => {
                let mut out = vec![0u8; z.zlib_compress_bound(raw.len())];
                // The buffer holds the bound, so compression cannot run out of room.
                let n = z.zlib_compress(raw, &mut out).map_err(|e| e.to_string())?;
                out.truncate(n);
                Ok(out)
            }
            Codec::Zstd(Some(z)) => z.compress(raw).map_err(|e| e.to_string()),
            Codec::Zstd(None) => zstd::bulk::compress(raw, ZSTD_LEVEL).map_err(|e| e.to_string()),
        }
    }
}

/// Cut an image into tiles and compress them (in parallel), in file order. NaN cells are stored
/// as the nodata value when it is finite, so that readers mask them.
pub(super) fn compress_image<T: Sample>(
    values: &[T],
    cols: usize,
    rows: usize,
    bands: usize,
    nodata: Option<f64>,
    codec: Compression,
) -> Vec<Vec<u8>> {
    let nan_as = nodata.filter(|v| v.is_finite()).map(T::from_f64);
    let (across, down) = (cols.div_ceil(TILE_SIZE), rows.div_ceil(TILE_SIZE));
    (0..bands * across * down)
        .into_par_iter()
        .map_init(
            || Codec::new(codec),
            |z, i| {
                let band = i / (across * down);
                let (tr, tc) = ((i % (across * down)) / across, i % across);
                let plane = &values[band * cols * rows..(band + 1) * cols * rows];
                compress_tile(z, plane, cols, rows, tr * TILE_SIZE, tc * TILE_SIZE, nan_as)
            },
        )
        .collect()
}

/// One tile: pixels padded with zeros (NaN as `nan_as` when given), the floating-point
/// predictor, then the codec.
pub(super) fn compress_tile<T: Sample>(
    z: &mut Codec,
    plane: &[T],
    cols: usize,
    rows: usize,
    row0: usize,
    col0: usize,
    nan_as: Option<T>,
) -> Vec<u8> {
    let row_bytes = TILE_SIZE * T::BYTES;
    let mut raw = vec![0u8; TILE_SIZE * row_bytes];
    let mut vals = [T::zero(); TILE_SIZE];
    let mut shuffled = vec![0u8; row_bytes];
    let width = TILE_SIZE.min(cols.saturating_sub(col0));
    for (r, out) in raw.chunks_exact_mut(row_bytes).enumerate() {
        let row = row0 + r;
        vals.fill(T::zero());
        if row < rows {
            let src = &plane[row * cols + col0..row * cols + col0 + width];
            match nan_as {
                Some(fill) => {
                    for (d, &v) in vals.iter_mut().zip(src) {
                        *d = if v.is_nan() { fill } else { v };
                    }
                }
                None => vals[..width].copy_from_slice(src),
            }
        }
        floating_point_predictor(&vals, &mut shuffled, out);
    }
    // Compression fails only when memory runs out; an empty tile would then be caught by the
    // reader, so abort with the reason instead (as an allocation failure would).
    match z.compress(&raw) {
        Ok(t) => t,
        Err(e) => panic!("compressing a GeoTIFF tile failed: {e}"),
    }
}

/// TIFF predictor 3 (Adobe TIFF Technical Note 3) for one row of one sample per pixel: byte
/// `k` (most significant first) of value `i` goes to `k * n + i` of `shuffled`, and `out` gets
/// each of those bytes minus the one before it (wrapping; the first as is).
pub(super) fn floating_point_predictor<T: Sample>(vals: &[T], shuffled: &mut [u8], out: &mut [u8]) {
    let n = vals.len();
    let b = T::BYTES;
    for (i, v) in vals.iter().enumerate() {
        let le = v.bytes_le();
        for k in 0..b {
            shuffled[k * n + i] = le[b - 1 - k];
        }
    }
    out[0] = shuffled[0];
    for ((o, &cur), &prev) in out[1..].iter_mut().zip(&shuffled[1..]).zip(&shuffled[..]) {
        *o = cur.wrapping_sub(prev);
    }
}
