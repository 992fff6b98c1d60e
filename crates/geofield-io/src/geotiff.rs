//! GeoTIFF output as a Cloud-Optimized GeoTIFF (COG): one band per raster layer, readable by
//! GDAL, QGIS and rasterio, and valid for `rio cogeo validate` and GDAL's COG layout check.
//!
//! The file structure is written here directly (TIFF 6.0, BigTIFF, GeoTIFF 1.0 and GDAL's COG
//! conventions, <https://gdal.org/drivers/raster/cog.html>); the `tiff` crate's encoder has no
//! tiles, floating-point predictor or control over where directories go. Layout, in file order:
//!
//! 1. the TIFF header (`II`, little-endian), classic or BigTIFF;
//! 2. GDAL's "ghost" structural metadata right after it (`GDAL_STRUCTURAL_METADATA_SIZE=...`,
//!    `LAYOUT=IFDS_BEFORE_DATA`, `BLOCK_ORDER=ROW_MAJOR`, `BLOCK_LEADER=SIZE_AS_UINT4`,
//!    `BLOCK_TRAILER=LAST_4_BYTES_REPEATED`, `KNOWN_INCOMPATIBLE_EDITION=NO`), which GDAL reports
//!    as `LAYOUT=COG`;
//! 3. every image file directory (IFD) with its tag values: the full-resolution image first,
//!    then the overviews from largest to smallest (`NewSubfileType` = 1);
//! 4. the tiles: the smallest overview's first, the full-resolution image's last; within an
//!    image band by band, tile rows north to south, tiles west to east. Each tile is preceded by
//!    its byte count (u32) and followed by a copy of its last 4 bytes, as the ghost header says.
//!
//! Every image: tiles of [`TILE_SIZE`] x [`TILE_SIZE`] pixels (edge tiles padded with zeros),
//! `PlanarConfiguration` = 2 (band-major, like the raster), `SampleFormat` = 3 (IEEE float, 32 or
//! 64 bits as the raster's precision), DEFLATE compression (`Compression` = 8, zlib streams) with
//! the floating-point predictor (`Predictor` = 3: each tile row's bytes regrouped by significance,
//! most significant first, then differenced byte by byte), `Photometric` = MinIsBlack with the
//! bands after the first as unspecified `ExtraSamples`.
//!
//! Overviews halve the size (rounding up) until the image fits one tile; each overview cell is
//! the mean of the (up to four) cells it covers that are not nodata (NaN, or the declared nodata
//! value), and nodata when all of them are.
//!
//! Tags of the full-resolution image only:
//!
//! - georeferencing: `ModelPixelScaleTag` = (cell, cell, 0), `ModelTiepointTag` = raster
//!   (0, 0, 0) at world (x_min, y_max, 0), and a `GeoKeyDirectoryTag` with GTRasterType =
//!   PixelIsArea and, for a known EPSG code, GTModelType = Projected with ProjectedCSType = the
//!   code (Geographic with GeographicType for a longitude/latitude code); without a code only
//!   the linear unit, metre;
//! - `GDAL_METADATA` (42112): XML with each band's name (`DESCRIPTION`) and units (`UNITTYPE`),
//!   and the dataset items of [`RasterMeta::provenance`] (program version, command line,
//!   method and parameters), which `gdalinfo` lists as metadata and rasterio as `tags()`;
//! - `ImageDescription` and `Software`.
//!
//! `GDAL_NODATA` (42113) is on every image when [`RasterMeta::nodata`] is set, or when any
//! value of the raster is NaN (as `nan`), so that readers mask what geofield left undefined.
//!
//! Files whose size would pass 4 GiB are written as BigTIFF (64-bit offsets), which GDAL reads
//! transparently.

use std::io::Write;
use std::path::Path;

use flate2::Compression;
use flate2::write::ZlibEncoder;
use geofield_core::{Raster, RasterData};
use rayon::prelude::*;

use crate::IoError;
use crate::atomic::{Staged, commit, write_error};
use crate::raster_out::{RasterMeta, check_shape, format_f64};

