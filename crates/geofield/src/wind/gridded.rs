//! Initialisation from a gridded wind (a weather model's 10 m wind, WindNinja's
//! "weather model initialization"): the horizontal wind at one height above the ground on a
//! rectilinear grid, regridded to the columns of the DEM; the first guess then takes, in every
//! column, that wind and the vertical profile of the options, as it would from one station
//! standing in the column ([`super::init`]).
//!
//! # Regridding
//!
//! - Each DEM column centre is placed in the source grid's coordinates: the same coordinates
//!   ([`SourceCrs::Same`]); longitude/latitude on WGS 84 ([`SourceCrs::LonLat`], the centre
//!   unprojected from the DEM's CRS); or another projected CRS ([`SourceCrs::Epsg`]: unprojected,
//!   then projected), by PROJ.4's projections in `geofield_io::project` (feature `io`).
//! - u and v are interpolated bilinearly between the four source nodes around the centre
//!   (WindNinja warps its weather-model bands bilinearly as well). A longitude axis that spans
//!   the globe wraps around (0…359.75 then 0), and a query longitude is shifted by 360° into the
//!   axis's range (a 0…360 axis and a −180…180 DEM). A centre outside the nodes' range, or a
//!   missing (NaN) node with a non-zero weight, is an error naming the column and the grid.
//! - Vectors are turned from the source grid's axes to the DEM's. A grid's north is not true
//!   north away from a projection's central meridian (the meridian convergence). At each column,
//!   the bearing β (clockwise from true north) of a grid's +y direction is measured from the
//!   inverse projection of the column and of a point δ = 1 m to its grid north, on the WGS 84
//!   ellipsoid: β = atan2(N(φ) cos φ Δλ, M(φ) Δφ) (N, M the prime-vertical and meridional
//!   radii of curvature). A source vector of bearing θ has bearing θ + β_S − β_D on the DEM's
//!   grid: (u, v) turns by τ = β_S − β_D clockwise, u' = u cos τ + v sin τ,
//!   v' = v cos τ − u sin τ. Longitude/latitude winds (eastward, northward) have β_S = 0.
//! - Curvilinear grids ([`SourceCrs::Curvilinear`]: WRF's native `XLONG`/`XLAT`, rotated-pole
//!   and other grids with 2-D longitude and latitude) are placed in their node-index space and
//!   turned as [`super::curvilinear`] says.

use rayon::prelude::*;

pub use super::curvilinear::Curvilinear;
use crate::GeofieldError;
use geofield_core::GridSpec;

/// The coordinates of a gridded wind's axes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceCrs {
    /// The DEM's own projected coordinates (metres); the wind's u and v are along its x and y.
    Same,
    /// Longitude and latitude (degrees, WGS 84); u eastward and v northward. `dem_epsg` is the
    /// DEM's projected CRS.
    LonLat { dem_epsg: u16 },
    /// Another projected CRS `epsg` (metres); u and v along its grid axes (WRF's and HRRR's
    /// grid-relative winds).
    Epsg { epsg: u16, dem_epsg: u16 },
    /// A curvilinear grid: [`InitGrid::curvilinear`] holds every node's longitude and
    /// latitude, and `x`/`y` are the node indices 0, 1, …
    Curvilinear { dem_epsg: u16 },
}

/// A horizontal wind at one height above the ground on a rectilinear grid.
#[derive(Debug, Clone, PartialEq)]
pub struct InitGrid {
    /// The x (or longitude) of each node column: strictly increasing or decreasing.
    pub x: Vec<f64>,
    /// The y (or latitude) of each node row: strictly increasing or decreasing.
    pub y: Vec<f64>,
    /// u and v (m/s) at the nodes, `u[iy * x.len() + ix]`.
    pub u: Vec<f64>,
    pub v: Vec<f64>,
    /// The height of the wind above the ground (m), > 0 (10 m for most weather models).
    pub height_agl_m: f64,
    pub crs: SourceCrs,
    /// What the grid is, for messages ("FILE, variables u10/v10, time 3").
    pub source: String,
    /// The air temperature near the ground (°C) at the nodes, for the diurnal model (`None`:
    /// the model's uniform one).
    pub air_temp_c: Option<Vec<f64>>,
    /// The cloud cover (%) at the nodes, for the diurnal model (`None`: uniform).
    pub cloud_cover_pct: Option<Vec<f64>>,
    /// The nodes' coordinates of a [`SourceCrs::Curvilinear`] grid (`None` otherwise).
    pub curvilinear: Option<Curvilinear>,
}

