//! The CUDA flock engine: a thin adapter over `geofield_cuda::flock::GpuFlock`, whose whole
//! step (grid build, search, steering, integration, wrap) runs on the device with the state
//! resident there.

use std::sync::Arc;

use geofield_cuda::Gpu;
use geofield_cuda::flock::{FlockConfig, FlockHostState, FlockSearch, GpuFlock};

use super::{FlockIndex, FlockParams, FlockState, NeighborMode};
use crate::GeofieldError;
use crate::bench::flock::StepDetail;

pub(super) struct CudaFlockEngine {
    flock: GpuFlock,
}

fn config(p: &FlockParams) -> Result<FlockConfig, GeofieldError> {
    let search = match p.index {
        FlockIndex::Brute => FlockSearch::Brute,
        FlockIndex::Uniform => FlockSearch::Grid,
        FlockIndex::Dynamic => FlockSearch::Tree {
            max_leaf: super::cpu::DYNAMIC_LEAF as u32,
        },
    };
    Ok(FlockConfig {
        constants: p.constants,
        k: match p.mode {
            NeighborMode::Nearest { k } => k as u32,
            NeighborMode::Radius => 0,
        },
        r2: p.r2_inclusive(),
        dt: p.dt,
        search,
    })
}

impl CudaFlockEngine {
    pub(super) fn new(
        gpu: &Arc<Gpu>,
        params: FlockParams,
        state: &FlockState,
    ) -> Result<Self, GeofieldError> {
        let host = FlockHostState {
            pos: state.pos.clone(),
            fwd: state.fwd.clone(),
            speed: state.speed.clone(),
            acc: state.acc.clone(),
        };
        Ok(CudaFlockEngine {
            flock: GpuFlock::new(gpu, config(&params)?, &host)?,
        })
    }

    pub(super) fn step(&mut self, steps: usize) -> Result<(), GeofieldError> {
        Ok(self.flock.step(steps)?)
    }

    pub(super) fn step_detail(&mut self) -> Result<StepDetail, GeofieldError> {
        let d = self.flock.step_detail()?;
        Ok(StepDetail {
            neighbors: d.neighbors,
            counts: d.counts,
            force: d.force,
        })
    }

    pub(super) fn profile_step(&mut self) -> Result<Vec<(&'static str, f64)>, GeofieldError> {
        Ok(self.flock.profile_step()?)
    }

    pub(super) fn synchronize(&self) -> Result<(), GeofieldError> {
        Ok(self.flock.synchronize()?)
    }

    pub(super) fn state(&self) -> Result<FlockState, GeofieldError> {
        let s = self.flock.state()?;
        Ok(FlockState {
            pos: s.pos,
            fwd: s.fwd,
            speed: s.speed,
            acc: s.acc,
        })
    }
}
