//! `geofield krige3d`: the CSV of a grid against ordinary and universal kriging solved here in
//! f64 (Gaussian elimination of the bordered system, with gstat's azimuth-90 anisotropy written
//! out as h² = dx² + (dy/r₁)² + (dz/r₂)²); points; bad input exits 2 and writes nothing.

use super::{geofield, s, text};

/// (x, y, z, value): four boreholes, three depths each.
const SAMPLES: [(f64, f64, f64, f64); 12] = [
    (10.0, 10.0, -2.0, 1.0),
    (10.0, 10.0, -8.0, 1.6),
    (10.0, 10.0, -15.0, 2.1),
    (80.0, 20.0, -3.0, 0.4),
    (80.0, 20.0, -9.0, 0.9),
    (80.0, 20.0, -16.0, 1.8),
    (30.0, 90.0, -1.0, 1.3),
    (30.0, 90.0, -7.0, 1.2),
    (30.0, 90.0, -14.0, 2.6),
    (70.0, 70.0, -4.0, 0.7),
    (70.0, 70.0, -10.0, 1.1),
    (70.0, 70.0, -18.0, 2.0),
];

fn csv() -> String {
    let mut t = String::from("x,y,z,v\n");
    for (x, y, z, v) in SAMPLES {
        t += &format!("{x},{y},{z},{v}\n");
    }
    t
}

/// C(h): exponential, sill 0.5, practical range 60 m, nugget 0.01 (at h = 0 only).
fn cov(p: (f64, f64, f64), q: (f64, f64, f64)) -> f64 {
    let (dx, dy, dz) = (p.0 - q.0, (p.1 - q.1) / 0.5, (p.2 - q.2) / 0.2);
    let h = (dx * dx + dy * dy + dz * dz).sqrt();
    0.5 * (-3.0 * h / 60.0).exp() + if h == 0.0 { 0.01 } else { 0.0 }
}

/// Kriging at q: ordinary (drift 1) or universal (1, x, y, z), by elimination.
fn krige(q: (f64, f64, f64), universal: bool) -> (f64, f64) {
    let n = SAMPLES.len();
    let f = |p: (f64, f64, f64)| -> Vec<f64> {
        if universal {
            vec![1.0, p.0, p.1, p.2]
        } else {
            vec![1.0]
        }
    };
    let pt = |i: usize| (SAMPLES[i].0, SAMPLES[i].1, SAMPLES[i].2);
    let np = f(q).len();
    let m = n + np;
    let mut a = vec![vec![0.0; m]; m];
    let mut b = vec![0.0; m];
    for i in 0..n {
        for j in 0..n {
            a[i][j] = cov(pt(i), pt(j));
        }
        for (c, v) in f(pt(i)).into_iter().enumerate() {
            a[i][n + c] = v;
            a[n + c][i] = v;
        }
        b[i] = cov(pt(i), q);
    }
    for (c, v) in f(q).into_iter().enumerate() {
        b[n + c] = v;
    }
    let rhs = b.clone();
    for c in 0..m {
        let p = (c..m)
            .max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs()))
            .unwrap();
        a.swap(c, p);
        b.swap(c, p);
        for r in c + 1..m {
            let k = a[r][c] / a[c][c];
            for cc in c..m {
                a[r][cc] -= k * a[c][cc];
            }
            b[r] -= k * b[c];
        }
    }
    let mut x = vec![0.0; m];
    for r in (0..m).rev() {
        let s: f64 = (r + 1..m).map(|k| a[r][k] * x[k]).sum();
        x[r] = (b[r] - s) / a[r][r];
    }
    let pred = (0..n).map(|i| x[i] * SAMPLES[i].3).sum();
    // σ² = C(0) − λᵀc − μᵀf.
    let var = 0.51
        - (0..n).map(|i| x[i] * rhs[i]).sum::<f64>()
        - (n..m).map(|i| x[i] * rhs[i]).sum::<f64>();
    (pred, var)
}

