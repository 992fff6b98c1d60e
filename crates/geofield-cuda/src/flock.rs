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
}

// SAFETY: #[repr(C)] plain-old-data (f32 and u32 fields only) whose layout matches the C mirror
// `FlockParams` (size checked on both sides: GF_CHECK_SIZE and the unit test below).
unsafe impl DeviceRepr for FlockKernelParams {}

/// (Rust name, C name, size in bytes) of the parameter structs.
pub const PARAM_STRUCTS: &[(&str, &str, usize)] = &[
    ("FlockConstants", "FlockConstants", 56),
    ("FlockKernelParams", "FlockParams", 96),
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

impl GpuFlock {
    /// Uploads `state` and prepares a flock of `state.len()` agents (fixed for its life): every
    /// buffer is allocated here, at capacity.
    pub fn new(
        gpu: &Arc<Gpu>,
        cfg: FlockConfig,
        state: &FlockHostState,
    ) -> Result<Self, CudaError> {
        const K: &str = "flock";
        cfg.validate()?;
        let n = state.check()?;
        let grid = cfg.search != FlockSearch::Brute;
        let cells_cap = (4 * n).max(64);
        let tiles_cap = cells_cap / TILE + 1;
        let kernels = if n > 0 {
            let kind = if grid { "grid" } else { "brute" };
            let step_name = format!("flock_step_{kind}_{}", k_suffix(cfg.k));
            Some(Kernels {
                bounds: gpu.function(MODULE, "flock_bounds")?,
                count: gpu.function(MODULE, "flock_count")?,
                scan: gpu.function(MODULE, "flock_scan")?,
                scatter: gpu.function(MODULE, "flock_scatter")?,
                sort_cells: gpu.function(MODULE, "flock_sort_cells")?,
                step: gpu.function(MODULE, &step_name)?,
                step_name,
            })
        } else {
            None
        };
        let mut pos = Vec::with_capacity(4 * n);
        let mut vel = Vec::with_capacity(4 * n);
        let mut acc = Vec::with_capacity(4 * n);
        for i in 0..n {
            let p = state.pos[i];
            let f = state.fwd[i];
            let a = state.acc[i];
            let id = u32::try_from(i).map_err(|_| invalid(K, "too many agents"))?;
            pos.extend_from_slice(&[p[0].to_bits(), p[1].to_bits(), p[2].to_bits(), id]);
            vel.extend_from_slice(&[
                f[0].to_bits(),
                f[1].to_bits(),
                f[2].to_bits(),
                state.speed[i].to_bits(),
            ]);
            acc.extend_from_slice(&[a[0].to_bits(), a[1].to_bits(), a[2].to_bits(), 0]);
        }
        let grid_len = |len: usize| if grid && n > 0 { len } else { 1 };
        let _held = gpu.hold();
        let set = |what: &str| -> Result<StateBufs, CudaError> {
            Ok(StateBufs {
                pos: gpu.zeros::<u32>(4 * n, &format!("the {what} positions"))?,
                vel: gpu.zeros::<u32>(4 * n, &format!("the {what} velocities"))?,
                acc: gpu.zeros::<u32>(4 * n, &format!("the {what} accelerations"))?,
            })
        };
        let first = StateBufs {
            pos: gpu.upload(&pos, "the agent positions")?,
            vel: gpu.upload(&vel, "the agent velocities")?,
            acc: gpu.upload(&acc, "the agent accelerations")?,
        };
        let second = set("second")?;
        let sync_init: [u32; 8] = [u32::MAX, u32::MAX, u32::MAX, 0, 0, 0, 0, 0];
        Ok(GpuFlock {
            gpu: Arc::clone(gpu),
            cfg,
            n,
            cells_cap,
            tiles_cap,
            bounds_blocks: u32::try_from(
                n.div_ceil(AUX_THREADS as usize)
                    .clamp(1, (2 * gpu.info().multiprocessors as usize).max(1)),
            )
            .unwrap_or(1),
            bufs: [first, second],
            cur: 0,
            sync: gpu.upload(&sync_init, "the bounding-box accumulators")?,
            plan: gpu.zeros::<u64>(PLAN_WORDS, "the grid plan")?,
            counts: gpu.zeros::<u32>(grid_len(tiles_cap * TILE), "the cell counts")?,
            starts: gpu.zeros::<u32>(grid_len(tiles_cap * TILE), "the cell starts")?,
            tile_sums: gpu.zeros::<u32>(grid_len(tiles_cap), "the scan tile totals")?,
            rank: gpu.zeros::<u32>(grid_len(n), "the in-cell ranks")?,
            slot_of: gpu.zeros::<u32>(grid_len(n), "the agent slots")?,
            detail: None,
            dummy_nb: gpu.zeros::<u32>(1, "a placeholder")?,
            dummy_cnt: gpu.zeros::<u32>(1, "a placeholder")?,
            dummy_force: gpu.zeros::<f32>(1, "a placeholder")?,
            kernels,
        })
    }

    /// Number of agents.
    pub fn len(&self) -> usize {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The configuration the flock was made with.
    pub fn config(&self) -> &FlockConfig {
        &self.cfg
    }

    /// Enqueues `steps` steps on the device stream (returns without waiting for them).
    pub fn step(&mut self, steps: usize) -> Result<(), CudaError> {
        if self.n == 0 {
            return Ok(());
        }
        let gpu = Arc::clone(&self.gpu);
        let _held = gpu.hold();
        for _ in 0..steps {
            self.enqueue_step(false, None)?;
        }
        Ok(())
    }

    /// One step that also returns its neighbours, counts and raw forces (waits for the device).
    pub fn step_detail(&mut self) -> Result<FlockDetail, CudaError> {
        let n = self.n;
        if n == 0 {
            return Ok(FlockDetail::default());
        }
        let k = self.cfg.k as usize;
        let gpu = Arc::clone(&self.gpu);
        let _held = gpu.hold();
        if self.detail.is_none() {
            self.detail = Some(DetailBufs {
                nb: gpu.zeros::<u32>(n * k, "the neighbour rows")?,
                cnt: gpu.zeros::<u32>(n, "the neighbour counts")?,
                force: gpu.zeros::<f32>(3 * n, "the steering forces")?,
            });
        }
        self.enqueue_step(true, None)?;
        let Some(d) = &self.detail else {
            return Err(invalid("flock", "detail buffers missing"));
        };
        let neighbors = if k > 0 {
            gpu.download(&d.nb, n * k, "the neighbour rows")?
        } else {
            Vec::new()
        };
        let counts = gpu.download(&d.cnt, n, "the neighbour counts")?;
        let f = gpu.download(&d.force, 3 * n, "the steering forces")?;
        let force = f.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect();
        Ok(FlockDetail {
            neighbors,
            counts,
            force,
        })
    }

    /// The current state, back in agent-id order (waits for the device).
    pub fn state(&self) -> Result<FlockHostState, CudaError> {
        let n = self.n;
        if n == 0 {
            return Ok(FlockHostState::default());
        }
        let _held = self.gpu.hold();
        let b = &self.bufs[self.cur];
        let pos = self.gpu.download(&b.pos, 4 * n, "the agent positions")?;
        let vel = self.gpu.download(&b.vel, 4 * n, "the agent velocities")?;
        let acc = self
            .gpu
            .download(&b.acc, 4 * n, "the agent accelerations")?;
        let mut out = FlockHostState {
            pos: vec![[0.0; 3]; n],
            fwd: vec![[0.0; 3]; n],
            speed: vec![0.0; n],
            acc: vec![[0.0; 3]; n],
        };
        let mut seen = vec![false; n];
        let f = |w: &[u32]| {
            [
                f32::from_bits(w[0]),
                f32::from_bits(w[1]),
                f32::from_bits(w[2]),
            ]
        };
        for (slot, ((p, v), a)) in pos
            .chunks_exact(4)
            .zip(vel.chunks_exact(4))
            .zip(acc.chunks_exact(4))
            .enumerate()
        {
            let id = p[3] as usize;
            if id >= n || seen[id] {
                return Err(invalid(
                    "flock (state)",
                    format!("device slot {slot} holds agent id {id}: ids are not a permutation"),
                ));
            }
            seen[id] = true;
            out.pos[id] = f(p);
            out.fwd[id] = f(v);
            out.speed[id] = f32::from_bits(v[3]);
            out.acc[id] = f(a);
        }
        Ok(out)
    }

    /// Waits for every queued step.
    pub fn synchronize(&self) -> Result<(), CudaError> {
        self.gpu
            .stream()
            .synchronize()
            .doing("waiting for the flock steps (a kernel fault shows up here)")
    }

    /// One step timed per phase with CUDA events (ms): "build" (grid construction),
    /// "search+steer+integrate", "step" (their sum), then the build's parts as "build/…". The
    /// step counts as taken.
    pub fn profile_step(&mut self) -> Result<Vec<(&'static str, f64)>, CudaError> {
        if self.n == 0 {
            return Ok(vec![
                ("build", 0.0),
                ("search+steer+integrate", 0.0),
                ("step", 0.0),
            ]);
        }
        let gpu = Arc::clone(&self.gpu);
        let _held = gpu.hold();
        let mut marks = Vec::new();
        let names = self.enqueue_step(false, Some(&mut marks))?;
        let mut ms = Vec::with_capacity(names.len());
        for w in marks.windows(2) {
            let t = w[0]
                .elapsed_ms(&w[1])
                .doing("timing the flock step (a kernel fault shows up here)")?;
            ms.push(f64::from(t));
        }
        let total: f64 = ms.iter().sum();
        let search = ms.last().copied().unwrap_or(0.0);
        let mut out = vec![
            ("build", total - search),
            ("search+steer+integrate", search),
            ("step", total),
        ];
        for (name, t) in names.iter().zip(&ms) {
            if *name != "search+steer+integrate" {
                out.push((name, *t));
            }
        }
        Ok(out)
    }

    fn params(&self, detail: bool) -> FlockKernelParams {
        // −0 would not be the smallest key of its value.
        let r2 = if self.cfg.r2 == 0.0 { 0.0 } else { self.cfg.r2 };
        FlockKernelParams {
            constants: self.cfg.constants,
            n: self.n as u32,
            k: self.cfg.k,
            r2,
            dt: self.cfg.dt,
            rate: self.cfg.rate(),
            detail: u32::from(detail),
            cell_cap: self.cells_cap as u32,
            tile_cap: self.tiles_cap as u32,
            tree: u32::from(matches!(self.cfg.search, FlockSearch::Tree { .. })),
            max_leaf: match self.cfg.search {
                FlockSearch::Tree { max_leaf } => max_leaf,
                _ => 0,
            },
        }
    }

    /// Enqueues one step (the caller holds the device). With `marks`, records an event before
    /// the first and after each phase; returns the phase names.
    fn enqueue_step(
        &mut self,
        detail: bool,
        mut marks: Option<&mut Vec<CudaEvent>>,
    ) -> Result<Vec<&'static str>, CudaError> {
        let params = self.params(detail);
        let n = self.n;
        let Some(kern) = &self.kernels else {
            return Ok(Vec::new());
        };
        let gpu = &self.gpu;
        let stream = gpu.stream();
        let mark = |marks: &mut Option<&mut Vec<CudaEvent>>| -> Result<(), CudaError> {
            if let Some(m) = marks.as_deref_mut() {
                m.push(gpu.mark()?);
            }
            Ok(())
        };
        let (b0, b1) = self.bufs.split_at_mut(1);
        let (cur, other) = if self.cur == 0 {
            (&mut b0[0], &mut b1[0])
        } else {
            (&mut b1[0], &mut b0[0])
        };
        let (det_nb, det_cnt, det_force) = match (&mut self.detail, detail) {
            (Some(d), true) => (&mut d.nb, &mut d.cnt, &mut d.force),
            _ => (
                &mut self.dummy_nb,
                &mut self.dummy_cnt,
                &mut self.dummy_force,
            ),
        };
        let step_cfg = blocks(n, STEP_THREADS, "flock_step")?;
        let aux_cfg = blocks(n, AUX_THREADS, "flock")?;
        mark(&mut marks)?;
        if self.cfg.search == FlockSearch::Brute {
            let mut b = stream.launch_builder(&kern.step);
            b.arg(&params)
                .arg(&cur.pos)
                .arg(&cur.vel)
                .arg(&cur.acc)
                .arg(&mut other.pos)
                .arg(&mut other.vel)
                .arg(&mut other.acc)
                .arg(det_nb)
                .arg(det_cnt)
                .arg(det_force);
            // SAFETY: flock_step_brute_*(FlockParams, const float4* pos, vel, acc, float4* opos,
            // ovel, oacc, u32* det_nb, u32* det_cnt, float* det_force) in order and type. The
            // state buffers hold 4·n words each (n = params.n), the two sets are distinct; the
            // kernel reads slots < n and writes slot i < n of the other set; the detail buffers
            // (written only when params.detail = 1) hold n·k, n and 3n elements, indexed by the
            // stored ids, which are a permutation of 0..n.
            unsafe { b.launch(step_cfg) }.map_err(launch_err(&kern.step_name))?;
            mark(&mut marks)?;
            self.cur ^= 1;
            return Ok(vec!["search+steer+integrate"]);
        }
        let radius = self.cfg.k == 0;
        {
            let mut b = stream.launch_builder(&kern.bounds);
            b.arg(&params)
                .arg(&cur.pos)
                .arg(&mut self.sync)
                .arg(&mut self.plan)
                .arg(&mut self.tile_sums);
            let cfg = LaunchConfig {
                grid_dim: (self.bounds_blocks, 1, 1),
                block_dim: (AUX_THREADS, 1, 1),
                shared_mem_bytes: 0,
            };
            // SAFETY: flock_bounds(FlockParams, const float4* pos, u32* sync, FlockPlan* plan,
            // u32* tile_sums): pos holds 4·n words, sync 8 (initialised to the identities and
            // reset by the kernel's last block), plan 128 bytes (≥ sizeof(FlockPlan), asserted
            // in C), tile_sums tile_cap entries (the last block zeroes exactly those).
            unsafe { b.launch(cfg) }.map_err(launch_err("flock_bounds"))?;
        }
        mark(&mut marks)?;
        {
            let mut b = stream.launch_builder(&kern.count);
            b.arg(&params)
                .arg(&self.plan)
                .arg(&cur.pos)
                .arg(&mut self.counts)
                .arg(&mut self.tile_sums)
                .arg(&mut self.rank);
            // SAFETY: flock_count(FlockParams, const FlockPlan*, const float4* pos, u32* counts,
            // u32* tile_sums, u32* rank): the plan's cells (< ncells ≤ cell_cap) index counts
            // (tile_cap·4096 > cell_cap entries) and their tiles (< tile_cap) tile_sums; rank
            // holds n entries.
            unsafe { b.launch(aux_cfg) }.map_err(launch_err("flock_count"))?;
        }
        mark(&mut marks)?;
        {
            let mut b = stream.launch_builder(&kern.scan);
            b.arg(&params)
                .arg(&self.plan)
                .arg(&mut self.counts)
                .arg(&self.tile_sums)
                .arg(&mut self.starts);
            let cfg = LaunchConfig {
                grid_dim: (self.tiles_cap as u32, 1, 1),
                block_dim: (AUX_THREADS, 1, 1),
                shared_mem_bytes: 0,
            };
            // SAFETY: flock_scan(FlockParams, const FlockPlan*, u32* counts, const u32*
            // tile_sums, u32* starts): block b < ntiles ≤ tile_cap (= the grid size) reads and
            // zeroes counts[b·4096..(b+1)·4096), writes the same range of starts (both hold
            // tile_cap·4096 entries, 16-byte aligned allocations) and reads tile_sums[..b].
            unsafe { b.launch(cfg) }.map_err(launch_err("flock_scan"))?;
        }
        mark(&mut marks)?;
        {
            let mut b = stream.launch_builder(&kern.scatter);
            b.arg(&params)
                .arg(&self.plan)
                .arg(&self.starts)
                .arg(&self.rank)
                .arg(&cur.pos)
                .arg(&cur.vel)
                .arg(&cur.acc)
                .arg(&mut other.pos)
                .arg(&mut other.vel)
                .arg(&mut other.acc)
                .arg(&mut self.slot_of);
            // SAFETY: flock_scatter(FlockParams, const FlockPlan*, const u32* starts, const u32*
            // rank, const float4* pos, vel, acc, float4* opos, ovel, oacc, u32* slot_of): each
            // agent i < n goes to starts[cell] + rank[i], a permutation of 0..n (counting sort
            // of this step's counts); slot_of has n entries indexed by the stored ids.
            unsafe { b.launch(aux_cfg) }.map_err(launch_err("flock_scatter"))?;
        }
        if radius {
            let mut b = stream.launch_builder(&kern.sort_cells);
            b.arg(&params)
                .arg(&self.plan)
                .arg(&self.starts)
                .arg(&other.pos)
                .arg(&other.vel)
                .arg(&other.acc)
                .arg(&mut cur.pos)
                .arg(&mut cur.vel)
                .arg(&mut cur.acc);
            // SAFETY: flock_sort_cells(FlockParams, const FlockPlan*, const u32* starts, const
            // float4* pos, vel, acc, float4* opos, ovel, oacc): slot i < n moves to its cell's
            // start plus the number of agents of its cell (starts[c]..starts[c+1] ≤ n) with a
            // smaller id: a permutation of 0..n; the two sets are distinct.
            unsafe { b.launch(aux_cfg) }.map_err(launch_err("flock_sort_cells"))?;
        }
        mark(&mut marks)?;
        let (input, output) = if radius {
            (&*cur, &mut *other)
        } else {
            (&*other, &mut *cur)
        };
        {
            let mut b = stream.launch_builder(&kern.step);
            b.arg(&params)
                .arg(&self.plan)
                .arg(&self.starts)
                .arg(&input.pos)
                .arg(&input.vel)
                .arg(&input.acc)
                .arg(&self.slot_of)
                .arg(&mut output.pos)
                .arg(&mut output.vel)
                .arg(&mut output.acc)
                .arg(det_nb)
                .arg(det_cnt)
                .arg(det_force);
            // SAFETY: flock_step_grid_*(FlockParams, const FlockPlan*, const u32* starts, const
            // float4* pos, vel, acc, const u32* slot_of, float4* opos, ovel, oacc, u32* det_nb,
            // u32* det_cnt, float* det_force) in order and type: cells visited are clamped into
            // the plan's dims, starts[c..=c+1] ≤ n index the input set (4·n words per buffer),
            // slot_of maps the stored ids (a permutation of 0..n) to slots < n; thread i < n
            // writes slot i of the other set and the detail rows of its own id (n·k, n, 3n
            // elements; only when params.detail = 1).
            unsafe { b.launch(step_cfg) }.map_err(launch_err(&kern.step_name))?;
        }
        mark(&mut marks)?;
        if radius {
            self.cur ^= 1;
        }
        Ok(vec![
            "build/bounds+plan",
            "build/count",
            "build/scan",
            if radius {
                "build/scatter+sort"
            } else {
                "build/scatter"
            },
            "search+steer+integrate",
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> FlockConfig {
        FlockConfig {
            constants: FlockConstants::opensteer(50.0),
            k: 7,
            r2: f32::from_bits(81.0f32.to_bits() - 1),
            dt: 1.0 / 60.0,
            search: FlockSearch::Grid,
        }
    }

    #[test]
    fn param_sizes_match_the_kernel() {
        assert_eq!(std::mem::size_of::<FlockConstants>(), 56);
        assert_eq!(std::mem::size_of::<FlockKernelParams>(), 96);
        let src = crate::module_source("flock").unwrap_or("");
        for (_, c, size) in PARAM_STRUCTS {
            assert!(
                src.contains(&format!("GF_CHECK_SIZE({c}, {size})")),
                "{c} lacks its size check"
            );
        }
        assert!(src.contains(&format!("#define FL_TILE {TILE}")));
        assert!(src.contains(&format!("#define FL_THREADS {STEP_THREADS}")));
        assert!(src.contains(&format!("#define FL_AUX {AUX_THREADS}")));
        assert!(src.contains(&format!("#define FL_K_LOCAL {K_MAX}")));
    }

    #[test]
    fn config_validation() {
        assert!(config().validate().is_ok());
        let radius = FlockConfig { k: 0, ..config() };
        assert!(radius.validate().is_ok());
        let bad = [
            FlockConfig { k: 65, ..config() },
            FlockConfig {
                r2: f32::NAN,
                ..config()
            },
            FlockConfig {
                r2: f32::INFINITY,
                ..config()
            },
            FlockConfig {
                r2: -1.0,
                ..config()
            },
            FlockConfig {
                dt: f32::NAN,
                ..config()
            },
            FlockConfig {
                dt: f32::INFINITY,
                ..config()
            },
            FlockConfig {
                dt: 0.0,
                ..config()
            },
        ];
        for c in bad {
            assert!(
                matches!(c.validate(), Err(CudaError::InvalidInput { .. })),
                "{c:?} was accepted"
            );
        }
        let mut c = config();
        c.constants.sep_cos = f32::NAN;
        assert!(c.validate().is_err());
        c = config();
        c.constants.world_radius = 0.0;
        assert!(c.validate().is_err());
    }

    #[test]
    fn rate_is_the_cpu_clamp() {
        assert_eq!(config().rate(), 0.15);
        let c = FlockConfig {
            dt: 0.03,
            ..config()
        };
        assert_eq!(c.rate(), (9.0f32 * 0.03).clamp(0.15, 0.4));
        let c = FlockConfig {
            dt: 1.0,
            ..config()
        };
        assert_eq!(c.rate(), 0.4);
    }

    #[test]
    fn state_checks() {
        let mut s = FlockHostState {
            pos: vec![[0.0; 3]; 2],
            fwd: vec![[0.0, 0.0, 1.0]; 2],
            speed: vec![1.0; 2],
            acc: vec![[0.0; 3]; 2],
        };
        assert_eq!(s.check().ok(), Some(2));
        s.speed.pop();
        assert!(s.check().is_err());
        s.speed.push(f32::NAN);
        assert!(s.check().is_err());
        assert_eq!(FlockHostState::default().check().ok(), Some(0));
    }

    #[test]
    fn kernel_names_cover_k() {
        assert_eq!(k_suffix(0), "r");
        assert_eq!(k_suffix(1), "k8");
        assert_eq!(k_suffix(8), "k8");
        assert_eq!(k_suffix(9), "k16");
        assert_eq!(k_suffix(16), "k16");
        assert_eq!(k_suffix(17), "k64");
        assert_eq!(k_suffix(64), "k64");
        let src = crate::module_source("flock").unwrap_or("");
        for s in ["r", "k8", "k16", "k64"] {
            assert!(src.contains(&format!("FL_GRID_ENTRY({s},")));
            assert!(src.contains(&format!("FL_BRUTE_ENTRY({s},")));
        }
    }
}
