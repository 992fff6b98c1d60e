//! Reading GeoTIFF rasters (the first image of the file), the counterpart of [`crate::geotiff`].
//!
//! - Layout: strips or tiles, one or more samples per pixel, chunky (`PlanarConfiguration` = 1)
//!   or planar (= 2); every sample becomes one band. Compression: whatever the `tiff` crate
//!   decodes (none, LZW, Deflate, PackBits, with or without a predictor).
//! - Sample types: unsigned 8/16/32-bit, signed 8/16/32-bit and IEEE float 32/64-bit. 8- and
//!   16-bit integers and f32 are returned as f32 (exactly), 32-bit integers and f64 as f64.
//! - Georeferencing: `ModelPixelScaleTag` (33550) with a single `ModelTiepointTag` (33922), or a
//!   `ModelTransformationTag` (34264) without rotation or shear. Pixels must be square (scale x
//!   = scale y to 1e-9 relative). The grid's corner is the outer corner of pixel (0, 0): when
//!   the GeoKeyDirectory says `GTRasterTypeGeoKey` (1025) = 2 (`PixelIsPoint`) the tie point is
//!   the *centre* of the pixel, so the grid is shifted half a cell west and north (what GDAL does
//!   by default).
//! - Metadata: `GDAL_NODATA` (42113) gives [`RasterMeta::nodata`] and cells equal to it become
//!   NaN; `ProjectedCSTypeGeoKey` (3072) gives the EPSG code (`GeographicTypeGeoKey` (2048)
//!   when `GTModelTypeGeoKey` (1024) says geographic); `GDAL_METADATA` (42112) gives band
//!   names (`DESCRIPTION` items, else `band1`, `band2`, ...) and units (the first `UNITTYPE`);
//!   `ImageDescription` gives the description.
//! - Sizes: before the decoder reads the first directory, its entry count and every tag's value
//!   size are checked against the file's length; the decoder's limits are then set from the file
//!   (a tag's values at most the file, a decoded strip or tile at most 2048 bytes per byte of
//!   the file, the most deflate or LZW can expand); and the image's declared samples must fit in
//!   the file (uncompressed: byte for byte; compressed: at most 2048:1) and their decoded values
//!   in the available memory, before the output is allocated. A corrupt header is an error that
//!   names the declared size.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use geofield_core::{GridSpec, Raster, RasterData};
use tiff::decoder::{ChunkType, Decoder, DecodingResult, Limits};
use tiff::tags::{PlanarConfiguration, Tag};

use crate::IoError;
use crate::raster_out::RasterMeta;

mod limits;

use limits::*;

const TAG_GDAL_METADATA: u16 = 42112;
const KEY_GT_RASTER_TYPE: u16 = 1025;
const KEY_PROJECTED_CS_TYPE: u16 = 3072;
const KEY_GT_MODEL_TYPE: u16 = 1024;
const KEY_GEOGRAPHIC_TYPE: u16 = 2048;
const MODEL_TYPE_GEOGRAPHIC: u16 = 2;
const RASTER_PIXEL_IS_POINT: u16 = 2;

