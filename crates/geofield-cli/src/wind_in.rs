//! Inputs of `geofield wind`: the flags as the library's options and output format, the DEM and
//! the stations (read by [`geofield::wind::io`]) and the grid over them, with notes on stderr
//! and errors that name the flags.

use std::path::Path;

use anyhow::{Context, Result, bail};
use geofield::wind::io::{Dem, FieldFormat, Point, read_points, read_station_file};
use geofield::wind::{
    self, Levels, Model, Profile, Solver, Stability, Station, Terrain, Top, WindGrid,
};
use geofield::wind::{SpeedUnit, Vegetation, WindOptions, io::DemError};

use crate::cmd_wind::{
    ModelArg, ProfileArg, SolverArg, SpeedUnitArg, TerrainArg, VegetationArg, WindArgs,
};

/// What the run is, once the inputs are read: the options (with a radius of influence from a
/// WindNinja station file), what the first guess comes from, heights above ground.
pub(crate) struct Run {
    pub opts: WindOptions,
    /// "FILE" or "a domain-average wind".
    pub source: String,
    /// Domain average: (direction in degrees, speed in --speed-units), for WindNinja's names.
    pub domain_average: Option<(f64, f64)>,
    /// Vegetation height added to the input and output heights (m).
    pub canopy_m: f64,
    /// Height above the ground of the 2-D outputs (m).
    pub output_height_agl_m: f64,
    /// The masts of --points-in.
    pub points: Vec<Point>,
}

/// The vegetation class of the flag.
pub(crate) fn vegetation(a: &WindArgs) -> Option<Vegetation> {
    a.vegetation.map(|v| match v {
        VegetationArg::Grass => Vegetation::Grass,
        VegetationArg::Brush => Vegetation::Brush,
        VegetationArg::Trees => Vegetation::Trees,
    })
}

/// The format of `--out`, or `None` when only other outputs are asked for.
pub(crate) fn field_format(a: &WindArgs) -> Result<Option<FieldFormat>> {
    let Some(out) = &a.out else {
        if a.speed_out.is_none()
            && a.direction_out.is_none()
            && a.png.is_none()
            && a.ascii_out.is_none()
            && a.points_out.is_none()
        {
            bail!(
                "nothing to write: give --out (the 3-D field), --speed-out, --direction-out, \
                 --ascii-out, --points-out or --png"
            );
        }
        return Ok(None);
    };
    match FieldFormat::from_path(out) {
        Some(f) => Ok(Some(f)),
        None => bail!(
            "--out {}: unsupported format; use .npz, .nc or .vti",
            out.display()
        ),
    }
}

/// Options of the library, checked at the boundary.
pub(crate) fn options(a: &WindArgs) -> Result<WindOptions> {
    let default_stability: Stability = a
        .stability
        .parse()
        .map_err(|e: String| anyhow::anyhow!("--stability: {e}"))?;
    if a.fixed_iterations && a.model != ModelArg::West {
        bail!("--fixed-iterations is the paper's WEST mode: add --model west");
    }
    if !(a.output_height_m.is_finite() && a.output_height_m > 0.0) {
        bail!(
            "--output-height-m must be a positive number of metres, got {}",
            a.output_height_m
        );
    }
    if let Some(r) = a.output_resolution_m
        && !(r.is_finite() && r > 0.0)
    {
        bail!("--output-resolution-m must be a positive number of metres, got {r}");
    }
    if let Some(s) = a.speed
        && !(s.is_finite() && s >= 0.0)
    {
        bail!("--speed must be a number >= 0, got {s}");
    }
    if let Some(d) = a.direction
        && !(d.is_finite() && (0.0..=360.0).contains(&d))
    {
        bail!("--direction must be in [0, 360] degrees (where the wind comes from), got {d}");
    }
    if a.speed.is_some() && !(a.input_height_m.is_finite() && a.input_height_m > 0.0) {
        bail!(
            "--input-height-m must be a positive number of metres, got {}",
            a.input_height_m
        );
    }
    let veg = vegetation(a);
    let (diurnal, non_neutral, _) =
        crate::wind_diurnal::inputs(&a.diurnal, a.init.init_grid.is_some())?;
    let profile_flag = match (a.profile, non_neutral, veg) {
        (Some(p), true, _) if p != ProfileArg::Log => bail!(
            "--non-neutral-stability corrects the log profile: give --profile log (or leave \
             --profile out)"
        ),
        (None, true, None) => {
            eprintln!(
                "note: --non-neutral-stability: log profile with --roughness-m {} m",
                a.roughness_m
            );
            Some(ProfileArg::Log)
        }
        (p, _, _) => p,
    };
    let profile = match (profile_flag, veg) {
        (Some(p), Some(_)) if p != ProfileArg::Log => {
            bail!("--vegetation sets a log profile: leave --profile out or give --profile log")
        }
        (_, Some(v)) => Profile::Log {
            roughness_m: v.roughness_m(),
        },
        (None | Some(ProfileArg::Power), None) => Profile::Power,
        (Some(ProfileArg::Log), None) => Profile::Log {
            roughness_m: a.roughness_m,
        },
        (Some(ProfileArg::Uniform), None) => Profile::Uniform,
    };
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
        profile,
        displacement_m: veg.map_or(0.0, Vegetation::displacement_m),
        alpha: a.alpha,
        default_stability,
        radius_m: a.radius_m,
        top: if a.lid { Top::Lid } else { Top::Open },
        terrain: a.terrain.map(|t| match t {
            TerrainArg::Cut => Terrain::Cut,
            TerrainArg::Stairs => Terrain::Stairs,
        }),
        diurnal,
        non_neutral,
        ..WindOptions::default()
    };
    wind::check_options_before_grid(&opts)?;
    Ok(opts)
}

