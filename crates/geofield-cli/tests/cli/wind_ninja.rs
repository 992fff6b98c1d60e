//! `geofield wind` used as WindNinja: domain-average initialisation, WindNinja's station CSV,
//! vegetation presets, its ASCII outputs, mast points, and the DEM's CRS.

use std::path::{Path, PathBuf};

use geofield_io::{NpyData, read_npz, read_raster};

use super::wind::listing;
use super::{geofield, s, text};

/// South-west corner of the test DEMs in UTM zone 11N (EPSG:32611), near 46.9 N, 114 W.
const X0: f64 = 728_000.0;
const Y0: f64 = 5_198_000.0;

/// A flat ESRI ASCII DEM of `cols x rows` 30 m cells at 100 m, with a `.prj` of EPSG `epsg`
/// (none when `None`), south-west corner (x0, y0).
fn flat_dem(dir: &Path, name: &str, cols: usize, rows: usize, epsg: Option<u16>) -> PathBuf {
    let p = dir.join(format!("{name}.asc"));
    let mut t = format!(
        "ncols {cols}\nnrows {rows}\nxllcorner {X0}\nyllcorner {Y0}\ncellsize 30\nNODATA_value -9999\n"
    );
    for _ in 0..rows {
        t.push_str(&vec!["100"; cols].join(" "));
        t.push('\n');
    }
    std::fs::write(&p, t).unwrap();
    if let Some(code) = epsg {
        let wkt = geofield_io::crs::epsg_wkt(code).unwrap();
        std::fs::write(dir.join(format!("{name}.prj")), wkt).unwrap();
    }
    p
}

/// The values of an ESRI ASCII grid and its header (ncols, nrows, cellsize).
fn read_asc(p: &Path) -> ((usize, usize, f64), Vec<f64>) {
    let (r, _) = read_raster(p).unwrap();
    let g = r.grid;
    ((g.cols, g.rows, g.cell_size_m), r.band_f64(0))
}

fn run(args: &[&str]) -> (bool, String) {
    let o = geofield(args);
    (o.status.success(), text(&o))
}

#[test]
fn domain_average_uniform_wind_ascii_outputs_and_masts() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let dem = flat_dem(d, "flat", 20, 16, Some(32611));
    let ascii = d.join("ascii");
    let (masts, values) = (d.join("masts.csv"), d.join("values.csv"));
    // Inside at a column centre, inside between columns, outside the DEM.
    std::fs::write(
        &masts,
        format!(
            "id,x_m,y_m,height_agl_m\nm1,{},{},10\nm2,{},{},37.5\nfar,{},{},10\n",
            X0 + 45.0,
            Y0 + 45.0,
            X0 + 100.0,
            Y0 + 222.0,
            X0 - 5000.0,
            Y0
        ),
    )
    .unwrap();
    let json = d.join("r.json");
    // 10 mph from the west (on the grid's north: --grid-directions), uniform with height: over
    // flat ground the first guess is already divergence-free, so every output must be exactly
    // 10 mph = 4.4704 m/s from 270 degrees.
    let (ok, m) = run(&[
        "wind",
        "--dem",
        s(&dem),
        "--speed",
        "10",
        "--speed-units",
        "mph",
        "--direction",
        "270",
        "--grid-directions",
        "--input-height-m",
        "10",
        "--profile",
        "uniform",
        "--nz",
        "8",
        "--ascii-out",
        s(&ascii),
        "--output-resolution-m",
        "60",
        "--points-in",
        s(&masts),
        "--points-out",
        s(&values),
        "--json",
        s(&json),
    ]);
    assert!(ok, "{m}");
    assert!(
        !m.contains("warning"),
        "a DEM with a CRS gives no warning: {m}"
    );
    // WindNinja's names: <dem-stem>_<dir>_<speed>_<res>m_{vel,ang}.asc, each with a .prj.
    let mut files = listing(&ascii);
    files.sort();
    assert_eq!(
        files,
        [
            "flat_270_10_60m_ang.asc",
            "flat_270_10_60m_ang.prj",
            "flat_270_10_60m_vel.asc",
            "flat_270_10_60m_vel.prj"
        ]
    );
    let ((cols, rows, cell), vel) = read_asc(&ascii.join("flat_270_10_60m_vel.asc"));
    // 600 m x 480 m at 60 m: 10 x 8 cells.
    assert_eq!((cols, rows, cell), (10, 8, 60.0));
    let mps = 10.0 * 1609.344 / 3600.0;
    // f32 output: relative rounding 6e-8.
    assert!(vel.iter().all(|v| (v - mps).abs() < 1e-5), "{vel:?}");
    let (_, ang) = read_asc(&ascii.join("flat_270_10_60m_ang.asc"));
    assert!(ang.iter().all(|a| (a - 270.0).abs() < 1e-4), "{ang:?}");
    let (_, meta) = read_raster(&ascii.join("flat_270_10_60m_vel.asc")).unwrap();
    assert_eq!(meta.crs_epsg, Some(32611), "the .prj carries the DEM's CRS");
    // Masts: the header, two inside with the uniform wind, one outside left empty.
    let t = std::fs::read_to_string(&values).unwrap();
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(
        lines[0],
        "id,x_m,y_m,height_agl_m,ground_m,u,v,w,speed,direction,inside"
    );
    for l in &lines[1..3] {
        let f: Vec<f64> = l.split(',').skip(1).map(|x| x.parse().unwrap()).collect();
        // ground 100 m, u = speed, v = w = 0, from 270, inside.
        assert_eq!(f[3], 100.0, "{l}");
        assert!(
            (f[4] - mps).abs() < 1e-12 && f[5].abs() < 1e-12 && f[6].abs() < 1e-12,
            "{l}"
        );
        assert!(
            (f[7] - mps).abs() < 1e-12 && (f[8] - 270.0).abs() < 1e-9,
            "{l}"
        );
        assert_eq!(f[9], 1.0);
    }
    assert!(
        lines[3].starts_with("far,") && lines[3].ends_with(",,,,,,,0"),
        "{}",
        lines[3]
    );
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(j["dem_crs_epsg"], 32611);
    assert_eq!(j["points"], 3);
    assert!(
        j["stations_file"]
            .as_str()
            .unwrap()
            .contains("domain-average")
    );
}

