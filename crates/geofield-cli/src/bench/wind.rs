//! `geofield bench wind`: the paper's fixed-iteration WEST runs and the time to tolerance of
//! every solver on the grid family R1…R64 (64² … 512² columns × 32 layers on a Gaussian hill,
//! [`geofield::bench::wind::cases`]), plus 512 × 512 × 128 to tolerance, in one run.
//!
//! Every row: median seconds of the solve alone (the first guess and setup are a separate
//! row), iterations, cell updates per second (cells × sweeps, or × V-cycles / CG iterations),
//! the divergence reached relative to the first guess's, and on GPU rows the share of the
//! memory bandwidth the kernel's bytes per cell update imply. The paper's Table 2 (GTX 680,
//! R64, 2000 iterations: 15.15 s; i7-2700K: 449.29 s) is in docs/benchmarks.md beside these.

use std::time::Instant;

use crate::ctx::{Ctx, Global};
use anyhow::{Result, bail};
use clap::Args;
use geofield::Backend;
use geofield::bench::wind::{
    cases, init,
    multigrid::{self, Problem},
    ops::{self, Coeffs},
    sor,
    west::{self, WestOperator},
};
use geofield::wind::{self, Solver, Top, WindGrid, WindOptions};

use super::{BenchEnv, JsonRows, Stats};

#[derive(Args)]
pub struct BenchArgs {
    /// Refinements of the family (R1 = 64 × 64 × 32 … R64 = 512 × 512 × 32).
    #[arg(long, value_delimiter = ',', default_values_t = vec![1, 4, 16, 64])]
    pub r: Vec<usize>,
    /// Fixed WEST iteration counts (the paper's Table 2).
    #[arg(long, value_delimiter = ',', default_values_t = vec![500, 1000, 1500, 2000])]
    pub iterations: Vec<usize>,
    /// Relative divergence tolerance of the solves to tolerance.
    #[arg(long, default_value_t = 1e-6)]
    pub tolerance: f64,
    /// Also 512 × 512 × 128 to tolerance (default: on a GPU only).
    #[arg(long)]
    pub big: Option<bool>,
    /// On the CPU, fixed WEST runs and WEST/SOR to tolerance only up to this R (they take
    /// minutes beyond); multigrid and MG-CG run on every R asked for.
    #[arg(long, default_value_t = 4)]
    pub cpu_max_slow_r: usize,
    #[arg(long, default_value_t = 3)]
    pub repeats: usize,
    /// The ground of the Sherman solves: stair steps, cut cells (what `geofield wind` uses by
    /// default), or both, each case twice. The WEST rows are always on stair steps (the paper's
    /// terrain; WEST with cut cells is refused).
    #[arg(long, value_enum, default_value_t = BenchTerrain::Both)]
    pub terrain: BenchTerrain,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
pub enum BenchTerrain {
    Stairs,
    Cut,
    Both,
}

#[derive(serde::Serialize, Clone, Debug)]
pub struct Row {
    pub case: String,
    pub cells: usize,
    pub fluid_cells: usize,
    pub method: String,
    pub backend: String,
    pub iterations: usize,
    pub seconds: Stats,
    pub per_iteration_ms: f64,
    pub cell_updates_per_s: f64,
    /// max |div u| / max |div u0| of the result.
    pub divergence_ratio: f64,
    pub converged: bool,
    /// Share of the device's memory bandwidth (GPU rows).
    pub bandwidth_share: Option<f64>,
}

#[derive(serde::Serialize)]
struct Head<'a> {
    env: &'a BenchEnv,
    tolerance: f64,
}

/// Everything a case needs before the solve.
pub struct Case {
    pub name: String,
    /// Cut cells (Sherman's rows only).
    pub cut: bool,
    pub grid: WindGrid,
    pub coeffs: Coeffs,
    pub u0: (Vec<f64>, Vec<f64>, Vec<f64>),
    /// Divergence of the first guess, cell order.
    pub div0: Vec<f64>,
    pub problem: Problem,
    pub max_div0: f64,
}

