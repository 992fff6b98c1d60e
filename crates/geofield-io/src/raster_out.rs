//! Writing rasters, with the format chosen by the file extension (DESIGN.md "Data conventions"):
//!
//! | extension | format | bands |
//! | --- | --- | --- |
//! | `.tif`, `.tiff` | Cloud-Optimized GeoTIFF ([`geotiff`]: tiled, DEFLATE with the floating-point predictor, overviews), georeferenced, band names, units and provenance in GDAL metadata | one file, N bands |
//! | `.asc` | ESRI ASCII grid, with a `.prj` (WKT) beside each file when the CRS is known | one file per band (`<stem>_<band>.asc` when N > 1), plus `<file stem>.prj` |
//! | `.npy` | NumPy array of shape (bands, rows, cols) in the raster's precision | one file |

use std::path::{Path, PathBuf};

use geofield_core::{Raster, RasterData};

use crate::{IoError, ascii_grid, geotiff, npy};

/// Extensions [`write_raster`] understands, as listed in its error message.
pub const SUPPORTED_RASTER_EXTENSIONS: &str = ".tif, .tiff, .asc, .npy";

/// Metadata written alongside a raster where the format can hold it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RasterMeta {
    /// EPSG code of the coordinate reference system: GeoTIFF GeoKeys, and the `.prj` sidecar
    /// (WKT, see [`crate::crs`]) of ESRI ASCII grids.
    pub crs_epsg: Option<u16>,
    /// Value that marks missing data (GeoTIFF `GDAL_NODATA`, ASCII `NODATA_value`). Without
    /// one, a GeoTIFF that holds NaN declares `nan` and an ESRI ASCII grid
    /// [`crate::ascii_grid::DEFAULT_NODATA`].
    pub nodata: Option<f64>,
    /// Units of the values, e.g. "seeds m-2" (GeoTIFF band unit type, on every band).
    pub units: Option<String>,
    /// A one-line description of the whole raster (GeoTIFF ImageDescription).
    pub description: Option<String>,
    /// Provenance as key/value items, e.g. `("geofield_version", "0.1.0")`, `("command_line",
    /// ...)`, `("method", "ordinary kriging")` and the method's parameters (GeoTIFF dataset
    /// metadata items in `GDAL_METADATA`).
    pub provenance: Vec<(String, String)>,
    /// How GeoTIFF tiles are compressed (other formats ignore it).
    pub compression: geotiff::Compression,
}

/// Whether a file of `format` records where the raster lies (GeoTIFF and ESRI ASCII do; NPY
/// holds only the values). A caller writing such a file with no [`RasterMeta::crs_epsg`] may
/// want to warn that the coordinates have no declared system.
pub fn format_is_georeferenced(format: RasterFormat) -> bool {
    !matches!(format, RasterFormat::Npy)
}

/// Raster file formats, chosen by extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RasterFormat {
    /// `.tif` / `.tiff`.
    GeoTiff,
    /// `.asc`.
    AsciiGrid,
    /// `.npy`.
    Npy,
}

impl RasterFormat {
    /// The format for `path`'s extension (case-insensitive); an error lists the supported ones.
    pub fn from_path(path: &Path) -> Result<Self, IoError> {
        let ext = path.extension().map(|e| e.to_string_lossy().to_lowercase());
        match ext.as_deref() {
            Some("tif" | "tiff") => Ok(Self::GeoTiff),
            Some("asc") => Ok(Self::AsciiGrid),
            Some("npy") => Ok(Self::Npy),
            other => Err(IoError::UnsupportedFormat {
                path: path.to_path_buf(),
                ext: other.map_or_else(|| "(no extension)".to_string(), |e| format!(".{e}")),
                supported: SUPPORTED_RASTER_EXTENSIONS.to_string(),
            }),
        }
    }
}