#[test]
fn vegetation_sets_the_displaced_log_profile_above_the_canopy() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let dem = flat_dem(d, "flat", 8, 8, Some(32611));
    let spd = d.join("s.tif");
    let (masts, values) = (d.join("m.csv"), d.join("v.csv"));
    std::fs::write(
        &masts,
        format!(
            "id,x_m,y_m,height_agl_m\nm,{},{},29.8\n",
            X0 + 101.0,
            Y0 + 77.0
        ),
    )
    .unwrap();
    // Layer centres above the ground: 10.2, 25.4, 45.2, 80, ... Trees (z0 1, d 12, h 15.4): the
    // input height 10 m above the canopy is 25.4 m above the ground, the second centre.
    let go = |out_h: &str| {
        let (ok, m) = run(&[
            "wind",
            "--dem",
            s(&dem),
            "--speed",
            "10",
            "--direction",
            "180",
            "--input-height-m",
            "10",
            "--vegetation",
            "trees",
            "--levels-m",
            "20.4,30.4,60,100,150,200",
            "--output-height-m",
            out_h,
            "--speed-out",
            s(&spd),
            "--points-in",
            s(&masts),
            "--points-out",
            s(&values),
        ]);
        assert!(ok, "{m}");
        read_raster(&spd).unwrap().0.band_f64(0)
    };
    // At the input height: the input speed (f32 output).
    assert!(go("10").iter().all(|v| (v - 10.0).abs() < 1e-5));
    // 29.8 m above the canopy = 45.2 m above the ground, the third centre: WindNinja's log law
    // U ln((z - d)/z0) / ln((H + h - d)/z0) = 10 ln(33.2) / ln(13.4).
    let expect = 10.0 * 33.2f64.ln() / 13.4f64.ln();
    assert!(
        go("29.8").iter().all(|v| (v - expect).abs() < 1e-4),
        "{expect}"
    );
    // The mast at 29.8 m above the canopy too (f64 output, the field's rounding).
    let t = std::fs::read_to_string(&values).unwrap();
    let speed: f64 = t
        .lines()
        .nth(1)
        .unwrap()
        .split(',')
        .nth(8)
        .unwrap()
        .parse()
        .unwrap();
    assert!((speed - expect).abs() < 1e-9, "{speed} vs {expect}");
    // --vegetation conflicts with --roughness-m and with a non-log profile.
    for extra in [["--roughness-m", "0.2"], ["--profile", "power"]] {
        let mut args = vec![
            "wind",
            "--dem",
            s(&dem),
            "--speed",
            "5",
            "--direction",
            "0",
            "--vegetation",
            "grass",
            "--speed-out",
            s(&spd),
        ];
        args.extend_from_slice(&extra);
        let o = geofield(&args);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    }
}

