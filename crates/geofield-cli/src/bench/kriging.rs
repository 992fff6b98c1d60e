//! `geofield bench kriging`: every method on the paper's case and its zoom series, and a large
//! case, in one run.
//!
//! - **paper**: the paper's grid (50 × 90 nodes over 1 km × 1.8 km), 10 wells, 11 surfaces,
//!   exponential c = 400, a = 800, zoomed 1x, 2x, 4x, 6x, 8x, 10x (the grid refined, up to 500 ×
//!   900 nodes). Methods: the paper's per-node Gaussian elimination (experiments 1, 2 and 4),
//!   factor-once explicit weights, and dual kriging (ours). On a GPU backend also the paper's
//!   kernels and dual kriging in f32 and f64, end to end (upload, kernels, copy back).
//! - **large**: 1000 × 1000 nodes over [0, 1000]², n = 500, 2,000, 10,000 samples uniform in the
//!   square, z = sin(x/150) + cos(y/200) + 0.1 N(0, 1), exponential c = 1, a = 300 (the note's
//!   benchmark); H = 1 and 10, with and without the variance, global and local k = 32. On the CPU
//!   heavy rows run on fewer nodes (`--cpu-max-pairs`), stated in the row. These rows time
//!   `geofield::bench::kriging::krige_grid_with`, the grid evaluation `geofield krige` runs (through
//!   `kriging::krige`), so the
//!   command's "grid evaluated in" matches their wall time (one-time costs aside: the first
//!   run's kernel compilation and loading, paid here in the warm-up).
//!
//! Every row: median wall time (and device time from CUDA events on GPU rows), nodes/s,
//! node-sample pairs/s, the largest error against f64 dual kriging on the CPU (on up to 4,096
//! nodes), and on GPU rows the share of the special-function limit (2 SFU results per pair:
//! sqrt and exp, 16 per SM per clock).

use crate::ctx::{Ctx, Global};
use anyhow::{Result, bail};
use clap::{Args, ValueEnum};
use geofield::Backend;
use geofield::bench::kriging::{Group, PaperMode, System, build, krige_grid_with, paper_nodes};
use geofield::kriging::{KrigeOptions, Model, Neighbourhood, Precision, SampleSet, Variogram};
use geofield_core::{Extent, GridSpec};
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Normal};
use rand_pcg::Pcg64;

use super::{BenchEnv, Stats, measure};
use crate::output;

#[derive(Clone, Copy, ValueEnum, PartialEq, Debug)]
pub enum Case {
    Paper,
    Large,
}

#[derive(Args)]
pub struct BenchArgs {
    #[arg(long, value_delimiter = ',', value_enum, default_values_t = vec![Case::Paper, Case::Large])]
    pub cases: Vec<Case>,
    /// Zoom factors of the paper's case.
    #[arg(long, value_delimiter = ',', default_values_t = vec![1, 2, 4, 6, 8, 10])]
    pub zoom: Vec<usize>,
    /// Sample counts of the large case.
    #[arg(long, value_delimiter = ',', default_values_t = vec![500, 2000, 10000])]
    pub large_n: Vec<usize>,
    /// Nodes per side of the large case.
    #[arg(long, default_value_t = 1000)]
    pub large_side: usize,
    /// CPU rows evaluate at most this many node-sample pairs (nodes × n, × n again with the
    /// variance); fewer nodes otherwise (said in the row).
    #[arg(long, default_value_t = 2e10)]
    pub cpu_max_pairs: f64,
    #[arg(long, default_value_t = 5)]
    pub repeats: usize,
    #[arg(long, default_value_t = 1)]
    pub warmup: usize,
    /// On a GPU backend, skip the host CPU's rows (the paper's per-node elimination and the
    /// CPU dual), keeping only the f64 reference used for the errors.
    #[arg(long)]
    pub gpu_only: bool,
}

#[derive(serde::Serialize, Clone)]
pub struct Row {
    pub case: String,
    pub n: usize,
    pub surfaces: usize,
    pub nodes: usize,
    pub method: String,
    pub variance: bool,
    pub time: Stats,
    /// GPU rows: the kernels alone (CUDA events), median seconds.
    pub device_s: Option<f64>,
    pub nodes_per_s: f64,
    pub pairs_per_s: f64,
    /// Largest |difference| from f64 dual kriging on the CPU, relative to the data's spread.
    pub max_err: f64,
    /// GPU rows: pairs/s × 2 over the special-function-unit limit.
    pub sfu_share: Option<f64>,
}