/// The (u, v) of every DEM column (row 0 north, column order), in the DEM grid's axes, by the
/// rules of the module docs.
pub fn regrid(plan: &GridSpec, g: &InitGrid) -> Result<Vec<(f64, f64)>, GeofieldError> {
    check(g)?;
    Ok(sample(plan, g, [&g.u, &g.v], "wind")?
        .into_iter()
        .map(|([u, v], turn)| {
            let (s, co) = turn.sin_cos();
            (u * co + v * s, v * co - u * s)
        })
        .collect())
}

/// The air temperature and cloud cover of `g` at every DEM column (bilinear, as the wind;
/// `None` where the grid has none).
pub fn weather_columns(
    plan: &GridSpec,
    g: &InitGrid,
) -> Result<super::diurnal::ColumnWeather, GeofieldError> {
    check(g)?;
    let checked = |f: &Option<Vec<f64>>, what: &str| -> Result<(), GeofieldError> {
        match f {
            Some(f) if f.len() != g.u.len() => Err(GeofieldError::Invalid(format!(
                "{}: the {what} holds {} values, the wind {}",
                g.source,
                f.len(),
                g.u.len()
            ))),
            _ => Ok(()),
        }
    };
    checked(&g.air_temp_c, "air temperature")?;
    checked(&g.cloud_cover_pct, "cloud cover")?;
    let (t, c) = (g.air_temp_c.as_deref(), g.cloud_cover_pct.as_deref());
    let (Some(first), what) = (match (t, c) {
        (Some(t), Some(_)) => (Some(t), "air temperature or cloud cover"),
        (Some(t), None) => (Some(t), "air temperature"),
        (None, c) => (c, "cloud cover"),
    }) else {
        return Ok(Default::default());
    };
    // Both fields in one pass: each column placed (and projected) once.
    let both = sample(plan, g, [t.unwrap_or(first), c.unwrap_or(first)], what)?;
    let pick = |k: usize| both.iter().map(|(v, _)| v[k]).collect();
    Ok(super::diurnal::ColumnWeather {
        air_temp_c: t.map(|_| pick(0)),
        cloud_cover_pct: c.map(|_| pick(1)),
    })
}

/// Two fields of `g` interpolated bilinearly at every DEM column (module docs), with the turn
/// of the column's vectors; `what` names the fields in errors.
fn sample(
    plan: &GridSpec,
    g: &InitGrid,
    fields: [&[f64]; 2],
    what: &str,
) -> Result<Vec<([f64; 2], f64)>, GeofieldError> {
    let place = placement(plan, g)?;
    let geographic = matches!(g.crs, SourceCrs::LonLat { .. });
    let xa = Axis::new(&g.x, geographic);
    let ya = Axis::new(&g.y, false);
    let nx = g.x.len();
    (0..plan.rows * plan.cols)
        .into_par_iter()
        .map(|c| {
            let (x, y, turn) = place(c)?;
            let outside = || {
                GeofieldError::Invalid(format!(
                    "{}: the DEM column at row {}, col {} lies at ({x:.6}, {y:.6}) in the grid's \
                     coordinates, outside its nodes (x {:.6}..{:.6}, y {:.6}..{:.6}); the gridded \
                     wind must cover the whole DEM",
                    g.source,
                    c / plan.cols,
                    c % plan.cols,
                    xa.lo,
                    xa.hi,
                    ya.lo,
                    ya.hi
                ))
            };
            let (i0, i1, tx) = xa.locate(x).ok_or_else(outside)?;
            let (j0, j1, ty) = ya.locate(y).ok_or_else(outside)?;
            let mut uv = [0.0f64; 2];
            for (out, field) in uv.iter_mut().zip(fields) {
                let mut acc = 0.0;
                for (j, wy) in [(j0, 1.0 - ty), (j1, ty)] {
                    for (i, wx) in [(i0, 1.0 - tx), (i1, tx)] {
                        let w = wx * wy;
                        if w == 0.0 {
                            continue;
                        }
                        let val = field[j * nx + i];
                        if !val.is_finite() {
                            return Err(GeofieldError::Invalid(format!(
                                "{}: the {what} at node (x {}, y {}) is missing, and the DEM \
                                 column at row {}, col {} needs it",
                                g.source,
                                g.x[i],
                                g.y[j],
                                c / plan.cols,
                                c % plan.cols
                            )));
                        }
                        acc += w * val;
                    }
                }
                *out = acc;
            }
            Ok((uv, turn))
        })
        .collect::<Vec<_>>()
        // The first column in order that fails, whatever the threads' timing.
        .into_iter()
        .collect()
}

