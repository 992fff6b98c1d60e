//! `geofield bench forest`: the forest loop end to end, and per-seed placement's throughput.
//!
//! Scales: `paper` (the seed paper's 52 m x 89 m stand near Smithers, BC, synthesised with the
//! SBS-like species: exact against multires over 30 years with shared random streams, its
//! Fig. 13), `stand` (1 km x 1 km, 34,000 stems of which ~30,000 adults, 1 m cells: the issue's
//! 60 s CPU / 3 s GPU target), `landscape` (10.24 km, 3.1 M adults), and `seeds` (SORTIE-ND's
//! per-seed case: 1000 m x 500 m, 100,000 adults, one year of per-seed placement, seeds per
//! second).

use std::time::Instant;

use anyhow::Result;
use clap::{Args, ValueEnum};
use geofield::Backend;
use geofield::dispersal::{DisperseOptions, Method, Precision};
use geofield::forest::experiment::{self, RunId};
use geofield::forest::params::ForestParams;
use geofield::forest::simulate::{DispersalMode, SimulateOptions, Timing};
use geofield::forest::trees::Trees;
use geofield::synth::{self, DbhModel, Pattern};
use geofield_core::{Extent, GridSpec};

use super::{JsonRows, Stats};
use crate::ctx::Ctx;

#[derive(Clone, Copy, ValueEnum, PartialEq, Debug)]
pub enum ScaleArg {
    Paper,
    Stand,
    Landscape,
    Seeds,
}

#[derive(Args)]
pub struct BenchArgs {
    #[arg(long, value_delimiter = ',', value_enum, default_values_t = vec![ScaleArg::Paper, ScaleArg::Stand])]
    pub scales: Vec<ScaleArg>,
    /// Years per run (default 30; the `seeds` scale runs one).
    #[arg(long)]
    pub years: Option<u32>,
    /// Timed runs per case (after one untimed warm-up run of one year).
    #[arg(long, default_value_t = 3)]
    pub repeats: usize,
    /// Replicates of the `paper` comparison (independent seeds).
    #[arg(long, default_value_t = 1)]
    pub replicates: u32,
}

#[derive(serde::Serialize)]
struct Row {
    scale: String,
    mode: String,
    method: String,
    backend: String,
    cells: usize,
    initial_trees: usize,
    years: u32,
    /// Wall seconds of the whole run (all years), median of the repeats.
    run: Stats,
    /// Phases of the last run.
    timing: Timing,
    final_trees: usize,
    recruits: u64,
    /// Seeds placed per second (per-seed mode: seeds / dispersal seconds).
    seeds_per_s: Option<f64>,
}

#[derive(serde::Serialize)]
struct Fig13 {
    replicates: u32,
    years: u32,
    /// Per year: |R_multires − R_exact| / R_exact of the recruits (summed over replicates),
    /// with the same random streams.
    shared_streams: Vec<f64>,
    /// The same between exact runs with independent seeds (replicate r against r + 1): the
    /// stochastic spread the paper's runs, if drawn independently, would also contain.
    independent_seeds: Vec<f64>,
}

fn sbs_params(torus: bool) -> Result<ForestParams> {
    synth::sbs_forest(torus)
        .validated()
        .map_err(anyhow::Error::msg)
}

/// The scale's grid and initial stand.
fn case(scale: ScaleArg) -> Result<(GridSpec, Trees)> {
    let (w, h, n, dbh) = match scale {
        ScaleArg::Paper => (52.0, 89.0, 460, DbhModel::Realistic),
        ScaleArg::Stand => (1000.0, 1000.0, 34_000, DbhModel::Realistic),
        ScaleArg::Landscape => (10_240.0, 10_240.0, 3_145_728, DbhModel::Uniform15to60),
        ScaleArg::Seeds => (1000.0, 500.0, 100_000, DbhModel::Uniform15to60),
    };
    let extent = Extent::new(0.0, 0.0, w, h)?;
    let stand = synth::forest(n, &extent, 7, Pattern::Uniform, dbh, &synth::SBS_SHARES);
    Ok((
        GridSpec::from_extent(extent, 1.0)?,
        Trees::from_stand(&stand, 4)?,
    ))
}

fn options(years: u32, mode: DispersalMode, method: Method, be: &Backend) -> SimulateOptions {
    SimulateOptions {
        years,
        seed: 1,
        mode,
        dispersal: DisperseOptions {
            method,
            tolerance: 1e-6,
            precision: if be.is_cuda() {
                Precision::F32
            } else {
                Precision::F64
            },
            ..Default::default()
        },
        suitability: None,
    }
}

