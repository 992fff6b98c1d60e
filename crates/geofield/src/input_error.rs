//! Errors of the domain input readers (feature `io`): every variant names the file, and where
//! it applies the 1-based line and the field, so the message alone says what to fix.

use std::path::PathBuf;

use thiserror::Error;

pub use geofield_io::QUOTE_MAX_CHARS;

/// `text` in double quotes (Rust string escaping), cut to [`QUOTE_MAX_CHARS`] characters with
/// "… (N characters)" when longer (see [`geofield_io::shorten`]).
pub fn quote(text: &str) -> String {
    format!("{:?}", geofield_io::shorten(text))
}

/// An input file that cannot be used.
#[derive(Debug, Error)]
pub enum InputError {
    /// The file cannot be read, or is malformed at the level of its format (CSV, NPY, GeoTIFF,
    /// ESRI ASCII); see [`geofield_io::IoError`].
    #[error(transparent)]
    File(#[from] geofield_io::IoError),
    /// A value at `line` of the file is invalid; `field` names the column (`column "dbh_cm"`)
    /// or the record (`species "abies"`).
    #[error("{}:{line}: {field}: {reason}", .path.display())]
    Field {
        path: PathBuf,
        line: u64,
        field: String,
        reason: String,
    },
    /// The text is not valid TOML, or does not have the expected tables and keys; `line` where
    /// the parser knows it.
    #[error("{}{}: {message}", .path.display(), .line.map(|l| format!(":{l}")).unwrap_or_default())]
    Toml {
        path: PathBuf,
        line: Option<u64>,
        message: String,
    },
    /// A stem map read strictly names a species the species file does not have (`name` quoted;
    /// `count` trees in all).
    #[error(
        "{}:{line}: species {name} is not in the species file ({count} trees of unknown species). Known species: {known}",
        .path.display()
    )]
    UnknownSpecies {
        path: PathBuf,
        line: u64,
        name: String,
        count: usize,
        known: String,
    },
    /// The file as a whole is unusable (no records, a column with no value, wrong array shape).
    #[error("{}: {reason}", .path.display())]
    Invalid { path: PathBuf, reason: String },
    /// What the file declares would need more memory than is available.
    #[error("{}: {error}", .path.display())]
    TooLarge {
        path: PathBuf,
        error: geofield_core::CoreError,
    },
}