/// Read the first image of a GeoTIFF with all its bands.
pub fn read_geotiff(path: &Path) -> Result<(Raster, RasterMeta), IoError> {
    let bad = |reason: String| IoError::BadGeoTiff {
        path: path.to_path_buf(),
        reason,
    };
    let file = File::open(path).map_err(|source| IoError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let file_len = file
        .metadata()
        .map_err(|source| IoError::Read {
            path: path.to_path_buf(),
            source,
        })?
        .len();
    // `Decoder::new` reads the first directory under the crate's default limits, which let a
    // tag's value count claim up to 256 MiB: the directory is checked against the file's length
    // first, and the limits are then tightened to what this file can hold.
    let mut file = file;
    precheck_first_ifd(&mut file, file_len).map_err(bad)?;
    let dec =
        Decoder::new(BufReader::new(file)).map_err(|e| bad(format!("not a readable TIFF: {e}")))?;
    let mut dec = dec.with_limits(file_limits(file_len));
    let tiff_err = |what: &str, e: tiff::TiffError| bad(format!("{what}: {e}"));

    let (width, height) = dec
        .dimensions()
        .map_err(|e| tiff_err("ImageWidth/ImageLength", e))?;
    let (cols, rows) = (width as usize, height as usize);
    let samples = dec
        .find_tag_unsigned::<u16>(Tag::SamplesPerPixel)
        .map_err(|e| tiff_err("SamplesPerPixel (277)", e))?
        .unwrap_or(1) as usize;
    if cols == 0 || rows == 0 || samples == 0 {
        return Err(bad(format!(
            "empty image ({cols} x {rows} pixels, {samples} samples)"
        )));
    }
    let planar = match dec
        .find_tag_unsigned::<u16>(Tag::PlanarConfiguration)
        .map_err(|e| tiff_err("PlanarConfiguration (284)", e))?
    {
        None | Some(1) => PlanarConfiguration::Chunky,
        Some(2) => PlanarConfiguration::Planar,
        Some(p) => {
            return Err(bad(format!(
                "PlanarConfiguration (284) = {p} is not 1 or 2"
            )));
        }
    };

    let grid = read_grid(&mut dec, cols, rows).map_err(bad)?;
    let geo_keys = dec
        .find_tag(Tag::GeoKeyDirectoryTag)
        .ok()
        .flatten()
        .and_then(|v| v.into_u16_vec().ok())
        .unwrap_or_default();
    let grid = if geo_key(&geo_keys, KEY_GT_RASTER_TYPE) == Some(RASTER_PIXEL_IS_POINT) {
        GridSpec {
            x_min_m: grid.x_min_m - 0.5 * grid.cell_size_m,
            y_max_m: grid.y_max_m + 0.5 * grid.cell_size_m,
            ..grid
        }
    } else {
        grid
    };
    // A geographic (longitude/latitude) model names its code in GeographicTypeGeoKey.
    let code_key = if geo_key(&geo_keys, KEY_GT_MODEL_TYPE) == Some(MODEL_TYPE_GEOGRAPHIC) {
        KEY_GEOGRAPHIC_TYPE
    } else {
        KEY_PROJECTED_CS_TYPE
    };
    let crs_epsg = geo_key(&geo_keys, code_key).filter(|&c| c != 0 && c != 32767);

    let nodata = match dec.find_tag(Tag::GdalNodata) {
        Ok(Some(v)) => {
            let text = v
                .into_string()
                .map_err(|e| tiff_err("GDAL_NODATA (42113)", e))?;
            let t = text.trim().trim_end_matches('\0').trim();
            Some(
                parse_nodata(t)
                    .ok_or_else(|| bad(format!("GDAL_NODATA (42113): \"{t}\" is not a number")))?,
            )
        }
        Ok(None) => None,
        Err(e) => return Err(tiff_err("GDAL_NODATA (42113)", e)),
    };
    let description = dec
        .find_tag(Tag::ImageDescription)
        .ok()
        .flatten()
        .and_then(|v| v.into_string().ok())
        .map(|s| s.trim_end_matches('\0').to_string())
        .filter(|s| !s.is_empty());
    let gdal_xml = dec
        .find_tag(Tag::from_u16_exhaustive(TAG_GDAL_METADATA))
        .ok()
        .flatten()
        .and_then(|v| v.into_string().ok())
        .unwrap_or_default();
    let (names, units) = parse_gdal_metadata(&gdal_xml, samples);
    let band_names = names
        .into_iter()
        .enumerate()
        .map(|(i, n)| n.unwrap_or_else(|| format!("band{}", i + 1)))
        .collect();

    check_declared_size(&mut dec, cols, rows, samples, file_len).map_err(|e| match e {
        SizeError::Bad(reason) => bad(reason),
        SizeError::Memory(e) => IoError::TooLarge {
            path: path.to_path_buf(),
            error: e,
        },
    })?;
    let data = read_samples(&mut dec, cols, rows, samples, planar, nodata).map_err(bad)?;
    let raster = Raster {
        grid,
        band_names,
        data,
    };
    let meta = RasterMeta {
        crs_epsg,
        nodata,
        units,
        description,
        ..RasterMeta::default()
    };
    Ok((raster, meta))
}

/// `nan`, `inf`, or a decimal number (GDAL writes e.g. `-3.4028234663852886e+38`).
fn parse_nodata(t: &str) -> Option<f64> {
    t.parse::<f64>().ok()
}

/// The inline value of `key` in a GeoKeyDirectory (header of 4 shorts, then 4 per key).
fn geo_key(dir: &[u16], key: u16) -> Option<u16> {
    dir.get(4..)?
        .chunks_exact(4)
        .find(|e| e[0] == key && e[1] == 0)
        .map(|e| e[3])
}

/// The grid from the georeferencing tags (corner of pixel (0, 0), before any PixelIsPoint shift).
fn read_grid<R: std::io::Read + std::io::Seek>(
    dec: &mut Decoder<R>,
    cols: usize,
    rows: usize,
) -> Result<GridSpec, String> {
    let doubles =
        |dec: &mut Decoder<R>, tag: Tag, name: &str| -> Result<Option<Vec<f64>>, String> {
            match dec.find_tag(tag) {
                Ok(Some(v)) => v
                    .into_f64_vec()
                    .map(Some)
                    .map_err(|e| format!("{name}: {e}")),
                Ok(None) => Ok(None),
                Err(e) => Err(format!("{name}: {e}")),
            }
        };
    let transform = doubles(
        dec,
        Tag::ModelTransformationTag,
        "ModelTransformationTag (34264)",
    )?;
    let (sx, sy, x0, y0) = if let Some(t) = transform {
        if t.len() != 16 {
            return Err(format!(
                "ModelTransformationTag (34264) has {} values, not 16",
                t.len()
            ));
        }
        if t[1] != 0.0 || t[4] != 0.0 {
            return Err(format!(
                "ModelTransformationTag (34264) has rotation or shear ({}, {}); rotated rasters are not supported, warp to a north-up grid first (gdalwarp)",
                t[1], t[4]
            ));
        }
        (t[0], -t[5], t[3], t[7])
    } else {
        let scale = doubles(dec, Tag::ModelPixelScaleTag, "ModelPixelScaleTag (33550)")?
            .ok_or("no georeferencing: neither ModelPixelScaleTag (33550) + ModelTiepointTag (33922) nor ModelTransformationTag (34264)")?;
        let tie = doubles(dec, Tag::ModelTiepointTag, "ModelTiepointTag (33922)")?
            .ok_or("ModelPixelScaleTag (33550) without a ModelTiepointTag (33922)")?;
        if scale.len() < 2 {
            return Err(format!(
                "ModelPixelScaleTag (33550) has {} values, not 3",
                scale.len()
            ));
        }
        if tie.len() != 6 {
            return Err(format!(
                "ModelTiepointTag (33922) has {} values; only a single tie point (6 values) is supported, not ground control points",
                tie.len()
            ));
        }
        let (sx, sy) = (scale[0], scale[1]);
        (sx, sy, tie[3] - tie[0] * sx, tie[4] + tie[1] * sy)
    };
    if !(sx.is_finite() && sx > 0.0 && sy.is_finite() && sy > 0.0) {
        return Err(format!(
            "pixel size {sx} x {sy} (ModelPixelScaleTag 33550 / ModelTransformationTag 34264) is not positive; south-up or flipped rasters are not supported"
        ));
    }
    if (sx - sy).abs() > 1e-9 * sx.max(sy) {
        return Err(format!(
            "pixel size {sx} x {sy} (ModelPixelScaleTag 33550): non-square pixels are not supported; resample to square pixels first (gdalwarp -tr)"
        ));
    }
    if !(x0.is_finite() && y0.is_finite()) {
        return Err("ModelTiepointTag (33922): the tie point is not finite".into());
    }
    Ok(GridSpec {
        x_min_m: x0,
        y_max_m: y0,
        cell_size_m: sx,
        cols,
        rows,
    })
}

/// Per-band names and the first unit from GDAL's metadata XML (`<Item name="DESCRIPTION"
/// sample="0" ...>name</Item>`). A small scanner: GDAL writes one item per line, attributes
/// in double quotes.
fn parse_gdal_metadata(xml: &str, bands: usize) -> (Vec<Option<String>>, Option<String>) {
    let mut names = vec![None; bands];
    let mut units = None;
    let mut rest = xml;
    while let Some(start) = rest.find("<Item") {
        rest = &rest[start + 5..];
        let Some(tag_end) = rest.find('>') else { break };
        let attrs = &rest[..tag_end];
        let body_start = tag_end + 1;
        let Some(close) = rest[body_start..].find("</Item>") else {
            break;
        };
        let body = xml_unescape(&rest[body_start..body_start + close]);
        rest = &rest[body_start + close..];
        let name = attr(attrs, "name");
        let sample = attr(attrs, "sample").and_then(|s| s.parse::<usize>().ok());
        match (name, sample) {
            (Some("DESCRIPTION"), Some(i)) if i < bands && !body.is_empty() => {
                names[i] = Some(body);
            }
            (Some("UNITTYPE"), Some(_)) if units.is_none() && !body.is_empty() => {
                units = Some(body);
            }
            _ => {}
        }
    }
    (names, units)
}

fn attr<'a>(attrs: &'a str, key: &str) -> Option<&'a str> {
    let pat = format!("{key}=\"");
    let mut from = 0;
    while let Some(p) = attrs[from..].find(&pat) {
        let at = from + p;
        // Require a separator before the key so that `name=` does not match inside `xname=`.
        if at == 0 || attrs[..at].ends_with(char::is_whitespace) {
            let v = &attrs[at + pat.len()..];
            return v.find('"').map(|end| &v[..end]);
        }
        from = at + pat.len();
    }
    None
}

