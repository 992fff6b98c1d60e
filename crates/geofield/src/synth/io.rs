//! Writing synthetic inputs (feature `io`), each in the format its reader takes: wells through
//! strata for the kriging's sample reader, weather stations and a DEM for the wind field's
//! readers ([`crate::kriging::io`], [`crate::wind::io`]). (Stem maps and
//! species files: [`crate::dispersal::io::write_stand`] and
//! [`crate::dispersal::io::write_species`].) Every file is written atomically.

use std::io::Write;
use std::path::{Path, PathBuf};

use geofield_core::Raster;
use geofield_io::geotiff::Compression;
use geofield_io::{IoError, RasterMeta};

use super::{TerrainKind, surface_names};
use crate::wind::Station;

/// Write wells as CSV: `id,x,y,s01,s02,...` (ids `w001`, ...; a surface column per band of
/// `z`, empty where the value is NaN, i.e. the well stops short).
pub fn write_wells(path: &Path, xs: &[f64], ys: &[f64], z: &[Vec<f64>]) -> Result<(), IoError> {
    geofield_io::write_atomic(path, |w| {
        let mut b = std::io::BufWriter::new(w);
        writeln!(b, "id,x,y,{}", surface_names(z.len()).join(","))?;
        for i in 0..xs.len() {
            write!(b, "w{:03},{:.3},{:.3}", i + 1, xs[i], ys[i])?;
            for zh in z {
                if zh[i].is_nan() {
                    write!(b, ",")?;
                } else {
                    write!(b, ",{:.4}", zh[i])?;
                }
            }
            writeln!(b)?;
        }
        b.flush()
    })
}

/// Write stations as CSV with the columns the wind field reads:
/// `id,x_m,y_m,height_agl_m,speed_m_per_s,direction_deg,stability` (stability empty where none).
pub fn write_stations(path: &Path, stations: &[Station]) -> Result<(), IoError> {
    geofield_io::write_atomic(path, |w| {
        let mut b = std::io::BufWriter::new(w);
        writeln!(
            b,
            "id,x_m,y_m,height_agl_m,speed_m_per_s,direction_deg,stability"
        )?;
        for s in stations {
            writeln!(
                b,
                "{},{:.3},{:.3},{},{:.4},{:.3},{}",
                s.id,
                s.x_m,
                s.y_m,
                s.height_agl_m,
                s.speed_m_per_s,
                s.direction_deg,
                s.stability
                    .map(|c| c.letter().to_string())
                    .unwrap_or_default()
            )?;
        }
        b.flush()
    })
}

/// Write a synthetic DEM ([`super::dem_raster`]) by the extension of `path`
/// ([`geofield_io::write_raster`]), in metres, described as `synthetic terrain (KIND)`, with its
/// CRS and `provenance` items, a GeoTIFF compressed by `compression`; returns the files written.
pub fn write_dem(
    path: &Path,
    dem: &Raster,
    kind: TerrainKind,
    crs_epsg: Option<u16>,
    provenance: &[(String, String)],
    compression: Compression,
) -> Result<Vec<PathBuf>, IoError> {
    let meta = RasterMeta {
        crs_epsg,
        nodata: None,
        units: Some("m".to_string()),
        description: Some(format!("synthetic terrain ({})", kind.name())),
        provenance: provenance.to_vec(),
        compression,
    };
    geofield_io::write_raster(path, dem, &meta)
}
