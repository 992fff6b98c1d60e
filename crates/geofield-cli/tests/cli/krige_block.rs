//! `geofield krige --block SX[,SY]`: block kriging end to end (block variances at most the mean
//! of the point variances at the block's points, the block mean equal to the mean of point kriging at the block's points, from the
//! command line), and bad requests exit 2 with nothing written.

use geofield_io::{NpyData, read_npy};

use super::{KRIGE_WELLS, geofield, krige_on_wells, s, text};

fn run(dir: &std::path::Path, out: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["--model", "spherical", "--sill", "2", "--range", "80"];
    args.extend_from_slice(extra);
    krige_on_wells(dir, KRIGE_WELLS, out, &args)
}

fn f64s(p: &std::path::Path) -> Vec<f64> {
    match read_npy(p).unwrap().data {
        NpyData::F64(v) => v,
        _ => panic!("f64 expected"),
    }
}

#[test]
fn block_kriging_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = run(d, "p.npy", &["--variance", s(&d.join("pv.npy"))]);
    assert!(o.status.success(), "{}", text(&o));
    let o = run(
        d,
        "b.npy",
        &[
            "--block",
            "10",
            "--block-discretisation",
            "2",
            "--variance",
            s(&d.join("bv.npy")),
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    // The block's 2 x 2 points of a 10 m block centred on a cell centre are the centres of a
    // 5 m grid offset by 2.5 m: point kriging there, averaged, is the block prediction.
    let o = geofield(&[
        "krige",
        "--samples",
        s(&d.join("wells.csv")),
        "--values",
        "z",
        "--extent",
        "0,0,100,100",
        "--cell-size-m",
        "5",
        "--out",
        s(&d.join("fine.npy")),
        "--variance",
        s(&d.join("fv.npy")),
        "--model",
        "spherical",
        "--sill",
        "2",
        "--range",
        "80",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let (p, b, bv, fine, fv) = (
        f64s(&d.join("p.npy")),
        f64s(&d.join("b.npy")),
        f64s(&d.join("bv.npy")),
        f64s(&d.join("fine.npy")),
        f64s(&d.join("fv.npy")),
    );
    assert_eq!(f64s(&d.join("pv.npy")).len(), 100);
    for r in 0..10 {
        for c in 0..10 {
            let four = |v: &[f64]| {
                (v[(2 * r) * 20 + 2 * c]
                    + v[(2 * r) * 20 + 2 * c + 1]
                    + v[(2 * r + 1) * 20 + 2 * c]
                    + v[(2 * r + 1) * 20 + 2 * c + 1])
                    / 4.0
            };
            // Same linear predictor, sums in another order: 1e-10 of values ~10.
            assert!(
                (b[r * 10 + c] - four(&fine)).abs() < 1e-10,
                "cell ({r}, {c})"
            );
            // The block's error is the mean of its four points' errors: its variance is at most
            // the mean of theirs (Cauchy-Schwarz; no nugget to leave out here).
            assert!(bv[r * 10 + c] <= four(&fv) + 1e-12, "cell ({r}, {c})");
        }
    }
    assert!(
        p.iter().zip(&b).any(|(a, c)| (a - c).abs() > 1e-3),
        "blocks differ from points"
    );
}

#[test]
fn bad_blocks_exit_2_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for (i, extra) in [
        &["--block", "0"][..],
        &["--block", "10", "--block-discretisation", "17"],
        &["--block", "10", "--block-discretisation", "lots"],
        &["--block-discretisation", "4"],
        &["--block", "10", "--simulate", "2"],
    ]
    .iter()
    .enumerate()
    {
        let out = format!("bad{i}.npy");
        let o = run(dir.path(), &out, extra);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", text(&o));
        assert!(!dir.path().join(&out).exists(), "{extra:?}");
    }
}
