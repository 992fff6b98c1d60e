//! A whole flock run: the steps in timed chunks, with snapshots (state, statistics, frames)
//! between them.

use std::time::Instant;

use serde::Serialize;

use super::{Flock, FlockParams, FlockState, FlockStats, Scene, stats};
use crate::{Backend, GeofieldError};

/// How [`run`] steps a flock and what it records on the way.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Steps of `dt` to take.
    pub steps: usize,
    /// Take a snapshot at the start and after every `every` steps (the last chunk may be
    /// shorter): the state is brought back, measured ([`FlockStats`]), reported to the progress
    /// callback and drawn into `frames`. `None`: no snapshots, the steps run as one chunk.
    pub every: Option<usize>,
    /// Draw every snapshot into these frames (PNG files and/or kept for a GIF; feature `io`),
    /// with the scene's obstacles outlined and its predators as red discs;
    /// [`FlockRun::frames`] hands them back (nothing is drawn without `every`).
    #[cfg(feature = "io")]
    pub frames: Option<super::io::Frames>,
    /// Obstacles and predators ([`super::scene`]); the default is empty.
    pub scene: Scene,
}

/// The statistics of one snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FlockSample {
    /// Steps taken when the snapshot was taken.
    pub step: u64,
    #[serde(flatten)]
    pub stats: FlockStats,
    /// Agents inside a solid obstacle ([`Scene::collisions`]); None without obstacles.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collisions: Option<usize>,
    /// The smallest distance from a predator to its nearest agent, m; None without predators.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predator_distance_m: Option<f64>,
}

/// One snapshot as the progress callback of [`run`] sees it.
#[derive(Debug, Clone, Copy)]
pub struct Snapshot<'a> {
    /// Steps taken so far.
    pub step: u64,
    /// Wall time of the steps so far (device synchronised; snapshots excluded), seconds.
    pub step_seconds: f64,
    /// The state after `step` steps, in agent-id order.
    pub state: &'a FlockState,
    /// Its statistics ([`stats`]).
    pub stats: &'a FlockStats,
    /// The predators' state (empty without predators).
    pub predators: &'a FlockState,
    /// The sample recorded for this snapshot (collisions, predator distance).
    pub sample: &'a FlockSample,
}

/// What [`run`] returns.
#[derive(Debug, Clone)]
pub struct FlockRun {
    /// The final state, in agent-id order.
    pub state: FlockState,
    /// Steps taken.
    pub steps: usize,
    /// Wall time of the steps alone (snapshots, statistics and frames excluded), seconds.
    pub step_seconds: f64,
    /// Statistics of the starting state.
    pub initial: FlockStats,
    /// Statistics of the final state.
    pub final_stats: FlockStats,
    /// The statistics of every snapshot, in order (empty without [`RunOptions::every`]).
    pub samples: Vec<FlockSample>,
    /// The frames of [`RunOptions::frames`], with every snapshot drawn.
    #[cfg(feature = "io")]
    pub frames: Option<super::io::Frames>,
    /// The predators' final state (empty without predators).
    pub predators: FlockState,
}

impl FlockRun {
    /// Steps per second of wall time ([`FlockRun::step_seconds`]).
    pub fn steps_per_s(&self) -> f64 {
        self.steps as f64 / self.step_seconds.max(1e-12)
    }
}

/// Simulate `options.steps` steps of a flock starting from `state` on `backend`: the steps run
/// in chunks of `options.every` (one chunk without it), each timed up to
/// [`Flock::synchronize`]; after each chunk (and at the start) a snapshot is measured, passed to
/// `progress` and drawn into the frames.
///
/// ```
/// use geofield::Backend;
/// use geofield::flock::{self, FlockParams, FlockState, RunOptions, Start};
///
/// let world = flock::default_world_radius(64);
/// let opts = RunOptions { steps: 20, every: Some(8), ..Default::default() };
/// let mut seen = Vec::new();
/// let run = flock::run(&Backend::Cpu, FlockState::init(64, Start::Dense, world, 1),
///     &FlockParams::new(world), &opts, &mut |s| seen.push(s.step))?;
/// assert_eq!(seen, [0, 8, 16, 20]);
/// assert_eq!(run.samples.len(), 4);
/// assert_eq!(run.state.len(), 64);
/// # Ok::<(), geofield::GeofieldError>(())
/// ```
pub fn run(
    backend: &Backend,
    state: FlockState,
    params: &FlockParams,
    options: &RunOptions,
    progress: &mut dyn FnMut(&Snapshot<'_>),
) -> Result<FlockRun, GeofieldError> {
    if options.every == Some(0) {
        return Err(GeofieldError::InvalidParameter {
            name: "every".into(),
            value: "0".into(),
            expected: "at least 1 step between snapshots".into(),
        });
    }
    let world = params.constants.world_radius;
    let initial = stats(&state, world);
    let scene = &options.scene;
    let mut fl = Flock::with_scene(backend, *params, scene, state)?;
    #[cfg(feature = "io")]
    let mut frames = options.frames.clone().map(|f| f.with_scene(scene));
    let mut samples = Vec::new();
    let mut last = None;
    let mut snapshot = |fl: &Flock, step: usize, step_seconds: f64| {
        let state = fl.state()?;
        let preds = fl.predators()?;
        let s = stats(&state, world);
        let sample = sample_of(scene, step as u64, s, &state, &preds);
        progress(&Snapshot {
            step: step as u64,
            step_seconds,
            state: &state,
            stats: &s,
            predators: &preds,
            sample: &sample,
        });
        #[cfg(feature = "io")]
        if let Some(f) = &mut frames {
            f.record_with(&state, &preds.pos, step as u64, s.polarisation)
                .map_err(|e| GeofieldError::Invalid(e.to_string()))?;
        }
        samples.push(sample);
        last = Some((state, s));
        Ok::<(), GeofieldError>(())
    };
    if options.every.is_some() {
        snapshot(&fl, 0, 0.0)?;
    }
    let (mut step_seconds, mut done) = (0.0, 0usize);
    while done < options.steps {
        let chunk = (options.steps - done).min(options.every.unwrap_or(usize::MAX));
        let t = Instant::now();
        fl.step(chunk)?;
        fl.synchronize()?;
        step_seconds += t.elapsed().as_secs_f64();
        done += chunk;
        if options.every.is_some() {
            snapshot(&fl, done, step_seconds)?;
        }
    }
    // With snapshots the last one is of the final state.
    let (state, final_stats) = match last {
        Some(l) => l,
        None => {
            let st = fl.state()?;
            let s = stats(&st, world);
            (st, s)
        }
    };
    let predators = fl.predators()?;
    Ok(FlockRun {
        predators,
        state,
        steps: options.steps,
        step_seconds,
        initial,
        final_stats,
        samples,
        #[cfg(feature = "io")]
        frames,
    })
}

/// The sample of one snapshot: statistics, collisions (with obstacles) and the predators'
/// nearest-agent distance (with predators).
fn sample_of(
    scene: &Scene,
    step: u64,
    stats: FlockStats,
    state: &FlockState,
    preds: &FlockState,
) -> FlockSample {
    let collisions = (!scene.obstacles.is_empty()).then(|| scene.collisions(state));
    let predator_distance_m = (!preds.is_empty()).then(|| {
        Scene::predator_distances(state, preds)
            .into_iter()
            .fold(f64::INFINITY, f64::min)
    });
    FlockSample {
        step,
        stats,
        collisions,
        predator_distance_m,
    }
}
