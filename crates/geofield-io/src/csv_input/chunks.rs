//! CSV tables read in parallel: [`CsvChunks`].
//!
//! A stem map of millions of trees is a CSV of hundreds of MB; parsing it on one thread takes
//! longer than computing its seed maps on a GPU. A plain CSV (no quoted fields) has one record
//! per line, so the file can be cut at line ends and the pieces parsed at once. The file is
//! read into memory, cut into chunks of about [`CHUNK_BYTES`] at line ends, the line ends of
//! each chunk counted (so that every record keeps its line number), and the chunks parsed in
//! parallel. Each record is a [`CsvRow`], with the same trimming, errors and line numbers as
//! the streaming reader ([`CsvTable`]); the first error in file order is the one returned, as
//! when reading line by line.
//!
//! Files this reader does not split are read by [`CsvTable`], serially, with the same results:
//! files with a quote character (`"`, a field may then hold a line end or a comma), with a
//! carriage return that does not end a line, or larger than a quarter of the available memory.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use csv::ReaderBuilder;
use rayon::prelude::*;

use super::{CsvRecord, CsvRow, CsvTable, Fields, csv_error, find_column};
use crate::IoError;

/// Bytes per chunk parsed by one task.
const CHUNK_BYTES: usize = 1 << 22;

/// A CSV file's header, and its records read in parallel; see the [module docs](self).
pub struct CsvChunks {
    /// The file, as given to [`CsvChunks::open`]; used in error messages.
    pub path: PathBuf,
    /// Column names from the header row, trimmed (empty for an empty file).
    pub headers: Vec<String>,
    /// The records after the header, as pieces at line ends, each with the line number of its
    /// first line; `None` when the file is read serially.
    chunks: Option<(Vec<u8>, Vec<Piece>)>,
    /// Read serially as part p of n ([`CsvChunks::open_part`]): the records of its share by
    /// count only.
    share: Option<(usize, usize)>,
}

/// A piece of the file: its byte range and the line number of its first line.
type Piece = (usize, usize, u64);

impl CsvChunks {
    /// Open `path` and read its header row; files fit for splitting are read whole.
    pub fn open(path: &Path) -> Result<Self, IoError> {
        let read_error = |source| IoError::Read {
            path: path.to_path_buf(),
            source,
        };
        let mut file = File::open(path).map_err(read_error)?;
        let size = file.metadata().map_err(read_error)?.len();
        let fits = geofield_core::available_memory_bytes().is_none_or(|a| size <= a / 4);
        if !fits || size > usize::MAX as u64 {
            return Self::serial(path);
        }
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(read_error)?;
        if bytes.par_chunks(CHUNK_BYTES).any(needs_serial) || needs_serial_at_seams(&bytes) {
            return Self::serial(path);
        }
        // The header through the csv crate (a byte-order mark, trimming), and where it ends.
        let mut rdr = ReaderBuilder::new()
            .has_headers(true)
            .trim(csv::Trim::All)
            .from_reader(bytes.as_slice());
        let headers: Vec<String> = match rdr.headers() {
            Ok(h) => h.iter().map(str::to_string).collect(),
            Err(e) => {
                let line = e.position().map_or(1, |p| p.line());
                return Err(csv_error(path, e, line));
            }
        };
        let pos = rdr.position();
        let (start, first_line) = (
            usize::try_from(pos.byte()).unwrap_or(bytes.len()),
            pos.line(),
        );
        let chunks = split(&bytes, start.min(bytes.len()), first_line);
        Ok(Self {
            path: path.to_path_buf(),
            headers,
            chunks: Some((bytes, chunks)),
            share: None,
        })
    }

    /// Open `path` as part `part` of `parts` processes that read it together (MPI ranks): each
    /// reads its header and its byte range of the records, cut at line ends (the records whose
    /// line starts in its nominal range, `(size − header)·p/parts` onwards), and learns the line
    /// numbers before its range from the others. `all_gather` is the parts' collective call
    /// (every part's values concatenated in part order, on every part); every part calls it
    /// the same number of times whatever happens here. A file that must be read serially (see
    /// the [module docs](self)) anywhere is read whole by every part, each keeping its share of
    /// the records by count. The records of the parts' [`CsvChunks::fold`]s, in part order, are
    /// the file's, with their line numbers. `Ok(None)`: another part failed (its error is its
    /// own to report).
    pub fn open_part(
        path: &Path,
        part: usize,
        parts: usize,
        all_gather: &dyn Fn(&[f64]) -> Vec<f64>,
    ) -> Result<Option<Self>, IoError> {
        let mine = Self::read_range(path, part, parts);
        // [failed, newlines, serial] of every part.
        let flags = match &mine {
            Ok(Ok((_, bytes, _))) => [0.0, count_newlines(bytes) as f64, 0.0],
            Ok(Err(_)) => [0.0, 0.0, 1.0],
            Err(_) => [1.0, 0.0, 0.0],
        };
        let all = all_gather(&flags);
        let mine = mine?;
        if all.chunks_exact(3).any(|f| f[0] > 0.0) {
            return Ok(None);
        }
        let (headers, bytes, first_line) = match mine {
            Ok(range) if all.chunks_exact(3).all(|f| f[2] == 0.0) => range,
            _ => {
                let mut t = Self::serial(path)?;
                t.share = Some((part, parts));
                return Ok(Some(t));
            }
        };
        let before: u64 = all.chunks_exact(3).take(part).map(|f| f[1] as u64).sum();
        let chunks = split(&bytes, 0, first_line + before);
        Ok(Some(Self {
            path: path.to_path_buf(),
            headers,
            chunks: Some((bytes, chunks)),
            share: None,
        }))
    }