pub fn case(name: String, grid: WindGrid, stations: &[wind::Station]) -> Result<Case> {
    let opts = WindOptions::default();
    let coeffs = Coeffs::new(&grid, 1.0, Top::Open);
    let g = init::first_guess(&grid, &coeffs, stations, &opts)?;
    let div0 = ops::divergence(&grid, &g.u, &g.v, &g.w);
    let (max_div0, _) = ops::divergence_stats(&grid, &div0);
    let problem = Problem::new(&grid, &coeffs, &div0);
    Ok(Case {
        name,
        cut: grid.cut.is_some(),
        grid,
        coeffs,
        u0: (g.u, g.v, g.w),
        div0,
        problem,
        max_div0,
    })
}

fn row(
    c: &Case,
    method: &str,
    be: &str,
    iterations: usize,
    seconds: Stats,
    ratio: f64,
    converged: bool,
) -> Row {
    let per = seconds.median / iterations.max(1) as f64;
    Row {
        case: c.name.clone(),
        cells: c.grid.n_cells(),
        fluid_cells: c.grid.n_fluid(),
        method: method.into(),
        backend: be.into(),
        iterations,
        per_iteration_ms: per * 1e3,
        cell_updates_per_s: c.grid.n_cells() as f64 / per,
        seconds,
        divergence_ratio: ratio,
        converged,
        bandwidth_share: None,
    }
}

/// Fixed-count WEST sweeps on the CPU: (seconds, max|div| / max|div0|).
fn cpu_west(c: &Case, sweeps: usize, fixed: bool, threshold: f64) -> (f64, usize, f64, bool) {
    let op = WestOperator::new(&c.grid, &c.coeffs, 1.25);
    let (mut u, mut v, mut w) = c.u0.clone();
    let t = Instant::now();
    let run = west::run(
        &c.grid,
        &op,
        &mut u,
        &mut v,
        &mut w,
        sweeps,
        fixed,
        threshold,
        if fixed { sweeps } else { 10 },
        |_, _| {},
    );
    let s = t.elapsed().as_secs_f64();
    let last = run.history.last().map_or(f64::NAN, |h| h.1);
    (s, run.iterations, last / c.max_div0, run.converged)
}

fn cpu_solve(c: &Case, solver: Solver, threshold: f64) -> Result<(f64, usize, f64, bool)> {
    let omega = sor::optimal_omega(&c.grid, 1.0);
    let t = Instant::now();
    let run = multigrid::solve(&c.problem, solver, omega, 100_000, threshold, 10, |_, _| {})?;
    let s = t.elapsed().as_secs_f64();
    let last = run.history.last().map_or(f64::NAN, |h| h.1);
    Ok((s, run.iterations, last / c.max_div0, run.converged))
}

pub fn print_row(r: &Row) {
    println!(
        "{:<14} {:<22} {:>6} {:>10.4} s {:>9.3} ms/it {:>9.2e} upd/s  div {:>8.1e} {}{}",
        r.case,
        format!("{} [{}]", r.method, r.backend),
        r.iterations,
        r.seconds.median,
        r.per_iteration_ms,
        r.cell_updates_per_s,
        r.divergence_ratio,
        if r.converged {
            "converged"
        } else {
            "not converged"
        },
        r.bandwidth_share.map_or(String::new(), |b| format!(
            "  {:.0} % of bandwidth",
            100.0 * b
        ))
    );
}

fn repeat(
    n: usize,
    mut f: impl FnMut() -> Result<(f64, usize, f64, bool)>,
) -> Result<(Stats, usize, f64, bool)> {
    let mut times = Vec::new();
    let mut last = (0, f64::NAN, false);
    for _ in 0..n.max(1) {
        let (s, it, ratio, conv) = f()?;
        times.push(s);
        last = (it, ratio, conv);
    }
    Ok((Stats::of(times), last.0, last.1, last.2))
}