pub fn run(a: &BenchArgs, ctx: &Ctx) -> Result<()> {
    let sel = ctx.open_backend()?;
    let be = &sel.backend;
    let mut json = JsonRows::new(
        ctx,
        &serde_json::json!({"bench": "forest", "backend": be.label()}),
        "rows",
    )?;
    let mut rows: Vec<Row> = Vec::new();
    let never = geofield::Cancel::new();
    let mut fig13 = None;
    for &scale in &a.scales {
        let (grid, trees) = case(scale)?;
        let params = sbs_params(scale == ScaleArg::Seeds)?;
        let years = if scale == ScaleArg::Seeds {
            1
        } else {
            a.years.unwrap_or(30)
        };
        let cases: Vec<(DispersalMode, Method)> = match scale {
            ScaleArg::Paper => vec![
                (DispersalMode::Expected, Method::Exact),
                (DispersalMode::Expected, Method::Multires),
            ],
            ScaleArg::Stand => vec![
                (DispersalMode::Expected, Method::Auto),
                (DispersalMode::PerSeed, Method::Auto),
            ],
            ScaleArg::Landscape => vec![(DispersalMode::Expected, Method::Auto)],
            ScaleArg::Seeds => vec![(DispersalMode::PerSeed, Method::Auto)],
        };
        for (mode, method) in cases {
            // Warm-up: one year (a GPU context, kernels compiled, pools filled).
            let o = options(1, mode, method, be);
            experiment::run(
                be,
                &grid,
                &params,
                &trees,
                &o,
                &[method],
                1,
                &never,
                &mut |_, _| Ok(()),
            )?;
            let o = options(years, mode, method, be);
            let mut samples = Vec::new();
            let mut last = None;
            for _ in 0..a.repeats.max(1) {
                let mut recruits = 0u64;
                let mut seeds = 0u64;
                let mut label = String::new();
                let t = Instant::now();
                let (fin, timing) = experiment::run(
                    be,
                    &grid,
                    &params,
                    &trees,
                    &o,
                    &[method],
                    1,
                    &never,
                    &mut |_, y| {
                        recruits += y.species.iter().map(|s| s.recruits).sum::<u64>();
                        seeds += y.species.iter().map(|s| s.seeds).sum::<u64>();
                        if label.is_empty() && !y.methods.is_empty() {
                            let mut m = y.methods.clone();
                            m.dedup();
                            label = m.join("/");
                        }
                        Ok(())
                    },
                )?;
                samples.push(t.elapsed().as_secs_f64());
                last = Some((fin, timing, recruits, seeds, label));
            }
            let Some((fin, timing, recruits, seeds, label)) = last else {
                continue;
            };
            let row = Row {
                scale: format!("{scale:?}").to_lowercase(),
                mode: mode.name().into(),
                method: label,
                backend: be.label(),
                cells: grid.n_cells(),
                initial_trees: trees.len(),
                years,
                run: Stats::of(samples),
                timing,
                final_trees: fin.first().map_or(0, Trees::len),
                recruits,
                seeds_per_s: (mode == DispersalMode::PerSeed && timing.dispersal_s > 0.0)
                    .then(|| seeds as f64 / timing.dispersal_s),
            };
            println!(
                "{:<10} {:<9} {:<18} {:>9} trees {:>3} y: {:>8.3} s median (dispersal {:.3}, counts {:.3}, establishment {:.3}, demography {:.3}){}",
                row.scale,
                row.mode,
                row.method,
                row.initial_trees,
                row.years,
                row.run.median,
                timing.dispersal_s,
                timing.counts_s,
                timing.establishment_s,
                timing.demography_s,
                row.seeds_per_s
                    .map_or(String::new(), |s| format!(", {:.3e} seeds/s", s))
            );
            rows.push(row);
            json.sync(&rows)?;
        }
        if scale == ScaleArg::Paper {
            let f = paper_fig13(be, &grid, &params, &trees, years, a.replicates, &never)?;
            let m = |v: &[f64]| {
                let f: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
                (
                    100.0 * f.iter().sum::<f64>() / f.len().max(1) as f64,
                    100.0 * f.iter().copied().fold(0.0, f64::max),
                )
            };
            let (s_mean, s_max) = m(&f.shared_streams);
            let (i_mean, i_max) = m(&f.independent_seeds);
            println!(
                "Fig. 13 ({} replicates x {} years): recruits multires vs exact, shared streams: mean {s_mean:.2} %, max {s_max:.2} %; exact vs exact, independent seeds: mean {i_mean:.2} %, max {i_max:.2} % (paper: mean 1.9 %, max 3.1 %)",
                f.replicates, f.years
            );
            fig13 = Some(f);
        }
    }
    if let Some(f) = fig13 {
        json.head_insert("fig13", serde_json::to_value(f)?);
    }
    json.finish(&rows)
}

/// The paper's Fig. 13: recruits per year of exact and multires runs sharing their streams,
/// and of exact runs with independent seeds, summed over `replicates`.
fn paper_fig13(
    be: &Backend,
    grid: &GridSpec,
    params: &ForestParams,
    trees: &Trees,
    years: u32,
    replicates: u32,
    never: &geofield::Cancel,
) -> Result<Fig13> {
    let methods = [Method::Exact, Method::Multires];
    let o = options(years, DispersalMode::Expected, Method::Exact, be);
    // recruits[method][replicate][year]
    let mut rec = vec![vec![vec![0u64; years as usize + 1]; replicates as usize + 1]; 2];
    experiment::run(
        be,
        grid,
        params,
        trees,
        &o,
        &methods,
        replicates + 1,
        never,
        &mut |id: RunId, y| {
            rec[id.method][id.replicate as usize][y.year as usize] =
                y.species.iter().map(|s| s.recruits).sum();
            Ok(())
        },
    )?;
    let sum = |m: usize, r: std::ops::Range<usize>| -> Vec<u64> {
        (0..=years as usize)
            .map(|t| r.clone().map(|i| rec[m][i][t]).sum())
            .collect()
    };
    let n = replicates as usize;
    Ok(Fig13 {
        replicates,
        years,
        shared_streams: experiment::recruit_differences(&sum(0, 0..n), &sum(1, 0..n)),
        independent_seeds: experiment::recruit_differences(&sum(0, 0..n), &sum(0, 1..n + 1)),
    })
}
