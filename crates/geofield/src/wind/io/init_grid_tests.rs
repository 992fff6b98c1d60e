//! Tests of [`super::read_init_grid`] on files written by geofield's own NetCDF writer and by
//! the `netcdf3` crate's writer (record dimensions): the ERA5 layout (packed values,
//! decreasing latitudes, 0…360 longitudes, hours since 1900), a transposed (lon, lat) layout
//! in knots with a `height` coordinate, times chosen by index and date, and the refusals.

#![allow(clippy::unwrap_used)]

use super::*;
use crate::wind::io::cf_time::parse_utc;
use geofield_io::{NcAttr, NcData, NcFile, NcVar, write_netcdf};

fn text(s: &str) -> NcAttr {
    NcAttr::Text(s.into())
}

/// ERA5's legacy NetCDF layout: u10/v10 (time, latitude, longitude), packed integers.
fn era5(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("era5.nc");
    let lat = [45.5, 45.25, 45.0, 44.75];
    let lon = [240.5, 240.75, 241.0, 241.25, 241.5];
    // 1900-01-01 to 2024-06-21 12:00 is 45 462 days and 12 h: 1 091 100 h.
    let time = [1_091_100i32, 1_091_106];
    let n = 2 * 4 * 5;
    let packed_u: Vec<i32> = (0..n as i32).map(|i| 100 * i - 1000).collect();
    let packed_v: Vec<i32> = (0..n as i32).map(|i| 50 * i).collect();
    let mut packed_v = packed_v;
    packed_v[n - 1] = -32767;
    let wind_attrs = |name: &str| {
        vec![
            ("scale_factor".to_string(), NcAttr::F64(vec![0.001])),
            ("add_offset".to_string(), NcAttr::F64(vec![0.5])),
            ("_FillValue".to_string(), NcAttr::I32(vec![-32767])),
            ("units".to_string(), text("m s**-1")),
            ("long_name".to_string(), text(name)),
        ]
    };
    let file = NcFile {
        dims: vec![
            ("time".into(), 2),
            ("latitude".into(), 4),
            ("longitude".into(), 5),
        ],
        global_attrs: vec![],
        vars: vec![
            NcVar {
                name: "longitude".into(),
                dims: vec!["longitude".into()],
                data: NcData::F64(&lon),
                attrs: vec![("units".into(), text("degrees_east"))],
            },
            NcVar {
                name: "latitude".into(),
                dims: vec!["latitude".into()],
                data: NcData::F64(&lat),
                attrs: vec![("units".into(), text("degrees_north"))],
            },
            NcVar {
                name: "time".into(),
                dims: vec!["time".into()],
                data: NcData::I32(&time),
                attrs: vec![
                    ("units".into(), text("hours since 1900-01-01 00:00:00.0")),
                    ("calendar".into(), text("gregorian")),
                ],
            },
            NcVar {
                name: "u10".into(),
                dims: vec!["time".into(), "latitude".into(), "longitude".into()],
                data: NcData::I32(&packed_u),
                attrs: wind_attrs("10 metre U wind component"),
            },
            NcVar {
                name: "v10".into(),
                dims: vec!["time".into(), "latitude".into(), "longitude".into()],
                data: NcData::I32(&packed_v),
                attrs: wind_attrs("10 metre V wind component"),
            },
        ],
    };
    write_netcdf(&path, &file).unwrap();
    path
}

fn req(dem: u16) -> InitGridRequest {
    InitGridRequest {
        dem_epsg: Some(dem),
        ..Default::default()
    }
}

