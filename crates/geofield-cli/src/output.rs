//! Writing results: rasters by extension, PNG maps, JSON summaries. Paths are checked before any
//! computation so that a bad path fails fast, and every file is written atomically.

use std::path::Path;

use anyhow::{Context, Result};
use geofield_core::Raster;
use geofield_io::{Colormap, Layout, RasterMeta, RenderOptions, Scale};

/// Check a single output path (a bench's `--json`) before measuring; see [`crate::outputs`].
pub fn preflight(path: &Path) -> Result<()> {
    crate::outputs::Outputs::new().plan("--json", path, crate::outputs::Kind::File)
}

/// Write the raster (GeoTIFF, ESRI ASCII or NPY by extension); returns the files written.
pub fn write_raster(
    path: &Path,
    raster: &Raster,
    units: &str,
    description: &str,
    crs_epsg: Option<u16>,
) -> Result<Vec<std::path::PathBuf>> {
    let meta = RasterMeta {
        crs_epsg,
        nodata: None,
        units: Some(units.to_string()),
        description: Some(description.to_string()),
    };
    Ok(geofield_io::write_raster(path, raster, &meta)?)
}

/// The colour maps a PNG can use (clap's list for `--colormap`).
pub const COLORMAPS: [&str; 3] = ["viridis", "magma", "cividis"];

/// Render the raster's bands to a PNG.
pub fn write_png(
    path: &Path,
    raster: &Raster,
    title: &str,
    units: &str,
    blend: bool,
    log: bool,
    colormap: &str,
) -> Result<()> {
    let colormap = Colormap::from_name(colormap)
        .with_context(|| format!("unknown colour map {colormap:?}: {}", COLORMAPS.join(", ")))?;
    let opts = RenderOptions {
        title: title.to_string(),
        units: units.to_string(),
        colormap,
        scale: if log {
            Scale::Log {
                floor_fraction: 1e-4,
            }
        } else {
            Scale::Linear
        },
        layout: if blend { Layout::Blend } else { Layout::Panels },
        max_pixels: 4_000_000,
        markers: Vec::new(),
    };
    geofield_io::render_png(path, raster, &opts)?;
    Ok(())
}

/// Serialise `value` as pretty JSON to `path`, atomically.
pub fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(value)?;
    geofield_io::write_atomic(path, |w| w.write_all(text.as_bytes()))?;
    Ok(())
}

/// The paths, comma separated, for a "wrote ..." line.
pub fn joined(paths: &[std::path::PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