fn xml_unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

/// Values of one decoded chunk: f32 for the sample types f32 holds exactly (8/16-bit integers,
/// f32), f64 for the others.
enum Chunk {
    F32(Vec<f32>),
    F64(Vec<f64>),
}

fn convert(result: DecodingResult) -> Result<Chunk, String> {
    Ok(match result {
        DecodingResult::U8(v) => Chunk::F32(v.into_iter().map(f32::from).collect()),
        DecodingResult::I8(v) => Chunk::F32(v.into_iter().map(f32::from).collect()),
        DecodingResult::U16(v) => Chunk::F32(v.into_iter().map(f32::from).collect()),
        DecodingResult::I16(v) => Chunk::F32(v.into_iter().map(f32::from).collect()),
        DecodingResult::F32(v) => Chunk::F32(v),
        DecodingResult::U32(v) => Chunk::F64(v.into_iter().map(f64::from).collect()),
        DecodingResult::I32(v) => Chunk::F64(v.into_iter().map(f64::from).collect()),
        DecodingResult::F64(v) => Chunk::F64(v),
        DecodingResult::U64(_) | DecodingResult::I64(_) => {
            return Err("64-bit integer samples (BitsPerSample 258 = 64, SampleFormat 339 = 1/2) are not supported; convert to f64 first".into());
        }
        DecodingResult::F16(_) => {
            return Err("16-bit float samples (BitsPerSample 258 = 16, SampleFormat 339 = 3) are not supported; convert to f32 first".into());
        }
    })
}

