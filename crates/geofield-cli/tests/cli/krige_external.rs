//! `geofield krige --drift external --drift-raster dem.asc`: kriging with external drift from
//! the command line equals the library's on the same raster and samples; a missing raster, a
//! raster without --drift external and samples off the raster exit 2 and write nothing.

use std::sync::Arc;

use geofield::Backend;
use geofield::kriging::{self, Drift, ExternalDrift, Kind, KrigeOptions, KrigeParams, Model};
use geofield::kriging::{SampleSet, Target, Variogram};
use geofield_core::{Extent, GridSpec};
use geofield_io::{NpyData, read_npy};

use super::{WELLS, krige_on_wells, s, text};

fn dem(x: f64, y: f64) -> f64 {
    50.0 + 0.2 * x + 0.1 * y + 5.0 * (x / 20.0).sin()
}

/// A 20 x 20 DEM of 5 m cells over (0, 0)-(100, 100), as ESRI ASCII (north row first).
fn write_dem(dir: &std::path::Path) -> (std::path::PathBuf, Vec<f64>) {
    let mut t = String::from(
        "ncols 20\nnrows 20\nxllcorner 0\nyllcorner 0\ncellsize 5\nNODATA_value -9999\n",
    );
    let mut v = vec![];
    for r in 0..20 {
        let row: Vec<String> = (0..20)
            .map(|c| {
                let e = dem(2.5 + 5.0 * c as f64, 97.5 - 5.0 * r as f64);
                v.push(e);
                format!("{e:.17}")
            })
            .collect();
        t += &row.join(" ");
        t += "\n";
    }
    let p = dir.join("dem.asc");
    std::fs::write(&p, t).unwrap();
    (p, v)
}

fn run(
    dir: &std::path::Path,
    wells: &[(f64, f64, f64)],
    out: &str,
    extra: &[&str],
) -> std::process::Output {
    let mut t = String::from("x,y,z\n");
    for (x, y, z) in wells {
        t += &format!("{x},{y},{z}\n");
    }
    let mut args = vec![
        "--model",
        "exponential",
        "--sill",
        "1",
        "--range",
        "60",
        "--nugget",
        "0.05",
    ];
    args.extend_from_slice(extra);
    krige_on_wells(dir, &t, out, &args)
}

#[test]
fn external_drift_from_the_command_line_equals_the_library() {
    let dir = tempfile::tempdir().unwrap();
    let (dem_path, values) = write_dem(dir.path());
    let o = run(
        dir.path(),
        &WELLS,
        "z.npy",
        &["--drift", "external", "--drift-raster", s(&dem_path)],
    );
    assert!(o.status.success(), "{}", text(&o));
    let NpyData::F64(z) = read_npy(&dir.path().join("z.npy")).unwrap().data else {
        panic!("f64 expected")
    };
    let set = SampleSet::new(
        WELLS.iter().map(|w| w.0).collect(),
        WELLS.iter().map(|w| w.1).collect(),
        vec![WELLS.iter().map(|w| w.2).collect()],
    );
    let raster = GridSpec::from_extent(Extent::new(0.0, 0.0, 100.0, 100.0).unwrap(), 5.0).unwrap();
    let grid = GridSpec::from_extent(Extent::new(0.0, 0.0, 100.0, 100.0).unwrap(), 10.0).unwrap();
    let params = KrigeParams {
        options: KrigeOptions {
            kind: Kind::Universal {
                drift: Drift::External,
            },
            ..KrigeOptions::default()
        },
        external_drift: Some(Arc::new(ExternalDrift::new(raster, values, "dem").unwrap())),
        ..KrigeParams::new(
            Variogram::new(Model::Exponential, 1.0, 60.0, 0.05).unwrap(),
            Target::Grid(grid),
        )
    };
    let k = kriging::krige(&Backend::Cpu, &set, &params).unwrap();
    // The file holds the DEM to 17 significant digits, so the two runs see the same drift to
    // ~1e-15 relative; through a system of condition < 1e8 that is < 1e-7 of values ~10.
    for (a, b) in z.iter().zip(&k.prediction.values[0]) {
        assert!((a - b).abs() < 1e-7, "{a} vs {b}");
    }
}

/// `--fit` with an external drift fits the residuals' variogram (said on stdout) and krige with
/// it.
#[test]
fn fit_with_an_external_drift_uses_the_residuals() {
    let dir = tempfile::tempdir().unwrap();
    let (dem_path, _) = write_dem(dir.path());
    let t = "x,y,z\n".to_string()
        + &(0..30u32)
            .map(|k| {
                let (x, y) = (
                    f64::from((k * 37) % 97) + 1.5,
                    f64::from((k * 61 + 13) % 97) + 1.5,
                );
                format!("{x},{y},{}\n", 0.1 * dem(x, y) + (x / 17.0).sin())
            })
            .collect::<String>();
    let o = super::krige_on_wells(
        dir.path(),
        &t,
        "f.npy",
        &[
            "--fit",
            "exponential",
            "--lags",
            "8",
            "--max-lag",
            "60",
            "--drift",
            "external",
            "--drift-raster",
            s(&dem_path),
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("residuals from a least-squares fit"),
        "{}",
        text(&o)
    );
    assert!(dir.path().join("f.npy").exists());
}

#[test]
fn bad_external_drift_requests_exit_2_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (dem_path, _) = write_dem(dir.path());
    let mut off = WELLS.to_vec();
    off[2].0 = 130.0;
    for (i, (wells, extra)) in [
        (&WELLS[..], &["--drift", "external"][..]),
        (&WELLS[..], &["--drift-raster", s(&dem_path)]),
        (
            &off[..],
            &["--drift", "external", "--drift-raster", s(&dem_path)],
        ),
    ]
    .iter()
    .enumerate()
    {
        let out = format!("bad{i}.npy");
        let o = run(dir.path(), wells, &out, extra);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", text(&o));
        assert!(!dir.path().join(&out).exists(), "{extra:?}");
    }
}