#[derive(serde::Serialize)]
struct Report {
    env: BenchEnv,
    rows: Vec<Row>,
}

/// Case set-up: samples, variogram, grid.
struct Setup {
    name: String,
    set: SampleSet,
    variogram: Variogram,
    grid: GridSpec,
    spread: f64,
}

fn paper_setup(zoom: usize) -> Result<Setup> {
    let extent = Extent::new(0.0, 0.0, 1000.0, 1800.0)?;
    let grid = GridSpec::from_extent(extent, 20.0 / zoom as f64)?;
    let strata = geofield::synth::Strata::new(&extent, 11, 5);
    let (xs, ys, z) = strata.wells(10, 5, 0.0);
    let spread = spread(&z);
    Ok(Setup {
        name: format!("paper {zoom}x"),
        set: SampleSet::new(xs, ys, z),
        variogram: Variogram::new(Model::Exponential, 400.0, 800.0, 0.0)?,
        grid,
        spread,
    })
}

fn large_setup(n: usize, h: usize, side: usize) -> Result<Setup> {
    let mut rng = Pcg64::seed_from_u64(42 + n as u64);
    let noise = Normal::new(0.0, 0.1)?;
    let xs: Vec<f64> = (0..n).map(|_| rng.random::<f64>() * 1000.0).collect();
    let ys: Vec<f64> = (0..n).map(|_| rng.random::<f64>() * 1000.0).collect();
    let z: Vec<Vec<f64>> = (0..h)
        .map(|k| {
            (0..n)
                .map(|i| {
                    (xs[i] / 150.0 + k as f64).sin()
                        + (ys[i] / 200.0).cos()
                        + noise.sample(&mut rng)
                })
                .collect()
        })
        .collect();
    let extent = Extent::new(0.0, 0.0, 1000.0, 1000.0)?;
    let grid = GridSpec::from_extent(extent, 1000.0 / side as f64)?;
    let spread = spread(&z);
    Ok(Setup {
        name: format!("large n={n} H={h}"),
        set: SampleSet::new(xs, ys, z),
        variogram: Variogram::new(Model::Exponential, 1.0, 300.0, 0.0)?,
        grid,
        spread,
    })
}

fn spread(z: &[Vec<f64>]) -> f64 {
    let (lo, hi) = z
        .iter()
        .flatten()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
            (a.min(v), b.max(v))
        });
    (hi - lo).max(1e-300)
}

/// A grid with the first `rows` rows of `grid` (at least one).
fn first_rows(grid: &GridSpec, rows: usize) -> GridSpec {
    GridSpec {
        rows: rows.clamp(1, grid.rows),
        ..*grid
    }
}

/// f64 dual predictions on the CPU at the first nodes of the grid (the error reference).
fn reference(groups: &[Group], grid: &GridSpec, nodes: usize) -> Result<Vec<Vec<f64>>> {
    let mut out = vec![];
    for g in groups {
        let map = g.system.frame().node_grid(grid);
        let (nx, ny): (Vec<f64>, Vec<f64>) = (0..nodes.min(grid.n_cells()))
            .map(|j| map.node(j / grid.cols, j % grid.cols))
            .unzip();
        let (p, _) = g.system.eval_nodes(&nx, &ny, false)?;
        out.extend(p);
    }
    Ok(out)
}

fn max_err(got: &[Vec<f64>], want: &[Vec<f64>], spread: f64) -> f64 {
    let mut e = 0.0f64;
    for (g, w) in got.iter().zip(want) {
        for (a, b) in g.iter().zip(w) {
            e = e.max((a - b).abs());
        }
    }
    e / spread
}

pub fn run(a: &BenchArgs, ctx: &Ctx) -> Result<()> {
    ctx.refuse_unused(&[Global::Crs, Global::Compress])?;
    let sel = ctx.open_backend()?;
    if let Some(p) = ctx.json() {
        output::preflight(p)?;
    }
    if a.zoom.iter().any(|&z| z == 0 || z > 100) {
        bail!("--zoom factors must be in 1..=100");
    }
    let be = sel.backend;
    let env = BenchEnv::new(&be);
    println!(
        "geofield bench kriging on {} ({}), commit {}",
        env.backend, env.device, env.commit
    );
    print_header();
    let mut rows = vec![];
    if a.cases.contains(&Case::Paper) {
        for &zoom in &a.zoom {
            paper_rows(a, &be, &env, zoom, &mut rows)?;
        }
    }
    if a.cases.contains(&Case::Large) {
        for &n in &a.large_n {
            for h in [1, 10] {
                large_rows(a, &be, &env, n, h, &mut rows)?;
            }
        }
    }
    if let Some(p) = ctx.json() {
        output::write_json(p, &Report { env, rows })?;
        println!("wrote {}", p.display());
    }
    Ok(())
}

