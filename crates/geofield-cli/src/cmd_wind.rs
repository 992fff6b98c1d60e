//! `geofield wind`: a mass-consistent 3-D wind field over a DEM from weather stations, written
//! as `.npz`, `.nc` or `.vti`, with speed and direction rasters at a height above ground and
//! a map. Nothing is written unless the whole run succeeds. The library does the work
//! ([`geofield::wind::compute_deferred`], [`geofield::wind::io`]); this file maps the flags
//! and stages, prints and summarises.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use geofield::wind::io::{Dem, FieldFormat, FieldMeta};
use geofield::wind::{self, Station, WindField};
use geofield::{BackendSelection, GeofieldError, backend};

use crate::ctx::Ctx;
use crate::outputs::Outputs;
use crate::wind_in::{Run, field_format, options, read_inputs};
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

#[derive(Clone, Copy, ValueEnum, PartialEq, Debug)]
pub enum SpeedUnitArg {
    Mps,
    Kph,
    Mph,
    Kts,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Debug)]
pub enum VegetationArg {
    /// z0 0.01 m, no displacement (WindNinja's values).
    Grass,
    /// z0 0.43 m, displacement 1.8 m, vegetation 2.3 m high.
    Brush,
    /// z0 1.0 m, displacement 12 m, vegetation 15.4 m high.
    Trees,
}

