//! Tests of the gridded initialisation ([`super`]): bilinear regridding is exact for a field
//! linear in x and y, a uniform grid gives the first guess of one station with the same wind,
//! longitude axes wrap and shift, vectors turn by the meridian convergence of an independent
//! formula, and bad grids are refused with the column or node named.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use super::*;
use crate::wind::grid::{Levels, WindGrid};
use crate::wind::{Profile, Station, WindOptions};

fn plan() -> GridSpec {
    GridSpec {
        x_min_m: 1000.0,
        y_max_m: 2000.0,
        cell_size_m: 50.0,
        cols: 12,
        rows: 10,
    }
}

/// A grid over x 900..1700 and y 1400..2100 (covers `plan()`), with `f(x, y) -> (u, v)`;
/// y decreasing (north first), as latitudes usually are.
fn grid_of(f: impl Fn(f64, f64) -> (f64, f64)) -> InitGrid {
    let x: Vec<f64> = (0..9).map(|i| 900.0 + 100.0 * i as f64).collect();
    let y: Vec<f64> = (0..8).map(|j| 2100.0 - 100.0 * j as f64).collect();
    let (mut u, mut v) = (Vec::new(), Vec::new());
    for &yy in &y {
        for &xx in &x {
            let (a, b) = f(xx, yy);
            u.push(a);
            v.push(b);
        }
    }
    InitGrid {
        x,
        y,
        u,
        v,
        height_agl_m: 10.0,
        crs: SourceCrs::Same,
        source: "test grid".into(),
        air_temp_c: None,
        cloud_cover_pct: None,
        curvilinear: None,
    }
}

/// Bilinear interpolation reproduces a field linear in x and y exactly (to rounding: the
/// values are O(10), so 1e-12 is thousands of ulps).
#[test]
fn bilinear_is_exact_for_linear_fields() {
    let lin = |x: f64, y: f64| (1.0 + 0.01 * x - 0.002 * y, -2.0 + 0.005 * x + 0.003 * y);
    let g = grid_of(lin);
    let p = plan();
    let uv = regrid(&p, &g).unwrap();
    for (c, (u, v)) in uv.iter().enumerate() {
        let (x, y) = p.cell_centre(c / p.cols, c % p.cols);
        let (eu, ev) = lin(x, y);
        assert!(
            (u - eu).abs() < 1e-12 && (v - ev).abs() < 1e-12,
            "{c}: {u} {v}"
        );
    }
}

/// A uniform gridded wind is one station's wind in every column: the first guess (cut cells,
/// log profile, rough terrain) is the one-station first guess to rounding (the station path
/// divides w·u by w: an ulp or so).
#[test]
fn uniform_grid_equals_one_station() {
    let p = plan();
    let terrain: Vec<f64> = (0..p.rows * p.cols)
        .map(|c| 100.0 + 30.0 * ((c % p.cols) as f64 * 0.7).sin() + 4.0 * (c / p.cols) as f64)
        .collect();
    let grid = WindGrid::new(p, terrain, &Levels::Uniform { nz: 12, dz_m: 10.0 })
        .unwrap()
        .with_cut_cells();
    let st = Station {
        id: "s".into(),
        x_m: 1200.0,
        y_m: 1800.0,
        height_agl_m: 10.0,
        speed_m_per_s: 6.0,
        direction_deg: 235.0,
        stability: None,
    };
    let (su, sv) = st.uv();
    let opts = WindOptions {
        profile: Profile::Log { roughness_m: 0.05 },
        ..WindOptions::default()
    };
    let coeffs = crate::wind::ops::Coeffs::new(&grid, 1.0, opts.top);
    let one = crate::wind::init::first_guess(&grid, &coeffs, &[st], &opts).unwrap();
    let gopts = WindOptions {
        init_grid: Some(Arc::new(grid_of(|_, _| (su, sv)))),
        ..opts.clone()
    };
    let gridded = crate::wind::init::first_guess(&grid, &coeffs, &[], &gopts).unwrap();
    for (a, b) in one
        .u
        .iter()
        .zip(&gridded.u)
        .chain(one.v.iter().zip(&gridded.v))
    {
        assert!((a - b).abs() <= 1e-14 * (1.0 + a.abs()), "{a} vs {b}");
    }
    assert!(one.u.iter().any(|&u| u.abs() > 1.0));
    assert!(gridded.used.is_empty());
    // Stations and a grid together are refused.
    let st2 = Station {
        id: "t".into(),
        x_m: 1200.0,
        y_m: 1800.0,
        height_agl_m: 10.0,
        speed_m_per_s: 1.0,
        direction_deg: 0.0,
        stability: None,
    };
    let e = crate::wind::init::first_guess(&grid, &coeffs, &[st2], &gopts).unwrap_err();
    assert!(e.to_string().contains("not both"), "{e}");
}

