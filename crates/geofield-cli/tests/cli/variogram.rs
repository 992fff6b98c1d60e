//! `geofield variogram` end to end.

use std::path::{Path, PathBuf};

use super::{geofield, s, text};

/// A 12 x 12 lattice of wells (step 10) with values (7i + 3j) mod 5 in column `top`.
fn lattice_samples(dir: &Path) -> PathBuf {
    let p = dir.join("wells.csv");
    let mut t = String::from("X,Y,top\n");
    for i in 0..12 {
        for j in 0..12 {
            t.push_str(&format!("{},{},{}\n", i * 10, j * 10, (i * 7 + j * 3) % 5));
        }
    }
    std::fs::write(&p, t).unwrap();
    p
}

#[test]
fn variogram_prints_bins_fits_and_writes_chart_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let csv = lattice_samples(dir.path());
    let png = dir.path().join("v.png");
    let json = dir.path().join("v.json");
    let o = geofield(&[
        "variogram",
        "--samples",
        s(&csv),
        "--x",
        "x",
        "--y",
        "y",
        "--values",
        "top",
        "--model",
        "spherical",
        "--lags",
        "8",
        "--png",
        s(&png),
        "--json",
        s(&json),
    ]);
    let m = text(&o);
    assert!(o.status.success(), "{m}");
    assert!(m.contains("144 samples of top"), "{m}");
    assert!(m.contains("fit: nugget"), "{m}");
    assert_eq!(&std::fs::read(&png).unwrap()[1..4], b"PNG");
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(j["bins"].as_array().unwrap().len(), 8);
    // The JSON's first non-empty bin equals a direct Matheron sum over its pairs (the first
    // bins are empty: the lattice step is 10).
    let bins = j["bins"].as_array().unwrap();
    let b0 = bins.iter().find(|b| b["pairs"].as_u64() > Some(0)).unwrap();
    let (lo, hi) = (b0["lo"].as_f64().unwrap(), b0["hi"].as_f64().unwrap());
    let (mut n, mut sq) = (0u64, 0.0);
    let pts: Vec<(f64, f64, f64)> = (0..144)
        .map(|k| {
            let (i, jj) = (k / 12, k % 12);
            (
                f64::from(i * 10),
                f64::from(jj * 10),
                f64::from((i * 7 + jj * 3) % 5),
            )
        })
        .collect();
    for a in 0..144 {
        for b in a + 1..144 {
            let h = (pts[a].0 - pts[b].0).hypot(pts[a].1 - pts[b].1);
            if lo <= h && h < hi {
                n += 1;
                sq += (pts[a].2 - pts[b].2).powi(2);
            }
        }
    }
    assert_eq!(b0["pairs"].as_u64().unwrap(), n);
    assert!((b0["gamma"].as_f64().unwrap() - sq / (2.0 * n as f64)).abs() < 1e-12);
    assert_eq!(j["fit"]["variogram"]["structures"][0]["model"], "spherical");
}

#[test]
fn variogram_bad_input_fails_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let csv = lattice_samples(dir.path());
    let png = dir.path().join("v.png");
    let check = |args: &[&str], needle: &str| {
        let mut v = vec!["variogram", "--png", s(&png)];
        v.extend_from_slice(args);
        let o = geofield(&v);
        let m = text(&o);
        assert_eq!(o.status.code(), Some(2), "{m}");
        assert!(m.contains(needle), "expected {needle:?} in {m}");
        assert!(!png.exists(), "partial output left behind");
    };
    check(
        &["--samples", s(&csv), "--values", "depth"],
        "no column named \"depth\"",
    );
    check(
        &["--samples", s(&csv), "--values", "top", "--model", "hole"],
        "unknown variogram model",
    );
    check(
        &["--samples", s(&csv), "--values", "top", "--lags", "0"],
        "lags",
    );
    check(
        &[
            "--samples",
            s(&csv),
            "--values",
            "top",
            "--direction",
            "10,0",
        ],
        "tolerance",
    );
    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, "x,y,top\n0,0,1\n1,1,oops\n").unwrap();
    check(
        &["--samples", s(&bad), "--values", "top"],
        "bad.csv:3: column \"top\"",
    );
    check(
        &[
            "--samples",
            s(&dir.path().join("none.csv")),
            "--values",
            "top",
        ],
        "none.csv",
    );
}

/// `--map-width`: the variogram map as a two-band GeoTIFF over the separations (read back:
/// symmetric extent, the centre cell at zero separation, pairs symmetric through the centre)
/// and a PNG; a map with nowhere to go exits 2.
#[test]
fn variogram_map_writes_a_raster_and_a_picture() {
    let dir = tempfile::tempdir().unwrap();
    let csv = lattice_samples(dir.path());
    let tif = dir.path().join("map.tif");
    let png = dir.path().join("map.png");
    let base = [
        "variogram",
        "--samples",
        s(&csv),
        "--x",
        "x",
        "--y",
        "y",
        "--values",
        "top",
        "--map-width",
        "10",
        "--map-cutoff",
        "40",
    ];
    let mut args = base.to_vec();
    args.extend_from_slice(&["--map", s(&tif), "--map-png", s(&png)]);
    let o = geofield(&args);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("9 x 9 cells"), "{}", text(&o));
    let (r, _) = geofield_io::read_raster(&tif).unwrap();
    assert_eq!((r.grid.rows, r.grid.cols, r.n_bands()), (9, 9, 2));
    assert!((r.grid.x_min_m + 45.0).abs() < 1e-9 && (r.grid.y_max_m - 45.0).abs() < 1e-9);
    let pairs = r.band_f64(1);
    for c in 0..81 {
        assert_eq!(pairs[c], pairs[80 - c], "cell {c}");
    }
    // On the 12 x 12 lattice of step 10, separation (10, 0) joins 11 x 12 ordered pairs each way.
    assert_eq!(pairs[4 * 9 + 5], 132.0);
    assert!(std::fs::metadata(&png).unwrap().len() > 0);
    let o = geofield(&base);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}
