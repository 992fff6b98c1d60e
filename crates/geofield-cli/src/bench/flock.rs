//! `geofield bench flock`: boids steps per second for every neighbour index, on the paper's
//! uniform density and on OpenSteer's dense start, from 1,024 agents to 2^20.
//!
//! Each case starts a flock, takes warm-up steps, then times `repeats` samples of a chunk of
//! steps (chosen so a sample lasts about 50 ms) with the backend synchronised around it; the
//! per-step median is reported with agent-steps/s, the phase times of one profiled step (GPU:
//! device events) and, on the GPU, the effective bandwidth of a modelled 200 bytes per agent-step
//! (state read and written, grid build, neighbour reads; `shared/notes/neighbors-boids.md` §5.2)
//! against the device's nominal DRAM bandwidth.

use std::time::Instant;

use crate::ctx::{Ctx, Global};
use anyhow::Result;
use clap::Args;
use geofield::Backend;
use geofield::bench::flock::profile_step;
use geofield::flock::{self, Flock, FlockParams, FlockState, Scene};

use super::{BenchEnv, JsonRows, Stats};
use crate::cmd_flock::{IndexArg, ModeArg, StartArg};

/// Modelled DRAM traffic of one agent-step, bytes (the note's §5.2 estimate).
const BYTES_PER_AGENT_STEP: f64 = 200.0;

#[derive(Args)]
pub struct BenchArgs {
    /// Agent counts (default 1,024 to 2^20; on the CPU up to 2^18).
    #[arg(long, value_delimiter = ',')]
    pub agents: Vec<usize>,
    #[arg(long, value_delimiter = ',', value_enum, default_values_t = vec![StartArg::Uniform, StartArg::Dense])]
    pub starts: Vec<StartArg>,
    #[arg(long, value_delimiter = ',', value_enum, default_values_t = vec![IndexArg::Brute, IndexArg::Uniform, IndexArg::Dynamic])]
    pub indexes: Vec<IndexArg>,
    #[arg(long, value_delimiter = ',', value_enum, default_values_t = vec![ModeArg::Nearest7])]
    pub modes: Vec<ModeArg>,
    /// Brute force only up to this many agents (default 65,536 on the GPU, 16,384 on the CPU).
    #[arg(long)]
    pub brute_max: Option<usize>,
    #[arg(long, default_value_t = 5)]
    pub repeats: usize,
    #[arg(long, default_value_t = 3)]
    pub warmup_steps: usize,
    /// Scenes to time: `none`, `opensteer:NAME` (OpenSteer's boids worlds scaled to each world
    /// radius) or a scene file; starts keep clear of the solids.
    #[arg(long, value_delimiter = ',', default_values_t = vec!["none".to_string()])]
    pub scenes: Vec<String>,
    /// Predators added to every scene but `none`.
    #[arg(long, default_value_t = 0)]
    pub predators: usize,
}

/// The scene `spec` names for a world of radius `world` (see [`BenchArgs::scenes`]).
fn scene_of(spec: &str, world: f32, predators: usize) -> Result<Scene> {
    if spec == "none" {
        return Ok(Scene::default());
    }
    let mut s = match spec.strip_prefix("opensteer:") {
        Some(name) => Scene::opensteer(name, world)?,
        None => geofield::flock::io::read_scene(std::path::Path::new(spec))?,
    };
    s.add_predators(predators, world);
    Ok(s)
}

#[derive(serde::Serialize)]
struct Row {
    scene: String,
    start: String,
    agents: usize,
    world_radius: f32,
    index: String,
    mode: String,
    steps_per_sample: usize,
    /// Seconds per step.
    step: Stats,
    steps_per_s: f64,
    agent_steps_per_s: f64,
    /// (phase, milliseconds) of one profiled step.
    phases: Vec<(String, f64)>,
    effective_bandwidth_gb_s: Option<f64>,
    bandwidth_share: Option<f64>,
}

#[derive(serde::Serialize)]
struct Head<'a> {
    env: &'a BenchEnv,
    bytes_per_agent_step_model: f64,
    peak_bandwidth_bytes_per_s: Option<f64>,
}

/// Steps per sample, per-step stats and the phases of one profiled step.
type Measured = (usize, Stats, Vec<(String, f64)>);

fn one(
    be: &Backend,
    params: FlockParams,
    scene: &Scene,
    state: FlockState,
    a: &BenchArgs,
) -> Result<Measured> {
    let mut fl = Flock::with_scene(be, params, scene, state)?;
    fl.step(a.warmup_steps)?;
    fl.synchronize()?;
    let t = Instant::now();
    fl.step(1)?;
    fl.synchronize()?;
    let t1 = t.elapsed().as_secs_f64();
    let chunk = ((0.05 / t1.max(1e-7)) as usize).clamp(1, 200);
    let mut samples = Vec::new();
    for _ in 0..a.repeats.max(1) {
        let t = Instant::now();
        fl.step(chunk)?;
        fl.synchronize()?;
        samples.push(t.elapsed().as_secs_f64() / chunk as f64);
    }
    let phases = profile_step(&mut fl)?
        .into_iter()
        .map(|(n, ms)| (n.to_string(), ms))
        .collect();
    Ok((chunk, Stats::of(samples), phases))
}

