//! `geofield demo`: every capability on built-in synthetic data of modest size, on the auto
//! backend; writes outputs and PNGs into a folder and prints what it did and how long it took.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use geofield::backend;
use geofield::dispersal::io::MapStyle;
use geofield::dispersal::{self, DisperseOptions, Method, Precision};
use geofield::synth::{self, DbhModel, Pattern};
use geofield_core::{Extent, GridSpec, Raster, RasterData};
use geofield_io::Colormap;

use crate::ctx::{Ctx, Global};
use crate::output;

#[derive(Args)]
pub struct DemoArgs {
    /// Folder for the outputs (created if missing).
    #[arg(long, default_value = "geofield-demo")]
    pub out: PathBuf,
}

struct Step {
    what: String,
    seconds: f64,
    result: String,
}

/// The one CRS of every demo output: NAD83 / UTM zone 10N. The demo's coordinates (eastings
/// from 500 000 m, northings from 6 000 000 m) lie on the zone's central meridian (123 W) at
/// about 54 N, in British Columbia's sub-boreal spruce zone that the synthetic stand imitates.
pub const DEMO_CRS: u16 = 26910;

pub fn run(a: &DemoArgs, ctx: &Ctx) -> Result<()> {
    ctx.refuse_unused(&[Global::Json, Global::Crs])?;
    std::fs::create_dir_all(&a.out)
        .with_context(|| format!("cannot create folder {}", a.out.display()))?;
    let sel = backend::select(ctx.backend_choice()?)?;
    let be = sel.backend.clone();
    println!(
        "geofield demo: backend {} ({})",
        be.label(),
        be.device_name()
    );
    if let Some(r) = &sel.fallback_reason {
        println!("  (CPU fallback: {r})");
    }
    let mut steps = Vec::new();

    // Seed dispersal: a 256 m x 256 m SBS-like stand at 300 stems/ha, 1 m cells.
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
    dispersal::io::write_stand(&a.out.join("trees.csv"), &stand, &species)?;
    dispersal::io::write_species(&a.out.join("species.toml"), &species)?;
    steps.push(Step {
        what: "synth forest".into(),
        seconds: t.elapsed().as_secs_f64(),
        result: format!(
            "{} stems, 4 species -> trees.csv, species.toml",
            stand.len()
        ),
    });

    let grid = GridSpec::from_extent(extent, 1.0)?;
    let opts = DisperseOptions {
        method: Method::Auto,
        tolerance: 1e-6,
        precision: Precision::F32,
        ..Default::default()
    };
    let t = Instant::now();
    let out = dispersal::disperse(&be, &grid, &species, &stand, &opts)?;
    let methods: Vec<String> = out
        .reports
        .iter()
        .map(|r| format!("{} R={:.0} m", r.method.name(), r.radius_m.unwrap_or(0.0)))
        .collect();
    steps.push(Step {
        what: "disperse (auto)".into(),
        seconds: t.elapsed().as_secs_f64(),
        result: format!(
            "{} cells x 4 species; {}",
            grid.n_cells(),
            methods.join(", ")
        ),
    });

    let t = Instant::now();
    let worst = dispersal::compare_exact(&be, &grid, &species, &stand, &out, &opts, &mut |_| {})?
        .iter()
        .fold(0.0f64, |w, m| w.max(m.max_abs_over_max));
    steps.push(Step {
        what: "exact check".into(),
        seconds: t.elapsed().as_secs_f64(),
        result: format!("max |cutoff - exact| / max = {worst:.1e} (tolerance 1e-6)"),
    });

    let t = Instant::now();
    let mr = dispersal::disperse(
        &be,
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
    steps.push(Step {
        what: "multires (2012 paper)".into(),
        seconds: t.elapsed().as_secs_f64(),
        result: format!("mean relative error {:.2} % vs cutoff", mean * 100.0),
    });

    let t = Instant::now();
    let provenance = output::provenance(&[]);
    dispersal::io::write_seed_map(
        &a.out.join("seeds.tif"),
        &out.raster,
        Some(DEMO_CRS),
        &provenance,
    )?;
    let style = MapStyle::panels("Seed density, SBS-like stand", Colormap::Viridis);
    dispersal::io::write_seed_png(&a.out.join("seeds.png"), &out.raster, &style)?;
    let style = MapStyle {
        blend: true,
        ..MapStyle::panels("Seed density by species (blend)", Colormap::Viridis)
    };
    dispersal::io::write_seed_png(&a.out.join("seeds_blend.png"), &out.raster, &style)?;
    let err = dispersal::relative_error_raster(&mr.raster, &out.raster)?;
    let style = MapStyle::panels("Multires relative error vs cutoff", Colormap::Magma);
    dispersal::io::write_error_png(&a.out.join("multires_error.png"), &err, &style)?;
    steps.push(Step {
        what: "write outputs".into(),
        seconds: t.elapsed().as_secs_f64(),
        result: "seeds.tif, seeds.png, seeds_blend.png, multires_error.png".into(),
    });

    flock_demo(a, &be, &mut steps)?;
    kriging_demo(a, &be, &mut steps)?;
    wind_demo(a, &be, &mut steps)?;

    println!("\n{:<24} {:>9}  result", "step", "time (s)");
    for s in &steps {
        println!("{:<24} {:>9.3}  {}", s.what, s.seconds, s.result);
    }
    println!(
        "\noutputs in {}/ (open seeds.tif in QGIS; every output is in EPSG:{DEMO_CRS}, NAD83 / UTM zone 10N)",
        a.out.display()
    );
    Ok(())
}

/// Boids: 2,000 agents from OpenSteer's dense start in a world of radius 30, 1,500 steps (25 s of
/// simulated time), with an animated GIF, the final frame and the final state.
fn flock_demo(a: &DemoArgs, be: &geofield::Backend, steps: &mut Vec<Step>) -> Result<()> {
    use geofield::flock::{self, FlockParams, FlockState, RunOptions, Start};
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
    geofield_io::write_gif(&a.out.join("flock.gif"), &frames, 4)?;
    if let Some(f) = frames.last() {
        geofield_io::write_frame_png(&a.out.join("flock.png"), f)?;
    }
    flock::io::write_state(&a.out.join("flock_state.npy"), &run.state)?;
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
    steps.push(Step {
        what: "write flock outputs".into(),
        seconds: t.elapsed().as_secs_f64(),
        result: format!(
            "flock.gif ({} frames), flock.png, flock_state.npy",
            frames.len()
        ),
    });
    Ok(())
}

/// Kriging: 11 stratum surfaces over 1 km x 1.8 km (UTM-like coordinates) from 25 wells, some
/// stopping short; a pooled variogram fit, global ordinary kriging of all surfaces with the
/// variance, leave-one-out cross-validation, the error against the true surfaces, crossings
/// resolved, a voxel model and a section.
fn kriging_demo(a: &DemoArgs, be: &geofield::Backend, steps: &mut Vec<Step>) -> Result<()> {
    use geofield::kriging::{
        self, Estimator, KrigeParams, LagSpec, Model, SampleSet, Surface, Target,
    };
    let t = Instant::now();
    let extent = Extent::new(500_000.0, 6_100_000.0, 501_000.0, 6_101_800.0)?;
    let h = 11;
    let strata = synth::Strata::new(&extent, h, 3);
    let (xs, ys, z) = strata.wells(25, 3, 0.3);
    let wells_csv = a.out.join("wells.csv");
    synth::io::write_wells(&wells_csv, &xs, &ys, &z)?;
    let names = synth::surface_names(h);
    let set = SampleSet {
        xs: xs.clone(),
        ys: ys.clone(),
        surfaces: names
            .iter()
            .zip(&z)
            .map(|(n, v)| Surface {
                name: n.clone(),
                values: v.clone(),
            })
            .collect(),
        source: Some("wells.csv".into()),
        lines: (2..).take(xs.len()).collect(),
        labels: (1..=xs.len()).map(|i| format!("w{i:03}")).collect(),
    };
    // Pooled empirical variogram of all surfaces, exponential fit.
    let spec = LagSpec {
        lags: 10,
        max_lag: Some(900.0),
        direction: None,
    };
    let pooled = kriging::pool(&kriging::surface_bins(&set, &spec, Estimator::Matheron)?);
    let fit = kriging::fit(Model::Exponential, &pooled, true)?;
    let chart = geofield_io::XyChart {
        title: "pooled variogram of 11 stratum surfaces".into(),
        subtitle: fit.variogram.to_string(),
        x_label: "distance (m)".into(),
        y_label: "semivariance (m2)".into(),
        points: pooled.iter().map(|b| (b.distance, b.gamma)).collect(),
        point_labels: pooled.iter().map(|b| b.pairs.to_string()).collect(),
        curve: (0..=200)
            .map(|i| {
                let d = 900.0 * f64::from(i) / 200.0;
                (d, fit.variogram.gamma(d))
            })
            .collect(),
    };
    geofield_io::write_xy_chart_png(&a.out.join("variogram.png"), &chart)?;
    steps.push(Step {
        what: "synth wells + variogram".into(),
        seconds: t.elapsed().as_secs_f64(),
        result: format!("25 wells x 11 surfaces -> wells.csv; fit {}", fit.variogram),
    });

    let t = Instant::now();
    let grid = GridSpec::from_extent(extent, 10.0)?;
    let params = KrigeParams {
        variance: true,
        resolve_crossings: true,
        ..KrigeParams::new(fit.variogram.clone(), Target::Grid(grid))
    };
    let k = kriging::krige(be, &set, &params)?;
    let pred = &k.prediction;
    let clipped: usize = k.crossings_clipped.iter().flatten().sum();
    let cv = k.cross_validate(&set)?;
    // Error against the true surfaces.
    let mut sq = 0.0;
    let mut count = 0usize;
    for (hh, v) in pred.values.iter().enumerate() {
        for r in 0..grid.rows {
            for c in 0..grid.cols {
                let (x, y) = grid.cell_centre(r, c);
                let e = v[r * grid.cols + c] - strata.elevation(hh, x, y);
                sq += e * e;
                count += 1;
            }
        }
    }
    let rmse_truth = (sq / count.max(1) as f64).sqrt();
    let rmse_cv = cv.iter().map(|c| c.rmse).sum::<f64>() / cv.len().max(1) as f64;
    steps.push(Step {
        what: "krige 11 surfaces".into(),
        seconds: t.elapsed().as_secs_f64(),
        result: format!(
            "{} nodes x 11 surfaces, {} systems ({}); RMSE vs truth {rmse_truth:.2} m, LOO RMSE {rmse_cv:.2} m; {clipped} crossings clipped",
            grid.n_cells(),
            pred.groups.len(),
            pred.evaluated
        ),
    });
    let t = Instant::now();
    let data: Vec<f32> = pred.values.iter().flatten().map(|&v| v as f32).collect();
    let est = Raster::new(grid, names.clone(), RasterData::F32(data))?;
    output::write_raster(
        &a.out.join("strata.tif"),
        &est,
        "m",
        "kriged stratum surfaces",
        Some(DEMO_CRS),
    )?;
    if let Some(var) = &pred.variance {
        let data: Vec<f32> = var.iter().flatten().map(|&v| v as f32).collect();
        let r = Raster::new(grid, names.clone(), RasterData::F32(data))?;
        output::write_raster(
            &a.out.join("strata_variance.tif"),
            &r,
            "m2",
            "kriging variance",
            Some(DEMO_CRS),
        )?;
    }
    kriging::io::write_map(
        &a.out.join("strata.png"),
        &est,
        "kriged stratum surfaces (elevation; wells marked)",
        "m",
        &set,
        geofield_io::Colormap::Viridis,
    )?;
    let mut written = vec![
        "strata.tif",
        "strata_variance.tif",
        "strata.png",
        "variogram.png",
    ];
    if let Ok(m) = k.voxels(2.0)
        && kriging::io::write_voxels(
            &a.out.join("strata.vti"),
            &k,
            &m,
            Some(DEMO_CRS),
            &output::history(),
        )
        .is_ok()
    {
        written.push("strata.vti");
    }
    if kriging::io::write_section(&a.out.join("section.png"), &k, &set, None).is_ok() {
        written.push("section.png");
    }
    steps.push(Step {
        what: "write kriging outputs".into(),
        seconds: t.elapsed().as_secs_f64(),
        result: written.join(", "),
    });
    Ok(())
}

/// Wind: a 6 km x 6 km valley at 50 m (120 x 120 columns, 32 layers of 10 m) with three
/// stations; Sherman's adjustment by multigrid to 1e-6, and the paper's WEST mode (500 sweeps at
/// omega = 1.25) to show how far from converged a fixed count leaves the field.
fn wind_demo(a: &DemoArgs, be: &geofield::Backend, steps: &mut Vec<Step>) -> Result<()> {
    use geofield::synth::terrain::{self, StationSpec, TerrainKind, TerrainSpec};
    use geofield::wind::{self, Levels, Model, WindGrid, WindOptions};
    let t = Instant::now();
    let spec = TerrainSpec {
        kind: TerrainKind::Valley,
        cols: 120,
        rows: 120,
        cell_size_m: 50.0,
        x_min_m: 500_000.0,
        y_min_m: 6_000_000.0,
        base_m: 400.0,
        height_m: 150.0,
        width_m: None,
    };
    let (plan, dem) = terrain::terrain(&spec)?;
    let stations = terrain::stations(
        &plan,
        &StationSpec {
            count: 3,
            speed_m_per_s: 6.0,
            direction_deg: 250.0,
            height_agl_m: 10.0,
            stability: None,
            seed: 7,
        },
    )?;
    let grid = WindGrid::new(plan, dem, &Levels::Uniform { nz: 32, dz_m: 10.0 })?;
    let field = wind::compute(be, grid.clone(), &stations, &WindOptions::default())?;
    let r = &field.report;
    steps.push(Step {
        what: "wind (sherman, mg)".into(),
        seconds: t.elapsed().as_secs_f64(),
        result: format!(
            "{} cells, {} V-cycles, max|div u| {:.1e} of max|div u0| (tolerance 1e-6)",
            grid.n_cells(),
            r.iterations,
            r.max_div_per_s / r.max_div0_per_s
        ),
    });
    let t = Instant::now();
    let west = wind::compute(
        be,
        grid.clone(),
        &stations,
        &WindOptions {
            model: Model::West,
            fixed_iterations: true,
            max_iterations: 500,
            divergence_removal: false,
            ..Default::default()
        },
    )?;
    let rw = &west.report;
    steps.push(Step {
        what: "wind (paper's WEST)".into(),
        seconds: t.elapsed().as_secs_f64(),
        result: format!(
            "500 sweeps at omega 1.25 leave max|div u| at {:.1e} of max|div u0|",
            rw.max_div_per_s / rw.max_div0_per_s
        ),
    });
    let t = Instant::now();
    let cells = wind::cell_centred(&field)?;
    let (speed, direction) = wind::at_height_agl(&field, 10.0)?;
    let meta = wind::io::FieldMeta {
        crs_epsg: Some(DEMO_CRS),
        history: output::history(),
        provenance: Vec::new(),
        height_agl_m: 10.0,
        speed: &speed,
        direction: &direction,
    };
    wind::io::write_nc(&a.out.join("wind.nc"), &field, &cells, &meta)?;
    wind::io::write_map(&a.out.join("wind.png"), &field, &stations, &meta)?;
    let speed_raster = Raster::new(plan, vec!["wind_speed_10m".into()], RasterData::F64(speed))?;
    output::write_raster(
        &a.out.join("wind_speed.tif"),
        &speed_raster,
        "m s-1",
        "wind speed 10 m above ground (geofield demo)",
        Some(DEMO_CRS),
    )?;
    steps.push(Step {
        what: "write wind outputs".into(),
        seconds: t.elapsed().as_secs_f64(),
        result: "wind.nc (xarray, ncview), wind_speed.tif, wind.png".into(),
    });
    Ok(())
}
