//! CSV tables with a header row.
//!
//! Fields and header names are trimmed of surrounding whitespace; column names are matched
//! ignoring case. Records are streamed, not loaded: one [`CsvRecord`] buffer is reused for every
//! row, so reading tens of millions of rows allocates nothing per row or per field.
//!
//! Every error names the file and, where it applies, the 1-based line (line 1 is the header) and
//! the column, e.g. `trees.csv:17: column "dbh_cm": "abc" is not a number`.
//!
//! ```no_run
//! # fn main() -> Result<(), geofield_io::IoError> {
//! use geofield_io::csv_input::{CsvRecord, CsvTable};
//! let mut table = CsvTable::read(std::path::Path::new("trees.csv"))?;
//! let (x, dbh) = (table.column_any(&["x_m", "x"])?, table.column("dbh_cm")?);
//! let mut rec = CsvRecord::default();
//! while table.next_record(&mut rec)? {
//!     let (x_m, dbh_cm) = (table.f64_at(&rec, x)?, table.f64_at(&rec, dbh)?);
//!     # let _ = (x_m, dbh_cm);
//! }
//! # Ok(()) }
//! ```

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use csv::{ReaderBuilder, StringRecord, Trim};

use crate::IoError;

mod chunks;
pub use chunks::CsvChunks;

/// Read-ahead buffer of the CSV parser.
const CSV_BUFFER_BYTES: usize = 1 << 16;

/// An open CSV file whose header has been read; records are read one at a time.
pub struct CsvTable {
    /// The file, as given to [`CsvTable::read`]; used in error messages.
    pub path: PathBuf,
    /// Column names from the header row, trimmed (empty for an empty file).
    pub headers: Vec<String>,
    rows: csv::Reader<Tee>,
    /// Line of the last record read, for errors that carry no position.
    last_line: u64,
}

/// One record (row) of a [`CsvTable`]; reuse one value for all rows to avoid allocation.
#[derive(Debug, Clone, Default)]
pub struct CsvRecord {
    fields: StringRecord,
    line: u64,
}

impl CsvRecord {
    /// The 1-based line of the file where this record starts (line 1 is the header).
    pub fn line(&self) -> u64 {
        self.line
    }
    /// Number of fields.
    pub fn len(&self) -> usize {
        self.fields.len()
    }
    /// True for a record with no fields.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }
}

/// A record together with its table's file name and header, so that its fields can be read with
/// full error context; handed out by [`CsvTable::for_each_record`] and [`CsvTable::row`].
#[derive(Clone, Copy)]
pub struct CsvRow<'a> {
    path: &'a Path,
    headers: &'a [String],
    line: u64,
    fields: Fields<'a>,
}

/// A row's fields: a csv crate record, or the trimmed fields of a line split by the parallel
/// reader ([`CsvChunks`]).
#[derive(Clone, Copy)]
enum Fields<'a> {
    Record(&'a StringRecord),
    Split(&'a [&'a str]),
}

impl<'a> CsvRow<'a> {
    /// The 1-based line of the file where this record starts.
    pub fn line(&self) -> u64 {
        self.line
    }

    /// The trimmed text of column `col`.
    pub fn str(&self, col: usize) -> Result<&'a str, IoError> {
        let field = match self.fields {
            Fields::Record(r) => r.get(col),
            Fields::Split(f) => f.get(col).copied(),
        };
        field.ok_or_else(|| IoError::MissingField {
            path: self.path.to_path_buf(),
            line: self.line,
            column: self.column_name(col),
            index: col + 1,
        })
    }

    /// Column `col` parsed as a number (NaN and infinity are accepted; see [`Self::finite_f64`]).
    pub fn f64(&self, col: usize) -> Result<f64, IoError> {
        let text = self.str(col)?;
        text.parse::<f64>().map_err(|_| IoError::BadNumber {
            path: self.path.to_path_buf(),
            line: self.line,
            column: self.column_name(col),
            text: crate::shorten(text),
        })
    }

    /// Column `col` parsed as a finite number; NaN and infinity are errors.
    pub fn finite_f64(&self, col: usize) -> Result<f64, IoError> {
        let v = self.f64(col)?;
        if v.is_finite() {
            Ok(v)
        } else {
            Err(IoError::NotFinite {
                path: self.path.to_path_buf(),
                line: self.line,
                column: self.column_name(col),
                text: crate::shorten(self.str(col)?),
            })
        }
    }

    fn column_name(&self, col: usize) -> String {
        self.headers
            .get(col)
            .map(|h| crate::shorten(h))
            .unwrap_or_else(|| format!("#{}", col + 1))
    }
}

