//! `geofield wind` and `geofield synth terrain` end to end.

use std::path::{Path, PathBuf};

use geofield_io::{NpyArray, NpyData, read_npz, read_raster};

use super::{geofield, s, text};

pub(super) const HEADER: &str = "id,x_m,y_m,height_agl_m,speed_m_per_s,direction_deg,stability";

/// A 24 x 20 Gaussian hill of 30 m cells (100..180 m) with three stations, written by
/// `geofield synth terrain`.
pub(super) fn hill(dir: &Path) -> (PathBuf, PathBuf) {
    let dem = dir.join("dem.tif");
    let st = dir.join("st.csv");
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
        "--height-m",
        "80",
        "--station-count",
        "3",
        "--crs",
        "EPSG:32633",
        // The tests' stations and expectations sit relative to (0, 0).
        "--x-min-m",
        "0",
        "--y-min-m",
        "0",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    (dem, st)
}

pub(super) fn stations(dir: &Path, body: &str) -> PathBuf {
    let p = dir.join("st.csv");
    std::fs::write(&p, format!("{HEADER}\n{body}")).unwrap();
    p
}

/// An ESRI ASCII grid of `cols x rows` 30 m cells with the south-west corner at (0, 0).
pub(super) fn asc(dir: &Path, cols: usize, rows: usize, values: &[f64]) -> PathBuf {
    let p = dir.join("dem.asc");
    let mut t = format!(
        "ncols {cols}\nnrows {rows}\nxllcorner 0\nyllcorner 0\ncellsize 30\nNODATA_value -9999\n"
    );
    for r in 0..rows {
        let line: Vec<String> = values[r * cols..(r + 1) * cols]
            .iter()
            .map(|v| v.to_string())
            .collect();
        t.push_str(&line.join(" "));
        t.push('\n');
    }
    std::fs::write(&p, t).unwrap();
    p
}

pub(super) fn wind(dem: &Path, st: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "wind",
        "--dem",
        s(dem),
        "--stations",
        s(st),
        "--out",
        s(out),
    ];
    // 16 layers of 10 m unless the case sets its own.
    if !extra.contains(&"--nz") {
        args.extend_from_slice(&["--nz", "16", "--dz-m", "10"]);
    }
    args.extend_from_slice(extra);
    geofield(&args)
}

fn arrays(p: &Path) -> Vec<(String, NpyArray)> {
    read_npz(p).unwrap()
}

fn get<'a>(a: &'a [(String, NpyArray)], name: &str) -> &'a NpyArray {
    &a.iter().find(|(n, _)| n == name).unwrap().1
}

fn f32s(a: &NpyArray) -> &[f32] {
    match &a.data {
        NpyData::F32(v) => v,
        other => panic!("expected f32, got {other:?}"),
    }
}

