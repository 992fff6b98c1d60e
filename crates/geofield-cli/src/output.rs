//! Writing results: rasters by extension, the colour maps of PNGs, JSON summaries. Paths are
//! checked before any computation so that a bad path fails fast, and every file is written
//! atomically.

use std::path::Path;

use anyhow::Result;
use geofield_core::Raster;
use geofield_io::{RasterFormat, RasterMeta};

/// Check a single output path (a bench's `--json`) before measuring; see [`crate::outputs`].
pub fn preflight(path: &Path) -> Result<()> {
    crate::outputs::Outputs::new().plan("--json", path, crate::outputs::Kind::File)
}

/// Write the raster (GeoTIFF, ESRI ASCII or NPY by extension) with the provenance of this run
/// ([`provenance`]); returns the files written. A georeferenced format written without a CRS
/// gets a warning ([`warn_if_no_crs`]).
pub fn write_raster(
    path: &Path,
    raster: &Raster,
    units: &str,
    description: &str,
    crs_epsg: Option<u16>,
) -> Result<Vec<std::path::PathBuf>> {
    let codec = geofield_io::geotiff::Compression::default();
    write_raster_with(
        path,
        raster,
        units,
        description,
        (crs_epsg, codec),
        &[],
        false,
    )
}

/// As [`write_raster`], recording the method and its parameters (`method` first) in the
/// provenance; `may_hold_nan` declares NaN as nodata even when this raster has none (a
/// raster holding NaN declares it anyway). `place` is the CRS and how a GeoTIFF is compressed.
pub fn write_raster_with(
    path: &Path,
    raster: &Raster,
    units: &str,
    description: &str,
    place: (Option<u16>, geofield_io::geotiff::Compression),
    method: &[(&str, String)],
    may_hold_nan: bool,
) -> Result<Vec<std::path::PathBuf>> {
    let (crs_epsg, compression) = place;
    let meta = RasterMeta {
        crs_epsg,
        nodata: may_hold_nan.then_some(f64::NAN),
        units: Some(units.to_string()),
        description: Some(description.to_string()),
        provenance: provenance(method),
        compression,
    };
    let written = geofield_io::write_raster(path, raster, &meta)?;
    warn_if_no_crs(path, crs_epsg, "declare one with --crs EPSG:CODE");
    Ok(written)
}

/// One line on stderr when `path` is a georeferenced raster format written without a CRS;
/// `hint` says how to give it one.
pub fn warn_if_no_crs(path: &Path, crs_epsg: Option<u16>, hint: &str) {
    let georeferenced =
        RasterFormat::from_path(path).is_ok_and(geofield_io::raster_out::format_is_georeferenced);
    if crs_epsg.is_none() && georeferenced {
        // `path` may be the staged copy of the output: name the file only.
        let name = path.file_name().unwrap_or(path.as_os_str());
        eprintln!(
            "warning: {} has no coordinate reference system (GIS tools will not place it); {hint}",
            name.to_string_lossy()
        );
    }
}

/// Provenance items for an output: `geofield_version`, `command_line`, `created` (UTC), then
/// `method` items as given.
pub fn provenance(method: &[(&str, String)]) -> Vec<(String, String)> {
    let mut items = vec![
        (
            "geofield_version".to_string(),
            env!("CARGO_PKG_VERSION").to_string(),
        ),
        ("command_line".to_string(), command_line()),
        ("created".to_string(), utc_now()),
    ];
    items.extend(method.iter().map(|(k, v)| (k.to_string(), v.clone())));
    items
}

/// The CF `history` line of this run: the UTC time, then the command line.
pub fn history() -> String {
    format!("{} {}", utc_now(), command_line())
}

/// This process's command line, arguments with spaces or quotes in single quotes.
pub fn command_line() -> String {
    std::env::args_os()
        .map(|a| {
            let a = a.to_string_lossy().into_owned();
            if a.is_empty() || a.contains(|c: char| c.is_whitespace() || "'\"$\\".contains(c)) {
                format!("'{}'", a.replace('\'', "'\\''"))
            } else {
                a
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The current time in UTC as ISO 8601 (`2026-11-24T10:37:28Z`), or the time of
/// `SOURCE_DATE_EPOCH` (seconds since 1970, the reproducible-builds convention) when it is set:
/// then two runs of the same command write byte-identical files.
pub fn utc_now() -> String {
    let fixed = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok());
    let secs = fixed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    });
    iso8601(secs)
}

/// Seconds since 1970-01-01 as an ISO 8601 UTC time (proleptic Gregorian calendar).
fn iso8601(secs: u64) -> String {
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (mut year, mut day) = (1970u64, days);
    let leap = |y: u64| (y.is_multiple_of(4) && !y.is_multiple_of(100)) || y.is_multiple_of(400);
    loop {
        let len = if leap(year) { 366 } else { 365 };
        if day < len {
            break;
        }
        day -= len;
        year += 1;
    }
    let months = [
        31,
        if leap(year) { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    let mut month = 0;
    while month < 11 && day >= months[month] {
        day -= months[month];
        month += 1;
    }
    format!(
        "{year:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        month + 1,
        day + 1,
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The colour maps a PNG can use (clap's list for `--colormap`).
pub const COLORMAPS: [&str; 3] = ["viridis", "magma", "cividis"];

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

#[cfg(test)]
mod tests {
    #[test]
    fn iso8601_dates() {
        assert_eq!(super::iso8601(0), "1970-01-01T00:00:00Z");
        // 2000-02-29 12:34:56 UTC (a leap day of a year divisible by 400).
        assert_eq!(super::iso8601(951_827_696), "2000-02-29T12:34:56Z");
        // 2026-11-24 10:37:28 UTC.
        assert_eq!(super::iso8601(1_795_516_648), "2026-11-24T10:37:28Z");
    }
}
