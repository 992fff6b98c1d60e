//! `geofield krige` and `geofield synth wells` end to end.

use std::path::{Path, PathBuf};
use std::process::Command;

use geofield_io::{NpyData, read_npy};

use super::{geofield, s, text};

fn f64s(p: &Path) -> (Vec<usize>, Vec<f64>) {
    let a = read_npy(p).unwrap();
    match a.data {
        NpyData::F64(v) => (a.shape, v),
        NpyData::F32(v) => (a.shape, v.into_iter().map(f64::from).collect()),
        _ => panic!("unexpected dtype"),
    }
}

/// Wells on cell centres of a 0..100 x 0..100 grid of 10 m cells (so the grid hits them).
fn wells(dir: &Path, body: &str) -> PathBuf {
    let p = dir.join("wells.csv");
    std::fs::write(&p, format!("id,x,y,top,base\n{body}")).unwrap();
    p
}

const FIVE: &str =
    "a,15,85,10.0,2.0\nb,75,75,12.5,3.0\nc,25,25,9.0,1.0\nd,85,15,11.0,\ne,55,45,10.5,2.5\n";

fn krige(extra: &[&str], csv: &Path, out: &Path) -> std::process::Output {
    let mut args = vec![
        "krige",
        "--samples",
        s(csv),
        "--values",
        "top,base",
        "--extent",
        "0,0,100,100",
        "--cell-size-m",
        "10",
        "--out",
        s(out),
    ];
    args.extend_from_slice(extra);
    geofield(&args)
}

#[test]
fn krige_is_exact_at_wells_writes_variance_cv_and_summary() {
    let dir = tempfile::tempdir().unwrap();
    let csv = wells(dir.path(), FIVE);
    let out = dir.path().join("est.npy");
    let var = dir.path().join("var.npy");
    let cv = dir.path().join("cv.csv");
    let json = dir.path().join("k.json");
    let png = dir.path().join("k.png");
    let sd_png = dir.path().join("sd.png");
    let o = krige(
        &[
            "--model",
            "spherical",
            "--sill",
            "2",
            "--range",
            "80",
            "--nugget",
            "0.3",
            "--variance",
            s(&var),
            "--cv",
            s(&cv),
            "--json",
            s(&json),
            "--png",
            s(&png),
            "--sd-png",
            s(&sd_png),
        ],
        &csv,
        &out,
    );
    let m = text(&o);
    assert!(o.status.success(), "{m}");
    let (shape, est) = f64s(&out);
    assert_eq!(shape, vec![2, 10, 10]);
    let (_, v) = f64s(&var);
    // Well a at (15, 85): row 1, col 1. Exact with a nugget, variance 0 there.
    let at = |band: usize, row: usize, col: usize| band * 100 + row * 10 + col;
    assert!(
        (est[at(0, 1, 1)] - 10.0).abs() < 1e-9,
        "{}",
        est[at(0, 1, 1)]
    );
    assert!(v[at(0, 1, 1)].abs() < 1e-9);
    // base is missing at well d (85, 15): its own system, not exact to d's top.
    assert!((est[at(0, 8, 8)] - 11.0).abs() < 1e-9);
    assert!((est[at(1, 8, 8)] - 2.0).abs() > 1e-3);
    // Away from the wells the variance includes the nugget.
    assert!(v[at(0, 5, 9)] > 0.3);
    let cv_text = std::fs::read_to_string(&cv).unwrap();
    assert!(cv_text.starts_with("surface,line,x,y,value,prediction,error"));
    assert_eq!(cv_text.lines().count(), 1 + 5 + 4, "{cv_text}");
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(j["groups"].as_array().unwrap().len(), 2);
    assert_eq!(j["groups"][1]["missing"], 1);
    assert_eq!(&std::fs::read(&png).unwrap()[1..4], b"PNG");
    assert_eq!(&std::fs::read(&sd_png).unwrap()[1..4], b"PNG");
}

