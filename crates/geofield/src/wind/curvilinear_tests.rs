//! Tests of curvilinear source grids ([`super`]) on a WRF-like Lambert conformal grid built
//! here from the spherical projection's own formulas (Snyder 1987, eqs. 15-1 to 15-11, the
//! sphere of radius 6370 km that WRF uses): a column is placed where the projection puts it,
//! grid-relative winds turn by the projection's rotation n (λ − λ₀), and columns outside the
//! grid are refused by name.

#![allow(clippy::unwrap_used)]

use super::*;
use crate::wind::gridded::{InitGrid, SourceCrs, grid_north_bearing, regrid};
use geofield_core::GridSpec;

/// WRF's spherical Lambert conformal conic (secant, true latitudes 30° and 60°, standard
/// longitude 98° W): forward and inverse, in metres.
pub(crate) struct Lcc {
    n: f64,
    rf: f64,
    rho0: f64,
    lon0: f64,
}

const R_EARTH_M: f64 = 6_370_000.0;

impl Lcc {
    pub(crate) fn wrf() -> Self {
        let (p1, p2) = (30f64.to_radians(), 60f64.to_radians());
        let t = |p: f64| (std::f64::consts::FRAC_PI_4 + p / 2.0).tan();
        let n = (p1.cos() / p2.cos()).ln() / (t(p2) / t(p1)).ln();
        let rf = R_EARTH_M * p1.cos() * t(p1).powf(n) / n;
        // Origin latitude 45° N (only shifts y).
        let rho0 = rf / t(45f64.to_radians()).powf(n);
        Self {
            n,
            rf,
            rho0,
            lon0: -98.0,
        }
    }

    pub(crate) fn xy(&self, lon: f64, lat: f64) -> (f64, f64) {
        let t = (std::f64::consts::FRAC_PI_4 + lat.to_radians() / 2.0).tan();
        let rho = self.rf / t.powf(self.n);
        let th = self.n * (lon - self.lon0).to_radians();
        (rho * th.sin(), self.rho0 - rho * th.cos())
    }

    pub(crate) fn lonlat(&self, x: f64, y: f64) -> (f64, f64) {
        let rho = x.hypot(self.rho0 - y);
        let th = x.atan2(self.rho0 - y);
        let lat = 2.0 * (self.rf / rho).powf(1.0 / self.n).atan() - std::f64::consts::FRAC_PI_2;
        (self.lon0 + (th / self.n).to_degrees(), lat.to_degrees())
    }

    /// The bearing of the grid's +y at `lon`: the rotation n (λ − λ₀) (east of λ₀ the
    /// projection's north leans west, so the grid's y leans east of north).
    pub(crate) fn rotation(&self, lon: f64) -> f64 {
        self.n * (lon - self.lon0).to_radians()
    }
}

/// A WRF-like grid of `nx` × `ny` mass points `dx` apart, centred at (lon_c, lat_c): the
/// projection, the first node's (x, y), and every node's (lon, lat), `[q * nx + p]`.
pub(crate) fn wrf_nodes(
    nx: usize,
    ny: usize,
    dx: f64,
    (lon_c, lat_c): (f64, f64),
) -> (Lcc, (f64, f64), Vec<f64>, Vec<f64>) {
    let lcc = Lcc::wrf();
    let (xc, yc) = lcc.xy(lon_c, lat_c);
    let x0 = xc - 0.5 * (nx - 1) as f64 * dx;
    let y0 = yc - 0.5 * (ny - 1) as f64 * dx;
    let (mut lon, mut lat) = (Vec::new(), Vec::new());
    for q in 0..ny {
        for p in 0..nx {
            let (a, b) = lcc.lonlat(x0 + p as f64 * dx, y0 + q as f64 * dx);
            lon.push(a);
            lat.push(b);
        }
    }
    (lcc, (x0, y0), lon, lat)
}

const EPSG: u16 = 32611;
const NX: usize = 30;
const NY: usize = 24;
const DX: f64 = 4000.0;

/// A DEM of 20 × 16 cells of 2 km on UTM zone 11N around 119° W, 45° N: inside the grid.
fn dem() -> GridSpec {
    let (x, y) = geofield_io::project::project_lonlat(
        geofield_io::project::Datum::Wgs84,
        -119.0,
        45.0,
        EPSG,
    )
    .unwrap();
    GridSpec {
        x_min_m: x - 20_000.0,
        y_max_m: y + 16_000.0,
        cell_size_m: 2000.0,
        cols: 20,
        rows: 16,
    }
}

