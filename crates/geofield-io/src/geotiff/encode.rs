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
    /// The values as f32, when they are.
    fn as_f32(values: &[Self]) -> Option<&[f32]>;
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
    fn as_f32(values: &[Self]) -> Option<&[f32]> {
        Some(values)
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
    fn as_f32(_: &[Self]) -> Option<&[f32]> {
        None
    }
}

/// One image of the pyramid, its tiles compressed, in file order (band, tile row, tile col).
pub(super) struct Level {
    pub(super) cols: usize,
    pub(super) rows: usize,
    pub(super) tiles: Vec<Vec<u8>>,
}

/// The sizes of a band's pyramid: full resolution, then halved (rounding up) until the image
/// fits one tile.
pub(super) fn level_sizes(cols: usize, rows: usize) -> Vec<(usize, usize)> {
    let mut sizes = vec![(cols, rows)];
    let (mut c, mut r) = (cols, rows);
    while c > TILE_SIZE || r > TILE_SIZE {
        (c, r) = (c.div_ceil(2), r.div_ceil(2));
        sizes.push((c, r));
    }
    sizes
}

/// One image of a pyramid being built from rows given in order.
struct RowLevel<T> {
    cols: usize,
    rows: usize,
    /// Rows received so far.
    received: usize,
    /// Rows received but not compressed yet (less than a tile row until the image ends).
    pending: Vec<T>,
    /// A row waiting for the row below it, to make a row of the next image.
    carry: Vec<T>,
    tiles: Vec<Vec<u8>>,
}

/// A band's pyramid built from rows given in order, top to bottom ([`RowEncoder::push`]): the
/// full-resolution tiles of each complete tile row are compressed at once, and each pair of
/// rows becomes a row of the next overview. The tiles are those of the whole band compressed
/// at once (the same cuts, padding and overview cells), so a map computed in strips is
/// compressed while its later strips compute and gives the same file.
pub(super) struct RowEncoder<T> {
    levels: Vec<RowLevel<T>>,
    nodata: Option<f64>,
    codec: Compression,
    /// For a part of the image ([`RowEncoder::part`]): the rows of the first image not
    /// encoded here, as the last encoded image makes them.
    raw: Option<Vec<T>>,
}

impl<T: Sample> RowEncoder<T> {
    pub(super) fn new(cols: usize, rows: usize, nodata: Option<f64>, codec: Compression) -> Self {
        let levels = level_sizes(cols, rows)
            .into_iter()
            .map(|(cols, rows)| RowLevel {
                cols,
                rows,
                received: 0,
                pending: Vec::new(),
                carry: Vec::new(),
                tiles: Vec::new(),
            })
            .collect();
        Self {
            levels,
            nodata,
            codec,
            raw: None,
        }
    }

    /// The encoder of rows `first ..` of the image (`first` a multiple of `TILE_SIZE ·
    /// 2^(encoded - 1)`, or of 2^`encoded` when `encoded` is 0): only its first `encoded`
    /// images are compressed (their tiles are whole tile rows of the image's, the same bytes),
    /// and the rows they make of image `encoded` are kept raw ([`Self::into_part`]) for the
    /// coarser images, which need every part's rows.
    pub(super) fn part(
        cols: usize,
        rows: usize,
        nodata: Option<f64>,
        codec: Compression,
        first: usize,
        encoded: usize,
    ) -> Self {
        let mut e = Self::new(cols, rows, nodata, codec);
        let sizes: Vec<(usize, usize)> = e.levels.iter().map(|l| (l.cols, l.rows)).collect();
        e.levels.truncate(encoded);
        for (i, l) in e.levels.iter_mut().enumerate() {
            l.received = first >> i;
        }
        // Image `encoded`'s own bookkeeping: its size and the rows received so far.
        let (c, r) = sizes.get(encoded).copied().unwrap_or((0, 0));
        e.levels.push(RowLevel {
            cols: c,
            rows: r,
            received: first >> encoded,
            pending: Vec::new(),
            carry: Vec::new(),
            tiles: Vec::new(),
        });
        e.raw = Some(Vec::new());
        e
    }

    /// Rows received so far (of the full-resolution image).
    pub(super) fn received(&self) -> usize {
        self.levels[0].received
    }

    /// The next whole rows of the full-resolution image (the caller keeps within its rows). An
    /// error is the codec's (out of memory).
    pub(super) fn push(&mut self, values: &[T]) -> Result<(), String> {
        self.push_level(0, values)
    }