fn print_header() {
    println!(
        "{:<18} {:>9} {:<30} {:>4} {:>10} {:>10} {:>11} {:>11} {:>9} {:>6}",
        "case",
        "nodes",
        "method",
        "var",
        "median s",
        "device s",
        "nodes/s",
        "pairs/s",
        "max err",
        "SFU"
    );
}

pub fn print_row(r: &Row) {
    println!(
        "{:<18} {:>9} {:<30} {:>4} {:>10.4e} {:>10} {:>11.3e} {:>11.3e} {:>9.1e} {:>6}",
        r.case,
        r.nodes,
        r.method,
        if r.variance { "yes" } else { "no" },
        r.time.median,
        r.device_s.map_or("-".into(), |d| format!("{d:.3e}")),
        r.nodes_per_s,
        r.pairs_per_s,
        r.max_err,
        r.sfu_share
            .map_or("-".into(), |s| format!("{:.0}%", 100.0 * s))
    );
}

#[allow(clippy::too_many_arguments)]
fn push(
    rows: &mut Vec<Row>,
    env: &BenchEnv,
    s: &Setup,
    nodes: usize,
    pairs_per_node: f64,
    method: String,
    variance: bool,
    time: Stats,
    device_s: Option<f64>,
    max_err: f64,
    gpu: bool,
) {
    let t = device_s.unwrap_or(time.median).max(1e-12);
    let pairs_per_s = nodes as f64 * pairs_per_node / t;
    let row = Row {
        case: s.name.clone(),
        n: s.set.len(),
        surfaces: s.set.surfaces.len(),
        nodes,
        method,
        variance,
        nodes_per_s: nodes as f64 / time.median.max(1e-12),
        pairs_per_s,
        time,
        device_s,
        max_err,
        sfu_share: if gpu {
            env.sfu_ops_per_s().map(|l| 2.0 * pairs_per_s / l)
        } else {
            None
        },
    };
    print_row(&row);
    rows.push(row);
}

fn paper_rows(
    a: &BenchArgs,
    be: &Backend,
    env: &BenchEnv,
    zoom: usize,
    rows: &mut Vec<Row>,
) -> Result<()> {
    let s = paper_setup(zoom)?;
    let opts = KrigeOptions::default();
    let (groups, reports) = build(&s.set, std::slice::from_ref(&s.variogram), &opts, None)?;
    let Some(System::Global(g)) = groups.first().map(|g| &g.system) else {
        bail!("the paper's case builds one global system");
    };
    let nodes = s.grid.n_cells();
    let n = s.set.len();
    let reference = reference(&groups, &s.grid, nodes)?;
    let map = g.frame().node_grid(&s.grid);
    let (nx, ny): (Vec<f64>, Vec<f64>) = (0..nodes)
        .map(|j| map.node(j / s.grid.cols, j % s.grid.cols))
        .unzip();
    let (px, py) = g.sample_coords();
    let hc = g.surfaces();
    let z: Vec<Vec<f64>> = (0..hc)
        .map(|h| (0..n).map(|i| g.values()[i * hc + h]).collect())
        .collect();
    let gpu = be.is_cuda();
    let cpu_rows = !(gpu && a.gpu_only);
    // The paper's per-node elimination on the CPU (rayon over nodes).
    for mode in [PaperMode::Exp1, PaperMode::Exp2, PaperMode::Exp4] {
        if !cpu_rows {
            break;
        }
        let (t, _, p) = measure(a.warmup, a.repeats.min(3), || {
            Ok((
                paper_nodes(g.covariance(), px, py, &z, &nx, &ny, mode),
                None,
            ))
        })?;
        let e = max_err(&p, &reference, s.spread);
        push(
            rows,
            env,
            &s,
            nodes,
            n as f64,
            format!("cpu paper {mode:?}"),
            false,
            t,
            None,
            e,
            false,
        );
    }
    let (t, _, p) = measure(a.warmup, a.repeats, || Ok((g.eval_weights(&nx, &ny), None)))?;
    let e = max_err(&p, &reference, s.spread);
    push(
        rows,
        env,
        &s,
        nodes,
        n as f64,
        "cpu factor-once weights".into(),
        false,
        t,
        None,
        e,
        false,
    );
    let (t, _, _) = measure(a.warmup, a.repeats, || {
        Ok((
            krige_grid_with(
                &Backend::Cpu,
                &s.set,
                &groups,
                reports.clone(),
                &opts,
                &s.grid,
                false,
                None,
            )?,
            None,
        ))
    })?;
    push(
        rows,
        env,
        &s,
        nodes,
        n as f64,
        "cpu dual f64".into(),
        false,
        t,
        None,
        0.0,
        false,
    );
    if gpu {
        for precision in [Precision::F32, Precision::F64] {
            let o = KrigeOptions { precision, ..opts };
            let (t, d, p) = measure(a.warmup, a.repeats, || {
                let p = krige_grid_with(
                    be,
                    &s.set,
                    &groups,
                    reports.clone(),
                    &o,
                    &s.grid,
                    false,
                    None,
                )?;
                let d = p.device_seconds;
                Ok((p, d))
            })?;
            let e = max_err(&p.values, &reference, s.spread);
            push(
                rows,
                env,
                &s,
                nodes,
                n as f64,
                format!("gpu dual {precision:?} end-to-end"),
                false,
                t,
                d.map(|d| d.median),
                e,
                true,
            );
        }
        super::kriging_gpu::paper_rows(a, be, env, &s.name, g, &map, &reference, s.spread, rows)?;
    }
    Ok(())
}

