//! Kriging (issue 4, in progress): variogram models so far.
//!
//! - [`variogram`]: the models in the practical-range convention, nested structures, a nugget,
//!   and the mapping of each model's parameters to PyKrige, GSTools and R gstat.

pub mod variogram;

pub use variogram::{Model, Structure, Variogram};
