//! OpenSteer's boids flock on exact neighbour searches, on the CPU (rayon) and on CUDA.
//!
//! # Model (the pinned semantics of `shared/notes/neighbors-boids.md`, §1–2)
//!
//! Each agent has a position p, a unit heading f, a speed s and a smoothed acceleration a
//! (f32). One step with the fixed time step dt (default 1/60 s):
//!
//! 1. **Neighbours** Q(i) from state t only. [`NeighborMode::Nearest`] (default, the paper's):
//!    the up to k = 7 other agents with d² < r² (r = 9, strict) and the smallest keys
//!    (d², agent id). [`NeighborMode::Radius`] (OpenSteer's original): every other agent with
//!    d² < r². Distances are plain Euclidean (the world is not periodic).
//! 2. **Steering** (OpenSteer's `steerToFlock`): per behaviour, a neighbour passes when d² < 2.25
//!    or (d² ≤ R_b² and f_i·(p_j − p_i)/d > cos_b); separation (R 5, cos −0.707, weight 12),
//!    alignment (7.5, 0.7, 8), cohesion (9, −0.15, 8); F = 12·u(Σ (p_i − p_j)/d²) +
//!    8·u(mean f_j − f_i) + 8·u(mean p_j − p_i). Coincident agents add no separation term.
//! 3. **Integration** (OpenSteer's `applySteeringForce`): low-speed cone limit, force clipped to
//!    27, acceleration smoothed with rate clip(9·dt, 0.15, 0.4), velocity clipped to 9, position
//!    advanced, heading = velocity / speed.
//! 4. **Wrap**: an agent beyond the world radius R is teleported through the centre,
//!    p ← p − 2R·p/|p| (OpenSteer's `sphericalWrapAround`).
//!
//! Steps 1–2 read only state t, step 3–4 write state t + 1 (the simulate/apply split), so the
//! result does not depend on thread count or agent storage order. Sums run over Q(i) in
//! ascending (d², id) order. On the GPU the nearest-k mode reproduces the CPU bit for bit; the
//! radius mode sums in the GPU grid's (cell, id) order, deterministic but not bitwise equal to
//! the CPU's.
//!
//! # Obstacles and predators ([`scene`], [`avoid`])
//!
//! A [`Scene`] (from a JSON file with [`io::read_scene`]) adds OpenSteer's obstacles (spheres
//! seen from outside, inside or both; boxes; rectangles; planes) and predators. Each boid's
//! force is then, in priority order: OpenSteer's `steerToAvoidObstacles(1 s)` (the nearest
//! intersection of the heading ray within 1 s × speed; the hint's part perpendicular to the
//! heading, at the maximum force) when it is non-zero, else the flocking force above plus
//! 30 · u(Σ flee) over the predators within 20 m (`steerForEvasion`). Predators pursue their
//! nearest boid (`steerForPursuit`, limits of their own), avoiding obstacles first. Predators
//! read boid state t and boids read predator state t, so the split above holds and both
//! backends give the same bits (see [`predator`] for the rules and the OpenSteer plug-ins
//! they come from).
//!
//! # Start
//!
//! [`Start::Dense`] is OpenSteer's: positions uniform in a ball of radius 20, random unit
//! headings, speed 0.3·9 = 2.7, zero acceleration. [`Start::Uniform`] spreads the agents over
//! the whole world ball instead. Both come from a seeded PCG generator on the host (same start
//! on every backend). The default world radius keeps the paper's density (40,960 agents in a
//! ball of radius 200) for any N, and is at least OpenSteer's 50.
//!
//! # Running
//!
//! [`Flock`] steps a flock on a backend; [`run`] takes a whole run in timed chunks, with
//! snapshots (statistics, a progress callback and, with feature `io`, frames) between them.

pub mod avoid;
mod cpu;
#[cfg(feature = "io")]
pub mod io;
pub mod predator;
pub mod scene;
mod simulation;
mod stats;
pub(crate) mod steer;

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;
use serde::Serialize;

