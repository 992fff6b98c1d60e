//! `geofield flock`: OpenSteer's boids on exact neighbour searches, with frames and statistics.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use geofield::flock::io::{self as fio, Frames};
use geofield::flock::{
    self, Flock, FlockIndex, FlockParams, FlockState, FlockStats, NeighborMode, Start,
};
use serde::Serialize;

use crate::ctx::{Ctx, Global};
use crate::outputs::{Kind, Outputs};

/// Agents when neither --agents nor --init gives them.
const DEFAULT_AGENTS: usize = 10_240;

#[derive(Clone, Copy, ValueEnum, PartialEq, Debug)]
pub enum IndexArg {
    Brute,
    Uniform,
    Dynamic,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Debug)]
pub enum ModeArg {
    /// The up to k nearest others within the radius (the paper's, k = 7 by default).
    Nearest7,
    /// Every other agent within the radius (OpenSteer's original).
    Radius,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Debug)]
pub enum StartArg {
    /// OpenSteer's start: every agent in a ball of radius 20 at the centre.
    Dense,
    /// Spread uniformly over the world ball.
    Uniform,
}

#[derive(Args, Debug)]
pub struct FlockArgs {
    /// Number of agents [default: 10240] (not with --init, which gives them).
    #[arg(long)]
    pub agents: Option<usize>,
    /// Steps of 1/60 s to simulate.
    #[arg(long, default_value_t = 600)]
    pub steps: usize,
    #[arg(long, value_enum, default_value = "uniform")]
    pub index: IndexArg,
    #[arg(long, value_enum, default_value = "nearest7")]
    pub mode: ModeArg,
    /// Neighbours per agent in nearest mode (1 to 64).
    #[arg(long, default_value_t = 7)]
    pub k: usize,
    /// Neighbour radius (OpenSteer's 9).
    #[arg(long, default_value_t = 9.0)]
    pub radius: f32,
    /// How agents start [default: dense] (not with --init).
    #[arg(long, value_enum)]
    pub start: Option<StartArg>,
    /// World radius (default: the paper's density, 40,960 agents in radius 200; at least 50).
    #[arg(long)]
    pub world_radius: Option<f32>,
    /// Seed of the start [default: 1] (not with --init).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Start from a saved state: .npy of shape (N, 6), positions and velocities (f32 or f64).
    #[arg(long)]
    pub init: Option<PathBuf>,
    /// Final state: .npy (N x 6) float32, positions then velocities, in agent-id order.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Write a PNG frame every --every steps into this folder (created if missing).
    #[arg(long)]
    pub frames: Option<PathBuf>,
    /// Steps between frames (default: steps/100, at least 1; with --frames or --gif).
    #[arg(long)]
    pub every: Option<usize>,
    /// An animated GIF of the frames.
    #[arg(long)]
    pub gif: Option<PathBuf>,
    /// Frame size in pixels (square).
    #[arg(long, default_value_t = 640)]
    pub frame_size: u32,
}

#[derive(Serialize)]
struct Sample {
    step: u64,
    #[serde(flatten)]
    stats: FlockStats,
}

#[derive(Serialize)]
struct Report {
    agents: usize,
    steps: usize,
    backend: String,
    device: String,
    params: FlockParams,
    start: String,
    seed: Option<u64>,
    /// Wall time of the steps alone (frames and statistics excluded), seconds.
    step_seconds: f64,
    steps_per_s: f64,
    agent_steps_per_s: f64,
    initial: FlockStats,
    r#final: FlockStats,
    samples: Vec<Sample>,
    frames: Vec<String>,
}

impl From<IndexArg> for FlockIndex {
    fn from(a: IndexArg) -> Self {
        match a {
            IndexArg::Brute => FlockIndex::Brute,
            IndexArg::Uniform => FlockIndex::Uniform,
            IndexArg::Dynamic => FlockIndex::Dynamic,
        }
    }
}

impl ModeArg {
    pub fn mode(self, k: usize) -> NeighborMode {
        match self {
            ModeArg::Nearest7 => NeighborMode::Nearest { k },
            ModeArg::Radius => NeighborMode::Radius,
        }
    }
}

impl From<StartArg> for Start {
    fn from(a: StartArg) -> Self {
        match a {
            StartArg::Dense => Start::Dense,
            StartArg::Uniform => Start::Uniform,
        }
    }
}

pub fn params_from(a: &FlockArgs, agents: usize) -> Result<FlockParams> {
    let world = a
        .world_radius
        .unwrap_or_else(|| flock::default_world_radius(agents));
    let p = FlockParams {
        radius: a.radius,
        mode: a.mode.mode(a.k),
        index: a.index.into(),
        ..FlockParams::new(world)
    };
    p.validate()?;
    Ok(p)
}

fn check_flags(a: &FlockArgs) -> Result<()> {
    if a.frame_size < 64 || a.frame_size > 4096 {
        bail!("--frame-size {} must be 64 to 4096 pixels", a.frame_size);
    }
    if a.every == Some(0) {
        bail!("--every must be at least 1");
    }
    if a.every.is_some() && a.frames.is_none() && a.gif.is_none() {
        bail!("--every sets the steps between frames: give --frames and/or --gif");
    }
    if a.init.is_some() {
        for (given, flag) in [
            (a.agents.is_some(), "--agents"),
            (a.seed.is_some(), "--seed"),
            (a.start.is_some(), "--start"),
        ] {
            if given {
                bail!("{flag} has no effect with --init (the saved state gives the agents)");
            }
        }
    }
    Ok(())
}

