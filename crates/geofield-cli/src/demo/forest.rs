//! The demo's seed dispersal part: a synthetic SBS-like stand, its seed maps (cutoff and
//! multi-resolution), the exact check and the multires error map.

use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use geofield::Backend;
use geofield::dispersal::io::MapStyle;
use geofield::dispersal::{self, DisperseOptions, Method, Precision};
use geofield::synth::{self, DbhModel, Pattern};
use geofield_core::{Extent, GridSpec};
use geofield_io::Colormap;

use super::{DEMO_CRS, Step};
use crate::output;

/// Seed dispersal: a 256 m x 256 m SBS-like stand at 300 stems/ha, 1 m cells.
pub(super) fn run(out_dir: &Path, be: &Backend, steps: &mut Vec<Step>) -> Result<()> {
    let t = Instant::now();
    let extent = Extent::new(500_000.0, 6_000_000.0, 500_256.0, 6_000_256.0)?;
    let species = synth::sbs_species();
    let stand = synth::forest(
        1966,
        &extent,
        42,
        Pattern::Clustered,
        DbhModel::Realistic,
        &synth::SBS_SHARES,
    );
    dispersal::io::write_stand(&out_dir.join("trees.csv"), &stand, &species)?;
    dispersal::io::write_species(&out_dir.join("species.toml"), &species)?;
    steps.push(Step::since(
        "synth forest",
        t,
        format!(
            "{} stems, 4 species -> trees.csv, species.toml",
            stand.len()
        ),
    ));

    let grid = GridSpec::from_extent(extent, 1.0)?;
    let opts = DisperseOptions {
        method: Method::Auto,
        tolerance: 1e-6,
        precision: Precision::F32,
        ..Default::default()
    };
    let t = Instant::now();
    let out = dispersal::disperse(be, &grid, &species, &stand, &opts)?;
    let methods: Vec<String> = out
        .reports
        .iter()
        .map(|r| format!("{} R={:.0} m", r.method.name(), r.radius_m.unwrap_or(0.0)))
        .collect();
    steps.push(Step::since(
        "disperse (auto)",
        t,
        format!(
            "{} cells x 4 species; {}",
            grid.n_cells(),
            methods.join(", ")
        ),
    ));

    let t = Instant::now();
    let worst = dispersal::compare_exact(be, &grid, &species, &stand, &out, &opts, &mut |_| {})?
        .iter()
        .fold(0.0f64, |w, m| w.max(m.max_abs_over_max));
    steps.push(Step::since(
        "exact check",
        t,
        format!("max |cutoff - exact| / max = {worst:.1e} (tolerance 1e-6)"),
    ));

    let t = Instant::now();
    let mr = dispersal::disperse(
        be,
        &grid,
        &species,
        &stand,
        &DisperseOptions {
            method: Method::Multires,
            ..opts
        },
    )?;
    let mut mean = 0.0;
    for i in 0..species.len() {
        let m = dispersal::compare(&mr.raster.band_f64(i), &out.raster.band_f64(i));
        mean += m.mean_rel / species.len() as f64;
    }
    steps.push(Step::since(
        "multires (2012 paper)",
        t,
        format!("mean relative error {:.2} % vs cutoff", mean * 100.0),
    ));

    let t = Instant::now();
    let provenance = output::provenance(&[]);
    dispersal::io::write_seed_map(
        &out_dir.join("seeds.tif"),
        &out.raster,
        Some(DEMO_CRS),
        &provenance,
        Default::default(),
    )?;
    let style = MapStyle::panels("Seed density, SBS-like stand", Colormap::Viridis);
    dispersal::io::write_seed_png(&out_dir.join("seeds.png"), &out.raster, &style)?;
    let style = MapStyle {
        blend: true,
        ..MapStyle::panels("Seed density by species (blend)", Colormap::Viridis)
    };
    dispersal::io::write_seed_png(&out_dir.join("seeds_blend.png"), &out.raster, &style)?;
    let err = dispersal::relative_error_raster(&mr.raster, &out.raster)?;
    let style = MapStyle::panels("Multires relative error vs cutoff", Colormap::Magma);
    dispersal::io::write_error_png(&out_dir.join("multires_error.png"), &err, &style)?;
    steps.push(Step::since(
        "write outputs",
        t,
        "seeds.tif, seeds.png, seeds_blend.png, multires_error.png".into(),
    ));
    super::forest_years::run(out_dir, be, &grid, &stand, steps)
}