/// The first guess's sources from a gridded wind: each column holds the regridded wind with
/// one profile, the options' default class at the grid's height (one station in every column).
pub(super) fn sources(
    grid: &super::grid::WindGrid,
    g: &InitGrid,
    opts: &super::params::WindOptions,
) -> Result<super::init::Sources, GeofieldError> {
    let uv = regrid(&grid.plan, g)?;
    let n = uv.len().max(1) as f64;
    let mean_speed_m_per_s = uv.iter().map(|(u, v)| u.hypot(*v)).sum::<f64>() / n;
    Ok(super::init::Sources {
        columns: uv
            .into_iter()
            .map(|(u, v)| (vec![(0, u, v)], 1.0))
            .collect(),
        profiles: vec![(opts.default_stability, g.height_agl_m)],
        stability: vec![opts.default_stability; grid.rows() * grid.cols()],
        used: Vec::new(),
        ignored: Vec::new(),
        domain_class: opts.default_stability,
        mean_speed_m_per_s,
        mean_height_m: g.height_agl_m,
    })
}

/// The grid's own checks: shapes, monotonic finite axes, height, plausible speeds.
fn check(g: &InitGrid) -> Result<(), GeofieldError> {
    let bad = |m: String| Err(GeofieldError::Invalid(format!("{}: {m}", g.source)));
    let (nx, ny) = (g.x.len(), g.y.len());
    if nx < 2 || ny < 2 {
        return bad(format!(
            "a gridded wind needs at least 2 x 2 nodes, got {nx} x {ny}"
        ));
    }
    if g.u.len() != nx * ny || g.v.len() != nx * ny {
        return bad(format!(
            "u and v must hold {ny} x {nx} values, got {} and {}",
            g.u.len(),
            g.v.len()
        ));
    }
    for (name, a) in [("x", &g.x), ("y", &g.y)] {
        let up = a[1] > a[0];
        let ok = a.iter().all(|v| v.is_finite())
            && a.windows(2)
                .all(|w| if up { w[1] > w[0] } else { w[1] < w[0] });
        if !ok {
            return bad(format!(
                "the {name} coordinates must be finite and strictly increasing or decreasing"
            ));
        }
    }
    match (&g.crs, &g.curvilinear) {
        (SourceCrs::Curvilinear { .. }, Some(c)) => {
            super::curvilinear::check(c, nx, ny).or_else(bad)?
        }
        (SourceCrs::Curvilinear { .. }, None) => {
            return bad("a curvilinear grid needs its nodes' longitudes and latitudes".into());
        }
        _ => {}
    }
    if !(g.height_agl_m.is_finite() && g.height_agl_m > 0.0) {
        return bad(format!(
            "the wind's height above the ground must be a positive number of metres, got {}",
            g.height_agl_m
        ));
    }
    let top = super::init::MAX_STATION_SPEED_M_PER_S;
    if let Some(s) =
        g.u.iter()
            .zip(&g.v)
            .map(|(u, v)| u.hypot(*v))
            .find(|s| s.is_finite() && *s >= top)
    {
        return bad(format!(
            "a wind speed of {s} m/s: the model treats air as incompressible, which holds far \
             below the speed of sound ({top} m/s)"
        ));
    }
    Ok(())
}

/// A monotonic axis, possibly a periodic longitude.
struct Axis<'a> {
    v: &'a [f64],
    up: bool,
    lo: f64,
    hi: f64,
    /// A longitude axis (degrees).
    longitude: bool,
    /// The period (360) of a longitude axis covering the globe.
    period: Option<f64>,
}

impl<'a> Axis<'a> {
    fn new(v: &'a [f64], longitude: bool) -> Self {
        let (first, last) = (v[0], v[v.len() - 1]);
        let (lo, hi) = (first.min(last), first.max(last));
        let step = (hi - lo) / (v.len() - 1) as f64;
        // A globe-spanning axis: its span plus one step is 360° (to a hundredth of a step).
        let period = (longitude && ((hi - lo + step) - 360.0).abs() < 0.01 * step).then_some(360.0);
        Self {
            v,
            up: last > first,
            lo,
            hi,
            longitude,
            period,
        }
    }