/// Files in `dir` besides the inputs (staging folders included).
pub(super) fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn wind_writes_every_format_with_the_documented_shapes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (dem, st) = hill(d);
    let (npz, spd, dirn, png, json) = (
        d.join("w.npz"),
        d.join("speed.tif"),
        d.join("dir.asc"),
        d.join("m.png"),
        d.join("r.json"),
    );
    let o = wind(
        &dem,
        &st,
        &npz,
        &[
            "--speed-out",
            s(&spd),
            "--direction-out",
            s(&dirn),
            "--png",
            s(&png),
            "--json",
            s(&json),
        ],
    );
    let m = text(&o);
    assert!(o.status.success(), "{m}");
    assert!(
        m.contains("grid 24 x 20 x 16") && m.contains("3 used"),
        "{m}"
    );
    let a = arrays(&npz);
    let shape = |n: &str| get(&a, n).shape.clone();
    assert_eq!(shape("u"), [16, 20, 25]);
    assert_eq!(shape("v"), [16, 21, 24]);
    assert_eq!(shape("w"), [17, 20, 24]);
    assert_eq!(shape("solid"), [16, 20, 24]);
    assert_eq!(shape("z_faces_m"), [17]);
    assert_eq!(shape("terrain_m"), [20, 24]);
    assert_eq!(shape("stability"), [20, 24]);
    for n in ["x_min_m", "y_max_m", "cell_size_m"] {
        assert!(shape(n).is_empty(), "{n} is 0-d");
    }
    assert_eq!(get(&a, "cell_size_m").data, NpyData::F64(vec![30.0]));
    assert_eq!(get(&a, "y_max_m").data, NpyData::F64(vec![600.0]));
    let NpyData::U8(solid) = &get(&a, "solid").data else {
        panic!("solid is u8")
    };
    // The hill's top (80 m over the plain) is solid up to ~8 layers; the plain is not.
    assert!(solid.iter().filter(|&&x| x == 1).count() > 20);
    assert_eq!(solid[0], 0);
    assert!(f32s(get(&a, "u")).iter().all(|x| x.is_finite()));
    // Speed and direction rasters: the DEM's grid and CRS, finite everywhere.
    let (sr, meta) = read_raster(&spd).unwrap();
    assert_eq!((sr.grid.cols, sr.grid.rows), (24, 20));
    assert_eq!(meta.crs_epsg, Some(32633));
    let sv = sr.band_f64(0);
    assert!(sv.iter().all(|x| x.is_finite() && *x >= 0.0) && sv.iter().any(|&x| x > 1.0));
    let (dr, _) = read_raster(&dirn).unwrap();
    assert!(dr.band_f64(0).iter().all(|x| (0.0..360.0).contains(x)));
    assert_eq!(&std::fs::read(&png).unwrap()[1..4], b"PNG");
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(j["stations_used"], 3);
    assert_eq!(j["report"]["converged"], true);
    assert!(j["report"]["max_div_per_s"].as_f64() <= j["report"]["threshold_per_s"].as_f64());
    // npz, speed.tif, dir.asc and its .prj (the DEM's CRS), the map, the report.
    assert_eq!(j["outputs"].as_array().unwrap().len(), 6);
    assert!(d.join("dir.prj").exists());
    let NpyData::I32(epsg) = &get(&a, "crs_epsg").data else {
        panic!("crs_epsg is i32")
    };
    assert_eq!(epsg, &[32633], "the DEM's CRS carried to the npz");

    // NetCDF and VTK image data.
    let nc = d.join("w.nc");
    let o = wind(&dem, &st, &nc, &["-q"]);
    assert!(o.status.success(), "{}", text(&o));
    let bytes = std::fs::read(&nc).unwrap();
    assert_eq!(&bytes[..4], b"CDF\x01");
    let has = |t: &str| bytes.windows(t.len()).any(|w| w == t.as_bytes());
    for t in [
        "eastward_wind",
        "upward_air_velocity",
        "wind_speed",
        "_FillValue",
        "surface_altitude",
    ] {
        assert!(has(t), "{t} in the NetCDF header");
    }
    let vti = d.join("w.vti");
    let o = wind(&dem, &st, &vti, &[]);
    assert!(o.status.success(), "{}", text(&o));
    let head = String::from_utf8_lossy(&std::fs::read(&vti).unwrap()[..600]).into_owned();
    assert!(
        head.contains("ImageData") && head.contains("WholeExtent=\"0 24 0 20 0 16\""),
        "{head}"
    );
    assert!(!listing(d).iter().any(|f| f.starts_with(".geofield-wind-")));
}