#[test]
fn grid_csv_matches_the_bordered_system() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::write(d.join("s.csv"), csv()).unwrap();
    for (kind, universal) in [("ordinary", false), ("universal", true)] {
        let out = d.join(format!("{kind}.csv"));
        let o = geofield(&[
            "krige3d",
            "--samples",
            s(&d.join("s.csv")),
            "--value",
            "v",
            "--model",
            "exponential",
            "--sill",
            "0.5",
            "--range",
            "60",
            "--nugget",
            "0.01",
            "--anisotropy",
            "90,0,0,0.5,0.2",
            "--kind",
            kind,
            "--extent",
            "0,0,-20,100,100,0",
            "--cell-size-m",
            "20",
            "--dz-m",
            "5",
            "--out",
            s(&out),
        ]);
        assert!(o.status.success(), "{}", text(&o));
        let body = std::fs::read_to_string(&out).unwrap();
        let mut lines = body.lines();
        assert_eq!(lines.next(), Some("x,y,z,v,v_variance"));
        let mut rows = 0;
        for l in lines {
            let f: Vec<f64> = l.split(',').map(|t| t.parse().unwrap()).collect();
            let (pred, var) = krige((f[0], f[1], f[2]), universal);
            // The same f64 system solved two ways (Cholesky/dual form vs elimination); its
            // condition number is modest (nugget 0.01 on a sill 0.51): 1e-9 is far above
            // the rounding either leaves.
            assert!((f[3] - pred).abs() < 1e-9, "{kind} {l}: {pred}");
            assert!((f[4] - var).abs() < 1e-9, "{kind} {l}: variance {var}");
            rows += 1;
        }
        // 5 x 5 x 4 nodes, x fastest.
        assert_eq!(rows, 100);
    }
}

#[test]
fn points_and_refusals() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::write(d.join("s.csv"), csv()).unwrap();
    std::fs::write(d.join("p.csv"), "x,y,z\n10,10,-8\n55,40,-6\n").unwrap();
    let base = |out: &str, extra: &[&str]| {
        let mut a = vec![
            "krige3d".to_string(),
            "--samples".into(),
            s(&d.join("s.csv")).into(),
            "--value".into(),
            "v".into(),
            "--model".into(),
            "exponential".into(),
            "--sill".into(),
            "0.5".into(),
            "--range".into(),
            "60".into(),
            "--out".into(),
            s(&d.join(out)).into(),
        ];
        a.extend(extra.iter().map(|x| x.to_string()));
        let r: Vec<&str> = a.iter().map(String::as_str).collect();
        geofield(&r)
    };
    let o = base("p_out.csv", &["--points", s(&d.join("p.csv"))]);
    assert!(o.status.success(), "{}", text(&o));
    let body = std::fs::read_to_string(d.join("p_out.csv")).unwrap();
    // Exact at a sample: (10, 10, -8) is sample 2.
    let first: Vec<f64> = body
        .lines()
        .nth(1)
        .unwrap()
        .split(',')
        .map(|t| t.parse().unwrap())
        .collect();
    assert!(
        (first[3] - 1.6).abs() < 1e-12 && first[4].abs() < 1e-12,
        "{body}"
    );
    // Refusals: exit 2, nothing written.
    std::fs::write(d.join("bad.csv"), "x,y,z,v\n1,2,3,4\n5,x6,7,8\n").unwrap();
    let grid = ["--extent", "0,0,-20,100,100,0", "--cell-size-m", "20"];
    for (out, extra, want) in [
        ("a.tif", &grid[..], "expected .nc"),
        (
            "b.nc",
            &["--extent", "0,0,-20,100,100,0", "--cell-size-m", "30"][..],
            "whole number",
        ),
        (
            "c.nc",
            &["--points", s(&d.join("p.csv"))][..],
            "points are written as CSV",
        ),
        (
            "d.nc",
            &["--extent", "0,0,-20,100,100", "--cell-size-m", "20"][..],
            "6 finite numbers",
        ),
        (
            "e.nc",
            &[
                "--extent",
                "0,0,-20,100,100,0",
                "--cell-size-m",
                "20",
                "--anisotropy",
                "0,0,0,0,1",
            ][..],
            "ratio 1 = 0",
        ),
    ] {
        let o = base(out, extra);
        assert_eq!(o.status.code(), Some(2), "{out}: {}", text(&o));
        assert!(text(&o).contains(want), "{out}: {}", text(&o));
        assert!(!d.join(out).exists());
    }
    let o = geofield(&[
        "krige3d",
        "--samples",
        s(&d.join("bad.csv")),
        "--value",
        "v",
        "--model",
        "exponential",
        "--sill",
        "1",
        "--range",
        "10",
        "--extent",
        "0,0,-20,100,100,0",
        "--cell-size-m",
        "20",
        "--out",
        s(&d.join("f.nc")),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("bad.csv:3: column \"y\""), "{}", text(&o));
    assert!(!d.join("f.nc").exists());
}
