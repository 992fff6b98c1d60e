//! CUDA glue of the wind solvers (kernels in `geofield-cuda/kernels/wind.cu`).

use std::sync::Arc;

use geofield_cuda::Gpu;

use super::SolveReport;
use super::grid::WindGrid;
use super::multigrid::{Problem, SolveRun};
use super::ops::Coeffs;
use super::params::{Solver, WindOptions};
use super::west::SweepRun;
use crate::GeofieldError;

/// WEST sweeps on the GPU, in place on (u, v, w).
#[allow(clippy::too_many_arguments)]
pub fn west(
    _gpu: &Arc<Gpu>,
    _grid: &WindGrid,
    _coeffs: &Coeffs,
    _omega: f64,
    _faces: (&mut [f64], &mut [f64], &mut [f64]),
    _opts: &WindOptions,
    _threshold: f64,
    _report: &mut SolveReport,
    _progress: &mut dyn FnMut(usize, f64),
) -> Result<SweepRun, GeofieldError> {
    Err(GeofieldError::Unsupported(
        "the wind field on CUDA is being written; use --backend cpu".into(),
    ))
}

/// Sherman's problem on the GPU.
#[allow(clippy::too_many_arguments)]
pub fn sherman(
    _gpu: &Arc<Gpu>,
    _problem: &Problem,
    _solver: Solver,
    _omega: f64,
    _opts: &WindOptions,
    _threshold: f64,
    _report: &mut SolveReport,
    _progress: &mut dyn FnMut(usize, f64),
) -> Result<SolveRun, GeofieldError> {
    Err(GeofieldError::Unsupported(
        "the wind field on CUDA is being written; use --backend cpu".into(),
    ))
}
