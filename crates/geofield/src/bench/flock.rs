//! Benchmark and test hooks of [`crate::flock`]: one step with its neighbours and forces, one
//! step timed by phases, and OpenSteer's per-agent arithmetic ([`steer`]) that the tests check
//! rule by rule.

use crate::GeofieldError;
use crate::flock::Flock;

/// One step's intermediate results, for tests and diagnostics.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StepDetail {
    /// Neighbours per agent in [`crate::flock::NeighborMode::Nearest`] mode (k per row,
    /// u32::MAX padding); empty in radius mode.
    pub neighbors: Vec<u32>,
    /// Neighbour count per agent.
    pub counts: Vec<u32>,
    /// The steering force before the low-speed limit and clipping.
    pub force: Vec<[f32; 3]>,
}

/// One step of `flock` that also returns the neighbours and forces it used. The step counts as
/// taken.
pub fn step_detail(flock: &mut Flock) -> Result<StepDetail, GeofieldError> {
    flock.step_detail()
}

/// Time one step of `flock` by phases, in milliseconds (GPU: device events per phase; CPU: the
/// index build alone, then a whole step). The step counts as taken.
pub fn profile_step(flock: &mut Flock) -> Result<Vec<(&'static str, f64)>, GeofieldError> {
    flock.profile_step()
}

/// OpenSteer's boids arithmetic for one agent (f32, pinned operation order), as the CPU and the
/// CUDA kernel run it.
pub mod steer {
    pub use crate::flock::steer::{
        Agent, Sums, accumulate, add, adjust_low_speed, div, dot, force, integrate, length, scale,
        sub, unit,
    };
}
