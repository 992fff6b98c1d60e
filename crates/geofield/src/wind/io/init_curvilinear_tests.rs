//! Tests of [`super::read_init_grid`] on WRF's output layout, written by the `netcdf3` crate:
//! `Times` as text on a record `Time` dimension, `XLONG`/`XLAT` per time, grid-relative
//! `U10`/`V10` with the global `MAP_PROJ`; and the refusals.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use super::*;
use crate::wind::SourceCrs;
use crate::wind::curvilinear::tests::wrf_nodes;
use crate::wind::io::{TimeSel, read_init_grid};

const NX: usize = 6;
const NY: usize = 5;

/// A wrfout-like file with two times; `map_proj` adds WRF's global attribute.
fn wrfout(dir: &Path, map_proj: bool) -> std::path::PathBuf {
    use netcdf3::{DataSet, FileWriter, Version};
    let path = dir.join("wrfout_d01.nc");
    let (_, _, lon, lat) = wrf_nodes(NX, NY, 4000.0, (-119.0, 45.0));
    let mut ds = DataSet::new();
    ds.set_unlimited_dim("Time", 2).unwrap();
    ds.add_fixed_dim("DateStrLen", 19).unwrap();
    ds.add_fixed_dim("south_north", NY).unwrap();
    ds.add_fixed_dim("west_east", NX).unwrap();
    ds.add_var_u8("Times", &["Time", "DateStrLen"]).unwrap();
    let plane = ["Time", "south_north", "west_east"];
    for v in ["XLAT", "XLONG", "U10", "V10", "T2"] {
        ds.add_var_f32(v, &plane).unwrap();
    }
    ds.add_var_attr_string("XLAT", "units", "degree_north")
        .unwrap();
    ds.add_var_attr_string("XLONG", "units", "degree_east")
        .unwrap();
    for v in ["U10", "V10"] {
        ds.add_var_attr_string(v, "units", "m s-1").unwrap();
        ds.add_var_attr_string(v, "coordinates", "XLONG XLAT XTIME")
            .unwrap();
    }
    ds.add_var_attr_string("T2", "units", "K").unwrap();
    if map_proj {
        ds.add_global_attr_i32("MAP_PROJ", vec![1]).unwrap();
    }
    let mut w = FileWriter::create_new(&path).unwrap();
    w.set_def(&ds, Version::Offset64Bit, 0).unwrap();
    let times: Vec<u8> = b"2024-06-21_18:00:002024-06-21_19:00:00".to_vec();
    w.write_var_u8("Times", &times).unwrap();
    let twice = |f: &[f64]| -> Vec<f32> { f.iter().chain(f).map(|&x| x as f32).collect() };
    w.write_var_f32("XLAT", &twice(&lat)).unwrap();
    w.write_var_f32("XLONG", &twice(&lon)).unwrap();
    let n = NX * NY;
    let u: Vec<f32> = (0..2 * n).map(|i| (i / n) as f32 * 10.0 + 1.0).collect();
    let v: Vec<f32> = (0..2 * n).map(|i| (i % n) as f32 * 0.1).collect();
    w.write_var_f32("U10", &u).unwrap();
    w.write_var_f32("V10", &v).unwrap();
    w.write_var_f32("T2", &vec![300.15f32; 2 * n]).unwrap();
    w.close().unwrap();
    path
}

fn req(dem: Option<u16>) -> InitGridRequest {
    InitGridRequest {
        dem_epsg: dem,
        ..Default::default()
    }
}

#[test]
fn reads_wrf_output() {
    let dir = tempfile::tempdir().unwrap();
    let p = wrfout(dir.path(), true);
    let mut q = req(Some(32611));
    q.time = Some(TimeSel::At("2024-06-21T19:00".into()));
    q.weather = true;
    let r = read_init_grid(&p, &q).unwrap();
    let g = &r.grid;
    assert_eq!(g.crs, SourceCrs::Curvilinear { dem_epsg: 32611 });
    assert_eq!(g.x, [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    assert_eq!(g.y.len(), NY);
    // The second time's values.
    assert!(g.u.iter().all(|&u| u == 11.0), "{:?}", g.u);
    assert_eq!(g.v[7], 0.7f32 as f64);
    assert_eq!(r.time, Some((1, "2024-06-21T19:00:00Z".into())));
    let c = g.curvilinear.as_ref().unwrap();
    assert!(c.grid_relative);
    let (_, _, lon, lat) = wrf_nodes(NX, NY, 4000.0, (-119.0, 45.0));
    for k in 0..NX * NY {
        assert_eq!(c.lon[k], lon[k] as f32 as f64);
        assert_eq!(c.lat[k], lat[k] as f32 as f64);
    }
    assert_eq!(g.height_agl_m, 10.0);
    assert_eq!(g.air_temp_c.as_ref().unwrap()[0], 300.15f32 as f64 - 273.15);
    let notes = r.notes.join("\n");
    assert!(
        notes.contains("WRF") && notes.contains("XLONG/XLAT"),
        "{notes}"
    );
    // The first time by index, and by default with a note.
    q.time = Some(TimeSel::Index(0));
    assert!(
        read_init_grid(&p, &q)
            .unwrap()
            .grid
            .u
            .iter()
            .all(|&u| u == 1.0)
    );
    q.time = None;
    let r = read_init_grid(&p, &q).unwrap();
    assert_eq!(r.time, Some((0, "2024-06-21T18:00:00Z".into())));
    // A date the file does not hold.
    q.time = Some(TimeSel::At("2024-06-21T20:00".into()));
    let e = read_init_grid(&p, &q).unwrap_err().to_string();
    assert!(e.contains("no time equals 2024-06-21T20:00"), "{e}");
}

#[test]
fn curvilinear_refusals_say_what_to_give() {
    let dir = tempfile::tempdir().unwrap();
    // Not WRF's (no MAP_PROJ) and no standard name: which way u and v point is asked.
    let p = wrfout(dir.path(), false);
    let e = read_init_grid(&p, &req(Some(32611)))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("--init-wind-axes") && e.contains("wrfout_d01.nc"),
        "{e}"
    );
    let mut q = req(Some(32611));
    q.grid_relative = Some(false);
    let r = read_init_grid(&p, &q).unwrap();
    assert!(!r.grid.curvilinear.unwrap().grid_relative);
    // A CRS for axes it does not have.
    q.crs_epsg = Some(4326);
    let e = read_init_grid(&p, &q).unwrap_err().to_string();
    assert!(e.contains("curvilinear") && e.contains("--init-crs"), "{e}");
    // A DEM without a CRS.
    q.crs_epsg = None;
    q.dem_epsg = None;
    let e = read_init_grid(&p, &q).unwrap_err().to_string();
    assert!(e.contains("--crs"), "{e}");
}
