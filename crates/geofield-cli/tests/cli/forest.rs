//! `geofield forest`: the outputs of a run, replicates and comparisons in the counts table, and
//! bad input refused with exit code 2, a message naming the flag or file, and no output.

use super::{geofield, s, text};

/// A small stand and its species file in `dir`.
fn inputs(dir: &std::path::Path) {
    let o = geofield(&[
        "synth",
        "forest",
        "--trees",
        "150",
        "--extent",
        "0,0,100,80",
        "--out",
        s(&dir.join("t.csv")),
        "--species-out",
        s(&dir.join("s.toml")),
    ]);
    assert!(o.status.success(), "{}", text(&o));
}

/// The counts table as (year, replicate, species, recruits, method) rows.
fn counts(path: &std::path::Path) -> Vec<(u32, u32, String, u64, String)> {
    let t = std::fs::read_to_string(path).unwrap();
    let mut lines = t.lines();
    assert_eq!(
        lines.next(),
        Some(
            "year,replicate,species,seeds,seedlings,saplings,adults,recruits,basal_area_m2_ha,method"
        )
    );
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (
                f[0].parse().unwrap(),
                f[1].parse().unwrap(),
                f[2].to_string(),
                f[7].parse().unwrap(),
                f[9].to_string(),
            )
        })
        .collect()
}

#[test]
fn a_run_writes_every_output_and_counts_each_replicate_and_method() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    inputs(d);
    let (t, sp) = (d.join("t.csv"), d.join("s.toml"));
    let c = d.join("c.csv");
    let o = geofield(&[
        "forest",
        "--trees",
        s(&t),
        "--species",
        s(&sp),
        "--extent",
        "0,0,100,80",
        "--years",
        "4",
        "--replicates",
        "2",
        "--counts",
        s(&c),
        "--png",
        s(&d.join("r.png")),
        "--gif",
        s(&d.join("s.gif")),
        "--density",
        s(&d.join("d.nc")),
        "--density-cell-m",
        "4",
        "--stand-out",
        s(&d.join("f.csv")),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    for f in ["c.csv", "r.png", "s.gif", "d.nc", "f.csv"] {
        assert!(d.join(f).metadata().unwrap().len() > 0, "{f}");
    }
    let rows = counts(&c);
    // (4 years + the initial stand) x 2 replicates x 4 species.
    assert_eq!(rows.len(), 5 * 2 * 4);
    assert!(
        rows.iter().all(|r| r.4 != "auto"),
        "auto is replaced by the method that ran"
    );
    let rec = |rep: u32| -> Vec<u64> { rows.iter().filter(|r| r.1 == rep).map(|r| r.3).collect() };
    assert_ne!(rec(0), rec(1), "replicates draw independently");
    // The same seed again: the same table.
    let c2 = d.join("c2.csv");
    let o = geofield(&[
        "forest",
        "--trees",
        s(&t),
        "--species",
        s(&sp),
        "--extent",
        "0,0,100,80",
        "--years",
        "4",
        "--replicates",
        "2",
        "--counts",
        s(&c2),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(std::fs::read(&c).unwrap(), std::fs::read(&c2).unwrap());
    // --compare: both methods in the table, and the per-year difference printed.
    let c3 = d.join("c3.csv");
    let o = geofield(&[
        "forest",
        "--trees",
        s(&t),
        "--species",
        s(&sp),
        "--extent",
        "0,0,100,80",
        "--years",
        "3",
        "--compare",
        "exact,cutoff",
        "--counts",
        s(&c3),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("relative difference per year"),
        "{}",
        text(&o)
    );
    let rows = counts(&c3);
    for m in ["exact", "cutoff"] {
        assert_eq!(rows.iter().filter(|r| r.4 == m).count(), 4 * 4, "{m}");
    }
}

#[test]
fn bad_input_is_refused_with_exit_code_2_and_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    inputs(d);
    let (t, sp, c) = (d.join("t.csv"), d.join("s.toml"), d.join("c.csv"));
    let bad_species = d.join("bad.toml");
    std::fs::write(
        &bad_species,
        std::fs::read_to_string(&sp).unwrap().replacen(
            "multires_threshold_m = 40.0",
            "multires_threshold_m = 40.0\n[species.forest]\nestablishment = 2.0",
            1,
        ),
    )
    .unwrap();
    let xml = d.join("p.xml");
    std::fs::write(&xml, "<paramFile><plot>").unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--compare", "exact"], "--compare"),
        (vec!["--compare", "exact,exact"], "--compare"),
        (vec!["--years", "0"], "--years"),
        (vec!["--replicates", "0"], "--replicates"),
        (vec!["--density-cell-m", "3"], "--density"),
        (vec!["--tolerance", "2"], "--tolerance"),
    ];
    for (extra, want) in cases {
        let mut args = vec![
            "forest",
            "--trees",
            s(&t),
            "--species",
            s(&sp),
            "--extent",
            "0,0,100,80",
            "--counts",
            s(&c),
        ];
        args.extend(extra.iter());
        let o = geofield(&args);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", text(&o));
        assert!(text(&o).contains(want), "{extra:?}: {}", text(&o));
        assert!(!c.exists(), "{extra:?} left an output");
    }
    let o = geofield(&[
        "forest",
        "--trees",
        s(&t),
        "--species",
        s(&bad_species),
        "--extent",
        "0,0,100,80",
        "--counts",
        s(&c),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("bad.toml") && text(&o).contains("establishment"),
        "{}",
        text(&o)
    );
    let o = geofield(&["forest", "--sortie", s(&xml), "--counts", s(&c)]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("p.xml"), "{}", text(&o));
    assert!(!c.exists());
}

/// An ESRI ASCII grid of `cols` x `rows` 1 m cells from the origin, every cell `value`.
fn ascii(path: &std::path::Path, cols: usize, rows: usize, value: &str) {
    let mut t = format!(
        "ncols {cols}\nnrows {rows}\nxllcorner 0\nyllcorner 0\ncellsize 1\nNODATA_value -9999\n"
    );
    for _ in 0..rows {
        t.push_str(&vec![value; cols].join(" "));
        t.push('\n');
    }
    std::fs::write(path, t).unwrap();
}

/// `--suitability`: a layer of zeros establishes nothing; a layer on another grid is refused.
#[test]
fn a_suitability_layer_scales_establishment() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    inputs(d);
    let (t, sp, c) = (d.join("t.csv"), d.join("s.toml"), d.join("c.csv"));
    let zero = d.join("zero.asc");
    ascii(&zero, 100, 80, "0");
    let o = geofield(&[
        "forest",
        "--trees",
        s(&t),
        "--species",
        s(&sp),
        "--extent",
        "0,0,100,80",
        "--years",
        "2",
        "--suitability",
        s(&zero),
        "--counts",
        s(&c),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let rows = counts(&c);
    assert!(
        rows.iter().all(|r| r.3 == 0),
        "no recruits on unsuitable ground: {rows:?}"
    );
    let other = d.join("other.asc");
    ascii(&other, 50, 80, "1");
    let c2 = d.join("c2.csv");
    let o = geofield(&[
        "forest",
        "--trees",
        s(&t),
        "--species",
        s(&sp),
        "--extent",
        "0,0,100,80",
        "--years",
        "2",
        "--suitability",
        s(&other),
        "--counts",
        s(&c2),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("other.asc") && text(&o).contains("grid"),
        "{}",
        text(&o)
    );
    assert!(!c2.exists());
}