use crate::neighbors::K_MAX;
use crate::{Backend, Cancel, GeofieldError};
pub use geofield_cuda::flock::FlockObstacle;
pub use scene::{Avoidance, Evasion, Obstacle, Predator, Scene, SeenFrom};
pub use simulation::{FlockRun, FlockSample, RunOptions, Snapshot, run};
pub use stats::{FlockStats, stats};
pub use steer::Agent;

/// OpenSteer's boids constants and the world radius (`BoidsConstants::opensteer(r)`): the
/// `#[repr(C)]` struct the CUDA kernels take, so both backends read one definition.
pub use geofield_cuda::flock::FlockConstants as BoidsConstants;

/// Which agents count as neighbours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum NeighborMode {
    /// The up to k nearest others within the radius (the paper's; k = 7).
    Nearest { k: usize },
    /// Every other agent within the radius (OpenSteer's original).
    Radius,
}

/// Which neighbour structure the steps use (all give the same neighbours).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum FlockIndex {
    Brute,
    Uniform,
    Dynamic,
}

/// How the agents start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Start {
    /// OpenSteer's start: a ball of radius 20 at the centre.
    Dense,
    /// Uniform over the whole world ball.
    Uniform,
}

/// Everything a flock run needs besides the state.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FlockParams {
    pub constants: BoidsConstants,
    pub mode: NeighborMode,
    /// Neighbour radius r (strict d² < r²); OpenSteer's 9.
    pub radius: f32,
    /// Fixed time step in seconds; 1/60.
    pub dt: f32,
    pub index: FlockIndex,
}

/// Paper density: 40,960 agents in a ball of radius 200.
pub fn default_world_radius(agents: usize) -> f32 {
    let r = 200.0 * (agents as f64 / 40_960.0).cbrt();
    r.max(50.0) as f32
}

impl FlockParams {
    /// OpenSteer's boids with the paper's 7-nearest neighbours in a world of radius
    /// `world_radius`, on the uniform grid.
    pub fn new(world_radius: f32) -> Self {
        FlockParams {
            constants: BoidsConstants::opensteer(world_radius),
            mode: NeighborMode::Nearest { k: 7 },
            radius: 9.0,
            dt: 1.0 / 60.0,
            index: FlockIndex::Uniform,
        }
    }

    /// Check the parameters; errors name the field.
    pub fn validate(&self) -> Result<(), GeofieldError> {
        let c = &self.constants;
        if !(c.world_radius.is_finite() && c.world_radius > 0.0) {
            return Err(GeofieldError::Invalid(format!(
                "world radius {} must be finite and positive",
                c.world_radius
            )));
        }
        if !(self.radius.is_finite() && self.radius > 0.0) {
            return Err(GeofieldError::Invalid(format!(
                "neighbour radius {} must be finite and positive",
                self.radius
            )));
        }
        if !(self.dt.is_finite() && self.dt > 0.0) {
            return Err(GeofieldError::Invalid(format!(
                "time step {} must be finite and positive",
                self.dt
            )));
        }
        if let NeighborMode::Nearest { k } = self.mode
            && (k == 0 || k > K_MAX)
        {
            return Err(GeofieldError::Invalid(format!(
                "k = {k} is out of range 1..={K_MAX}"
            )));
        }
        Ok(())
    }

    /// r² as the largest f32 strictly below the square of the radius: `d² ≤ r2_incl` ⇔ d² < r².
    pub fn r2_inclusive(&self) -> f32 {
        let r2 = self.radius * self.radius;
        f32::from_bits(r2.to_bits() - 1)
    }
}

/// The flock's state in agent-id order (struct of arrays).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FlockState {
    pub pos: Vec<[f32; 3]>,
    pub fwd: Vec<[f32; 3]>,
    pub speed: Vec<f32>,
    pub acc: Vec<[f32; 3]>,
}

/// Bytes of memory a simulation needs per agent, checked by [`FlockState::new`] before anything
/// is allocated: the state (position, heading, acceleration: 3 × 12 B, speed 4 B = 40 B), the
/// next state written by a step (40 B), the 7 neighbour ids (28 B) and the grid's sorted copy
/// of the positions with their ids and cell keys (12 + 4 + 4 = 20 B): 128 B.
pub const BYTES_PER_AGENT: usize = 128;

