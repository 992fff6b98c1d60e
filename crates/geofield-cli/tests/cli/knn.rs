//! `geofield knn` end to end.

use super::{geofield, s, text};

#[test]
fn knn_from_csv_and_npy_matches_a_naive_search() {
    let dir = tempfile::tempdir().unwrap();
    let pts: Vec<[f64; 2]> = (0..200)
        .map(|i| [((i * 37) % 101) as f64 * 0.7, ((i * 53) % 89) as f64 * 1.3])
        .collect();
    let mut csv = String::from("x,y\n");
    for p in &pts {
        csv.push_str(&format!("{},{}\n", p[0], p[1]));
    }
    let (pcsv, idx, dist) = (
        dir.path().join("p.csv"),
        dir.path().join("idx.npy"),
        dir.path().join("d.npy"),
    );
    std::fs::write(&pcsv, csv).unwrap();
    let o = geofield(&[
        "knn",
        "--points",
        s(&pcsv),
        "--k",
        "5",
        "--out",
        s(&idx),
        "--distances",
        s(&dist),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let a = geofield_io::read_npy(&idx).unwrap();
    assert_eq!(a.shape, vec![200, 5]);
    let geofield_io::NpyData::I64(ix) = a.data else {
        panic!("int64 expected")
    };
    let geofield_io::NpyData::F64(dv) = geofield_io::read_npy(&dist).unwrap().data else {
        panic!("f64 expected")
    };
    for q in [0usize, 17, 199] {
        let mut all: Vec<(f64, usize)> = (0..200)
            .filter(|&j| j != q)
            .map(|j| {
                (
                    (pts[j][0] - pts[q][0]).powi(2) + (pts[j][1] - pts[q][1]).powi(2),
                    j,
                )
            })
            .collect();
        all.sort_by(|a, b| a.partial_cmp(b).unwrap());
        for r in 0..5 {
            assert_eq!(ix[q * 5 + r], all[r].1 as i64, "query {q} rank {r}");
            assert!((dv[q * 5 + r] - all[r].0.sqrt()).abs() < 1e-12);
        }
    }
    // .npy input (n x 3, f32) with a radius: absent neighbours are -1.
    let p3 = dir.path().join("p3.npy");
    geofield_io::write_npy_f32(
        &p3,
        &[4, 3],
        &[0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 2.0, 0.0, 9.0, 9.0, 9.0],
    )
    .unwrap();
    let o = geofield(&[
        "knn",
        "--points",
        s(&p3),
        "--k",
        "2",
        "--radius",
        "1.5",
        "--out",
        s(&idx),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let geofield_io::NpyData::I64(ix) = geofield_io::read_npy(&idx).unwrap().data else {
        panic!()
    };
    assert_eq!(ix, vec![1, -1, 0, -1, -1, -1, -1, -1]);
}

#[test]
fn knn_bad_input_fails_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("idx.npy");
    let pcsv = dir.path().join("p.csv");
    std::fs::write(&pcsv, "x,y\n0,0\n1,nan\n").unwrap();
    let run = |args: &[&str]| {
        let mut v = vec!["knn", "--out", s(&out)];
        v.extend_from_slice(args);
        geofield(&v)
    };
    let check = |o: std::process::Output, needle: &str| {
        let m = text(&o);
        assert_eq!(o.status.code(), Some(2), "{m}");
        assert!(m.contains(needle), "expected {needle:?} in {m}");
        assert!(!out.exists(), "partial output left behind");
    };
    check(run(&["--points", s(&pcsv), "--k", "3"]), "p.csv:3");
    std::fs::write(&pcsv, "x,y\n0,0\n1,1\n").unwrap();
    check(run(&["--points", s(&pcsv), "--k", "0"]), "k");
    check(run(&["--points", s(&pcsv), "--k", "70000"]), "65536");
    check(
        run(&[
            "--points",
            s(&pcsv),
            "--k",
            "2",
            "--metric",
            "manhattan",
            "--index",
            "brute",
        ]),
        "--index",
    );
    // A point outside the periodic box.
    check(
        run(&["--points", s(&pcsv), "--k", "1", "--boxsize", "1"]),
        "outside the periodic box",
    );
    let bad = dir.path().join("bad.npy");
    geofield_io::write_npy_f64(&bad, &[2, 4], &[0.0; 8]).unwrap();
    check(run(&["--points", s(&bad), "--k", "1"]), "(n, 2) or (n, 3)");
    geofield_io::write_npy_i64(&bad, &[2, 2], &[0; 4]).unwrap();
    check(run(&["--points", s(&bad), "--k", "1"]), "float");
}

/// --metric, --boxsize and k above 64 against brute force with exact integer distances
/// (lattice points: many ties, broken by index).
#[test]
fn knn_in_any_space_matches_brute_force() {
    let dir = tempfile::tempdir().unwrap();
    let n = 300usize;
    let pts: Vec<[i64; 2]> = (0..n as i64)
        .map(|i| [(i * 37) % 23, (i * 53 + i / 7) % 19])
        .collect();
    let mut csv = String::from("x,y\n");
    for p in &pts {
        csv.push_str(&format!("{},{}\n", p[0], p[1]));
    }
    let (pcsv, idx, dist) = (
        dir.path().join("p.csv"),
        dir.path().join("idx.npy"),
        dir.path().join("d.npy"),
    );
    std::fs::write(&pcsv, csv).unwrap();
    let period = [23i64, 19];
    for (metric, boxed, k) in [
        ("manhattan", true, 100usize),
        ("chebyshev", false, 7),
        ("euclidean", true, 5),
        ("euclidean", false, 120),
    ] {
        let mut args = vec![
            "knn",
            "--points",
            s(&pcsv),
            "--k",
            "",
            "--metric",
            metric,
            "--out",
            s(&idx),
            "--distances",
            s(&dist),
        ];
        let ks = k.to_string();
        args[4] = &ks;
        if boxed {
            args.extend_from_slice(&["--boxsize", "23,19"]);
        }
        let o = geofield(&args);
        assert!(o.status.success(), "{}", text(&o));
        let geofield_io::NpyData::I64(ix) = geofield_io::read_npy(&idx).unwrap().data else {
            panic!("int64 expected")
        };
        let geofield_io::NpyData::F64(dv) = geofield_io::read_npy(&dist).unwrap().data else {
            panic!("f64 expected")
        };
        assert_eq!(ix.len(), n * k);
        for q in [0usize, 41, 299] {
            let mut all: Vec<(i64, usize)> = (0..n)
                .filter(|&j| j != q)
                .map(|j| {
                    let d: Vec<i64> = (0..2)
                        .map(|a| {
                            let d = (pts[j][a] - pts[q][a]).abs();
                            if boxed && 2 * d > period[a] {
                                period[a] - d
                            } else {
                                d
                            }
                        })
                        .collect();
                    let v = match metric {
                        "manhattan" => d[0] + d[1],
                        "chebyshev" => d[0].max(d[1]),
                        _ => d[0] * d[0] + d[1] * d[1],
                    };
                    (v, j)
                })
                .collect();
            all.sort();
            for r in 0..k {
                let (v, j) = all[r];
                assert_eq!(
                    ix[q * k + r],
                    j as i64,
                    "{metric} {boxed} query {q} rank {r}"
                );
                let want = if metric == "euclidean" {
                    (v as f64).sqrt()
                } else {
                    v as f64
                };
                assert_eq!(dv[q * k + r], want);
            }
        }
    }
}