pub fn run(a: &BenchArgs, ctx: &Ctx) -> Result<()> {
    ctx.refuse_unused(&[Global::Crs, Global::Compress])?;
    let sel = ctx.open_backend()?;
    let be = sel.backend;
    let env = BenchEnv::new(&be);
    let peak = match &be {
        Backend::Cuda(g) if g.info().peak_bandwidth_bytes_per_s > 0.0 => {
            Some(g.info().peak_bandwidth_bytes_per_s)
        }
        _ => None,
    };
    let mut json = JsonRows::new(
        ctx,
        &Head {
            env: &env,
            bytes_per_agent_step_model: BYTES_PER_AGENT_STEP,
            peak_bandwidth_bytes_per_s: peak,
        },
        "rows",
    )?;
    let agents = if a.agents.is_empty() {
        let mut v = vec![1024, 10_240, 65_536, 262_144];
        if be.is_cuda() {
            v.push(1 << 20);
        }
        v
    } else {
        a.agents.clone()
    };
    println!(
        "geofield bench flock on {} ({}), commit {}{}",
        env.backend,
        env.device,
        env.commit,
        peak.map(|p| format!(", nominal DRAM {:.2} TB/s", p / 1e12))
            .unwrap_or_default()
    );
    println!(
        "{:<8} {:>8} {:<8} {:<9} {:>10} {:>10} {:>12} {:>8}  phases (ms)",
        "start", "agents", "index", "mode", "ms/step", "steps/s", "agent-st/s", "BW share"
    );
    let mut rows = Vec::new();
    for spec in &a.scenes {
        if spec != "none" {
            println!(
                "scene {spec}{}",
                if a.predators > 0 {
                    format!(" + {} predators", a.predators)
                } else {
                    String::new()
                }
            );
        }
        for &start in &a.starts {
            for &n in &agents {
                for &mode in &a.modes {
                    for &index in &a.indexes {
                        let brute_max =
                            a.brute_max
                                .unwrap_or(if be.is_cuda() { 65_536 } else { 16_384 });
                        if index == IndexArg::Brute && n > brute_max {
                            continue;
                        }
                        let world = flock::default_world_radius(n);
                        let mut params = FlockParams::new(world);
                        params.mode = mode.mode(7);
                        params.index = index.into();
                        let scene = scene_of(spec, world, a.predators)?;
                        let state = scene.start_state(n, start.into(), world, 1)?;
                        let (chunk, step, phases) = match one(&be, params, &scene, state, a) {
                            Ok(v) => v,
                            Err(e) => {
                                println!(
                                    "{:<8} {:>8} {:<8} {:<9} skipped: {e:#}",
                                    format!("{start:?}").to_lowercase(),
                                    n,
                                    format!("{index:?}").to_lowercase(),
                                    format!("{mode:?}").to_lowercase()
                                );
                                continue;
                            }
                        };
                        let sps = 1.0 / step.median;
                        let bw = be
                            .is_cuda()
                            .then(|| BYTES_PER_AGENT_STEP * n as f64 * sps / 1e9);
                        let row = Row {
                            scene: spec.clone(),
                            start: format!("{start:?}").to_lowercase(),
                            agents: n,
                            world_radius: world,
                            index: format!("{index:?}").to_lowercase(),
                            mode: format!("{mode:?}").to_lowercase(),
                            steps_per_sample: chunk,
                            steps_per_s: sps,
                            agent_steps_per_s: sps * n as f64,
                            step,
                            phases,
                            effective_bandwidth_gb_s: bw,
                            bandwidth_share: bw.zip(peak).map(|(b, p)| b * 1e9 / p),
                        };
                        println!(
                            "{:<8} {:>8} {:<8} {:<9} {:>10.4} {:>10.1} {:>12.3e} {:>8}  {}",
                            row.start,
                            row.agents,
                            row.index,
                            row.mode,
                            row.step.median * 1e3,
                            row.steps_per_s,
                            row.agent_steps_per_s,
                            row.bandwidth_share
                                .map(|s| format!("{:.1} %", s * 100.0))
                                .unwrap_or_else(|| "-".into()),
                            row.phases
                                .iter()
                                .map(|(n, ms)| format!("{n} {ms:.3}"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        );
                        rows.push(row);
                        json.sync(&rows)?;
                    }
                }
            }
        }
    }
    json.finish(&rows)?;
    Ok(())
}
