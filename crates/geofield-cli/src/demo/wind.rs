//! The demo's wind part: a synthetic valley with three stations, Sherman's adjustment and the
//! paper's WEST mode, a NetCDF field, a map and a 10 m wind speed raster.

use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use geofield::Backend;
use geofield::synth::terrain;
use geofield::wind::{self, Levels, Model, WindGrid, WindOptions};
use geofield_core::{Raster, RasterData};

use super::{DEMO_CRS, Step};
use crate::output;

/// Wind: a 6 km x 6 km valley at 50 m (120 x 120 columns, 32 layers of 10 m) with three
/// stations; Sherman's adjustment by multigrid to 1e-6, and the paper's WEST mode (500 sweeps at
/// omega = 1.25) to show how far from converged a fixed count leaves the field.
pub(super) fn run(out_dir: &Path, be: &Backend, steps: &mut Vec<Step>) -> Result<()> {
    let t = Instant::now();
    let (plan, dem, stations) = terrain::demo_valley()?;
    let grid = WindGrid::new(plan, dem, &Levels::Uniform { nz: 32, dz_m: 10.0 })?;
    let field = wind::compute(be, grid.clone(), &stations, &WindOptions::default())?;
    let r = &field.report;
    steps.push(Step::since(
        "wind (sherman, mg)",
        t,
        format!(
            "{} cells, {} V-cycles, max|div u| {:.1e} of max|div u0| (tolerance 1e-6)",
            grid.n_cells(),
            r.iterations,
            r.max_div_per_s / r.max_div0_per_s
        ),
    ));
    let t = Instant::now();
    let west = WindOptions {
        model: Model::West,
        fixed_iterations: true,
        max_iterations: 500,
        divergence_removal: false,
        ..Default::default()
    };
    let rw = wind::compute(be, grid.clone(), &stations, &west)?.report;
    steps.push(Step::since(
        "wind (paper's WEST)",
        t,
        format!(
            "500 sweeps at omega 1.25 leave max|div u| at {:.1e} of max|div u0|",
            rw.max_div_per_s / rw.max_div0_per_s
        ),
    ));
    let t = Instant::now();
    let cells = wind::cell_centred(&field)?;
    let (speed, direction) = wind::at_height_agl(&field, 10.0)?;
    let meta = wind::io::FieldMeta {
        crs_epsg: Some(DEMO_CRS),
        history: output::history(),
        provenance: Vec::new(),
        height_agl_m: 10.0,
        compression: Default::default(),
        speed: &speed,
        direction: &direction,
    };
    wind::io::write_nc(&out_dir.join("wind.nc"), &field, &cells, &meta)?;
    wind::io::write_map(&out_dir.join("wind.png"), &field, &stations, &meta)?;
    let speed_raster = Raster::new(plan, vec!["wind_speed_10m".into()], RasterData::F64(speed))?;
    output::write_raster(
        &out_dir.join("wind_speed.tif"),
        &speed_raster,
        "m s-1",
        "wind speed 10 m above ground (geofield demo)",
        Some(DEMO_CRS),
    )?;
    steps.push(Step::since(
        "write wind outputs",
        t,
        "wind.nc (xarray, ncview), wind_speed.tif, wind.png".into(),
    ));
    Ok(())
}