#[test]
fn reads_the_era5_layout() {
    let dir = tempfile::tempdir().unwrap();
    let p = era5(dir.path());
    let r = read_init_grid(&p, &req(32611)).unwrap();
    let g = &r.grid;
    assert_eq!(g.x, [240.5, 240.75, 241.0, 241.25, 241.5]);
    assert_eq!(g.y, [45.5, 45.25, 45.0, 44.75]);
    assert_eq!(g.crs, SourceCrs::LonLat { dem_epsg: 32611 });
    assert_eq!(g.height_agl_m, 10.0);
    // Time 0 (the default, noted): u = raw × 0.001 + 0.5 at node (j, i) = raw index j·5 + i.
    assert!((g.u[7] - (0.001 * (100.0 * 7.0 - 1000.0) + 0.5)).abs() < 1e-12);
    assert_eq!(r.time.as_ref().unwrap().0, 0);
    assert!(
        r.notes.iter().any(|n| n.contains("2 times")),
        "{:?}",
        r.notes
    );
    assert!(r.notes.iter().any(|n| n.contains("10 m")), "{:?}", r.notes);
    // By date: 2024-06-21 18:00 UTC is the second time; the fill value there is missing.
    let mut q = req(32611);
    q.time = Some(TimeSel::At("2024-06-21T18:00".into()));
    let r = read_init_grid(&p, &q).unwrap();
    assert_eq!(r.time.as_ref().unwrap().0, 1);
    assert!((r.grid.v[0] - (0.001 * 50.0 * 20.0 + 0.5)).abs() < 1e-12);
    assert!(r.grid.v[19].is_nan());
    assert!(r.grid.source.contains("u10/v10") && r.grid.source.contains("time 1"));
    assert_eq!(r.time.as_ref().unwrap().1, "2024-06-21T18:00:00Z");
    // A date not in the file: the nearest is named.
    q.time = Some(TimeSel::At("2024-06-21 15:00".into()));
    let e = read_init_grid(&p, &q).unwrap_err().to_string();
    assert!(
        e.contains("era5.nc") && e.contains("no time equals") && e.contains("nearest"),
        "{e}"
    );
    q.time = Some(TimeSel::Index(2));
    let e = read_init_grid(&p, &q).unwrap_err().to_string();
    assert!(e.contains("out of range") && e.contains("2 times"), "{e}");
}

/// (lon, lat) order, knots, a 1-value `height` coordinate of 80 m, by standard names.
#[test]
fn reads_transposed_knots_with_height() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.nc");
    let x = [0.0, 1000.0, 2000.0];
    let y = [0.0, 500.0];
    // Stored (x, y): value at (i, j) is 10 i + j knots.
    let u: Vec<f64> = (0..3)
        .flat_map(|i| (0..2).map(move |j| (10 * i + j) as f64))
        .collect();
    let v = vec![1.0; 6];
    let h = [80.0];
    let wind = |std: &str| {
        vec![
            ("standard_name".to_string(), text(std)),
            ("units".to_string(), text("knots")),
            ("coordinates".to_string(), text("height")),
        ]
    };
    let file = NcFile {
        dims: vec![("x".into(), 3), ("y".into(), 2)],
        global_attrs: vec![],
        vars: vec![
            NcVar {
                name: "x".into(),
                dims: vec!["x".into()],
                data: NcData::F64(&x),
                attrs: vec![("units".into(), text("m"))],
            },
            NcVar {
                name: "y".into(),
                dims: vec!["y".into()],
                data: NcData::F64(&y),
                attrs: vec![("units".into(), text("m"))],
            },
            NcVar {
                name: "height".into(),
                dims: vec![],
                data: NcData::F64(&h),
                attrs: vec![
                    ("units".into(), text("m")),
                    ("standard_name".into(), text("height")),
                ],
            },
            NcVar {
                name: "ua".into(),
                dims: vec!["x".into(), "y".into()],
                data: NcData::F64(&u),
                attrs: wind("eastward_wind"),
            },
            NcVar {
                name: "va".into(),
                dims: vec!["x".into(), "y".into()],
                data: NcData::F64(&v),
                attrs: wind("northward_wind"),
            },
        ],
    };
    write_netcdf(&path, &file).unwrap();
    let r = read_init_grid(&path, &req(32611)).unwrap();
    let g = &r.grid;
    assert_eq!((g.x.as_slice(), g.y.as_slice()), (&x[..], &y[..]));
    assert_eq!(g.height_agl_m, 80.0);
    assert_eq!(g.crs, SourceCrs::Same);
    assert!(r.notes.iter().any(|n| n.contains("declares no CRS")));
    let kt = 1852.0 / 3600.0;
    for j in 0..2 {
        for i in 0..3 {
            let want = (10 * i + j) as f64 * kt;
            assert!((g.u[j * 3 + i] - want).abs() < 1e-12, "({i}, {j})");
        }
    }
}

