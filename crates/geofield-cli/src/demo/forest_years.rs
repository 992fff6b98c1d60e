//! The demo's forest part: 30 years of the yearly loop on the demo's stand (seed production,
//! expected dispersal with Poisson counts, establishment, growth, mortality), with the counts
//! table, the recruits chart (the seed paper's Fig. 13), the densities and the stand's GIF.

use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use geofield::Backend;
use geofield::dispersal::{DisperseOptions, Method, Precision, Stand};
use geofield::forest::output::{self as fout, DensityStack, StandFrames};
use geofield::forest::simulate::{self, DispersalMode, SimulateOptions};
use geofield::forest::trees::Trees;
use geofield::synth;
use geofield_core::GridSpec;

use super::{DEMO_CRS, Step};
use crate::output;

/// Years of the demo's forest run.
const YEARS: u32 = 30;

pub(super) fn run(
    out_dir: &Path,
    be: &Backend,
    grid: &GridSpec,
    stand: &Stand,
    steps: &mut Vec<Step>,
) -> Result<()> {
    let t = Instant::now();
    let params = synth::sbs_forest(false)
        .validated()
        .map_err(anyhow::Error::msg)?;
    let names: Vec<String> = params
        .species
        .iter()
        .map(|s| s.name().to_string())
        .collect();
    let opts = SimulateOptions {
        years: YEARS,
        seed: 1,
        mode: DispersalMode::Expected,
        dispersal: DisperseOptions {
            method: Method::Auto,
            tolerance: 1e-6,
            precision: Precision::F32,
            ..Default::default()
        },
        suitability: None,
    };
    let mut rows = Vec::new();
    let mut density = DensityStack::new(grid, 4, names.clone(), YEARS as usize + 1)?;
    let mut frames = StandFrames::new(grid, names.len());
    let trees = Trees::from_stand(stand, names.len())?;
    let (last, timing) = simulate::simulate(
        be,
        grid,
        &params,
        trees,
        &opts,
        &geofield::Cancel::new(),
        &mut |y| {
            rows.extend(fout::rows_of(y, &names, 0, "auto"));
            density.push(y, &params)?;
            frames.push(y, &params)?;
            Ok(())
        },
    )?;
    let recruits: u64 = rows.iter().map(|r| r.recruits).sum();
    steps.push(Step::since(
        "forest, 30 years",
        t,
        format!(
            "{} recruits in all, {} trees in year {YEARS} (dispersal {:.2} s)",
            recruits,
            last.len(),
            timing.dispersal_s
        ),
    ));
    let t = Instant::now();
    fout::write_counts_csv(&out_dir.join("forest_counts.csv"), &rows)?;
    fout::write_counts_png(&out_dir.join("forest_recruits.png"), &rows, "recruits")?;
    let provenance = output::provenance(&[(
        "method",
        "forest: expected dispersal, 30 years, seed 1".into(),
    )]);
    fout::write_density_nc(
        &out_dir.join("forest_density.nc"),
        &density,
        Some(DEMO_CRS),
        &provenance,
    )?;
    frames.write_gif(&out_dir.join("forest.gif"))?;
    steps.push(Step::since(
        "write forest outputs",
        t,
        "forest_counts.csv, forest_recruits.png, forest_density.nc, forest.gif".into(),
    ));
    Ok(())
}