/// Width and height of every tile, in pixels.
pub const TILE_SIZE: usize = 256;

/// TIFF tag numbers.
const TAG_NEW_SUBFILE_TYPE: u16 = 254;
const TAG_IMAGE_WIDTH: u16 = 256;
const TAG_IMAGE_LENGTH: u16 = 257;
const TAG_BITS_PER_SAMPLE: u16 = 258;
const TAG_COMPRESSION: u16 = 259;
const TAG_PHOTOMETRIC: u16 = 262;
const TAG_IMAGE_DESCRIPTION: u16 = 270;
const TAG_SAMPLES_PER_PIXEL: u16 = 277;
const TAG_PLANAR_CONFIGURATION: u16 = 284;
const TAG_SOFTWARE: u16 = 305;
const TAG_PREDICTOR: u16 = 317;
const TAG_TILE_WIDTH: u16 = 322;
const TAG_TILE_LENGTH: u16 = 323;
const TAG_TILE_OFFSETS: u16 = 324;
const TAG_TILE_BYTE_COUNTS: u16 = 325;
const TAG_EXTRA_SAMPLES: u16 = 338;
const TAG_SAMPLE_FORMAT: u16 = 339;
const TAG_MODEL_PIXEL_SCALE: u16 = 33550;
const TAG_MODEL_TIEPOINT: u16 = 33922;
const TAG_GEO_KEY_DIRECTORY: u16 = 34735;
const TAG_GDAL_METADATA: u16 = 42112;
const TAG_GDAL_NODATA: u16 = 42113;

/// TIFF field types.
const TYPE_ASCII: u16 = 2;
const TYPE_SHORT: u16 = 3;
const TYPE_LONG: u16 = 4;
const TYPE_DOUBLE: u16 = 12;
const TYPE_LONG8: u16 = 16;

const COMPRESSION_DEFLATE: u16 = 8;
const PREDICTOR_FLOATING_POINT: u16 = 3;

/// GeoKey ids and values (GeoTIFF 1.0 spec, section 6).
const KEY_GT_MODEL_TYPE: u16 = 1024;
const KEY_GT_RASTER_TYPE: u16 = 1025;
const KEY_GEOGRAPHIC_TYPE: u16 = 2048;
const KEY_PROJECTED_CS_TYPE: u16 = 3072;
const KEY_PROJ_LINEAR_UNITS: u16 = 3076;
const MODEL_TYPE_PROJECTED: u16 = 1;
const MODEL_TYPE_GEOGRAPHIC: u16 = 2;
const RASTER_PIXEL_IS_AREA: u16 = 1;
const LINEAR_UNIT_METRE: u16 = 9001;

/// GDAL's structural metadata ("ghost area"), after its size line.
const GHOST_BODY: &str = "LAYOUT=IFDS_BEFORE_DATA\nBLOCK_ORDER=ROW_MAJOR\n\
BLOCK_LEADER=SIZE_AS_UINT4\nBLOCK_TRAILER=LAST_4_BYTES_REPEATED\n\
KNOWN_INCOMPATIBLE_EDITION=NO\n ";

/// When to write BigTIFF (64-bit offsets) instead of classic TIFF.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BigTiff {
    /// Only when the file would pass 4 GiB (GDAL's `BIGTIFF=IF_NEEDED`).
    #[default]
    IfNeeded,
    /// Always (GDAL's `BIGTIFF=YES`).
    Always,
}

/// Write `raster` to `path` as a Cloud-Optimized GeoTIFF (atomically), BigTIFF only when needed.
pub fn write_geotiff(path: &Path, raster: &Raster, meta: &RasterMeta) -> Result<(), IoError> {
    write_geotiff_with(path, raster, meta, BigTiff::IfNeeded)
}

