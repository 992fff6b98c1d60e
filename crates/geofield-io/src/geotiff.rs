//! GeoTIFF output: one band per raster layer, readable by GDAL, QGIS and rasterio.
//!
//! Structure of the file (TIFF 6.0 plus the GeoTIFF 1.0 and GDAL private tags):
//!
//! - one image, `SamplesPerPixel` = number of bands, `PlanarConfiguration` = 2 (separate planes:
//!   all strips of band 0, then band 1, ...), which is exactly the raster's band-major layout, so
//!   every strip is written straight from the raster's memory without a copy;
//! - `SampleFormat` = 3 (IEEE float), 32 or 64 bits as the raster's precision, uncompressed
//!   strips of about [`STRIP_BYTES`]; `Photometric` = MinIsBlack with the bands after the first
//!   declared as unspecified `ExtraSamples` (what GDAL itself writes);
//! - georeferencing: `ModelPixelScaleTag` = (cell, cell, 0), `ModelTiepointTag` = raster
//!   (0, 0, 0) at world (x_min, y_max, 0), and a `GeoKeyDirectoryTag` with GTModelType =
//!   Projected, GTRasterType = PixelIsArea and ProjectedCSType = the EPSG code when known
//!   (otherwise only the linear unit, metre);
//! - `GDAL_METADATA` (42112): XML with each band's name (`DESCRIPTION`) and units (`UNITTYPE`);
//!   `GDAL_NODATA` (42113): the nodata value as text.
//!
//! Files whose data would pass [`BIGTIFF_THRESHOLD_BYTES`] are written as BigTIFF (64-bit
//! offsets), which GDAL reads transparently.

use std::io::{Seek, Write};
use std::path::Path;

use geofield_core::{Raster, RasterData};
use tiff::encoder::{DirectoryEncoder, TiffEncoder, TiffKind, TiffKindBig, TiffKindStandard};
use tiff::tags::{Tag, Type};
use tiff::{Directory, TiffResult};

use crate::IoError;
use crate::atomic::{Staged, commit};
use crate::raster_out::{RasterMeta, check_shape, format_f64};

/// Target size of one strip.
pub const STRIP_BYTES: usize = 1 << 20;
/// Data size above which BigTIFF is used (classic TIFF offsets stop at 4 GiB; this leaves room
/// for the tags).
pub const BIGTIFF_THRESHOLD_BYTES: u64 = 3_900_000_000;

/// TIFF tag numbers this writer uses that the tiff crate has no name for.
const TAG_GDAL_METADATA: u16 = 42112;
/// GeoKey ids and values (GeoTIFF 1.0 spec, section 6).
const KEY_GT_MODEL_TYPE: u16 = 1024;
const KEY_GT_RASTER_TYPE: u16 = 1025;
const KEY_PROJECTED_CS_TYPE: u16 = 3072;
const KEY_PROJ_LINEAR_UNITS: u16 = 3076;
const MODEL_TYPE_PROJECTED: u16 = 1;
const RASTER_PIXEL_IS_AREA: u16 = 1;
const LINEAR_UNIT_METRE: u16 = 9001;

/// When to write BigTIFF (64-bit offsets) instead of classic TIFF.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BigTiff {
    /// Only when the data passes [`BIGTIFF_THRESHOLD_BYTES`] (GDAL's `BIGTIFF=IF_NEEDED`).
    #[default]
    IfNeeded,
    /// Always (GDAL's `BIGTIFF=YES`).
    Always,
}

/// Write `raster` to `path` as a GeoTIFF (atomically), BigTIFF only when needed.
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
    let data_bytes = raster.data.len() as u64 * raster.data.bytes_per_value() as u64;
    let tiff_error = |e: tiff::TiffError| IoError::Tiff {
        path: path.to_path_buf(),
        reason: e.to_string(),
    };
    let mut staged = Staged::create(path)?;
    staged.with_writer(|w| {
        if bigtiff == BigTiff::Always || data_bytes > BIGTIFF_THRESHOLD_BYTES {
            let mut enc = TiffEncoder::new_big(w).map_err(tiff_error)?;
            encode::<_, TiffKindBig>(&mut enc, raster, meta).map_err(tiff_error)
        } else {
            let mut enc = TiffEncoder::new(w).map_err(tiff_error)?;
            encode::<_, TiffKindStandard>(&mut enc, raster, meta).map_err(tiff_error)
        }
    })?;
    commit(vec![staged]).map(|_| ())
}

