//! WindNinja's formats: its weather-station CSV read as it is ([`read_station_file`] detects it
//! by its header), its output names ([`ninja_output_stem`]), and the mast points of
//! `--points-in` / `--points-out` ([`read_points`], [`write_points`]).
//!
//! # WindNinja station CSV
//!
//! Header (WindNinja's `data/*_wx_stations.csv`; quoted as WindNinja writes it, since the
//! brackets hold commas; names matched by the part before the bracket, any case):
//!
//! `Station_Name, Coord_Sys(PROJCS,GEOGCS), Datum(WGS84,NAD83,NAD27), Lat/YCoord, Lon/XCoord,
//! Height, Height_Units(meters,feet), Speed, Speed_Units(mph,kph,mps,kts), Direction(degrees),
//! Temperature, Temperature_Units(F,C), Cloud_Cover(%), Radius_of_Influence,
//! Radius_of_Influence_Units(miles,feet,meters,km)`; later columns (a date and time) and the
//! temperature and cloud cover are ignored.
//!
//! - `PROJCS` rows: Lat/YCoord is y and Lon/XCoord is x in the DEM's CRS (metres).
//! - `GEOGCS` rows: latitude and longitude in degrees on the named datum, projected to the DEM's
//!   CRS ([`geofield_io::project`]); the DEM must then declare its CRS.
//! - Heights in meters or feet, speeds in mps, kph, mph or kts, converted to SI
//!   ([`crate::wind::SpeedUnit`], [`crate::wind::LengthUnit`]); the radius of influence in
//!   miles, feet, meters or km, −1 (any negative) for none.
//!
//! Every bad value is an [`InputError::Field`] naming the file, the line and the column.

use std::collections::HashMap;
use std::path::Path;

use geofield_io::project::{Datum, project_lonlat};

use crate::input_error::{InputError, quote};
use crate::wind::{LengthUnit, PointSample, SpeedUnit, Station, WindField};

/// The stations of a file, in either format, with WindNinja's radii of influence.
#[derive(Debug, Clone, PartialEq)]
pub struct StationFile {
    pub stations: Vec<Station>,
    /// WindNinja format: the largest radius of influence given (m); `None` when no station
    /// gives one (or for the geofield format).
    pub radius_m: Option<f64>,
    /// Whether the file was in WindNinja's format.
    pub windninja: bool,
}

/// Whether the header `headers` is WindNinja's (first column `Station_Name`).
pub fn is_windninja_header(headers: &[String]) -> bool {
    headers.first().is_some_and(|h| key(h) == "station_name")
}

/// A header name up to its bracket, trimmed and lower case.
fn key(h: &str) -> String {
    h.split('(')
        .next()
        .unwrap_or("")
        .trim()
        .trim_matches('"')
        .to_ascii_lowercase()
}

/// Read a stations CSV in geofield's format ([`super::read_stations`]) or WindNinja's
/// (detected by its header, see the module docs); `crs_epsg` is the DEM's CRS, needed for
/// `GEOGCS` rows.
pub fn read_station_file(path: &Path, crs_epsg: Option<u16>) -> Result<StationFile, InputError> {
    let t = geofield_io::CsvTable::read(path)?;
    if !is_windninja_header(&t.headers) {
        drop(t);
        return Ok(StationFile {
            stations: super::read_stations(path)?,
            radius_m: None,
            windninja: false,
        });
    }
    read_windninja(path, t, crs_epsg)
}

/// Column names of WindNinja's station CSV, by their key (before the bracket).
const NINJA_COLUMNS: [&str; 10] = [
    "station_name",
    "coord_sys",
    "datum",
    "lat/ycoord",
    "lon/xcoord",
    "height",
    "height_units",
    "speed",
    "speed_units",
    "direction",
];