/// WindNinja's header, as in its `data/*_wx_stations.csv`.
const NINJA_HEADER: &str = "\"Station_Name\",\"Coord_Sys(PROJCS,GEOGCS)\",\"Datum(WGS84,NAD83,NAD27)\",\"Lat/YCoord\",\"Lon/XCoord\",\"Height\",\"Height_Units(meters,feet)\",\"Speed\",\"Speed_Units(mph,kph,mps,kts)\",\"Direction(degrees)\",\"Temperature\",\"Temperature_Units(F,C)\",\"Cloud_Cover(%)\",\"Radius_of_Influence\",\"Radius_of_Influence_Units(miles,feet,meters,km)\"";

#[test]
fn windninja_station_file_is_read_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let dem = flat_dem(d, "flat", 20, 16, Some(32611));
    let st = d.join("wx.csv");
    // One PROJCS station in the DEM (20 kts), one GEOGCS station outside it (its projected
    // position is printed), one GEOGCS inside.
    std::fs::write(
        &st,
        format!(
            "{NINJA_HEADER}\n\"a\",\"PROJCS\",\"WGS84\",{},{},20,\"feet\",20,\"kts\",270,70,\"F\",0,-1,\"miles\"\n\
             \"north\",\"GEOGCS\",\"WGS84\",47.0,-114.0,10,\"meters\",5,\"mps\",270,70,\"F\",0,-1,\"miles\"\n\
             \"in\",\"GEOGCS\",\"WGS84\",46.9,-114.0,10,\"meters\",20,\"kts\",270,70,\"F\",0,-1,\"miles\"\n",
            Y0 + 200.0,
            X0 + 300.0
        ),
    )
    .unwrap();
    let spd = d.join("s.asc");
    let (ok, m) = run(&[
        "wind",
        "--dem",
        s(&dem),
        "--stations",
        s(&st),
        "--grid-directions",
        "--profile",
        "uniform",
        "--nz",
        "8",
        "--speed-out",
        s(&spd),
    ]);
    assert!(ok, "{m}");
    assert!(m.contains("2 used, 1 ignored"), "{m}");
    // (47 N, 114 W) on WGS 84 in UTM 11N is (728069.565, 5209532.848) by PROJ (pyproj 3.7);
    // the message rounds to 0.1 m.
    assert!(m.contains("(728069.6, 5209532.8)"), "{m}");
    // Both used stations report 20 kts = 10.2889 m/s from the west: the uniform field.
    let (_, v) = read_asc(&spd);
    let kts = 20.0 * 1852.0 / 3600.0;
    assert!(v.iter().all(|x| (x - kts).abs() < 1e-5), "{kts} {v:?}");

    // A bad row: exit 2, naming the file, the line and the column.
    for (row, column) in [
        (
            "\"b\",\"UTM\",\"WGS84\",1,2,10,\"meters\",5,\"mps\",270,,,,,",
            "Coord_Sys",
        ),
        (
            "\"b\",\"PROJCS\",\"WGS84\",1,2,10,\"yards\",5,\"mps\",270,,,,,",
            "Height_Units",
        ),
        (
            "\"b\",\"PROJCS\",\"WGS84\",1,2,10,\"meters\",5,\"knots/h\",270,,,,,",
            "Speed_Units",
        ),
        (
            "\"b\",\"GEOGCS\",\"ED50\",46.9,-114,10,\"meters\",5,\"mps\",270,,,,,",
            "Datum",
        ),
        (
            "\"b\",\"PROJCS\",\"WGS84\",1,2,10,\"meters\",5,\"mps\",400,,,,,",
            "Direction",
        ),
    ] {
        std::fs::write(&st, format!("{NINJA_HEADER}\n{row}\n")).unwrap();
        let o = geofield(&[
            "wind",
            "--dem",
            s(&dem),
            "--stations",
            s(&st),
            "--speed-out",
            s(&spd),
        ]);
        let m = text(&o);
        assert_eq!(o.status.code(), Some(2), "{m}");
        assert!(
            m.contains("wx.csv:2") && m.contains(column),
            "{column}: {m}"
        );
    }
    // GEOGCS stations need the DEM's CRS.
    let bare = flat_dem(d, "bare", 20, 16, None);
    std::fs::write(
        &st,
        format!("{NINJA_HEADER}\n\"n\",\"GEOGCS\",\"WGS84\",46.9,-114,10,\"meters\",5,\"mps\",270,,,,,\n"),
    )
    .unwrap();
    let o = geofield(&[
        "wind",
        "--dem",
        s(&bare),
        "--stations",
        s(&st),
        "--speed-out",
        s(&spd),
    ]);
    let m = text(&o);
    assert_eq!(o.status.code(), Some(2), "{m}");
    assert!(m.contains("declares none"), "{m}");
}

