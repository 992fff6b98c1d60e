//! The user's inputs: extents from flags; species files (TOML) and stem maps
//! (CSV) are read by the library ([`geofield::dispersal::io`]), whose errors name the file, line
//! and field.

use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};
use geofield::InputError;
use geofield::dispersal::{Species, Stand};
use geofield_core::Extent;

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

pub use geofield::dispersal::io::{StandReport, read_species};

/// The stem map of `path` (see [`geofield::dispersal::io::read_stand`]); `--strict` makes a
/// tree of unknown species an error.
pub fn read_trees(
    path: &Path,
    species: &[Species],
    extent: &Extent,
    strict: bool,
) -> Result<(Stand, StandReport)> {
    geofield::dispersal::io::read_stand(path, species, extent, strict).map_err(strict_hint)
}

/// [`read_trees`] by one part of a split run: its byte range of the file
/// ([`geofield::dispersal::io::read_stand_piece`]); `Ok(None)`: another part failed.
pub fn read_trees_piece(
    path: &Path,
    species: &[Species],
    extent: &Extent,
    strict: bool,
    ex: &dyn geofield::wind::split::Exchange,
) -> Result<Option<(Stand, StandReport)>> {
    geofield::dispersal::io::read_stand_piece(path, species, extent, strict, ex)
        .map_err(strict_hint)
}

/// The `--strict` hint on an unknown species' error.
fn strict_hint(e: InputError) -> anyhow::Error {
    match e {
        InputError::UnknownSpecies { .. } => {
            anyhow!("{e} (an error with --strict; without it such trees are skipped)")
        }
        e => e.into(),
    }
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
