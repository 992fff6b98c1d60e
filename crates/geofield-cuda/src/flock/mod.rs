//! OpenSteer's boids flock on the GPU: safe wrappers over `kernels/flock.cu`.
//!
//! The state stays on the device between steps, and one step (neighbour structure, search,
//! steering, integration and spherical wrap) is a fixed sequence of kernels with no host round
//! trip and no synchronisation:
//!
//! - [`FlockSearch::Grid`]: `flock_bounds` (bounding box; its last block writes the grid plan to
//!   device memory), `flock_count` (cell counts and ranks), `flock_scan` (cell starts),
//!   `flock_scatter` (the whole state into cell order; it stays in that order), in radius mode
//!   `flock_sort_cells` (each cell's agents into id order), then `flock_step_grid_*` (search +
//!   steering + integration, one thread per agent): 5 launches per step (6 in radius mode).
//! - [`FlockSearch::Tree`]: the same launches over the dynamic grid: 2^L cells per axis in
//!   Morton order, searched by `flock_step_grid_*` as the implicit octree of aligned cell
//!   blocks (leaves of at most `max_leaf` agents; radius mode visits leaves in Morton order).
//! - [`FlockSearch::Brute`]: `flock_step_brute_*` alone (every agent a candidate): 1 launch.
//!
//! Semantics are those of `geofield::flock` (see `crates/geofield/src/flock/steer.rs`): the
//! neighbours of agent i are, in nearest mode, the up to k agents j ≠ i with d² ≤ r2 and the
//! smallest keys (d², id_j), summed in ascending key order, so that the result equals the CPU's
//! bit for bit; in radius mode every j ≠ i with d² ≤ r2, summed in a deterministic order that
//! differs from the CPU's (grid: cells in z, y, x order and agents of a cell in ascending id;
//! brute force: ascending id), so forces agree to rounding only. Both modes are bitwise
//! reproducible run to run.
//!
//! Steps are not captured into a CUDA graph: [`Gpu`] works on the context's legacy default
//! stream, which cannot be captured, and a private stream would switch cudarc's context into
//! multi-stream mode (event tracking on every buffer of every wrapper of the crate).

use std::sync::Arc;

use cudarc::driver::{
    CudaEvent, CudaFunction, CudaSlice, DeviceRepr, DriverError, LaunchConfig, PushKernelArg,
};

use crate::context::Gpu;
use crate::error::{CudaError, DriverResultExt, invalid};

const MODULE: &str = "flock";
/// Threads per block of the step kernels.
const STEP_THREADS: u32 = 128;
/// Threads per block of the build kernels.
const AUX_THREADS: u32 = 256;
/// Cells per scan tile (`FL_TILE`).
const TILE: usize = 4096;
/// `u64` words of the device-side plan buffer (`FlockPlan` is at most 128 bytes).
const PLAN_WORDS: usize = 16;

/// Largest k of the nearest mode.
pub const K_MAX: u32 = 64;
/// Most agents a flock may have.
pub const MAX_AGENTS: usize = 1 << 28;

/// OpenSteer's boids constants and the world radius (C: `FlockConstants`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct FlockConstants {
    pub world_radius: f32,
    pub max_force: f32,
    pub max_speed: f32,
    pub mass: f32,
    /// (3 · body radius)²: closer neighbours pass every behaviour whatever the angle.
    pub near2: f32,
    pub sep_r2: f32,
    pub sep_cos: f32,
    pub sep_weight: f32,
    pub ali_r2: f32,
    pub ali_cos: f32,
    pub ali_weight: f32,
    pub coh_r2: f32,
    pub coh_cos: f32,
    pub coh_weight: f32,
}

impl FlockConstants {
    /// OpenSteer 0.8.3's values (plugins/Boids.cpp, SimpleVehicle.cpp) with world radius
    /// `world_radius`. `geofield::flock::BoidsConstants` is this type.
    pub fn opensteer(world_radius: f32) -> Self {
        FlockConstants {
            world_radius,
            max_force: 27.0,
            max_speed: 9.0,
            mass: 1.0,
            near2: 1.5 * 1.5,
            sep_r2: 5.0 * 5.0,
            sep_cos: -0.707,
            sep_weight: 12.0,
            ali_r2: 7.5 * 7.5,
            ali_cos: 0.7,
            ali_weight: 8.0,
            coh_r2: 9.0 * 9.0,
            coh_cos: -0.15,
            coh_weight: 8.0,
        }
    }

