//! `geofield wind --init-grid` (a weather model's gridded wind) end to end: a uniform grid in
//! the DEM's CRS gives the field of one station with that wind; a west wind on a
//! longitude/latitude grid over flat ground west of the UTM zone's central meridian comes out
//! turned by the meridian convergence; refusals exit 2 and write nothing.

use std::path::Path;

use geofield_io::project::{Datum, project_lonlat};
use geofield_io::{NcAttr, NcData, NcFile, NcVar, read_raster, write_netcdf};

use super::wind::{hill, listing, stations};
use super::{geofield, s, text};

fn txt(v: &str) -> NcAttr {
    NcAttr::Text(v.into())
}

/// A NetCDF of uniform (u, v) on axes `x`, `y` (`lonlat`: degrees), one time, and uniform
/// `extra` variables (name, units, value).
fn grid_nc(
    path: &Path,
    x: &[f64],
    y: &[f64],
    (u, v): (f64, f64),
    lonlat: bool,
    extra: &[(&str, &str, f64)],
) {
    let n = x.len() * y.len();
    let (uu, vv) = (vec![u; n], vec![v; n]);
    let extra_values: Vec<Vec<f64>> = extra.iter().map(|e| vec![e.2; n]).collect();
    let (xu, yu, xs, ys) = if lonlat {
        ("degrees_east", "degrees_north", "lon", "lat")
    } else {
        ("m", "m", "x", "y")
    };
    let wind = |std: &str| {
        vec![
            ("standard_name".to_string(), txt(std)),
            ("units".to_string(), txt("m s-1")),
        ]
    };
    let mut file = NcFile {
        dims: vec![(ys.into(), y.len()), (xs.into(), x.len())],
        global_attrs: vec![],
        vars: vec![
            NcVar {
                name: xs.into(),
                dims: vec![xs.into()],
                data: NcData::F64(x),
                attrs: vec![("units".into(), txt(xu))],
            },
            NcVar {
                name: ys.into(),
                dims: vec![ys.into()],
                data: NcData::F64(y),
                attrs: vec![("units".into(), txt(yu))],
            },
            NcVar {
                name: "uwind".into(),
                dims: vec![ys.into(), xs.into()],
                data: NcData::F64(&uu),
                attrs: wind("eastward_wind"),
            },
            NcVar {
                name: "vwind".into(),
                dims: vec![ys.into(), xs.into()],
                data: NcData::F64(&vv),
                attrs: wind("northward_wind"),
            },
        ],
    };
    for ((name, units, _), values) in extra.iter().zip(&extra_values) {
        file.vars.push(NcVar {
            name: (*name).into(),
            dims: vec![ys.into(), xs.into()],
            data: NcData::F64(values),
            attrs: vec![("units".to_string(), txt(units))],
        });
    }
    write_netcdf(path, &file).unwrap();
}

fn raster(p: &Path) -> Vec<f64> {
    match read_raster(p).unwrap().0.data {
        geofield_core::RasterData::F32(v) => v.iter().map(|&x| x as f64).collect(),
        geofield_core::RasterData::F64(v) => v,
    }
}