#[derive(Args, Debug, Clone)]
pub struct WindArgs {
    /// Digital elevation model in metres on a projected grid: .tif (GeoTIFF) or .asc (ESRI
    /// ASCII grid, CRS from the .prj beside it). A DEM in geographic coordinates (degrees) is
    /// refused: reproject it first (gdalwarp -t_srs EPSG:326NN). A DEM without a CRS runs with
    /// a warning and its outputs carry none (or --crs). Nodata cells take the elevation of the
    /// nearest valid cell (a warning counts them); a DEM with no valid cell is an error.
    #[arg(long)]
    pub dem: PathBuf,
    /// Stations CSV, either geofield's, id,x_m,y_m,height_agl_m,speed_m_per_s,direction_deg
    /// and optionally stability (A-F; empty: --stability), or WindNinja's station file as it is
    /// (header Station_Name,Coord_Sys(PROJCS,GEOGCS),Datum(WGS84,NAD83,NAD27),Lat/YCoord,
    /// Lon/XCoord,Height,Height_Units,Speed,Speed_Units,Direction(degrees),...: PROJCS rows in
    /// the DEM's CRS, GEOGCS rows projected from lat/lon, units converted, its largest radius
    /// of influence used unless --radius-m). Direction: where the wind comes from, degrees
    /// clockwise from north. Stations outside the DEM are reported and ignored.
    #[arg(long, required_unless_present_any = ["speed", "directions", "init_grid"], conflicts_with = "speed")]
    pub stations: Option<PathBuf>,
    #[command(flatten)]
    pub init: crate::wind_init::InitGridArgs,
    /// Domain-average initialisation (instead of --stations): this wind speed (--speed-units)
    /// at --input-height-m above the ground everywhere, then the profile and the solve.
    #[arg(long, requires = "direction")]
    pub speed: Option<f64>,
    /// Domain-average wind direction: where it comes from, degrees clockwise from north.
    #[arg(long, requires = "speed")]
    pub direction: Option<f64>,
    /// A wind atlas: one domain-average solve for every direction of this range
    /// (START:STOP:STEP in degrees, STOP included, e.g. 0:350:10) or list (0,90,180) and every
    /// speed of --speeds, each written to --ascii-out under WindNinja's names (direction and
    /// speed in the name); under `mpiexec` the cases are spread over the ranks.
    #[arg(long, requires_all = ["speeds", "ascii_out"], conflicts_with_all = ["speed", "direction", "stations"])]
    pub directions: Option<String>,
    /// The atlas' speeds (--speed-units), comma-separated.
    #[arg(long, value_delimiter = ',', requires = "directions")]
    pub speeds: Option<Vec<f64>>,
    /// Height of the domain-average wind above the ground (m; above the vegetation with
    /// --vegetation, as WindNinja).
    #[arg(long, default_value_t = 10.0, conflicts_with = "stations")]
    pub input_height_m: f64,
    /// Units of --speed.
    #[arg(long, value_enum, default_value = "mps", conflicts_with = "stations")]
    pub speed_units: SpeedUnitArg,
    /// Horizontal cell size (m): the DEM's (default) or an integer multiple of it, to which the
    /// DEM is block-averaged. A DEM whose size is not a multiple of the blocks is not cut: the
    /// last block column (east) and row (south) average the DEM cells they hold and reach
    /// beyond its edge by the rest of a block (a note says so).
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
    /// Vertical profile of the station winds (default: power; log with --vegetation).
    #[arg(long, value_enum)]
    pub profile: Option<ProfileArg>,
    /// Roughness length of the log profile (m).
    #[arg(long, default_value_t = 0.1)]
    pub roughness_m: f64,
    /// WindNinja's vegetation class: sets the log profile's roughness length and displacement
    /// height (grass 0.01/0 m, brush 0.43/1.8 m, trees 1.0/12 m), and, as WindNinja, measures
    /// the input, station and output heights from the vegetation top (brush 2.3 m, trees
    /// 15.4 m above the ground).
    #[arg(long, value_enum, conflicts_with = "roughness_m")]
    pub vegetation: Option<VegetationArg>,
    /// alpha = alpha_h / alpha_v (default from the stability class: A 5 ... D 1 ... F 0.2).
    #[arg(long)]
    pub alpha: Option<f64>,
    /// Stability class of stations without one.
    #[arg(long, default_value = "D")]
    pub stability: String,
    /// Radius of influence of a station (m); default unlimited.
    #[arg(long)]
    pub radius_m: Option<f64>,
    /// The stations' and --direction's directions are on the DEM grid's north. Default: they
    /// are meteorological, from true north, and each is turned to the grid's north at its
    /// station by the meridian convergence (WindNinja's rule; the DEM's CRS is needed, and a
    /// DEM without one takes its directions as they are). The outputs' directions are on the
    /// grid's north either way, as WindNinja's.
    #[arg(long)]
    pub grid_directions: bool,
    /// A rigid lid at the top instead of flow-through.
    #[arg(long)]
    pub lid: bool,
    /// The 3-D field: .npz (face velocities, as solved), .nc (CF NetCDF, cell-centred) or
    /// .vti (ParaView, cell-centred; uniform layers only). Optional when another output is
    /// given.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Height above ground of the speed and direction rasters, the map and --ascii-out (m;
    /// above the vegetation with --vegetation). Alias: --height-agl-m.
    #[arg(long, visible_alias = "height-agl-m", default_value_t = 10.0)]
    pub output_height_m: f64,
    /// Cell size of the speed and direction rasters (--speed-out, --direction-out,
    /// --ascii-out), m; default the wind grid's. Another size gives cells of that size from the
    /// grid's north-west corner (a last partial cell left out), each the wind at its centre
    /// interpolated bilinearly between column centres (u and v, then speed and direction).
    #[arg(long)]
    pub output_resolution_m: Option<f64>,
    /// Wind speed at --output-height-m (m s-1): .tif or .asc.
    #[arg(long)]
    pub speed_out: Option<PathBuf>,
    /// Wind direction at --output-height-m (degrees from north the wind comes from): .tif or
    /// .asc.
    #[arg(long)]
    pub direction_out: Option<PathBuf>,
    /// A folder for WindNinja's ASCII outputs: <dem-stem>_<direction>_<speed>_<res>m_vel.asc
    /// and _ang.asc (domain average; <dem-stem>_point_<res>m_* from stations), each with its
    /// .prj when the CRS is known; speed in m s-1, direction in degrees (from).
    #[arg(long)]
    pub ascii_out: Option<PathBuf>,
    /// Masts to sample the 3-D field at: CSV with id,x_m,y_m,height_agl_m (x, y in the DEM's
    /// CRS) or id,lat,lon,height_agl_m (WGS 84 degrees; heights above the vegetation with
    /// --vegetation); needs --points-out.
    #[arg(long, requires = "points_out")]
    pub points_in: Option<PathBuf>,
    /// The masts with the wind: id,x_m,y_m,height_agl_m,ground_m,u,v,w,speed,direction,inside
    /// (the rule of the speed rasters: each column around the point at that height above its
    /// own ground, then bilinear between columns; inside 0 and empty values outside the grid).
    #[arg(long, requires = "points_in")]
    pub points_out: Option<PathBuf>,
    /// Map: speed at --output-height-m over hillshaded terrain, arrows, stations.
    #[arg(long)]
    pub png: Option<PathBuf>,
    #[command(flatten)]
    pub diurnal: crate::wind_diurnal::DiurnalArgs,
}

