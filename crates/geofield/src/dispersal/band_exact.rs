//! The exact sum of one species' band ([`super::band`]) on either backend, and a whole map's
//! rows.

use geofield_core::GridSpec;

use super::band::Band;
use super::sources::Sources;
use super::{DisperseOptions, Kernel, SpeciesReport, cuda, exact_cpu};
use crate::{Backend, Cancel, GeofieldError};

#[allow(clippy::too_many_arguments)]
pub(super) fn run_exact(
    backend: &Backend,
    grid: &GridSpec,
    kernel: &Kernel,
    sources: &Sources,
    opts: &DisperseOptions,
    report: &mut SpeciesReport,
    cancel: &Cancel,
    rows: &std::ops::Range<usize>,
) -> Result<Band, GeofieldError> {
    Ok(match backend {
        Backend::Cpu => {
            let mut v = vec![0.0; rows.len() * grid.cols];
            exact_cpu::exact_rows_until(
                grid, kernel, sources, opts.torus, rows.start, &mut v, cancel,
            );
            Band::from_f64(v, opts.precision)
        }
        Backend::Cuda(gpu) => {
            let (b, ms) = cuda::exact(gpu, grid, kernel, sources, opts.torus, opts.precision)?;
            report.kernel_ms = Some(ms);
            rows_of(b, grid.cols, rows)
        }
    })
}

/// Rows `rows` of a whole map of `cols` columns.
pub(super) fn rows_of(b: Band, cols: usize, rows: &std::ops::Range<usize>) -> Band {
    if rows.start == 0 && rows.end * cols == b.len() {
        return b;
    }
    let r = rows.start * cols..rows.end * cols;
    match b {
        Band::F32(v) => Band::F32(v[r].to_vec()),
        Band::F64(v) => Band::F64(v[r].to_vec()),
    }
}
