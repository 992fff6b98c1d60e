//! Kriging (issue 4, in progress): variograms so far.
//!
//! - [`global`]: global simple and ordinary kriging of many surfaces by dual kriging, with the
//!   kriging variance and closed-form leave-one-out cross-validation (CPU, f64).
//! - [`empirical`]: empirical variograms (Matheron, Cressie–Hawkins; lag bins, max lag,
//!   direction) and weighted least-squares fitting of any model.
//! - [`variogram`]: the models in the practical-range convention, nested structures, a nugget,
//!   and the mapping of each model's parameters to PyKrige, GSTools and R gstat.

pub mod empirical;
pub mod global;
pub mod variogram;

pub use empirical::{Estimator, Fit, LagBin, LagSpec, empirical, fit};
pub use global::{CrossValidation, GlobalKriging, Kind};
pub use variogram::{Model, Structure, Variogram};