/// Most agents a flock may have (agent ids and grid offsets are u32, with room for a copy).
pub const MAX_AGENTS: usize = u32::MAX as usize / 2;

impl FlockState {
    /// [`FlockState::init`] for a number of agents that comes from a user: refused when it is
    /// 0, above [`MAX_AGENTS`], or needs more memory ([`BYTES_PER_AGENT`] each) than is
    /// available, before anything is allocated.
    pub fn new(
        n: usize,
        start: Start,
        world_radius: f32,
        seed: u64,
    ) -> Result<Self, GeofieldError> {
        if n == 0 || n > MAX_AGENTS {
            return Err(GeofieldError::Invalid(format!(
                "agents = {n}: must be 1 to {MAX_AGENTS}"
            )));
        }
        geofield_core::check_memory(
            || format!("a flock of {n} agents ({BYTES_PER_AGENT} bytes each)"),
            n as u128 * BYTES_PER_AGENT as u128,
        )?;
        Ok(Self::init(n, start, world_radius, seed))
    }

    /// `n` agents from `start` in a world of radius `world_radius`, reproducible from `seed`.
    /// `n` is not checked: use [`FlockState::new`] for a number that comes from a user.
    pub fn init(n: usize, start: Start, world_radius: f32, seed: u64) -> Self {
        let mut rng = Pcg64::seed_from_u64(seed);
        let ball = match start {
            Start::Dense => 20.0f32.min(world_radius),
            Start::Uniform => world_radius,
        };
        let mut s = FlockState {
            pos: Vec::with_capacity(n),
            fwd: Vec::with_capacity(n),
            speed: vec![0.3 * 9.0; n],
            acc: vec![[0.0; 3]; n],
        };
        let in_ball = |rng: &mut Pcg64| loop {
            let v: [f32; 3] = std::array::from_fn(|_| rng.random::<f32>() * 2.0 - 1.0);
            let l2 = steer::dot(v, v);
            if l2 <= 1.0 && l2 > 1e-6 {
                return v;
            }
        };
        for _ in 0..n {
            let p = in_ball(&mut rng);
            s.pos.push(steer::scale(p, ball));
            s.fwd.push(steer::unit(in_ball(&mut rng)));
        }
        s
    }

    /// Number of agents.
    pub fn len(&self) -> usize {
        self.pos.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pos.is_empty()
    }

    /// Agent i.
    pub fn agent(&self, i: usize) -> Agent {
        Agent {
            pos: self.pos[i],
            fwd: self.fwd[i],
            speed: self.speed[i],
            acc: self.acc[i],
        }
    }

    /// (N × 6) row-major positions and velocities (x, y, z, vx, vy, vz).
    pub fn to_rows(&self) -> Vec<f32> {
        let mut out = Vec::with_capacity(self.len() * 6);
        for i in 0..self.len() {
            out.extend_from_slice(&self.pos[i]);
            out.extend_from_slice(&steer::scale(self.fwd[i], self.speed[i]));
        }
        out
    }

    /// A state from (N × 6) rows of positions and velocities (heading = velocity / speed, or +z
    /// at speed 0; zero acceleration). Errors name the first bad row.
    pub fn from_rows(rows: &[f32]) -> Result<Self, GeofieldError> {
        if !rows.len().is_multiple_of(6) {
            return Err(GeofieldError::Invalid(format!(
                "state has {} values, not a multiple of 6 (x, y, z, vx, vy, vz)",
                rows.len()
            )));
        }
        let n = rows.len() / 6;
        let mut s = FlockState::default();
        for (i, r) in rows.chunks_exact(6).enumerate() {
            if let Some(a) = r.iter().position(|v| !v.is_finite()) {
                return Err(GeofieldError::Invalid(format!(
                    "agent {i} has a non-finite value in column {a}"
                )));
            }
            let v = [r[3], r[4], r[5]];
            let sp = steer::length(v);
            s.pos.push([r[0], r[1], r[2]]);
            s.fwd.push(if sp > 0.0 {
                steer::div(v, sp)
            } else {
                [0.0, 0.0, 1.0]
            });
            s.speed.push(sp);
        }
        s.acc = vec![[0.0; 3]; n];
        Ok(s)
    }

