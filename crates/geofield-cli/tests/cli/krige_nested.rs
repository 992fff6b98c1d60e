//! Nested variograms on the command line: `geofield krige --model spherical+exponential --sill
//! C1,C2 --range A1,A2` against ordinary kriging solved here in f64 with the nested covariance
//! written out independently; `--fit` and `geofield variogram --model` with nested models;
//! mismatched counts exit 2 and write nothing.

use geofield_io::{NpyData, read_npy};

use super::{WELLS, geofield, krige_on_wells, s, text};

/// `WELLS` as CSV text.
fn wells_text() -> String {
    let mut t = String::from("x,y,z\n");
    for (x, y, z) in WELLS {
        t += &format!("{x},{y},{z}\n");
    }
    t
}

/// C(h) of nugget 0.02 + spherical(0.3, 40 m) + exponential(0.1, 150 m), written from the
/// definitions (practical range: exp(−3h/a)), not through the library.
fn cov(h: f64) -> f64 {
    let sph = if h >= 40.0 {
        0.0
    } else {
        let r = h / 40.0;
        0.3 * (1.0 - 1.5 * r + 0.5 * r * r * r)
    };
    let exp = 0.1 * (-3.0 * h / 150.0).exp();
    sph + exp + if h == 0.0 { 0.02 } else { 0.0 }
}

/// Ordinary kriging at (x, y) by Gaussian elimination of the bordered system.
fn ordinary(x: f64, y: f64) -> f64 {
    let n = WELLS.len();
    let m = n + 1;
    let mut a = vec![0.0; m * (m + 1)];
    for i in 0..n {
        for j in 0..n {
            let (xi, yi, _) = WELLS[i];
            let (xj, yj, _) = WELLS[j];
            a[i * (m + 1) + j] = cov((xi - xj).hypot(yi - yj));
        }
        a[i * (m + 1) + n] = 1.0;
        a[n * (m + 1) + i] = 1.0;
        a[i * (m + 1) + m] = cov((WELLS[i].0 - x).hypot(WELLS[i].1 - y));
    }
    a[n * (m + 1) + m] = 1.0;
    for c in 0..m {
        let p = (c..m)
            .max_by(|&i, &j| {
                a[i * (m + 1) + c]
                    .abs()
                    .total_cmp(&a[j * (m + 1) + c].abs())
            })
            .unwrap();
        for k in 0..=m {
            a.swap(c * (m + 1) + k, p * (m + 1) + k);
        }
        for r in 0..m {
            if r != c {
                let f = a[r * (m + 1) + c] / a[c * (m + 1) + c];
                for k in 0..=m {
                    a[r * (m + 1) + k] -= f * a[c * (m + 1) + k];
                }
            }
        }
    }
    (0..n)
        .map(|i| a[i * (m + 1) + m] / a[i * (m + 1) + i] * WELLS[i].2)
        .sum()
}

fn krige(dir: &std::path::Path, out: &str, variogram: &[&str]) -> std::process::Output {
    krige_on_wells(dir, &wells_text(), out, variogram)
}

#[test]
fn nested_model_matches_an_independent_f64_solve() {
    let dir = tempfile::tempdir().unwrap();
    let o = krige(
        dir.path(),
        "z.npy",
        &[
            "--model",
            "spherical+exponential",
            "--sill",
            "0.3,0.1",
            "--range",
            "40,150",
            "--nugget",
            "0.02",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let a = read_npy(&dir.path().join("z.npy")).unwrap();
    let NpyData::F64(z) = a.data else {
        panic!("f64 expected")
    };
    // Both solves are backward stable on a 8 × 8 system with condition number < 1e4 here:
    // agreement to 1e-10 of values ~10 is far above rounding and far below any model error
    // (dropping either structure changes the surface by > 1e-2).
    for r in 0..10 {
        for c in 0..10 {
            let (x, y) = (5.0 + 10.0 * c as f64, 95.0 - 10.0 * r as f64);
            let want = ordinary(x, y);
            assert!(
                (z[r * 10 + c] - want).abs() < 1e-10,
                "({x}, {y}): {} vs {want}",
                z[r * 10 + c]
            );
        }
    }
}

/// 60 wells on a scrambled lattice, values from two scales of variation: enough pairs for a
/// nested fit's bins.
fn many_wells() -> String {
    let mut t = String::from("x,y,z\n");
    for k in 0..60u32 {
        let (x, y) = (f64::from((k * 37) % 100), f64::from((k * 61 + 13) % 100));
        let z = (x / 12.0).sin() + 0.5 * (y / 45.0).cos() + 0.1 * f64::from(k % 3);
        t += &format!("{x},{y},{z}\n");
    }
    t
}

#[test]
fn nested_fits_from_krige_and_variogram() {
    let dir = tempfile::tempdir().unwrap();
    let fit = [
        "--fit",
        "spherical+exponential",
        "--lags",
        "10",
        "--max-lag",
        "70",
    ];
    let o = krige_on_wells(dir.path(), &many_wells(), "f.npy", &fit);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("spherical sill"), "{}", text(&o));
    assert!(text(&o).contains("exponential sill"), "{}", text(&o));
    let json = dir.path().join("v.json");
    let o = geofield(&[
        "--json",
        s(&json),
        "variogram",
        "--samples",
        s(&dir.path().join("wells.csv")),
        "--values",
        "z",
        "--lags",
        "10",
        "--max-lag",
        "70",
        "--model",
        "gaussian+linear",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let t = std::fs::read_to_string(&json).unwrap();
    assert!(
        t.contains("\"gaussian\"") && t.contains("\"linear\""),
        "{t}"
    );
}

#[test]
fn mismatched_counts_exit_2_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for (i, v) in [
        &[
            "--model",
            "spherical+exponential",
            "--sill",
            "0.3",
            "--range",
            "40,150",
        ][..],
        &[
            "--model",
            "spherical+exponential",
            "--sill",
            "0.3,0.1",
            "--range",
            "40",
        ],
        &["--model", "spherical+", "--sill", "0.3", "--range", "40"],
        &["--model", "spherical+exponential", "--range", "40,150"],
    ]
    .iter()
    .enumerate()
    {
        let out = format!("bad{i}.npy");
        let o = krige(dir.path(), &out, v);
        assert_eq!(o.status.code(), Some(2), "{v:?}: {}", text(&o));
        assert!(!dir.path().join(&out).exists(), "{v:?}");
    }
}