    /// Part `part`'s header, byte range of the records and the line number of the records'
    /// first line; `Ok(Err(()))` where the file must be read serially.
    #[allow(clippy::type_complexity)]
    fn read_range(
        path: &Path,
        part: usize,
        parts: usize,
    ) -> Result<Result<(Vec<String>, Vec<u8>, u64), ()>, IoError> {
        use std::io::{Seek, SeekFrom};
        let read_error = |source| IoError::Read {
            path: path.to_path_buf(),
            source,
        };
        let mut file = File::open(path).map_err(read_error)?;
        let size = file.metadata().map_err(read_error)?.len();
        let mut rdr = ReaderBuilder::new()
            .has_headers(true)
            .trim(csv::Trim::All)
            .from_reader(&mut file);
        let headers: Vec<String> = match rdr.headers() {
            Ok(h) => h.iter().map(str::to_string).collect(),
            Err(e) => {
                let line = e.position().map_or(1, |p| p.line());
                return Err(csv_error(path, e, line));
            }
        };
        let pos = rdr.position().clone();
        drop(rdr);
        let body = pos.byte().min(size);
        let nominal = |p: usize| {
            let span = u128::from(size - body);
            body + (span * p as u128 / parts.max(1) as u128) as u64
        };
        // A part's records start after the first line end at or after its nominal start − 1.
        let mut starts = |p: usize| -> Result<u64, IoError> {
            if p == 0 {
                return Ok(body);
            }
            if p >= parts {
                return Ok(size);
            }
            let mut at = nominal(p) - 1;
            file.seek(SeekFrom::Start(at)).map_err(read_error)?;
            let mut buf = vec![0u8; 1 << 16];
            loop {
                let n = file.read(&mut buf).map_err(read_error)?;
                if n == 0 {
                    return Ok(size);
                }
                if let Some(i) = buf[..n].iter().position(|&b| b == b'\n') {
                    return Ok(at + i as u64 + 1);
                }
                at += n as u64;
            }
        };
        let from = starts(part)?;
        let to = starts(part + 1)?.max(from);
        let len = to - from;
        let fits = geofield_core::available_memory_bytes().is_none_or(|a| len <= a / 4);
        if !fits || len > usize::MAX as u64 {
            return Ok(Err(()));
        }
        let mut bytes = vec![0u8; len as usize];
        file.seek(SeekFrom::Start(from)).map_err(read_error)?;
        file.read_exact(&mut bytes).map_err(read_error)?;
        if bytes.par_chunks(CHUNK_BYTES).any(needs_serial) || needs_serial_at_seams(&bytes) {
            return Ok(Err(()));
        }
        Ok(Ok((headers, bytes, pos.line())))
    }

    /// The streaming reader's header, for a file read serially.
    fn serial(path: &Path) -> Result<Self, IoError> {
        let t = CsvTable::read(path)?;
        Ok(Self {
            path: path.to_path_buf(),
            headers: t.headers,
            chunks: None,
            share: None,
        })
    }

    /// Whether the records are parsed in parallel (else serially, see the module docs).
    pub fn is_parallel(&self) -> bool {
        self.chunks.is_some()
    }

    /// Index of the column called `name` (ignoring case); the error lists the columns there are.
    pub fn column(&self, name: &str) -> Result<usize, IoError> {
        self.column_any(&[name])
    }

    /// Index of the first of `names` (aliases, in order of preference) present in the header.
    pub fn column_any(&self, names: &[&str]) -> Result<usize, IoError> {
        find_column(&self.path, &self.headers, names)
    }

