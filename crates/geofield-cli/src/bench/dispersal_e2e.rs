//! The end-to-end row of `geofield bench dispersal --e2e`: `geofield disperse` itself, run as a
//! user runs it (a new process each time), on the case's stand written as a CSV, with a
//! tiled, compressed GeoTIFF out. The wall time is the process's, from start to exit; the
//! breakdown (read, backend, species with their preparing, kernels and copies, output with
//! the file's writing and disk sync) is the command's own `--json` timing of the median run.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use geofield::dispersal::io as dio;
use geofield::dispersal::{Species, Stand};

use super::Stats;
use super::dispersal_print::fmt_s;

/// The measured runs of `geofield disperse`.
#[derive(Debug, Clone, serde::Serialize)]
pub(super) struct E2eResult {
    /// The command run (paths in a temporary folder).
    command: String,
    csv_bytes: u64,
    tif_bytes: u64,
    /// Process wall time, start to exit.
    wall: Stats,
    /// The command's own total (`seconds_total` of its `--json`): wall less process start and
    /// exit.
    inside: Stats,
    /// The `timing` object of the run with the median wall time.
    breakdown: serde_json::Value,
    /// Species' methods in the median run (from its report).
    methods: Vec<String>,
}

/// Run `geofield disperse` on `stand` (written as CSV) for a `cols` x `rows` grid of 1 m cells
/// `warmup + repeats` times on `backend`, at `tolerance`, method auto.
#[allow(clippy::too_many_arguments)]
pub(super) fn run(
    stand: &Stand,
    species: &[Species],
    cols: usize,
    rows: usize,
    backend: &str,
    compress: &str,
    tolerance: f64,
    warmup: usize,
    repeats: usize,
) -> Result<E2eResult> {
    let dir = tempfile::tempdir().context("a temporary folder for the end-to-end runs")?;
    let (trees, sp) = (
        dir.path().join("stand.csv"),
        dir.path().join("species.toml"),
    );
    let (out, json) = (dir.path().join("seeds.tif"), dir.path().join("run.json"));
    dio::write_stand(&trees, stand, species)?;
    dio::write_species(&sp, species)?;
    let exe = std::env::current_exe().context("the path of this geofield executable")?;
    let extent = format!("0,0,{cols},{rows}");
    let tol = tolerance.to_string();
    let args: Vec<&std::ffi::OsStr> = [
        "disperse".as_ref(),
        "--trees".as_ref(),
        trees.as_os_str(),
        "--species".as_ref(),
        sp.as_os_str(),
        "--extent".as_ref(),
        extent.as_ref(),
        "--cell-size-m".as_ref(),
        "1".as_ref(),
        "--out".as_ref(),
        out.as_os_str(),
        "--tolerance".as_ref(),
        tol.as_ref(),
        "--backend".as_ref(),
        backend.as_ref(),
        "--compress".as_ref(),
        compress.as_ref(),
        "--json".as_ref(),
        json.as_os_str(),
        "--quiet".as_ref(),
    ]
    .into();
    let mut runs: Vec<(f64, serde_json::Value)> = Vec::new();
    for i in 0..warmup + repeats.max(1) {
        let _ = std::fs::remove_file(&out);
        let t = Instant::now();
        let o = Command::new(&exe).args(&args).output()?;
        let wall = t.elapsed().as_secs_f64();
        if !o.status.success() {
            bail!(
                "geofield disperse failed ({}): {}",
                o.status,
                String::from_utf8_lossy(&o.stderr).trim()
            );
        }
        if i >= warmup {
            runs.push((wall, read_json(&json)?));
        }
    }
    let tif_bytes = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
    let csv_bytes = std::fs::metadata(&trees).map(|m| m.len()).unwrap_or(0);
    let wall = Stats::of(runs.iter().map(|r| r.0).collect());
    let inside = Stats::of(
        runs.iter()
            .map(|r| r.1["seconds_total"].as_f64().unwrap_or(f64::NAN))
            .collect(),
    );
    runs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let median = runs.swap_remove(runs.len() / 2).1;
    let methods = median["species"]
        .as_array()
        .map(|s| {
            s.iter()
                .map(|r| r["method"].as_str().unwrap_or("?").to_string())
                .collect()
        })
        .unwrap_or_default();
    let args: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    Ok(E2eResult {
        command: format!("geofield {}", args.join(" ")),
        csv_bytes,
        tif_bytes,
        wall,
        inside,
        breakdown: median["timing"].clone(),
        methods,
    })
}

fn read_json(p: &Path) -> Result<serde_json::Value> {
    let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
    Ok(serde_json::from_str(&text)?)
}

/// The row and its breakdown on stdout.
pub(super) fn print(r: &E2eResult) {
    let t = &r.breakdown;
    let s = |k: &str| t[k].as_f64().map_or("-".to_string(), fmt_s);
    println!(
        "end to end (geofield disperse, CSV {:.0} MB in, GeoTIFF {:.0} MB out, methods {}): \
         wall {} (min {}, max {}; inside the command {})",
        r.csv_bytes as f64 / 1e6,
        r.tif_bytes as f64 / 1e6,
        r.methods.join("/"),
        fmt_s(r.wall.median),
        fmt_s(r.wall.min),
        fmt_s(r.wall.max),
        fmt_s(r.inside.median)
    );
    println!(
        "   read {}, backend {}, species {} (preparing {}, GPU kernels {}, copies {}, waiting \
         for the writer {}), output after the last species {} (GeoTIFF writing {}, disk sync {}; \
         compressing {} beside the species)",
        s("read_s"),
        s("backend_s"),
        s("dispersal_s"),
        s("prepare_s"),
        s("kernels_s"),
        s("copies_s"),
        s("handoff_s"),
        s("output_s"),
        s("file_write_s"),
        s("disk_sync_s"),
        s("compress_s"),
    );
}
