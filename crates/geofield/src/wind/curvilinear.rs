//! Curvilinear source grids for the gridded initialisation ([`super::gridded`]): a grid whose
//! every node has its own longitude and latitude (WRF's `XLONG`/`XLAT` on its Lambert
//! conformal, polar stereographic, Mercator or rotated-pole grids; CF's 2-D auxiliary
//! `lon`/`lat` coordinates), read without regridding it first.
//!
//! # Placing a DEM column
//!
//! The grid's own axes are its node indices: p along x (0 … nx − 1) and q along y. Between
//! nodes, longitude and latitude are interpolated bilinearly in (p, q), the same rule as the
//! wind's, so a column at (λ, φ) sits at the (p, q) where the interpolated (λ, φ) equals its
//! own. That point is found by Newton's method on the piecewise-bilinear map, in local plane
//! coordinates ((λ − λ₀) cos φ₀, φ − φ₀) so that both components weigh alike, starting from
//! the previous column of the same DEM row (the grid's centre for a row's first column, and its
//! nearest node when that fails). A column whose solution lies outside the nodes is an error,
//! as on rectilinear grids.
//!
//! How far the bilinear (λ, φ) may be from the projection that made the grid: half a cell's
//! second difference, at most (a grid line's sagitta over one cell: about 0.3 m for WRF's 4 km
//! cells at mid-latitudes), which places a column to well under a thousandth of a cell.
//!
//! # Turning the vectors
//!
//! - Earth-relative winds (CF `eastward_wind`/`northward_wind`): as for longitude/latitude
//!   grids, they turn by −β_D, the bearing of the DEM grid's north.
//! - Grid-relative winds (WRF's `U10`/`V10`; CF `x_wind`/`y_wind`): the bearing β_S of the
//!   grid's +q direction at the column, clockwise from true north, is measured from the
//!   interpolated node coordinates, β_S = atan2(cos φ ∂λ/∂q, ∂φ/∂q) on the sphere (WRF's
//!   earth; on its conformal grids ±p and ±q are perpendicular, so one direction gives the
//!   grid's turn). For WRF's Lambert grid this is its rotation angle n (λ − λ_c), the angle of
//!   its `COSALPHA`/`SINALPHA`, found here from the coordinates alone. The vectors then turn by
//!   β_S − β_D, as for a projected grid.

/// The longitude and latitude (degrees) of every node of a curvilinear grid, `lon[q * nx + p]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Curvilinear {
    pub lon: Vec<f64>,
    pub lat: Vec<f64>,
    /// Whether u and v are along the grid's axes (WRF) rather than east and north.
    pub grid_relative: bool,
}

/// Finds where longitudes and latitudes sit in a curvilinear grid's index space.
pub(super) struct Locator<'a> {
    lon: &'a [f64],
    lat: &'a [f64],
    nx: usize,
    ny: usize,
}

/// `a − b` in degrees of longitude, wrapped into [−180, 180).
fn dlon(a: f64, b: f64) -> f64 {
    (a - b + 540.0).rem_euclid(360.0) - 180.0
}

/// Newton's steps before a start is given up.
const MAX_STEPS: usize = 60;
/// A solution inside the nodes to this fraction of a cell is inside.
const EDGE: f64 = 1e-9;
/// A converged point's residual (degrees; 1e-9° is 0.1 mm, far above Newton's rounding of
/// about 1e-13° and far below any weather model's cell).
const RESIDUAL_DEG: f64 = 1e-9;

impl<'a> Locator<'a> {
    pub(super) fn new(c: &'a Curvilinear, nx: usize, ny: usize) -> Self {
        Self {
            lon: &c.lon,
            lat: &c.lat,
            nx,
            ny,
        }
    }

    /// The grid's centre in index space, a start for Newton's method.
    pub(super) fn centre(&self) -> (f64, f64) {
        (0.5 * (self.nx - 1) as f64, 0.5 * (self.ny - 1) as f64)
    }

    /// The cell (i, j) used at (p, q), and the position (s, t) within it (outside [0, 1] only
    /// beyond the grid's edges).
    fn cell(&self, p: f64, q: f64) -> (usize, usize, f64, f64) {
        let i = (p.floor().max(0.0) as usize).min(self.nx - 2);
        let j = (q.floor().max(0.0) as usize).min(self.ny - 2);
        (i, j, p - i as f64, q - j as f64)
    }

    /// The four corners' values of `f` in cell (i, j): (00, 10, 01, 11).
    fn corners(&self, i: usize, j: usize, f: impl Fn(usize) -> f64) -> [f64; 4] {
        let k = j * self.nx + i;
        [f(k), f(k + 1), f(k + self.nx), f(k + self.nx + 1)]
    }

    /// Bilinear value and its derivatives (∂/∂s, ∂/∂t) from corners `c` at (s, t).
    fn bilinear(c: [f64; 4], s: f64, t: f64) -> (f64, f64, f64) {
        let v = c[0] * (1.0 - s) * (1.0 - t)
            + c[1] * s * (1.0 - t)
            + c[2] * (1.0 - s) * t
            + c[3] * s * t;
        let ds = (c[1] - c[0]) * (1.0 - t) + (c[3] - c[2]) * t;
        let dt = (c[2] - c[0]) * (1.0 - s) + (c[3] - c[1]) * s;
        (v, ds, dt)
    }