    fn values(&self) -> [(&'static str, f32); 14] {
        [
            ("world_radius", self.world_radius),
            ("max_force", self.max_force),
            ("max_speed", self.max_speed),
            ("mass", self.mass),
            ("near2", self.near2),
            ("sep_r2", self.sep_r2),
            ("sep_cos", self.sep_cos),
            ("sep_weight", self.sep_weight),
            ("ali_r2", self.ali_r2),
            ("ali_cos", self.ali_cos),
            ("ali_weight", self.ali_weight),
            ("coh_r2", self.coh_r2),
            ("coh_cos", self.coh_cos),
            ("coh_weight", self.coh_weight),
        ]
    }
}

/// Which neighbour structure the steps use (both give the same neighbours).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlockSearch {
    /// Every agent is a candidate (O(N²); candidates tiled through shared memory).
    Brute,
    /// A uniform grid rebuilt on the device every step (counting sort into cells).
    Grid,
    /// The dynamic grid rebuilt on the device every step: 2^L cells per axis counting-sorted
    /// in Morton order, searched as the implicit octree of aligned cell blocks, a block of at
    /// most `max_leaf` agents being a leaf (the paper's cells split until they hold at most
    /// `max` agents).
    Tree { max_leaf: u32 },
}

/// Everything a GPU flock needs besides its state.
#[derive(Clone, Copy, Debug)]
pub struct FlockConfig {
    pub constants: FlockConstants,
    /// 1..=[`K_MAX`]: the k nearest within the radius; 0: every agent within the radius.
    pub k: u32,
    /// Inclusive threshold: j is a neighbour iff d² ≤ r2 (pass the float just below radius²).
    pub r2: f32,
    /// Fixed time step (finite, > 0).
    pub dt: f32,
    pub search: FlockSearch,
}

impl FlockConfig {
    /// Checks the configuration; errors name the field.
    pub fn validate(&self) -> Result<(), CudaError> {
        const K: &str = "flock (config)";
        if self.search == (FlockSearch::Tree { max_leaf: 0 }) {
            return Err(invalid(K, "max_leaf = 0 must be at least 1"));
        }
        if self.k > K_MAX {
            return Err(invalid(
                K,
                format!(
                    "k = {} is out of range (1..={K_MAX} nearest, 0 = all within the radius)",
                    self.k
                ),
            ));
        }
        if !(self.r2.is_finite() && self.r2 >= 0.0) {
            return Err(invalid(
                K,
                format!("r2 = {} must be finite and >= 0", self.r2),
            ));
        }
        if !(self.dt.is_finite() && self.dt > 0.0) {
            return Err(invalid(
                K,
                format!("dt = {} must be finite and > 0", self.dt),
            ));
        }
        if let Some((name, v)) = self
            .constants
            .values()
            .into_iter()
            .find(|(_, v)| !v.is_finite())
        {
            return Err(invalid(K, format!("constant {name} = {v} is not finite")));
        }
        if self.constants.world_radius <= 0.0 {
            return Err(invalid(
                K,
                format!("world_radius = {} must be > 0", self.constants.world_radius),
            ));
        }
        Ok(())
    }

    /// The acceleration smoothing rate clamp(9·dt, 0.15, 0.4), in f32 as the CPU computes it.
    pub fn rate(&self) -> f32 {
        (9.0 * self.dt).clamp(0.15, 0.4)
    }
}

/// A flock state in agent-id order (struct of arrays).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlockHostState {
    pub pos: Vec<[f32; 3]>,
    pub fwd: Vec<[f32; 3]>,
    pub speed: Vec<f32>,
    pub acc: Vec<[f32; 3]>,
}

impl FlockHostState {
    /// Number of agents.
    pub fn len(&self) -> usize {
        self.pos.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pos.is_empty()
    }

    fn check(&self) -> Result<usize, CudaError> {
        const K: &str = "flock (state)";
        let n = self.pos.len();
        if self.fwd.len() != n || self.speed.len() != n || self.acc.len() != n {
            return Err(invalid(
                K,
                format!(
                    "state arrays have different lengths (pos {}, fwd {}, speed {}, acc {})",
                    n,
                    self.fwd.len(),
                    self.speed.len(),
                    self.acc.len()
                ),
            ));
        }
        if n > MAX_AGENTS {
            return Err(invalid(
                K,
                format!("{n} agents; at most {MAX_AGENTS} are supported"),
            ));
        }
        for i in 0..n {
            let finite = self.pos[i]
                .iter()
                .chain(&self.fwd[i])
                .chain(&self.acc[i])
                .all(|v| v.is_finite())
                && self.speed[i].is_finite();
            if !finite {
                return Err(invalid(
                    K,
                    format!("agent {i} has a non-finite position, heading, speed or acceleration"),
                ));
            }
        }
        Ok(n)
    }
}

/// One step's intermediate results, in agent-id order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlockDetail {
    /// N·k neighbour ids, row i ascending by (d², id), `u32::MAX` padding; empty in radius mode.
    pub neighbors: Vec<u32>,
    /// Neighbours found per agent.
    pub counts: Vec<u32>,
    /// The raw steering force F (before the low-speed limit and clipping).
    pub force: Vec<[f32; 3]>,
}

