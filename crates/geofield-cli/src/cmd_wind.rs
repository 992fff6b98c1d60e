//! `geofield wind`: a mass-consistent 3-D wind field over a DEM from weather stations, written
//! as `.npz`, `.nc` or `.vti`, with speed and direction rasters at a height above ground and
//! a map. Nothing is written unless the whole run succeeds.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use geofield::wind::{self, Model, Profile, Solver, Stability, Top, WindGrid, WindOptions};
use geofield::{BackendSelection, backend};

use crate::ctx::Ctx;
use crate::outputs::{Kind, Outputs};
use crate::wind_in::{check_memory, levels, read_dem, read_stations};
use crate::wind_report::{Summary, print_summary, write_map, write_rasters};
use crate::{output, progress, wind_out};

#[derive(Clone, Copy, ValueEnum, PartialEq, Debug)]
pub enum ModelArg {
    /// Sherman's variational adjustment with alpha, solved to --tolerance.
    Sherman,
    /// The paper's WEST divergence minimisation (red-black SOR, omega 1.25) and divergence
    /// removal.
    West,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Debug)]
pub enum SolverArg {
    /// Geometric multigrid V-cycles.
    Multigrid,
    /// Conjugate gradients preconditioned by a multigrid V-cycle.
    Mgcg,
    /// Red-black SOR with the optimal omega (or --omega).
    Sor,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Debug)]
pub enum ProfileArg {
    /// Power law with the stability class's exponent.
    Power,
    /// Log law with --roughness-m.
    Log,
    /// The station's wind at every height.
    Uniform,
}

#[derive(Args, Debug)]
pub struct WindArgs {
    /// Digital elevation model in metres on a projected grid: .tif (GeoTIFF) or .asc (ESRI
    /// ASCII grid). Nodata cells take the elevation of the nearest valid cell (a warning counts
    /// them); a DEM with no valid cell is an error.
    #[arg(long)]
    pub dem: PathBuf,
    /// Stations CSV: id,x_m,y_m,height_agl_m,speed_m_per_s,direction_deg and optionally
    /// stability (A-F; empty: --stability). Direction: where the wind comes from, degrees
    /// clockwise from north. Stations outside the DEM are reported and ignored.
    #[arg(long)]
    pub stations: PathBuf,
    /// Horizontal cell size (m): the DEM's (default) or an integer multiple of it, to which the
    /// DEM is block-averaged.
    #[arg(long)]
    pub cell_size_m: Option<f64>,
    /// Number of uniform layers.
    #[arg(long, default_value_t = 32, conflicts_with = "levels_m")]
    pub nz: usize,
    /// Layer thickness (m).
    #[arg(long, default_value_t = 10.0, conflicts_with = "levels_m")]
    pub dz_m: f64,
    /// Layer tops above the lowest ground (m), increasing, e.g. 10,20,35,55 (stretched layers).
    #[arg(long, value_delimiter = ',')]
    pub levels_m: Option<Vec<f64>>,
    #[arg(long, value_enum, default_value = "sherman")]
    pub model: ModelArg,
    #[arg(long, value_enum, default_value = "multigrid")]
    pub solver: SolverArg,
    /// Stop when max|div u| <= tolerance x max|div u0| over fluid cells.
    #[arg(long, default_value_t = 1e-6)]
    pub tolerance: f64,
    /// Iteration cap (sweeps, V-cycles or CG iterations); with --fixed-iterations, the count.
    #[arg(long, default_value_t = 2000)]
    pub iterations: usize,
    /// The paper's mode (needs --model west): exactly --iterations sweeps; the divergence left
    /// is reported, not refused.
    #[arg(long)]
    pub fixed_iterations: bool,
    /// Over-relaxation factor (WEST default 1.25; SOR default the grid's optimal omega).
    #[arg(long)]
    pub omega: Option<f64>,
    #[arg(long, value_enum, default_value = "power")]
    pub profile: ProfileArg,
    /// Roughness length of the log profile (m).
    #[arg(long, default_value_t = 0.1)]
    pub roughness_m: f64,
    /// alpha = alpha_h / alpha_v (default from the stability class: A 5 ... D 1 ... F 0.2).
    #[arg(long)]
    pub alpha: Option<f64>,
    /// Stability class of stations without one.
    #[arg(long, default_value = "D")]
    pub stability: String,
    /// Radius of influence of a station (m); default unlimited.
    #[arg(long)]
    pub radius_m: Option<f64>,
    /// A rigid lid at the top instead of flow-through.
    #[arg(long)]
    pub lid: bool,
    /// The 3-D field: .npz (face velocities, as solved), .nc (CF NetCDF, cell-centred) or
    /// .vti (ParaView, cell-centred; uniform layers only). Optional when --speed-out,
    /// --direction-out or --png is given.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Height above ground of the speed and direction rasters and the map (m).
    #[arg(long, default_value_t = 10.0)]
    pub height_agl_m: f64,
    /// Wind speed at --height-agl-m (m s-1): .tif or .asc.
    #[arg(long)]
    pub speed_out: Option<PathBuf>,
    /// Wind direction at --height-agl-m (degrees from north the wind comes from): .tif or .asc.
    #[arg(long)]
    pub direction_out: Option<PathBuf>,
    /// Map: speed at --height-agl-m over hillshaded terrain, arrows, stations.
    #[arg(long)]
    pub png: Option<PathBuf>,
}

