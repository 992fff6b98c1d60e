//! `geofield wind --diurnal` (WindNinja's diurnal slope flows) end to end: upslope by day and
//! downslope by night on a cone, the report's heat flux, WindNinja's `.cfg` keys, the place
//! from the DEM's CRS, and the refusals (exit code 2, nothing written).

use std::path::{Path, PathBuf};

use super::wind::{asc, hill, listing};
use super::{geofield, s, text};

/// A 31 x 31 cone of 30 m cells: 150 m high, 420 m in radius (slope 20 degrees), apex at the
/// centre (465, 465) on a plain at 100 m; no CRS.
fn cone(dir: &Path) -> PathBuf {
    let n = 31;
    let c = 15.0;
    let mut t = Vec::with_capacity(n * n);
    for r in 0..n {
        for col in 0..n {
            let d = 30.0 * (r as f64 - c).hypot(col as f64 - c);
            t.push(100.0 + 150.0 * (1.0 - d / 420.0).max(0.0));
        }
    }
    asc(dir, n, n, &t)
}

/// Masts 5 m above the ground half way up the west and east flanks.
fn masts(dir: &Path) -> PathBuf {
    let p = dir.join("masts.csv");
    std::fs::write(
        &p,
        "id,x_m,y_m,height_agl_m\nwest,255,465,5\neast,675,465,5\n",
    )
    .unwrap();
    p
}

/// A calm domain-average wind from the north over the cone, with `extra`; the masts' u (m/s,
/// east) on the west and east flanks and the JSON report.
fn run(dir: &Path, name: &str, extra: &[&str]) -> ((f64, f64), serde_json::Value) {
    let dem = cone(dir);
    let m = masts(dir);
    let (pts, json) = (
        dir.join(format!("{name}.csv")),
        dir.join(format!("{name}.json")),
    );
    let mut args = vec![
        "wind",
        "--dem",
        s(&dem),
        "--speed",
        "0.5",
        "--direction",
        "0",
        "--nz",
        "30",
        "--dz-m",
        "10",
        "--points-in",
        s(&m),
        "--points-out",
        s(&pts),
        "--json",
        s(&json),
    ];
    args.extend_from_slice(extra);
    let o = geofield(&args);
    let msg = text(&o);
    assert!(o.status.success(), "{msg}");
    if extra.contains(&"--diurnal") {
        assert!(msg.contains("diurnal: heat flux"), "{msg}");
    }
    let csv = std::fs::read_to_string(&pts).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let iu = header.iter().position(|h| *h == "u").unwrap();
    let u: Vec<f64> = lines
        .map(|l| l.split(',').nth(iu).unwrap().parse().unwrap())
        .collect();
    let j = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    ((u[0], u[1]), j)
}

const PLACE: [&str; 8] = [
    "--lat",
    "40",
    "--lon",
    "-105",
    "--utc-offset",
    "-7",
    "--date",
    "2024-06-21",
];

fn diurnal_at(time: &str) -> Vec<&str> {
    let mut v = vec![
        "--diurnal",
        "--time",
        time,
        "--air-temp",
        "20",
        "--cloud-cover",
        "0",
    ];
    v.extend_from_slice(&PLACE);
    v
}

/// Noon: the west flank's wind turns east (up the slope), the east flank's west; half past
/// midnight the other way round (drainage). The plain run (no --diurnal) is the reference; the
/// slope flow near the ground is of order 1 m/s here (Forthofer's formulas: 0.5..3 m/s), the
/// domain wind 0.5 m/s from the north, so the changes must exceed 0.1 m/s.
#[test]
fn wind_diurnal_upslope_at_noon_downslope_at_night() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ((w0, e0), plain) = run(d, "plain", &[]);
    assert!(plain["report"]["diurnal"].is_null());
    let ((wd, ed), day) = run(d, "day", &diurnal_at("12:00"));
    let ((wn, en), night) = run(d, "night", &diurnal_at("00:30"));
    assert!(
        wd - w0 > 0.1 && ed - e0 < -0.1,
        "day: west {w0} -> {wd}, east {e0} -> {ed}"
    );
    assert!(
        wn - w0 < -0.1 && en - e0 > 0.1,
        "night: west {w0} -> {wn}, east {e0} -> {en}"
    );
    let rd = &day["report"]["diurnal"];
    let rn = &night["report"]["diurnal"];
    assert!(
        rd["heat_flux_mean_w_per_m2"].as_f64().unwrap() > 0.0,
        "{rd}"
    );
    assert!(
        rn["heat_flux_mean_w_per_m2"].as_f64().unwrap() < 0.0,
        "{rn}"
    );
    assert!(rd["sun_zenith_deg"].as_f64().unwrap() < 20.0, "{rd}");
    assert!(rn["sun_zenith_deg"].as_f64().unwrap() > 90.0, "{rn}");
    // The options carry the UTC time: 12:00 at UTC-7 is 19:00 UTC.
    let t = &day["options"]["diurnal"]["time_utc"];
    assert_eq!(t["hour"].as_f64(), Some(19.0), "{t}");

    // Non-neutral stability alone: no slope flow, the profile corrected (log, with a note).
    let mut nn = vec![
        "--non-neutral-stability",
        "--time",
        "12:00",
        "--air-temp",
        "20",
    ];
    nn.extend_from_slice(&["--cloud-cover", "0"]);
    nn.extend_from_slice(&PLACE);
    let (_, j) = run(d, "nn", &nn);
    assert_eq!(j["options"]["non_neutral"], true);
    assert_eq!(j["options"]["diurnal"]["slope_flows"], false);
    assert!(j["report"]["diurnal"]["obukhov_length_m"].as_f64().unwrap() < 0.0);

    // The same run from WindNinja's .cfg keys (68 F = 20 C; 13:00 in Denver on 21 June is
    // daylight time, UTC-6: the named zone's offset at the date).
    let cfg = d.join("ninja.cfg");
    std::fs::write(
        &cfg,
        "num_threads = 2\ndiurnal_winds = true\nuni_air_temp = 68\nair_temp_units = F\n\
         uni_cloud_cover = 0\ncloud_cover_units = percent\nyear = 2024\nmonth = 6\nday = 21\n\
         hour = 13\nminute = 0\ntime_zone = America/Denver\n",
    )
    .unwrap();
    let ((wc, ec), jc) = run(
        d,
        "cfg",
        &["--ninja-cfg", s(&cfg), "--lat", "40", "--lon", "-105"],
    );
    assert_eq!((wc, ec), (wd, ed));
    assert_eq!(jc["report"]["diurnal"], day["report"]["diurnal"]);
}

