//! The parts of a gridded wind file that curvilinear grids and WRF's output add to
//! [`super::init_grid`]: the nodes' 2-D longitudes and latitudes, whether u and v are along the
//! grid or east and north, and a time axis without a CF coordinate variable.
//!
//! - **Node coordinates**: when the wind's horizontal dimensions have no 1-D coordinate
//!   variables, the longitude and latitude variables are those named in the wind's
//!   `coordinates` attribute whose `standard_name` is `longitude`/`latitude` (or units
//!   `degrees_east`/`degrees_north`), else the first pair present of `XLONG`/`XLAT` (WRF),
//!   `XLONG_M`/`XLAT_M` (WPS), `lon`/`lat`, `longitude`/`latitude`, `nav_lon`/`nav_lat`. They
//!   must end with the wind's two horizontal dimensions; a leading time dimension (WRF's) is
//!   read at the wind's time.
//! - **Wind axes**: given ([`InitGridRequest::grid_relative`]); else the wind's
//!   `standard_name` (`eastward_wind`/`northward_wind`: east and north; `x_wind`/`y_wind`,
//!   `grid_eastward_wind`/`grid_northward_wind`: the grid's); else WRF output (the global
//!   attribute `MAP_PROJ`) is grid-relative, as WRF writes `U10`/`V10` (with a note); otherwise
//!   an error asks.
//! - **Times**: the time dimension's coordinate variable; else a 1-D variable on it with CF
//!   units (WRF's `XTIME`, "minutes since …"); else a text variable (time, string length) of
//!   dates, WRF's `Times` ("2024-06-21_18:00:00", UTC).

use geofield_io::NcReader;

use super::InitGridRequest;
use super::cf_time::parse_utc;

/// The node coordinates read: (longitudes, latitudes) in the wind's (y-major) order, and the
/// names of the two variables.
pub(super) struct NodeCoords {
    pub lon: Vec<f64>,
    pub lat: Vec<f64>,
    pub names: (String, String),
}

const LONLAT_PAIRS: [(&str, &str); 5] = [
    ("XLONG", "XLAT"),
    ("XLONG_M", "XLAT_M"),
    ("lon", "lat"),
    ("longitude", "latitude"),
    ("nav_lon", "nav_lat"),
];

/// Whether `var` is a longitude (`east` = true) or latitude by its standard name or units.
fn is_coord(nc: &NcReader, var: &str, east: bool) -> bool {
    let attr = |a: &str| nc.attr_text(var, a).map(|s| s.trim().to_string());
    let (std, units): (&str, &[&str]) = if east {
        (
            "longitude",
            &["degrees_east", "degree_east", "degrees_E", "degree_E"],
        )
    } else {
        (
            "latitude",
            &["degrees_north", "degree_north", "degrees_N", "degree_N"],
        )
    };
    attr("standard_name").as_deref() == Some(std)
        || attr("units").is_some_and(|u| units.contains(&u.as_str()))
}

/// The nodes' longitudes and latitudes of a curvilinear wind `uname` with horizontal
/// dimensions (`ydim`, `xdim`) of lengths (`ny`, `nx`), in y-major order; `transposed` when the
/// wind is stored (x, y). `t_index` is the wind's time.
pub(super) fn node_coords(
    nc: &mut NcReader,
    uname: &str,
    (ydim, xdim): (&str, &str),
    (ny, nx): (usize, usize),
    transposed: bool,
    t_index: usize,
) -> Result<NodeCoords, String> {
    let fits = |nc: &NcReader, v: &str| {
        nc.var(v).is_some_and(|info| {
            let d = &info.dims;
            let n = d.len();
            let last = if transposed {
                [ydim, xdim]
            } else {
                [xdim, ydim]
            };
            n >= 2 && d[n - 1].0 == last[0] && d[n - 2].0 == last[1]
        })
    };
    let listed: Vec<String> = nc
        .attr_text(uname, "coordinates")
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let pick = |east: bool| {
        listed
            .iter()
            .find(|v| fits(nc, v) && is_coord(nc, v, east))
            .cloned()
    };
    let (lon, lat) = match (pick(true), pick(false)) {
        (Some(a), Some(b)) => (a, b),
        _ => LONLAT_PAIRS
            .iter()
            .find(|(a, b)| fits(nc, a) && fits(nc, b))
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .ok_or_else(|| {
                format!(
                    "{uname:?}'s dimensions {ydim:?} and {xdim:?} have no coordinate variables \
                     (1-D variables of their names), and no 2-D longitude/latitude variables \
                     on them were found (the `coordinates` attribute, XLONG/XLAT, lon/lat, …)"
                )
            })?,
    };
    let plane = nx * ny;
    let mut read = |var: &str| -> Result<Vec<f64>, String> {
        let info = nc.var(var).ok_or_else(|| format!("no variable {var:?}"))?;
        let data = if info.is_record {
            let t = t_index.min(nc.num_records().saturating_sub(1));
            nc.read(var, Some(t)).map_err(|e| e.to_string())?
        } else {
            let all = nc.read(var, None).map_err(|e| e.to_string())?;
            let planes = all.len() / plane.max(1);
            let t = if planes > 1 { t_index } else { 0 };
            all.get(t * plane..(t + 1) * plane)
                .map(<[f64]>::to_vec)
                .ok_or_else(|| format!("{var:?} holds fewer values than its shape"))?
        };
        if data.len() != plane {
            return Err(format!(
                "{var:?}: holds {} values per time, not the {ny} x {nx} of {uname:?}",
                data.len()
            ));
        }
        Ok(if transposed {
            super::init_grid::y_major(&data, nx, ny)
        } else {
            data
        })
    };
    Ok(NodeCoords {
        lon: read(&lon)?,
        lat: read(&lat)?,
        names: (lon, lat),
    })
}

