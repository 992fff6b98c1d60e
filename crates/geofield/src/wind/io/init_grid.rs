//! A weather model's gridded wind from a NetCDF-3 file (CF conventions), as the library's
//! [`InitGrid`] ([`crate::wind::gridded`]).
//!
//! What is read, and how each piece is found when it is not given:
//! - **u and v**: the variables named, or those whose `standard_name` is `eastward_wind` /
//!   `northward_wind` (or the grid-relative `x_wind` / `y_wind`), or the first pair present of
//!   `u10`/`v10`, `U10`/`V10`, `uas`/`vas`, `ugrd10m`/`vgrd10m`,
//!   `UGRD_10maboveground`/`VGRD_10maboveground`, `u`/`v`, `U`/`V`. Units `m s-1`, `m/s`,
//!   `knots`/`kt`, `km/h`, `mph` (none: m/s, with a note); packed values and fill values per CF.
//! - **Horizontal axes**: the last two dimensions of u, each with its coordinate variable (a
//!   1-D variable of the dimension's name). The x axis is the one whose variable has
//!   `axis = "X"`, a longitude or projection-x `standard_name`, `degrees_east` units or a name
//!   `lon`/`longitude`/`x`/`west_east`; otherwise the last dimension. Metres or kilometres.
//!   Without coordinate variables the grid is **curvilinear** (WRF's output, CF's 2-D
//!   `lon`/`lat`): its nodes' longitudes and latitudes, the wind's axes and WRF's `Times` are
//!   found as [`super::init_curvilinear`] says.
//! - **Other dimensions** (time, a height of one level): one must be chosen when it has more
//!   than one value: the time by index or by date ([`TimeSel`]); any other must have length 1.
//! - **Coordinates**: longitude/latitude when the x axis is a longitude; otherwise the CRS of
//!   the grid mapping's `crs_wkt`/`spatial_ref` (an EPSG code), or the DEM's own CRS (said in
//!   a note); `crs` overrides.
//! - **Height above the ground**: given, or a 1-value `height` coordinate in metres (CF's
//!   scalar coordinate for 10 m winds), or 10 m for variables named for 10 m (`u10`,
//!   `ugrd10m`, `…10maboveground`), with a note; otherwise an error asks for it.
//!
//! - **Air temperature and cloud cover** (with [`InitGridRequest::weather`]): see
//!   [`super::init_weather`]; each is read when found, for the diurnal model.
//!
//! Times: CF `UNITS since DATE` (seconds, minutes, hours or days; Gregorian calendars) match
//! `YYYY-MM-DDTHH:MM[:SS]` in UTC to the second.

use std::path::Path;

use geofield_io::NcReader;

use super::cf_time::{format_time, match_time};
use super::{init_curvilinear, init_weather};
use crate::InputError;
use crate::wind::gridded::{Curvilinear, InitGrid, SourceCrs};

/// Which time of the file.
#[derive(Debug, Clone, PartialEq)]
pub enum TimeSel {
    /// The index along the time dimension (0-based).
    Index(usize),
    /// A UTC date and time, `YYYY-MM-DDTHH:MM[:SS]`.
    At(String),
}

/// What to read ([`read_init_grid`]); `None` fields are found as the module docs say.
#[derive(Debug, Clone, Default)]
pub struct InitGridRequest {
    pub u_var: Option<String>,
    pub v_var: Option<String>,
    pub height_agl_m: Option<f64>,
    pub time: Option<TimeSel>,
    /// The grid's CRS (EPSG code; 4326 for longitude/latitude).
    pub crs_epsg: Option<u16>,
    /// The DEM's CRS.
    pub dem_epsg: Option<u16>,
    /// Also read the air temperature and the cloud cover when the file has them (for the
    /// diurnal model).
    pub weather: bool,
    /// The air temperature variable (default: found, [`super::init_weather`]).
    pub temp_var: Option<String>,
    /// The cloud cover variable (default: found).
    pub cloud_var: Option<String>,
    /// Whether u and v are along a curvilinear grid's axes (`None`: found,
    /// [`super::init_curvilinear`]).
    pub grid_relative: Option<bool>,
}

/// The grid and the notes a user should see (what was assumed or chosen).
#[derive(Debug, Clone)]
pub struct InitGridRead {
    pub grid: InitGrid,
    pub notes: Vec<String>,
    /// (index, "VALUE UNITS") of the time read, when the variable has a time dimension.
    pub time: Option<(usize, String)>,
}

