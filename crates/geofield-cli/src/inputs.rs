//! The user's inputs: extents and output grids from flags; species files (TOML) and stem maps
//! (CSV) are read by the library ([`geofield::dispersal::io`]), whose errors name the file, line
//! and field.

use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};
use geofield::InputError;
use geofield::dispersal::{Species, Stand};
use geofield_core::{Extent, GridSpec};

/// `XMIN,YMIN,XMAX,YMAX` in metres.
pub fn parse_extent(s: &str) -> Result<Extent> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    if parts.len() != 4 {
        bail!("--extent must be XMIN,YMIN,XMAX,YMAX (four numbers in metres), got {s:?}");
    }
    let mut v = [0.0; 4];
    for (i, p) in parts.iter().enumerate() {
        v[i] = p
            .parse::<f64>()
            .map_err(|_| anyhow!("--extent: {p:?} is not a number (in {s:?})"))?;
    }
    Extent::new(v[0], v[1], v[2], v[3]).context("--extent")
}

/// The grid of an extent and cell size, refused up front if its `bands` layers (plus the f64
/// working copies) would not fit in memory.
pub fn grid_for(
    extent: &Extent,
    cell_size_m: f64,
    bands: usize,
    out_bytes: usize,
) -> Result<GridSpec> {
    let g = GridSpec::from_extent(*extent, cell_size_m)
        .context("the output grid of --extent at cell size --cell-size-m")?;
    if let Some(avail) = available_memory_bytes() {
        g.check_memory(bands.max(1), 8 + out_bytes, avail as u128)
            .context(
                "the output grid would not fit in this machine's available memory (MemAvailable)",
            )?;
    }
    Ok(g)
}

pub use geofield::dispersal::io::{StandReport, read_species};
pub use geofield_core::available_memory_bytes;

/// The stem map of `path` (see [`geofield::dispersal::io::read_stand`]); `--strict` makes a
/// tree of unknown species an error.
pub fn read_trees(
    path: &Path,
    species: &[Species],
    extent: &Extent,
    strict: bool,
) -> Result<(Stand, StandReport)> {
    geofield::dispersal::io::read_stand(path, species, extent, strict).map_err(|e| match e {
        InputError::UnknownSpecies { .. } => {
            anyhow!("{e} (an error with --strict; without it such trees are skipped)")
        }
        e => e.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extent_parsing() {
        assert!(parse_extent("0,0,10,10").is_ok());
        assert!(parse_extent("0,0,10").is_err());
        assert!(parse_extent("0,0,a,10").is_err());
        assert!(parse_extent("10,0,0,10").is_err());
    }
}
