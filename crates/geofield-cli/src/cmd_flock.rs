//! `geofield flock`: OpenSteer's boids on exact neighbour searches, with frames and statistics.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use geofield::flock::{
    self, Flock, FlockIndex, FlockParams, FlockState, FlockStats, NeighborMode, Start,
};
use geofield_io::{FlockFrame, FlockView, NpyData};
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

fn read_state(path: &Path) -> Result<FlockState> {
    let a = geofield_io::read_npy(path)?;
    if a.shape.len() != 2 || a.shape[1] != 6 {
        bail!(
            "{}: expected an array of shape (N, 6) (x, y, z, vx, vy, vz), got {:?}",
            path.display(),
            a.shape
        );
    }
    let rows: Vec<f32> = match a.data {
        NpyData::F32(v) => v,
        NpyData::F64(v) => v.iter().map(|&x| x as f32).collect(),
        _ => bail!("{}: expected float32 or float64 values", path.display()),
    };
    FlockState::from_rows(&rows).with_context(|| format!("{}", path.display()))
}

pub fn params_from(a: &FlockArgs, agents: usize) -> Result<FlockParams> {
    let world = a
        .world_radius
        .unwrap_or_else(|| flock::default_world_radius(agents));
    let mut p = FlockParams::new(world);
    p.radius = a.radius;
    p.mode = match a.mode {
        ModeArg::Nearest7 => NeighborMode::Nearest { k: a.k },
        ModeArg::Radius => NeighborMode::Radius,
    };
    p.index = match a.index {
        IndexArg::Brute => FlockIndex::Brute,
        IndexArg::Uniform => FlockIndex::Uniform,
        IndexArg::Dynamic => FlockIndex::Dynamic,
    };
    p.validate()?;
    Ok(p)
}

pub fn run(a: &FlockArgs, ctx: &Ctx) -> Result<()> {
    ctx.refuse_unused(&[Global::Crs])?;
    let quiet = ctx.quiet();
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
    let mut outs = Outputs::new();
    if let Some(p) = &a.init {
        outs.input("--init", p);
    }
    outs.plan_opt("--out", a.out.as_deref(), Kind::File)?;
    outs.plan_opt("--gif", a.gif.as_deref(), Kind::File)?;
    outs.plan_opt("--frames", a.frames.as_deref(), Kind::Folder)?;
    outs.plan_opt("--json", ctx.json(), Kind::File)?;
    let state = match &a.init {
        Some(p) => read_state(p)?,
        None => {
            let agents = a.agents.unwrap_or(DEFAULT_AGENTS);
            if agents == 0 {
                bail!("--agents must be at least 1");
            }
            let world = a
                .world_radius
                .unwrap_or_else(|| flock::default_world_radius(agents));
            let start = match a.start.unwrap_or(StartArg::Dense) {
                StartArg::Dense => Start::Dense,
                StartArg::Uniform => Start::Uniform,
            };
            FlockState::new(agents, start, world, a.seed.unwrap_or(1)).context("--agents")?
        }
    };
    let n = state.len();
    if n == 0 {
        bail!("the flock has no agents");
    }
    let params = params_from(a, n)?;
    let frames_dir = match &a.frames {
        Some(d) => Some(outs.folder(d)?),
        None => None,
    };
    let be = ctx.open_backend()?.backend;
    let world = params.constants.world_radius;
    let initial = flock::stats(&state, world);
    let mut fl = Flock::new(&be, params, state)?;
    let want_frames = a.frames.is_some() || a.gif.is_some();
    let every = a.every.unwrap_or((a.steps / 100).max(1));
    let view = FlockView {
        width: a.frame_size,
        height: a.frame_size,
        world_radius: world,
        yaw_deg: 30.0,
        pitch_deg: 20.0,
        title: Some(format!("geofield flock: {n} boids")),
    };
    if !quiet {
        println!(
            "{n} boids, world radius {world:.1}, {} within r = {}, {} index, {}",
            match params.mode {
                NeighborMode::Nearest { k } => format!("{k} nearest"),
                NeighborMode::Radius => "all".to_string(),
            },
            params.radius,
            format!("{:?}", params.index).to_lowercase(),
            be.label()
        );
    }
    let mut frames: Vec<FlockFrame> = Vec::new();
    let mut frame_files = Vec::new();
    let mut samples = Vec::new();
    let mut step_seconds = 0.0;
    let mut done = 0usize;
    let mut snapshot = |fl: &Flock, done: usize, step_seconds: f64| -> Result<()> {
        let st = fl.state()?;
        let s = flock::stats(&st, world);
        if !quiet {
            println!(
                "step {:>6}: polarisation {:.3}, mean nearest-neighbour distance {:.3}, mean speed {:.2}{}",
                done,
                s.polarisation,
                s.mean_nn_distance,
                s.mean_speed,
                if done > 0 {
                    format!(", {:.0} steps/s", done as f64 / step_seconds.max(1e-12))
                } else {
                    String::new()
                }
            );
        }
        if want_frames {
            let caption = format!(
                "step {done}  t={:.1}s  polarisation {:.2}",
                done as f64 * f64::from(params.dt),
                s.polarisation
            );
            let frame = geofield_io::render_flock(&st.pos, &st.fwd, &view, &caption);
            if let (Some(staged), Some(d)) = (&frames_dir, &a.frames) {
                let name = format!("frame_{done:06}.png");
                geofield_io::write_frame_png(&staged.join(&name), &frame)?;
                frame_files.push(d.join(&name).display().to_string());
            }
            if a.gif.is_some() {
                frames.push(frame);
            }
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
        let chunk = if want_frames {
            every.min(a.steps - done)
        } else {
            a.steps - done
        };
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
        "{} steps of {n} boids in {:.3} s: {:.1} steps/s, {:.3e} agent-steps/s ({})",
        a.steps,
        step_seconds,
        sps,
        sps * n as f64,
        be.label()
    );
    println!(
        "polarisation {:.3} (start {:.3}), mean nearest-neighbour distance {:.3} (start {:.3})",
        fin.polarisation, initial.polarisation, fin.mean_nn_distance, initial.mean_nn_distance
    );
    let mut written = Vec::new();
    if let Some(p) = &a.out {
        written.push(outs.write_one(p, |s| {
            Ok(geofield_io::write_npy_f32(s, &[n, 6], &st.to_rows())?)
        })?);
    }
    if let Some(p) = &a.gif {
        let delay = 4; // centiseconds: 25 frames per second
        written.push(outs.write_one(p, |s| Ok(geofield_io::write_gif(s, &frames, delay)?))?);
    }
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