/// The DEM (its CRS, or `crs_flag` for a DEM that declares none), the wind grid over it, the
/// stations (or the domain-average wind) and the run. Refused before anything large is
/// allocated: a grid that would not fit in memory, and stretched layers for a `.vti` output.
pub(crate) fn read_inputs(
    a: &WindArgs,
    crs_flag: Option<u16>,
    format: Option<FieldFormat>,
    opts: &WindOptions,
) -> Result<(Dem, WindGrid, Vec<Station>, Run)> {
    let mut dem = read_dem(&a.dem, a.cell_size_m)?;
    // The DEM's CRS, or --crs for a DEM that carries none; the two must agree.
    dem.crs_epsg = match (dem.crs_epsg, crs_flag) {
        (Some(d), Some(c)) if d != c => bail!(
            "--crs EPSG:{c} differs from the CRS of {} (EPSG:{d}); leave --crs out",
            a.dem.display()
        ),
        (d, c) => d.or(c),
    };
    if let Some(c) = dem.crs_epsg
        && geofield_io::crs::is_geographic(c) == Some(true)
    {
        bail!(
            "--crs EPSG:{c} is geographic (degrees): the DEM must be on a projected grid in \
             metres; reproject it first, e.g. gdalwarp -t_srs EPSG:32611 {} dem_utm.tif",
            a.dem.display()
        );
    }
    if dem.crs_epsg.is_none() {
        eprintln!(
            "warning: {} declares no coordinate reference system: the outputs carry none (give \
             --crs EPSG:CODE, or assign one with gdal_edit.py -a_srs EPSG:CODE)",
            a.dem.display()
        );
    }
    let canopy_m = vegetation(a).map_or(0.0, Vegetation::canopy_height_m);
    let mut opts = opts.clone();
    opts.true_north_epsg = if a.grid_directions {
        None
    } else {
        dem.crs_epsg
    };
    if let Some(d) = opts.diurnal.as_mut() {
        let placed = a.diurnal.lat.is_some();
        crate::wind_diurnal::locate(d, placed, &dem.plan, dem.crs_epsg, &a.dem)?;
    }
    let (mut stations, source, domain_average) = match (&a.stations, a.speed, a.direction) {
        (Some(path), _, _) => {
            let file = read_station_file(path, dem.crs_epsg)
                .with_context(|| "reading the stations (--stations)".to_string())?;
            if opts.radius_m.is_none() {
                opts.radius_m = file.radius_m;
            }
            (file.stations, path.display().to_string(), None)
        }
        (None, Some(speed), Some(direction)) => {
            let unit = match a.speed_units {
                SpeedUnitArg::Mps => SpeedUnit::Mps,
                SpeedUnitArg::Kph => SpeedUnit::Kph,
                SpeedUnitArg::Mph => SpeedUnit::Mph,
                SpeedUnitArg::Kts => SpeedUnit::Kts,
            };
            let st = wind::domain_average(
                &dem.plan,
                speed * unit.m_per_s(),
                direction,
                a.input_height_m,
            );
            (
                vec![st],
                format!(
                    "a domain-average wind of {speed} {} from {direction} degrees at {} m",
                    unit.name(),
                    a.input_height_m
                ),
                Some((direction, speed)),
            )
        }
        (None, None, None) if a.init.init_grid.is_some() => {
            let mut read = crate::wind_init::read(&a.init, dem.crs_epsg, opts.diurnal.is_some())?;
            if let Some(d) = opts.diurnal.as_mut() {
                let notes = wind::diurnal::weather_from_grid(d, &mut read.grid)
                    .map_err(|e| anyhow::anyhow!(crate::wind_init::flag_names(&e.to_string())))?;
                read.notes.extend(notes);
            }
            for n in &read.notes {
                eprintln!("note: {n}");
            }
            // WindNinja measures heights from the vegetation top.
            read.grid.height_agl_m += canopy_m;
            let source = read.grid.source.clone();
            opts.init_grid = Some(std::sync::Arc::new(read.grid));
            (Vec::new(), source, None)
        }
        _ => bail!(
            "give --stations, --init-grid (a weather model's wind), or --speed and --direction \
             (a domain-average wind)"
        ),
    };
    // WindNinja measures heights from the vegetation top.
    for s in &mut stations {
        s.height_agl_m += canopy_m;
    }
    let points = match &a.points_in {
        Some(p) => read_points(p, dem.crs_epsg).context("reading the masts (--points-in)")?,
        None => Vec::new(),
    };
    let run = Run {
        opts,
        source,
        domain_average,
        canopy_m,
        output_height_agl_m: a.output_height_m + canopy_m,
        points,
    };
    let levels = match (&a.levels_m, a.growth, a.top_m) {
        (Some(tops), _, _) => Levels::Tops(tops.clone()),
        (None, None, None) => Levels::Uniform {
            nz: a.nz,
            dz_m: a.dz_m,
        },
        (None, growth, top_m) => {
            Levels::stretched(a.dz_m, growth.unwrap_or(1.0), top_m, &dem.terrain_m).map_err(
                |e| {
                    let m = e.to_string();
                    let m = m
                        .replacen("dz_m =", "--dz-m =", 1)
                        .replacen("growth =", "--growth =", 1)
                        .replacen("top_m =", "--top-m =", 1);
                    anyhow::anyhow!("{m}")
                },
            )?
        }
    };
    let (cols, rows) = (dem.plan.cols, dem.plan.rows);
    wind::io::check_memory(cols, rows, levels.layers()).map_err(|e| {
        anyhow::anyhow!(
            "{e}: use a coarser --cell-size-m (a multiple of the DEM's) or fewer layers"
        )
    })?;
    let grid = WindGrid::new(dem.plan, std::mem::take(&mut dem.terrain_m), &levels)
        .with_context(|| format!("building the wind grid over {}", a.dem.display()))?;
    if format == Some(FieldFormat::Vti) && !grid.uniform_layers() {
        bail!(
            "--out {}: VTK image data needs uniform layers; use --nz/--dz-m, or write .nc or .npz \
             for stretched --levels-m",
            a.out.as_deref().unwrap_or(Path::new("")).display()
        );
    }
    Ok((dem, grid, stations, run))
}