fn read_windninja(
    path: &Path,
    mut t: geofield_io::CsvTable,
    crs_epsg: Option<u16>,
) -> Result<StationFile, InputError> {
    let keys: Vec<String> = t.headers.iter().map(|h| key(h)).collect();
    let find = |name: &str| keys.iter().position(|k| k == name);
    let mut cols = [0usize; 10];
    for (slot, name) in cols.iter_mut().zip(NINJA_COLUMNS) {
        *slot = find(name).ok_or_else(|| InputError::Invalid {
            path: path.to_path_buf(),
            reason: format!(
                "WindNinja station file without a column {name:?} (header: {})",
                t.headers.join(",")
            ),
        })?;
    }
    let radius_cols = (
        find("radius_of_influence"),
        find("radius_of_influence_units"),
    );
    let mut out = Vec::new();
    let mut radius: Option<f64> = None;
    let mut lines: HashMap<String, u64> = HashMap::new();
    let mut rec = geofield_io::CsvRecord::default();
    while t.next_record(&mut rec)? {
        let row = t.row(&rec);
        let line = row.line();
        let at =
            |col: usize, reason: String| super::field_error(path, line, &t.headers, col, reason);
        let text = |col: usize| -> Result<String, InputError> {
            Ok(row.str(col)?.trim().trim_matches('"').trim().to_string())
        };
        let number = |col: usize| -> Result<f64, InputError> { Ok(row.finite_f64(col)?) };
        let [
            c_name,
            c_sys,
            c_datum,
            c_lat,
            c_lon,
            c_h,
            c_hu,
            c_s,
            c_su,
            c_dir,
        ] = cols;
        let id = text(c_name)?;
        if id.is_empty() {
            return Err(at(c_name, "the station name is empty".into()));
        }
        if let Some(first) = lines.insert(id.clone(), line) {
            return Err(at(
                c_name,
                format!(
                    "station name {} is used twice (lines {first} and {line})",
                    quote(&id)
                ),
            ));
        }
        let (lat_y, lon_x) = (number(c_lat)?, number(c_lon)?);
        let (x_m, y_m) = match text(c_sys)?.to_ascii_uppercase().as_str() {
            "PROJCS" => (lon_x, lat_y),
            "GEOGCS" => {
                let datum_text = text(c_datum)?;
                let datum = Datum::parse(&datum_text).ok_or_else(|| {
                    at(
                        c_datum,
                        format!(
                            "unknown datum {}: expected WGS84, NAD83 or NAD27",
                            quote(&datum_text)
                        ),
                    )
                })?;
                let Some(code) = crs_epsg else {
                    return Err(at(
                        c_sys,
                        "GEOGCS (latitude/longitude) needs the DEM's CRS to project the station, \
                         and the DEM declares none (give it one, e.g. --crs EPSG:32611, or give \
                         PROJCS coordinates)"
                            .into(),
                    ));
                };
                if !(-90.0..=90.0).contains(&lat_y) {
                    return Err(at(
                        c_lat,
                        format!("latitude {lat_y} is not in [-90, 90] degrees"),
                    ));
                }
                if !(-180.0..=180.0).contains(&lon_x) {
                    return Err(at(
                        c_lon,
                        format!("longitude {lon_x} is not in [-180, 180] degrees"),
                    ));
                }
                project_lonlat(datum, lon_x, lat_y, code)
                    .map_err(|e| at(c_sys, format!("cannot project the station: {e}")))?
            }
            other => {
                return Err(at(
                    c_sys,
                    format!(
                        "unknown coordinate system {}: expected PROJCS or GEOGCS",
                        quote(other)
                    ),
                ));
            }
        };
        let unit_of = |col: usize| -> Result<LengthUnit, InputError> {
            text(col)?.parse().map_err(|e: String| at(col, e))
        };
        let height_agl_m = number(c_h)? * unit_of(c_hu)?.metres();
        if height_agl_m <= 0.0 {
            return Err(at(
                c_h,
                format!("height {height_agl_m} m: the anemometer must be above the ground"),
            ));
        }
        let speed_unit: SpeedUnit = text(c_su)?.parse().map_err(|e: String| at(c_su, e))?;
        let speed_m_per_s = number(c_s)? * speed_unit.m_per_s();
        if speed_m_per_s < 0.0 {
            return Err(at(c_s, format!("speed {speed_m_per_s} m/s is negative")));
        }
        let direction_deg = number(c_dir)?;
        if !(0.0..=360.0).contains(&direction_deg) {
            return Err(at(
                c_dir,
                format!("direction {direction_deg} is not in [0, 360] degrees"),
            ));
        }
        if let (Some(cr), Some(cu)) = radius_cols {
            let r = text(cr)?;
            if !r.is_empty() {
                let r: f64 = r
                    .parse()
                    .ok()
                    .filter(|v: &f64| v.is_finite())
                    .ok_or_else(|| at(cr, format!("{} is not a number", quote(&r))))?;
                if r > 0.0 {
                    let r = r * unit_of(cu)?.metres();
                    radius = Some(radius.map_or(r, |a: f64| a.max(r)));
                }
            }
        }
        out.push(Station {
            id,
            x_m,
            y_m,
            height_agl_m,
            speed_m_per_s,
            direction_deg,
            stability: None,
        });
    }
    if out.is_empty() {
        return Err(InputError::Invalid {
            path: path.to_path_buf(),
            reason: "no stations (only a header?)".into(),
        });
    }
    Ok(StationFile {
        stations: out,
        radius_m: radius,
        windninja: true,
    })
}

