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

mod disperse;
mod flock;
mod forest;
mod inputs;
mod knn;
mod krige;
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
mod wind_errors;
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
