//! `geofield disperse` and `geofield synth forest` end to end.

use std::path::PathBuf;
use std::process::Output;

use super::{geofield, s, text};

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

/// Strips of 256 rows (`--strip-rows`) write the maps of the whole-map run (`--strip-rows 0`),
/// with the PNG and `.npy` outputs built from the kept strips; a GeoTIFF of either codec.
#[test]
fn strips_write_the_whole_maps_values() {
    let dir = tempfile::tempdir().unwrap();
    let (t, sp) = (dir.path().join("t.csv"), dir.path().join("s.toml"));
    let o = geofield(&[
        "synth",
        "forest",
        "--trees",
        "2000",
        "--extent",
        "0,0,300,700",
        "--seed",
        "5",
        "--out",
        s(&t),
        "--species-out",
        s(&sp),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let run = |out: &PathBuf, extra: &[&str]| {
        let mut args = vec![
            "disperse",
            "--trees",
            s(&t),
            "--species",
            s(&sp),
            "--extent",
            "0,0,300,700",
            "--cell-size-m",
            "1",
            "--method",
            "cutoff",
            "--out",
            s(out),
            "--quiet",
        ];
        args.extend_from_slice(extra);
        let o = geofield(&args);
        assert!(o.status.success(), "{}", text(&o));
    };
    let read = |p: &PathBuf| geofield_io::read_raster(p).unwrap().0.data;
    let whole = dir.path().join("whole.tif");
    run(&whole, &["--strip-rows", "0"]);
    for (name, extra) in [
        ("strips.tif", vec!["--strip-rows", "256"]),
        (
            "strips_z.tif",
            vec!["--strip-rows", "1", "--compress", "zstd"],
        ),
    ] {
        let p = dir.path().join(name);
        run(&p, &extra);
        assert_eq!(read(&p), read(&whole), "{name}");
    }
    let (npy, png) = (dir.path().join("s.npy"), dir.path().join("s.png"));
    run(&npy, &["--strip-rows", "256", "--png", s(&png)]);
    let whole_npy = dir.path().join("w.npy");
    run(&whole_npy, &["--strip-rows", "0"]);
    assert_eq!(
        std::fs::read(&npy).unwrap(),
        std::fs::read(&whole_npy).unwrap()
    );
    assert!(png.exists());
}
