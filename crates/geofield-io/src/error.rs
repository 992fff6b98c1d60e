use std::path::PathBuf;

use thiserror::Error;

/// Most characters of a value from a file quoted in a message.
pub const QUOTE_MAX_CHARS: usize = 80;

/// `text` cut to [`QUOTE_MAX_CHARS`] characters, with "… (N characters)" when longer, for
/// quoting a value from a file in a message.
pub fn shorten(text: &str) -> String {
    let n = text.chars().count();
    if n <= QUOTE_MAX_CHARS {
        text.to_string()
    } else {
        let head: String = text.chars().take(QUOTE_MAX_CHARS).collect();
        format!("{head}… ({n} characters)")
    }
}

/// Errors from reading inputs and writing outputs. Every variant names the file, and where it
/// applies the line and column, so that the message alone tells a user what to fix.
#[derive(Debug, Error)]
pub enum IoError {
    /// A file could not be opened or read.
    #[error("cannot read {}: {source}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file could not be created, written or renamed into place.
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The folder an output should go to does not exist.
    #[error(
        "cannot write {}: directory {} does not exist; create it first or choose another output path",
        .path.display(), .dir.display()
    )]
    DirectoryMissing { path: PathBuf, dir: PathBuf },
    /// The CSV text itself is broken (wrong number of fields, invalid UTF-8, ...).
    #[error("{}:{line}: malformed CSV: {detail}", .path.display())]
    CsvMalformed {
        path: PathBuf,
        line: u64,
        detail: String,
    },
    /// A required column is not in the CSV header.
    #[error(
        "{}: no column named {wanted}; the header has {available} (names are matched ignoring case)",
        .path.display()
    )]
    MissingColumn {
        path: PathBuf,
        wanted: String,
        available: String,
    },
    /// A CSV field that must be a number is not one.
    #[error("{}:{line}: column \"{column}\": \"{text}\" is not a number", .path.display())]
    BadNumber {
        path: PathBuf,
        line: u64,
        column: String,
        text: String,
    },
    /// A CSV field parsed as NaN or infinity where a finite number is required.
    #[error("{}:{line}: column \"{column}\": \"{text}\" is not a finite number", .path.display())]
    NotFinite {
        path: PathBuf,
        line: u64,
        column: String,
        text: String,
    },
    /// A CSV record has no field at the requested column index.
    #[error("{}:{line}: the record has no field number {index} (column \"{column}\")", .path.display())]
    MissingField {
        path: PathBuf,
        line: u64,
        column: String,
        index: usize,
    },
    /// The output file name has an extension no raster writer handles.
    #[error(
        "cannot write {}: unsupported raster format {ext:?}; use one of {supported}",
        .path.display()
    )]
    UnsupportedFormat {
        path: PathBuf,
        ext: String,
        supported: String,
    },
    /// The data cannot be written in the requested form (no bands, shape mismatch, too large).
    #[error("cannot write {}: {reason}", .path.display())]
    InvalidOutput { path: PathBuf, reason: String },
    /// A file is not a valid or supported NPY array.
    #[error("cannot read {} as an NPY array: {reason}", .path.display())]
    BadNpy { path: PathBuf, reason: String },
    /// The TIFF encoder failed.
    #[error("cannot write GeoTIFF {}: {reason}", .path.display())]
    Tiff { path: PathBuf, reason: String },
    /// The input file name has an extension no raster reader handles.
    #[error("cannot read {}: unsupported raster format {ext}; use one of {supported}", .path.display())]
    UnsupportedInput {
        path: PathBuf,
        ext: String,
        supported: String,
    },
    /// An ESRI ASCII grid is malformed; `line` is 1-based (0 when the problem is the whole file).
    #[error("{}:{line}: invalid ESRI ASCII grid: {reason}", .path.display())]
    BadAsciiGrid {
        path: PathBuf,
        line: u64,
        reason: String,
    },
    /// A GeoTIFF cannot be decoded or is not supported; `reason` names the TIFF tag at fault.
    #[error("cannot read GeoTIFF {}: {reason}", .path.display())]
    BadGeoTiff { path: PathBuf, reason: String },
    /// A size declared by the file would need more memory than is available; nothing of that
    /// size was allocated.
    #[error("cannot read {}: {error}", .path.display())]
    TooLarge {
        path: PathBuf,
        error: geofield_core::CoreError,
    },
    /// A NetCDF input that cannot be read or lacks what is asked of it (the variable is named
    /// in `reason`).
    #[error("cannot read NetCDF {}: {reason}", .path.display())]
    BadNetcdf { path: PathBuf, reason: String },
}