/// Longitudes: a 0..360 axis serves a query at −117° (shifted by 360°); a globe-spanning axis
/// interpolates across its seam (between 357.5° and 0°); a regional axis does not wrap.
#[test]
fn longitude_axes_shift_and_wrap() {
    let globe: Vec<f64> = (0..144).map(|i| 2.5 * i as f64).collect();
    let a = Axis::new(&globe, true);
    let (i0, i1, t) = a.locate(-117.0).unwrap();
    assert_eq!((globe[i0], globe[i1]), (242.5, 245.0));
    assert!((t - 0.2).abs() < 1e-12);
    let (i0, i1, t) = a.locate(358.75).unwrap();
    assert_eq!((i0, i1), (143, 0));
    assert!((t - 0.5).abs() < 1e-12);
    let (i0, i1, t) = a.locate(-1.25).unwrap();
    assert_eq!((i0, i1), (143, 0));
    assert!((t - 0.5).abs() < 1e-12);
    let region: Vec<f64> = (0..9).map(|i| -120.0 + 0.5 * i as f64).collect();
    let r = Axis::new(&region, true);
    assert!(r.locate(-121.0).is_none() && r.locate(-115.9).is_none());
    // 240.25° is −119.75° + 360°: shifted in, halfway between −120° and −119.5°.
    let (i0, i1, t) = r.locate(240.25).unwrap();
    assert_eq!((i0, i1), (0, 1));
    assert!((t - 0.5).abs() < 1e-9);
    assert!(r.locate(239.75).is_none(), "−120.25°: outside");
    // Decreasing axes (latitudes north first).
    let lat: Vec<f64> = (0..5).map(|j| 50.0 - j as f64).collect();
    let l = Axis::new(&lat, false);
    let (i0, i1, t) = l.locate(47.25).unwrap();
    assert_eq!((lat[i0], lat[i1]), (48.0, 47.0));
    assert!((t - 0.75).abs() < 1e-12);
    assert!(l.locate(50.5).is_none());
}

/// 119° W, 45° N in UTM zone 11N (EPSG:32611), 2° west of its central meridian.
fn utm11_at_119w() -> (f64, f64) {
    geofield_io::project::project_lonlat(geofield_io::project::Datum::Wgs84, -119.0, 45.0, 32611)
        .unwrap()
}

/// A northward wind on a longitude/latitude grid, seen on UTM zone 11N (central meridian
/// 117° W) about 2° west of the central meridian at 45° N: the DEM's grid north is turned by
/// the meridian convergence γ, which for the transverse Mercator projection is
/// atan(tan Δλ sin φ) on the sphere (Snyder 1987, eq. 8-11 with the ellipsoid's terms of order
/// e'² Δλ³, here below 1e-7 rad); the wind's components on the DEM grid are
/// (−5 sin γ, 5 cos γ). Tolerance: 1e-6 rad on the angle, covering the ellipsoid's terms and
/// the finite 1 m step of the bearing.
#[test]
fn lonlat_winds_turn_by_the_meridian_convergence() {
    let epsg = 32611;
    let (x0, y0) = utm11_at_119w();
    let p = GridSpec {
        x_min_m: x0 - 500.0,
        y_max_m: y0 + 500.0,
        cell_size_m: 250.0,
        cols: 4,
        rows: 4,
    };
    let lon: Vec<f64> = (0..6).map(|i| -119.1 + 0.04 * i as f64).collect();
    let lat: Vec<f64> = (0..6).map(|j| 45.1 - 0.04 * j as f64).collect();
    let g = InitGrid {
        x: lon,
        y: lat,
        u: vec![0.0; 36],
        v: vec![5.0; 36],
        height_agl_m: 10.0,
        crs: SourceCrs::LonLat { dem_epsg: epsg },
        source: "lonlat".into(),
        air_temp_c: None,
        cloud_cover_pct: None,
        curvilinear: None,
    };
    let uv = regrid(&p, &g).unwrap();
    for (c, (u, v)) in uv.iter().enumerate() {
        let (x, y) = p.cell_centre(c / p.cols, c % p.cols);
        let (lon, lat) = geofield_io::project::unproject_to_lonlat(x, y, epsg).unwrap();
        let gamma = ((lon + 117.0).to_radians().tan() * lat.to_radians().sin()).atan();
        assert!(gamma < -0.02, "west of the central meridian: {gamma}");
        assert!(
            (u + 5.0 * gamma.sin()).abs() < 5e-6,
            "{c}: u {u}, γ {gamma}"
        );
        assert!((v - 5.0 * gamma.cos()).abs() < 5e-6, "{c}: v {v}");
    }
    // The same grid as 0..360 longitudes gives the same winds.
    let g360 = InitGrid {
        x: g.x.iter().map(|l| l + 360.0).collect(),
        ..g.clone()
    };
    for (a, b) in regrid(&p, &g360).unwrap().iter().zip(&uv) {
        // The shifted query's weights differ from the plain ones by rounding of 360 + λ.
        assert!(
            (a.0 - b.0).abs() < 1e-9 && (a.1 - b.1).abs() < 1e-9,
            "{a:?} {b:?}"
        );
    }
}