/// The hill's DEM (EPSG:32633, x 0..720, y 0..600) under a uniform grid in its own CRS at
/// 10 m: the speed and direction rasters equal those of one station with the same wind (a
/// gridded wind is one station in every column; the f32 rasters of the two runs agree to a
/// few f32 ulps of values ~5: 1e-5).
#[test]
fn uniform_grid_is_one_station() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (dem, _) = hill(d);
    let st = stations(d, "a,300,300,10,6,235,\n");
    let (su, sv) = {
        let t = 235f64.to_radians();
        (-6.0 * t.sin(), -6.0 * t.cos())
    };
    let nc = d.join("wx.nc");
    grid_nc(
        &nc,
        &[-100.0, 400.0, 900.0],
        &[700.0, 300.0, -100.0],
        (su, sv),
        false,
        &[],
    );
    let run = |init: bool, tag: &str| {
        let (sp, dirn) = (
            d.join(format!("{tag}_s.tif")),
            d.join(format!("{tag}_d.tif")),
        );
        let mut args = vec!["wind", "--dem", s(&dem), "--nz", "16", "--dz-m", "10"];
        if init {
            args.extend_from_slice(&["--init-grid", s(&nc), "--init-height-m", "10"]);
        } else {
            // The grid's u and v are on the DEM's axes: the station's direction too.
            args.extend_from_slice(&["--stations", s(&st), "--grid-directions"]);
        }
        args.extend_from_slice(&["--speed-out", s(&sp), "--direction-out", s(&dirn)]);
        let o = geofield(&args);
        assert!(o.status.success(), "{}", text(&o));
        (raster(&sp), raster(&dirn), text(&o))
    };
    let (s1, d1, _) = run(false, "st");
    let (s2, d2, msg) = run(true, "grid");
    assert!(
        msg.contains("first guess: gridded wind") && msg.contains("3 x 3 nodes"),
        "{msg}"
    );
    assert!(msg.contains("declares no CRS"), "{msg}");
    for (a, b) in s1.iter().zip(&s2) {
        assert!((a - b).abs() < 1e-5, "speed {a} vs {b}");
    }
    for (a, b) in d1.iter().zip(&d2) {
        assert!((a - b).abs() < 1e-4, "direction {a} vs {b}");
    }
    assert!(s1.iter().any(|&v| v > 6.0), "the hill speeds the wind up");
}

/// A flat 20 × 20 DEM of 30 m cells centred on 119° W, 45° N in UTM zone 11N (EPSG:32611,
/// central meridian 117° W).
fn flat_dem(d: &Path) -> std::path::PathBuf {
    let (x0, y0) = project_lonlat(Datum::Wgs84, -119.0, 45.0, 32611).unwrap();
    let dem = d.join("flat.tif");
    let (xmin, ymin) = (format!("{:.0}", x0 - 300.0), format!("{:.0}", y0 - 300.0));
    let o = geofield(&[
        "synth",
        "terrain",
        "--kind",
        "flat",
        "--out",
        s(&dem),
        "--cols",
        "20",
        "--rows",
        "20",
        "--cell-size-m",
        "30",
        "--crs",
        "EPSG:32611",
        "--x-min-m",
        &xmin,
        "--y-min-m",
        &ymin,
    ]);
    assert!(o.status.success(), "{}", text(&o));
    dem
}

