//! End-to-end tests of the `geofield` binary: the happy path, and bad input giving a clear
//! error, exit code 2 and no output file.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::needless_range_loop
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The binary: `GEOFIELD_BIN`, else cargo's build output, else `.gpu/bin/geofield` (test binaries
/// also run on the GPU machine, from another folder, where cargo's path does not exist).
fn binary() -> PathBuf {
    if let Some(p) = std::env::var_os("GEOFIELD_BIN") {
        return PathBuf::from(p);
    }
    let built = PathBuf::from(env!("CARGO_BIN_EXE_geofield"));
    if built.exists() {
        built
    } else {
        PathBuf::from(".gpu/bin/geofield")
    }
}

fn geofield(args: &[&str]) -> Output {
    Command::new(binary())
        .args(args)
        .env("GEOFIELD_BACKEND", "cpu")
        .output()
        .expect("run geofield")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

const SPECIES: &str = r#"
[[species]]
name = "fir"
kernel = "weibull"
d = 1.32e-4
theta = 3
str = 106.9
beta = 2
eta = "analytic"
min_dbh_cm = 15

[[species]]
name = "aspen"
kernel = "2dt"
u = 30.0
p = 1.5
str = 50.0
beta = 2
eta = 1.0
min_dbh_cm = 10
"#;

struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new(trees_csv: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("species.toml"), SPECIES).unwrap();
        std::fs::write(dir.path().join("trees.csv"), trees_csv).unwrap();
        Fixture { dir }
    }
    fn p(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    fn disperse(&self, out: &str, extra: &[&str]) -> Output {
        let (t, sp, o) = (self.p("trees.csv"), self.p("species.toml"), self.p(out));
        let mut args = vec![
            "disperse",
            "--trees",
            s(&t),
            "--species",
            s(&sp),
            "--extent",
            "0,0,40,30",
            "--cell-size-m",
            "1",
            "--out",
            s(&o),
        ];
        args.extend_from_slice(extra);
        geofield(&args)
    }
    /// Files in the fixture folder other than the inputs.
    fn outputs(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .filter(|n| n != "trees.csv" && n != "species.toml")
            .collect();
        v.sort();
        v
    }
}

const GOOD: &str = "species,dbh_cm,y_m,x_m,plot\nfir,30,10,10,a\naspen,25,20,30,a\nfir,12,15,15,b\nfir,40,45,5,b\n";