#[test]
fn wind_outside_stations_are_reported_nodata_filled_and_blocks_averaged() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // 6 x 4 cells of 30 m (0..180 x 0..120), two nodata cells.
    let mut z = vec![100.0; 24];
    z[7] = -9999.0;
    z[8] = -9999.0;
    z[9] = 130.0;
    let dem = asc(d, 6, 4, &z);
    let st = stations(d, "in,45,45,10,4,270,\nfar,5000,45,10,4,270,C\n");
    let out = d.join("w.npz");
    let json = d.join("r.json");
    let o = wind(&dem, &st, &out, &["--json", s(&json)]);
    let m = text(&o);
    assert!(o.status.success(), "{m}");
    assert!(
        m.contains("1 used, 1 ignored") && m.contains("ignored far"),
        "{m}"
    );
    assert!(m.contains("2 nodata cells filled"), "{m}");
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(j["ignored_stations"][0]["id"], "far");
    assert_eq!(j["dem_nodata_filled"], 2);
    let a = arrays(&out);
    let NpyData::F64(t) = &get(&a, "terrain_m").data else {
        panic!("terrain is f64")
    };
    // Cells 7 and 8 (row 1, cols 1 and 2) are both reached from row 0 (100 m) before the
    // 130 m cell 9 is visited.
    assert!(t.iter().all(|h| h.is_finite()));
    assert_eq!((t[7], t[8], t[9]), (100.0, 100.0, 130.0));

    // --cell-size-m 60: 2 x 2 blocks, 3 x 2 columns.
    let o = wind(&dem, &st, &out, &["--cell-size-m", "60"]);
    assert!(o.status.success(), "{}", text(&o));
    let a = arrays(&out);
    assert_eq!(get(&a, "terrain_m").shape, [2, 3]);
    assert_eq!(get(&a, "u").shape, [16, 2, 4]);
}

#[test]
fn wind_zero_wind_is_a_zero_field() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (dem, _) = hill(d);
    let st = stations(d, "a,300,300,10,0,0,\nb,500,200,10,0,90,D\n");
    let out = d.join("w.npz");
    let spd = d.join("s.asc");
    let o = wind(&dem, &st, &out, &["--speed-out", s(&spd)]);
    assert!(o.status.success(), "{}", text(&o));
    let a = arrays(&out);
    for n in ["u", "v", "w"] {
        assert!(f32s(get(&a, n)).iter().all(|&x| x == 0.0), "{n} is zero");
    }
    let (r, _) = read_raster(&spd).unwrap();
    assert!(r.band_f64(0).iter().all(|&x| x == 0.0));
}