/// A west wind (u = 5 m/s eastward) on a longitude/latitude grid, on flat ground around
/// 119° W, 45° N in UTM zone 11N (central meridian 117° W): the field is the first guess, and
/// its direction on the DEM's grid is 270° − γ with the meridian convergence
/// γ = atan(tan(λ − λ0) sin φ) (the sphere's transverse Mercator; the ellipsoid's terms and the
/// f32 raster are below 0.002°), here about −1.41°: 271.41°.
#[test]
fn lonlat_grid_turns_by_the_convergence() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let dem = flat_dem(d);
    let nc = d.join("gfs.nc");
    // 0..360 longitudes, latitudes north first (GFS's order).
    let lon: Vec<f64> = (0..5).map(|i| 240.5 + 0.25 * i as f64).collect();
    let lat: Vec<f64> = (0..5).map(|j| 45.5 - 0.25 * j as f64).collect();
    grid_nc(&nc, &lon, &lat, (5.0, 0.0), true, &[]);
    let (sp, dirn, json) = (d.join("s.tif"), d.join("d.tif"), d.join("run.json"));
    let o = geofield(&[
        "wind",
        "--dem",
        s(&dem),
        "--init-grid",
        s(&nc),
        "--init-height-m",
        "10",
        "--nz",
        "8",
        "--speed-out",
        s(&sp),
        "--direction-out",
        s(&dirn),
        "--json",
        s(&json),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let lam = (-119.0f64 + 117.0).to_radians();
    let gamma = (lam.tan() * 45f64.to_radians().sin()).atan().to_degrees();
    let want = 270.0 - gamma;
    let got = raster(&dirn);
    // The DEM spans 0.008° of longitude: γ varies by 0.006° across it.
    for g in &got {
        assert!((g - want).abs() < 0.01, "direction {g} vs {want}");
    }
    for v in raster(&sp) {
        assert!((v - 5.0).abs() < 1e-4, "speed {v}");
    }
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(j["init_grid"]["coordinates"], "longitude/latitude");
    assert_eq!(j["init_grid"]["height_agl_m"], 10.0);
}

/// Refusals: NetCDF-4, a grid that misses the DEM, a bad time and --stations with
/// --init-grid: exit 2, the file named, nothing written.
#[test]
fn refusals_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (dem, st) = hill(d);
    let h5 = d.join("wx4.nc");
    std::fs::write(&h5, b"\x89HDF\r\n\x1a\n00000000").unwrap();
    let small = d.join("small.nc");
    grid_nc(&small, &[0.0, 100.0], &[0.0, 100.0], (1.0, 1.0), false, &[]);
    let before = listing(d);
    let out = d.join("f.nc");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--init-grid", s(&h5)], "nccopy"),
        (
            vec!["--init-grid", s(&small), "--init-height-m", "10"],
            "outside its nodes",
        ),
        (
            vec![
                "--init-grid",
                s(&small),
                "--init-height-m",
                "10",
                "--init-time",
                "3",
            ],
            "no time dimension",
        ),
        (vec!["--init-grid", s(&small)], "--init-height-m"),
        (
            vec!["--init-grid", s(&small), "--stations", s(&st)],
            "cannot be used with",
        ),
        (
            vec!["--init-grid", s(&small), "--init-height-m", "0"],
            "positive",
        ),
        (
            vec!["--init-grid", s(&small), "--init-temp", "t2m"],
            "add --diurnal",
        ),
    ];
    for (extra, says) in cases {
        let mut args = vec!["wind", "--dem", s(&dem), "--out", s(&out)];
        args.extend_from_slice(&extra);
        let o = geofield(&args);
        let msg = text(&o);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {msg}");
        assert!(msg.contains(says), "{extra:?}: {msg}");
        assert_eq!(listing(d), before, "{extra:?} wrote something");
    }
}