/// A DEM with a CRS gives the place: the hill of `synth terrain` in UTM 33N with its corner at
/// (0, 0) is near the equator, 4.5 degrees west of the zone's meridian (15 E):
/// 500 000 m / (111 320 m/deg x 0.9996) = 4.49 deg.
#[test]
fn wind_diurnal_place_from_the_crs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (dem, st) = hill(d);
    let (out, json) = (d.join("w.npz"), d.join("r.json"));
    let mut args = vec![
        "wind",
        "--dem",
        s(&dem),
        "--stations",
        s(&st),
        "--out",
        s(&out),
    ];
    args.extend_from_slice(&["--json", s(&json), "--diurnal", "--date", "2024-03-20"]);
    args.extend_from_slice(&[
        "--time",
        "13:00",
        "--time-zone",
        "UTC+1",
        "--air-temp",
        "25",
    ]);
    args.extend_from_slice(&["--cloud-cover", "50", "--nz", "16", "--dz-m", "10"]);
    let o = geofield(&args);
    assert!(o.status.success(), "{}", text(&o));
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let dj = &j["options"]["diurnal"];
    let (lat, lon) = (
        dj["lat_deg"].as_f64().unwrap(),
        dj["lon_deg"].as_f64().unwrap(),
    );
    assert!(
        lat.abs() < 0.01 && (lon - (15.0 - 4.49)).abs() < 0.05,
        "{lat} {lon}"
    );
}

/// Missing or bad diurnal inputs: exit code 2, a message naming the flag, nothing written.
#[test]
fn wind_diurnal_bad_flags_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let dem = cone(d);
    let out = d.join("w.npz");
    let bad_cfg = d.join("bad.cfg");
    std::fs::write(&bad_cfg, "diurnal_winds = true\n\nuni_cloud_cover = lots\n").unwrap();
    let base = [
        "wind",
        "--dem",
        s(&dem),
        "--speed",
        "1",
        "--direction",
        "0",
        "--out",
        s(&out),
    ];
    let full = diurnal_at("12:00");
    let without = |flag: &str, n: usize| -> Vec<&str> {
        let i = full.iter().position(|f| *f == flag).unwrap();
        [&full[..i], &full[i + n..]].concat()
    };
    let cases: Vec<(Vec<&str>, String)> = vec![
        (without("--lat", 4), "--lat".into()),
        (without("--air-temp", 2), "--air-temp".into()),
        (without("--cloud-cover", 2), "--cloud-cover".into()),
        (without("--date", 2), "--date".into()),
        (without("--utc-offset", 2), "--utc-offset".into()),
        (
            [&without("--time", 2)[..], &["--time", "25:00"][..]].concat(),
            "--time".into(),
        ),
        (vec!["--date", "2024-06-21"], "--diurnal".into()),
        (
            [
                &without("--utc-offset", 2)[..],
                &["--time-zone", "Mars/Olympus_Mons"][..],
            ]
            .concat(),
            "--time-zone".into(),
        ),
        (
            [&without("--air-temp", 2)[..], &["--air-temp", "99"][..]].concat(),
            "--air-temp".into(),
        ),
        (
            [
                &full[..],
                &["--non-neutral-stability", "--profile", "power"][..],
            ]
            .concat(),
            "--profile log".into(),
        ),
        (
            vec!["--ninja-cfg", s(&bad_cfg)],
            format!("{}:3: key \"uni_cloud_cover\"", bad_cfg.display()),
        ),
    ];
    for (extra, want) in cases {
        let mut args = base.to_vec();
        args.extend_from_slice(&extra);
        let o = geofield(&args);
        let m = text(&o);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {m}");
        assert!(m.contains(&want), "{extra:?}: want {want:?} in {m}");
        assert!(!out.exists(), "{extra:?}");
    }
    assert_eq!(listing(d), ["bad.cfg", "dem.asc"]);
}