const PAIRS: [(&str, &str); 7] = [
    ("u10", "v10"),
    ("U10", "V10"),
    ("uas", "vas"),
    ("ugrd10m", "vgrd10m"),
    ("UGRD_10maboveground", "VGRD_10maboveground"),
    ("u", "v"),
    ("U", "V"),
];

/// Reads the gridded wind of `path` (module docs).
pub fn read_init_grid(path: &Path, req: &InitGridRequest) -> Result<InitGridRead, InputError> {
    let invalid = |reason: String| InputError::Invalid {
        path: path.to_path_buf(),
        reason,
    };
    let mut nc = NcReader::open(path)?;
    let mut notes = Vec::new();
    let (uname, vname) = pick_vars(&nc, req).map_err(invalid)?;
    let uinfo = nc
        .var(&uname)
        .ok_or_else(|| invalid(format!("no variable {uname:?}")))?;
    let vinfo = nc
        .var(&vname)
        .ok_or_else(|| invalid(format!("no variable {vname:?}")))?;
    if uinfo.dims != vinfo.dims {
        return Err(invalid(format!(
            "{uname:?} and {vname:?} have different dimensions ({:?} and {:?})",
            uinfo.dims, vinfo.dims
        )));
    }
    let nd = uinfo.dims.len();
    if nd < 2 {
        return Err(invalid(format!(
            "{uname:?} has {nd} dimension(s); a gridded wind needs (…, y, x)"
        )));
    }
    // Horizontal axes: which of the last two is x.
    let (d1, d2) = (&uinfo.dims[nd - 2].0, &uinfo.dims[nd - 1].0);
    let transposed = is_x_axis(&nc, d1) && !is_x_axis(&nc, d2);
    let (xdim, ydim) = if transposed { (d1, d2) } else { (d2, d1) };
    let has_axis = |d: &str| nc.var(d).is_some_and(|v| v.dims.len() == 1);
    // Without 1-D coordinate variables the grid is curvilinear: its axes are node indices.
    let curvilinear = !(has_axis(xdim) && has_axis(ydim));
    let mut axis = |d: &str| -> Result<Vec<f64>, InputError> {
        let scale = match nc.attr_text(d, "units").as_deref().map(str::trim) {
            Some("km") => 1000.0,
            _ => 1.0,
        };
        let vals = nc.read(d, None)?;
        Ok(vals.iter().map(|v| v * scale).collect())
    };
    // A curvilinear grid's node indices are made once u is read: its size checked against the
    // file first, not taken from the header alone.
    let (mut x, mut y) = if curvilinear {
        (Vec::new(), Vec::new())
    } else {
        (axis(xdim)?, axis(ydim)?)
    };
    let dim_len = |d: &str| uinfo.dims.iter().find(|x| x.0 == d).map_or(0, |x| x.1);
    let (nx, ny) = if curvilinear {
        (dim_len(xdim), dim_len(ydim))
    } else {
        (x.len(), y.len())
    };

    // Leading dimensions: the time (chosen) and others of length 1.
    let lead = &uinfo.dims[..nd - 2];
    let mut time_dim: Option<(usize, String, usize)> = None; // (position, name, length)
    for (i, (name, len)) in lead.iter().enumerate() {
        let is_time = (i == 0 && uinfo.is_record) || is_time_dim(&nc, name);
        if is_time && time_dim.is_none() {
            let len = if i == 0 && uinfo.is_record {
                nc.num_records()
            } else {
                *len
            };
            time_dim = Some((i, name.clone(), len));
        } else if *len != 1 {
            return Err(invalid(format!(
                "{uname:?} has {len} values along {name:?}; only the time may have several \
                 (select a level first, e.g. `cdo sellevel`)"
            )));
        }
    }
    let mut time = None;
    let t_index = match &time_dim {
        None => {
            if req.time.is_some() {
                return Err(invalid(format!(
                    "{uname:?} has no time dimension, but a time was asked for"
                )));
            }
            0
        }
        Some((_, name, len)) => {
            if *len == 0 {
                return Err(invalid(format!("{uname:?} has no record along {name:?}")));
            }
            let axis = init_curvilinear::time_axis(&mut nc, name);
            let (values, units, cal) = match axis {
                Some((v, u, c)) => (Some(v), u, c),
                None => (None, String::new(), String::new()),
            };
            let idx = match &req.time {
                Some(TimeSel::Index(i)) if *i < *len => *i,
                Some(TimeSel::Index(i)) => {
                    return Err(invalid(format!(
                        "time index {i} is out of range: {name:?} has {len} times (0..{})",
                        len - 1
                    )));
                }
                Some(TimeSel::At(s)) => {
                    let vals = values.as_deref().ok_or_else(|| {
                        invalid(format!("no coordinate variable {name:?} to match a date"))
                    })?;
                    match_time(s, vals, &units, &cal).map_err(invalid)?
                }
                None => {
                    if *len > 1 {
                        notes.push(format!(
                            "{}: {len} times along {name:?}; using the first (choose with \
                             --init-time INDEX or DATE)",
                            path.display()
                        ));
                    }
                    0
                }
            };
            let shown = values
                .as_ref()
                .and_then(|v| v.get(idx))
                .map_or(String::new(), |&v| {
                    format_time(v, &units, &cal).unwrap_or_else(|| format!("{v} {units}"))
                });
            time = Some((idx, shown.trim().to_string()));
            idx
        }
    };
    let plane = nx * ny;
    let read_plane =
        |nc: &mut NcReader, var: &str, conv: &dyn Fn(f64) -> f64| -> Result<Vec<f64>, InputError> {
            let data = if uinfo.is_record {
                nc.read(var, Some(t_index))?
            } else {
                let all = nc.read(var, None)?;
                let start = t_index * plane;
                all.get(start..start + plane)
                    .map(<[f64]>::to_vec)
                    .ok_or_else(|| invalid(format!("{var:?} holds fewer values than its shape")))?
            };
            if data.len() != plane {
                return Err(invalid(format!(
                    "{var:?}: one time holds {} values, not the {ny} x {nx} of its axes",
                    data.len()
                )));
            }
            let data: Vec<f64> = data.into_iter().map(conv).collect();
            Ok(if transposed {
                y_major(&data, nx, ny)
            } else {
                data
            })
        };
    let speed = |nc: &NcReader, var: &str| {
        speed_factor(nc.attr_text(var, "units").as_deref()).map_err(|u| {
            invalid(format!(
                "{var:?}: unknown units {u:?}; use m s-1, m/s, knots, km/h or mph"
            ))
        })
    };
    let (fu, fv) = (speed(&nc, &uname)?, speed(&nc, &vname)?);
    let u = read_plane(&mut nc, &uname, &|x| x * fu)?;
    let v = read_plane(&mut nc, &vname, &|x| x * fv)?;
    if curvilinear {
        x = (0..nx).map(|i| i as f64).collect();
        y = (0..ny).map(|j| j as f64).collect();
    }
    let mut weather = [None, None];
    for (slot, (kind, named)) in weather.iter_mut().zip([
        (&init_weather::TEMP, req.temp_var.as_deref()),
        (&init_weather::CLOUD, req.cloud_var.as_deref()),
    ]) {
        if !req.weather {
            continue;
        }
        let Some(name) =
            init_weather::pick(&nc, kind, named, &uinfo.dims, &mut notes).map_err(invalid)?
        else {
            continue;
        };
        let units = nc.attr_text(&name, "units");
        let bad_units = |e: String| invalid(format!("{name:?} (the {}) {e}", kind.what));
        let mut values = if kind.flag == init_weather::TEMP.flag {
            let conv = init_weather::temp_to_c(units.as_deref()).map_err(bad_units)?;
            read_plane(&mut nc, &name, &conv)?
        } else {
            let f = init_weather::cloud_to_pct(units.as_deref()).map_err(bad_units)?;
            read_plane(&mut nc, &name, &|x| x * f)?
        };
        init_weather::check(kind, &name, &mut values).map_err(invalid)?;
        notes.push(format!(
            "{}: the {} from {name:?}",
            path.display(),
            kind.what
        ));
        *slot = Some(values);
    }
    let [air_temp_c, cloud_cover_pct] = weather;
    if nc.attr_text(&uname, "units").is_none() {
        notes.push(format!(
            "{}: {uname:?} declares no units; taken as m/s",
            path.display()
        ));
    }

    let height = find_height(&mut nc, req, &uname, &uinfo.dims, &mut notes).map_err(invalid)?;
    let (crs, curvilinear) = if curvilinear {
        let c = init_curvilinear::node_coords(
            &mut nc,
            &uname,
            (ydim, xdim),
            (ny, nx),
            transposed,
            t_index,
        )
        .map_err(invalid)?;
        let grid_relative =
            init_curvilinear::grid_relative(&nc, req, &uname, &mut notes).map_err(invalid)?;
        if req.crs_epsg.is_some() {
            return Err(invalid(format!(
                "the grid is curvilinear (its nodes' coordinates are {} and {}); --init-crs \
                 applies only to grids with 1-D x/y axes",
                c.names.0, c.names.1
            )));
        }
        let dem_epsg = req.dem_epsg.ok_or_else(|| {
            invalid(format!(
                "the grid is curvilinear (longitudes {} and latitudes {}), and the DEM \
                 declares no CRS to place it (give --crs EPSG:CODE for the DEM)",
                c.names.0, c.names.1
            ))
        })?;
        notes.push(format!(
            "{}: a curvilinear grid, its nodes at {}/{}; u and v {}",
            path.display(),
            c.names.0,
            c.names.1,
            if grid_relative {
                "along the grid's axes"
            } else {
                "east and north"
            }
        ));
        (
            SourceCrs::Curvilinear { dem_epsg },
            Some(Curvilinear {
                lon: c.lon,
                lat: c.lat,
                grid_relative,
            }),
        )
    } else {
        (
            find_crs(&nc, req, &uname, xdim, path, &mut notes).map_err(invalid)?,
            None,
        )
    };
    let source = format!(
        "{} ({uname}/{vname}{})",
        path.display(),
        time.as_ref()
            .map_or(String::new(), |(i, t)| format!(", time {i}: {t}"))
    );
    Ok(InitGridRead {
        grid: InitGrid {
            x,
            y,
            u,
            v,
            height_agl_m: height,
            crs,
            source,
            air_temp_c,
            cloud_cover_pct,
            curvilinear,
        },
        notes,
        time,
    })
}

