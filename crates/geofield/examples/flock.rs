//! OpenSteer's boids with the library alone: 2048 agents for 300 steps.
//!
//! `cargo run --release -p geofield --example flock`

use geofield::flock::{self, Flock, FlockParams, FlockState, Start};
use geofield::{BackendChoice, backend};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let be = backend::select(BackendChoice::Auto)?.backend;
    let agents = 2048;
    let world = flock::default_world_radius(agents);
    let state = FlockState::init(agents, Start::Dense, world, 1);
    let before = flock::stats(&state, world);
    let mut fl = Flock::new(&be, FlockParams::new(world), state)?;
    fl.step(300)?;
    let after = flock::stats(&fl.state()?, world);
    println!(
        "polarisation {:.3} -> {:.3}; mean nearest-neighbour distance {:.2} -> {:.2}",
        before.polarisation, after.polarisation, before.mean_nn_distance, after.mean_nn_distance
    );
    Ok(())
}