    fn check(&self) -> Result<(), GeofieldError> {
        let n = self.pos.len();
        if self.fwd.len() != n || self.speed.len() != n || self.acc.len() != n {
            return Err(GeofieldError::Invalid(
                "flock state arrays have different lengths".into(),
            ));
        }
        if n > u32::MAX as usize / 2 {
            return Err(GeofieldError::Unsupported(format!(
                "{n} agents; at most {} are supported",
                u32::MAX / 2
            )));
        }
        for i in 0..n {
            let a = self.agent(i);
            let finite = a
                .pos
                .iter()
                .chain(&a.fwd)
                .chain(&a.acc)
                .all(|v| v.is_finite())
                && a.speed.is_finite();
            if !finite {
                return Err(GeofieldError::Invalid(format!(
                    "agent {i} has a non-finite position, heading, speed or acceleration"
                )));
            }
        }
        Ok(())
    }
}

enum Engine {
    Cpu(Box<cpu::CpuFlock>),
    Cuda(Box<cuda_flock::CudaFlockEngine>),
}

mod cuda_flock;

/// A flock being simulated on one backend. The state lives on that backend (on the GPU it
/// stays resident between steps); [`Flock::state`] brings it back.
pub struct Flock {
    params: FlockParams,
    engine: Engine,
    steps: u64,
}

impl Flock {
    /// Start a flock from `state` on `backend`.
    ///
    /// ```
    /// use geofield::Backend;
    /// use geofield::flock::{self, Flock, FlockParams, FlockState, Start};
    ///
    /// let world = flock::default_world_radius(64);
    /// let mut fl = Flock::new(&Backend::Cpu, FlockParams::new(world),
    ///     FlockState::init(64, Start::Dense, world, 1))?;
    /// fl.step(10)?;
    /// let st = fl.state()?;
    /// assert_eq!(st.len(), 64);
    /// assert!(st.pos.iter().all(|p| p.iter().all(|c| c.is_finite())));
    /// # Ok::<(), geofield::GeofieldError>(())
    /// ```
    pub fn new(
        backend: &Backend,
        params: FlockParams,
        state: FlockState,
    ) -> Result<Self, GeofieldError> {
        Self::with_scene(backend, params, &Scene::default(), state)
    }

    /// Start a flock from `state` on `backend` among the obstacles and predators of `scene`
    /// (see [`scene`]; the predators start as [`Scene::predator_state`] gives them).
    ///
    /// ```
    /// use geofield::Backend;
    /// use geofield::flock::{self, Flock, FlockParams, FlockState, Obstacle, Scene, SeenFrom, Start};
    ///
    /// let world = 60.0;
    /// let scene = Scene {
    ///     obstacles: vec![Obstacle::Sphere {
    ///         centre: [0.0, 0.0, 0.0], radius: 50.0, seen_from: SeenFrom::Inside }],
    ///     ..Scene::default()
    /// };
    /// let mut fl = Flock::with_scene(&Backend::Cpu, FlockParams::new(world), &scene,
    ///     FlockState::init(64, Start::Dense, world, 1))?;
    /// fl.step(10)?;
    /// assert_eq!(scene.collisions(&fl.state()?), 0);
    /// # Ok::<(), geofield::GeofieldError>(())
    /// ```
    pub fn with_scene(
        backend: &Backend,
        params: FlockParams,
        scene: &Scene,
        state: FlockState,
    ) -> Result<Self, GeofieldError> {
        params.validate()?;
        state.check()?;
        let compiled = scene.compile()?;
        let preds = scene.predator_state();
        let engine = match backend {
            Backend::Cpu => {
                Engine::Cpu(Box::new(cpu::CpuFlock::new(params, state, compiled, preds)))
            }
            Backend::Cuda(gpu) => Engine::Cuda(Box::new(cuda_flock::CudaFlockEngine::new(
                gpu, params, &state, &compiled, &preds,
            )?)),
        };
        Ok(Flock {
            params,
            engine,
            steps: 0,
        })
    }

