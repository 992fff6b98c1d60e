//! The report of `geofield flock`: the lines it prints, the `--json` summary, and the writing of
//! its staged outputs.

use anyhow::Result;
use geofield::Backend;
use geofield::flock::io as fio;
use geofield::flock::{
    FlockParams, FlockRun, FlockSample, FlockStats, NeighborMode, Scene, Snapshot,
};
use serde::Serialize;

use crate::cmd_flock::{FlockArgs, StartArg};
use crate::ctx::Ctx;
use crate::outputs::Outputs;

/// Everything `--json` writes.
#[derive(Serialize)]
struct Report<'a> {
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
    samples: &'a [FlockSample],
    frames: Vec<String>,
    /// The scene file's obstacles and predators, and what they did (with --scene).
    #[serde(skip_serializing_if = "Option::is_none")]
    scene: Option<SceneReport<'a>>,
}

/// The `scene` entry of the report.
#[derive(Serialize)]
struct SceneReport<'a> {
    /// The --scene value (a file or `opensteer:NAME`), if any.
    file: Option<String>,
    /// The scene as read, defaults filled in.
    obstacles: &'a [geofield::flock::Obstacle],
    predators: &'a [geofield::flock::Predator],
    evasion: geofield::flock::Evasion,
    avoidance: geofield::flock::Avoidance,
    /// Most agents inside a solid obstacle at any snapshot (per snapshot: `samples`).
    max_collisions: Option<usize>,
    /// Collisions at the last snapshot.
    final_collisions: Option<usize>,
    /// Smallest distance from a predator to its nearest boid at any snapshot, m.
    min_predator_distance_m: Option<f64>,
    /// The predators' final positions and speeds.
    predator_final_positions: Vec<[f32; 3]>,
    predator_final_speeds: Vec<f32>,
}

/// The line before the steps: the flock, its neighbours and the backend.
pub(crate) fn print_header(params: &FlockParams, n: usize, be: &Backend, scene: &Scene) {
    let within = match params.mode {
        NeighborMode::Nearest { k } => format!("{k} nearest"),
        NeighborMode::Radius => "all".to_string(),
    };
    let index = format!("{:?}", params.index).to_lowercase();
    println!(
        "{n} boids, world radius {:.1}, {within} within r = {}, {index} index, {}",
        params.constants.world_radius,
        params.radius,
        be.label()
    );
    if !scene.is_empty() {
        println!(
            "scene: {} obstacles, {} predators (evade within {} m, weight {})",
            scene.obstacles.len(),
            scene.predators.len(),
            scene.evasion.radius,
            scene.evasion.weight
        );
    }
}

/// The line of one snapshot.
pub(crate) fn print_snapshot(s: &Snapshot<'_>) {
    let rate = if s.step > 0 {
        format!(", {:.0} steps/s", s.step as f64 / s.step_seconds.max(1e-12))
    } else {
        String::new()
    };
    let mut scene = String::new();
    if let Some(c) = s.sample.collisions {
        scene.push_str(&format!(", {c} in obstacles"));
    }
    if let Some(d) = s.sample.predator_distance_m {
        scene.push_str(&format!(", predator {d:.2} m from a boid"));
    }
    println!(
        "step {:>6}: polarisation {:.3}, mean nearest-neighbour distance {:.3}, mean speed {:.2}{scene}{rate}",
        s.step, s.stats.polarisation, s.stats.mean_nn_distance, s.stats.mean_speed
    );
}

/// Print the run's rates and statistics, write the final state, the GIF and the `--json`
/// summary into `outs`, commit them and say what was written.
pub(crate) fn finish(
    a: &FlockArgs,
    ctx: &Ctx,
    be: &Backend,
    params: FlockParams,
    scene: &Scene,
    run: &FlockRun,
    mut outs: Outputs,
) -> Result<()> {
    let n = run.state.len();
    let (initial, fin, step_seconds, sps) = (
        run.initial,
        run.final_stats,
        run.step_seconds,
        run.steps_per_s(),
    );
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
        written.push(outs.write_one(p, |s| Ok(fio::write_state(s, &run.state)?))?);
    }
    if let (Some(p), Some(frames)) = (&a.gif, &run.frames) {
        written.push(outs.write_one(p, |s| Ok(frames.write_gif(s)?))?);
    }
    let frame_files: Vec<String> = match (&a.frames, &run.frames) {
        (Some(d), Some(frames)) => frames
            .names()
            .iter()
            .map(|f| d.join(f).display().to_string())
            .collect(),
        _ => Vec::new(),
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
            samples: &run.samples,
            frames: frame_files.clone(),
            scene: (!scene.is_empty()).then(|| scene_report(a.scene.as_deref(), scene, run)),
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

/// What the report says about the scene.
fn scene_report<'a>(
    path: Option<&std::path::Path>,
    scene: &'a Scene,
    run: &FlockRun,
) -> SceneReport<'a> {
    let coll: Vec<usize> = run.samples.iter().filter_map(|s| s.collisions).collect();
    let dist = run
        .samples
        .iter()
        .filter_map(|s| s.predator_distance_m)
        .fold(None, |m: Option<f64>, d| Some(m.map_or(d, |m| m.min(d))));
    SceneReport {
        file: path.map(|p| p.display().to_string()),
        obstacles: &scene.obstacles,
        predators: &scene.predators,
        evasion: scene.evasion,
        avoidance: scene.avoidance,
        max_collisions: coll.iter().copied().max(),
        final_collisions: coll.last().copied(),
        min_predator_distance_m: dist,
        predator_final_positions: run.predators.pos.clone(),
        predator_final_speeds: run.predators.speed.clone(),
    }
}
