//! End-to-end tests of the `geofield` binary: the happy path, and bad input giving a clear
//! error, exit code 2 and no output file. One module per command.
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

/// Wells on cell centres of a 0..100 x 0..100 grid of 10 m cells (`x,y,z`).
const KRIGE_WELLS: &str =
    "x,y,z\n15,85,10.0\n75,75,12.5\n25,25,9.0\n85,15,11.0\n55,45,10.5\n35,65,8.5\n";

/// Seven wells (x, y, z) in the 0..100 x 0..100 square, off the cell centres.
const WELLS: [(f64, f64, f64); 7] = [
    (15.0, 85.0, 10.0),
    (75.0, 75.0, 12.5),
    (25.0, 25.0, 9.0),
    (85.0, 15.0, 11.0),
    (55.0, 45.0, 10.5),
    (35.0, 65.0, 8.5),
    (62.0, 8.0, 9.7),
];

/// `geofield krige` of the `z` column of `wells` (CSV text, written to `dir/wells.csv`) on the
/// 0..100 x 0..100 grid of 10 m cells into `dir/out`, then `extra`.
fn krige_on_wells(dir: &Path, wells: &str, out: &str, extra: &[&str]) -> Output {
    let csv = dir.join("wells.csv");
    std::fs::write(&csv, wells).unwrap();
    let out = dir.join(out);
    let mut args = vec![
        "krige",
        "--samples",
        s(&csv),
        "--values",
        "z",
        "--extent",
        "0,0,100,100",
        "--cell-size-m",
        "10",
        "--out",
        s(&out),
    ];
    args.extend_from_slice(extra);
    geofield(&args)
}

mod cokrige;
mod disperse;
mod flock;
mod forest;
mod inputs;
mod knn;
mod krige;
mod krige3d;
mod krige_block;
mod krige_external;
mod krige_indicator;
mod krige_nested;
mod krige_sim;
mod outputs;
mod pairs;
mod refusals;
mod smoke;
mod tour;
mod variogram;
mod wind;
mod wind_diurnal;
mod wind_errors;
mod wind_init;
mod wind_ninja;

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
