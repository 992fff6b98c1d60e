//! `geofield.wind`: a mass-consistent 3-D wind field over terrain from stations.

use std::path::Path;

use geofield::wind::{
    self as gw, Levels, Model, Profile, Solver, Stability, Station, Top, Vegetation, WindGrid,
    WindOptions,
};
use geofield_core::{Extent, GridSpec};
use numpy::{PyArray1, PyArrayMethods, PyReadonlyArray1};
use pyo3::prelude::*;

use crate::backend::open;
use crate::errors;
use crate::grid::{Grid, grid_tuple};
use crate::interrupt::run_interruptible;
use crate::wind_diurnal::{DiurnalArg, diurnal_inputs};

/// The DEM: a file (GeoTIFF or ESRI ASCII grid, optionally block-averaged to `cell_size_m`) or
/// an elevation array with its grid `(x_min, y_max, cell, rows, cols)`.
#[derive(FromPyObject)]
pub enum DemArg<'py> {
    Path(std::path::PathBuf),
    Array(PyReadonlyArray1<'py, f64>, (f64, f64, f64, usize, usize)),
}

/// Station columns: (ids, x_m, y_m, height_agl_m, speed_m_per_s, direction_deg, stability).
#[derive(FromPyObject)]
pub struct Stations<'py>(
    Vec<String>,
    PyReadonlyArray1<'py, f64>,
    PyReadonlyArray1<'py, f64>,
    PyReadonlyArray1<'py, f64>,
    PyReadonlyArray1<'py, f64>,
    PyReadonlyArray1<'py, f64>,
    Vec<Option<String>>,
);

fn stations(s: &Stations<'_>) -> PyResult<Vec<Station>> {
    let (ids, stab) = (&s.0, &s.6);
    let (x, y, h) = (s.1.as_slice()?, s.2.as_slice()?, s.3.as_slice()?);
    let (sp, dir) = (s.4.as_slice()?, s.5.as_slice()?);
    let n = ids.len();
    for (name, len) in [
        ("x_m", x.len()),
        ("y_m", y.len()),
        ("height_agl_m", h.len()),
        ("speed_m_per_s", sp.len()),
        ("direction_deg", dir.len()),
        ("stability", stab.len()),
    ] {
        if len != n {
            return Err(errors::arg(
                &format!("stations.{name}"),
                format!("has {len} values for {n} stations"),
            ));
        }
    }
    (0..n)
        .map(|i| {
            let stability =
                match &stab[i] {
                    None => None,
                    Some(c) => Some(c.parse::<Stability>().map_err(|e| {
                        errors::arg("stations.stability", format!("station {i}: {e}"))
                    })?),
                };
            Ok(Station {
                id: ids[i].clone(),
                x_m: x[i],
                y_m: y[i],
                height_agl_m: h[i],
                speed_m_per_s: sp[i],
                direction_deg: dir[i],
                stability,
            })
        })
        .collect()
}

/// Where the first guess comes from: a stations table, a stations file (geofield's or
/// WindNinja's CSV), or a domain-average wind (speed m/s, direction degrees, height above
/// ground m, before the vegetation height is added).
#[derive(FromPyObject)]
pub enum Source<'py> {
    /// A gridded wind file: ("grid_file", path, u_var, v_var, time (index or date), height m,
    /// grid CRS EPSG, wind axes "earth"/"grid").
    GridFile(GridFileArg),
    Table(Stations<'py>),
    File(std::path::PathBuf),
    Domain((f64, f64, f64)),
}

type GridFileArg = (
    String,
    std::path::PathBuf,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<f64>,
    Option<u16>,
    Option<String>,
);
/// The reader's text with the CLI's flags as `geofield.wind`'s arguments.
fn py_names(s: &str) -> String {
    s.replace("--init-height-m", "init_height_m")
        .replace("--init-time", "init_time")
        .replace("--init-crs", "init_crs")
        .replace("--init-wind-axes", "init_wind_axes")
        .replace("--init-u", "init_u")
        .replace("--init-v", "init_v")
        .replace("--crs", "crs")
}

