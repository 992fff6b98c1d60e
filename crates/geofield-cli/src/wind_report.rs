//! The report of `geofield wind` (printed, and as JSON with `--json`), and the staging of its
//! outputs.

use std::path::PathBuf;

use anyhow::Result;
use geofield::wind::io::{self, Dem, FieldFormat, FieldMeta, SurfaceRaster};
use geofield::wind::{IgnoredStation, SolveReport, Station, WindField, WindOptions};

use geofield::{Backend, BackendSelection};

use crate::cmd_wind::WindArgs;
use crate::ctx::Ctx;
use crate::outputs::{Kind, Outputs};
use crate::wind_in::Run;

/// Everything `--json` writes.
#[derive(serde::Serialize)]
pub(crate) struct Summary {
    command: &'static str,
    version: &'static str,
    dem: String,
    dem_cell_size_m: f64,
    dem_block_factor: usize,
    dem_nodata_filled: usize,
    /// The stations file, the domain-average wind, or the gridded wind (file, variables, time).
    stations_file: String,
    /// The gridded wind of --init-grid: file, variables and time; its height (m) and CRS.
    init_grid: Option<InitGridSummary>,
    dem_crs_epsg: Option<u16>,
    cols: usize,
    rows: usize,
    nz: usize,
    cell_size_m: f64,
    z_faces_m: Vec<f64>,
    cells: usize,
    fluid_cells: usize,
    stations_given: usize,
    stations_used: usize,
    ignored_stations: Vec<IgnoredStation>,
    options: WindOptions,
    report: SolveReport,
    /// Height above the ground of the 2-D outputs (the vegetation height included).
    height_agl_m: f64,
    output_resolution_m: Option<f64>,
    /// Vegetation height that the input and output heights are measured from (m).
    vegetation_height_m: f64,
    points: usize,
    backend: String,
    device: String,
    backend_fallback_reason: Option<String>,
    seconds_read: f64,
    seconds_compute: f64,
    seconds_write: f64,
    seconds_total: f64,
    outputs: Vec<String>,
}

/// What `--init-grid` read.
#[derive(serde::Serialize)]
struct InitGridSummary {
    source: String,
    height_agl_m: f64,
    nodes_x: usize,
    nodes_y: usize,
    coordinates: String,
}

impl Summary {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        a: &WindArgs,
        run: &Run,
        field: &WindField,
        stations: &[Station],
        sel: &BackendSelection,
        dem: &Dem,
        [seconds_read, seconds_compute, seconds_write, seconds_total]: [f64; 4],
        outputs: Vec<String>,
    ) -> Self {
        let g = &field.grid;
        Self {
            command: "wind",
            version: env!("CARGO_PKG_VERSION"),
            dem: a.dem.display().to_string(),
            dem_cell_size_m: dem.dem_cell_size_m,
            dem_block_factor: dem.factor,
            dem_nodata_filled: dem.filled,
            stations_file: run.source.clone(),
            init_grid: run.opts.init_grid.as_ref().map(|g| InitGridSummary {
                source: g.source.clone(),
                height_agl_m: g.height_agl_m,
                nodes_x: g.x.len(),
                nodes_y: g.y.len(),
                coordinates: match g.crs {
                    geofield::wind::SourceCrs::Same => "the DEM's".into(),
                    geofield::wind::SourceCrs::LonLat { .. } => "longitude/latitude".into(),
                    geofield::wind::SourceCrs::Epsg { epsg, .. } => format!("EPSG:{epsg}"),
                    geofield::wind::SourceCrs::Curvilinear { .. } => match &g.curvilinear {
                        Some(c) if c.grid_relative => {
                            "curvilinear (longitude/latitude per node), grid-relative winds".into()
                        }
                        _ => "curvilinear (longitude/latitude per node)".into(),
                    },
                },
            }),
            dem_crs_epsg: dem.crs_epsg,
            cols: g.cols(),
            rows: g.rows(),
            nz: g.nz,
            cell_size_m: g.dx_m(),
            z_faces_m: g.z_faces_m.clone(),
            cells: g.n_cells(),
            fluid_cells: g.n_fluid(),
            stations_given: stations.len(),
            stations_used: stations.len() - field.ignored_stations.len(),
            ignored_stations: field.ignored_stations.clone(),
            options: run.opts.clone(),
            report: field.report.clone(),
            height_agl_m: run.output_height_agl_m,
            output_resolution_m: a.output_resolution_m,
            vegetation_height_m: run.canopy_m,
            points: run.points.len(),
            backend: sel.backend.label(),
            device: sel.backend.device_name(),
            backend_fallback_reason: sel.fallback_reason.clone(),
            seconds_read,
            seconds_compute,
            seconds_write,
            seconds_total,
            outputs,
        }
    }
}