    fn push_level(&mut self, i: usize, values: &[T]) -> Result<(), String> {
        let (nodata, codec) = (self.nodata, self.codec);
        // A part's last level is kept raw.
        if let Some(raw) = self.raw.as_mut()
            && i + 1 == self.levels.len()
        {
            raw.extend_from_slice(values);
            self.levels[i].received += values.len() / self.levels[i].cols.max(1);
            return Ok(());
        }
        let has_next = i + 1 < self.levels.len();
        // A part's rows end inside the image: it compresses whole tile rows as they come, so
        // that none is left waiting at its end.
        let whole = self.raw.is_none();
        let next = {
            let l = &mut self.levels[i];
            let cols = l.cols;
            let n = values.len() / cols.max(1);
            l.received += n;
            let last = l.received == l.rows;
            // Rows compressed together: whole tile rows, or on an accelerator enough of them
            // to fill it (the same tiles either way).
            let unit = match whole && codec == Compression::Deflate && T::as_f32(values).is_some() {
                true => super::segdeflate::accelerator_rows(cols).unwrap_or(TILE_SIZE),
                false => TILE_SIZE,
            };
            // Complete units straight from `values` when nothing is pending (no copy).
            let take = if l.pending.is_empty() {
                if last { n } else { n / unit * unit }
            } else {
                0
            };
            if take > 0 {
                let tiles = compress_image(&values[..take * cols], cols, take, 1, nodata, codec)?;
                l.tiles.extend(tiles);
            }
            l.pending.extend_from_slice(&values[take * cols..]);
            let pending_rows = l.pending.len() / cols.max(1);
            let ready = if last {
                pending_rows
            } else {
                pending_rows / unit * unit
            };
            if ready > 0 {
                let tiles =
                    compress_image(&l.pending[..ready * cols], cols, ready, 1, nodata, codec)?;
                l.tiles.extend(tiles);
                l.pending.drain(..ready * cols);
            }
            // Rows of the next image: pairs of rows (the carried one first); the image's odd
            // last row alone; an odd row before the end waits for the next rows.
            if has_next {
                let half_cols = cols.div_ceil(2);
                let carry = std::mem::take(&mut l.carry);
                let mut rows: Vec<&[T]> = Vec::with_capacity(n + 1);
                if !carry.is_empty() {
                    rows.push(&carry);
                }
                rows.extend(values.chunks_exact(cols.max(1)));
                let odd = rows.len() % 2 == 1;
                let out_rows = rows.len() / 2 + usize::from(odd && last);
                let mut half = vec![T::zero(); out_rows * half_cols];
                half.par_chunks_mut(half_cols.max(1))
                    .enumerate()
                    .for_each(|(k, out)| {
                        let below = rows.get(2 * k + 1).copied();
                        downsample_row(rows[2 * k], below, cols, nodata, out);
                    });
                let kept = match rows.last() {
                    Some(r) if odd && !last => r.to_vec(),
                    _ => Vec::new(),
                };
                drop(rows);
                l.carry = kept;
                Some(half)
            } else {
                None
            }
        };
        match next {
            Some(half) if !half.is_empty() => self.push_level(i + 1, &half),
            _ => Ok(()),
        }
    }

    /// A part's compressed images (full resolution first) and the raw rows of the next image.
    pub(super) fn into_part(mut self) -> (Vec<Level>, Vec<T>) {
        let raw = self.raw.take().unwrap_or_default();
        self.levels.pop();
        (self.into_levels(), raw)
    }

    /// The levels, full resolution first (every row must have been given).
    pub(super) fn into_levels(self) -> Vec<Level> {
        self.levels
            .into_iter()
            .map(|l| Level {
                cols: l.cols,
                rows: l.rows,
                tiles: l.tiles,
            })
            .collect()
    }
}

/// One row of a halved image from rows `a` and `b` (`None` past the image's last row) of
/// `cols` cells: each cell the mean of the valid cells it covers (row `a` then `b`, west to
/// east), nodata when none is.
fn downsample_row<T: Sample>(
    a: &[T],
    b: Option<&[T]>,
    cols: usize,
    nodata: Option<f64>,
    out: &mut [T],
) {
    let missing = |v: T| v.is_nan() || nodata.is_some_and(|nd| v.to_f64() == nd);
    let fill = nodata.map_or(T::nan(), T::from_f64);
    for (c, o) in out.iter_mut().enumerate() {
        let (mut sum, mut n) = (0.0f64, 0u32);
        for row in std::iter::once(a).chain(b) {
            for &v in &row[2 * c..(2 * c + 2).min(cols)] {
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
}

/// Halve an image (rounding up): each cell is the mean of the valid cells it covers (the rule
/// [`RowEncoder`] applies row pair by row pair).
#[cfg(test)]
pub(super) fn downsample<T: Sample>(
    src: &[T],
    cols: usize,
    rows: usize,
    bands: usize,
    nodata: Option<f64>,
) -> (Vec<T>, usize, usize) {
    let (c2, r2) = (cols.div_ceil(2), rows.div_ceil(2));
    let mut out = vec![T::zero(); bands * c2 * r2];
    // Output rows in parallel (each is written by one task; the values do not depend on it).
    out.par_chunks_mut(c2.max(1))
        .enumerate()
        .for_each(|(br, line)| {
            let (b, r) = (br / r2.max(1), br % r2.max(1));
            let band = &src[b * cols * rows..(b + 1) * cols * rows];
            let row = |k: usize| &band[k * cols..(k + 1) * cols];
            let below = (2 * r + 1 < rows).then(|| row(2 * r + 1));
            downsample_row(row(2 * r), below, cols, nodata, line);
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
) -> Result<Vec<Vec<u8>>, String> {
    let nan_as = nodata.filter(|v| v.is_finite()).map(T::from_f64);
    if codec == Compression::Deflate
        && let Some(f32s) = T::as_f32(values)
        && let Some(tiles) = super::segdeflate::on_accelerator(f32s, cols, rows, bands, nodata)
    {
        return Ok(tiles);
    }
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
        .collect::<Result<Vec<_>, String>>()
}

/// One tile: pixels padded with zeros (NaN as `nan_as` when given), the floating-point
/// predictor, then the codec (whose error is an out-of-memory one).
pub(super) fn compress_tile<T: Sample>(
    z: &mut Codec,
    plane: &[T],
    cols: usize,
    rows: usize,
    row0: usize,
    col0: usize,
    nan_as: Option<T>,
) -> Result<Vec<u8>, String> {
    let raw = predictor_tile(plane, cols, rows, row0, col0, nan_as);
    z.compress(&raw)
        .map_err(|e| format!("compressing a tile failed: {e}"))
}

/// The bytes of the tile at (`row0`, `col0`) of a `cols` × `rows` plane after the
/// floating-point predictor: pixels outside the plane are zeros, NaN cells `nan_as` when given.
pub(super) fn predictor_tile<T: Sample>(
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
    raw
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
