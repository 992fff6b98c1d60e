//! GPU rows of `geofield bench wind` (filled when the CUDA wind path lands).

use anyhow::Result;
use geofield::Backend;

use super::wind::{BenchArgs, Case, Row};

pub fn rows(
    _be: &Backend,
    _c: &Case,
    _a: &BenchArgs,
    _threshold: f64,
    _rows: &mut Vec<Row>,
) -> Result<()> {
    Ok(())
}
