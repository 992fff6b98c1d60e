//! Askervein Hill (run TU-03B, Taylor & Teunissen 1987) on the CPU: a coarse regression check
//! of the mass-consistent field against the field measurements (`docs/validation.md`,
//! `data/askervein/`). The full comparison is `validation/askervein/run.py`.
//!
//! Setup as in the literature, nothing fitted: the benchmark's DEM at 46.875 m (blocks of 2 ×
//! 2 of the 23.4375 m DEM), neutral (class D, alpha = 1), log profile with z0 = 0.03 m, the
//! reference mast RS as the only station (8.9 m/s at 10 m from 210°), 5 m layers to 165 m
//! above the sea (the hill top is 124 m) then growing by 1.2 to 3 km (deep enough: the hill's
//! perturbation decays on its half-width, 200–300 m along line A).
//!
//! The bounds come from the measurements (FSR = S/S_RS − 1 at 10 m above ground), not from
//! geofield's output:
//! - the hill top must reach at least half the measured speed-up (0.884/2; mass-consistent
//!   models under-predict it, WindNinja reaches 0.58 on a deep domain) and at most twice it
//!   (a larger value would be no physical solution);
//! - masts whose measured |FSR| is ≥ 0.3 (more than four times their stated uncertainty of
//!   ≤ 0.07) on the windward side and the top must have the measured sign;
//! - the upwind foot of the hill (measured −0.09 … −0.27 at ASW85, ASW50, ASW35 and AASW40 …
//!   AASW70) must slow down on average;
//! - the lee (measured −0.06 … −0.65, mean −0.32, at ANE20, ANE40, AANE20 … AANE60) must be
//!   slower than the top: every lee mast below the hill top, and their mean below half the
//!   hill top's (measured: below zero). Not "below zero": mass-consistent models, which have
//!   no momentum and no separation, over-predict the lee (geofield −0.02 at 12 m cells), a
//!   known limit documented in `docs/validation.md`, not a regression.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

use geofield::Backend;
use geofield::wind::io::read_dem;
use geofield::wind::{self, Levels, Profile, Solver, Stability, Station, WindGrid, WindOptions};

/// Measured FSR at 10 m above ground (`askervein_validation1.txt`, run TU-03B): name, x, y, FSR.
const MASTS: [(&str, f64, f64, f64); 20] = [
    ("ASW85", 74813.0, 23122.0, -0.093),
    ("ASW50", 75050.0, 23378.0, -0.221),
    ("ASW35", 75162.0, 23498.0, -0.163),
    ("ASW20", 75257.0, 23604.0, 0.221),
    ("ASW10", 75319.0, 23667.0, 0.535),
    ("HT", 75387.0, 23735.0, 0.884),
    ("ANE10", 75454.0, 23812.0, 0.395),
    ("ANE20", 75523.0, 23884.0, -0.349),
    ("ANE40", 75661.0, 24017.0, -0.651),
    ("AASW70", 75208.0, 22968.0, -0.086),
    ("AASW60", 75274.0, 23038.0, -0.14),
    ("AASW50", 75341.0, 23107.0, -0.266),
    ("AASW40", 75417.0, 23174.0, -0.218),
    ("AASW10", 75613.0, 23396.0, 0.456),
    ("CP", 75676.0, 23466.0, 0.666),
    ("AANE10", 75746.0, 23540.0, 0.68),
    ("AANE20", 75807.0, 23610.0, -0.057),
    ("AANE30", 75871.0, 23675.0, -0.191),
    ("AANE40", 75938.0, 23745.0, -0.403),
    ("AANE60", 76073.0, 23886.0, -0.26),
];
const RS: (f64, f64) = (74300.0, 20980.0);
const UPWIND_FOOT: [&str; 7] = [
    "ASW85", "ASW50", "ASW35", "AASW70", "AASW60", "AASW50", "AASW40",
];
const WINDWARD_AND_TOP: [&str; 6] = ["ASW10", "HT", "ANE10", "AASW10", "CP", "AANE10"];
const LEE: [&str; 6] = ["ANE20", "ANE40", "AANE20", "AANE30", "AANE40", "AANE60"];

/// Layer tops above the lowest ground: 5 m to 165 m, then growing by 1.2 to 3000 m.
fn levels() -> Vec<f64> {
    let mut tops: Vec<f64> = (1..=33).map(|i| 5.0 * i as f64).collect();
    let mut dz = 5.0;
    while tops[tops.len() - 1] < 3000.0 {
        dz *= 1.2;
        tops.push(tops[tops.len() - 1] + dz);
    }
    tops
}

#[test]
fn askervein_speed_ups_have_the_measured_pattern() {
    let dem_path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/askervein/askervein_dem_23m.tif");
    let dem = read_dem(&dem_path, Some(46.875)).expect("the Askervein DEM");
    assert_eq!((dem.plan.cols, dem.plan.rows), (128, 128));
    let plan = dem.plan;
    let grid = WindGrid::new(plan, dem.terrain_m, &Levels::Tops(levels())).unwrap();
    let rs = Station {
        id: "RS".into(),
        x_m: RS.0,
        y_m: RS.1,
        height_agl_m: 10.0,
        speed_m_per_s: 8.895,
        direction_deg: 210.0,
        stability: Some(Stability::D),
    };
    let opts = WindOptions {
        solver: Solver::MgCg,
        tolerance: 1e-6,
        profile: Profile::Log { roughness_m: 0.03 },
        default_stability: Stability::D,
        ..Default::default()
    };
    let field = wind::compute(&Backend::Cpu, grid, &[rs], &opts).unwrap();
    assert!(field.report.converged, "{:?}", field.report);
    // The library's point sampler (the rule of every output): 10 m above the ground at the
    // mast, bilinear between the four columns around it.
    let speed = |x: f64, y: f64| {
        let p = wind::sample_point(&field, x, y, 10.0).unwrap();
        p.expect("the masts lie inside the grid").speed
    };
    let s_rs = speed(RS.0, RS.1);
    // The first guess holds the station's speed at RS; the adjustment changes it little on
    // the flat upwind plain.
    assert!((s_rs / 8.895 - 1.0).abs() < 0.1, "S(RS) {s_rs}");
    let fsr = |name: &str| {
        let &(_, x, y, _) = MASTS.iter().find(|m| m.0 == name).unwrap();
        speed(x, y) / s_rs - 1.0
    };
    let measured = |name: &str| MASTS.iter().find(|m| m.0 == name).unwrap().3;
    let report: Vec<String> = MASTS
        .iter()
        .map(|m| format!("{} {:+.2} (measured {:+.2})", m.0, fsr(m.0), m.3))
        .collect();
    let report = report.join(", ");
    eprintln!("Askervein FSR at 10 m: {report}");

    let ht = fsr("HT");
    assert!(
        ht >= 0.5 * measured("HT") && ht <= 2.0 * measured("HT"),
        "hill top {ht:.3}: {report}"
    );
    for name in WINDWARD_AND_TOP {
        assert!(measured(name).abs() >= 0.3);
        assert!(
            fsr(name).signum() == measured(name).signum(),
            "{name}: {report}"
        );
    }
    let mean = |names: &[&str]| names.iter().map(|n| fsr(n)).sum::<f64>() / names.len() as f64;
    assert!(mean(&UPWIND_FOOT) < 0.0, "upwind foot: {report}");
    assert!(mean(&LEE) < 0.5 * ht, "lee: {report}");
    for name in LEE {
        assert!(fsr(name) < ht, "{name}: {report}");
    }
}