#[test]
fn dem_crs_is_checked_warned_and_partial_blocks_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = d.join("w.npz");
    // A DEM declared geographic: refused with the way to reproject it, nothing written.
    let geo = flat_dem(d, "geo", 6, 5, Some(4326));
    let (ok, m) = run(&[
        "wind",
        "--dem",
        s(&geo),
        "--speed",
        "5",
        "--direction",
        "90",
        "--out",
        s(&out),
    ]);
    assert!(
        !ok && m.contains("gdalwarp") && m.contains("geographic"),
        "{m}"
    );
    // A DEM without a CRS whose numbers look like degrees: refused too.
    let deg = d.join("deg.asc");
    std::fs::write(
        &deg,
        "ncols 3\nnrows 3\nxllcorner -114.0\nyllcorner 46.9\ncellsize 0.001\n1 2 3\n4 5 6\n7 8 9\n",
    )
    .unwrap();
    let (ok, m) = run(&[
        "wind",
        "--dem",
        s(&deg),
        "--speed",
        "5",
        "--direction",
        "90",
        "--out",
        s(&out),
    ]);
    assert!(!ok && m.contains("look like degrees"), "{m}");
    assert!(!out.exists());
    // No CRS: one warning line, and the run goes on.
    let bare = flat_dem(d, "bare", 5, 3, None);
    let (ok, m) = run(&[
        "wind",
        "--dem",
        s(&bare),
        "--speed",
        "5",
        "--direction",
        "90",
        "--out",
        s(&out),
        "--nz",
        "4",
        "--cell-size-m",
        "60",
    ]);
    assert!(ok, "{m}");
    let warnings: Vec<&str> = m.lines().filter(|l| l.starts_with("warning")).collect();
    assert_eq!(warnings.len(), 1, "{m}");
    assert!(
        warnings[0].contains("no coordinate reference system"),
        "{m}"
    );
    // 5 x 3 cells in 2 x 2 blocks: 3 x 2 columns, nothing cut (a note says so).
    assert!(m.contains("do not divide into 2 x 2 blocks"), "{m}");
    let a = read_npz(&out).unwrap();
    let t = &a.iter().find(|(n, _)| n == "terrain_m").unwrap().1;
    assert_eq!(t.shape, [2, 3]);
    assert_eq!(t.data, NpyData::F64(vec![100.0; 6]));
}

/// A DEM with a hill (so each direction gives another field), 24 x 20 cells of 30 m.
fn hill_dem(dir: &Path) -> PathBuf {
    let p = dir.join("hill.asc");
    let mut t = format!(
        "ncols 24\nnrows 20\nxllcorner {X0}\nyllcorner {Y0}\ncellsize 30\nNODATA_value -9999\n"
    );
    for r in 0..20 {
        let row: Vec<String> = (0..24)
            .map(|c| {
                let (dx, dy) = (c as f64 - 11.5, r as f64 - 9.5);
                format!("{:.2}", 100.0 + 80.0 * (-(dx * dx + dy * dy) / 30.0).exp())
            })
            .collect();
        t.push_str(&row.join(" "));
        t.push('\n');
    }
    std::fs::write(&p, t).unwrap();
    let wkt = geofield_io::crs::epsg_wkt(32611).unwrap();
    std::fs::write(dir.join("hill.prj"), wkt).unwrap();
    p
}