/// A plane stored (x, y), x slowest, as y-major (`[j * nx + i]`).
pub(super) fn y_major(data: &[f64], nx: usize, ny: usize) -> Vec<f64> {
    let mut out = vec![0.0; nx * ny];
    for i in 0..nx {
        for j in 0..ny {
            out[j * nx + i] = data[i * ny + j];
        }
    }
    out
}

/// The u and v variable names (given, by standard name, or by the usual names).
fn pick_vars(nc: &NcReader, req: &InitGridRequest) -> Result<(String, String), String> {
    let names = nc.var_names();
    let listed = || format!("the file has {}", names.join(", "));
    if let (Some(u), Some(v)) = (&req.u_var, &req.v_var) {
        for n in [u, v] {
            if nc.var(n).is_none() {
                return Err(format!("no variable {n:?}; {}", listed()));
            }
        }
        return Ok((u.clone(), v.clone()));
    }
    let by_std = |want: &[&str]| {
        names
            .iter()
            .find(|n| {
                nc.attr_text(n, "standard_name")
                    .is_some_and(|s| want.contains(&s.trim()))
            })
            .cloned()
    };
    let found = match (
        by_std(&["eastward_wind", "x_wind"]),
        by_std(&["northward_wind", "y_wind"]),
    ) {
        (Some(u), Some(v)) => Some((u, v)),
        _ => PAIRS
            .iter()
            .find(|(u, v)| nc.var(u).is_some() && nc.var(v).is_some())
            .map(|(u, v)| (u.to_string(), v.to_string())),
    };
    let (u, v) = found.ok_or_else(|| {
        format!(
            "no wind variables found (by standard_name eastward_wind/northward_wind or the \
             names u10/v10, uas/vas, u/v, …); name them with --init-u and --init-v; {}",
            listed()
        )
    })?;
    Ok((
        req.u_var.clone().unwrap_or(u),
        req.v_var.clone().unwrap_or(v),
    ))
}

