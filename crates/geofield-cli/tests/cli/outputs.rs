//! Output files checked by their values, read back through geofield-io's readers (not by byte
//! layout, so that the writers may change their encoding): orientation of the north row, signs
//! of the wind components, the direction raster on flat ground, and the georeferencing of a
//! written GeoTIFF.

use std::path::Path;

use geofield_io::{NpyArray, NpyData, read_npz, read_raster};

use super::wind::{asc, stations, wind};
use super::{geofield, s, text};

fn get<'a>(a: &'a [(String, NpyArray)], name: &str) -> &'a NpyArray {
    &a.iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no array {name}"))
        .1
}

fn f64s(a: &NpyArray) -> Vec<f64> {
    match &a.data {
        NpyData::F32(v) => v.iter().map(|&x| f64::from(x)).collect(),
        NpyData::F64(v) => v.clone(),
        NpyData::U8(v) => v.iter().map(|&x| f64::from(x)).collect(),
        other => panic!("unexpected dtype {other:?}"),
    }
}

/// A 6 × 5 DEM of 30 m cells (south-west corner at (0, 0)) that is flat at 0 m except a 50 m
/// block in its two north-west cells: the first row of the ESRI ASCII file is the north row.
fn north_west_block(dir: &Path) -> std::path::PathBuf {
    let (cols, rows) = (6, 5);
    let mut z = vec![0.0; cols * rows];
    z[0] = 50.0;
    z[1] = 50.0;
    asc(dir, cols, rows, &z)
}

/// The NPZ keeps the DEM's north row first: terrain and solid cells of the north-west block are
/// at row 0, columns 0-1, and the grid's origin is the DEM's (x_min 0, y_max 150 m). Stair-step
/// terrain makes each column all solid or all fluid below the block top, so the solid mask is
/// exactly the block; the cut-cell case is checked by its fluid fractions below.
#[test]
fn npz_rows_run_north_to_south_like_the_dem() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let dem = north_west_block(d);
    let st = stations(d, "a,100,20,10,5,270,\n");
    let npz = d.join("w.npz");
    let o = wind(
        &dem,
        &st,
        &npz,
        &["--nz", "8", "--dz-m", "10", "--terrain", "stairs"],
    );
    assert!(o.status.success(), "{}", text(&o));
    let a = read_npz(&npz).unwrap();
    assert_eq!(f64s(get(&a, "x_min_m")), [0.0]);
    assert_eq!(f64s(get(&a, "y_max_m")), [150.0]);
    assert_eq!(get(&a, "terrain_m").shape, [5, 6]);
    let t = f64s(get(&a, "terrain_m"));
    assert_eq!(&t[..3], &[50.0, 50.0, 0.0], "north row first");
    assert!(t[6..].iter().all(|&z| z == 0.0), "{t:?}");
    // solid[k][row][col]: the block fills the lowest layers of the two north-west columns only.
    let solid = f64s(get(&a, "solid"));
    let plane = 5 * 6;
    for k in 0..4 {
        for c in 0..plane {
            let want = if c < 2 { 1.0 } else { 0.0 };
            assert_eq!(solid[k * plane + c], want, "layer {k} cell {c}");
        }
    }
}

/// With cut cells (the default) the terrain surface interpolates the DEM between cell centres, so
/// the block's slopes reach one cell further; but orientation is the same: the lowest layer is
/// partly solid (fluid fraction < 1) in the north-west cell (row 0, column 0), and wholly fluid
/// in the south-east corner, three rows and three columns away from the block.
#[test]
fn npz_cut_cell_fractions_run_north_to_south() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let dem = north_west_block(d);
    let st = stations(d, "a,100,20,10,5,270,\n");
    let npz = d.join("w.npz");
    let o = wind(
        &dem,
        &st,
        &npz,
        &["--nz", "8", "--dz-m", "10", "--terrain", "cut"],
    );
    assert!(o.status.success(), "{}", text(&o));
    let a = read_npz(&npz).unwrap();
    assert_eq!(get(&a, "theta").shape, [8, 5, 6]);
    let theta = f64s(get(&a, "theta"));
    assert!(
        theta[0] < 0.5,
        "north-west cell, lowest layer: {}",
        theta[0]
    );
    for row in 3..5 {
        for col in 3..6 {
            assert_eq!(theta[row * 6 + col], 1.0, "row {row} col {col}");
        }
    }
}