/// Refusals: a DEM outside the grid (the column named), a missing node it needs, bad shapes.
#[test]
fn refuses_bad_grids() {
    let p = plan();
    let mut g = grid_of(|_, _| (1.0, 1.0));
    g.x = g.x.iter().map(|x| x + 200.0).collect();
    let e = regrid(&p, &g).unwrap_err().to_string();
    assert!(
        e.contains("test grid") && e.contains("row 0, col 0") && e.contains("outside"),
        "{e}"
    );
    let mut g = grid_of(|_, _| (1.0, 1.0));
    g.u[2 * 9 + 3] = f64::NAN;
    let e = regrid(&p, &g).unwrap_err().to_string();
    assert!(e.contains("missing") && e.contains("x 1200"), "{e}");
    let mut g = grid_of(|_, _| (1.0, 1.0));
    g.v.pop();
    assert!(
        regrid(&p, &g)
            .unwrap_err()
            .to_string()
            .contains("must hold")
    );
    let mut g = grid_of(|_, _| (1.0, 1.0));
    g.x.swap(2, 3);
    assert!(regrid(&p, &g).unwrap_err().to_string().contains("strictly"));
    let mut g = grid_of(|_, _| (1.0, 1.0));
    g.height_agl_m = 0.0;
    assert!(regrid(&p, &g).unwrap_err().to_string().contains("height"));
    let g = grid_of(|_, _| (400.0, 1.0));
    assert!(
        regrid(&p, &g)
            .unwrap_err()
            .to_string()
            .contains("speed of sound")
    );
}

/// Stations' directions from true north ([`WindOptions::true_north_epsg`]): on flat ground in
/// UTM zone 11N about 2° west of its central meridian at 45° N, a station's wind from 270° true
/// is, on the grid, from 270° − γ with γ = atan(tan(λ − λ₀) sin φ) the meridian convergence
/// (Snyder 1987, eq. 8-11; −1.41° here, so 271.41°), and the same station without the option
/// stays at 270° (1e-6 rad covers the ellipsoid's terms and the finite step of the bearing).
#[test]
fn true_north_stations_turn_by_the_meridian_convergence() {
    let epsg = 32611;
    let (x0, y0) = utm11_at_119w();
    let p = GridSpec {
        x_min_m: x0 - 200.0,
        y_max_m: y0 + 200.0,
        cell_size_m: 100.0,
        cols: 4,
        rows: 4,
    };
    let grid = WindGrid::new(p, vec![300.0; 16], &Levels::Uniform { nz: 6, dz_m: 10.0 }).unwrap();
    let st = Station {
        id: "s".into(),
        x_m: x0,
        y_m: y0,
        height_agl_m: 10.0,
        speed_m_per_s: 5.0,
        direction_deg: 270.0,
        stability: None,
    };
    let mut opts = WindOptions {
        profile: Profile::Uniform,
        ..WindOptions::default()
    };
    let coeffs = crate::wind::ops::Coeffs::new(&grid, 1.0, opts.top);
    let direction = |opts: &WindOptions| {
        let fg = crate::wind::init::first_guess(&grid, &coeffs, std::slice::from_ref(&st), opts)
            .unwrap();
        // An interior x face of the lowest layer and an interior y face: uniform values.
        let (u, v) = (fg.u[2], fg.v[grid.cols() + 1]);
        assert!((u.hypot(v) - 5.0).abs() < 1e-12);
        crate::wind::speed_direction(u, v).1
    };
    assert!((direction(&opts) - 270.0).abs() < 1e-9);
    opts.true_north_epsg = Some(epsg);
    let (lon, lat) = geofield_io::project::unproject_to_lonlat(x0, y0, epsg).unwrap();
    let gamma = ((lon + 117.0).to_radians().tan() * lat.to_radians().sin())
        .atan()
        .to_degrees();
    assert!(gamma < -1.3, "{gamma}");
    let got = direction(&opts);
    assert!(
        (got - (270.0 - gamma)).abs() < 1e-6f64.to_degrees(),
        "{got} against {}",
        270.0 - gamma
    );
}