/// The library's gridded wind of a `GridFile` source (`None` for the others),
/// with the reader's notes (each a warning in Python).
fn init_grid(
    source: &Source<'_>,
    dem_epsg: Option<u16>,
    weather: bool,
) -> PyResult<Option<(gw::InitGrid, Vec<String>)>> {
    match source {
        Source::GridFile((_, path, u, v, time, height, crs, axes)) => {
            let grid_relative = match axes.as_deref() {
                None => None,
                Some("earth") => Some(false),
                Some("grid") => Some(true),
                Some(other) => {
                    return Err(errors::raise(
                        errors::Class::Value,
                        format!("init_wind_axes: expected \"earth\" or \"grid\", got {other:?}"),
                    ));
                }
            };
            let time = time.as_deref().map(|t| match t.trim().parse::<usize>() {
                Ok(i) => gw::io::TimeSel::Index(i),
                Err(_) => gw::io::TimeSel::At(t.trim().to_string()),
            });
            let req = gw::io::InitGridRequest {
                u_var: u.clone(),
                v_var: v.clone(),
                height_agl_m: *height,
                time,
                crs_epsg: *crs,
                dem_epsg,
                weather,
                temp_var: None,
                cloud_var: None,
                grid_relative,
            };
            let r = gw::io::read_init_grid(path, &req).map_err(|e| {
                errors::raise(
                    match &e {
                        geofield::InputError::File(geofield_io::IoError::Read { .. }) => {
                            errors::Class::Io
                        }
                        _ => errors::Class::Value,
                    },
                    py_names(&e.to_string()),
                )
            })?;
            Ok(Some((
                r.grid,
                r.notes.iter().map(|n| py_names(n)).collect(),
            )))
        }
        _ => Ok(None),
    }
}

/// What `wind` returns: cell-centred u, v, w and speed (layers, rows, cols), speed and
/// direction at the output height (rows, cols), the grid, the layer centre heights above the
/// domain bottom, the bottom elevation, the terrain, the report (JSON), the CRS (EPSG) of a DEM
/// file, the backend label, and the samples at the points (points, 7: u, v, w, speed,
/// direction, ground, inside) when points are given.
type WindOut<'py> = (
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    Grid,
    Vec<f64>,
    Bound<'py, PyAny>,
    String,
    Option<u16>,
    (String, Option<Bound<'py, PyAny>>),
);