impl CsvTable {
    /// Open `path` and read its header row. An empty file gives a table with no columns and no
    /// records.
    pub fn read(path: &Path) -> Result<CsvTable, IoError> {
        let file = File::open(path).map_err(|source| IoError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let mut rows = ReaderBuilder::new()
            .has_headers(true)
            .flexible(false)
            .trim(Trim::All)
            .buffer_capacity(CSV_BUFFER_BYTES)
            .from_reader(Tee {
                file,
                window: Vec::new(),
                window_start: 0,
            });
        let headers = match rows.headers() {
            Ok(h) => h.iter().map(str::to_string).collect(),
            Err(e) => {
                let line = e.position().map_or(1, |p| p.line());
                return Err(csv_error(path, e, line));
            }
        };
        Ok(CsvTable {
            path: path.to_path_buf(),
            headers,
            rows,
            last_line: 1,
        })
    }

    /// Index of the column called `name` (ignoring case); the error lists the columns there are.
    pub fn column(&self, name: &str) -> Result<usize, IoError> {
        self.column_any(&[name])
    }

    /// Index of the first of `names` (aliases, in order of preference) present in the header.
    pub fn column_any(&self, names: &[&str]) -> Result<usize, IoError> {
        find_column(&self.path, &self.headers, names)
    }

    /// Read the next record into `rec`, reusing its memory. Returns `Ok(false)` at the end of the
    /// file. Malformed CSV is an error naming the file and line.
    pub fn next_record(&mut self, rec: &mut CsvRecord) -> Result<bool, IoError> {
        match self.rows.read_record(&mut rec.fields) {
            Ok(true) => {
                rec.line = match rec.fields.position() {
                    Some(p) => p.line() + self.rows.get_ref().newlines_skipped_at(p.byte()),
                    None => self.last_line + 1,
                };
                self.last_line = rec.line;
                let end = self.rows.position().byte();
                self.rows.get_mut().forget_before(end);
                Ok(true)
            }
            Ok(false) => Ok(false),
            Err(e) => {
                let line = match e.position() {
                    Some(p) => p.line() + self.rows.get_ref().newlines_skipped_at(p.byte()),
                    None => self.last_line + 1,
                };
                Err(csv_error(&self.path, e, line))
            }
        }
    }

    /// Call `f` on every remaining record, stopping at the first error (from the file or from
    /// `f`). Returns the number of records read.
    pub fn for_each_record(
        &mut self,
        mut f: impl FnMut(CsvRow<'_>) -> Result<(), IoError>,
    ) -> Result<u64, IoError> {
        let mut rec = CsvRecord::default();
        let mut n = 0;
        while self.next_record(&mut rec)? {
            f(self.row(&rec))?;
            n += 1;
        }
        Ok(n)
    }

    /// `rec` with this table's context, for reading several fields.
    pub fn row<'a>(&'a self, rec: &'a CsvRecord) -> CsvRow<'a> {
        CsvRow {
            path: &self.path,
            headers: &self.headers,
            line: rec.line,
            fields: Fields::Record(&rec.fields),
        }
    }

    /// Column `col` of `rec` as a number; the error names file, line, column and text.
    pub fn f64_at(&self, rec: &CsvRecord, col: usize) -> Result<f64, IoError> {
        self.row(rec).f64(col)
    }

    /// Column `col` of `rec` as a finite number (NaN and infinity are errors).
    pub fn finite_f64_at(&self, rec: &CsvRecord, col: usize) -> Result<f64, IoError> {
        self.row(rec).finite_f64(col)
    }

    /// Column `col` of `rec` as trimmed text.
    pub fn str_at<'r>(&'r self, rec: &'r CsvRecord, col: usize) -> Result<&'r str, IoError> {
        self.row(rec).str(col)
    }
}

/// Index of the first of `names` (aliases, in order of preference) in `headers` of the file at
/// `path`; the error lists the columns there are.
fn find_column(path: &Path, headers: &[String], names: &[&str]) -> Result<usize, IoError> {
    for name in names {
        let wanted = name.trim().to_lowercase();
        if let Some(i) = headers.iter().position(|h| h.to_lowercase() == wanted) {
            return Ok(i);
        }
    }
    let wanted = match names {
        [] => "(none given)".to_string(),
        [one] => format!("\"{one}\""),
        [first, rest @ ..] => {
            let rest: Vec<String> = rest.iter().map(|n| format!("\"{n}\"")).collect();
            format!("\"{first}\" (also tried {})", rest.join(", "))
        }
    };
    let available = if headers.is_empty() {
        "no columns (the file is empty)".to_string()
    } else {
        let cols: Vec<String> = headers.iter().map(|h| format!("\"{h}\"")).collect();
        format!("columns {}", cols.join(", "))
    };
    Err(IoError::MissingColumn {
        path: path.to_path_buf(),
        wanted,
        available,
    })
}

/// Bytes of the CSV window kept before old ones are dropped.
const WINDOW_KEEP_BYTES: usize = 1 << 20;

/// The file, with a window of the bytes the CSV parser has read from it.
///
/// The csv crate skips blank lines before a record but reports the record's position from
/// before them, so a record after a blank line would get the wrong line number. The window lets
/// [`CsvTable::next_record`] count the skipped line ends; it holds the bytes from the end of the
/// previous record on (the parser's read-ahead, about one buffer), trimmed now and then.
struct Tee {
    file: File,
    window: Vec<u8>,
    /// File offset of `window[0]`.
    window_start: u64,
}

impl Read for Tee {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.file.read(buf)?;
        self.window
            .extend_from_slice(buf.get(..n).unwrap_or_default());
        Ok(n)
    }
}

impl Tee {
    /// Number of line feeds in the run of blank-line bytes (`\r`, `\n`) at file offset `byte`.
    fn newlines_skipped_at(&self, byte: u64) -> u64 {
        let from = usize::try_from(byte.saturating_sub(self.window_start)).unwrap_or(usize::MAX);
        let run = self.window.get(from..).unwrap_or_default();
        let run = run.iter().take_while(|&&b| b == b'\n' || b == b'\r');
        run.filter(|&&b| b == b'\n').count() as u64
    }

    /// Drop window bytes before file offset `byte` once enough have accumulated.
    fn forget_before(&mut self, byte: u64) {
        let n = usize::try_from(byte.saturating_sub(self.window_start)).unwrap_or(usize::MAX);
        if n >= WINDOW_KEEP_BYTES {
            let n = n.min(self.window.len());
            self.window.drain(..n);
            self.window_start += n as u64;
        }
    }
}

/// Turn a csv crate error at `line` into an [`IoError`] naming the file and line.
fn csv_error(path: &Path, err: csv::Error, line: u64) -> IoError {
    let detail = match err.into_kind() {
        csv::ErrorKind::Io(source) => {
            return IoError::Read {
                path: path.to_path_buf(),
                source,
            };
        }
        csv::ErrorKind::Utf8 { err, .. } => {
            format!(
                "field {} is not valid UTF-8 text; save the file as UTF-8",
                err.field() + 1
            )
        }
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!(
            "the record has {len} field(s) but the header has {expected_len}; \
             check for missing or extra commas or an unclosed quote"
        ),
        other => format!("{other:?}"),
    };
    IoError::CsvMalformed {
        path: path.to_path_buf(),
        line,
        detail,
    }
}