    /// The nodes (i0, i1) around `q` and the weight t of i1, or `None` outside.
    fn locate(&self, q: f64) -> Option<(usize, usize, f64)> {
        let n = self.v.len();
        let mut q = q;
        if self.longitude && !(self.lo..=self.hi).contains(&q) {
            // Shift by 360° into [lo, lo + 360).
            q = self.lo + (q - self.lo).rem_euclid(360.0);
        }
        if q > self.hi {
            // Between the last node and the first one again (periodic axes only).
            self.period?;
            let (a, b) = if self.up { (n - 1, 0) } else { (0, n - 1) };
            let gap = self.lo + 360.0 - self.hi;
            return Some((a, b, (q - self.hi) / gap));
        }
        if q.is_nan() || q < self.lo {
            return None;
        }
        // The first node index whose value passes q, in the axis's own direction.
        let k = if self.up {
            self.v.partition_point(|&a| a <= q)
        } else {
            self.v.partition_point(|&a| a >= q)
        };
        let i1 = k.clamp(1, n - 1);
        let i0 = i1 - 1;
        let t = (q - self.v[i0]) / (self.v[i1] - self.v[i0]);
        Some((i0, i1, t.clamp(0.0, 1.0)))
    }
}

type Place<'a> = Box<dyn Fn(usize) -> Result<(f64, f64, f64), GeofieldError> + Sync + 'a>;

/// Column index → (x, y) in the source's coordinates and the turn τ (radians, clockwise) of its
/// vectors (module docs).
fn placement<'a>(plan: &'a GridSpec, g: &'a InitGrid) -> Result<Place<'a>, GeofieldError> {
    let centre = move |c: usize| plan.cell_centre(c / plan.cols, c % plan.cols);
    match g.crs {
        SourceCrs::Same => Ok(Box::new(move |c| {
            let (x, y) = centre(c);
            Ok((x, y, 0.0))
        })),
        #[cfg(feature = "io")]
        SourceCrs::LonLat { dem_epsg } => {
            let dem = unprojection(dem_epsg)?;
            Ok(Box::new(move |c| {
                let (x, y) = centre(c);
                let (lon, lat) = lonlat(&dem, x, y)?;
                let beta_d = bearing(&dem, x, y, (lon, lat))?;
                Ok((lon, lat, -beta_d))
            }))
        }
        #[cfg(feature = "io")]
        SourceCrs::Epsg { epsg, dem_epsg } => {
            use geofield_io::project::{Datum, Projection};
            let dem = unprojection(dem_epsg)?;
            let src = unprojection(epsg)?;
            let to_src = Projection::new(Datum::Wgs84, epsg)
                .map_err(|e| GeofieldError::Invalid(e.to_string()))?;
            Ok(Box::new(move |c| {
                let (x, y) = centre(c);
                let (lon, lat) = lonlat(&dem, x, y)?;
                let (xs, ys) = to_src
                    .xy(lon, lat)
                    .map_err(|e| GeofieldError::Invalid(e.to_string()))?;
                let beta_s = bearing(&src, xs, ys, (lon, lat))?;
                let beta_d = bearing(&dem, x, y, (lon, lat))?;
                Ok((xs, ys, beta_s - beta_d))
            }))
        }
        #[cfg(feature = "io")]
        SourceCrs::Curvilinear { dem_epsg } => curvilinear_placement(plan, g, dem_epsg),
        #[cfg(not(feature = "io"))]
        _ => Err(GeofieldError::Unsupported(
            "a gridded wind in another CRS needs geofield's `io` feature (projections)".into(),
        )),
    }
}

