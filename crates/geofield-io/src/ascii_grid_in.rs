//! Reading ESRI ASCII grids (`.asc`), the counterpart of [`crate::ascii_grid`].
//!
//! Header: one `key value` pair per line, keys matched ignoring case:
//!
//! - `ncols`, `nrows`: positive integers;
//! - `xllcorner` or `xllcenter`, `yllcorner` or `yllcenter`: the lower-left corner of the grid,
//!   or the centre of its lower-left cell (shifted by half a cell to the corner);
//! - `cellsize`, or `dx` and `dy` when they are equal (non-square cells are refused);
//! - optional `NODATA_value`: cells holding it become NaN, and the value is kept in
//!   [`RasterMeta::nodata`].
//!
//! Then `nrows * ncols` numbers separated by any white space, row by row from the north edge
//! (row 0 of a [`GridSpec`]). Errors name the file and the 1-based line; values are quoted at
//! most 80 characters. Whatever `ncols` and `nrows` declare, room is reserved only for the
//! values the text can hold (a value and its separator take at least 2 bytes), so a corrupt
//! header gives "too few values", never a huge allocation.
//!
//! A `.prj` beside the grid (as [`crate::ascii_grid`] writes) gives [`RasterMeta::crs_epsg`]
//! when its WKT names an EPSG code ([`crate::crs::epsg_from_wkt`]).

use std::path::Path;

use geofield_core::{GridSpec, Raster, RasterData};

use crate::IoError;
use crate::raster_out::RasterMeta;

