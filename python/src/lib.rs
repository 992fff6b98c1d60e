//! `geofield._native`: the compiled half of the `geofield` Python package. Every function here
//! converts numpy arrays and Python values to the library's types, releases the GIL, calls the
//! library and converts the result back; the rules (validation, algorithms, precision policy)
//! are the library's. The Python half (`pysrc/geofield`) adds array coercion, pandas and
//! xarray conversion and the peers' drop-in classes. Long calls go through
//! [`interrupt::run_interruptible`]: Ctrl-C interrupts them, and `progress` draws a bar.

mod backend;
mod ball;
mod cokriging;
mod crs;
mod dispersal;
mod envelope;
mod errors;
mod flock;
mod forest;
mod grid;
mod interrupt;
mod knn;
mod krige3d;
mod kriging;
mod simulate;
mod wind;
mod wind_diurnal;

use pyo3::prelude::*;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(backend::info, m)?)?;
    m.add_function(wrap_pyfunction!(dispersal::disperse, m)?)?;
    m.add_function(wrap_pyfunction!(dispersal::species_names, m)?)?;
    m.add_function(wrap_pyfunction!(crs::crs_attrs, m)?)?;
    m.add_function(wrap_pyfunction!(knn::knn, m)?)?;
    m.add_function(wrap_pyfunction!(ball::ball_within, m)?)?;
    m.add_function(wrap_pyfunction!(ball::ball_pairs, m)?)?;
    m.add_function(wrap_pyfunction!(ball::ball_counts, m)?)?;
    m.add_function(wrap_pyfunction!(ball::ball_count, m)?)?;
    m.add_function(wrap_pyfunction!(ball::ball_knn, m)?)?;
    m.add_function(wrap_pyfunction!(ball::ripley_k, m)?)?;
    m.add_function(wrap_pyfunction!(ball::pair_correlation, m)?)?;
    m.add_function(wrap_pyfunction!(envelope::csr_envelope, m)?)?;
    m.add_function(wrap_pyfunction!(envelope::csr_test, m)?)?;
    m.add_function(wrap_pyfunction!(envelope::csr_patterns, m)?)?;
    m.add_function(wrap_pyfunction!(knn::check_points, m)?)?;
    m.add_function(wrap_pyfunction!(kriging::krige, m)?)?;
    m.add_function(wrap_pyfunction!(krige3d::krige3d, m)?)?;
    m.add_function(wrap_pyfunction!(cokriging::cokrige_native, m)?)?;
    m.add_function(wrap_pyfunction!(krige3d::variogram3d, m)?)?;
    m.add_function(wrap_pyfunction!(simulate::simulate, m)?)?;
    m.add_function(wrap_pyfunction!(kriging::variogram_bins, m)?)?;
    m.add_function(wrap_pyfunction!(kriging::variogram_map, m)?)?;
    m.add_function(wrap_pyfunction!(kriging::cross_validate, m)?)?;
    m.add_class::<flock::Flock>()?;
    m.add_function(wrap_pyfunction!(forest::forest, m)?)?;
    m.add_function(wrap_pyfunction!(forest::forest_species_names, m)?)?;
    m.add_function(wrap_pyfunction!(wind::wind, m)?)?;
    Ok(())
}