/// [`placement`] on a curvilinear grid: every column located once (rows in parallel, each
/// column starting from the one before it), then looked up.
#[cfg(feature = "io")]
fn curvilinear_placement<'a>(
    plan: &'a GridSpec,
    g: &'a InitGrid,
    dem_epsg: u16,
) -> Result<Place<'a>, GeofieldError> {
    let Some(cv) = g.curvilinear.as_ref() else {
        return Err(GeofieldError::Invalid(format!(
            "{}: a curvilinear grid needs its nodes' longitudes and latitudes",
            g.source
        )));
    };
    let dem = unprojection(dem_epsg)?;
    let loc = super::curvilinear::Locator::new(cv, g.x.len(), g.y.len());
    // Each row up to its first failure (the first in column order is the one reported; the
    // rest of a row is not searched, so a DEM outside the grid fails fast).
    type Row = (Vec<(f64, f64, f64)>, Option<String>);
    let rows: Vec<Row> = (0..plan.rows)
        .into_par_iter()
        .map(|r| {
            let mut start = loc.centre();
            let mut out = Vec::with_capacity(plan.cols);
            for c in 0..plan.cols {
                let (x, y) = plan.cell_centre(r, c);
                let placed = lonlat(&dem, x, y).and_then(|(lon, lat)| {
                    let beta_d = bearing(&dem, x, y, (lon, lat))?;
                    let (p, q) = loc.locate(lon, lat, start).ok_or_else(|| {
                        GeofieldError::Invalid(format!(
                            "{}: the DEM column at row {r}, col {c} (longitude {lon:.6}, \
                             latitude {lat:.6}) lies outside the curvilinear grid's nodes; the \
                             gridded wind must cover the whole DEM",
                            g.source
                        ))
                    })?;
                    let beta_s = if cv.grid_relative {
                        loc.north_bearing(p, q)
                    } else {
                        0.0
                    };
                    Ok((p, q, beta_s - beta_d))
                });
                match placed {
                    Ok(v) => {
                        start = (v.0, v.1);
                        out.push(v);
                    }
                    Err(e) => return (out, Some(e.to_string())),
                }
            }
            (out, None)
        })
        .collect();
    let cols = plan.cols;
    Ok(Box::new(move |c| {
        let (row, failed) = &rows[c / cols];
        match row.get(c % cols) {
            Some(&v) => Ok(v),
            None => Err(GeofieldError::Invalid(
                failed
                    .clone()
                    .unwrap_or_else(|| "a column was not placed".into()),
            )),
        }
    }))
}

#[cfg(feature = "io")]
fn unprojection(epsg: u16) -> Result<geofield_io::project::Unprojection, GeofieldError> {
    geofield_io::project::Unprojection::new(epsg).map_err(|e| GeofieldError::Invalid(e.to_string()))
}

#[cfg(feature = "io")]
fn lonlat(
    u: &geofield_io::project::Unprojection,
    x: f64,
    y: f64,
) -> Result<(f64, f64), GeofieldError> {
    u.lonlat(x, y)
        .map_err(|e| GeofieldError::Invalid(e.to_string()))
}

/// The bearing (radians, clockwise from true north) of the +y direction of the projected CRS
/// `epsg` at its point (x, y): module docs.
#[cfg(feature = "io")]
pub fn grid_north_bearing(x: f64, y: f64, epsg: u16) -> Result<f64, GeofieldError> {
    let u = unprojection(epsg)?;
    bearing(&u, x, y, lonlat(&u, x, y)?)
}

/// The wind (u east, v north) at (x, y) of the projected CRS `epsg` on that grid's axes: turned
/// by −β, β the bearing of the grid's north there ([`grid_north_bearing`]), as
/// [`regrid`] turns a longitude/latitude grid's winds.
#[cfg(feature = "io")]
pub fn true_to_grid(
    (u, v): (f64, f64),
    x: f64,
    y: f64,
    epsg: u16,
) -> Result<(f64, f64), GeofieldError> {
    let (s, c) = (-grid_north_bearing(x, y, epsg)?).sin_cos();
    Ok((u * c + v * s, v * c - u * s))
}

/// Without projections (no `io` feature) a true-north direction cannot be turned.
#[cfg(not(feature = "io"))]
pub fn true_to_grid(_: (f64, f64), _: f64, _: f64, _: u16) -> Result<(f64, f64), GeofieldError> {
    Err(GeofieldError::Unsupported(
        "turning true-north directions to a grid's north needs geofield's `io` feature".into(),
    ))
}

/// [`grid_north_bearing`] with the inverse projection `u` and the point's (lon, lat) known.
#[cfg(feature = "io")]
fn bearing(
    u: &geofield_io::project::Unprojection,
    x: f64,
    y: f64,
    (lon0, lat0): (f64, f64),
) -> Result<f64, GeofieldError> {
    const DELTA_M: f64 = 1.0;
    let (lon1, lat1) = lonlat(u, x, y + DELTA_M)?;
    let dlon = ((lon1 - lon0 + 540.0).rem_euclid(360.0) - 180.0).to_radians();
    let dlat = (lat1 - lat0).to_radians();
    let phi = (0.5 * (lat0 + lat1)).to_radians();
    // WGS 84: e² = f(2 − f); N/M = (1 − e² sin²φ)/(1 − e²), so atan2 needs only that ratio.
    let f = 1.0 / 298.257_223_563;
    let e2 = f * (2.0 - f);
    let n_over_m = (1.0 - e2 * phi.sin().powi(2)) / (1.0 - e2);
    Ok((n_over_m * phi.cos() * dlon).atan2(dlat))
}

#[cfg(test)]
#[path = "gridded_tests.rs"]
mod tests;
