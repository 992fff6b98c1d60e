//! ESRI ASCII grids (`.asc`), one file per band.
//!
//! Format: a header of `ncols`, `nrows`, `xllcorner`, `yllcorner` (the lower-left corner of the
//! lower-left cell), `cellsize` and optionally `NODATA_value`, then `nrows` lines of `ncols`
//! values each, the first line being the north edge (row 0 of a [`geofield_core::GridSpec`]).
//! Values are printed with the shortest digits that read back to the same f32 or f64.
//!
//! NaN cells are written as the nodata value: `RasterMeta::nodata` when it is finite, otherwise
//! [`DEFAULT_NODATA`] (and the header then declares it).
//!
//! When `RasterMeta::crs_epsg` names a system the registry knows ([`crate::crs::epsg_wkt`]),
//! each grid gets a `.prj` sidecar of the same stem holding its WKT (one line, no newline), the
//! file GDAL, QGIS and ArcGIS read a grid's CRS from. The grids and their sidecars are written
//! as one all-or-nothing group.

use std::io::Write;
use std::path::{Path, PathBuf};

use geofield_core::{Raster, RasterData};

use crate::IoError;
use crate::atomic::write_atomic_many;
use crate::raster_out::{RasterMeta, check_shape, format_f32, format_f64};

/// Nodata marker used for NaN cells when the metadata gives no finite nodata value.
pub const DEFAULT_NODATA: f64 = -9999.0;

/// Write every band of `raster` as an ESRI ASCII grid. A single band goes to `path`; several go
/// to `<stem>_<band name>.asc` beside it (see [`band_file_paths`]), each with a `.prj` when the
/// CRS is known. Returns the files written (grids first, then sidecars); either all of them are
/// written or none.
pub fn write_ascii_grids(
    path: &Path,
    raster: &Raster,
    meta: &RasterMeta,
) -> Result<Vec<PathBuf>, IoError> {
    check_shape(path, raster)?;
    let grids = band_file_paths(path, &raster.band_names);
    let wkt = meta.crs_epsg.and_then(crate::crs::epsg_wkt);
    let mut paths = grids.clone();
    if wkt.is_some() {
        paths.extend(grids.iter().map(|p| p.with_extension("prj")));
    }
    let n_cells = raster.grid.n_cells();
    write_atomic_many(&paths, |i, w| {
        if i >= grids.len() {
            return w.write_all(wkt.unwrap_or_default().as_bytes());
        }
        let band = i;
        let range = band * n_cells..(band + 1) * n_cells;
        match &raster.data {
            RasterData::F32(v) => {
                let values = v.get(range).unwrap_or_default();
                let nodata = nodata_for(meta, values.iter().any(|x| x.is_nan()));
                write_band(
                    w,
                    raster,
                    nodata,
                    values,
                    |x| format_f32(*x),
                    |x| x.is_nan(),
                )
            }
            RasterData::F64(v) => {
                let values = v.get(range).unwrap_or_default();
                let nodata = nodata_for(meta, values.iter().any(|x| x.is_nan()));
                write_band(
                    w,
                    raster,
                    nodata,
                    values,
                    |x| format_f64(*x),
                    |x| x.is_nan(),
                )
            }
        }
    })
}

/// The file for each band: `path` itself for one band, else `<stem>_<name>.asc` in the same
/// folder, with the name reduced to `[A-Za-z0-9_-]` and made unique by appending the band index.
pub fn band_file_paths(path: &Path, band_names: &[String]) -> Vec<PathBuf> {
    if band_names.len() == 1 {
        return vec![path.to_path_buf()];
    }
    let stem = path
        .file_stem()
        .map_or_else(|| "raster".into(), |s| s.to_string_lossy());
    let mut used = std::collections::HashSet::new();
    band_names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let mut clean: String = name
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            if clean.is_empty() || !used.insert(clean.clone()) {
                clean = format!("{clean}{}band{i}", if clean.is_empty() { "" } else { "_" });
                used.insert(clean.clone());
            }
            path.with_file_name(format!("{stem}_{clean}.asc"))
        })
        .collect()
}

/// The nodata value to declare: the metadata's when finite, else [`DEFAULT_NODATA`] if the band
/// has NaN cells, else none.
fn nodata_for(meta: &RasterMeta, has_nan: bool) -> Option<f64> {
    match meta.nodata {
        Some(v) if v.is_finite() => Some(v),
        _ if has_nan => Some(DEFAULT_NODATA),
        _ => None,
    }
}

/// Write one band's header and values.
fn write_band<T>(
    w: &mut dyn Write,
    raster: &Raster,
    nodata: Option<f64>,
    values: &[T],
    format: impl Fn(&T) -> String,
    is_nan: impl Fn(&T) -> bool,
) -> std::io::Result<()> {
    let g = &raster.grid;
    writeln!(w, "ncols        {}", g.cols)?;
    writeln!(w, "nrows        {}", g.rows)?;
    writeln!(w, "xllcorner    {}", format_f64(g.x_min_m))?;
    writeln!(w, "yllcorner    {}", format_f64(g.y_min_m()))?;
    writeln!(w, "cellsize     {}", format_f64(g.cell_size_m))?;
    let nodata_text = nodata.map(format_f64);
    if let Some(text) = &nodata_text {
        writeln!(w, "NODATA_value {text}")?;
    }
    let mut line = String::new();
    for row in values.chunks(g.cols.max(1)) {
        line.clear();
        for (i, v) in row.iter().enumerate() {
            if i > 0 {
                line.push(' ');
            }
            match (&nodata_text, is_nan(v)) {
                (Some(text), true) => line.push_str(text),
                _ => line.push_str(&format(v)),
            }
        }
        line.push('\n');
        w.write_all(line.as_bytes())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn band_paths_are_clean_and_unique() {
        let names: Vec<String> = ["Fagus sylvatica", "Fagus/sylvatica", "", "abies-alba"]
            .map(String::from)
            .into();
        let p = band_file_paths(Path::new("out/seeds.asc"), &names);
        let got: Vec<String> = p.iter().map(|p| p.display().to_string()).collect();
        assert_eq!(
            got,
            [
                "out/seeds_Fagus_sylvatica.asc",
                "out/seeds_Fagus_sylvatica_band1.asc",
                "out/seeds_band2.asc",
                "out/seeds_abies-alba.asc"
            ]
        );
        assert_eq!(
            band_file_paths(Path::new("a.asc"), &names[..1]),
            [PathBuf::from("a.asc")]
        );
    }
}