pub fn run(a: &FlockArgs, ctx: &Ctx) -> Result<()> {
    ctx.refuse_unused(&[Global::Crs])?;
    let quiet = ctx.quiet();
    check_flags(a)?;
    let mut outs = Outputs::new();
    if let Some(p) = &a.init {
        outs.input("--init", p);
    }
    outs.plan_opt("--out", a.out.as_deref(), Kind::File)?;
    outs.plan_opt("--gif", a.gif.as_deref(), Kind::File)?;
    outs.plan_opt("--frames", a.frames.as_deref(), Kind::Folder)?;
    outs.plan_opt("--json", ctx.json(), Kind::File)?;
    let state = match &a.init {
        Some(p) => fio::read_state(p)?,
        None => {
            let agents = a.agents.unwrap_or(DEFAULT_AGENTS);
            if agents == 0 {
                bail!("--agents must be at least 1");
            }
            let world = a
                .world_radius
                .unwrap_or_else(|| flock::default_world_radius(agents));
            let start = a.start.unwrap_or(StartArg::Dense).into();
            FlockState::new(agents, start, world, a.seed.unwrap_or(1)).context("--agents")?
        }
    };
    let n = state.len();
    if n == 0 {
        bail!("the flock has no agents");
    }
    let params = params_from(a, n)?;
    let frames_dir = a.frames.as_deref().map(|d| outs.folder(d)).transpose()?;
    let be = ctx.open_backend()?.backend;
    let world = params.constants.world_radius;
    let initial = flock::stats(&state, world);
    let mut fl = Flock::new(&be, params, state)?;
    let want_frames = a.frames.is_some() || a.gif.is_some();
    let every = a.every.unwrap_or((a.steps / 100).max(1));
    let view = fio::view(a.frame_size, world, n);
    let mut frames = Frames::new(view, params.dt, frames_dir, a.gif.is_some());
    if !quiet {
        let within = match params.mode {
            NeighborMode::Nearest { k } => format!("{k} nearest"),
            NeighborMode::Radius => "all".to_string(),
        };
        let index = format!("{:?}", params.index).to_lowercase();
        println!(
            "{n} boids, world radius {world:.1}, {within} within r = {}, {index} index, {}",
            params.radius,
            be.label()
        );
    }
    let mut samples = Vec::new();
    let (mut step_seconds, mut done) = (0.0, 0usize);
    let mut snapshot = |fl: &Flock, done: usize, step_seconds: f64| -> Result<()> {
        let st = fl.state()?;
        let s = flock::stats(&st, world);
        if !quiet {
            let rate = if done > 0 {
                format!(", {:.0} steps/s", done as f64 / step_seconds.max(1e-12))
            } else {
                String::new()
            };
            println!(
                "step {done:>6}: polarisation {:.3}, mean nearest-neighbour distance {:.3}, mean speed {:.2}{rate}",
                s.polarisation, s.mean_nn_distance, s.mean_speed
            );
        }
        if want_frames {
            frames.record(&st, done as u64, s.polarisation)?;
        }
        samples.push(Sample {
            step: done as u64,
            stats: s,
        });
        Ok(())
    };
    if want_frames {
        snapshot(&fl, 0, 0.0)?;
    }
    while done < a.steps {
        let chunk = (a.steps - done).min(if want_frames { every } else { usize::MAX });
        let t = Instant::now();
        fl.step(chunk)?;
        fl.synchronize()?;
        step_seconds += t.elapsed().as_secs_f64();
        done += chunk;
        if want_frames {
            snapshot(&fl, done, step_seconds)?;
        }
    }
    let st = fl.state()?;
    let fin = flock::stats(&st, world);
    let sps = a.steps as f64 / step_seconds.max(1e-12);
    println!(
        "{} steps of {n} boids in {step_seconds:.3} s: {sps:.1} steps/s, {:.3e} agent-steps/s ({})",
        a.steps,
        sps * n as f64,
        be.label()
    );
    println!(
        "polarisation {:.3} (start {:.3}), mean nearest-neighbour distance {:.3} (start {:.3})",
        fin.polarisation, initial.polarisation, fin.mean_nn_distance, initial.mean_nn_distance
    );
    let mut written = Vec::new();
    if let Some(p) = &a.out {
        written.push(outs.write_one(p, |s| Ok(fio::write_state(s, &st)?))?);
    }
    if let Some(p) = &a.gif {
        written.push(outs.write_one(p, |s| Ok(frames.write_gif(s)?))?);
    }
    let frame_files: Vec<String> = match &a.frames {
        Some(d) => frames
            .names()
            .iter()
            .map(|f| d.join(f).display().to_string())
            .collect(),
        None => Vec::new(),
    };
    if let Some(p) = ctx.json() {
        let r = Report {
            agents: n,
            steps: a.steps,
            backend: be.label(),
            device: be.device_name(),
            params,
            start: match (&a.init, a.start.unwrap_or(StartArg::Dense)) {
                (Some(p), _) => format!("file {}", p.display()),
                (None, s) => format!("{s:?}").to_lowercase(),
            },
            seed: a.init.is_none().then(|| a.seed.unwrap_or(1)),
            step_seconds,
            steps_per_s: sps,
            agent_steps_per_s: sps * n as f64,
            initial,
            r#final: fin,
            samples,
            frames: frame_files.clone(),
        };
        written.push(outs.write_json(p, &r)?);
    }
    outs.commit()?;
    if !written.is_empty() {
        println!("wrote {}", crate::output::joined(&written));
    }
    if let Some(d) = &a.frames {
        println!("wrote {} frames into {}", frame_files.len(), d.display());
    }
    Ok(())
}