/// Whether `uname`'s u and v are along the grid's axes (module docs).
pub(super) fn grid_relative(
    nc: &NcReader,
    req: &InitGridRequest,
    uname: &str,
    notes: &mut Vec<String>,
) -> Result<bool, String> {
    if let Some(g) = req.grid_relative {
        return Ok(g);
    }
    match nc
        .attr_text(uname, "standard_name")
        .as_deref()
        .map(str::trim)
    {
        Some("eastward_wind") => return Ok(false),
        Some("x_wind" | "grid_eastward_wind") => return Ok(true),
        _ => {}
    }
    if nc.attr_numbers("", "MAP_PROJ").is_some() {
        notes.push(format!(
            "{uname:?} is WRF's grid-relative wind (the file has WRF's MAP_PROJ); turned to \
             the DEM's axes by the grid's orientation at each column (--init-wind-axes earth \
             if it was already turned to east and north)"
        ));
        return Ok(true);
    }
    Err(format!(
        "{uname:?} is on a curvilinear grid and declares no standard_name saying whether it \
         points east (eastward_wind) or along the grid (x_wind); say which with \
         --init-wind-axes earth or grid"
    ))
}

/// The values, CF units and calendar of the time dimension `dim` (module docs), or `None`.
pub(super) fn time_axis(nc: &mut NcReader, dim: &str) -> Option<(Vec<f64>, String, String)> {
    let on_dim = |nc: &NcReader, v: &str| {
        nc.var(v)
            .filter(|i| i.dims.first().is_some_and(|d| d.0 == dim))
    };
    if on_dim(nc, dim).is_some_and(|i| i.dims.len() == 1) && !nc.is_text(dim) {
        let units = nc.attr_text(dim, "units").unwrap_or_default();
        let cal = nc.attr_text(dim, "calendar").unwrap_or_default();
        return nc.read(dim, None).ok().map(|v| (v, units, cal));
    }
    let names = nc.var_names();
    // A 1-D variable on the dimension with CF time units (WRF's XTIME).
    if let Some(v) = names.iter().find(|v| {
        on_dim(nc, v).is_some_and(|i| i.dims.len() == 1)
            && !nc.is_text(v)
            && nc
                .attr_text(v, "units")
                .is_some_and(|u| u.contains(" since "))
    }) {
        let units = nc.attr_text(v, "units").unwrap_or_default();
        let cal = nc.attr_text(v, "calendar").unwrap_or_default();
        return nc.read(v, None).ok().map(|vals| (vals, units, cal));
    }
    // Dates as text, one per time (WRF's Times): seconds since 1970-01-01.
    let text = names
        .iter()
        .find(|v| nc.is_text(v) && on_dim(nc, v).is_some_and(|i| i.dims.len() == 2))?
        .clone();
    let width = nc.var(&text)?.dims[1].1;
    let bytes = nc.read(&text, None).ok()?;
    let epoch = parse_utc("1970-01-01T00:00:00")?;
    let vals = bytes
        .chunks(width.max(1))
        .map(|c| {
            let s: String = c
                .iter()
                .map(|&b| b as u8 as char)
                .take_while(|&ch| ch != '\0')
                .collect();
            // WRF writes "YYYY-MM-DD_HH:MM:SS".
            parse_utc(&s.replacen('_', "T", 1))
                .map_or(f64::NAN, |jd| ((jd - epoch) * 86400.0).round())
        })
        .collect();
    Some((
        vals,
        "seconds since 1970-01-01 00:00:00".into(),
        String::new(),
    ))
}

#[cfg(test)]
#[path = "init_curvilinear_tests.rs"]
mod tests;