/// `--directions 0:270:90 --speeds 3,6`: eight cases, each file byte-identical to the same case
/// run alone with `--speed` and `--direction`; outputs every case would overwrite are refused.
#[test]
fn a_wind_atlas_is_its_cases_run_alone() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let dem = hill_dem(d);
    let (atlas, alone) = (d.join("atlas"), d.join("alone"));
    let common = ["--nz", "6", "--dz-m", "20", "-q"];
    let mut args = vec!["wind", "--dem", s(&dem), "--directions", "0:270:90"];
    args.extend(["--speeds", "3,6", "--ascii-out", s(&atlas)]);
    args.extend(common);
    let (ok, m) = run(&args);
    assert!(ok, "{m}");
    let mut names: Vec<String> = std::fs::read_dir(&atlas)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".asc"))
        .collect();
    names.sort();
    assert_eq!(names.len(), 16, "{names:?}");
    for (dir_deg, speed) in [("90", "3"), ("270", "6")] {
        let mut one = vec!["wind", "--dem", s(&dem), "--direction", dir_deg];
        one.extend(["--speed", speed, "--ascii-out", s(&alone)]);
        one.extend(common);
        let (ok, m) = run(&one);
        assert!(ok, "{m}");
        for kind in ["vel", "ang"] {
            let name = format!("hill_{dir_deg}_{speed}_30m_{kind}.asc");
            let a = std::fs::read(atlas.join(&name)).unwrap();
            let b = std::fs::read(alone.join(&name)).unwrap();
            assert!(a == b, "{name} differs from the case run alone");
        }
    }
    let mut bad = vec![
        "wind",
        "--dem",
        s(&dem),
        "--directions",
        "0,90",
        "--speeds",
        "3",
    ];
    let out = d.join("f.nc");
    bad.extend(["--ascii-out", s(&atlas), "--out", s(&out)]);
    let (ok, m) = run(&bad);
    assert!(!ok && m.contains("--out") && m.contains("atlas"), "{m}");
    let (ok, m) = run(&[
        "wind",
        "--dem",
        s(&dem),
        "--directions",
        "5:1:1",
        "--speeds",
        "3",
        "--ascii-out",
        s(&atlas),
    ]);
    assert!(!ok && m.contains("STEP"), "{m}");
}

/// By default a direction is meteorological, from true north, as in WindNinja: a domain-average
/// wind from 270° true on the flat DEM near 114° W, 46.9° N in UTM 11N (2.9° east of the
/// central meridian) reads 270° − γ on the grid everywhere, γ = atan(tan(λ − λ₀) sin φ) the
/// meridian convergence at the DEM centre (Snyder 1987, eq. 8-11; about +2.2° here). Tolerance:
/// 1e-6 rad for the sphere's formula against the ellipsoid and the bearing's 1 m step, plus the
/// f32 raster's rounding of ~268 (1.5e-5).
#[test]
fn directions_are_from_true_north_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let dem = flat_dem(d, "flat", 20, 16, Some(32611));
    let ang = d.join("ang.tif");
    let (ok, m) = run(&[
        "wind",
        "--dem",
        s(&dem),
        "--speed",
        "5",
        "--direction",
        "270",
        "--profile",
        "uniform",
        "--nz",
        "8",
        "--direction-out",
        s(&ang),
    ]);
    assert!(ok, "{m}");
    assert!(m.contains("directions: from true north"), "{m}");
    let (xc, yc) = (X0 + 300.0, Y0 + 240.0);
    let (lon, lat) = geofield_io::project::unproject_to_lonlat(xc, yc, 32611).unwrap();
    let gamma = ((lon + 117.0).to_radians().tan() * lat.to_radians().sin())
        .atan()
        .to_degrees();
    assert!(gamma > 2.0, "{gamma}");
    let want = 270.0 - gamma;
    let tol = 1e-6f64.to_degrees() + 1.5e-5;
    let (a, _) = read_raster(&ang).unwrap();
    for v in a.band_f64(0) {
        assert!((v - want).abs() < tol, "{v} against {want}");
    }
}