pub fn run(a: &WindArgs, ctx: &Ctx) -> Result<()> {
    if a.directions.is_some() {
        return atlas(a, ctx);
    }
    #[cfg(feature = "mpi")]
    if let Some(r) = ctx.split() {
        return split(a, ctx, r);
    }
    case(a, ctx)
}

/// One solve under `mpiexec -n R` (R > 1): split by rows over the ranks
/// ([`wind::compute_split`]; one GPU per rank, or the CPU). Every rank reads the inputs and builds the first
/// guess; rank 0 also checks the outputs, and any rank failing there ends the job before the
/// work (GEOFIELD_MPI_FAIL=R: rank R fails, the tests' fault); rank 0 writes the outputs.
#[cfg(feature = "mpi")]
fn split(a: &WindArgs, ctx: &Ctx, ranks: &geofield::mpi::Ranks) -> Result<()> {
    let start = Instant::now();
    let root = ranks.rank() == 0;
    let prepared = (|| {
        if std::env::var("GEOFIELD_MPI_FAIL")
            .ok()
            .and_then(|f| f.parse().ok())
            == Some(ranks.rank())
        {
            bail!("injected failure before the work (GEOFIELD_MPI_FAIL)");
        }
        // One GPU per rank (under `auto`, the rank's place on its node), else the CPU.
        let sel = ctx.open_backend()?;
        let format = field_format(a)?;
        let opts = options(a)?;
        wind::check_split(&opts)?;
        let outs = root.then(|| plan_outputs(a, ctx)).transpose()?;
        let crs_flag = ctx.crs_epsg()?;
        let inputs = read_inputs(a, crs_flag, format, &opts)?;
        Ok((format, outs, inputs, sel))
    })();
    ranks.start(prepared.as_ref().map(|_| ()).map_err(|e| format!("{e:#}")))?;
    let (format, outs, (dem, grid, stations, run), sel) = prepared?;
    let seconds_read = start.elapsed().as_secs_f64();
    let spinner = progress::spinner(ctx.quiet(), "solving");
    let t0 = Instant::now();
    // GEOFIELD_MPI_FAIL=solve: the last rank fails alone at its first halo exchange, the
    // others waiting there (how the tests check that such a failure ends the job).
    let injected = InjectInSolve {
        ranks,
        fail: std::env::var("GEOFIELD_MPI_FAIL").as_deref() == Ok("solve")
            && ranks.rank() + 1 == ranks.size(),
    };
    let field = wind::compute_split(
        &sel.backend,
        grid,
        &stations,
        &run.opts,
        &injected,
        &mut |iteration, max_div| {
            spinner.set_message(format!(
                "solving: iteration {iteration}, max|div u| {max_div:.3e} s-1"
            ));
        },
        &geofield::Cancel::new(),
    );
    spinner.finish_and_clear();
    let field = field
        .with_context(|| format!("wind field over {} from {}", a.dem.display(), run.source))?;
    let Some(outs) = outs else {
        return Ok(());
    };
    let seconds = [seconds_read, t0.elapsed().as_secs_f64()];
    // The other ranks are done: rank 0 writes with every core of its node.
    ctx.with_all_cores(|| {
        finish(
            a,
            ctx,
            (outs, format),
            (&dem, &run),
            &field,
            &stations,
            &sel,
            start,
            seconds,
        )
    })
}

/// The ranks' exchange, failing on purpose at the first halo exchange when `fail`.
#[cfg(feature = "mpi")]
struct InjectInSolve<'a> {
    ranks: &'a geofield::mpi::Ranks,
    fail: bool,
}