#[test]
fn krige_tif_and_asc_fit_anisotropy_local_and_strata() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("w.csv");
    let o = geofield(&[
        "synth",
        "wells",
        "--wells",
        "40",
        "--surfaces",
        "4",
        "--extent",
        "0,0,1000,1000",
        "--partial",
        "0.3",
        "--out",
        s(&csv),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let out = dir.path().join("s.asc");
    let o = geofield(&[
        "krige",
        "--samples",
        s(&csv),
        "--values",
        "s01,s02,s03,s04",
        "--fit",
        "exponential",
        "--fit-pooled",
        "--neighbors",
        "12",
        "--anisotropy",
        "45,0.6",
        "--kind",
        "universal",
        "--extent",
        "0,0,1000,1000",
        "--cell-size-m",
        "50",
        "--out",
        s(&out),
        "--strata",
    ]);
    let m = text(&o);
    assert!(o.status.success(), "{m}");
    assert!(m.contains("fitted s01, s02, s03, s04"), "{m}");
    for b in ["s01", "s02", "s03", "s04"] {
        let p = dir.path().join(format!("s_{b}.asc"));
        let t = std::fs::read_to_string(&p).unwrap();
        let ncols = t
            .lines()
            .next()
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>();
        assert_eq!(ncols, vec!["ncols", "20"], "{p:?}");
    }
    let tif = dir.path().join("s.tif");
    let o = geofield(&[
        "krige",
        "--samples",
        s(&csv),
        "--values",
        "s01",
        "--model",
        "gaussian",
        "--sill",
        "100",
        "--range",
        "600",
        "--nugget",
        "1",
        "--drift",
        "quadratic",
        "--extent",
        "0,0,1000,1000",
        "--cell-size-m",
        "50",
        "--out",
        s(&tif),
        "--crs",
        "EPSG:32633",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(&std::fs::read(&tif).unwrap()[..2], b"II");
}

#[test]
fn krige_bad_input_is_a_clear_error_with_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("est.tif");
    let model = ["--model", "exponential", "--sill", "1", "--range", "50"];
    let cases: Vec<(String, Vec<&str>, Vec<&str>)> = vec![
        (
            FIVE.replace("9.0", "nine"),
            model.to_vec(),
            vec!["wells.csv:4", "top", "nine"],
        ),
        (
            FIVE.replace("9.0", "NaN"),
            model.to_vec(),
            vec!["wells.csv:4", "top"],
        ),
        (
            format!("{FIVE}f,15,85,99.0,2.0\n"),
            model.to_vec(),
            vec!["line 2", "line 7", "tolerance"],
        ),
        (
            FIVE.to_string(),
            [&model[..], &["--drift", "quadratic"]].concat(),
            vec!["quadratic"],
        ),
        (
            "a,0,0,1,1\nb,10,10,2,2\nc,20,20,3,3\nd,30,30,5,4\n".to_string(),
            [&model[..], &["--drift", "linear"]].concat(),
            vec!["line"],
        ),
        (
            "a,50,50,1,1\nb,50.000001,50,2,2\nc,20,20,3,3\n".to_string(),
            vec!["--model", "gaussian", "--sill", "1", "--range", "500"],
            vec!["singular", "nugget", "line 2", "line 3"],
        ),
        (
            FIVE.to_string(),
            vec!["--model", "exponential"],
            vec!["--sill"],
        ),
        (
            FIVE.to_string(),
            [&model[..], &["--kind", "simple"]].concat(),
            vec!["--mean"],
        ),
        (
            FIVE.to_string(),
            [&model[..], &["--neighbors", "65"]].concat(),
            vec!["64"],
        ),
        (
            FIVE.to_string(),
            [&model[..], &["--anisotropy", "30,2"]].concat(),
            vec!["ratio"],
        ),
        ("".to_string(), model.to_vec(), vec!["no samples"]),
    ];
    for (body, args, want) in cases {
        let csv = wells(dir.path(), &body);
        let o = krige(&args, &csv, &out);
        let m = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {m}");
        for w in want {
            assert!(m.contains(w), "{args:?}: missing {w:?} in {m}");
        }
        assert!(!out.exists(), "{args:?}: no output on error");
    }
    // A global system too large for memory (60,000 samples: ~86 GB) is refused, suggesting
    // local kriging.
    let mut body = String::new();
    for i in 0..60_000 {
        body.push_str(&format!(
            "w{i},{},{},{},1\n",
            (i % 300) as f64 * 0.3,
            (i / 300) as f64 * 0.5,
            i % 7
        ));
    }
    let csv = wells(dir.path(), &body);
    let o = krige(&model, &csv, &out);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("--neighbors"), "{}", text(&o));
    assert!(!out.exists());
    // A grid too large for memory is refused before any work.
    let csv = wells(dir.path(), FIVE);
    let o = geofield(&[
        "krige",
        "--samples",
        s(&csv),
        "--values",
        "top",
        "--model",
        "exponential",
        "--sill",
        "1",
        "--range",
        "50",
        "--extent",
        "0,0,10000000,10000000",
        "--cell-size-m",
        "0.5",
        "--out",
        s(&out),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("memory"), "{}", text(&o));
    assert!(!out.exists());
}

/// The kriged surfaces and variances are the same bits on any number of threads (the fitted
/// variogram's lag sums and the factorisation's partition of its work do not follow the thread
/// count): what a laptop and a server write, and what MPI ranks of one thread each compute,
/// agree with one process on every core. 400 wells so that the lag sums and the dense
/// factorisation are split over threads.
#[test]
fn krige_writes_the_same_bits_on_any_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("w.csv");
    let out = geofield(&[
        "synth",
        "wells",
        "--wells",
        "400",
        "--surfaces",
        "2",
        "--extent",
        "0,0,2000,2000",
        "--out",
        s(&csv),
        "-q",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let mut files = Vec::new();
    for threads in ["1", "3"] {
        let sub = dir.path().join(format!("t{threads}"));
        std::fs::create_dir(&sub).unwrap();
        let out = Command::new(super::binary())
            .current_dir(&sub)
            .args([
                "--backend",
                "cpu",
                "krige",
                "--samples",
                "../w.csv",
                "--values",
                "s01,s02",
            ])
            .args([
                "--fit",
                "spherical",
                "--extent",
                "0,0,2000,2000",
                "--cell-size-m",
                "20",
            ])
            .args(["--out", "k.tif", "--variance", "v.npy", "-q"])
            .env("RAYON_NUM_THREADS", threads)
            .env("SOURCE_DATE_EPOCH", "1800000000")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        files.push((
            std::fs::read(sub.join("k.tif")).unwrap(),
            std::fs::read(sub.join("v.npy")).unwrap(),
        ));
    }
    assert!(files[0].0.len() > 10_000);
    assert!(
        files[0] == files[1],
        "1 and 3 threads wrote different files"
    );
}