/// As [`write_geotiff`], choosing when to use BigTIFF.
pub fn write_geotiff_with(
    path: &Path,
    raster: &Raster,
    meta: &RasterMeta,
    bigtiff: BigTiff,
) -> Result<(), IoError> {
    check_shape(path, raster)?;
    let invalid = |reason: String| IoError::InvalidOutput {
        path: path.to_path_buf(),
        reason,
    };
    if raster.n_bands() > usize::from(u16::MAX) {
        return Err(invalid(format!(
            "{} bands is more than a TIFF can hold",
            raster.n_bands()
        )));
    }
    if u32::try_from(raster.grid.cols).is_err() || u32::try_from(raster.grid.rows).is_err() {
        return Err(invalid(
            "the grid is wider or taller than a TIFF can hold".into(),
        ));
    }
    let nodata = effective_nodata(raster, meta);
    let levels = match &raster.data {
        RasterData::F32(v) => encode_levels(v, raster, nodata),
        RasterData::F64(v) => encode_levels(v, raster, nodata),
    };
    let tags = MainTags::new(raster, meta, nodata);
    let classic = plan(&levels, &tags, false);
    let layout = if bigtiff == BigTiff::Always || classic.end > u64::from(u32::MAX) {
        plan(&levels, &tags, true)
    } else {
        classic
    };
    let mut staged = Staged::create(path)?;
    staged.with_writer(|w| {
        write_file(w, &layout, &levels).map_err(|source| write_error(path, source))
    })?;
    commit(vec![staged]).map(|_| ())
}

/// The nodata value to declare: the metadata's, else NaN when the raster holds any NaN.
fn effective_nodata(raster: &Raster, meta: &RasterMeta) -> Option<f64> {
    meta.nodata.or_else(|| {
        let any_nan = match &raster.data {
            RasterData::F32(v) => v.iter().any(|x| x.is_nan()),
            RasterData::F64(v) => v.iter().any(|x| x.is_nan()),
        };
        any_nan.then_some(f64::NAN)
    })
}

