//! `geofield flock`: OpenSteer's boids on exact neighbour searches, with frames and statistics.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use geofield::flock::io::{self as fio, Frames};
use geofield::flock::{self, FlockIndex, FlockParams, NeighborMode, RunOptions, Start};

use crate::ctx::{Ctx, Global};
use crate::flock_report;
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
    /// Obstacles and predators: a JSON scene file (spheres, boxes, rectangles, planes;
    /// predators that pursue the nearest boid), or one of OpenSteer's boids worlds
    /// `opensteer:NAME` (inside-sphere, outside-sphere, outside-spheres, outside-spheres-no-big,
    /// rectangle, rectangle-no-big, outside-box, inside-box). Frames outline the obstacles and
    /// show the predators in red; snapshots count collisions.
    #[arg(long)]
    pub scene: Option<PathBuf>,
    /// Add this many predators (default limits) on a circle of 0.8 × the world radius.
    #[arg(long)]
    pub predators: Option<usize>,
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
    let scene = a.scene.is_some() || a.predators.is_some();
    if a.every.is_some() && a.frames.is_none() && a.gif.is_none() && !scene {
        bail!(
            "--every sets the steps between frames or snapshots: give --frames, --gif or --scene"
        );
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

/// The OpenSteer preset a `--scene` value names (`opensteer:NAME`), if it does.
fn preset(p: &std::path::Path) -> Option<&str> {
    p.to_str().and_then(|s| s.strip_prefix("opensteer:"))
}

pub fn run(a: &FlockArgs, ctx: &Ctx) -> Result<()> {
    ctx.refuse_unused(&[Global::Crs, Global::Compress])?;
    let quiet = ctx.quiet();
    check_flags(a)?;
    let mut outs = Outputs::new();
    if let Some(p) = &a.init {
        outs.input("--init", p);
    }
    if let Some(p) = a.scene.as_deref().filter(|p| preset(p).is_none()) {
        outs.input("--scene", p);
    }
    outs.plan_opt("--out", a.out.as_deref(), Kind::File)?;
    outs.plan_opt("--gif", a.gif.as_deref(), Kind::File)?;
    outs.plan_opt("--frames", a.frames.as_deref(), Kind::Folder)?;
    outs.plan_opt("--json", ctx.json(), Kind::File)?;
    let init = a.init.as_deref().map(fio::read_state).transpose()?;
    let n = match &init {
        Some(s) if s.is_empty() => bail!("the flock has no agents"),
        Some(s) => s.len(),
        None => a.agents.unwrap_or(DEFAULT_AGENTS),
    };
    if n == 0 {
        bail!("--agents must be at least 1");
    }
    let world = a
        .world_radius
        .unwrap_or_else(|| flock::default_world_radius(n));
    let mut scene = match a.scene.as_deref() {
        Some(p) => match preset(p) {
            Some(name) => flock::Scene::opensteer(name, world).context("--scene")?,
            None => fio::read_scene(p)?,
        },
        None => flock::Scene::default(),
    };
    if let Some(k) = a.predators {
        scene.add_predators(k, world);
    }
    // A generated start keeps clear of the scene's solids.
    let state = match init {
        Some(s) => s,
        None => {
            let start = a.start.unwrap_or(StartArg::Dense).into();
            scene
                .start_state(n, start, world, a.seed.unwrap_or(1))
                .context("--agents")?
        }
    };
    let params = params_from(a, n)?;
    let frames_dir = a.frames.as_deref().map(|d| outs.folder(d)).transpose()?;
    let be = ctx.open_backend()?.backend;
    let want_frames = a.frames.is_some() || a.gif.is_some();
    let view = fio::view(a.frame_size, params.constants.world_radius, n);
    let snapshots = want_frames || !scene.is_empty();
    let opts = RunOptions {
        steps: a.steps,
        every: snapshots.then(|| a.every.unwrap_or((a.steps / 100).max(1))),
        frames: want_frames.then(|| Frames::new(view, params.dt, frames_dir, a.gif.is_some())),
        scene,
    };
    if !quiet {
        flock_report::print_header(&params, n, &be, &opts.scene);
    }
    let run = flock::run(&be, state, &params, &opts, &mut |s| {
        if !quiet {
            flock_report::print_snapshot(s);
        }
    })?;
    flock_report::finish(a, ctx, &be, params, &opts.scene, &run, outs)
}