/// Whether the coordinate variable `d` is an x (or longitude) axis.
fn is_x_axis(nc: &NcReader, d: &str) -> bool {
    let attr = |a: &str| nc.attr_text(d, a).map(|s| s.trim().to_string());
    attr("axis").as_deref() == Some("X")
        || matches!(
            attr("standard_name").as_deref(),
            Some("longitude" | "projection_x_coordinate" | "grid_longitude")
        )
        || is_degrees_east(attr("units").as_deref())
        || matches!(d, "lon" | "longitude" | "x" | "west_east" | "rlon")
}

fn is_degrees_east(units: Option<&str>) -> bool {
    matches!(
        units,
        Some("degrees_east" | "degree_east" | "degree_E" | "degrees_E" | "degreeE" | "degreesE")
    )
}

fn is_time_dim(nc: &NcReader, d: &str) -> bool {
    nc.attr_text(d, "axis").as_deref() == Some("T")
        || nc.attr_text(d, "standard_name").as_deref() == Some("time")
        || matches!(d, "time" | "Time" | "valid_time" | "t")
}

/// m/s per unit of the variable's units; `Err(units)` for units not known.
fn speed_factor(units: Option<&str>) -> Result<f64, String> {
    Ok(match units.map(str::trim) {
        None | Some("m s-1" | "m/s" | "m s**-1" | "meters/second" | "m.s-1" | "ms-1") => 1.0,
        Some("knots" | "knot" | "kt" | "kts") => 1852.0 / 3600.0,
        Some("km/h" | "km h-1" | "kph") => 1.0 / 3.6,
        Some("mph" | "mi/h") => 0.44704,
        Some(other) => return Err(other.to_string()),
    })
}

