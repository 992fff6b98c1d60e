use crate::{CoreError, FiniteF64, PositiveF64};

/// An axis-aligned rectangle in world metres.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Extent {
    pub x_min_m: f64,
    pub y_min_m: f64,
    pub x_max_m: f64,
    pub y_max_m: f64,
}

impl Extent {
    /// Validate an extent: finite and non-empty.
    pub fn new(x_min_m: f64, y_min_m: f64, x_max_m: f64, y_max_m: f64) -> Result<Self, CoreError> {
        for (v, what) in [
            (x_min_m, "XMIN"),
            (y_min_m, "YMIN"),
            (x_max_m, "XMAX"),
            (y_max_m, "YMAX"),
        ] {
            FiniteF64::new(v, what)?;
        }
        if !(x_min_m < x_max_m && y_min_m < y_max_m) {
            return Err(CoreError::BadExtent {
                x_min: x_min_m,
                y_min: y_min_m,
                x_max: x_max_m,
                y_max: y_max_m,
            });
        }
        Ok(Self {
            x_min_m,
            y_min_m,
            x_max_m,
            y_max_m,
        })
    }
    pub fn width_m(&self) -> f64 {
        self.x_max_m - self.x_min_m
    }
    pub fn height_m(&self) -> f64 {
        self.y_max_m - self.y_min_m
    }
    /// True when (x, y) lies inside the closed rectangle.
    pub fn contains(&self, x_m: f64, y_m: f64) -> bool {
        x_m >= self.x_min_m && x_m <= self.x_max_m && y_m >= self.y_min_m && y_m <= self.y_max_m
    }
}

/// A north-up 2-D raster grid in world metres.
///
/// Row 0 is the north edge; cell (row, col) has its centre at
/// `(x_min_m + (col + 0.5) * cell_size_m, y_max_m - (row + 0.5) * cell_size_m)`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct GridSpec {
    pub x_min_m: f64,
    pub y_max_m: f64,
    pub cell_size_m: f64,
    pub cols: usize,
    pub rows: usize,
}

/// Relative slack allowed when checking that an extent is a whole number of cells: a few ulps of
/// the cell count, so that e.g. 0.3 m / 0.1 m (2.9999999999999996) counts as 3.
const WHOLE_CELLS_REL_TOL: f64 = 1e-9;

/// Most rows or columns of a grid built by [`GridSpec::from_extent`] (cell indices stay within
/// u32 on every backend).
pub const MAX_SIDE: u64 = u32::MAX as u64;