/// Kind of 3-D output, by extension.
#[derive(Clone, Copy, PartialEq, Debug)]
enum FieldFormat {
    Npz,
    Nc,
    Vti,
}

fn field_format(a: &WindArgs) -> Result<Option<FieldFormat>> {
    let Some(out) = &a.out else {
        if a.speed_out.is_none() && a.direction_out.is_none() && a.png.is_none() {
            bail!(
                "nothing to write: give --out (the 3-D field), --speed-out, --direction-out or --png"
            );
        }
        return Ok(None);
    };
    let ext = out.extension().map(|e| e.to_string_lossy().to_lowercase());
    match ext.as_deref() {
        Some("npz") => Ok(Some(FieldFormat::Npz)),
        Some("nc") => Ok(Some(FieldFormat::Nc)),
        Some("vti") => Ok(Some(FieldFormat::Vti)),
        _ => bail!(
            "--out {}: unsupported format; use .npz, .nc or .vti",
            out.display()
        ),
    }
}

/// Options of the library, checked at the boundary.
fn options(a: &WindArgs) -> Result<WindOptions> {
    let default_stability: Stability = a
        .stability
        .parse()
        .map_err(|e: String| anyhow::anyhow!("--stability: {e}"))?;
    if a.fixed_iterations && a.model != ModelArg::West {
        bail!("--fixed-iterations is the paper's WEST mode: add --model west");
    }
    if !(a.height_agl_m.is_finite() && a.height_agl_m > 0.0) {
        bail!(
            "--height-agl-m must be a positive number of metres, got {}",
            a.height_agl_m
        );
    }
    let opts = WindOptions {
        model: match a.model {
            ModelArg::Sherman => Model::Sherman,
            ModelArg::West => Model::West,
        },
        solver: match a.solver {
            SolverArg::Multigrid => Solver::Multigrid,
            SolverArg::Mgcg => Solver::MgCg,
            SolverArg::Sor => Solver::Sor,
        },
        tolerance: a.tolerance,
        max_iterations: a.iterations,
        fixed_iterations: a.fixed_iterations,
        omega: a.omega,
        profile: match a.profile {
            ProfileArg::Power => Profile::Power,
            ProfileArg::Log => Profile::Log {
                roughness_m: a.roughness_m,
            },
            ProfileArg::Uniform => Profile::Uniform,
        },
        alpha: a.alpha,
        default_stability,
        radius_m: a.radius_m,
        top: if a.lid { Top::Lid } else { Top::Open },
        ..WindOptions::default()
    };
    wind::check_options(&opts)?;
    Ok(opts)
}