fn grid(u: Vec<f64>, v: Vec<f64>, lon: Vec<f64>, lat: Vec<f64>, grid_relative: bool) -> InitGrid {
    InitGrid {
        x: (0..NX).map(|i| i as f64).collect(),
        y: (0..NY).map(|j| j as f64).collect(),
        u,
        v,
        height_agl_m: 10.0,
        crs: SourceCrs::Curvilinear { dem_epsg: EPSG },
        source: "wrf-like grid".into(),
        air_temp_c: None,
        cloud_cover_pct: None,
        curvilinear: Some(Curvilinear {
            lon,
            lat,
            grid_relative,
        }),
    }
}

/// (u, v) turned clockwise by `tau` radians, as [`regrid`] turns vectors.
fn turn((u, v): (f64, f64), tau: f64) -> (f64, f64) {
    let (s, c) = tau.sin_cos();
    (u * c + v * s, v * c - u * s)
}

/// A field linear in the node indices, u = 1 + 0.1 p − 0.05 q, v = −2 + 0.03 p + 0.2 q,
/// earth-relative: each column gets the field at the (p, q) where the projection itself puts
/// its longitude and latitude, turned by the DEM's grid north.
///
/// Tolerance: bilinear interpolation of the nodes' longitudes and latitudes misplaces a point
/// by at most the interpolation error at a cell's middle (the error of interpolating a smooth
/// function, s(1 − s)-shaped, peaks there): measured here against the exact inverse at every
/// cell's centre and converted to cells, times the field's gradient (0.21 per cell) and 2 for
/// safety; plus 1e-12 of rounding.
#[test]
fn columns_sit_where_the_projection_puts_them() {
    let (lcc, (x0, y0), lon, lat) = wrf_nodes(NX, NY, DX, (-119.0, 45.0));
    let lin = |p: f64, q: f64| (1.0 + 0.1 * p - 0.05 * q, -2.0 + 0.03 * p + 0.2 * q);
    let (mut u, mut v) = (Vec::new(), Vec::new());
    for q in 0..NY {
        for p in 0..NX {
            let (a, b) = lin(p as f64, q as f64);
            u.push(a);
            v.push(b);
        }
    }
    // The misplacement bound, in cells.
    let mut worst: f64 = 0.0;
    for q in 0..NY - 1 {
        for p in 0..NX - 1 {
            let k = q * NX + p;
            let corners = [k, k + 1, k + NX, k + NX + 1];
            let mean = |f: &[f64]| corners.iter().map(|&c| f[c]).sum::<f64>() / 4.0;
            let (xm, ym) = lcc.xy(mean(&lon), mean(&lat));
            let (pm, qm) = ((xm - x0) / DX, (ym - y0) / DX);
            worst = worst.max((pm - p as f64 - 0.5).hypot(qm - q as f64 - 0.5));
        }
    }
    assert!(
        worst < 1e-3,
        "bilinear coordinates misplace by {worst} cells"
    );
    let tol = 2.0 * 0.21 * worst + 1e-12;
    let g = grid(u, v, lon, lat, false);
    let plan = dem();
    let uv = regrid(&plan, &g).unwrap();
    for (c, got) in uv.iter().enumerate() {
        let (x, y) = plan.cell_centre(c / plan.cols, c % plan.cols);
        let (lo, la) = geofield_io::project::unproject_to_lonlat(x, y, EPSG).unwrap();
        let (xs, ys) = lcc.xy(lo, la);
        let want = lin((xs - x0) / DX, (ys - y0) / DX);
        let want = turn(want, -grid_north_bearing(x, y, EPSG).unwrap());
        assert!(
            (got.0 - want.0).abs() < tol && (got.1 - want.1).abs() < tol,
            "column {c}: {got:?} against {want:?} (tolerance {tol})"
        );
    }
}

