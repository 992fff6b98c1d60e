//! Writing results: rasters by extension, PNG maps, JSON summaries. Paths are checked before any
//! computation so that a bad path fails fast, and every file is written atomically.

use std::path::Path;

use anyhow::{Context, Result, bail};
use geofield_core::Raster;
use geofield_io::{Colormap, Layout, RasterFormat, RasterMeta, RenderOptions, Scale};

/// Fail early if `path` has an unsupported extension (when `raster`) or its folder is missing or
/// not writable.
pub fn preflight(path: &Path, raster: bool) -> Result<()> {
    if raster {
        RasterFormat::from_path(path)?;
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        bail!(
            "cannot write {}: folder {} does not exist",
            path.display(),
            dir.display()
        );
    }
    if path.is_dir() {
        bail!("cannot write {}: it is a folder", path.display());
    }
    tempfile::NamedTempFile::new_in(dir).with_context(|| {
        format!(
            "cannot write {}: folder {} is not writable",
            path.display(),
            dir.display()
        )
    })?;
    Ok(())
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
    let colormap = Colormap::from_name(colormap).unwrap_or(Colormap::Viridis);
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