    /// Call `f` on every record with an accumulator per chunk (starting at `T::default()`),
    /// chunks in parallel; returns the accumulators in file order. The first error in file
    /// order (from the file or from `f`) is returned instead.
    pub fn fold<T, E>(
        &self,
        f: impl Fn(&mut T, CsvRow<'_>) -> Result<(), E> + Sync,
    ) -> Result<Vec<T>, E>
    where
        T: Default + Send,
        E: From<IoError> + Send,
    {
        let Some((bytes, chunks)) = &self.chunks else {
            // Part p of n reading serially: its share of the records by count (a first pass
            // counts them; a malformed record is every part's error).
            let keep = match self.share {
                Some((p, n)) => {
                    let mut t = CsvTable::read(&self.path)?;
                    let mut rec = CsvRecord::default();
                    let mut count = 0u64;
                    while t.next_record(&mut rec)? {
                        count += 1;
                    }
                    let at = |p: usize| (u128::from(count) * p as u128 / n.max(1) as u128) as u64;
                    at(p)..at(p + 1)
                }
                None => 0..u64::MAX,
            };
            let mut t = CsvTable::read(&self.path)?;
            let mut acc = T::default();
            let mut rec = CsvRecord::default();
            let mut k = 0u64;
            while k < keep.end && t.next_record(&mut rec)? {
                if keep.contains(&k) {
                    f(&mut acc, t.row(&rec))?;
                }
                k += 1;
            }
            return Ok(vec![acc]);
        };
        // Every chunk's result kept (rayon's collect into a Result may return any chunk's
        // error), then the first error in file order.
        let results: Vec<Result<T, E>> = chunks
            .par_iter()
            .map(|&(from, to, line)| {
                let mut acc = T::default();
                self.parse(&bytes[from..to], line, |row| f(&mut acc, row))?;
                Ok(acc)
            })
            .collect();
        results.into_iter().collect()
    }

    /// Parse the lines of one chunk, the first being `line`.
    fn parse<E: From<IoError>>(
        &self,
        chunk: &[u8],
        mut line: u64,
        mut f: impl FnMut(CsvRow<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let n = self.headers.len();
        let mut fields: Vec<&str> = Vec::with_capacity(n.max(1));
        for text in chunk.split(|&b| b == b'\n') {
            let this = line;
            line += 1;
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            if text.is_empty() {
                continue; // a blank line, skipped as the csv crate does
            }
            fields.clear();
            for (i, field) in text.split(|&b| b == b',').enumerate() {
                let field =
                    std::str::from_utf8(field.trim_ascii()).map_err(|_| IoError::CsvMalformed {
                        path: self.path.clone(),
                        line: this,
                        detail: format!(
                            "field {} is not valid UTF-8 text; save the file as UTF-8",
                            i + 1
                        ),
                    })?;
                fields.push(field);
            }
            if fields.len() != n {
                return Err(IoError::CsvMalformed {
                    path: self.path.clone(),
                    line: this,
                    detail: format!(
                        "the record has {} field(s) but the header has {n}; \
                         check for missing or extra commas or an unclosed quote",
                        fields.len()
                    ),
                }
                .into());
            }
            f(CsvRow {
                path: &self.path,
                headers: &self.headers,
                line: this,
                fields: Fields::Split(&fields),
            })?;
        }
        Ok(())
    }
}

/// Line feeds in `b`.
fn count_newlines(b: &[u8]) -> usize {
    b.par_chunks(CHUNK_BYTES)
        .map(|c| c.iter().filter(|&&x| x == b'\n').count())
        .sum()
}

/// A quote, or a carriage return not followed by a line feed, in `b` (not across its end).
fn needs_serial(b: &[u8]) -> bool {
    b.iter()
        .enumerate()
        .any(|(i, &c)| c == b'"' || (c == b'\r' && b.get(i + 1).is_some_and(|&n| n != b'\n')))
}

/// A carriage return at the end of one [`CHUNK_BYTES`] piece not followed by a line feed at the
/// start of the next, or ending the file (which the csv crate takes as a line end too).
fn needs_serial_at_seams(b: &[u8]) -> bool {
    (1..=b.len().div_ceil(CHUNK_BYTES)).any(|k| {
        let end = (k * CHUNK_BYTES).min(b.len());
        end > 0 && b[end - 1] == b'\r' && b.get(end) != Some(&b'\n')
    })
}

/// Cut `bytes[start..]` into pieces of about [`CHUNK_BYTES`] ending at line ends, each with
/// the line number of its first line (`first_line` for the first).
fn split(bytes: &[u8], start: usize, first_line: u64) -> Vec<Piece> {
    let mut cuts = vec![start];
    let mut at = start;
    while at < bytes.len() {
        let probe = (at + CHUNK_BYTES).min(bytes.len());
        let end = match bytes[probe..].iter().position(|&b| b == b'\n') {
            Some(i) => probe + i + 1,
            None => bytes.len(),
        };
        cuts.push(end);
        at = end;
    }
    let newlines: Vec<u64> = cuts
        .par_windows(2)
        .map(|w| bytes[w[0]..w[1]].iter().filter(|&&b| b == b'\n').count() as u64)
        .collect();
    let mut line = first_line;
    cuts.windows(2)
        .zip(newlines)
        .map(|(w, n)| {
            let piece = (w[0], w[1], line);
            line += n;
            piece
        })
        .collect()
}
