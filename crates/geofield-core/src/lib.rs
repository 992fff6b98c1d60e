//! Shared foundations of geofield: grids and rasters in world coordinates, validated numbers
//! parsed once at the boundary, and the error type they report.
//!
//! Conventions (see DESIGN.md): world coordinates in metres, x east, y north, z up. A 2-D grid is
//! [`GridSpec`]; row 0 is the north edge and cell (row, col) has its centre at
//! `(x_min + (col + 0.5) * cell, y_max - (row + 0.5) * cell)`.

mod error;
mod exact_sum;
mod grid;
pub mod memory;
mod numbers;
mod raster;

pub use error::CoreError;
pub use exact_sum::ExactSum;
pub use grid::{Extent, GridSpec, MAX_SIDE};
pub use memory::{available_memory_bytes, check_memory};
pub use numbers::{FiniteF64, PositiveF64};
pub use raster::{Raster, RasterData};