/// Write `raster` to `path` in the format its extension names; returns the files written (more
/// than one for a multi-band `.asc`). Each file is written atomically.
pub fn write_raster(
    path: &Path,
    raster: &Raster,
    meta: &RasterMeta,
) -> Result<Vec<PathBuf>, IoError> {
    let format = RasterFormat::from_path(path)?;
    check_shape(path, raster)?;
    match format {
        RasterFormat::GeoTiff => {
            geotiff::write_geotiff(path, raster, meta)?;
            Ok(vec![path.to_path_buf()])
        }
        RasterFormat::AsciiGrid => ascii_grid::write_ascii_grids(path, raster, meta),
        RasterFormat::Npy => {
            let shape = [raster.n_bands(), raster.grid.rows, raster.grid.cols];
            match &raster.data {
                RasterData::F32(v) => npy::write_npy_f32(path, &shape, v)?,
                RasterData::F64(v) => npy::write_npy_f64(path, &shape, v)?,
            }
            Ok(vec![path.to_path_buf()])
        }
    }
}

/// Check that the raster's data length matches its bands and grid (its fields are public, so
/// this cannot be taken for granted) and that it has at least one band and cell.
pub(crate) fn check_shape(path: &Path, raster: &Raster) -> Result<(), IoError> {
    let invalid = |reason: String| IoError::InvalidOutput {
        path: path.to_path_buf(),
        reason,
    };
    let (bands, rows, cols) = (raster.n_bands(), raster.grid.rows, raster.grid.cols);
    if bands == 0 {
        return Err(invalid("the raster has no bands".to_string()));
    }
    if rows == 0 || cols == 0 {
        return Err(invalid(format!(
            "the raster grid is empty ({cols} x {rows} cells)"
        )));
    }
    let expected = bands.checked_mul(rows).and_then(|n| n.checked_mul(cols));
    if expected != Some(raster.data.len()) {
        return Err(invalid(format!(
            "the raster holds {} values but {bands} bands x {rows} rows x {cols} cols need {}",
            raster.data.len(),
            expected.map_or_else(
                || "more than can be addressed".to_string(),
                |n| n.to_string()
            )
        )));
    }
    Ok(())
}

/// Text for a number that parses back to the same value: shortest round-trip digits, in plain
/// notation for moderate magnitudes and exponent notation (`1.5e-9`) otherwise, so that tiny or
/// huge values do not print hundreds of digits.
pub(crate) fn format_f64(v: f64) -> String {
    let a = v.abs();
    if v == 0.0 || !v.is_finite() || (1e-5..1e15).contains(&a) {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}

/// As [`format_f64`] for an f32 value (shortest digits that round-trip in f32).
pub(crate) fn format_f32(v: f32) -> String {
    let a = v.abs();
    if v == 0.0 || !v.is_finite() || (1e-5..1e15).contains(&a) {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_round_trip_and_stay_short() {
        for v in [0.1f64, 1.0 / 3.0, 1e-300, 6.02e23, -2.5, 123456.789, 3e-7] {
            let s = format_f64(v);
            assert_eq!(s.parse::<f64>().unwrap(), v, "{s}");
            assert!(s.len() < 25, "{s}");
        }
        for v in [0.1f32, 1.0 / 3.0, 1e-30, 3.4e38, -7.25] {
            let s = format_f32(v);
            assert_eq!(s.parse::<f32>().unwrap(), v, "{s}");
            assert!(s.len() < 16, "{s}");
        }
        assert_eq!(format_f64(-9999.0), "-9999");
        assert_eq!(format_f64(1e-9), "1e-9");
    }

    #[test]
    fn format_from_extension() {
        assert_eq!(
            RasterFormat::from_path(Path::new("a/b.TIF")).unwrap(),
            RasterFormat::GeoTiff
        );
        assert_eq!(
            RasterFormat::from_path(Path::new("b.asc")).unwrap(),
            RasterFormat::AsciiGrid
        );
        let e = RasterFormat::from_path(Path::new("b.png"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("\".png\"") && e.contains(".tif, .tiff, .asc, .npy"),
            "{e}"
        );
        let e = RasterFormat::from_path(Path::new("noext"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no extension"), "{e}");
    }
}
