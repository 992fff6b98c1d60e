//! Seed density maps of a synthetic stand with the library alone (no CLI, no files).
//!
//! `cargo run --release -p geofield --example dispersal`

use geofield::dispersal::{self, DisperseOptions, Method, Precision};
use geofield::synth::{self, DbhModel, Pattern};
use geofield::{BackendChoice, backend};
use geofield_core::{Extent, GridSpec};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The CPU, or the GPU when one works (with the reason printed when it does not).
    let sel = backend::select(BackendChoice::Auto)?;
    if let Some(why) = &sel.fallback_reason {
        eprintln!("using the CPU: {why}");
    }
    // A 200 m x 200 m stand of 1200 stems of the four SBS species, on 1 m cells.
    let extent = Extent::new(0.0, 0.0, 200.0, 200.0)?;
    let grid = GridSpec::from_extent(extent, 1.0)?;
    let species = synth::sbs_species();
    let stand = synth::forest(
        1200,
        &extent,
        7,
        Pattern::Clustered,
        DbhModel::Realistic,
        &synth::SBS_SHARES,
    );
    let opts = DisperseOptions {
        method: Method::Cutoff,
        tolerance: 1e-6,
        // f32 output (the GPU computes in f32 and refuses f64).
        precision: Precision::F32,
        ..DisperseOptions::default()
    };
    let out = dispersal::disperse(&sel.backend, &grid, &species, &stand, &opts)?;
    for r in &out.reports {
        println!(
            "{:<20} {:>6} trees, {:.3e} seeds on the grid, peak {:.3e} m-2",
            r.name, r.trees_contributing, r.seeds_on_grid, r.max_density_per_m2
        );
    }
    Ok(())
}