#[test]
fn disperse_writes_every_format_and_reports() {
    let f = Fixture::new(GOOD);
    let o = f.disperse(
        "seeds.tif",
        &[
            "--png",
            s(&f.p("seeds.png")),
            "--json",
            s(&f.p("summary.json")),
            "--compare-exact",
            "--method",
            "cutoff",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let out = text(&o);
    assert!(
        out.contains("fir") && out.contains("cutoff") && out.contains("vs exact"),
        "{out}"
    );
    assert!(
        out.contains("outside the extent"),
        "the tree at y = 45 is outside: {out}"
    );
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(f.p("summary.json")).unwrap()).unwrap();
    assert_eq!(j["cells"], 1200);
    assert_eq!(j["trees"]["outside_extent"], 1);
    assert_eq!(
        j["species"][0]["trees_contributing"], 2,
        "the 12 cm fir is below min_dbh_cm"
    );
    for c in j["compare_exact"].as_array().unwrap() {
        assert!(c[1]["max_abs_over_max"].as_f64().unwrap() <= 1e-6, "{c}");
    }
    assert!(f.p("seeds.png").exists());
    // NPY: (species, rows, cols) in f64.
    let o = f.disperse("seeds.npy", &["--precision", "f64", "--method", "exact"]);
    assert!(o.status.success(), "{}", text(&o));
    let bytes = std::fs::read(f.p("seeds.npy")).unwrap();
    let header = String::from_utf8_lossy(&bytes[..128]);
    assert!(
        header.contains("'<f8'") && header.contains("(2, 30, 40)"),
        "{header}"
    );
    // ESRI ASCII: one file per species.
    let o = f.disperse("seeds.asc", &[]);
    assert!(o.status.success(), "{}", text(&o));
    let asc = std::fs::read_to_string(f.p("seeds_fir.asc")).unwrap();
    assert!(asc.starts_with("ncols") && asc.contains("nrows") && asc.contains("cellsize"));
    assert!(f.p("seeds_aspen.asc").exists());
}

fn assert_fails(o: &Output, f: &Fixture, needles: &[&str]) {
    let msg = text(o);
    assert_eq!(o.status.code(), Some(2), "{msg}");
    for n in needles {
        assert!(msg.contains(n), "expected {n:?} in: {msg}");
    }
    assert!(!msg.contains("panicked"), "{msg}");
    assert!(
        f.outputs().is_empty(),
        "left files behind: {:?}",
        f.outputs()
    );
}

#[test]
fn bad_inputs_fail_cleanly() {
    // Malformed CSV: a row with too many fields.
    let f = Fixture::new("x_m,y_m,dbh_cm,species\n1,2,30,fir\n1,2,30,fir,extra\n");
    assert_fails(&f.disperse("o.tif", &[]), &f, &["trees.csv", "3"]);
    // Not a number.
    let f = Fixture::new("x_m,y_m,dbh_cm,species\n1,2,thirty,fir\n");
    assert_fails(
        &f.disperse("o.tif", &[]),
        &f,
        &["trees.csv", "2", "dbh_cm", "thirty"],
    );
    // Missing column.
    let f = Fixture::new("x_m,y_m,species\n1,2,fir\n");
    assert_fails(&f.disperse("o.tif", &[]), &f, &["dbh_cm", "trees.csv"]);
    // NaN DBH and negative DBH.
    let f = Fixture::new("x_m,y_m,dbh_cm,species\n1,2,NaN,fir\n");
    assert_fails(&f.disperse("o.tif", &[]), &f, &["trees.csv:2", "dbh_cm"]);
    let f = Fixture::new("x_m,y_m,dbh_cm,species\n1,2,30,fir\n1,2,-4,fir\n");
    assert_fails(
        &f.disperse("o.tif", &[]),
        &f,
        &["trees.csv:3", "dbh_cm", "negative"],
    );
    // NaN coordinate.
    let f = Fixture::new("x_m,y_m,dbh_cm,species\nnan,2,30,fir\n");
    assert_fails(&f.disperse("o.tif", &[]), &f, &["trees.csv:2", "x_m"]);
    // Unknown species: skipped and reported, an error with --strict.
    let f = Fixture::new("x_m,y_m,dbh_cm,species\n1,2,30,fir\n3,4,30,oak\n");
    assert_fails(
        &f.disperse("o.tif", &["--strict"]),
        &f,
        &["trees.csv:3", "oak", "--strict"],
    );
    let o = f.disperse("o.tif", &[]);
    assert!(
        o.status.success() && text(&o).contains("oak"),
        "{}",
        text(&o)
    );
    // Bad grids.
    let f = Fixture::new(GOOD);
    for (cell, needle) in [
        ("0", "cell size"),
        ("-1", "cell size"),
        ("0.7", "whole number"),
    ] {
        let (t, sp, out) = (f.p("trees.csv"), f.p("species.toml"), f.p("o.tif"));
        let o = geofield(&[
            "disperse",
            "--trees",
            s(&t),
            "--species",
            s(&sp),
            "--extent",
            "0,0,40,30",
            "--cell-size-m",
            cell,
            "--out",
            s(&out),
        ]);
        assert_fails(&o, &f, &[needle]);
    }
    // A grid that would not fit in memory is refused up front with its size.
    let (t, sp, out) = (f.p("trees.csv"), f.p("species.toml"), f.p("o.tif"));
    let o = geofield(&[
        "disperse",
        "--trees",
        s(&t),
        "--species",
        s(&sp),
        "--extent",
        "0,0,4000000,4000000",
        "--cell-size-m",
        "1",
        "--out",
        s(&out),
    ]);
    assert_fails(&o, &f, &["GiB", "memory"]);
    // Unwritable output path.
    let o = f.disperse("no/such/folder/o.tif", &[]);
    assert_fails(&o, &f, &["does not exist"]);
    // Unsupported output extension.
    let o = f.disperse("o.jpg", &[]);
    assert_fails(&o, &f, &[".jpg"]);
    // Bad species file.
    std::fs::write(f.p("species.toml"), SPECIES.replace("d = 1.32e-4", "d = 0")).unwrap();
    let o = f.disperse("o.tif", &[]);
    assert_fails(&o, &f, &["species.toml:", "`d`"]);
}

#[test]
fn synth_forest_writes_a_stand_that_disperse_reads() {
    let dir = tempfile::tempdir().unwrap();
    let (t, sp, out) = (
        dir.path().join("t.csv"),
        dir.path().join("s.toml"),
        dir.path().join("o.tif"),
    );
    let o = geofield(&[
        "synth",
        "forest",
        "--trees",
        "300",
        "--extent",
        "0,0,100,100",
        "--seed",
        "3",
        "--pattern",
        "clustered",
        "--out",
        s(&t),
        "--species-out",
        s(&sp),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let csv = std::fs::read_to_string(&t).unwrap();
    assert_eq!(csv.lines().count(), 301);
    let o = geofield(&[
        "disperse",
        "--trees",
        s(&t),
        "--species",
        s(&sp),
        "--extent",
        "0,0,100,100",
        "--cell-size-m",
        "2",
        "--out",
        s(&out),
        "--method",
        "auto",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("auto:"), "{}", text(&o));
}

#[test]
fn info_reports_backends() {
    let o = geofield(&["info"]);
    assert!(o.status.success());
    let t = text(&o);
    assert!(
        t.contains("geofield") && t.contains("CPU backend") && t.contains("CUDA backend"),
        "{t}"
    );
}

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
    let check = |o: Output, needle: &str| {
        let m = text(&o);
        assert_eq!(o.status.code(), Some(2), "{m}");
        assert!(m.contains(needle), "expected {needle:?} in {m}");
        assert!(!out.exists(), "partial output left behind");
    };
    check(run(&["--points", s(&pcsv), "--k", "3"]), "p.csv:3");
    std::fs::write(&pcsv, "x,y\n0,0\n1,1\n").unwrap();
    check(run(&["--points", s(&pcsv), "--k", "0"]), "k");
    check(run(&["--points", s(&pcsv), "--k", "65"]), "64");
    let bad = dir.path().join("bad.npy");
    geofield_io::write_npy_f64(&bad, &[2, 4], &[0.0; 8]).unwrap();
    check(run(&["--points", s(&bad), "--k", "1"]), "(n, 2) or (n, 3)");
    geofield_io::write_npy_i64(&bad, &[2, 2], &[0; 4]).unwrap();
    check(run(&["--points", s(&bad), "--k", "1"]), "float");
}

#[test]
fn flock_writes_state_frames_gif_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let (state, gif, json, frames) = (
        dir.path().join("state.npy"),
        dir.path().join("flock.gif"),
        dir.path().join("stats.json"),
        dir.path().join("frames"),
    );
    let o = geofield(&[
        "flock",
        "--agents",
        "500",
        "--steps",
        "40",
        "--world-radius",
        "30",
        "--backend",
        "cpu",
        "--out",
        s(&state),
        "--gif",
        s(&gif),
        "--json",
        s(&json),
        "--frames",
        s(&frames),
        "--every",
        "20",
        "--frame-size",
        "128",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("steps/s"), "{}", text(&o));
    let a = geofield_io::read_npy(&state).unwrap();
    assert_eq!(a.shape, vec![500, 6]);
    let geofield_io::NpyData::F32(v) = a.data else {
        panic!("float32 expected")
    };
    for r in v.chunks_exact(6) {
        let p = (r[0] * r[0] + r[1] * r[1] + r[2] * r[2]).sqrt();
        let sp = (r[3] * r[3] + r[4] * r[4] + r[5] * r[5]).sqrt();
        assert!(p <= 30.0 * (1.0 + 1e-6) && sp <= 9.0 * (1.0 + 1e-6));
    }
    assert_eq!(&std::fs::read(&gif).unwrap()[..6], b"GIF89a");
    let n_frames = std::fs::read_dir(&frames).unwrap().count();
    assert_eq!(n_frames, 3); // steps 0, 20, 40
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(j["agents"], 500);
    assert!(j["steps_per_s"].as_f64().unwrap() > 0.0);
    assert_eq!(j["samples"].as_array().unwrap().len(), 3);

    // The saved state round-trips through --init (positions and velocities; the smoothed
    // accelerations are not saved and restart at zero).
    let out2 = dir.path().join("state2.npy");
    let o = geofield(&[
        "flock",
        "--init",
        s(&state),
        "--steps",
        "0",
        "--world-radius",
        "30",
        "--backend",
        "cpu",
        "--out",
        s(&out2),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let b = geofield_io::read_npy(&out2).unwrap();
    let geofield_io::NpyData::F32(w) = b.data else {
        panic!("float32 expected")
    };
    for (x, y) in v.iter().zip(&w) {
        assert!((x - y).abs() <= 1e-5 * x.abs().max(1.0), "{x} vs {y}");
    }
}

#[test]
fn flock_bad_input_fails_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("state.npy");
    let check = |args: &[&str], needle: &str| {
        let mut v = vec![
            "flock",
            "--backend",
            "cpu",
            "--steps",
            "2",
            "--out",
            s(&out),
        ];
        v.extend_from_slice(args);
        let o = geofield(&v);
        let m = text(&o);
        assert_eq!(o.status.code(), Some(2), "{m}");
        assert!(m.contains(needle), "expected {needle:?} in {m}");
        assert!(!out.exists(), "partial output left behind");
    };
    check(&["--agents", "0"], "--agents");
    check(&["--agents", "10", "--k", "0"], "k = 0");
    check(&["--agents", "10", "--k", "65"], "k = 65");
    check(&["--agents", "10", "--radius=-1"], "radius");
    check(&["--agents", "10", "--world-radius", "nan"], "world radius");
    check(
        &["--agents", "10", "--every", "0", "--gif", "x.gif"],
        "--every",
    );
    // A state file of the wrong shape, the wrong dtype, with NaN, or empty.
    let bad = dir.path().join("bad.npy");
    geofield_io::write_npy_f32(&bad, &[4, 3], &[0.0; 12]).unwrap();
    check(&["--init", s(&bad)], "shape (N, 6)");
    geofield_io::write_npy_i64(&bad, &[2, 6], &[0; 12]).unwrap();
    check(&["--init", s(&bad)], "float32 or float64");
    let mut rows = vec![0.0f32; 12];
    rows[8] = f32::NAN;
    geofield_io::write_npy_f32(&bad, &[2, 6], &rows).unwrap();
    check(&["--init", s(&bad)], "agent 1");
    geofield_io::write_npy_f32(&bad, &[0, 6], &[]).unwrap();
    check(&["--init", s(&bad)], "no agents");
    check(
        &["--init", s(&dir.path().join("missing.npy"))],
        "missing.npy",
    );
    // An output folder that does not exist: refused before any work.
    let o = geofield(&[
        "flock",
        "--agents",
        "10",
        "--out",
        s(&dir.path().join("nope").join("s.npy")),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("does not exist"), "{}", text(&o));
}

/// Samples of an exactly known variogram: z = x on a lattice gives γ(h) = h²/2 east-west.
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