/// Read a single-band ESRI ASCII grid. The band is named `band1`; values are f64.
pub fn read_ascii_grid(path: &Path) -> Result<(Raster, RasterMeta), IoError> {
    let text = std::fs::read_to_string(path).map_err(|source| IoError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let (raster, mut meta) = parse_ascii_grid(path, &text)?;
    meta.crs_epsg = crate::crs::epsg_of_prj(&path.with_extension("prj"));
    Ok((raster, meta))
}

/// Bytes of `text` before line `line` (1-based).
fn header_bytes(text: &str, line: u64) -> usize {
    let mut at = 0;
    for _ in 1..line {
        match text[at..].find('\n') {
            Some(p) => at += p + 1,
            None => return text.len(),
        }
    }
    at
}

/// A header value and the line it came from.
#[derive(Default)]
struct Header {
    ncols: Option<(usize, u64)>,
    nrows: Option<(usize, u64)>,
    x: Option<(f64, bool, u64)>,
    y: Option<(f64, bool, u64)>,
    cellsize: Option<(f64, u64)>,
    dx: Option<(f64, u64)>,
    dy: Option<(f64, u64)>,
    nodata: Option<f64>,
}

/// Parse the text of an ESRI ASCII grid read from `path` (named in errors).
pub fn parse_ascii_grid(path: &Path, text: &str) -> Result<(Raster, RasterMeta), IoError> {
    let err = |line: u64, reason: String| IoError::BadAsciiGrid {
        path: path.to_path_buf(),
        line,
        reason,
    };
    let mut lines = text.lines().enumerate().peekable();
    let mut h = Header::default();
    // Header: lines whose first token is a key (starts with a letter and is not a number).
    while let Some(&(i, line)) = lines.peek() {
        let line_no = i as u64 + 1;
        let mut tokens = line.split_whitespace();
        let Some(key_text) = tokens.next() else {
            lines.next();
            continue;
        };
        if !key_text.starts_with(|c: char| c.is_ascii_alphabetic())
            || key_text.parse::<f64>().is_ok()
        {
            break;
        }
        let key = crate::shorten(key_text);
        lines.next();
        let value_raw = tokens
            .next()
            .ok_or_else(|| err(line_no, format!("header key {key:?} has no value")))?;
        let value_text = crate::shorten(value_raw);
        if let Some(extra) = tokens.next().map(crate::shorten) {
            return Err(err(
                line_no,
                format!("header key {key:?} has more than one value (\"{extra}\" is extra)"),
            ));
        }
        let number = || -> Result<f64, IoError> {
            value_raw
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| {
                    err(
                        line_no,
                        format!("{key}: \"{value_text}\" is not a finite number"),
                    )
                })
        };
        let count = || -> Result<usize, IoError> {
            value_raw
                .parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| {
                    err(
                        line_no,
                        format!("{key}: \"{value_text}\" is not a positive integer"),
                    )
                })
        };
        let lower = key_text.to_ascii_lowercase();
        let duplicate = match lower.as_str() {
            "ncols" => h.ncols.replace((count()?, line_no)).is_some(),
            "nrows" => h.nrows.replace((count()?, line_no)).is_some(),
            "xllcorner" => h.x.replace((number()?, false, line_no)).is_some(),
            "xllcenter" => h.x.replace((number()?, true, line_no)).is_some(),
            "yllcorner" => h.y.replace((number()?, false, line_no)).is_some(),
            "yllcenter" => h.y.replace((number()?, true, line_no)).is_some(),
            "cellsize" => h.cellsize.replace((number()?, line_no)).is_some(),
            "dx" => h.dx.replace((number()?, line_no)).is_some(),
            "dy" => h.dy.replace((number()?, line_no)).is_some(),
            "nodata_value" => h.nodata.replace(number()?).is_some(),
            _ => return Err(err(line_no, format!("unknown header key {key:?}"))),
        };
        if duplicate {
            return Err(err(
                line_no,
                format!(
                    "header key {key:?} is given twice (or with both its corner and centre forms)"
                ),
            ));
        }
    }
    let first_data_line = lines
        .peek()
        .map_or(text.lines().count() as u64 + 1, |&(i, _)| i as u64 + 1);
    let missing = |what: &str| err(first_data_line, format!("the header has no {what}"));
    let (cols, _) = h.ncols.ok_or_else(|| missing("ncols"))?;
    let (rows, _) = h.nrows.ok_or_else(|| missing("nrows"))?;
    let (x, x_is_centre, _) = h.x.ok_or_else(|| missing("xllcorner or xllcenter"))?;
    let (y, y_is_centre, _) = h.y.ok_or_else(|| missing("yllcorner or yllcenter"))?;
    let (cell, cell_line) = match (h.cellsize, h.dx, h.dy) {
        (Some(c), None, None) => c,
        (None, Some((dx, line)), Some((dy, _))) => {
            if dx != dy {
                return Err(err(
                    line,
                    format!(
                        "dx = {dx} and dy = {dy}: non-square cells are not supported; resample to square cells first (e.g. gdalwarp -tr)"
                    ),
                ));
            }
            (dx, line)
        }
        (Some((_, line)), _, _) => {
            return Err(err(line, "cellsize given together with dx/dy".into()));
        }
        _ => return Err(missing("cellsize (or both dx and dy)")),
    };
    if cell <= 0.0 {
        return Err(err(cell_line, format!("cellsize {cell} is not positive")));
    }
    let n = rows.checked_mul(cols).ok_or_else(|| {
        err(
            first_data_line,
            format!("{cols} x {rows} cells is too many"),
        )
    })?;
    let x_min = if x_is_centre { x - 0.5 * cell } else { x };
    let y_min = if y_is_centre { y - 0.5 * cell } else { y };
    let grid = GridSpec {
        x_min_m: x_min,
        y_max_m: y_min + rows as f64 * cell,
        cell_size_m: cell,
        cols,
        rows,
    };

    // Each value takes at least one character and one separator (the last needs none), so the
    // text after the header holds at most (bytes + 1) / 2 values: room for more than that is
    // never reserved, whatever ncols and nrows say (a header declaring more values than the file
    // holds is reported as "too few values" below).
    let data_bytes = text
        .len()
        .saturating_sub(header_bytes(text, first_data_line));
    let mut values = Vec::with_capacity(n.min(data_bytes.saturating_add(1) / 2));
    let mut last_line = first_data_line;
    for (i, line) in lines {
        let line_no = i as u64 + 1;
        for token_text in line.split_whitespace() {
            let token = || crate::shorten(token_text);
            if values.len() == n {
                return Err(err(
                    line_no,
                    format!(
                        "too many values: the header declares {rows} rows x {cols} cols = {n}, and \"{}\" is one more",
                        token()
                    ),
                ));
            }
            let v: f64 = token_text.parse().map_err(|_| {
                err(
                    line_no,
                    format!(
                        "\"{}\" is not a number (value {} of {n})",
                        token(),
                        values.len() + 1
                    ),
                )
            })?;
            let v = match h.nodata {
                Some(nd) if v == nd => f64::NAN,
                _ => v,
            };
            values.push(v);
        }
        last_line = line_no;
    }
    if values.len() < n {
        return Err(err(
            last_line,
            format!(
                "too few values: the header declares {rows} rows x {cols} cols = {n}, the file has {}",
                values.len()
            ),
        ));
    }
    let raster = Raster {
        grid,
        band_names: vec!["band1".to_string()],
        data: RasterData::F64(values),
    };
    let meta = RasterMeta {
        nodata: h.nodata,
        ..RasterMeta::default()
    };
    Ok((raster, meta))
}