/// Decode every chunk (strip or tile, every plane) into band-major data, nodata cells as NaN.
fn read_samples<R: std::io::Read + std::io::Seek>(
    dec: &mut Decoder<R>,
    cols: usize,
    rows: usize,
    samples: usize,
    planar: PlanarConfiguration,
    nodata: Option<f64>,
) -> Result<RasterData, String> {
    let (chunk_w, chunk_h) = dec.chunk_dimensions();
    let (chunk_w, chunk_h) = (chunk_w as usize, chunk_h as usize);
    if chunk_w == 0 || chunk_h == 0 {
        return Err("zero-sized strips or tiles (RowsPerStrip 278 / TileWidth 322)".into());
    }
    let across = cols.div_ceil(chunk_w);
    let down = rows.div_ceil(chunk_h);
    let per_plane = across * down;
    let (planes, per_chunk_samples) = match planar {
        PlanarConfiguration::Planar => (samples, 1),
        _ => (1, samples),
    };
    let kind = match dec.get_chunk_type() {
        ChunkType::Strip => "strip",
        ChunkType::Tile => "tile",
    };
    let band_len = rows * cols;
    let total = band_len
        .checked_mul(samples)
        .ok_or("the image is too large to address")?;
    let mut out: Option<Chunk> = None;
    for plane in 0..planes {
        for i in 0..per_plane {
            let index = plane * per_plane + i;
            let index_u32 = u32::try_from(index).map_err(|_| "too many strips or tiles")?;
            let result = dec
                .read_chunk(index_u32)
                .map_err(|e| format!("{kind} {index}: {e}"))?;
            let chunk = convert(result)?;
            let (row0, col0) = ((i / across) * chunk_h, (i % across) * chunk_w);
            let h = chunk_h.min(rows - row0);
            let w = chunk_w.min(cols - col0);
            let out = out.get_or_insert_with(|| match chunk {
                Chunk::F32(_) => Chunk::F32(vec![f32::NAN; total]),
                Chunk::F64(_) => Chunk::F64(vec![f64::NAN; total]),
            });
            match (out, chunk) {
                (Chunk::F32(o), Chunk::F32(c)) => {
                    scatter(o, &c, row0, col0, w, h, cols, band_len, plane, per_chunk_samples)?
                }
                (Chunk::F64(o), Chunk::F64(c)) => {
                    scatter(o, &c, row0, col0, w, h, cols, band_len, plane, per_chunk_samples)?
                }
                _ => return Err("bands of different sample types (SampleFormat 339 / BitsPerSample 258) are not supported".into()),
            }
        }
    }
    Ok(match out {
        Some(Chunk::F32(mut v)) => {
            if let Some(nd) = nodata {
                let nd32 = nd as f32;
                v.iter_mut()
                    .filter(|x| **x == nd32)
                    .for_each(|x| *x = f32::NAN);
            }
            RasterData::F32(v)
        }
        Some(Chunk::F64(mut v)) => {
            if let Some(nd) = nodata {
                v.iter_mut()
                    .filter(|x| **x == nd)
                    .for_each(|x| *x = f64::NAN);
            }
            RasterData::F64(v)
        }
        None => return Err("the image has no strips or tiles".into()),
    })
}

/// Copy a decoded `w x h` chunk whose pixel (0, 0) is image pixel (`row0`, `col0`) into the
/// band-major output. Chunky chunks interleave `spp` samples per pixel (bands 0..spp); planar
/// chunks hold one sample of band `plane`.
#[allow(clippy::too_many_arguments)]
fn scatter<T: Copy>(
    out: &mut [T],
    chunk: &[T],
    row0: usize,
    col0: usize,
    w: usize,
    h: usize,
    cols: usize,
    band_len: usize,
    plane: usize,
    spp: usize,
) -> Result<(), String> {
    if chunk.len() < w * h * spp {
        return Err(format!(
            "a strip or tile decoded to {} values where {w} x {h} pixels x {spp} samples were expected",
            chunk.len()
        ));
    }
    for r in 0..h {
        let src_row = &chunk[r * w * spp..(r + 1) * w * spp];
        for s in 0..spp {
            let band = plane + s;
            let dst = band * band_len + (row0 + r) * cols + col0;
            for c in 0..w {
                out[dst + c] = src_row[c * spp + s];
            }
        }
    }
    Ok(())
}