    pub fn params(&self) -> &FlockParams {
        &self.params
    }

    /// Steps taken so far.
    pub fn steps_taken(&self) -> u64 {
        self.steps
    }

    /// Advance `steps` steps.
    pub fn step(&mut self, steps: usize) -> Result<(), GeofieldError> {
        match &mut self.engine {
            Engine::Cpu(e) => e.step(steps),
            Engine::Cuda(e) => e.step(steps)?,
        }
        self.steps += steps as u64;
        Ok(())
    }

    /// [`Flock::step`] one step at a time, calling `progress(steps done)` after each, and
    /// stopping with [`GeofieldError::Cancelled`] at the first step boundary after `cancel` is
    /// set (see [`crate::cancel`]): the flock then holds the state after the steps it finished
    /// ([`Flock::steps_taken`] counts them).
    ///
    /// ```
    /// use geofield::flock::{self, Flock, FlockParams, FlockState, Start};
    /// use geofield::{Backend, Cancel, GeofieldError};
    ///
    /// let world = flock::default_world_radius(64);
    /// let mut fl = Flock::new(&Backend::Cpu, FlockParams::new(world),
    ///     FlockState::init(64, Start::Dense, world, 1))?;
    /// let cancel = Cancel::new();
    /// let mut seen = 0;
    /// fl.step_with_progress(5, &mut |done| seen = done, &cancel)?;
    /// assert_eq!((seen, fl.steps_taken()), (5, 5));
    /// cancel.cancel();
    /// let r = fl.step_with_progress(5, &mut |_| {}, &cancel);
    /// assert!(matches!(r, Err(GeofieldError::Cancelled)));
    /// assert_eq!(fl.steps_taken(), 5);
    /// # Ok::<(), geofield::GeofieldError>(())
    /// ```
    pub fn step_with_progress(
        &mut self,
        steps: usize,
        progress: &mut dyn FnMut(usize),
        cancel: &Cancel,
    ) -> Result<(), GeofieldError> {
        for done in 1..=steps {
            cancel.check()?;
            self.step(1)?;
            progress(done);
        }
        Ok(())
    }

    /// One step that also returns the neighbours and forces it used
    /// ([`crate::bench::flock::step_detail`]).
    pub(crate) fn step_detail(&mut self) -> Result<crate::bench::flock::StepDetail, GeofieldError> {
        let d = match &mut self.engine {
            Engine::Cpu(e) => e.step_detail(),
            Engine::Cuda(e) => e.step_detail()?,
        };
        self.steps += 1;
        Ok(d)
    }

    /// Time one step by phases ([`crate::bench::flock::profile_step`]).
    pub(crate) fn profile_step(&mut self) -> Result<Vec<(&'static str, f64)>, GeofieldError> {
        let v = match &mut self.engine {
            Engine::Cpu(e) => e.profile_step(),
            Engine::Cuda(e) => e.profile_step()?,
        };
        self.steps += 1;
        Ok(v)
    }

    /// Wait for the queued GPU work (a no-op on the CPU): [`Flock::step`] may return before
    /// the device has finished, so call this before reading a clock.
    pub fn synchronize(&self) -> Result<(), GeofieldError> {
        match &self.engine {
            Engine::Cpu(_) => Ok(()),
            Engine::Cuda(e) => e.synchronize(),
        }
    }

    /// The predators' current state, in scene order (empty without predators).
    pub fn predators(&self) -> Result<FlockState, GeofieldError> {
        match &self.engine {
            Engine::Cpu(e) => Ok(e.predators()),
            Engine::Cuda(e) => e.predators(),
        }
    }

    /// The current state, in agent-id order.
    pub fn state(&self) -> Result<FlockState, GeofieldError> {
        match &self.engine {
            Engine::Cpu(e) => Ok(e.state()),
            Engine::Cuda(e) => e.state(),
        }
    }
}
