//! Writing seed dispersal's files: the maps as rasters (GeoTIFF, ESRI ASCII or NPY by extension)
//! with units, description and provenance; PNG maps of them and of a method's error; stem maps
//! and species files that [`super::read_stand`] and [`super::read_species`] read back. Every file
//! is written atomically.

use std::io::Write;
use std::path::{Path, PathBuf};

use geofield_core::Raster;
use geofield_io::geotiff::Compression;
use geofield_io::{Colormap, IoError, Layout, RasterMeta, RenderOptions, Scale};

use super::super::{DisperseOptions, Species, SpeciesReport, Stand, method_label};
use super::species_toml;

/// Units of the seed maps.
pub const SEED_DENSITY_UNITS: &str = "seeds m-2 yr-1";

/// Description of the seed maps (GeoTIFF ImageDescription).
pub const SEED_DENSITY_DESCRIPTION: &str = "expected seed density";

/// Units of a map of relative errors ([`crate::dispersal::relative_error_raster`]).
pub const ERROR_UNITS: &str = "relative error";

/// The largest PNG drawn, in pixels; larger maps are drawn downsampled.
const MAX_PIXELS: usize = 4_000_000;

/// The method items of a seed map's provenance: the method that ran (by species' `reports`,
/// as [`crate::dispersal::Dispersal::method_label`]), the cutoff tolerance, and the stem map and species file
/// read.
pub fn seed_map_provenance(
    reports: &[SpeciesReport],
    opts: &DisperseOptions,
    trees: &Path,
    species: &Path,
) -> Vec<(&'static str, String)> {
    vec![
        ("method", method_label(reports)),
        ("tolerance", opts.tolerance.to_string()),
        ("trees", trees.display().to_string()),
        ("species", species.display().to_string()),
    ]
}

/// Write seed maps (one band per species) by the extension of `path` ([`geofield_io::write_raster`])
/// with their units ([`SEED_DENSITY_UNITS`]), description, CRS and `provenance` items (the
/// writer's version and command line, then [`seed_map_provenance`]); returns the files written
/// (one `.asc` per band, and its `.prj`). A GeoTIFF's tiles are compressed by `compression`.
pub fn write_seed_map(
    path: &Path,
    raster: &Raster,
    crs_epsg: Option<u16>,
    provenance: &[(String, String)],
    compression: Compression,
) -> Result<Vec<PathBuf>, IoError> {
    let meta = RasterMeta {
        compression,
        ..seed_map_meta(crs_epsg, provenance)
    };
    geofield_io::write_raster(path, raster, &meta)
}

/// The metadata of seed maps: units ([`SEED_DENSITY_UNITS`]), description, CRS and
/// `provenance`; [`write_seed_map`] writes with it, and a caller building a GeoTIFF band by
/// band ([`geofield_io::geotiff::CogBuilder`]) starts from it.
pub fn seed_map_meta(crs_epsg: Option<u16>, provenance: &[(String, String)]) -> RasterMeta {
    RasterMeta {
        crs_epsg,
        nodata: None,
        units: Some(SEED_DENSITY_UNITS.to_string()),
        description: Some(SEED_DENSITY_DESCRIPTION.to_string()),
        provenance: provenance.to_vec(),
        ..Default::default()
    }
}

/// How a PNG map looks.
#[derive(Debug, Clone, PartialEq)]
pub struct MapStyle {
    pub title: String,
    /// A colour blend of the species (as the paper's Fig. 12) instead of one panel per band.
    pub blend: bool,
    /// Colours on a log scale (down to 1e-4 of the maximum) instead of a linear one.
    pub log_scale: bool,
    pub colormap: Colormap,
}

impl MapStyle {
    /// One linear panel per band in `colormap`.
    pub fn panels(title: &str, colormap: Colormap) -> Self {
        Self {
            title: title.to_string(),
            blend: false,
            log_scale: false,
            colormap,
        }
    }
}

fn render(path: &Path, raster: &Raster, units: &str, style: &MapStyle) -> Result<(), IoError> {
    let opts = RenderOptions {
        title: style.title.clone(),
        units: units.to_string(),
        colormap: style.colormap,
        scale: if style.log_scale {
            Scale::Log {
                floor_fraction: 1e-4,
            }
        } else {
            Scale::Linear
        },
        layout: if style.blend {
            Layout::Blend
        } else {
            Layout::Panels
        },
        max_pixels: MAX_PIXELS,
        markers: Vec::new(),
    };
    geofield_io::render_png(path, raster, &opts)
}

/// Draw seed maps to a PNG: one panel per species, or their colour blend.
pub fn write_seed_png(path: &Path, raster: &Raster, style: &MapStyle) -> Result<(), IoError> {
    render(path, raster, SEED_DENSITY_UNITS, style)
}

/// Draw a map of relative errors ([`crate::dispersal::relative_error_raster`]) to a PNG.
pub fn write_error_png(path: &Path, errors: &Raster, style: &MapStyle) -> Result<(), IoError> {
    render(path, errors, ERROR_UNITS, style)
}

/// Write a stem map as CSV (`x_m,y_m,dbh_cm,species`), species by name (`unknown` for an index
/// outside `species`).
pub fn write_stand(path: &Path, stand: &Stand, species: &[Species]) -> Result<(), IoError> {
    geofield_io::write_atomic(path, |w| {
        let mut b = std::io::BufWriter::with_capacity(1 << 20, w);
        writeln!(b, "x_m,y_m,dbh_cm,species")?;
        for i in 0..stand.len() {
            let name = species
                .get(stand.species[i] as usize)
                .map_or("unknown", |s| s.name.as_str());
            writeln!(
                b,
                "{:.3},{:.3},{:.1},{}",
                stand.x_m[i], stand.y_m[i], stand.dbh_cm[i], name
            )?;
        }
        b.flush()
    })
}

/// Write a species file ([`species_toml`]).
pub fn write_species(path: &Path, species: &[Species]) -> Result<(), IoError> {
    let text = species_toml(species);
    geofield_io::write_atomic(path, |w| w.write_all(text.as_bytes()))
}