/// `--diurnal` on a weather model's grid: its air temperature and cloud cover (t2m in K, tcc
/// a fraction, found by name) replace --air-temp and --cloud-cover; the same values given as
/// flags over a grid without them give the same field (to rounding); a flag given wins over the
/// grid (with a note); neither: exit 2 naming the flag.
#[test]
fn diurnal_takes_the_grids_temperature_and_cloud_cover() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (dem, _) = hill(d);
    let (x, y) = ([-100.0, 400.0, 900.0], [700.0, 300.0, -100.0]);
    let (wx, bare) = (d.join("wx.nc"), d.join("bare.nc"));
    let weather = [("t2m", "K", 293.15), ("tcc", "(0 - 1)", 0.25)];
    grid_nc(&wx, &x, &y, (3.0, 1.0), false, &weather);
    grid_nc(&bare, &x, &y, (3.0, 1.0), false, &[]);
    let run = |nc: &Path, flags: &[&str], tag: &str| {
        let sp = d.join(format!("{tag}_s.tif"));
        let mut args = vec!["wind", "--dem", s(&dem), "--nz", "16", "--dz-m", "10"];
        args.extend_from_slice(&["--init-grid", s(nc), "--init-height-m", "10", "--diurnal"]);
        args.extend_from_slice(&["--date", "2024-06-21", "--time", "13:00"]);
        args.extend_from_slice(&["--utc-offset", "-7", "--lat", "45", "--lon", "-117"]);
        args.extend_from_slice(flags);
        let js = d.join(format!("{tag}.json"));
        args.extend_from_slice(&["--speed-out", s(&sp), "--json", s(&js)]);
        let o = geofield(&args);
        (o.status.code(), text(&o), sp)
    };
    let report = |tag: &str| -> serde_json::Value {
        let j: serde_json::Value =
            serde_json::from_slice(&std::fs::read(d.join(format!("{tag}.json"))).unwrap()).unwrap();
        j["report"]["diurnal"].clone()
    };
    let (code, msg, grid_sp) = run(&wx, &[], "grid");
    assert_eq!(code, Some(0), "{msg}");
    assert!(
        msg.contains("the air temperature from \"t2m\"")
            && msg.contains("the cloud cover from \"tcc\"")
            && msg.contains("air 20.0 C (the grid's per column, mean)"),
        "{msg}"
    );
    // 293.15 K = 20 °C (to rounding: the flags' 20 is the K value minus 273.15 in f64).
    let t_c = 293.15 - 273.15;
    let (code, msg, flag_sp) = run(
        &bare,
        &["--air-temp", &t_c.to_string(), "--cloud-cover", "25"],
        "flags",
    );
    assert_eq!(code, Some(0), "{msg}");
    // The grid's uniform values reach each column through a bilinear blend (weights summing
    // to 1 within rounding): the same inputs to a few ulps, so the f32 speeds agree to 1e-6
    // (a few f32 ulps of values ~3).
    let close = |a: &[f64], b: &[f64]| a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-6);
    assert!(close(&raster(&grid_sp), &raster(&flag_sp)));
    let g = report("grid");
    assert_eq!(g["air_temp_gridded"], true);
    assert_eq!(g["cloud_cover_gridded"], true);
    assert!(
        (g["cloud_cover_mean_pct"].as_f64().unwrap() - 25.0).abs() < 1e-9,
        "{g}"
    );
    assert!(
        (g["air_temp_mean_c"].as_f64().unwrap() - 20.0).abs() < 1e-9,
        "{g}"
    );
    let f = report("flags");
    assert_eq!(f["air_temp_gridded"], false);
    let hf = |r: &serde_json::Value| r["heat_flux_mean_w_per_m2"].as_f64().unwrap();
    assert!((hf(&g) - hf(&f)).abs() <= 1e-9 * hf(&f).abs(), "{g} {f}");
    // A flag wins: overcast everywhere, the grid's temperature kept.
    let (code, msg, _) = run(&wx, &["--cloud-cover", "100"], "over");
    assert_eq!(code, Some(0), "{msg}");
    assert!(
        msg.contains("cloud cover given is used everywhere"),
        "{msg}"
    );
    let o = report("over");
    assert_eq!(o["cloud_cover_gridded"], false);
    assert_eq!(o["air_temp_gridded"], true);
    assert_eq!(o["cloud_cover_mean_pct"], 100.0);
    assert!(hf(&o) < hf(&g), "overcast {} vs {}", hf(&o), hf(&g));
    let before = listing(d);
    let (code, msg, _) = run(&bare, &["--cloud-cover", "25"], "none");
    assert_eq!(code, Some(2), "{msg}");
    assert!(msg.contains("--air-temp"), "{msg}");
    assert_eq!(listing(d), before);
}