/// WindNinja's stem of its output names: `<dem-stem>_<direction>_<speed>_<res>m` for a
/// domain-average run (direction in degrees, speed in its input unit, both rounded to
/// integers, as `big_butte_220_10_138m_vel.asc`), `<dem-stem>_point_<res>m` for a run from
/// stations; `<res>` is the output cell size in metres, rounded. The speed and direction grids
/// are `<stem>_vel.asc` and `<stem>_ang.asc`.
pub fn ninja_output_stem(
    dem: &Path,
    domain_average: Option<(f64, f64)>,
    output_cell_m: f64,
) -> String {
    let stem = dem
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "dem".into());
    let res = output_cell_m.round();
    match domain_average {
        Some((direction, speed)) => format!(
            "{stem}_{}_{}_{res}m",
            direction.round() as i64,
            speed.round() as i64
        ),
        None => format!("{stem}_point_{res}m"),
    }
}

/// One mast point of `--points-in`.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub id: String,
    /// Position in the DEM's CRS (m).
    pub x_m: f64,
    pub y_m: f64,
    /// Height above the ground (m), > 0.
    pub height_agl_m: f64,
}

/// Read mast points: `id,x_m,y_m,height_agl_m` (x, y in the DEM's CRS), or
/// `id,lat,lon,height_agl_m` (degrees on WGS 84, projected to `crs_epsg`); other columns are
/// ignored. `id` is optional (default: the line number).
pub fn read_points(path: &Path, crs_epsg: Option<u16>) -> Result<Vec<Point>, InputError> {
    let mut t = geofield_io::CsvTable::read(path)?;
    let projected = (t.column("x_m").ok(), t.column("y_m").ok());
    let geographic = (t.column("lat").ok(), t.column("lon").ok());
    let xy = match (projected, geographic) {
        ((Some(x), Some(y)), _) => (x, y, false),
        (_, (Some(lat), Some(lon))) => (lon, lat, true),
        _ => {
            return Err(InputError::Invalid {
                path: path.to_path_buf(),
                reason: format!(
                    "expected columns x_m,y_m (the DEM's CRS) or lat,lon (WGS 84), got {}",
                    t.headers.join(",")
                ),
            });
        }
    };
    let ch = t.column("height_agl_m")?;
    let cid = t.column("id").ok();
    let mut out = Vec::new();
    let mut rec = geofield_io::CsvRecord::default();
    while t.next_record(&mut rec)? {
        let row = t.row(&rec);
        let line = row.line();
        let at =
            |col: usize, reason: String| super::field_error(path, line, &t.headers, col, reason);
        let (a, b) = (row.finite_f64(xy.0)?, row.finite_f64(xy.1)?);
        let (x_m, y_m) = if xy.2 {
            let Some(code) = crs_epsg else {
                return Err(at(
                    xy.1,
                    "lat/lon points need the DEM's CRS, and the DEM declares none".into(),
                ));
            };
            project_lonlat(Datum::Wgs84, a, b, code)
                .map_err(|e| at(xy.1, format!("cannot project the point: {e}")))?
        } else {
            (a, b)
        };
        let height_agl_m = row.finite_f64(ch)?;
        if height_agl_m <= 0.0 {
            return Err(at(ch, format!("height {height_agl_m} m must be > 0")));
        }
        let id = match cid {
            Some(c) => row.str(c)?.to_string(),
            None => line.to_string(),
        };
        out.push(Point {
            id,
            x_m,
            y_m,
            height_agl_m,
        });
    }
    Ok(out)
}

/// The columns [`write_points`] writes.
pub const POINT_COLUMNS: &str = "id,x_m,y_m,height_agl_m,ground_m,u,v,w,speed,direction,inside";

/// Sample `field` at every point ([`crate::wind::sample_point`]); `None` outside the grid.
pub fn sample_points(
    field: &WindField,
    points: &[Point],
) -> Result<Vec<Option<PointSample>>, crate::GeofieldError> {
    points
        .iter()
        .map(|p| crate::wind::sample_point(field, p.x_m, p.y_m, p.height_agl_m))
        .collect()
}

/// Write the points with their samples: [`POINT_COLUMNS`] (m, m/s, degrees; `inside` 0 and
/// empty values for points outside the grid), atomically.
pub fn write_points(
    path: &Path,
    points: &[Point],
    samples: &[Option<PointSample>],
) -> Result<(), geofield_io::IoError> {
    let mut text = String::from(POINT_COLUMNS);
    text.push('\n');
    for (p, s) in points.iter().zip(samples) {
        let id = if p.id.contains([',', '"', '\n']) {
            format!("\"{}\"", p.id.replace('"', "\"\""))
        } else {
            p.id.clone()
        };
        text.push_str(&format!("{id},{},{},{}", p.x_m, p.y_m, p.height_agl_m));
        match s {
            Some(s) => text.push_str(&format!(
                ",{},{},{},{},{},{},1\n",
                s.ground_m, s.u, s.v, s.w, s.speed, s.direction
            )),
            None => text.push_str(",,,,,,,0\n"),
        }
    }
    geofield_io::write_atomic(path, |f| f.write_all(text.as_bytes()))
}
