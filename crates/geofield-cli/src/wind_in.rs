//! Inputs of `geofield wind`: the flags as the library's options and output format, the DEM and
//! the stations (read by [`geofield::wind::io`]) and the grid over them, with notes on stderr
//! and errors that name the flags.

use std::path::Path;

use anyhow::{Context, Result, bail};
use geofield::wind::io::{Dem, FieldFormat, read_stations};
use geofield::wind::{
    self, Levels, Model, Profile, Solver, Stability, Station, Terrain, Top, WindGrid,
};
use geofield::wind::{WindOptions, io::DemError};

use crate::cmd_wind::{ModelArg, ProfileArg, SolverArg, TerrainArg, WindArgs};

/// The format of `--out`, or `None` when only 2-D outputs are asked for.
pub(crate) fn field_format(a: &WindArgs) -> Result<Option<FieldFormat>> {
    let Some(out) = &a.out else {
        if a.speed_out.is_none() && a.direction_out.is_none() && a.png.is_none() {
            bail!(
                "nothing to write: give --out (the 3-D field), --speed-out, --direction-out or --png"
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
        terrain: a.terrain.map(|t| match t {
            TerrainArg::Cut => Terrain::Cut,
            TerrainArg::Stairs => Terrain::Stairs,
        }),
        ..WindOptions::default()
    };
    wind::check_options(&opts)?;
    Ok(opts)
}

/// The DEM (its CRS, or `crs_flag` for a DEM that declares none), the wind grid over it and
/// the stations. Refused before anything large is allocated: a grid that would not fit in
/// memory, and stretched layers for a `.vti` output.
pub(crate) fn read_inputs(
    a: &WindArgs,
    crs_flag: Option<u16>,
    format: Option<FieldFormat>,
) -> Result<(Dem, WindGrid, Vec<Station>)> {
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
    Ok((dem, grid, stations))
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
    let ((cols, rows), k) = (dem.cells_left_out(), dem.factor);
    if cols > 0 || rows > 0 {
        let g = dem.dem_grid;
        eprintln!(
            "note: {} x {} DEM cells do not divide into {k} x {k} blocks: the last {cols} columns \
             (east) and {rows} rows (south) are left out",
            g.cols, g.rows
        );
    }
    Ok(dem)
}
