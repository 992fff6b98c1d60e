//! `geofield krige --indicator T1,T2,...` end to end: probabilities equal the indicators at the
//! wells (exact kriging, wells on cell centres), are distribution functions at every node, and
//! bad thresholds exit 2 and write nothing.

use geofield_io::{NpyData, read_npy};

use super::{KRIGE_WELLS, krige_on_wells, text};

fn run(dir: &std::path::Path, out: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["--model", "exponential", "--sill", "0.25", "--range", "60"];
    args.extend_from_slice(extra);
    krige_on_wells(dir, KRIGE_WELLS, out, &args)
}

#[test]
fn indicator_kriging_gives_distribution_functions_honouring_the_wells() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(dir.path(), "p.npy", &["--indicator", "9.5,10.5,11.5"]);
    assert!(o.status.success(), "{}", text(&o));
    let a = read_npy(&dir.path().join("p.npy")).unwrap();
    assert_eq!(a.shape, vec![3, 10, 10]);
    let NpyData::F64(p) = a.data else {
        panic!("f64 expected")
    };
    for node in 0..100 {
        for k in 0..3 {
            let v = p[k * 100 + node];
            assert!((0.0..=1.0).contains(&v), "node {node}: {v}");
            if k > 0 {
                assert!(v >= p[(k - 1) * 100 + node], "node {node} decreases");
            }
        }
    }
    // At a well the kriged indicator is the indicator (exact), which the correction keeps.
    for (x, y, z) in [(15.0, 85.0, 10.0), (75.0, 75.0, 12.5), (25.0, 25.0, 9.0)] {
        let (r, c) = (((95.0 - y) / 10.0) as usize, ((x - 5.0) / 10.0) as usize);
        for (k, t) in [9.5, 10.5, 11.5].iter().enumerate() {
            let want = if z <= *t { 1.0 } else { 0.0 };
            assert!(
                (p[k * 100 + r * 10 + c] - want).abs() < 1e-9,
                "({x}, {y}) t = {t}"
            );
        }
    }
}

#[test]
fn bad_thresholds_exit_2_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for (i, extra) in [
        &["--indicator", "10.5,9.5"][..],
        &["--indicator", "9.5,9.5"],
        &["--indicator", "9.5", "--order-correction", "sideways"],
        &["--indicator", "9.5", "--simulate", "3"],
    ]
    .iter()
    .enumerate()
    {
        let name = format!("bad{i}.tif");
        let o = run(dir.path(), &name, extra);
        assert_eq!(o.status.code(), Some(2), "case {i}: {}", text(&o));
        assert!(!dir.path().join(&name).exists());
    }
}