/// The native half of `geofield.wind` (see its docstring for the options). Interruptible
/// (Ctrl-C); `progress` is called with the fraction of the solve done (see [`wind_fraction`]).
#[pyfunction]
#[pyo3(signature = (dem, cell_size_m, source, nz, dz_m, levels_m, growth, top_m, model, solver, tolerance, max_iterations, profile, roughness_m, alpha, stability, radius_m, lid, terrain, height_agl_m, backend, vegetation=None, points=None, dem_crs=None, progress=None, diurnal=None, non_neutral_stability=false, grid_directions=false))]
#[allow(clippy::too_many_arguments)]
pub fn wind<'py>(
    py: Python<'py>,
    dem: DemArg<'py>,
    cell_size_m: Option<f64>,
    source: Source<'py>,
    nz: usize,
    dz_m: f64,
    levels_m: Option<Vec<f64>>,
    growth: Option<f64>,
    top_m: Option<f64>,
    model: &str,
    solver: &str,
    tolerance: f64,
    max_iterations: usize,
    profile: &str,
    roughness_m: f64,
    alpha: Option<f64>,
    stability: &str,
    radius_m: Option<f64>,
    lid: bool,
    terrain: Option<&str>,
    height_agl_m: f64,
    backend: &str,
    vegetation: Option<&str>,
    points: Option<(
        PyReadonlyArray1<'py, f64>,
        PyReadonlyArray1<'py, f64>,
        PyReadonlyArray1<'py, f64>,
    )>,
    dem_crs: Option<u16>,
    progress: Option<Bound<'py, PyAny>>,
    diurnal: Option<DiurnalArg>,
    non_neutral_stability: bool,
    grid_directions: bool,
) -> PyResult<WindOut<'py>> {
    let veg: Option<Vegetation> = vegetation
        .map(|v| v.parse().map_err(|e: String| errors::arg("vegetation", e)))
        .transpose()?;
    if veg.is_some() && profile != "log" {
        return Err(errors::arg(
            "profile",
            "vegetation sets the log profile: give profile=\"log\" or leave it out",
        ));
    }
    let canopy_m = veg.map_or(0.0, Vegetation::canopy_height_m);
    let mut opts = WindOptions {
        model: match model {
            "sherman" => Model::Sherman,
            "west" => Model::West,
            m => {
                return Err(errors::arg(
                    "model",
                    format!("{m:?} is not 'sherman' or 'west'"),
                ));
            }
        },
        solver: match solver {
            "multigrid" => Solver::Multigrid,
            "mgcg" => Solver::MgCg,
            "sor" => Solver::Sor,
            s => {
                return Err(errors::arg(
                    "solver",
                    format!("{s:?} is not 'multigrid', 'mgcg' or 'sor'"),
                ));
            }
        },
        tolerance,
        max_iterations,
        profile: match profile {
            "power" => Profile::Power,
            "log" => Profile::Log {
                roughness_m: veg.map_or(roughness_m, Vegetation::roughness_m),
            },
            "uniform" => Profile::Uniform,
            p => {
                return Err(errors::arg(
                    "profile",
                    format!("{p:?} is not 'power', 'log' or 'uniform'"),
                ));
            }
        },
        alpha,
        default_stability: stability
            .parse()
            .map_err(|e: String| errors::arg("stability", e))?,
        radius_m,
        top: if lid { Top::Lid } else { Top::Open },
        terrain: match terrain {
            None => None,
            Some("cut") => Some(gw::Terrain::Cut),
            Some("stairs") => Some(gw::Terrain::Stairs),
            Some(t) => {
                return Err(errors::arg(
                    "terrain",
                    format!("{t:?} is not 'cut' or 'stairs'"),
                ));
            }
        },
        displacement_m: veg.map_or(0.0, Vegetation::displacement_m),
        ..WindOptions::default()
    };
    gw::check_options(&opts).map_err(errors::lib)?;
    let (plan, terrain, crs) = match dem {
        DemArg::Path(p) => {
            let d = gw::io::read_dem(Path::new(&p), cell_size_m)
                .map_err(|e| errors::raise(dem_class(&e), e.to_string()))?;
            (d.plan, d.terrain_m, d.crs_epsg)
        }
        DemArg::Array(z, (x_min, y_max, h, rows, cols)) => {
            if cell_size_m.is_some_and(|c| c != h) {
                return Err(errors::arg(
                    "cell_size_m",
                    "resampling an in-memory DEM is not supported: give its own cell size",
                ));
            }
            let extent = Extent::new(
                x_min,
                y_max - rows as f64 * h,
                x_min + cols as f64 * h,
                y_max,
            )
            .map_err(|e| errors::arg("dem", e))?;
            let plan = GridSpec::from_extent(extent, h).map_err(|e| errors::arg("dem", e))?;
            (plan, z.as_slice()?.to_vec(), None)
        }
    };
    let crs = crs.or(dem_crs);
    if let Some(c) = crs
        && geofield_io::crs::is_geographic(c) == Some(true)
    {
        return Err(errors::arg(
            "dem",
            format!(
                "its CRS, EPSG:{c}, is geographic (degrees): the DEM must be on a projected \
                 grid in metres; reproject it first (e.g. rioxarray's .rio.reproject(\"EPSG:32611\") \
                 or gdalwarp -t_srs EPSG:32611)"
            ),
        ));
    }
    if let Some(d) = diurnal {
        let gridded = matches!(source, Source::GridFile(_));
        opts.diurnal = Some(diurnal_inputs(d, gridded, &plan, crs)?);
    }
    opts.non_neutral = non_neutral_stability;
    opts.true_north_epsg = if grid_directions { None } else { crs };
    gw::check_options_before_grid(&opts).map_err(errors::lib)?;
    if let Some((mut g, mut notes)) = init_grid(&source, crs, opts.diurnal.is_some())? {
        if let Some(d) = opts.diurnal.as_mut() {
            let more = gw::diurnal::weather_from_grid(d, &mut g).map_err(|e| {
                errors::arg(
                    "diurnal",
                    e.to_string()
                        .replace("air_temp_c", "air_temp")
                        .replace("cloud_cover_pct", "cloud_cover"),
                )
            })?;
            notes.extend(more);
        }
        for n in notes {
            errors::warn(py, &n)?;
        }
        // WindNinja measures heights from the vegetation top.
        g.height_agl_m += canopy_m;
        opts.init_grid = Some(std::sync::Arc::new(g));
    }
    let mut stations = match &source {
        Source::GridFile(_) => Vec::new(),
        Source::Table(t) => stations(t)?,
        Source::File(p) => {
            let f = gw::io::read_station_file(p, crs).map_err(|e| {
                errors::raise(
                    match &e {
                        geofield::InputError::File(geofield_io::IoError::Read { .. }) => {
                            errors::Class::Io
                        }
                        _ => errors::Class::Value,
                    },
                    e.to_string(),
                )
            })?;
            if opts.radius_m.is_none() {
                opts.radius_m = f.radius_m;
            }
            f.stations
        }
        Source::Domain((speed, direction, height)) => {
            vec![gw::domain_average(&plan, *speed, *direction, *height)]
        }
    };
    // WindNinja measures heights from the vegetation top.
    for s in &mut stations {
        s.height_agl_m += canopy_m;
    }
    let height_agl_m = height_agl_m + canopy_m;
    let levels = match (levels_m, growth, top_m) {
        (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
            return Err(errors::arg(
                "levels_m",
                "give either levels_m or growth/top_m (the layers they build), not both",
            ));
        }
        (Some(t), _, _) => Levels::Tops(t),
        (None, None, None) => Levels::Uniform { nz, dz_m },
        (None, g, t) => {
            Levels::stretched(dz_m, g.unwrap_or(1.0), t, &terrain).map_err(errors::lib)?
        }
    };
    gw::io::check_memory(plan.cols, plan.rows, levels.layers())
        .map_err(|e| errors::lib(e.into()))?;
    let grid = WindGrid::new(plan, terrain, &levels).map_err(errors::lib)?;
    let sel = open(backend)?;
    let be = sel.backend.clone();
    let field = run_interruptible(py, progress.as_ref(), |cancel, sink| {
        let mut first = None;
        gw::compute_with_progress(
            &be,
            grid,
            &stations,
            &opts,
            &mut |it, max_div| sink.set(wind_fraction(&opts, it, max_div, &mut first)),
            cancel,
        )
    })?;
    let pts = match &points {
        Some((x, y, h)) => {
            let (x, y, h) = (x.as_slice()?, y.as_slice()?, h.as_slice()?);
            if x.len() != y.len() || x.len() != h.len() {
                return Err(errors::arg(
                    "points",
                    format!(
                        "x, y and height_agl_m have {}, {} and {} values",
                        x.len(),
                        y.len(),
                        h.len()
                    ),
                ));
            }
            Some((x.to_vec(), y.to_vec(), h.to_vec()))
        }
        None => None,
    };
    let (cells, (speed_h, dir_h), samples) = py
        .detach(|| -> Result<_, geofield::GeofieldError> {
            let samples = match &pts {
                Some((x, y, h)) => {
                    let mut out = Vec::with_capacity(7 * x.len());
                    for i in 0..x.len() {
                        match gw::sample_point(&field, x[i], y[i], h[i] + canopy_m)? {
                            Some(s) => {
                                out.extend([s.u, s.v, s.w, s.speed, s.direction, s.ground_m, 1.0])
                            }
                            None => out.extend([f64::NAN; 6].into_iter().chain([0.0])),
                        }
                    }
                    Some(out)
                }
                None => None,
            };
            Ok((
                gw::cell_centred(&field)?,
                gw::at_height_agl(&field, height_agl_m)?,
                samples,
            ))
        })
        .map_err(errors::lib)?;
    let g = &field.grid;
    let (rows, cols, nz) = (g.rows(), g.cols(), g.nz);
    let z_centres: Vec<f64> = (0..nz).map(|k| g.z_centre_m(k) - g.z_faces_m[0]).collect();
    let report = serde_json::json!({
        "report": field.report,
        "ignored_stations": field.ignored_stations,
        "bottom_m": g.z_faces_m[0],
    })
    .to_string();
    let cube = |v: Vec<f64>| -> PyResult<Bound<'py, PyAny>> {
        Ok(PyArray1::from_vec(py, v)
            .reshape([nz, rows, cols])?
            .into_any())
    };
    let plane = |v: Vec<f64>| -> PyResult<Bound<'py, PyAny>> {
        Ok(PyArray1::from_vec(py, v).reshape([rows, cols])?.into_any())
    };
    Ok((
        cube(cells.u)?,
        cube(cells.v)?,
        cube(cells.w)?,
        cube(cells.speed)?,
        plane(speed_h)?,
        plane(dir_h)?,
        grid_tuple(&g.plan),
        z_centres,
        plane(g.terrain_m.clone())?,
        report,
        crs,
        (
            be.label(),
            match samples {
                Some(v) => {
                    let n = v.len() / 7;
                    Some(PyArray1::from_vec(py, v).reshape([n, 7])?.into_any())
                }
                None => None,
            },
        ),
    ))
}

/// The fraction of a wind solve done at a convergence check, for the progress bar: the
/// residual's reduction since the first check against the tolerance's, on a log scale (or the
/// share of `max_iterations` if that is more), capped below 1 until the solve returns.
fn wind_fraction(opts: &WindOptions, it: usize, max_div: f64, first: &mut Option<f64>) -> f64 {
    let d1 = *first.get_or_insert(max_div);
    let by_residual = if d1 > 0.0 && max_div > 0.0 && opts.tolerance > 0.0 && opts.tolerance < 1.0 {
        (d1 / max_div).ln() / (1.0 / opts.tolerance).ln()
    } else {
        0.0
    };
    let by_count = it as f64 / opts.max_iterations.max(1) as f64;
    by_residual.max(by_count).clamp(0.0, 0.99)
}

fn dem_class(e: &gw::io::DemError) -> errors::Class {
    match e {
        gw::io::DemError::Input(i) => match i.as_ref() {
            geofield::InputError::File(geofield_io::IoError::Read { .. }) => errors::Class::Io,
            _ => errors::Class::Value,
        },
        _ => errors::Class::Value,
    }
}