/// The wind's height above the ground (module docs).
fn find_height(
    nc: &mut NcReader,
    req: &InitGridRequest,
    uname: &str,
    dims: &[(String, usize)],
    notes: &mut Vec<String>,
) -> Result<f64, String> {
    if let Some(h) = req.height_agl_m {
        return Ok(h);
    }
    let mut candidates: Vec<String> = nc
        .attr_text(uname, "coordinates")
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect();
    candidates.extend(dims.iter().map(|d| d.0.clone()));
    for c in candidates {
        let is_height = nc.attr_text(&c, "standard_name").as_deref() == Some("height")
            || matches!(
                c.as_str(),
                "height" | "heightAboveGround" | "height_above_ground"
            );
        let Some(info) = nc.var(&c) else { continue };
        let n: usize = info.dims.iter().map(|d| d.1).product();
        if is_height
            && n == 1
            && nc.attr_text(&c, "units").as_deref().map(str::trim) == Some("m")
            && let Some(h) = nc.read(&c, None).ok().and_then(|v| v.first().copied())
            && h.is_finite()
            && h > 0.0
        {
            return Ok(h);
        }
    }
    let low = uname.to_ascii_lowercase();
    if low == "u10" || low.contains("10m") || low == "uas" {
        notes.push(format!(
            "{:?} is taken to be the wind 10 m above the ground (its name); give \
             --init-height-m otherwise",
            uname
        ));
        return Ok(10.0);
    }
    Err(format!(
        "the height above the ground of {uname:?} is not in the file (no 1-value `height` \
         coordinate in metres); give it with --init-height-m"
    ))
}

/// The grid's coordinates (module docs).
fn find_crs(
    nc: &NcReader,
    req: &InitGridRequest,
    uname: &str,
    xdim: &str,
    path: &Path,
    notes: &mut Vec<String>,
) -> Result<SourceCrs, String> {
    let geographic = nc.attr_text(xdim, "standard_name").as_deref() == Some("longitude")
        || is_degrees_east(nc.attr_text(xdim, "units").as_deref().map(str::trim))
        || matches!(xdim, "lon" | "longitude");
    let file_epsg = nc
        .attr_text(uname, "grid_mapping")
        .and_then(|gm| {
            nc.attr_text(gm.trim(), "crs_wkt")
                .or_else(|| nc.attr_text(gm.trim(), "spatial_ref"))
        })
        .and_then(|wkt| geofield_io::crs::epsg_from_wkt(&wkt));
    let epsg = match (req.crs_epsg, geographic) {
        (Some(c), _) => Some(c),
        (None, true) => Some(4326),
        (None, false) => file_epsg,
    };
    if epsg.is_none() {
        notes.push(format!(
            "{}: the grid declares no CRS; its x/y are taken to be in the DEM's CRS (give \
             --init-crs EPSG:CODE otherwise)",
            path.display()
        ));
    }
    source_crs(epsg, req.dem_epsg)
}

/// How a grid in CRS `grid_epsg` (`None`: the DEM's) sits on a DEM in `dem_epsg`: the same
/// coordinates, longitude/latitude (a geographic code) or another projected CRS.
pub fn source_crs(grid_epsg: Option<u16>, dem_epsg: Option<u16>) -> Result<SourceCrs, String> {
    match (grid_epsg, dem_epsg) {
        (None, _) => Ok(SourceCrs::Same),
        (Some(e), Some(d)) if e == d => Ok(SourceCrs::Same),
        (Some(e), Some(d)) => match geofield_io::crs::is_geographic(e) {
            Some(true) => Ok(SourceCrs::LonLat { dem_epsg: d }),
            Some(false) => Ok(SourceCrs::Epsg {
                epsg: e,
                dem_epsg: d,
            }),
            None => Err(format!("EPSG:{e} (the grid's CRS) is not a known code")),
        },
        (Some(e), None) => Err(format!(
            "the DEM declares no CRS, so a grid in EPSG:{e} cannot be placed on it (give --crs \
             EPSG:CODE for the DEM)"
        )),
    }
}

#[cfg(test)]
#[path = "init_grid_tests.rs"]
mod tests;
