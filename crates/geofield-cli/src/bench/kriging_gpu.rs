//! GPU-only rows of `geofield bench kriging`: the paper's kernels (experiments 1, 2, 4).

use anyhow::Result;
use geofield::Backend;
use geofield::kriging::GlobalKriging;

use super::BenchEnv;
use super::kriging::{BenchArgs, Row};

#[allow(clippy::too_many_arguments)]
pub fn paper_rows(
    _a: &BenchArgs,
    _be: &Backend,
    _env: &BenchEnv,
    _case: &str,
    _g: &GlobalKriging,
    _nx: &[f64],
    _ny: &[f64],
    _z: &[Vec<f64>],
    _reference: &[Vec<f64>],
    _spread: f64,
    _rows: &mut Vec<Row>,
) -> Result<()> {
    Ok(())
}