pub fn run(a: &BenchArgs, ctx: &Ctx) -> Result<()> {
    ctx.refuse_unused(&[Global::Crs, Global::Compress])?;
    let sel = ctx.open_backend()?;
    let be = sel.backend;
    let env = BenchEnv::new(&be);
    println!(
        "# geofield bench wind on {} ({}), commit {}",
        env.device, env.backend, env.commit
    );
    if !(a.tolerance > 0.0 && a.tolerance < 1.0) {
        bail!("--tolerance must be in (0, 1)");
    }
    let mut json = JsonRows::new(
        ctx,
        &Head {
            env: &env,
            tolerance: a.tolerance,
        },
        "rows",
    )?;
    let mut cases = Vec::new();
    for &r in &a.r {
        let (grid, st) = cases::hill_case(r, 32, 10.0)?;
        cases.push((r, format!("R{r}"), grid, st));
    }
    if a.big.unwrap_or(be.is_cuda()) {
        let (grid, st) = cases::hill_grid(512, 128, 10.0)?;
        cases.push((usize::MAX, "512x512x128".to_string(), grid, st));
    }
    // Each grid on the ground(s) asked for: stair steps, then cut cells.
    let cases = cases.into_iter().flat_map(|(r, name, grid, st)| {
        let stairs =
            (a.terrain != BenchTerrain::Cut).then(|| (r, name.clone(), grid.clone(), st.clone()));
        let cut = (a.terrain != BenchTerrain::Stairs)
            .then(|| (r, format!("{name} cut"), grid.with_cut_cells(), st));
        stairs.into_iter().chain(cut)
    });
    let mut rows = Vec::new();
    for (r, name, grid, st) in cases {
        let t = Instant::now();
        let c = case(name, grid, &st)?;
        let setup = t.elapsed().as_secs_f64();
        println!(
            "{}: {} x {} x {} cells ({} fluid), first guess + multigrid setup {:.3} s on the CPU, max |div u0| {:.3e} 1/s",
            c.name,
            c.grid.cols(),
            c.grid.rows(),
            c.grid.nz,
            c.grid.n_fluid(),
            setup,
            c.max_div0
        );
        let threshold = a.tolerance * c.max_div0;
        let slow_ok = r != usize::MAX && r <= a.cpu_max_slow_r;
        let west_ok = slow_ok && !c.cut;
        if west_ok && !a.iterations.is_empty() {
            for &n in &a.iterations {
                let (s, it, ratio, conv) =
                    repeat(a.repeats, || Ok(cpu_west(&c, n, true, threshold)))?;
                let rw = row(&c, "west fixed", "cpu", it, s, ratio, conv);
                print_row(&rw);
                rows.push(rw);
                json.sync(&rows)?;
            }
        }
        if west_ok {
            let (s, it, ratio, conv) = repeat(1, || Ok(cpu_west(&c, 100_000, false, threshold)))?;
            let rw = row(&c, "west to tolerance", "cpu", it, s, ratio, conv);
            print_row(&rw);
            rows.push(rw);
            json.sync(&rows)?;
        }
        if slow_ok {
            let (s, it, ratio, conv) = repeat(1, || cpu_solve(&c, Solver::Sor, threshold))?;
            let rw = row(&c, "sor (optimal omega)", "cpu", it, s, ratio, conv);
            print_row(&rw);
            rows.push(rw);
            json.sync(&rows)?;
        }
        if !be.is_cuda() || r <= 16 {
            for (solver, label) in [(Solver::Multigrid, "multigrid"), (Solver::MgCg, "mgcg")] {
                let reps = if c.grid.n_cells() > 4_000_000 {
                    1
                } else {
                    a.repeats
                };
                let (s, it, ratio, conv) = repeat(reps, || cpu_solve(&c, solver, threshold))?;
                let rw = row(&c, label, "cpu", it, s, ratio, conv);
                print_row(&rw);
                rows.push(rw);
                json.sync(&rows)?;
            }
        }
        if let Backend::Cuda(_) = &be {
            super::wind_gpu::rows(&be, &c, a, threshold, &mut rows)?;
        }
    }
    json.finish(&rows)?;
    Ok(())
}