pub fn run(a: &WindArgs, ctx: &Ctx) -> Result<()> {
    let start = Instant::now();
    let format = field_format(a)?;
    let opts = options(a)?;
    let mut outs = Outputs::new();
    outs.input("--dem", &a.dem);
    outs.input("--stations", &a.stations);
    outs.plan_opt("--out", a.out.as_deref(), Kind::File)?;
    outs.plan_opt("--speed-out", a.speed_out.as_deref(), Kind::Raster)?;
    outs.plan_opt("--direction-out", a.direction_out.as_deref(), Kind::Raster)?;
    outs.plan_opt("--png", a.png.as_deref(), Kind::File)?;
    outs.plan_opt("--json", ctx.json(), Kind::File)?;
    let crs_flag = ctx.crs_epsg()?;
    let choice = ctx.backend_choice()?;
    // Opening a GPU (driver, context, kernels) takes tenths of a second: it runs in the
    // background while the inputs are read and the first guess is built on the CPU.
    let opening = std::thread::spawn(move || {
        let sel = backend::select(choice)?;
        wind::warm_up(&sel.backend);
        Ok::<_, geofield::GeofieldError>(sel)
    });

    let mut dem = read_dem(&a.dem, a.cell_size_m)?;
    let stations = read_stations(&a.stations)?;
    // The DEM's CRS, or --crs for a DEM that carries none; the two must agree.
    dem.crs_epsg = match (dem.crs_epsg, crs_flag) {
        (Some(d), Some(c)) if d != c => bail!(
            "--crs EPSG:{c} differs from the CRS of {} (EPSG:{d}); leave --crs out",
            a.dem.display()
        ),
        (d, c) => d.or(c),
    };
    let (levels, nz) = levels(a.levels_m.as_deref(), a.nz, a.dz_m);
    check_memory(dem.plan.cols, dem.plan.rows, nz)?;
    let grid = WindGrid::new(dem.plan, std::mem::take(&mut dem.terrain_m), &levels)
        .with_context(|| format!("building the wind grid over {}", a.dem.display()))?;
    if format == Some(FieldFormat::Vti)
        && (0..grid.nz).any(|k| (grid.dz_m(k) - grid.dz_m(0)).abs() > 1e-9 * grid.dz_m(0))
    {
        bail!(
            "--out {}: VTK image data needs uniform layers; use --nz/--dz-m, or write .nc or .npz \
             for stretched --levels-m",
            a.out
                .as_deref()
                .unwrap_or(std::path::Path::new(""))
                .display()
        );
    }
    let seconds_read = start.elapsed().as_secs_f64();

    let spinner = progress::spinner(ctx.quiet(), "solving");
    let t0 = Instant::now();
    let mut report_progress = |iteration: usize, max_div: f64| {
        spinner.set_message(format!(
            "solving: iteration {iteration}, max|div u| {max_div:.3e} s-1"
        ));
    };
    let mut opened: Option<BackendSelection> = None;
    let field = wind::compute_deferred(
        grid,
        &stations,
        &opts,
        || {
            let sel = opening.join().map_err(|_| {
                geofield::GeofieldError::Invalid("opening the backend panicked".into())
            })??;
            let be = sel.backend.clone();
            opened = Some(sel);
            Ok(be)
        },
        &mut report_progress,
    );
    spinner.finish_and_clear();
    if let Some(sel) = &opened {
        ctx.report_backend(sel);
    }
    let (field, be) = field.with_context(|| {
        format!(
            "wind field over {} from {}",
            a.dem.display(),
            a.stations.display()
        )
    })?;
    let Some(sel) = opened else {
        bail!("the wind solve finished without opening a backend");
    };
    let seconds_compute = t0.elapsed().as_secs_f64();
    let r = &field.report;
    if !r.converged && !a.fixed_iterations {
        print_summary(&field, &stations, &be, seconds_read, seconds_compute);
        bail!(
            "the {} solve did not converge: max |div u| = {:.3e} s-1 after {} iterations, above \
             {:.3e} s-1; raise --iterations or loosen --tolerance (no output written)",
            r.method,
            r.max_div_per_s,
            r.iterations,
            r.threshold_per_s
        );
    }

    let t1 = Instant::now();
    let (speed, direction) = wind::sample::at_height_agl(&field, a.height_agl_m)?;
    let staging = &mut outs;
    let mut outputs: Vec<PathBuf> = Vec::new();
    if let (Some(out), Some(format)) = (&a.out, format) {
        let cells = match format {
            FieldFormat::Npz => None,
            FieldFormat::Nc | FieldFormat::Vti => Some(wind::sample::cell_centred(&field)?),
        };
        let meta = wind_out::FieldMeta {
            crs_epsg: dem.crs_epsg,
            history: output::history(),
            height_agl_m: a.height_agl_m,
            speed: &speed,
            direction: &direction,
        };
        outputs.extend(staging.write(out, |p| {
            match (format, &cells) {
                (FieldFormat::Nc, Some(c)) => wind_out::write_nc(p, &field, c, &meta)?,
                (FieldFormat::Vti, Some(c)) => wind_out::write_vti(p, &field, c, &meta)?,
                _ => wind_out::write_npz(p, &field, dem.crs_epsg)?,
            }
            Ok(vec![p.to_path_buf()])
        })?);
    }
    outputs.extend(write_rasters(
        staging,
        a,
        &field,
        &speed,
        &direction,
        dem.crs_epsg,
    )?);
    if let Some(p) = &a.png {
        outputs.extend(staging.write(p, |s| {
            write_map(s, &field, &stations, &speed, &direction, a.height_agl_m)?;
            Ok(vec![s.to_path_buf()])
        })?);
    }
    print_summary(&field, &stations, &be, seconds_read, seconds_compute);
    if let Some(p) = ctx.json() {
        let mut names: Vec<String> = outputs.iter().map(|p| p.display().to_string()).collect();
        names.push(p.display().to_string());
        let summary = Summary::new(
            a,
            &field,
            &stations,
            &opts,
            &sel,
            &dem,
            [
                seconds_read,
                seconds_compute,
                t1.elapsed().as_secs_f64(),
                start.elapsed().as_secs_f64(),
            ],
            names,
        );
        outputs.push(staging.write_json(p, &summary)?);
    }
    outs.commit()?;
    println!(
        "wrote {}",
        outputs
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(())
}