/// Parameters of every flock kernel (C: `FlockParams`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlockKernelParams {
    pub constants: FlockConstants,
    pub n: u32,
    pub k: u32,
    pub r2: f32,
    pub dt: f32,
    pub rate: f32,
    pub detail: u32,
    pub cell_cap: u32,
    pub tile_cap: u32,
    pub tree: u32,
    pub max_leaf: u32,
    /// Scene: obstacle records and predators (0 and 0: plain flocking).
    pub n_obstacles: u32,
    pub n_predators: u32,
    pub body_radius: f32,
    pub avoid_time: f32,
    pub evade_r2: f32,
    pub evade_weight: f32,
    pub evade_time: f32,
    pub pad: u32,
}

// SAFETY: #[repr(C)] plain-old-data (f32 and u32 fields only) whose layout matches the C mirror
// `FlockParams` (size checked on both sides: GF_CHECK_SIZE and the unit test below).
unsafe impl DeviceRepr for FlockKernelParams {}

/// (Rust name, C name, size in bytes) of the parameter structs.
pub const PARAM_STRUCTS: &[(&str, &str, usize)] = &[
    ("FlockConstants", "FlockConstants", 56),
    ("FlockKernelParams", "FlockParams", 128),
    ("FlockObstacle", "FlObstacle", 80),
];

/// One set of agent buffers, 4 words per agent: pos = (x, y, z, id), vel = (forward, speed),
/// acc = (acceleration, 0), as f32 bits (the id as an integer).
struct StateBufs {
    pos: CudaSlice<u32>,
    vel: CudaSlice<u32>,
    acc: CudaSlice<u32>,
}

struct DetailBufs {
    nb: CudaSlice<u32>,
    cnt: CudaSlice<u32>,
    force: CudaSlice<f32>,
}

/// The scene on the device: obstacle records, two predator state sets (4 words per predator
/// each: pos = (x, y, z, 0), vel = (forward, speed), acc = (acceleration, 0)) and their limits
/// (max speed, max force, max prediction, 0). Buffers of one element when empty.
struct SceneBufs {
    obstacles: CudaSlice<u32>,
    preds: [StateBufs; 2],
    limits: CudaSlice<f32>,
    constants: FlockSceneConstants,
    n_obstacles: usize,
    n_predators: usize,
    predators: Option<CudaFunction>,
}

struct Kernels {
    bounds: CudaFunction,
    count: CudaFunction,
    scan: CudaFunction,
    scatter: CudaFunction,
    sort_cells: CudaFunction,
    step: CudaFunction,
    step_name: String,
}

/// A boids flock resident on the GPU (see the module docs).
pub struct GpuFlock {
    gpu: Arc<Gpu>,
    cfg: FlockConfig,
    n: usize,
    cells_cap: usize,
    tiles_cap: usize,
    bounds_blocks: u32,
    /// Two buffer sets; `bufs[cur]` holds the current state.
    bufs: [StateBufs; 2],
    cur: usize,
    /// Bounding-box accumulators (encoded minima, maxima) and the blocks-done counter.
    sync: CudaSlice<u32>,
    plan: CudaSlice<u64>,
    counts: CudaSlice<u32>,
    starts: CudaSlice<u32>,
    tile_sums: CudaSlice<u32>,
    rank: CudaSlice<u32>,
    slot_of: CudaSlice<u32>,
    detail: Option<DetailBufs>,
    scene: SceneBufs,
    /// `scene.preds[pcur]` holds the predators' current state.
    pcur: usize,
    dummy_nb: CudaSlice<u32>,
    dummy_cnt: CudaSlice<u32>,
    dummy_force: CudaSlice<f32>,
    /// None for an empty flock (nothing is ever launched).
    kernels: Option<Kernels>,
}

fn launch_err(kernel: &str) -> impl FnOnce(DriverError) -> CudaError {
    let action = format!("launching {kernel}");
    move |source| CudaError::Driver { action, source }
}

fn blocks(items: usize, threads: u32, what: &'static str) -> Result<LaunchConfig, CudaError> {
    let b = items.div_ceil(threads as usize).max(1);
    let b = u32::try_from(b).map_err(|_| invalid(what, format!("{items} items is too many")))?;
    Ok(LaunchConfig {
        grid_dim: (b, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    })
}

/// Name suffix of the step kernel for k (0: radius mode).
fn k_suffix(k: u32) -> &'static str {
    match k {
        0 => "r",
        1..=8 => "k8",
        9..=16 => "k16",
        _ => "k64",
    }
}

mod device;
mod launch;
mod scene;
pub use scene::{
    FlockObstacle, FlockSceneConstants, FlockSceneHost, OBSTACLE_BOX_FACE, OBSTACLE_PLANE,
    OBSTACLE_RECTANGLE, OBSTACLE_SPHERE, SEEN_FROM_BOTH, SEEN_FROM_INSIDE, SEEN_FROM_OUTSIDE,
};
#[cfg(test)]
mod tests;
