//! Glue between the kriging systems and the CUDA kernels of `geofield-cuda`.

use std::sync::Arc;

use geofield_cuda::Gpu;

use super::System;
use super::params::Precision;
use super::space::NodeMap;
use crate::GeofieldError;

type Out = (Vec<Vec<f64>>, Option<Vec<f64>>);

/// Predictions and variances at kriging-space nodes on the GPU.
pub(crate) fn eval_nodes(
    _gpu: &Arc<Gpu>,
    _system: &System,
    _nx: &[f64],
    _ny: &[f64],
    _variance: bool,
    _precision: Precision,
) -> Result<Out, GeofieldError> {
    Err(GeofieldError::Unsupported(
        "kriging on the CUDA backend is not wired in yet; use --backend cpu".into(),
    ))
}

/// Predictions and variances at the nodes of a grid on the GPU.
pub(crate) fn eval_grid(
    _gpu: &Arc<Gpu>,
    _system: &System,
    _map: &NodeMap,
    _rows: usize,
    _cols: usize,
    _variance: bool,
    _precision: Precision,
) -> Result<Out, GeofieldError> {
    Err(GeofieldError::Unsupported(
        "kriging on the CUDA backend is not wired in yet; use --backend cpu".into(),
    ))
}