/// A float type the writer stores: f32 or f64.
trait Sample: Copy + Send + Sync + PartialEq + 'static {
    const BYTES: usize;
    fn zero() -> Self;
    fn nan() -> Self;
    fn is_nan(self) -> bool;
    fn from_f64(v: f64) -> Self;
    fn to_f64(self) -> f64;
    /// Little-endian bytes appended to `out`.
    fn put_le(self, out: &mut Vec<u8>);
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
    fn put_le(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
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
    fn put_le(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
}

/// One image of the pyramid, its tiles compressed, in file order (band, tile row, tile col).
struct Level {
    cols: usize,
    rows: usize,
    tiles: Vec<Vec<u8>>,
}

/// Compress the full-resolution image and every overview. Returned full resolution first.
fn encode_levels<T: Sample>(values: &[T], raster: &Raster, nodata: Option<f64>) -> Vec<Level> {
    let bands = raster.n_bands();
    let (mut cols, mut rows) = (raster.grid.cols, raster.grid.rows);
    let mut levels = vec![Level {
        cols,
        rows,
        tiles: compress_image(values, cols, rows, bands, nodata),
    }];
    let mut current: Option<Vec<T>> = None;
    while cols > TILE_SIZE || rows > TILE_SIZE {
        let src = current.as_deref().unwrap_or(values);
        let (half, c2, r2) = downsample(src, cols, rows, bands, nodata);
        levels.push(Level {
            cols: c2,
            rows: r2,
            tiles: compress_image(&half, c2, r2, bands, nodata),
        });
        (cols, rows) = (c2, r2);
        current = Some(half);
    }
    levels
}

/// Halve an image (rounding up): each cell is the mean of the valid cells it covers.
fn downsample<T: Sample>(
    src: &[T],
    cols: usize,
    rows: usize,
    bands: usize,
    nodata: Option<f64>,
) -> (Vec<T>, usize, usize) {
    let (c2, r2) = (cols.div_ceil(2), rows.div_ceil(2));
    let missing = |v: T| v.is_nan() || nodata.is_some_and(|nd| v.to_f64() == nd);
    let fill = nodata.map_or(T::nan(), T::from_f64);
    let mut out = Vec::with_capacity(bands * c2 * r2);
    for b in 0..bands {
        let band = &src[b * cols * rows..(b + 1) * cols * rows];
        for r in 0..r2 {
            for c in 0..c2 {
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
                out.push(if n == 0 {
                    fill
                } else {
                    T::from_f64(sum / f64::from(n))
                });
            }
        }
    }
    (out, c2, r2)
}

/// Cut an image into tiles and compress them (in parallel), in file order. NaN cells are stored
/// as the nodata value when it is finite, so that readers mask them.
fn compress_image<T: Sample>(
    values: &[T],
    cols: usize,
    rows: usize,
    bands: usize,
    nodata: Option<f64>,
) -> Vec<Vec<u8>> {
    let nan_as = nodata.filter(|v| v.is_finite()).map(T::from_f64);
    let (across, down) = (cols.div_ceil(TILE_SIZE), rows.div_ceil(TILE_SIZE));
    (0..bands * across * down)
        .into_par_iter()
        .map(|i| {
            let band = i / (across * down);
            let (tr, tc) = ((i % (across * down)) / across, i % across);
            let plane = &values[band * cols * rows..(band + 1) * cols * rows];
            compress_tile(plane, cols, rows, tr * TILE_SIZE, tc * TILE_SIZE, nan_as)
        })
        .collect()
}

/// One tile: pixels padded with zeros (NaN as `nan_as` when given), the floating-point
/// predictor, then DEFLATE (zlib).
fn compress_tile<T: Sample>(
    plane: &[T],
    cols: usize,
    rows: usize,
    row0: usize,
    col0: usize,
    nan_as: Option<T>,
) -> Vec<u8> {
    let row_bytes = TILE_SIZE * T::BYTES;
    let mut raw = Vec::with_capacity(TILE_SIZE * row_bytes);
    let mut le = Vec::with_capacity(row_bytes);
    let mut shuffled = vec![0u8; row_bytes];
    for r in 0..TILE_SIZE {
        le.clear();
        for c in 0..TILE_SIZE {
            let (row, col) = (row0 + r, col0 + c);
            let v = if row < rows && col < cols {
                match (plane[row * cols + col], nan_as) {
                    (v, Some(fill)) if v.is_nan() => fill,
                    (v, _) => v,
                }
            } else {
                T::zero()
            };
            v.put_le(&mut le);
        }
        floating_point_predictor(&le, &mut shuffled, T::BYTES);
        raw.extend_from_slice(&shuffled);
    }
    let mut enc = ZlibEncoder::new(Vec::with_capacity(raw.len() / 2), Compression::default());
    // Writing into a Vec cannot fail.
    let _ = enc.write_all(&raw);
    enc.finish().unwrap_or_default()
}

/// TIFF predictor 3 (Adobe TIFF Technical Note 3) for one row of one sample per pixel:
/// `le` holds the row's values little-endian; `out` gets byte `k` (most significant first) of
/// value `i` at `k * n + i`, then each byte minus the one before it (wrapping), right to left.
fn floating_point_predictor(le: &[u8], out: &mut [u8], bytes: usize) {
    let n = le.len() / bytes;
    for i in 0..n {
        for k in 0..bytes {
            out[k * n + i] = le[i * bytes + (bytes - 1 - k)];
        }
    }
    for j in (1..out.len()).rev() {
        out[j] = out[j].wrapping_sub(out[j - 1]);
    }
}

/// The tag values of the full-resolution image that do not depend on the layout.
struct MainTags {
    bits: u16,
    bands: u16,
    description: Option<String>,
    scale: [f64; 3],
    tiepoint: [f64; 6],
    geo_keys: Vec<u16>,
    gdal_metadata: String,
    nodata: Option<String>,
}

impl MainTags {
    fn new(raster: &Raster, meta: &RasterMeta, nodata: Option<f64>) -> Self {
        let g = &raster.grid;
        Self {
            bits: (raster.data.bytes_per_value() * 8) as u16,
            bands: raster.n_bands() as u16,
            description: meta.description.clone(),
            scale: [g.cell_size_m, g.cell_size_m, 0.0],
            tiepoint: [0.0, 0.0, 0.0, g.x_min_m, g.y_max_m, 0.0],
            geo_keys: geo_keys(meta.crs_epsg),
            gdal_metadata: gdal_metadata_xml(
                &raster.band_names,
                meta.units.as_deref(),
                &meta.provenance,
            ),
            nodata: nodata.map(|v| {
                if v.is_nan() {
                    "nan".to_string()
                } else {
                    format_f64(v)
                }
            }),
        }
    }
}

/// One IFD entry: tag, type, count and the value's bytes (little-endian).
struct Entry {
    tag: u16,
    kind: u16,
    count: u64,
    bytes: Vec<u8>,
}

fn shorts(tag: u16, v: &[u16]) -> Entry {
    Entry {
        tag,
        kind: TYPE_SHORT,
        count: v.len() as u64,
        bytes: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
    }
}

fn long(tag: u16, v: u32) -> Entry {
    Entry {
        tag,
        kind: TYPE_LONG,
        count: 1,
        bytes: v.to_le_bytes().to_vec(),
    }
}

fn doubles(tag: u16, v: &[f64]) -> Entry {
    Entry {
        tag,
        kind: TYPE_DOUBLE,
        count: v.len() as u64,
        bytes: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
    }
}

/// An ASCII tag from UTF-8 text (GDAL reads these bytes as UTF-8), NUL-terminated.
fn ascii(tag: u16, text: &str) -> Entry {
    let mut bytes: Vec<u8> = text.bytes().filter(|&b| b != 0).collect();
    bytes.push(0);
    Entry {
        tag,
        kind: TYPE_ASCII,
        count: bytes.len() as u64,
        bytes,
    }
}

/// Offsets (LONG, or LONG8 in BigTIFF).
fn offsets(tag: u16, v: &[u64], big: bool) -> Entry {
    if big {
        Entry {
            tag,
            kind: TYPE_LONG8,
            count: v.len() as u64,
            bytes: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        }
    } else {
        Entry {
            tag,
            kind: TYPE_LONG,
            count: v.len() as u64,
            bytes: v.iter().flat_map(|&x| (x as u32).to_le_bytes()).collect(),
        }
    }
}

/// Where everything goes: the header and ghost bytes, each IFD's bytes (at consecutive
/// offsets), and where the tile data starts; `end` is the file size.
struct Layout {
    prefix: Vec<u8>,
    ifds: Vec<Vec<u8>>,
    end: u64,
}

/// Lay the file out: header, ghost area, IFDs (level 0 first), then tiles (last level first).
fn plan(levels: &[Level], tags: &MainTags, big: bool) -> Layout {
    let mut prefix = Vec::new();
    if big {
        prefix.extend_from_slice(b"II\x2b\x00\x08\x00\x00\x00");
        prefix.extend_from_slice(&0u64.to_le_bytes()); // first IFD, patched below
    } else {
        prefix.extend_from_slice(b"II\x2a\x00");
        prefix.extend_from_slice(&0u32.to_le_bytes());
    }
    prefix.extend_from_slice(
        format!(
            "GDAL_STRUCTURAL_METADATA_SIZE={:06} bytes\n",
            GHOST_BODY.len()
        )
        .as_bytes(),
    );
    prefix.extend_from_slice(GHOST_BODY.as_bytes());
    if prefix.len() % 2 == 1 {
        prefix.push(0);
    }
    let first_ifd = prefix.len() as u64;
    if big {
        prefix[8..16].copy_from_slice(&first_ifd.to_le_bytes());
    } else {
        prefix[4..8].copy_from_slice(&(first_ifd as u32).to_le_bytes());
    }

    // Entries with placeholder tile offsets give each IFD's size, which does not depend on the
    // offsets' values.
    let entries = |offs: &[Vec<u64>]| -> Vec<Vec<Entry>> {
        levels
            .iter()
            .enumerate()
            .map(|(i, l)| level_entries(i, l, tags, &offs[i], big))
            .collect()
    };
    let zero_offsets: Vec<Vec<u64>> = levels.iter().map(|l| vec![0; l.tiles.len()]).collect();
    let sizes: Vec<u64> = entries(&zero_offsets)
        .iter()
        .map(|e| ifd_size(e, big))
        .collect();
    let data_start = first_ifd + sizes.iter().sum::<u64>();
    // Tile data, smallest overview first; each tile is framed by a 4-byte leader and trailer.
    let mut tile_offsets: Vec<Vec<u64>> = vec![Vec::new(); levels.len()];
    let mut at = data_start;
    for (i, l) in levels.iter().enumerate().rev() {
        for t in &l.tiles {
            at += 4;
            tile_offsets[i].push(at);
            at += t.len() as u64 + 4;
        }
    }
    let all = entries(&tile_offsets);
    let mut ifds = Vec::with_capacity(all.len());
    let mut ifd_at = first_ifd;
    for (i, e) in all.iter().enumerate() {
        let next = if i + 1 < all.len() {
            ifd_at + sizes[i]
        } else {
            0
        };
        let bytes = serialize_ifd(e, ifd_at, next, big);
        ifd_at += bytes.len() as u64;
        ifds.push(bytes);
    }
    Layout {
        prefix,
        ifds,
        end: at,
    }
}

/// The entries of level `i` (0 = full resolution), sorted by tag.
fn level_entries(i: usize, l: &Level, t: &MainTags, offs: &[u64], big: bool) -> Vec<Entry> {
    let bands = usize::from(t.bands);
    let counts: Vec<u64> = l.tiles.iter().map(|x| x.len() as u64).collect();
    let mut e = vec![
        long(TAG_IMAGE_WIDTH, l.cols as u32),
        long(TAG_IMAGE_LENGTH, l.rows as u32),
        shorts(TAG_BITS_PER_SAMPLE, &vec![t.bits; bands]),
        shorts(TAG_COMPRESSION, &[COMPRESSION_DEFLATE]),
        shorts(TAG_PHOTOMETRIC, &[1]), // MinIsBlack
        shorts(TAG_SAMPLES_PER_PIXEL, &[t.bands]),
        shorts(TAG_PLANAR_CONFIGURATION, &[2]), // separate planes
        shorts(TAG_PREDICTOR, &[PREDICTOR_FLOATING_POINT]),
        shorts(TAG_TILE_WIDTH, &[TILE_SIZE as u16]),
        shorts(TAG_TILE_LENGTH, &[TILE_SIZE as u16]),
        offsets(TAG_TILE_OFFSETS, offs, big),
        offsets(TAG_TILE_BYTE_COUNTS, &counts, big),
        shorts(TAG_SAMPLE_FORMAT, &vec![3; bands]), // IEEE floating point
    ];
    if bands > 1 {
        e.push(shorts(TAG_EXTRA_SAMPLES, &vec![0; bands - 1])); // unspecified
    }
    if let Some(nd) = &t.nodata {
        e.push(ascii(TAG_GDAL_NODATA, nd));
    }
    if i == 0 {
        if let Some(d) = &t.description {
            e.push(ascii(TAG_IMAGE_DESCRIPTION, d));
        }
        e.push(ascii(TAG_SOFTWARE, "geofield"));
        e.push(doubles(TAG_MODEL_PIXEL_SCALE, &t.scale));
        e.push(doubles(TAG_MODEL_TIEPOINT, &t.tiepoint));
        e.push(shorts(TAG_GEO_KEY_DIRECTORY, &t.geo_keys));
        e.push(ascii(TAG_GDAL_METADATA, &t.gdal_metadata));
    } else {
        e.push(long(TAG_NEW_SUBFILE_TYPE, 1)); // reduced-resolution image
    }
    e.sort_by_key(|x| x.tag);
    e
}

/// Bytes of an IFD with its out-of-line values (each starting on a word boundary).
fn ifd_size(entries: &[Entry], big: bool) -> u64 {
    let (head, entry, next, inline) = if big { (8, 20, 8, 8) } else { (2, 12, 4, 4) };
    let mut n = head + entry * entries.len() as u64 + next;
    for e in entries {
        let len = e.bytes.len() as u64;
        if len > inline {
            n += len + len % 2;
        }
    }
    n
}

/// An IFD at file offset `at` with its out-of-line values right after it; `next` is the offset
/// of the next IFD (0 for the last).
fn serialize_ifd(entries: &[Entry], at: u64, next: u64, big: bool) -> Vec<u8> {
    let (head, entry_len, next_len, inline) = if big { (8, 20, 8, 8) } else { (2, 12, 4, 4) };
    let mut extra_at = at + head + entry_len * entries.len() as u64 + next_len;
    let mut table = Vec::new();
    let mut extra = Vec::new();
    if big {
        table.extend_from_slice(&(entries.len() as u64).to_le_bytes());
    } else {
        table.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    }
    for e in entries {
        table.extend_from_slice(&e.tag.to_le_bytes());
        table.extend_from_slice(&e.kind.to_le_bytes());
        if big {
            table.extend_from_slice(&e.count.to_le_bytes());
        } else {
            table.extend_from_slice(&(e.count as u32).to_le_bytes());
        }
        let len = e.bytes.len() as u64;
        if len <= inline {
            let mut v = e.bytes.clone();
            v.resize(inline as usize, 0);
            table.extend_from_slice(&v);
        } else {
            if big {
                table.extend_from_slice(&extra_at.to_le_bytes());
            } else {
                table.extend_from_slice(&(extra_at as u32).to_le_bytes());
            }
            extra.extend_from_slice(&e.bytes);
            if len % 2 == 1 {
                extra.push(0);
            }
            extra_at += len + len % 2;
        }
    }
    if big {
        table.extend_from_slice(&next.to_le_bytes());
    } else {
        table.extend_from_slice(&(next as u32).to_le_bytes());
    }
    table.extend_from_slice(&extra);
    table
}

/// Write the planned file: prefix, IFDs, then framed tiles (smallest overview first).
fn write_file(w: &mut dyn Write, layout: &Layout, levels: &[Level]) -> std::io::Result<()> {
    w.write_all(&layout.prefix)?;
    for ifd in &layout.ifds {
        w.write_all(ifd)?;
    }
    for l in levels.iter().rev() {
        for t in &l.tiles {
            w.write_all(&(t.len() as u32).to_le_bytes())?;
            w.write_all(t)?;
            let tail = &t[t.len().saturating_sub(4)..];
            w.write_all(tail)?;
            // A tile shorter than 4 bytes (never with zlib) still gets a 4-byte trailer.
            w.write_all(&[0u8; 4][..4 - tail.len()])?;
        }
    }
    Ok(())
}

/// The GeoKeyDirectory: header (version 1, revision 1.0, key count) then sorted
/// (key id, location 0 = value inline, count 1, value) entries.
fn geo_keys(crs_epsg: Option<u16>) -> Vec<u16> {
    let geographic = crs_epsg.and_then(crate::crs::is_geographic) == Some(true);
    let model = if geographic {
        MODEL_TYPE_GEOGRAPHIC
    } else {
        MODEL_TYPE_PROJECTED
    };
    let mut keys = vec![
        [KEY_GT_MODEL_TYPE, 0, 1, model],
        [KEY_GT_RASTER_TYPE, 0, 1, RASTER_PIXEL_IS_AREA],
    ];
    match crs_epsg {
        Some(epsg) if geographic => keys.push([KEY_GEOGRAPHIC_TYPE, 0, 1, epsg]),
        Some(epsg) => keys.push([KEY_PROJECTED_CS_TYPE, 0, 1, epsg]),
        None => keys.push([KEY_PROJ_LINEAR_UNITS, 0, 1, LINEAR_UNIT_METRE]),
    }
    let mut out = vec![1, 1, 0, keys.len() as u16];
    out.extend(keys.into_iter().flatten());
    out
}

/// GDAL's metadata: dataset items (provenance) and per-band names and units, XML-escaped.
pub(crate) fn gdal_metadata_xml(
    band_names: &[String],
    units: Option<&str>,
    provenance: &[(String, String)],
) -> String {
    let mut xml = String::from("<GDALMetadata>\n");
    for (k, v) in provenance {
        xml.push_str(&format!(
            "  <Item name=\"{}\">{}</Item>\n",
            xml_escape(k),
            xml_escape(v)
        ));
    }
    for (i, name) in band_names.iter().enumerate() {
        xml.push_str(&format!(
            "  <Item name=\"DESCRIPTION\" sample=\"{i}\" role=\"description\">{}</Item>\n",
            xml_escape(name)
        ));
        if let Some(u) = units {
            xml.push_str(&format!(
                "  <Item name=\"UNITTYPE\" sample=\"{i}\" role=\"unittype\">{}</Item>\n",
                xml_escape(u)
            ));
        }
    }
    xml.push_str("</GDALMetadata>");
    xml
}

fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geo_keys_layout() {
        assert_eq!(
            geo_keys(Some(32633)),
            [1, 1, 0, 3, 1024, 0, 1, 1, 1025, 0, 1, 1, 3072, 0, 1, 32633]
        );
        assert_eq!(geo_keys(None)[3], 3);
        assert_eq!(&geo_keys(None)[12..], [3076, 0, 1, 9001]);
        assert_eq!(
            geo_keys(Some(4326)),
            [1, 1, 0, 3, 1024, 0, 1, 2, 1025, 0, 1, 1, 2048, 0, 1, 4326]
        );
    }

    #[test]
    fn metadata_escapes_names() {
        let xml = gdal_metadata_xml(
            &["a<b & \"c\"".to_string()],
            Some("seeds/m²"),
            &[("command_line".into(), "geofield a<b".into())],
        );
        assert!(xml.contains(">a&lt;b &amp; &quot;c&quot;</Item>"), "{xml}");
        assert!(xml.contains("role=\"unittype\">seeds/m²</Item>"), "{xml}");
        assert!(
            xml.contains("<Item name=\"command_line\">geofield a&lt;b</Item>"),
            "{xml}"
        );
    }

    #[test]
    fn predictor_matches_its_definition() {
        // Two f32 values, 1.0 (0x3f800000) and 2.0 (0x40000000): planes by significance
        // [3f 40 | 80 00 | 00 00 | 00 00], then differences from the previous byte.
        let le: Vec<u8> = [1.0f32, 2.0].iter().flat_map(|x| x.to_le_bytes()).collect();
        let mut out = vec![0; 8];
        floating_point_predictor(&le, &mut out, 4);
        let planes = [0x3fu8, 0x40, 0x80, 0x00, 0, 0, 0, 0];
        let mut expected = planes;
        for j in (1..8).rev() {
            expected[j] = planes[j].wrapping_sub(planes[j - 1]);
        }
        assert_eq!(out, expected);
    }

    #[test]
    fn overviews_average_valid_cells() {
        // 3 x 3 with one NaN: the 2 x 2 overview's cells cover (2x2, 1x2, 2x1, 1x1) cells.
        let v = [1.0f64, 2.0, 3.0, 4.0, f64::NAN, 6.0, 7.0, 8.0, 9.0];
        let (o, c, r) = downsample(&v, 3, 3, 1, None);
        assert_eq!((c, r), (2, 2));
        assert_eq!(o, vec![(1.0 + 2.0 + 4.0) / 3.0, 4.5, 7.5, 9.0]);
        let (o, ..) = downsample(&[-9999.0f32, -9999.0, 5.0, -9999.0], 2, 2, 1, Some(-9999.0));
        assert_eq!(o, vec![5.0]);
        let (o, ..) = downsample(&[f32::NAN; 4], 2, 2, 1, None);
        assert!(o[0].is_nan());
    }
}
