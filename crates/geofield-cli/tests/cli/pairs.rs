//! `geofield pairs`: Ripley's K of a stem map into CSV (and a chart), the values those of a
//! direct count; bad input exits 2 with nothing written.

use super::*;

/// The CSV's columns by name.
fn columns(path: &Path) -> (Vec<String>, Vec<Vec<f64>>) {
    let t = std::fs::read_to_string(path).unwrap();
    let mut lines = t.lines();
    let head: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
    let mut cols = vec![Vec::new(); head.len()];
    for l in lines {
        for (c, v) in cols.iter_mut().zip(l.split(',')) {
            c.push(v.parse::<f64>().unwrap());
        }
    }
    (head, cols)
}

#[test]
fn pairs_writes_k_and_l_of_a_stem_map() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A 4 × 3 lattice of spacing 2 in the plot [0, 6] × [0, 4], with a stem map's other columns.
    let mut csv = String::from("x_m,y_m,dbh_cm,species\n");
    for j in 0..3 {
        for i in 0..4 {
            csv.push_str(&format!("{},{},30,ABLA\n", 2 * i, 2 * j));
        }
    }
    let stems = d.join("stems.csv");
    std::fs::write(&stems, csv).unwrap();
    let (out, png, json) = (d.join("k.csv"), d.join("l.png"), d.join("k.json"));
    let o = geofield(&[
        "--json",
        s(&json),
        "pairs",
        "--points",
        s(&stems),
        "--window",
        "0,0,6,4",
        "--radii",
        "0,1.5,2,2.5,3",
        "--correction",
        "none,border",
        "--out",
        s(&out),
        "--png",
        s(&png),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let (head, cols) = columns(&out);
    assert_eq!(head, ["r", "theo", "un", "border", "L_un", "L_border"]);
    assert_eq!(cols[0], [0.0, 1.5, 2.0, 2.5, 3.0]);
    // Ordered pairs at distance 2: 2·(3 rows × 3 + 4 columns × 2) = 34; none nearer, none
    // between 2 and 2√2, where the 2 · 12 diagonal pairs join. K_un = area / (n(n − 1)) ·
    // count.
    let k2 = 24.0 / 132.0 * 34.0;
    assert_eq!(cols[2], [0.0, 0.0, k2, k2, 24.0 / 132.0 * 58.0]);
    // Border at r = 2: centres at least 2 inside [0,6]×[0,4]: (2,2) and (4,2), 4 neighbours
    // each at distance 2; K = 8 / (λ · 2), λ = 12/24.
    assert_eq!(cols[3][2], 8.0 / (0.5 * 2.0));
    // No point is 2.5 inside: undefined.
    assert!(cols[3][3].is_nan());
    assert!((cols[4][2] - (k2 / std::f64::consts::PI).sqrt()).abs() < 1e-12);
    assert!(png.exists());
    let j = std::fs::read_to_string(&json).unwrap();
    assert!(
        j.contains("\"point_count\": 12") && j.contains("\"window_from\": \"--window\""),
        "{j}"
    );
}

#[test]
fn pairs_writes_the_pair_correlation_function() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut csv = String::from("x,y\n");
    for j in 0..3 {
        for i in 0..4 {
            csv.push_str(&format!("{},{}\n", 2 * i, 2 * j));
        }
    }
    let stems = d.join("stems.csv");
    std::fs::write(&stems, csv).unwrap();
    let (out, g) = (d.join("k.csv"), d.join("g.csv"));
    let o = geofield(&[
        "pairs",
        "--points",
        s(&stems),
        "--window",
        "0,0,6,4",
        "--radii",
        "0,1.9,2,2.1",
        "--correction",
        "none,border",
        "--out",
        s(&out),
        "--pcf",
        s(&g),
        "--bw",
        "0.2",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let (head, cols) = columns(&g);
    // border has no kernel form: g has the uncorrected estimate only
    assert_eq!(head, ["r", "theo", "un"]);
    assert_eq!(cols[1], [1.0; 4]);
    assert!(cols[2][0].is_nan(), "g(0) with divisor r");
    // Only the 34 ordered pairs at distance 2 lie within the half-width h = sqrt(5) 0.2 of
    // r = 1.9..2.1 (the diagonals are at 2.83): g(r) = 34 κ_h(r − 2) / (2π r n(n−1)/|W|).
    let h = 5f64.sqrt() * 0.2;
    for (k, r) in [(1, 1.9), (2, 2.0), (3, 2.1)] {
        let u: f64 = (r - 2.0) / h;
        let want =
            34.0 * 0.75 / h * (1.0 - u * u) / (2.0 * std::f64::consts::PI * r * 132.0 / 24.0);
        assert!(
            (cols[2][k] - want).abs() <= 1e-12 * want,
            "g({r}) = {} vs {want}",
            cols[2][k]
        );
    }
}

#[test]
fn pairs_writes_a_csr_envelope_of_l() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // 60 trees in 6 tight clumps: L leaves the random patterns' band at short distances.
    let mut csv = String::from("x,y\n");
    for c in 0..6 {
        let (cx, cy) = (
            15.0 + 30.0 * f64::from(c % 3),
            15.0 + 30.0 * f64::from(c / 3),
        );
        for t in 0..10 {
            let a = f64::from(t) * 0.628;
            csv.push_str(&format!("{},{}\n", cx + 1.5 * a.cos(), cy + 1.5 * a.sin()));
        }
    }
    let stems = d.join("stems.csv");
    std::fs::write(&stems, csv).unwrap();
    let (out, env, png) = (d.join("k.csv"), d.join("env.csv"), d.join("l.png"));
    let o = geofield(&[
        "pairs",
        "--points",
        s(&stems),
        "--window",
        "0,0,90,60",
        "--radii",
        "0,1,2,3,5,8",
        "--correction",
        "translate",
        "--out",
        s(&out),
        "--png",
        s(&png),
        "--envelope",
        s(&env),
        "--nsim",
        "19",
        "--seed",
        "3",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let (head, cols) = columns(&env);
    assert_eq!(head, ["r", "obs", "theo", "lo", "hi", "mean"]);
    let (_, k) = columns(&out);
    for i in 1..6 {
        // obs is L of the K written beside it; the band is ordered and holds the mean
        assert!((cols[1][i] - k[3][i]).abs() < 1e-12, "L_trans vs obs");
        assert!(cols[3][i] <= cols[5][i] && cols[5][i] <= cols[4][i]);
        assert_eq!(cols[2][i], cols[0][i], "theo = r");
    }
    // clumps of radius 1.5: at r = 2 and 3 the observed L is far above every simulation
    assert!(cols[1][2] > cols[4][2] && cols[1][3] > cols[4][3]);
    assert!(text(&o).contains("CSR envelope of L"), "{}", text(&o));
    assert!(png.exists());
}

#[test]
fn pairs_bad_input_fails_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("k.csv");
    let p = dir.path().join("p.csv");
    std::fs::write(&p, "x,y\n0,0\n1,1\n5,2\n").unwrap();
    let check = |args: &[&str], needle: &str| {
        let mut v = vec!["pairs", "--points", s(&p), "--out", s(&out)];
        v.extend_from_slice(args);
        let o = geofield(&v);
        let m = text(&o);
        assert_eq!(o.status.code(), Some(2), "{m}");
        assert!(m.contains(needle), "expected {needle:?} in {m}");
        assert!(!out.exists(), "partial output left behind");
    };
    check(
        &["--window", "0,0,4,4"],
        "point 2 (5, 2) is outside the window",
    );
    check(&["--window", "0,0,4"], "XMIN,YMIN,XMAX,YMAX");
    check(&["--window", "0,0,-1,4"], "window");
    check(&["--radii", "1,0.5"], "non-decreasing");
    check(&["--radii=-1,2"], "radii");
    check(&["--r-max", "0"], "--r-max");
    std::fs::write(&p, "x,y\n0,0\n").unwrap();
    check(&[], "at least 2 points");
    std::fs::write(&p, "x,y\n0,0\n1,0\n2,0\n").unwrap();
    check(&[], "no area");
    std::fs::write(&p, "x,y\n0,0\n1,x\n").unwrap();
    check(&[], "p.csv:3");
}

#[test]
fn pairs_writes_a_global_envelope_and_the_mad_and_dclf_tests() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // 60 trees in 6 tight clumps: both tests give the smallest p-value, 1 / (nsim + 1)
    let mut csv = String::from("x,y\n");
    for c in 0..6 {
        let (cx, cy) = (
            15.0 + 30.0 * f64::from(c % 3),
            15.0 + 30.0 * f64::from(c / 3),
        );
        for t in 0..10 {
            let a = f64::from(t) * 0.628;
            csv.push_str(&format!("{},{}\n", cx + 1.5 * a.cos(), cy + 1.5 * a.sin()));
        }
    }
    let stems = d.join("stems.csv");
    std::fs::write(&stems, csv).unwrap();
    let (out, env, json) = (d.join("k.csv"), d.join("env.csv"), d.join("s.json"));
    let base = [
        "pairs",
        "--points",
        s(&stems),
        "--window",
        "0,0,90,60",
        "--radii",
        "0,1,2,3,5,8",
        "--correction",
        "translate",
        "--out",
        s(&out),
        "--envelope",
        s(&env),
        "--nsim",
        "19",
        "--envelope-global",
    ];
    let mut args = base.to_vec();
    args.extend([
        "--envelope-interval",
        "1,8",
        "--envelope-test",
        "mad,dclf",
        "--json",
        s(&json),
    ]);
    let o = geofield(&args);
    assert!(o.status.success(), "{}", text(&o));
    let (head, cols) = columns(&env);
    assert_eq!(head, ["r", "obs", "theo", "lo", "hi", "mean", "centre"]);
    assert!(cols[3][0].is_nan(), "r = 0 is outside the interval");
    let w = cols[4][1] - cols[3][1];
    for i in 1..6 {
        assert!(
            (cols[4][i] - cols[3][i] - w).abs() < 1e-12,
            "constant width"
        );
        assert_eq!(cols[6][i], cols[0][i], "centre: the theory L = r");
    }
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(j["envelope"]["kind"], "global");
    assert_eq!(j["envelope"]["alpha"], 0.05);
    assert_eq!(j["tests"].as_array().unwrap().len(), 2);
    for t in j["tests"].as_array().unwrap() {
        assert_eq!(t["p_value"], 0.05, "{t}");
        assert_eq!(t["rank"], 1);
        assert_eq!(t["interval"], serde_json::json!([1.0, 8.0]));
    }
    let m = text(&o);
    assert!(
        m.contains("MAD test of L") && m.contains("DCLF test of L"),
        "{m}"
    );
    // refusals: exit code 2 and a message naming the problem
    for (extra, needle) in [
        (&["--envelope-interval", "1,9"][..], "interval"),
        (&["--envelope-interval", "1"][..], "RMIN,RMAX"),
        (
            &["--envelope-interval", "2.1,2.5"][..],
            "at least one of the radii",
        ),
        (&["--nrank", "10"][..], "nrank"),
    ] {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        let o = geofield(&args);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(text(&o).contains(needle), "{needle}: {}", text(&o));
    }
    let mut args = base.to_vec();
    args[14] = "0";
    let o = geofield(&args);
    assert_eq!(o.status.code(), Some(2), "nsim 0: {}", text(&o));
}
