//! The CUDA flock engine: a thin adapter over `geofield_cuda::flock::GpuFlock`, whose whole
//! step (grid build, search, steering, integration, wrap) runs on the device with the state
//! resident there.

use std::sync::Arc;

use geofield_cuda::Gpu;
use geofield_cuda::flock::{FlockConfig, FlockHostState, FlockSceneHost, FlockSearch, GpuFlock};

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
        scene: &super::scene::Compiled,
        preds: &FlockState,
    ) -> Result<Self, GeofieldError> {
        let host = |s: &FlockState| FlockHostState {
            pos: s.pos.clone(),
            fwd: s.fwd.clone(),
            speed: s.speed.clone(),
            acc: s.acc.clone(),
        };
        let scene = FlockSceneHost {
            obstacles: scene.obstacles.clone(),
            predators: host(preds),
            predator_limits: scene
                .limits
                .iter()
                .map(|l| [l.max_speed, l.max_force, l.max_prediction])
                .collect(),
            constants: scene.constants,
        };
        Ok(CudaFlockEngine {
            flock: GpuFlock::with_scene(gpu, config(&params)?, &host(state), &scene)?,
        })
    }

    pub(super) fn predators(&self) -> Result<FlockState, GeofieldError> {
        let s = self.flock.predators()?;
        Ok(FlockState {
            pos: s.pos,
            fwd: s.fwd,
            speed: s.speed,
            acc: s.acc,
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
