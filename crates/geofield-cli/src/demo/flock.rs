//! The demo's boids part: an animated GIF, the final frame and the final state.

use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use geofield::Backend;
use geofield::flock::{self, FlockParams, FlockState, RunOptions, Start};

use super::Step;

/// Boids: 2,000 agents from OpenSteer's dense start in a world of radius 30, 1,500 steps (25 s of
/// simulated time), with an animated GIF, the final frame and the final state.
pub(super) fn run(out_dir: &Path, be: &Backend, steps: &mut Vec<Step>) -> Result<()> {
    let (n, world, total, every) = (2000usize, 30.0f32, 1500usize, 25usize);
    let view = geofield_io::FlockView {
        width: 480,
        height: 480,
        world_radius: world,
        yaw_deg: 30.0,
        pitch_deg: 20.0,
        title: Some(format!(
            "geofield flock: {n} boids (OpenSteer rules, 7 nearest)"
        )),
    };
    let mut frames = Vec::new();
    let opts = RunOptions {
        steps: total,
        every: Some(every),
        ..Default::default()
    };
    let s0 = FlockState::init(n, Start::Dense, world, 7);
    let run = flock::run(be, s0, &FlockParams::new(world), &opts, &mut |s| {
        let caption = format!(
            "step {}  t={:.1}s  polarisation {:.2}",
            s.step,
            s.step as f64 / 60.0,
            s.stats.polarisation
        );
        frames.push(geofield_io::render_flock(
            &s.state.pos,
            &s.state.fwd,
            &view,
            &caption,
        ));
    })?;
    let t = Instant::now();
    geofield_io::write_gif(&out_dir.join("flock.gif"), &frames, 4)?;
    if let Some(f) = frames.last() {
        geofield_io::write_frame_png(&out_dir.join("flock.png"), f)?;
    }
    flock::io::write_state(&out_dir.join("flock_state.npy"), &run.state)?;
    steps.push(Step {
        what: "flock (boids)".into(),
        seconds: run.step_seconds,
        result: format!(
            "{n} boids x {total} steps, {:.0} steps/s; polarisation {:.2} -> {:.2}",
            total as f64 / run.step_seconds.max(1e-9),
            run.initial.polarisation,
            run.final_stats.polarisation
        ),
    });
    steps.push(Step::since(
        "write flock outputs",
        t,
        format!(
            "flock.gif ({} frames), flock.png, flock_state.npy",
            frames.len()
        ),
    ));
    Ok(())
}
