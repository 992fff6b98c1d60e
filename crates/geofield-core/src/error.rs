use thiserror::Error;

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
    /// The grid is too large to address or to allocate.
    #[error(
        "grid of {cols} x {rows} cells x {bands} band(s) needs {bytes_needed} bytes ({gib:.1} GiB), more than the {limit_bytes} bytes allowed"
    )]
    TooLarge {
        cols: usize,
        rows: usize,
        bands: usize,
        bytes_needed: u128,
        gib: f64,
        limit_bytes: u128,
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