/// A south-westerly station (from 225°) over flat ground: the wind blows to the north-east, so
/// u (positive east) and v (positive north) are both positive everywhere and w (positive up) is
/// zero; the direction raster is 225° in every cell and the speed raster is the profile's speed
/// at the output height, the same in every cell.
#[test]
fn flat_ground_signs_and_direction_raster() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let dem = asc(d, 8, 6, &[120.0; 48]);
    let st = stations(d, "a,100,80,10,6,225,\n");
    let (npz, spd, dirn) = (d.join("w.npz"), d.join("speed.tif"), d.join("dir.tif"));
    let o = wind(
        &dem,
        &st,
        &npz,
        &[
            "--speed-out",
            s(&spd),
            "--direction-out",
            s(&dirn),
            "--height-agl-m",
            "10",
            "--profile",
            "uniform",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let a = read_npz(&npz).unwrap();
    // 6 m/s from 225°: u = v = 6 sin 45° = 4.2426 m/s (f32 storage: 1e-5 relative).
    let c = 6.0 * std::f64::consts::FRAC_1_SQRT_2;
    for (name, want) in [("u", c), ("v", c), ("w", 0.0)] {
        for (i, x) in f64s(get(&a, name)).iter().enumerate() {
            assert!(
                (x - want).abs() <= 1e-5 * c,
                "{name}[{i}] = {x}, expected {want}"
            );
        }
    }
    let (dr, _) = read_raster(&dirn).unwrap();
    for x in dr.band_f64(0) {
        assert!((x - 225.0).abs() <= 1e-3, "direction {x}");
    }
    let (sr, _) = read_raster(&spd).unwrap();
    for x in sr.band_f64(0) {
        assert!((x - 6.0).abs() <= 1e-5 * 6.0, "speed {x}");
    }
}

/// A GeoTIFF written by `synth terrain --crs` and the rasters `wind` derives from it read back
/// with the grid and EPSG code that were asked for.
#[test]
fn geotiff_georeferencing_reads_back_as_asked() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (dem, st) = (d.join("dem.tif"), d.join("st.csv"));
    let o = geofield(&[
        "synth",
        "terrain",
        "--kind",
        "gaussian-hill",
        "--out",
        s(&dem),
        "--stations",
        s(&st),
        "--cols",
        "24",
        "--rows",
        "20",
        "--cell-size-m",
        "30",
        "--x-min-m",
        "480000",
        "--y-min-m",
        "5100000",
        "--crs",
        "EPSG:32633",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let (demr, dm) = read_raster(&dem).unwrap();
    let h = &demr.grid;
    assert_eq!(
        (h.x_min_m, h.y_max_m, h.cell_size_m, h.cols, h.rows),
        (480000.0, 5100000.0 + 20.0 * 30.0, 30.0, 24, 20),
        "the DEM's grid as asked"
    );
    assert_eq!(dm.crs_epsg, Some(32633));
    let (npz, spd) = (d.join("w.npz"), d.join("speed.tif"));
    let o = wind(&dem, &st, &npz, &["--speed-out", s(&spd)]);
    assert!(o.status.success(), "{}", text(&o));
    let (sr, sm) = read_raster(&spd).unwrap();
    assert_eq!(sm.crs_epsg, Some(32633));
    let g = &sr.grid;
    assert_eq!(
        (g.x_min_m, g.y_max_m, g.cell_size_m, g.cols, g.rows),
        (h.x_min_m, h.y_max_m, h.cell_size_m, h.cols, h.rows),
        "the speed raster lies on the DEM's grid"
    );
}
