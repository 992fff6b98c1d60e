//! Grids as Python sees them: `(x_min, y_max, cell_size, rows, cols)`, row 0 north.

use geofield_core::GridSpec;

/// `(x_min_m, y_max_m, cell_size_m, rows, cols)`.
pub type Grid = (f64, f64, f64, usize, usize);

pub fn grid_tuple(g: &GridSpec) -> Grid {
    (g.x_min_m, g.y_max_m, g.cell_size_m, g.rows, g.cols)
}
