//! The CUDA flock engine: a thin adapter over `geofield_cuda::flock::GpuFlock`.

use std::sync::Arc;

use geofield_cuda::Gpu;

use super::{FlockParams, FlockState, StepDetail};
use crate::GeofieldError;

pub(super) struct CudaFlockEngine {}

impl CudaFlockEngine {
    pub(super) fn new(
        _gpu: &Arc<Gpu>,
        _params: FlockParams,
        _state: &FlockState,
    ) -> Result<Self, GeofieldError> {
        Err(GeofieldError::Unsupported(
            "CUDA flock (in progress)".into(),
        ))
    }

    pub(super) fn step(&mut self, _steps: usize) -> Result<(), GeofieldError> {
        Ok(())
    }

    pub(super) fn step_detail(&mut self) -> Result<StepDetail, GeofieldError> {
        Ok(StepDetail::default())
    }

    pub(super) fn profile_step(&mut self) -> Result<Vec<(&'static str, f64)>, GeofieldError> {
        Ok(Vec::new())
    }

    pub(super) fn synchronize(&self) -> Result<(), GeofieldError> {
        Ok(())
    }

    pub(super) fn state(&self) -> Result<FlockState, GeofieldError> {
        Ok(FlockState::default())
    }
}