/// Write the image directory and strips of `raster` through `enc`.
fn encode<W: Write + Seek, K: TiffKind>(
    enc: &mut TiffEncoder<W, K>,
    raster: &Raster,
    meta: &RasterMeta,
) -> TiffResult<()> {
    let (rows, cols, bands) = (raster.grid.rows, raster.grid.cols, raster.n_bands());
    let bytes_per_value = raster.data.bytes_per_value();
    let rows_per_strip = (STRIP_BYTES / (cols * bytes_per_value)).clamp(1, rows);
    let band_len = rows * cols;
    let strip_len = rows_per_strip * cols;

    let mut dir = enc.image_directory()?;
    // Pixel data first (the IFD goes after it): planar order, band by band, strip by strip.
    let mut offsets = Vec::new();
    let mut byte_counts = Vec::new();
    let mut put = |offset: u64, values: usize| -> TiffResult<()> {
        offsets.push(K::convert_offset(offset)?);
        byte_counts.push(K::convert_offset((values * bytes_per_value) as u64)?);
        Ok(())
    };
    match &raster.data {
        RasterData::F32(v) => {
            for strip in v.chunks(band_len).flat_map(|band| band.chunks(strip_len)) {
                put(dir.write_data(strip)?, strip.len())?;
            }
        }
        RasterData::F64(v) => {
            for strip in v.chunks(band_len).flat_map(|band| band.chunks(strip_len)) {
                put(dir.write_data(strip)?, strip.len())?;
            }
        }
    }

    let bits = (bytes_per_value * 8) as u16;
    dir.write_tag(Tag::ImageWidth, u32::try_from(cols)?)?;
    dir.write_tag(Tag::ImageLength, u32::try_from(rows)?)?;
    dir.write_tag(Tag::BitsPerSample, &vec![bits; bands][..])?;
    dir.write_tag(Tag::Compression, 1u16)?;
    dir.write_tag(Tag::PhotometricInterpretation, 1u16)?; // MinIsBlack
    dir.write_tag(Tag::StripOffsets, K::convert_slice(&offsets))?;
    dir.write_tag(Tag::SamplesPerPixel, u16::try_from(bands)?)?;
    dir.write_tag(Tag::RowsPerStrip, u32::try_from(rows_per_strip)?)?;
    dir.write_tag(Tag::StripByteCounts, K::convert_slice(&byte_counts))?;
    dir.write_tag(Tag::PlanarConfiguration, 2u16)?; // separate planes
    if bands > 1 {
        dir.write_tag(Tag::ExtraSamples, &vec![0u16; bands - 1][..])?; // unspecified
    }
    dir.write_tag(Tag::SampleFormat, &vec![3u16; bands][..])?; // IEEE floating point

    let g = &raster.grid;
    dir.write_tag(
        Tag::ModelPixelScaleTag,
        &[g.cell_size_m, g.cell_size_m, 0.0][..],
    )?;
    dir.write_tag(
        Tag::ModelTiepointTag,
        &[0.0, 0.0, 0.0, g.x_min_m, g.y_max_m, 0.0][..],
    )?;
    dir.write_tag(Tag::GeoKeyDirectoryTag, &geo_keys(meta.crs_epsg)[..])?;

    // Text tags last (each followed by padding to an even offset).
    write_ascii(&mut dir, Tag::Software, "geofield")?;
    if let Some(d) = &meta.description {
        write_ascii(&mut dir, Tag::ImageDescription, d)?;
    }
    let xml = gdal_metadata_xml(&raster.band_names, meta.units.as_deref());
    write_ascii(&mut dir, Tag::from_u16_exhaustive(TAG_GDAL_METADATA), &xml)?;
    if let Some(nodata) = meta.nodata {
        let text = if nodata.is_nan() {
            "nan".to_string()
        } else {
            format_f64(nodata)
        };
        write_ascii(&mut dir, Tag::GdalNodata, &text)?;
    }
    dir.finish()
}

/// The GeoKeyDirectory: header (version 1, revision 1.0, key count) then sorted
/// (key id, location 0 = value inline, count 1, value) entries.
fn geo_keys(crs_epsg: Option<u16>) -> Vec<u16> {
    let mut keys = vec![
        [KEY_GT_MODEL_TYPE, 0, 1, MODEL_TYPE_PROJECTED],
        [KEY_GT_RASTER_TYPE, 0, 1, RASTER_PIXEL_IS_AREA],
    ];
    match crs_epsg {
        Some(epsg) => keys.push([KEY_PROJECTED_CS_TYPE, 0, 1, epsg]),
        None => keys.push([KEY_PROJ_LINEAR_UNITS, 0, 1, LINEAR_UNIT_METRE]),
    }
    let mut out = vec![1, 1, 0, keys.len() as u16];
    out.extend(keys.into_iter().flatten());
    out
}

/// GDAL's per-band metadata: band names and units, XML-escaped.
pub(crate) fn gdal_metadata_xml(band_names: &[String], units: Option<&str>) -> String {
    let mut xml = String::from("<GDALMetadata>\n");
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

/// Write an ASCII tag from UTF-8 text (GDAL reads these bytes as UTF-8; the tiff crate's own
/// `str` value refuses non-ASCII), then pad the file to an even offset so that whatever follows
/// (the IFD in particular) stays word-aligned as TIFF requires. The value itself is not padded:
/// libtiff warns about ASCII values with more than one NUL.
fn write_ascii<W: Write + Seek, K: TiffKind>(
    dir: &mut DirectoryEncoder<'_, W, K>,
    tag: Tag,
    text: &str,
) -> TiffResult<()> {
    let mut bytes: Vec<u8> = text.bytes().filter(|&b| b != 0).collect();
    bytes.push(0);
    let entry = dir.write_entry_bytes(Type::ASCII, &bytes)?;
    dir.extend_from(&Directory::from_iter([(tag, entry)]));
    // Writing nothing reports the current offset.
    let offset = dir.write_data(&[][..] as &[u8])?;
    if offset % 2 == 1 {
        dir.write_data(0u8)?;
    }
    Ok(())
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
    }

    #[test]
    fn metadata_escapes_names() {
        let xml = gdal_metadata_xml(&["a<b & \"c\"".to_string()], Some("seeds/m²"));
        assert!(xml.contains(">a&lt;b &amp; &quot;c&quot;</Item>"), "{xml}");
        assert!(xml.contains("role=\"unittype\">seeds/m²</Item>"), "{xml}");
    }
}