/// A record (unlimited) time dimension, written by the `netcdf3` crate's writer.
#[test]
fn reads_a_record_time_dimension() {
    use netcdf3::{DataSet, FileWriter, Version};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rec.nc");
    let mut ds = DataSet::new();
    ds.set_unlimited_dim("time", 3).unwrap();
    ds.add_fixed_dim("lat", 2).unwrap();
    ds.add_fixed_dim("lon", 2).unwrap();
    ds.add_var_f64("lat", &["lat"]).unwrap();
    ds.add_var_f64("lon", &["lon"]).unwrap();
    ds.add_var_f32("U10", &["time", "lat", "lon"]).unwrap();
    ds.add_var_f32("V10", &["time", "lat", "lon"]).unwrap();
    ds.add_var_attr_string("lon", "units", "degrees_east")
        .unwrap();
    ds.add_var_attr_string("U10", "units", "m s-1").unwrap();
    ds.add_var_attr_string("V10", "units", "m s-1").unwrap();
    let mut w = FileWriter::create_new(&path).unwrap();
    w.set_def(&ds, Version::Offset64Bit, 0).unwrap();
    w.write_var_f64("lat", &[10.0, 11.0]).unwrap();
    w.write_var_f64("lon", &[-1.0, 1.0]).unwrap();
    let u: Vec<f32> = (0..12).map(|i| i as f32).collect();
    let v: Vec<f32> = (0..12).map(|i| -(i as f32)).collect();
    w.write_var_f32("U10", &u).unwrap();
    w.write_var_f32("V10", &v).unwrap();
    w.close().unwrap();
    let mut q = req(32630);
    q.time = Some(TimeSel::Index(2));
    let r = read_init_grid(&path, &q).unwrap();
    assert_eq!(r.grid.u, [8.0, 9.0, 10.0, 11.0]);
    assert_eq!(r.grid.v, [-8.0, -9.0, -10.0, -11.0]);
    assert_eq!(r.grid.crs, SourceCrs::LonLat { dem_epsg: 32630 });
    // A time asked of a file without dates: by date is refused.
    q.time = Some(TimeSel::At("2024-01-01T00:00".into()));
    let e = read_init_grid(&path, &q).unwrap_err().to_string();
    assert!(e.contains("rec.nc"), "{e}");
}

#[test]
fn refusals_name_the_file_and_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let p = era5(dir.path());
    let mut q = req(32611);
    q.u_var = Some("uu".into());
    q.v_var = Some("v10".into());
    let e = read_init_grid(&p, &q).unwrap_err().to_string();
    assert!(
        e.contains("era5.nc") && e.contains("\"uu\"") && e.contains("u10"),
        "{e}"
    );
    // u and v taken as the time and latitude: no horizontal pair of shape, no wind found.
    let q = InitGridRequest {
        u_var: Some("latitude".into()),
        v_var: Some("latitude".into()),
        ..req(32611)
    };
    let e = read_init_grid(&p, &q).unwrap_err().to_string();
    assert!(e.contains("dimension"), "{e}");
    // A DEM without a CRS cannot place a longitude/latitude grid.
    let q = InitGridRequest::default();
    let e = read_init_grid(&p, &q).unwrap_err().to_string();
    assert!(e.contains("--crs"), "{e}");
    // A NetCDF-4 file: the conversion command.
    let h = dir.path().join("h5.nc");
    std::fs::write(&h, b"\x89HDF\r\n\x1a\n0000").unwrap();
    let e = read_init_grid(&h, &req(32611)).unwrap_err().to_string();
    assert!(e.contains("h5.nc") && e.contains("nccopy"), "{e}");
}

#[test]
fn parses_cf_dates() {
    let d = |s: &str| parse_utc(s).unwrap();
    assert_eq!(d("2000-01-01T12:00"), 2_451_545.0);
    assert_eq!(d("2000-01-01 12:00:00Z"), 2_451_545.0);
    assert_eq!(d("2000-01-01"), 2_451_544.5);
    assert!(parse_utc("2000-02-30T00:00").is_none());
    assert!(parse_utc("noon").is_none());
    let units = "days since 2000-01-01";
    assert_eq!(
        match_time("2000-01-03T00:00", &[0.0, 1.0, 2.0], units, "").unwrap(),
        2
    );
    assert_eq!(
        format_time(
            1_091_106.0,
            "hours since 1900-01-01 00:00:00.0",
            "gregorian"
        )
        .unwrap(),
        "2024-06-21T18:00:00Z"
    );
    assert_eq!(
        format_time(59.5, "days since 2000-01-01", "").unwrap(),
        "2000-02-29T12:00:00Z"
    );
    assert_eq!(format_time(1.0, "days since 2000-01-01", "noleap"), None);
    let e = match_time("2000-01-03", &[0.0], units, "noleap").unwrap_err();
    assert!(e.contains("not Gregorian"), "{e}");
}

