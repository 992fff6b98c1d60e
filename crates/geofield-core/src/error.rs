use thiserror::Error;

const GIB: f64 = (1u64 << 30) as f64;

/// Errors from constructing grids, rasters and validated numbers.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum CoreError {
    /// A number that must be finite was NaN or infinite.
    #[error("{what} must be a finite number, got {value}")]
    NotFinite { what: String, value: f64 },
    /// A number that must be strictly positive was not.
    #[error("{what} must be > 0, got {value}")]
    NotPositive { what: String, value: f64 },
    /// The extent is empty or inverted.
    #[error(
        "extent is empty or inverted: x {x_min}..{x_max}, y {y_min}..{y_max} (need XMIN < XMAX and YMIN < YMAX)"
    )]
    BadExtent {
        x_min: f64,
        y_min: f64,
        x_max: f64,
        y_max: f64,
    },
    /// The extent's width or height is not a whole number of cells.
    #[error(
        "extent {axis} size {size_m} m is not a whole number of {cell_size_m} m cells ({cells} cells); adjust the extent or the cell size"
    )]
    NotWholeCells {
        axis: &'static str,
        size_m: f64,
        cell_size_m: f64,
        cells: f64,
    },
    /// Something would need more memory than the machine has available (or than can be
    /// addressed); `what` says what (e.g. "a grid of 100000 rows x 100000 cols x 1 band(s) of
    /// 8-byte values"). Nothing has been allocated when this is returned.
    #[error(
        "{what} would need {need_bytes} bytes ({:.2} GiB) of memory, more than the {available_bytes} bytes ({:.2} GiB) available",
        *.need_bytes as f64 / GIB, *.available_bytes as f64 / GIB
    )]
    TooLarge {
        what: String,
        need_bytes: u128,
        available_bytes: u128,
    },
    /// A grid built from an extent and a cell size has more rows or columns than can be
    /// addressed; the numbers are the real ones (not clamped), and `field` names the input that
    /// makes it so large.
    #[error(
        "a grid of {rows:.0} rows x {cols:.0} cols ({width_m} m x {height_m} m at {cell_size_m} m cells) is too large: at most {max_side} rows or cols; increase `{field}` or shrink the extent"
    )]
    GridTooLarge {
        rows: f64,
        cols: f64,
        width_m: f64,
        height_m: f64,
        cell_size_m: f64,
        max_side: u64,
        field: &'static str,
    },
    /// A raster's data length does not match its grid and band count.
    #[error(
        "raster data holds {got} values, expected {expected} ({bands} bands x {rows} rows x {cols} cols)"
    )]
    ShapeMismatch {
        got: usize,
        expected: usize,
        bands: usize,
        rows: usize,
        cols: usize,
    },
}
