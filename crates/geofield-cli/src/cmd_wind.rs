//! `geofield wind`: a mass-consistent 3-D wind field over a DEM from weather stations, written
//! as `.npz`, `.nc` or `.vti`, with speed and direction rasters at a height above ground and
//! a map. Nothing is written unless the whole run succeeds. The library does the work
//! ([`geofield::wind::compute_deferred`], [`geofield::wind::io`]); this file maps the flags
//! and stages, prints and summarises.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use geofield::wind::{self, io::FieldMeta};
use geofield::{BackendSelection, GeofieldError, backend};

use crate::ctx::Ctx;
use crate::wind_in::{field_format, options, read_inputs};
use crate::wind_report::{Summary, plan_outputs, print_summary, write_outputs};
use crate::{output, progress};

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

#[derive(Clone, Copy, ValueEnum, PartialEq, Debug)]
pub enum TerrainArg {
    /// Cut cells: the ground as a surface through the DEM, cells and faces cut by it
    /// (Sherman's default).
    Cut,
    /// Stair steps: cells whose centre is under the ground are solid (WEST's terrain).
    Stairs,
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
    /// Stretched layers: each layer this many times thicker than the one below (1 to 2;
    /// WindNinja uses 1.3), the first --dz-m thick, up to --top-m; the layer count follows.
    #[arg(long, conflicts_with_all = ["levels_m", "nz"])]
    pub growth: Option<f64>,
    /// Model top above the highest ground (m), for --growth (or uniform --dz-m layers without
    /// it); the layer count follows. Default with --growth: 3 x the relief (highest minus
    /// lowest ground), at least 200 m.
    #[arg(long, conflicts_with_all = ["levels_m", "nz"])]
    pub top_m: Option<f64>,
    #[arg(long, value_enum, default_value = "sherman")]
    pub model: ModelArg,
    #[arg(long, value_enum, default_value = "multigrid")]
    pub solver: SolverArg,
    /// Terrain representation (default: cut for --model sherman, stairs for --model west,
    /// which takes no other).
    #[arg(long, value_enum)]
    pub terrain: Option<TerrainArg>,
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

pub fn run(a: &WindArgs, ctx: &Ctx) -> Result<()> {
    let start = Instant::now();
    let format = field_format(a)?;
    let opts = options(a)?;
    let mut outs = plan_outputs(a, ctx)?;
    let crs_flag = ctx.crs_epsg()?;
    let choice = ctx.backend_choice()?;
    // Opening a GPU (driver, context, kernels) takes tenths of a second: it runs in the
    // background while the inputs are read and the first guess is built on the CPU.
    let opening = std::thread::spawn(move || {
        let sel = backend::select(choice)?;
        wind::warm_up(&sel.backend);
        Ok::<_, GeofieldError>(sel)
    });
    let (dem, grid, stations) = read_inputs(a, crs_flag, format)?;
    let seconds_read = start.elapsed().as_secs_f64();

    let spinner = progress::spinner(ctx.quiet(), "solving");
    let t0 = Instant::now();
    let mut opened: Option<BackendSelection> = None;
    let open = || {
        let joined = opening.join();
        let sel =
            joined.map_err(|_| GeofieldError::Invalid("opening the backend panicked".into()))?;
        let sel = sel?;
        let be = sel.backend.clone();
        opened = Some(sel);
        Ok(be)
    };
    // Ctrl-C ends the process (the staged outputs are not renamed): no token is ever cancelled.
    let never = geofield::Cancel::new();
    let field = wind::compute_deferred(
        open,
        grid,
        &stations,
        &opts,
        &mut |iteration, max_div| {
            spinner.set_message(format!(
                "solving: iteration {iteration}, max|div u| {max_div:.3e} s-1"
            ));
        },
        &never,
    );
    spinner.finish_and_clear();
    if let Some(sel) = &opened {
        ctx.report_backend(sel);
    }
    let (field, _) = field.with_context(|| {
        let (dem, stations) = (a.dem.display(), a.stations.display());
        format!("wind field over {dem} from {stations}")
    })?;
    let Some(sel) = opened else {
        bail!("the wind solve finished without opening a backend");
    };
    let seconds_compute = t0.elapsed().as_secs_f64();

    let t1 = Instant::now();
    let (speed, direction) = wind::at_height_agl(&field, a.height_agl_m)?;
    let meta = FieldMeta {
        crs_epsg: dem.crs_epsg,
        history: output::history(),
        provenance: output::provenance(&[]),
        height_agl_m: a.height_agl_m,
        speed: &speed,
        direction: &direction,
    };
    let mut outputs = write_outputs(&mut outs, a, format, &field, &stations, &meta)?;
    let be = &sel.backend;
    print_summary(&field, &stations, be, seconds_read, seconds_compute);
    if let Some(p) = ctx.json() {
        let mut names: Vec<String> = outputs.iter().map(|p| p.display().to_string()).collect();
        names.push(p.display().to_string());
        let since = |t: Instant| t.elapsed().as_secs_f64();
        let seconds = [seconds_read, seconds_compute, since(t1), since(start)];
        let summary = Summary::new(a, &field, &stations, &opts, &sel, &dem, seconds, names);
        outputs.push(outs.write_json(p, &summary)?);
    }
    outs.commit()?;
    let names: Vec<String> = outputs.iter().map(|p| p.display().to_string()).collect();
    println!("wrote {}", names.join(", "));
    Ok(())
}