fn large_rows(
    a: &BenchArgs,
    be: &Backend,
    env: &BenchEnv,
    n: usize,
    h: usize,
    rows: &mut Vec<Row>,
) -> Result<()> {
    let s = large_setup(n, h, a.large_side)?;
    let gpu = be.is_cuda();
    for (local, variance) in [(false, false), (false, true), (true, false), (true, true)] {
        let opts = KrigeOptions {
            neighbourhood: if local {
                Neighbourhood::Local {
                    k: 32,
                    radius: None,
                }
            } else {
                Neighbourhood::Global
            },
            precision: if gpu { Precision::F32 } else { Precision::F64 },
            ..KrigeOptions::default()
        };
        let per_node = if local {
            32.0 * (1.0 + 16.0)
        } else {
            n as f64 * if variance { 1.0 + n as f64 } else { 1.0 }
        };
        // Nodes for this row: all on the GPU; capped by pairs on the CPU.
        let mut grid = s.grid;
        if !gpu {
            let max_nodes = (a.cpu_max_pairs / per_node).max(s.grid.cols as f64);
            grid = first_rows(&s.grid, (max_nodes / s.grid.cols as f64) as usize);
        }
        let nodes = grid.n_cells();
        let (groups, reports) = build(&s.set, std::slice::from_ref(&s.variogram), &opts, None)?;
        // The reference: the same systems evaluated in f64 on the CPU (local rows against local).
        let check = 4096.min(nodes);
        let reference = reference(&groups, &grid, check)?;
        let (t, d, p) = measure(
            a.warmup.min(1),
            if gpu { a.repeats } else { a.repeats.min(3) },
            || {
                let p = krige_grid_with(
                    be,
                    &s.set,
                    &groups,
                    reports.clone(),
                    &opts,
                    &grid,
                    variance,
                    None,
                )?;
                let d = p.device_seconds;
                Ok((p, d))
            },
        )?;
        let got: Vec<Vec<f64>> = p.values.iter().map(|v| v[..check].to_vec()).collect();
        let e = max_err(&got, &reference, s.spread);
        let method = format!(
            "{} {} {}",
            if gpu { "gpu" } else { "cpu" },
            if local { "local k=32" } else { "dual" },
            if gpu { "f32" } else { "f64" }
        );
        let pairs = if local { 32.0 } else { n as f64 };
        push(
            rows,
            env,
            &s,
            nodes,
            pairs,
            method,
            variance,
            t,
            d.map(|d| d.median),
            e,
            gpu && !local,
        );
        if gpu
            && !local
            && !variance
            && let Some(System::Global(g)) = groups.first().map(|g| &g.system)
        {
            let map = g.frame().node_grid(&grid);
            super::kriging_gpu::large_fast_row(
                a, be, env, &s.name, g, &map, &reference, s.spread, rows,
            )?;
        }
    }
    Ok(())
}