impl GridSpec {
    /// The grid covering `extent` with square cells of `cell_size_m`; an error unless the width
    /// and height are whole numbers of cells.
    pub fn from_extent(extent: Extent, cell_size_m: f64) -> Result<Self, CoreError> {
        let cell = PositiveF64::new(cell_size_m, "cell_size_m")?.get();
        // Width and height in f64: a finite extent can still be infinitely wide (1e308 - -1e308).
        let (width_m, height_m) = (extent.width_m(), extent.height_m());
        let too_large = || CoreError::GridTooLarge {
            rows: height_m / cell,
            cols: width_m / cell,
            width_m,
            height_m,
            cell_size_m: cell,
            max_side: MAX_SIDE,
            field: "cell_size_m",
        };
        let count = |axis: &'static str, size_m: f64| -> Result<usize, CoreError> {
            let cells = size_m / cell;
            let rounded = cells.round();
            if !cells.is_finite() || rounded > MAX_SIDE as f64 {
                return Err(too_large());
            }
            if rounded < 1.0 || (cells - rounded).abs() > WHOLE_CELLS_REL_TOL * cells.max(1.0) {
                return Err(CoreError::NotWholeCells {
                    axis,
                    size_m,
                    cell_size_m: cell,
                    cells,
                });
            }
            Ok(rounded as usize)
        };
        let cols = count("width (x)", width_m)?;
        let rows = count("height (y)", height_m)?;
        Ok(Self {
            x_min_m: extent.x_min_m,
            y_max_m: extent.y_max_m,
            cell_size_m: cell,
            cols,
            rows,
        })
    }

    /// Number of cells (rows x cols).
    pub fn n_cells(&self) -> usize {
        self.rows * self.cols
    }
    pub fn width_m(&self) -> f64 {
        self.cols as f64 * self.cell_size_m
    }
    pub fn height_m(&self) -> f64 {
        self.rows as f64 * self.cell_size_m
    }
    pub fn x_max_m(&self) -> f64 {
        self.x_min_m + self.width_m()
    }
    pub fn y_min_m(&self) -> f64 {
        self.y_max_m - self.height_m()
    }
    pub fn extent(&self) -> Extent {
        Extent {
            x_min_m: self.x_min_m,
            y_min_m: self.y_min_m(),
            x_max_m: self.x_max_m(),
            y_max_m: self.y_max_m,
        }
    }
    /// World coordinates of the centre of cell (row, col).
    pub fn cell_centre(&self, row: usize, col: usize) -> (f64, f64) {
        (
            self.x_min_m + (col as f64 + 0.5) * self.cell_size_m,
            self.y_max_m - (row as f64 + 0.5) * self.cell_size_m,
        )
    }
    /// The (row, col) whose cell contains (x, y), or None outside the grid. Points on the east or
    /// south edge belong to the last column or row.
    pub fn cell_of(&self, x_m: f64, y_m: f64) -> Option<(usize, usize)> {
        let c = ((x_m - self.x_min_m) / self.cell_size_m).floor();
        let r = ((self.y_max_m - y_m) / self.cell_size_m).floor();
        let c = if c == self.cols as f64 && x_m <= self.x_max_m() {
            c - 1.0
        } else {
            c
        };
        let r = if r == self.rows as f64 && y_m >= self.y_min_m() {
            r - 1.0
        } else {
            r
        };
        if c >= 0.0 && r >= 0.0 && (c as usize) < self.cols && (r as usize) < self.rows {
            Some((r as usize, c as usize))
        } else {
            None
        }
    }

    /// Refuse, up front, a grid whose `bands` layers of `bytes_per_value` would exceed
    /// `limit_bytes`; the error gives the size it would need.
    pub fn check_memory(
        &self,
        bands: usize,
        bytes_per_value: usize,
        limit_bytes: u128,
    ) -> Result<(), CoreError> {
        let needed =
            self.rows as u128 * self.cols as u128 * bands as u128 * bytes_per_value as u128;
        if needed > limit_bytes {
            return Err(CoreError::TooLarge {
                what: format!(
                    "a grid of {} rows x {} cols x {bands} band(s) of {bytes_per_value}-byte values",
                    self.rows, self.cols
                ),
                need_bytes: needed,
                available_bytes: limit_bytes,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_cells_and_centres() {
        let g = GridSpec::from_extent(Extent::new(0.0, 0.0, 0.3, 0.2).unwrap(), 0.1).unwrap();
        assert_eq!((g.cols, g.rows), (3, 2));
        let (x, y) = g.cell_centre(0, 0);
        assert!((x - 0.05).abs() < 1e-12 && (y - 0.15).abs() < 1e-12);
        assert_eq!(g.cell_of(0.05, 0.15), Some((0, 0)));
        assert_eq!(g.cell_of(0.3, 0.0), Some((1, 2)));
        assert_eq!(g.cell_of(-0.01, 0.1), None);
        assert!(GridSpec::from_extent(Extent::new(0.0, 0.0, 10.5, 10.0).unwrap(), 1.0).is_err());
        assert!(GridSpec::from_extent(Extent::new(0.0, 0.0, 10.0, 10.0).unwrap(), 0.0).is_err());
        assert!(GridSpec::from_extent(Extent::new(0.0, 0.0, 10.0, 10.0).unwrap(), -1.0).is_err());
        assert!(Extent::new(5.0, 0.0, 1.0, 2.0).is_err());
        assert!(Extent::new(f64::NAN, 0.0, 1.0, 2.0).is_err());
    }

    #[test]
    fn memory_check_names_size() {
        let g = GridSpec::from_extent(Extent::new(0.0, 0.0, 1e6, 1e6).unwrap(), 1.0).unwrap();
        let e = g.check_memory(4, 8, 1 << 34).unwrap_err().to_string();
        assert!(e.contains("GiB"), "{e}");
        assert!(g.check_memory(1, 4, u128::MAX).is_ok());
    }

    #[test]
    fn too_large_grids_give_their_real_size() {
        // An infinitely wide extent (finite corners) and a tiny cell.
        let e = GridSpec::from_extent(Extent::new(-1e308, 0.0, 1e308, 1.0).unwrap(), 1.0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("inf") && e.contains("cell_size_m"), "{e}");
        let e = GridSpec::from_extent(Extent::new(0.0, 0.0, 1e12, 10.0).unwrap(), 1.0)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("10 rows x 1000000000000 cols") && !e.contains("18446744073709551615"),
            "{e}"
        );
    }
}
