//! A mass-consistent wind field over a synthetic hill from one station, with the library alone.
//!
//! `cargo run --release -p geofield --example wind`

use geofield::synth::terrain::{self, StationSpec, TerrainKind, TerrainSpec};
use geofield::wind::{self, Levels, WindGrid, WindOptions};
use geofield::{BackendChoice, backend};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let be = backend::select(BackendChoice::Auto)?.backend;
    let (plan, z) = terrain::terrain(&TerrainSpec {
        kind: TerrainKind::GaussianHill,
        cols: 64,
        rows: 64,
        cell_size_m: 30.0,
        x_min_m: 0.0,
        y_min_m: 0.0,
        base_m: 100.0,
        height_m: 150.0,
        width_m: None,
    })?;
    let stations = terrain::stations(
        &plan,
        &StationSpec {
            count: 1,
            speed_m_per_s: 5.0,
            direction_deg: 270.0,
            height_agl_m: 10.0,
            stability: None,
            seed: 1,
        },
    )?;
    // 24 layers of 10 m above the lowest ground.
    let grid = WindGrid::new(plan, z, &Levels::Uniform { nz: 24, dz_m: 10.0 })?;
    let field = wind::compute(&be, grid, &stations, &WindOptions::default())?;
    let r = &field.report;
    println!(
        "{}: {} iterations, max|div u| {:.2e} s-1 (from {:.2e}), converged {}",
        r.method, r.iterations, r.max_div_per_s, r.max_div0_per_s, r.converged
    );
    let (speed, _dir) = wind::at_height_agl(&field, 10.0)?;
    let max = speed.iter().copied().fold(0.0f64, f64::max);
    println!("fastest wind 10 m above ground: {max:.2} m/s");
    Ok(())
}