/// WRF's grid-relative winds: a uniform earth wind (3 m/s east, 4 m/s north) written in each
/// node's grid components (turned by −n (λ − λ₀)) comes back as that earth wind on the DEM's
/// axes. About 15° of rotation at 119° W.
///
/// Tolerance: the grid's turn is measured from the interpolated coordinates across one cell, so
/// it may differ from the exact rotation at the point by half the rotation's change over a cell
/// (measured here from the nodes); times the 5 m/s speed, plus the bilinear interpolation of
/// the components (their second difference over a cell, under 1e-6 m/s here) and rounding.
#[test]
fn grid_relative_winds_turn_by_the_grid_rotation() {
    let (lcc, _, lon, lat) = wrf_nodes(NX, NY, DX, (-119.0, 45.0));
    let (ue, ve) = (3.0, 4.0);
    let (mut u, mut v) = (Vec::new(), Vec::new());
    for &l in &lon {
        // Earth components seen from the grid's axes: turned by −α.
        let (a, b) = turn((ue, ve), -lcc.rotation(l));
        u.push(a);
        v.push(b);
    }
    assert!(
        lcc.rotation(-119.0) < -0.2,
        "the test needs a large rotation"
    );
    let mut change: f64 = 0.0;
    for q in 0..NY - 1 {
        for p in 0..NX - 1 {
            let k = q * NX + p;
            for n in [k + 1, k + NX] {
                change = change.max((lcc.rotation(lon[n]) - lcc.rotation(lon[k])).abs());
            }
        }
    }
    let tol = 0.5 * change * 5.0 + 1e-6;
    let g = grid(u, v, lon, lat, true);
    let plan = dem();
    for (c, got) in regrid(&plan, &g).unwrap().iter().enumerate() {
        let (x, y) = plan.cell_centre(c / plan.cols, c % plan.cols);
        let want = turn((ue, ve), -grid_north_bearing(x, y, EPSG).unwrap());
        assert!(
            (got.0 - want.0).abs() < tol && (got.1 - want.1).abs() < tol,
            "column {c}: {got:?} against {want:?} (tolerance {tol})"
        );
    }
    // Read as earth-relative, the same components would be off by the ~15° rotation.
    let mut wrong = g.clone();
    wrong.curvilinear.as_mut().unwrap().grid_relative = false;
    let (x, y) = plan.cell_centre(0, 0);
    let want = turn((ue, ve), -grid_north_bearing(x, y, EPSG).unwrap());
    let got = regrid(&plan, &wrong).unwrap()[0];
    assert!((got.0 - want.0).hypot(got.1 - want.1) > 1.0, "{got:?}");
}

/// A DEM reaching past the grid is refused, naming the first column outside and its place.
#[test]
fn columns_outside_the_grid_are_refused() {
    let (_, _, lon, lat) = wrf_nodes(NX, NY, DX, (-119.0, 45.0));
    let g = grid(vec![1.0; NX * NY], vec![0.0; NX * NY], lon, lat, false);
    let mut plan = dem();
    // The grid spans 116 km east-west; 120 km of DEM east of its centre cannot fit.
    plan.cols = 60;
    let e = regrid(&plan, &g).unwrap_err().to_string();
    assert!(
        e.contains("wrf-like grid")
            && e.contains("outside the curvilinear grid")
            && e.contains("col"),
        "{e}"
    );
    // Coordinates that are not coordinates.
    let mut bad = g.clone();
    bad.curvilinear.as_mut().unwrap().lat[7] = 91.0;
    let e = regrid(&dem(), &bad).unwrap_err().to_string();
    assert!(e.contains("x index 7") && e.contains("latitude 91"), "{e}");
}

/// Locating is Newton's method on the piecewise-bilinear map: from any start inside, the
/// nodes themselves come back at their indices (to 1e-9 of a cell: Newton's tolerance is
/// 1e-11 and the residual check 1e-9°, a millionth of a 4 km cell's 0.05°).
#[test]
fn nodes_are_found_at_their_indices() {
    let (_, _, lon, lat) = wrf_nodes(NX, NY, DX, (-119.0, 45.0));
    let c = Curvilinear {
        lon: lon.clone(),
        lat: lat.clone(),
        grid_relative: false,
    };
    let loc = Locator::new(&c, NX, NY);
    for k in (0..NX * NY).step_by(7) {
        for start in [loc.centre(), (0.0, 0.0), ((NX - 1) as f64, (NY - 1) as f64)] {
            let (p, q) = loc.locate(lon[k], lat[k], start).unwrap();
            assert!(
                (p - (k % NX) as f64).abs() < 1e-9 && (q - (k / NX) as f64).abs() < 1e-9,
                "node {k} from {start:?}: ({p}, {q})"
            );
        }
    }
    assert!(loc.locate(-140.0, 45.0, loc.centre()).is_none());
    assert!(loc.locate(f64::NAN, 45.0, loc.centre()).is_none());
}