#[cfg(feature = "mpi")]
impl wind::split::Exchange for InjectInSolve<'_> {
    fn part(&self) -> usize {
        self.ranks.part()
    }
    fn parts(&self) -> usize {
        self.ranks.parts()
    }
    fn halo(&self, first: &[f64], last: &[f64]) -> (Option<Vec<f64>>, Option<Vec<f64>>) {
        if self.fail {
            self.ranks
                .abandon("injected failure in the solve (GEOFIELD_MPI_FAIL)");
        }
        self.ranks.halo(first, last)
    }
    fn all_gather(&self, mine: &[f64]) -> Vec<f64> {
        self.ranks.all_gather(mine)
    }
    fn max(&self, x: f64) -> f64 {
        self.ranks.max(x)
    }
    fn agree(&self, mine: Result<(), String>) -> Result<(), String> {
        wind::split::Exchange::agree(self.ranks, mine)
    }
    fn abandon(&self, message: &str) {
        self.ranks.abandon(message)
    }
}

/// One solve in this process.
fn case(a: &WindArgs, ctx: &Ctx) -> Result<()> {
    let start = Instant::now();
    let format = field_format(a)?;
    let opts = options(a)?;
    let outs = plan_outputs(a, ctx)?;
    let crs_flag = ctx.crs_epsg()?;
    let choice = ctx.resolved_choice()?;
    let already = ctx.opened.clone();
    // Opening a GPU (driver, context, kernels) takes tenths of a second: it runs in the
    // background while the inputs are read and the first guess is built on the CPU.
    let opening = std::thread::spawn(move || {
        if let Some(sel) = already {
            return Ok(sel);
        }
        let sel = backend::select(choice)?;
        wind::warm_up(&sel.backend);
        Ok::<_, GeofieldError>(sel)
    });
    let (dem, grid, stations, run) = read_inputs(a, crs_flag, format, &opts)?;
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
        &run.opts,
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
    let (field, _) = field
        .with_context(|| format!("wind field over {} from {}", a.dem.display(), run.source))?;
    let Some(sel) = opened else {
        bail!("the wind solve finished without opening a backend");
    };
    let seconds = [seconds_read, t0.elapsed().as_secs_f64()];
    finish(
        a,
        ctx,
        (outs, format),
        (&dem, &run),
        &field,
        &stations,
        &sel,
        start,
        seconds,
    )
}

/// The outputs, the summary and the JSON of a solved field.
#[allow(clippy::too_many_arguments)]
fn finish(
    a: &WindArgs,
    ctx: &Ctx,
    (mut outs, format): (Outputs, Option<FieldFormat>),
    (dem, run): (&Dem, &Run),
    field: &WindField,
    stations: &[Station],
    sel: &BackendSelection,
    start: Instant,
    [seconds_read, seconds_compute]: [f64; 2],
) -> Result<()> {
    let t1 = Instant::now();
    let (speed, direction) = wind::at_height_agl(field, run.output_height_agl_m)?;
    let meta = FieldMeta {
        crs_epsg: dem.crs_epsg,
        history: output::history(),
        provenance: output::provenance(&[]),
        height_agl_m: run.output_height_agl_m,
        compression: ctx.compression()?,
        speed: &speed,
        direction: &direction,
    };
    let mut outputs = write_outputs(&mut outs, a, run, format, field, stations, &meta)?;
    let be = &sel.backend;
    let init = run.opts.init_grid.as_deref();
    print_summary(field, stations, init, be, seconds_read, seconds_compute);
    if let (Some(epsg), None) = (run.opts.true_north_epsg, init) {
        let e = field.grid.plan.extent();
        let (x, y) = (0.5 * (e.x_min_m + e.x_max_m), 0.5 * (e.y_min_m + e.y_max_m));
        if let Ok(b) = wind::gridded::grid_north_bearing(x, y, epsg) {
            println!(
                "directions: from true north, turned to the grid's north by the meridian \
                 convergence ({:+.3} deg at the DEM centre; --grid-directions if they are on \
                 the grid's north already)",
                -b.to_degrees()
            );
        }
    }
    if let (Some(d), Some(s)) = (&run.opts.diurnal, &field.report.diurnal) {
        crate::wind_diurnal::print(d, s, run.opts.non_neutral);
    }
    if let Some(p) = ctx.json() {
        let mut names: Vec<String> = outputs.iter().map(|p| p.display().to_string()).collect();
        names.push(p.display().to_string());
        let since = |t: Instant| t.elapsed().as_secs_f64();
        let seconds = [seconds_read, seconds_compute, since(t1), since(start)];
        let summary = Summary::new(a, run, field, stations, sel, dem, seconds, names);
        outputs.push(outs.write_json(p, &summary)?);
    }
    outs.commit()?;
    let names: Vec<String> = outputs.iter().map(|p| p.display().to_string()).collect();
    println!("wrote {}", names.join(", "));
    Ok(())
}