#[test]
fn synth_terrain_writes_every_kind_and_refuses_npy() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for kind in ["gaussian-hill", "ridge", "valley", "flat"] {
        let dem = d.join(format!("{kind}.asc"));
        let o = geofield(&[
            "synth",
            "terrain",
            "--kind",
            kind,
            "--out",
            s(&dem),
            "--cols",
            "10",
            "--rows",
            "8",
        ]);
        assert!(o.status.success(), "{}", text(&o));
        let (r, _) = read_raster(&dem).unwrap();
        assert_eq!(
            (r.grid.cols, r.grid.rows, r.grid.cell_size_m),
            (10, 8, 30.0)
        );
    }
    let st = d.join("st.csv");
    let o = geofield(&[
        "synth",
        "terrain",
        "--kind",
        "ridge",
        "--out",
        s(&d.join("r.tif")),
        "--stations",
        s(&st),
        "--station-count",
        "4",
        "--stability",
        "e",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let csv = std::fs::read_to_string(&st).unwrap();
    assert!(csv.starts_with(HEADER), "{csv}");
    assert_eq!(csv.lines().count(), 5);
    assert!(csv.lines().skip(1).all(|l| l.ends_with(",E")), "{csv}");
    let npy = d.join("t.npy");
    let o = geofield(&["synth", "terrain", "--kind", "flat", "--out", s(&npy)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).contains(".tif or .asc") && !npy.exists(),
        "{}",
        text(&o)
    );
}

#[test]
fn wind_rasters_alone_need_no_3d_output_and_nothing_to_write_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (dem, st) = hill(d);
    let spd = d.join("speed.tif");
    let dirn = d.join("dir.asc");
    let o = geofield(&[
        "wind",
        "--dem",
        s(&dem),
        "--stations",
        s(&st),
        "--nz",
        "16",
        "--dz-m",
        "10",
        "--speed-out",
        s(&spd),
        "--direction-out",
        s(&dirn),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let (r, _) = read_raster(&spd).unwrap();
    assert!(r.band_f64(0).iter().all(|&x| x.is_finite() && x > 0.0));
    assert!(dirn.exists());
    let before = listing(d);
    let o = geofield(&[
        "wind",
        "--dem",
        s(&dem),
        "--stations",
        s(&st),
        "--nz",
        "16",
        "--dz-m",
        "10",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("nothing to write"), "{}", text(&o));
    assert_eq!(listing(d), before);
}

/// Stretched layers from --dz-m, --growth and --top-m (issue 15): the faces grow by the factor
/// up to the top above the highest ground; the summary and --json report how the solve ended;
/// nonsense is refused naming the flag.
#[test]
fn wind_stretched_layers_and_the_convergence_report() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let (dem, st) = hill(d);
    let (out, json) = (d.join("w.npz"), d.join("r.json"));
    let run = |extra: &[&str]| {
        let mut args = vec![
            "wind",
            "--dem",
            s(&dem),
            "--stations",
            s(&st),
            "--out",
            s(&out),
        ];
        args.extend_from_slice(extra);
        geofield(&args)
    };
    let o = run(&[
        "--dz-m",
        "2",
        "--growth",
        "1.2",
        "--top-m",
        "50",
        "--json",
        s(&json),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("convergence: converged after"),
        "{}",
        text(&o)
    );
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let z: Vec<f64> = j["z_faces_m"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert!((z[1] - z[0] - 2.0).abs() < 1e-9, "{z:?}");
    for k in 1..z.len() - 1 {
        let ratio = (z[k + 1] - z[k]) / (z[k] - z[k - 1]);
        assert!((ratio - 1.2).abs() < 1e-9, "{z:?}");
    }
    // The hill: 100 m plain, 80 m high (its highest cell a little lower): the top is the first
    // face at or above the highest ground + 50 m, at most 180 + 50 m plus a layer.
    let top = z[z.len() - 1];
    let last = z[z.len() - 1] - z[z.len() - 2];
    assert!(top >= 150.0 && top - last < 230.0, "{z:?}");
    let r = &j["report"];
    assert_eq!(r["stop"], "converged");
    assert!(r["last_residual_per_s"].as_f64() <= r["threshold_per_s"].as_f64());
    assert!(r["first_residual_per_s"].as_f64() > r["last_residual_per_s"].as_f64());

    for (extra, flag) in [
        (vec!["--growth", "0.5"], "--growth"),
        (vec!["--growth", "1.2", "--top-m=-3"], "--top-m"),
        (vec!["--growth", "1.2", "--dz-m", "0"], "--dz-m"),
        (vec!["--growth", "1.2", "--levels-m", "10,20"], "--levels-m"),
    ] {
        let o = run(&extra);
        assert!(!o.status.success());
        assert!(text(&o).contains(flag), "{extra:?}: {}", text(&o));
    }
}

#[test]
fn wind_terrain_cut_or_stairs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A 6 x 4 slope rising 7 m per 30 m column: cut cells differ from stair steps.
    let z: Vec<f64> = (0..24).map(|i| 100.0 + 7.0 * (i % 6) as f64).collect();
    let dem = asc(d, 6, 4, &z);
    let st = stations(d, "in,45,45,10,4,270,\n");
    let out = d.join("w.npz");
    let json = d.join("r.json");
    let o = wind(&dem, &st, &out, &["--json", s(&json)]);
    assert!(o.status.success(), "{}", text(&o));
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(j["report"]["terrain"], "cut");
    // The cut cells' open fractions come with the faces, shaped as them, in [0, 1].
    let a = arrays(&out);
    assert_eq!(get(&a, "ax").shape, get(&a, "u").shape);
    assert_eq!(get(&a, "theta").shape, [16, 4, 6]);
    assert!(
        f32s(get(&a, "theta"))
            .iter()
            .all(|&t| (0.0..=1.0).contains(&t))
    );
    let o = wind(
        &dem,
        &st,
        &out,
        &["--terrain", "stairs", "--json", s(&json)],
    );
    assert!(o.status.success(), "{}", text(&o));
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(j["report"]["terrain"], "stairs");
    assert!(!arrays(&out).iter().any(|(n, _)| n == "theta"));
    // WEST takes only its stair steps.
    let o = wind(&dem, &st, &out, &["--model", "west", "--terrain", "cut"]);
    assert!(
        !o.status.success() && text(&o).contains("terrain"),
        "{}",
        text(&o)
    );
}
