//! `geofield krige --simulate N` end to end: realisations honour the wells (which sit on cell
//! centres), differ from each other, repeat with the same seed; bad requests exit 2 and write
//! nothing.

use std::path::Path;

use geofield_io::{NpyData, read_npy};

use super::{KRIGE_WELLS, krige_on_wells, s, text};

fn run(dir: &Path, out: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["--backend", "cpu"];
    args.extend_from_slice(extra);
    krige_on_wells(dir, KRIGE_WELLS, out, &args)
}

fn realisations(p: &Path) -> (Vec<usize>, Vec<f64>) {
    let a = read_npy(p).unwrap();
    match a.data {
        NpyData::F64(v) => (a.shape, v),
        _ => panic!("expected f64"),
    }
}

#[test]
fn simulations_honour_the_wells_and_repeat_with_the_seed() {
    let dir = tempfile::tempdir().unwrap();
    let model = [
        "--model",
        "exponential",
        "--sill",
        "2",
        "--range",
        "60",
        "--nugget",
        "0.3",
        "--simulate",
        "4",
        "--seed",
        "11",
        "--modes",
        "300",
    ];
    let o = run(dir.path(), "a.npy", &model);
    assert!(o.status.success(), "{}", text(&o));
    let (shape, v) = realisations(&dir.path().join("a.npy"));
    assert_eq!(shape, vec![4, 10, 10]);
    // Row r, col c is the cell centred at (10c + 5, 95 − 10r): well (15, 85) is (1, 1).
    let wells = [
        (15.0, 85.0, 10.0),
        (75.0, 75.0, 12.5),
        (25.0, 25.0, 9.0),
        (85.0, 15.0, 11.0),
    ];
    for k in 0..4 {
        for &(x, y, z) in &wells {
            let (r, c) = (((95.0 - y) / 10.0) as usize, ((x - 5.0) / 10.0) as usize);
            let got = v[k * 100 + r * 10 + c];
            // Exact kriging: the datum to the solve's rounding.
            assert!(
                (got - z).abs() < 1e-9,
                "realisation {k} at ({x}, {y}): {got} vs {z}"
            );
        }
    }
    // Realisations differ away from the wells (the nugget alone gives every node its own draw).
    assert_ne!(v[..100], v[100..200]);
    let o = run(dir.path(), "b.npy", &model);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(realisations(&dir.path().join("b.npy")).1, v);
    // A GeoTIFF of 4 bands, a NetCDF, a PNG and the summary.
    let mut extra = model.to_vec();
    let png = dir.path().join("s.png");
    let json = dir.path().join("s.json");
    extra.extend(["--png", s(&png), "--json", s(&json)]);
    let o = run(dir.path(), "s.nc", &extra);
    assert!(o.status.success(), "{}", text(&o));
    let nc = std::fs::read(dir.path().join("s.nc")).unwrap();
    assert_eq!(&nc[..4], b"CDF\x01");
    assert!(png.is_file());
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(j["simulation"]["realisations"], 4);
    assert_eq!(j["simulation"]["seed"], 11);
    assert_eq!(j["backend"], "cpu");
    let o = run(dir.path(), "s.tif", &model);
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn bad_simulation_requests_exit_2_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [&[&str]; 5] = [
        &[
            "--model",
            "exponential",
            "--sill",
            "1",
            "--range",
            "50",
            "--simulate",
            "0",
        ],
        // No stationary field for the linear model.
        &[
            "--model",
            "linear",
            "--sill",
            "1",
            "--range",
            "50",
            "--simulate",
            "3",
        ],
        &[
            "--model",
            "exponential",
            "--sill",
            "1",
            "--range",
            "50",
            "--seed",
            "3",
        ],
        &[
            "--model",
            "exponential",
            "--sill",
            "1",
            "--range",
            "50",
            "--simulate",
            "2",
            "--modes",
            "0",
        ],
        &[
            "--model",
            "exponential",
            "--sill",
            "1",
            "--range",
            "50",
            "--simulate",
            "2",
            "--cv",
            "cv.csv",
        ],
    ];
    for (i, extra) in cases.iter().enumerate() {
        let name = format!("bad{i}.tif");
        let o = run(dir.path(), &name, extra);
        assert_eq!(o.status.code(), Some(2), "case {i}: {}", text(&o));
        assert!(
            !dir.path().join(&name).exists(),
            "case {i} wrote its output"
        );
    }
    let o = run(
        dir.path(),
        "bad.tif",
        &[
            "--model",
            "linear",
            "--sill",
            "1",
            "--range",
            "50",
            "--simulate",
            "3",
        ],
    );
    assert!(text(&o).contains("linear"), "{}", text(&o));
}