    /// The (p, q) whose interpolated coordinates are (lon, lat), from `start`; `None` when it
    /// lies outside the nodes.
    pub(super) fn locate(&self, lon: f64, lat: f64, start: (f64, f64)) -> Option<(f64, f64)> {
        if !(lon.is_finite() && lat.is_finite()) {
            return None;
        }
        self.newton(lon, lat, start)
            .or_else(|| self.newton(lon, lat, self.nearest(lon, lat)))
            .filter(|&(p, q)| {
                (-EDGE..=(self.nx - 1) as f64 + EDGE).contains(&p)
                    && (-EDGE..=(self.ny - 1) as f64 + EDGE).contains(&q)
            })
            .map(|(p, q)| {
                (
                    p.clamp(0.0, (self.nx - 1) as f64),
                    q.clamp(0.0, (self.ny - 1) as f64),
                )
            })
    }

    fn newton(&self, lon: f64, lat: f64, (mut p, mut q): (f64, f64)) -> Option<(f64, f64)> {
        let k = lat.to_radians().cos();
        // Steps stay within a cell's width beyond the nodes: the map is only extrapolated there.
        let (pmax, qmax) = (self.nx as f64, self.ny as f64);
        for _ in 0..MAX_STEPS {
            let (i, j, s, t) = self.cell(p, q);
            let cx = self.corners(i, j, |n| dlon(self.lon[n], lon) * k);
            let cy = self.corners(i, j, |n| self.lat[n] - lat);
            let (fx, xs, xt) = Self::bilinear(cx, s, t);
            let (fy, ys, yt) = Self::bilinear(cy, s, t);
            let det = xs * yt - xt * ys;
            if !(det.is_finite() && det.abs() > 0.0) {
                return None;
            }
            let dp = -(yt * fx - xt * fy) / det;
            let dq = -(xs * fy - ys * fx) / det;
            p = (p + dp).clamp(-1.0, pmax);
            q = (q + dq).clamp(-1.0, qmax);
            if dp.abs() < 1e-11 && dq.abs() < 1e-11 {
                // Converged: check the residual in the cell of the point itself (a solution on
                // a cell's edge belongs to both cells; the map is continuous there).
                return (self.residual(lon, lat, p, q) < RESIDUAL_DEG).then_some((p, q));
            }
        }
        None
    }

    /// |interpolated − wanted| at (p, q), in degrees of the local plane.
    fn residual(&self, lon: f64, lat: f64, p: f64, q: f64) -> f64 {
        let k = lat.to_radians().cos();
        let (i, j, s, t) = self.cell(p, q);
        let (fx, ..) = Self::bilinear(self.corners(i, j, |n| dlon(self.lon[n], lon) * k), s, t);
        let (fy, ..) = Self::bilinear(self.corners(i, j, |n| self.lat[n] - lat), s, t);
        fx.hypot(fy)
    }

    /// The node nearest to (lon, lat) in the local plane, as (p, q).
    fn nearest(&self, lon: f64, lat: f64) -> (f64, f64) {
        let k = lat.to_radians().cos();
        let best = (0..self.lon.len())
            .min_by(|&a, &b| {
                let d = |n: usize| {
                    let x = dlon(self.lon[n], lon) * k;
                    let y = self.lat[n] - lat;
                    x * x + y * y
                };
                d(a).total_cmp(&d(b))
            })
            .unwrap_or(0);
        ((best % self.nx) as f64, (best / self.nx) as f64)
    }

    /// The bearing (radians, clockwise from true north) of the grid's +q direction at (p, q),
    /// on the sphere (module docs).
    pub(super) fn north_bearing(&self, p: f64, q: f64) -> f64 {
        let (i, j, s, t) = self.cell(p, q);
        let lon0 = self.lon[j * self.nx + i];
        let cx = self.corners(i, j, |n| dlon(self.lon[n], lon0));
        let cy = self.corners(i, j, |n| self.lat[n]);
        let (_, _, dlon_dt) = Self::bilinear(cx, s, t);
        let (phi, _, dlat_dt) = Self::bilinear(cy, s, t);
        (phi.to_radians().cos() * dlon_dt).atan2(dlat_dt)
    }
}

/// The curvilinear grid's own checks: the coordinates' shapes and ranges.
pub(super) fn check(c: &Curvilinear, nx: usize, ny: usize) -> Result<(), String> {
    if c.lon.len() != nx * ny || c.lat.len() != nx * ny {
        return Err(format!(
            "the nodes' longitudes and latitudes must hold {ny} x {nx} values, got {} and {}",
            c.lon.len(),
            c.lat.len()
        ));
    }
    if let Some(k) = c
        .lon
        .iter()
        .zip(&c.lat)
        .position(|(lo, la)| !(lo.is_finite() && la.is_finite() && la.abs() <= 90.0))
    {
        return Err(format!(
            "node (x index {}, y index {}) has longitude {} and latitude {}: every node needs \
             finite coordinates, latitudes within ±90°",
            k % nx,
            k / nx,
            c.lon[k],
            c.lat[k]
        ));
    }
    Ok(())
}

#[cfg(test)]
#[path = "curvilinear_tests.rs"]
pub(crate) mod tests;