/// The directions of `--directions`: START:STOP:STEP (STOP included) or a list.
fn parse_directions(v: &str) -> Result<Vec<f64>> {
    let num = |t: &str| -> Result<f64> {
        let x: f64 = t
            .trim()
            .parse()
            .with_context(|| format!("--directions {v:?}: {t:?} is not a number of degrees"))?;
        if !x.is_finite() {
            bail!("--directions {v:?}: {t:?} is not finite");
        }
        Ok(x)
    };
    let out: Vec<f64> = if v.contains(':') {
        let parts: Vec<&str> = v.split(':').collect();
        let [a, b, c] = parts[..] else {
            bail!("--directions {v:?}: expected START:STOP:STEP, e.g. 0:350:10");
        };
        let (a, b, c) = (num(a)?, num(b)?, num(c)?);
        if c <= 0.0 || b < a {
            bail!("--directions {v:?}: needs STEP > 0 and STOP >= START");
        }
        let n = ((b - a) / c + 1e-9).floor() as usize + 1;
        if n > 100_000 {
            bail!("--directions {v:?}: {n} directions; at most 100000");
        }
        (0..n).map(|i| a + i as f64 * c).collect()
    } else {
        v.split(',').map(num).collect::<Result<_>>()?
    };
    if out.is_empty() {
        bail!("--directions {v:?}: no direction");
    }
    Ok(out)
}

/// A wind atlas (see `--directions`): each case is the same command with `--speed` and
/// `--direction` (so a case run alone writes the same files), run in order, or spread over the
/// MPI ranks.
fn atlas(a: &WindArgs, ctx: &Ctx) -> Result<()> {
    let directions = parse_directions(a.directions.as_deref().unwrap_or_default())?;
    let speeds = a.speeds.clone().unwrap_or_default();
    if speeds.is_empty() || speeds.iter().any(|s| !(s.is_finite() && *s >= 0.0)) {
        bail!("--speeds needs finite speeds >= 0, got {speeds:?}");
    }
    for (given, name) in [
        (a.out.is_some(), "--out"),
        (a.speed_out.is_some(), "--speed-out"),
        (a.direction_out.is_some(), "--direction-out"),
        (a.png.is_some(), "--png"),
        (a.points_out.is_some(), "--points-out"),
        (ctx.json().is_some(), "--json"),
    ] {
        if given {
            bail!(
                "{name} would be overwritten by every case of the atlas: the atlas writes \
                 --ascii-out, whose names carry each case's direction and speed"
            );
        }
    }
    let cases: Vec<(f64, f64)> = speeds
        .iter()
        .flat_map(|&s| directions.iter().map(move |&d| (d, s)))
        .collect();
    let start = Instant::now();
    // The backend opens once for every case (a GPU's context and kernels take about a second).
    let mut ctx = ctx.clone();
    let sel = ctx.open_backend()?;
    wind::warm_up(&sel.backend);
    ctx.opened = Some(sel);
    let ctx = &ctx;
    let case = |i: usize| -> Result<()> {
        let (d, s) = cases[i];
        let mut c = a.clone();
        c.directions = None;
        c.speeds = None;
        c.direction = Some(d);
        c.speed = Some(s);
        case(&c, ctx).with_context(|| format!("atlas case {i}: direction {d}, speed {s}"))
    };
    #[cfg(feature = "mpi")]
    if let Some(r) = ctx.split() {
        r.ensemble(cases.len(), &mut |i| {
            case(i)
                .map(|()| Vec::new())
                .map_err(|e| GeofieldError::Invalid(format!("{e:#}")))
        })?;
        if r.rank() == 0 {
            println!(
                "atlas: {} cases on {} ranks in {:.2} s",
                cases.len(),
                r.size(),
                start.elapsed().as_secs_f64()
            );
        }
        return Ok(());
    }
    for i in 0..cases.len() {
        case(i)?;
    }
    println!(
        "atlas: {} cases in {:.2} s",
        cases.len(),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}