/// The short report on stdout.
pub(crate) fn print_summary(
    field: &WindField,
    stations: &[Station],
    init_grid: Option<&geofield::wind::InitGrid>,
    be: &Backend,
    seconds_read: f64,
    seconds_compute: f64,
) {
    let g = &field.grid;
    let r = &field.report;
    println!(
        "grid {} x {} x {} = {} cells of {} m ({:.1}..{:.1} m), {} fluid",
        g.cols(),
        g.rows(),
        g.nz,
        g.n_cells(),
        g.dx_m(),
        g.z_faces_m[0],
        g.top_m(),
        g.n_fluid()
    );
    match init_grid {
        Some(g) => println!(
            "first guess: gridded wind {}, {} x {} nodes, at {} m above the ground",
            g.source,
            g.x.len(),
            g.y.len(),
            g.height_agl_m
        ),
        None => println!(
            "stations: {} used, {} ignored",
            stations.len() - field.ignored_stations.len(),
            field.ignored_stations.len()
        ),
    }
    for s in &field.ignored_stations {
        println!("  ignored {}: {}", s.id, s.reason);
    }
    println!(
        "method {}{}{}, terrain {}, alpha {}, {} iterations: max|div u0| {:.3e} s-1, \
         max|div u| {:.3e} s-1 (threshold {:.3e}), {}",
        r.method,
        r.omega
            .map(|w| format!(" (omega {w:.4})"))
            .unwrap_or_default(),
        r.split_parts
            .map(|n| format!(" split by rows over {n} MPI ranks"))
            .unwrap_or_default(),
        if r.terrain == "cut" {
            "cut cells"
        } else {
            "stair steps"
        },
        r.alpha,
        r.iterations,
        r.max_div0_per_s,
        r.max_div_per_s,
        r.threshold_per_s,
        if r.converged {
            "converged"
        } else {
            "NOT converged"
        }
    );
    println!(
        "convergence: {} after {} iterations; solver residual max|div| {:.3e} -> {:.3e} s-1",
        r.stop.describe(),
        r.iterations,
        r.first_residual_per_s,
        r.last_residual_per_s
    );
    if let Some(dw) = r.removal_max_dw_m_per_s {
        println!("divergence removal changed w by up to {dw:.3e} m/s");
    }
    println!(
        "backend {} ({}); read {seconds_read:.3} s, solve {:.3} s, whole computation {seconds_compute:.3} s",
        be.label(),
        be.device_name(),
        r.solve_seconds
    );
    let steps: Vec<String> = r
        .step_seconds
        .iter()
        .map(|(name, s)| format!("{name} {s:.3}"))
        .collect();
    println!("steps (s): {}", steps.join(", "));
}

/// The staging of the run's outputs, every path checked before anything is computed.
pub(crate) fn plan_outputs(a: &WindArgs, ctx: &Ctx) -> Result<Outputs> {
    let mut outs = Outputs::new();
    outs.input("--dem", &a.dem);
    if let Some(st) = &a.stations {
        outs.input("--stations", st);
    }
    if let Some(p) = &a.points_in {
        outs.input("--points-in", p);
    }
    outs.plan_opt("--out", a.out.as_deref(), Kind::File)?;
    outs.plan_opt("--ascii-out", a.ascii_out.as_deref(), Kind::Folder)?;
    outs.plan_opt("--points-out", a.points_out.as_deref(), Kind::File)?;
    outs.plan_opt("--speed-out", a.speed_out.as_deref(), Kind::Raster)?;
    outs.plan_opt("--direction-out", a.direction_out.as_deref(), Kind::Raster)?;
    outs.plan_opt("--png", a.png.as_deref(), Kind::File)?;
    outs.plan_opt("--json", ctx.json(), Kind::File)?;
    Ok(outs)
}

/// Stage every file of the run: the 3-D field (`--out`), the speed and direction rasters at
/// `--output-height-m` and `--output-resolution-m` (also as WindNinja's `--ascii-out`), the
/// masts (`--points-out`), the map; written by [`geofield::wind::io`]. Returns the final paths.
pub(crate) fn write_outputs(
    staging: &mut Outputs,
    a: &WindArgs,
    run: &Run,
    format: Option<FieldFormat>,
    field: &WindField,
    stations: &[Station],
    meta: &FieldMeta,
) -> Result<Vec<PathBuf>> {
    let mut outputs = Vec::new();
    if let (Some(out), Some(format)) = (&a.out, format) {
        outputs.push(staging.write_one(out, |p| Ok(io::write_field(p, format, field, meta)?))?);
    }
    let rasters = a.speed_out.is_some() || a.direction_out.is_some() || a.ascii_out.is_some();
    if rasters {
        let surface =
            geofield::wind::surface(field, run.output_height_agl_m, a.output_resolution_m)?;
        for (path, which) in [
            (&a.speed_out, SurfaceRaster::Speed),
            (&a.direction_out, SurfaceRaster::Direction),
        ] {
            let Some(path) = path else { continue };
            outputs.extend(staging.write(path, |p| {
                Ok(io::write_surface(p, which, &surface, field, meta)?)
            })?);
        }
        if let Some(dir) = &a.ascii_out {
            let staged = staging.folder(dir)?;
            let stem = io::ninja_output_stem(&a.dem, run.domain_average, surface.plan.cell_size_m);
            for (suffix, which) in [
                ("vel", SurfaceRaster::Speed),
                ("ang", SurfaceRaster::Direction),
            ] {
                let name = format!("{stem}_{suffix}.asc");
                for w in io::write_surface(&staged.join(&name), which, &surface, field, meta)? {
                    outputs.push(dir.join(w.file_name().unwrap_or_default()));
                }
            }
        }
    }
    if let Some(out) = &a.points_out {
        // Heights above the vegetation top with --vegetation, as the other outputs.
        let shifted: Vec<io::Point> = run
            .points
            .iter()
            .map(|p| io::Point {
                height_agl_m: p.height_agl_m + run.canopy_m,
                ..p.clone()
            })
            .collect();
        let samples = io::sample_points(field, &shifted)?;
        outputs.push(staging.write_one(out, |p| Ok(io::write_points(p, &run.points, &samples)?))?);
    }
    if let Some(p) = &a.png {
        outputs.push(staging.write_one(p, |s| Ok(io::write_map(s, field, stations, meta)?))?);
    }
    Ok(outputs)
}