/// A 1 × 2 × 3 (time, latitude, longitude) file with u10/v10 and the weather variables
/// `extra` (name, units or none, values), for the air temperature and cloud cover.
fn weather_file(dir: &Path, extra: &[(&str, Option<&str>, [f64; 6])]) -> std::path::PathBuf {
    let path = dir.join("wx.nc");
    let (lat, lon) = ([45.25, 45.0], [240.5, 240.75, 241.0]);
    let (u, v) = ([3.0; 6], [-1.0; 6]);
    let dims3 = || vec!["time".into(), "latitude".into(), "longitude".into()];
    let mut vars = vec![
        NcVar {
            name: "longitude".into(),
            dims: vec!["longitude".into()],
            data: NcData::F64(&lon),
            attrs: vec![("units".into(), text("degrees_east"))],
        },
        NcVar {
            name: "latitude".into(),
            dims: vec!["latitude".into()],
            data: NcData::F64(&lat),
            attrs: vec![("units".into(), text("degrees_north"))],
        },
        NcVar {
            name: "u10".into(),
            dims: dims3(),
            data: NcData::F64(&u),
            attrs: vec![("units".into(), text("m s**-1"))],
        },
        NcVar {
            name: "v10".into(),
            dims: dims3(),
            data: NcData::F64(&v),
            attrs: vec![("units".into(), text("m s**-1"))],
        },
    ];
    for (name, units, values) in extra {
        vars.push(NcVar {
            name: (*name).into(),
            dims: dims3(),
            data: NcData::F64(values),
            attrs: units.map_or(vec![], |u| vec![("units".into(), text(u))]),
        });
    }
    let file = NcFile {
        dims: vec![
            ("time".into(), 1),
            ("latitude".into(), 2),
            ("longitude".into(), 3),
        ],
        global_attrs: vec![],
        vars,
    };
    write_netcdf(&path, &file).unwrap();
    path
}

/// ERA5's t2m (K) and tcc (a fraction) read with `weather`, converted to °C and %, in the
/// wind's node order; nothing read without `weather`; °F and % units; the refusals: no units,
/// a temperature out of range, a named variable that is absent.
#[test]
fn reads_air_temperature_and_cloud_cover() {
    let dir = tempfile::tempdir().unwrap();
    let t2m = [293.15, 294.15, 295.15, 283.15, 284.15, 285.15];
    let tcc = [0.0, 0.25, 0.5, 0.75, 1.0, 1.0 + 1e-9];
    let p = weather_file(
        dir.path(),
        &[("t2m", Some("K"), t2m), ("tcc", Some("(0 - 1)"), tcc)],
    );
    let plain = read_init_grid(&p, &req(32611)).unwrap();
    assert!(plain.grid.air_temp_c.is_none() && plain.grid.cloud_cover_pct.is_none());
    let q = InitGridRequest {
        weather: true,
        ..req(32611)
    };
    let r = read_init_grid(&p, &q).unwrap();
    let t = r.grid.air_temp_c.as_ref().unwrap();
    let c = r.grid.cloud_cover_pct.as_ref().unwrap();
    for i in 0..6 {
        assert!((t[i] - (t2m[i] - 273.15)).abs() < 1e-9, "{i}: {}", t[i]);
        assert!(
            (c[i] - (100.0 * tcc[i]).min(100.0)).abs() < 1e-9,
            "{i}: {}",
            c[i]
        );
    }
    assert!(
        r.notes.iter().any(|n| n.contains("\"t2m\"")),
        "{:?}",
        r.notes
    );
    // °F and % under names the reader does not know: read only when named.
    let p = weather_file(
        dir.path(),
        &[
            ("temp_f", Some("degF"), [68.0; 6]),
            ("clouds", Some("%"), [40.0; 6]),
        ],
    );
    let unnamed = read_init_grid(&p, &q).unwrap();
    assert!(unnamed.grid.air_temp_c.is_none() && unnamed.grid.cloud_cover_pct.is_none());
    let q2 = InitGridRequest {
        temp_var: Some("temp_f".into()),
        cloud_var: Some("clouds".into()),
        ..q.clone()
    };
    let r = read_init_grid(&p, &q2).unwrap();
    assert!((r.grid.air_temp_c.as_ref().unwrap()[0] - 20.0).abs() < 1e-12);
    assert_eq!(r.grid.cloud_cover_pct.as_ref().unwrap()[5], 40.0);
    // Refusals name the file and the variable.
    for (extra, says) in [
        (vec![("t2m", None, t2m)], "no units"),
        (vec![("t2m", Some("K"), [400.0; 6])], "outside"),
        (vec![("tcc", Some("1"), [1.5; 6])], "outside"),
        (vec![("t2m", Some("hPa"), t2m)], "not K"),
    ] {
        let p = weather_file(dir.path(), &extra);
        let e = read_init_grid(&p, &q).unwrap_err().to_string();
        assert!(e.contains("wx.nc") && e.contains(says), "{e}");
    }
    let q3 = InitGridRequest {
        temp_var: Some("T2".into()),
        ..q.clone()
    };
    let e = read_init_grid(&p, &q3).unwrap_err().to_string();
    assert!(
        e.contains("--init-temp \"T2\"") && e.contains("no such variable"),
        "{e}"
    );
}
