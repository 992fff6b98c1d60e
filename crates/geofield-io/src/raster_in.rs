//! Reading rasters, with the format chosen by the file extension, e.g. a digital elevation model
//! for the wind field's `--dem`:
//!
//! | extension | reader | bands | values |
//! | --- | --- | --- | --- |
//! | `.tif`, `.tiff` | [`read_geotiff`](crate::geotiff_in::read_geotiff) | all samples of the first image | f32 for 8/16-bit integers and f32, else f64 |
//! | `.asc` | [`read_ascii_grid`](crate::ascii_grid_in::read_ascii_grid) | one | f64 |
//!
//! `.npy` is refused: it holds an array but no georeferencing. Nodata cells are NaN in the
//! returned raster, and [`RasterMeta::nodata`] keeps the value the file declared.

use std::path::Path;

use geofield_core::Raster;

use crate::raster_out::{RasterFormat, RasterMeta};
use crate::{IoError, ascii_grid_in, geotiff_in};

/// Extensions [`read_raster`] understands, as listed in its error message.
pub const READABLE_RASTER_EXTENSIONS: &str = ".tif, .tiff, .asc";

/// Read the raster at `path` by its extension (case-insensitive); see the module docs.
pub fn read_raster(path: &Path) -> Result<(Raster, RasterMeta), IoError> {
    let unsupported = |ext: String| IoError::UnsupportedInput {
        path: path.to_path_buf(),
        ext,
        supported: READABLE_RASTER_EXTENSIONS.to_string(),
    };
    match RasterFormat::from_path(path) {
        Ok(RasterFormat::GeoTiff) => geotiff_in::read_geotiff(path),
        Ok(RasterFormat::AsciiGrid) => ascii_grid_in::read_ascii_grid(path),
        Ok(RasterFormat::Npy) => Err(unsupported(
            ".npy (an NPY array carries no georeferencing; convert it to GeoTIFF or ESRI ASCII grid)"
                .to_string(),
        )),
        Err(IoError::UnsupportedFormat { ext, .. }) => Err(unsupported(format!("\"{ext}\""))),
        Err(e) => Err(e),
    }
}