/// A curvilinear grid (2-D `lon`/`lat`, as WRF's) whose axes are UTM's turned 20°
/// anticlockwise, over the flat DEM: the nodes are a rotated square lattice of 200 m in UTM
/// 11N, given by their longitudes and latitudes. A wind from 250° at 5 m/s written in the
/// grid's axes (`x_wind`/`y_wind`) comes back from 250° on the DEM's grid at 5 m/s. Tolerance:
/// the grid's turn is measured on WRF's sphere while UTM is on the ellipsoid, which tilts a
/// bearing by at most (N/M − 1)/2 = 0.0017 rad (0.1°) at 45° N; plus the f32 raster. Read as
/// east/north components instead (`--init-wind-axes earth`), the same file is off by the 20°.
#[test]
fn curvilinear_grid_turns_by_its_own_axes() {
    use geofield_io::project::unproject_to_lonlat;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let dem = flat_dem(d);
    let (xc, yc) = project_lonlat(Datum::Wgs84, -119.0, 45.0, 32611).unwrap();
    let th = 20f64.to_radians();
    let (e1, e2) = ((th.cos(), th.sin()), (-th.sin(), th.cos()));
    let (nx, ny) = (7usize, 6usize);
    let (mut lon, mut lat) = (Vec::new(), Vec::new());
    for q in 0..ny {
        for p in 0..nx {
            let (a, b) = ((p as f64 - 3.0) * 200.0, (q as f64 - 2.5) * 200.0);
            let (x, y) = (xc + a * e1.0 + b * e2.0, yc + a * e1.1 + b * e2.1);
            let (lo, la) = unproject_to_lonlat(x, y, 32611).unwrap();
            lon.push(lo);
            lat.push(la);
        }
    }
    let from = 250f64.to_radians();
    let w = (-5.0 * from.sin(), -5.0 * from.cos());
    let ug = vec![w.0 * e1.0 + w.1 * e1.1; nx * ny];
    let vg = vec![w.0 * e2.0 + w.1 * e2.1; nx * ny];
    fn var<'a>(name: &str, data: &'a [f64], units: &str, std: Option<&str>) -> NcVar<'a> {
        let mut attrs = vec![("units".to_string(), txt(units))];
        if let Some(sn) = std {
            attrs.push(("standard_name".to_string(), txt(sn)));
            attrs.push(("coordinates".to_string(), txt("lon lat")));
        }
        NcVar {
            name: name.into(),
            dims: vec!["y".into(), "x".into()],
            data: NcData::F64(data),
            attrs,
        }
    }
    let nc = d.join("curvi.nc");
    let file = NcFile {
        dims: vec![("y".into(), ny), ("x".into(), nx)],
        global_attrs: vec![],
        vars: vec![
            var("lon", &lon, "degrees_east", None),
            var("lat", &lat, "degrees_north", None),
            var("ug", &ug, "m s-1", Some("x_wind")),
            var("vg", &vg, "m s-1", Some("y_wind")),
        ],
    };
    write_netcdf(&nc, &file).unwrap();
    let run = |extra: &[&str], tag: &str| {
        let (sp, dirn, js) = (
            d.join(format!("{tag}_s.tif")),
            d.join(format!("{tag}_d.tif")),
            d.join(format!("{tag}.json")),
        );
        let mut args = vec!["wind", "--dem", s(&dem), "--init-grid", s(&nc)];
        args.extend_from_slice(&["--init-height-m", "10", "--nz", "8"]);
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--speed-out", s(&sp), "--direction-out", s(&dirn)]);
        args.extend_from_slice(&["--json", s(&js)]);
        let o = geofield(&args);
        assert!(o.status.success(), "{}", text(&o));
        (raster(&sp), raster(&dirn), js)
    };
    let (speed, dirs, js) = run(&[], "grid");
    for g in &dirs {
        assert!((g - 250.0).abs() < 0.1 + 1e-4, "direction {g}");
    }
    for v in speed {
        assert!((v - 5.0).abs() < 1e-4, "speed {v}");
    }
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(js).unwrap()).unwrap();
    assert_eq!(
        j["init_grid"]["coordinates"],
        "curvilinear (longitude/latitude per node), grid-relative winds"
    );
    let (_, dirs, _) = run(&["--init-wind-axes", "earth"], "earth");
    for g in &dirs {
        assert!((g - 250.0).abs() > 15.0, "direction {g}");
    }
}