/// The DEM of `--dem` at `--cell-size-m` (see [`geofield::wind::io::read_dem`]), with notes on
/// stderr about extra bands, filled nodata cells and cells the blocks leave out.
fn read_dem(path: &Path, cell_size_m: Option<f64>) -> Result<Dem> {
    let dem = wind::io::read_dem(path, cell_size_m).map_err(|e| match e {
        DemError::Input(e) => anyhow::Error::from(*e).context("reading the DEM (--dem)"),
        DemError::BadCellSize(c) => {
            anyhow::anyhow!("--cell-size-m must be a positive number of metres, got {c}")
        }
        e => anyhow::anyhow!("{}", e.to_string().replace("cell_size_m", "--cell-size-m")),
    })?;
    let name = path.display();
    if dem.bands > 1 {
        let (n, band) = (dem.bands, &dem.band_name);
        eprintln!("note: {name} has {n} bands; using the first ({band}) as elevation");
    }
    if dem.filled > 0 {
        let (n, s) = (dem.filled, if dem.filled == 1 { "" } else { "s" });
        eprintln!(
            "warning: {name}: {n} nodata cell{s} filled with the elevation of the nearest valid cell"
        );
    }
    let ((cols, rows), k) = (dem.partial_blocks(), dem.factor);
    if cols > 0 || rows > 0 {
        let g = dem.dem_grid;
        eprintln!(
            "note: {} x {} DEM cells do not divide into {k} x {k} blocks: the last block column \
             holds {cols} DEM columns and the last block row {rows} DEM rows (0: whole blocks); \
             they average the cells they hold and reach beyond the DEM's east and south edges",
            g.cols, g.rows
        );
    }
    Ok(dem)
}
