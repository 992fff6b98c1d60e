//! `geofield bench dispersal`: the paper's Table 2 scales (5e2 cells x 1e2 trees up to 5e5 x
//! 1e5, 4 SBS-like species, trees uniform) or the 10.24 km landscape (1.05e8 cells, 3.1 M trees).

use crate::ctx::{Ctx, Global};
use anyhow::Result;
use clap::{Args, ValueEnum};
use geofield::Backend;
use geofield::bench::dispersal::{Band, Sources, cutoff_radius, disperse_species, exact_rows};
use geofield::dispersal::{self, DisperseOptions, ErrorMetrics, Method, Precision};
use geofield::synth::{self, DbhModel, Pattern};
use geofield_core::{Extent, GridSpec};

use super::dispersal_print::{header, print_ratios, print_row};
use super::{BenchEnv, JsonRows, Stats, measure};

#[derive(Clone, Copy, ValueEnum, PartialEq)]
pub enum Scale {
    /// The two smallest Table 2 cases (seconds).
    Quick,
    /// The paper's Table 2 cases.
    Paper,
    /// 10.24 km x 10.24 km at 1 m with 3,145,728 trees.
    Landscape,
}

#[derive(Clone, Copy, ValueEnum, PartialEq)]
pub enum KernelFamily {
    Weibull,
    Lognormal,
    #[value(name = "2dt")]
    TwoDt,
}

/// The 4 species of a kernel family (SBS shares, STR and β; the kernels differ).
fn family_species(f: KernelFamily) -> Result<Vec<dispersal::Species>> {
    let sbs = synth::sbs_species();
    let kernels: [dispersal::Kernel; 4] = match f {
        KernelFamily::Weibull => return Ok(sbs),
        // Mean distance X0·exp(2.5 Xb²): 37, 40, 37, 41 m.
        KernelFamily::Lognormal => [
            dispersal::Kernel::Lognormal { x0: 15.0, xb: 0.6 },
            dispersal::Kernel::Lognormal { x0: 8.0, xb: 0.8 },
            dispersal::Kernel::Lognormal { x0: 20.0, xb: 0.5 },
            dispersal::Kernel::Lognormal { x0: 10.0, xb: 0.75 },
        ],
        // Mean distance (π/2)√u at p = 1: 31, 38, 44, 50 m.
        KernelFamily::TwoDt => [
            dispersal::Kernel::TwoDt { u: 400.0, p: 1.0 },
            dispersal::Kernel::TwoDt { u: 600.0, p: 1.0 },
            dispersal::Kernel::TwoDt { u: 800.0, p: 1.0 },
            dispersal::Kernel::TwoDt { u: 1000.0, p: 1.0 },
        ],
    };
    sbs.into_iter()
        .zip(kernels)
        .map(|(s, k)| {
            dispersal::Species::new(
                s.name,
                k,
                s.str_,
                s.beta,
                dispersal::Eta::Analytic,
                s.min_dbh_cm,
                None,
            )
            .map_err(anyhow::Error::from)
        })
        .collect()
}

#[derive(Args)]
pub struct BenchArgs {
    #[arg(long, value_enum, default_value = "paper")]
    pub scale: Scale,
    /// Cutoff tolerances to run (each is one method row).
    #[arg(long, value_delimiter = ',', default_values_t = vec![1e-5, 1e-6])]
    pub tolerances: Vec<f64>,
    /// Methods to run (exact, multires, cutoff, nearfar).
    #[arg(long, value_delimiter = ',', default_values_t = vec!["exact".to_string(), "multires".to_string(), "cutoff".to_string()])]
    pub methods: Vec<String>,
    /// Kernel family of the 4 species: the SBS Weibulls (θ = 3, the paper's), or SORTIE-like
    /// lognormals or Clark 2Dt (p = 1) with mean dispersal distances of 30-50 m.
    #[arg(long, value_enum, default_value = "weibull")]
    pub kernels: KernelFamily,
    /// Timed repeats per method (the median is reported).
    #[arg(long, default_value_t = 5)]
    pub repeats: usize,
    #[arg(long, default_value_t = 1)]
    pub warmup: usize,
    /// Skip the exact method where it would evaluate more than this many tree-cell pairs
    /// (its time is then extrapolated from a window of rows).
    #[arg(long, default_value_t = 2e12)]
    pub exact_max_pairs: f64,
    /// Pair budget of the exact reference rows used for the errors.
    #[arg(long, default_value_t = 1e9)]
    pub reference_pairs: f64,
    /// At least this many reference rows, spread over the map.
    #[arg(long, default_value_t = 8)]
    pub reference_rows: usize,
    /// Output precision of the fast methods.
    #[arg(long, value_enum, default_value = "f32")]
    pub precision: crate::cmd_disperse::PrecisionArg,
    /// Also time `geofield disperse` itself end to end on each case (a new process per run,
    /// the stand as a CSV in, a compressed tiled GeoTIFF out, method auto at the first
    /// tolerance), with its breakdown: read, backend, species, output, disk.
    #[arg(long)]
    pub e2e: bool,
}

#[derive(Debug, Clone, serde::Serialize)]
pub(super) struct MethodResult {
    pub(super) method: String,
    pub(super) tolerance: Option<f64>,
    /// Wall time for all species (host preparation, transfers and compute), seconds.
    pub(super) wall: Option<Stats>,
    /// GPU kernel time for all species by device events, seconds.
    pub(super) kernel: Option<Stats>,
    /// Time used in comparisons: kernel median on the GPU, wall median on the CPU.
    pub(super) seconds: f64,
    pub(super) extrapolated: bool,
    pub(super) pairs: f64,
    pub(super) pairs_per_s: f64,
    /// Share of the GPU's special-function throughput (2 SFU ops per pair at θ = 3), counting
    /// useful pairs only (all pairs for exact; pairs within R for the cutoff): a lower bound.
    pub(super) sfu_share: Option<f64>,
    /// Worst over species of each metric against the f64 reference window.
    pub(super) error: ErrorMetrics,
    pub(super) radius_m: Vec<f64>,
    pub(super) note: Option<String>,
}

#[derive(Debug, Clone, serde::Serialize)]
struct CaseResult {
    name: String,
    cols: usize,
    rows: usize,
    cells: usize,
    trees: usize,
    reference_rows: Vec<usize>,
    methods: Vec<MethodResult>,
    /// `geofield disperse` end to end (`--e2e`).
    e2e: Option<super::dispersal_e2e::E2eResult>,
}

#[derive(serde::Serialize)]
struct Head<'a> {
    env: &'a BenchEnv,
    scale: &'static str,
}

struct Case {
    name: String,
    cols: usize,
    rows: usize,
    trees: usize,
}

fn cases(scale: Scale) -> Vec<Case> {
    let table2 = [
        (25, 20, 100),
        (100, 50, 1_000),
        (250, 200, 10_000),
        (1000, 500, 100_000),
    ];
    let mk = |(c, r, t): (usize, usize, usize)| Case {
        name: format!("{:.0e} cells x {:.0e} trees", (c * r) as f64, t as f64),
        cols: c,
        rows: r,
        trees: t,
    };
    match scale {
        Scale::Quick => table2[..2].iter().copied().map(mk).collect(),
        Scale::Paper => table2.iter().copied().map(mk).collect(),
        Scale::Landscape => vec![Case {
            name: "S10: 10.24 km x 10.24 km, 3.1M trees".into(),
            cols: 10240,
            rows: 10240,
            trees: 3_145_728,
        }],
    }
}

pub fn run(a: &BenchArgs, ctx: &Ctx) -> Result<()> {
    ctx.refuse_unused(&[Global::Crs])?;
    // Only the end-to-end runs write a GeoTIFF: `--compress` is theirs.
    if !a.e2e {
        ctx.refuse_unused(&[Global::Compress])?;
    }
    let compress = ctx.compression()?;
    let sel = ctx.open_backend()?;
    let be = sel.backend;
    let env = BenchEnv::new(&be);
    let scale = match a.scale {
        Scale::Quick => "quick",
        Scale::Paper => "paper",
        Scale::Landscape => "landscape",
    };
    let mut json = JsonRows::new(ctx, &Head { env: &env, scale }, "cases")?;
    println!(
        "geofield bench dispersal on {} ({}), commit {}",
        env.backend, env.device, env.commit
    );
    let precision = match a.precision {
        crate::cmd_disperse::PrecisionArg::F32 => Precision::F32,
        crate::cmd_disperse::PrecisionArg::F64 => Precision::F64,
    };
    let species = family_species(a.kernels)?;
    let mut results = Vec::new();
    for case in cases(a.scale) {
        let extent = Extent::new(0.0, 0.0, case.cols as f64, case.rows as f64)?;
        let grid = GridSpec::from_extent(extent, 1.0)?;
        let stand = synth::forest(
            case.trees,
            &extent,
            2012,
            Pattern::Uniform,
            DbhModel::Uniform15to60,
            &synth::SBS_SHARES,
        );
        let sources: Vec<Sources> = species
            .iter()
            .enumerate()
            .map(|(i, sp)| Sources::for_species(&stand, i as u32, sp, &grid, false))
            .collect();
        // The reference: the exact sum on rows spread over the map (the first in the middle,
        // where an extrapolated exact run starts), f64 on the CPU; on the GPU its exact kernel
        // (f32 with compensated sums, ~1e-7 of the band maximum from f64).
        let pairs_per_row = (case.cols * case.trees) as f64;
        let nwin = ((a.reference_pairs / pairs_per_row).floor() as usize)
            .max(a.reference_rows)
            .clamp(1, case.rows);
        let r0 = (case.rows - nwin) / 2;
        let mut ref_rows: Vec<usize> = vec![r0];
        ref_rows.extend(
            (1..nwin).map(|i| (i * case.rows / nwin + case.rows / (2 * nwin)).min(case.rows - 1)),
        );
        ref_rows.sort_unstable();
        ref_rows.dedup();
        if !be.is_cuda() {
            estimate_cpu_time(a, &grid, &species, &sources, nwin);
        }
        let reference: Vec<Vec<f64>> = species
            .iter()
            .zip(&sources)
            .map(|(sp, src)| reference_rows(&be, &grid, sp, src, &ref_rows))
            .collect::<Result<_>>()?;
        println!(
            "\n== {} ({} x {} cells, {} trees; errors on {} rows spread over the map vs the {} exact sum)",
            case.name,
            case.cols,
            case.rows,
            case.trees,
            ref_rows.len(),
            if be.is_cuda() { "GPU (f32)" } else { "f64 CPU" }
        );
        println!("{}", header());
        // The case is in the JSON from its first method on (rows written as measured).
        results.push(CaseResult {
            name: case.name.clone(),
            cols: case.cols,
            rows: case.rows,
            cells: grid.n_cells(),
            trees: case.trees,
            reference_rows: ref_rows.clone(),
            methods: Vec::new(),
            e2e: None,
        });
        let want = |m: &str| a.methods.iter().any(|x| x.eq_ignore_ascii_case(m));
        let mut runs: Vec<(Method, Option<f64>)> = Vec::new();
        if want("exact") {
            runs.push((Method::Exact, None));
        }
        if want("multires") {
            runs.push((Method::Multires, None));
        }
        if want("cutoff") {
            runs.extend(a.tolerances.iter().map(|&t| (Method::Cutoff, Some(t))));
        }
        if want("nearfar") {
            runs.extend(a.tolerances.iter().map(|&t| (Method::NearFar, Some(t))));
        }
        for (method, tol) in runs {
            let r = run_method(
                a, &be, &env, &grid, &species, &sources, method, tol, precision, r0, &ref_rows,
                &reference,
            );
            match r {
                Ok(m) => {
                    print_row(&m);
                    if let Some(c) = results.last_mut() {
                        c.methods.push(m);
                    }
                    json.sync(&results)?;
                }
                Err(e) => println!("{:<18} not run: {e:#}", label(method, tol)),
            }
        }
        if let Some(c) = results.last() {
            print_ratios(&c.methods);
        }
        if a.e2e {
            let tol = a.tolerances.first().copied().unwrap_or(1e-6);
            let r = super::dispersal_e2e::run(
                &stand,
                &species,
                case.cols,
                case.rows,
                &ctx.args.backend,
                compress.name(),
                tol,
                a.warmup,
                a.repeats,
            )?;
            super::dispersal_e2e::print(&r);
            if let Some(c) = results.last_mut() {
                c.e2e = Some(r);
            }
            json.sync(&results)?;
        }
    }
    json.finish(&results)?;
    Ok(())
}

fn label(m: Method, tol: Option<f64>) -> String {
    match tol {
        Some(t) => format!("{} tol {t:.0e}", m.name()),
        None => m.name().to_string(),
    }
}

#[allow(clippy::too_many_arguments)]
fn run_method(
    a: &BenchArgs,
    be: &Backend,
    env: &BenchEnv,
    grid: &GridSpec,
    species: &[dispersal::Species],
    sources: &[Sources],
    method: Method,
    tol: Option<f64>,
    precision: Precision,
    r0: usize,
    ref_rows: &[usize],
    reference: &[Vec<f64>],
) -> Result<MethodResult> {
    let opts = DisperseOptions {
        method,
        tolerance: tol.unwrap_or(1e-6),
        precision,
        torus: false,
        multires_variant_b: false,
    };
    let total_trees: usize = sources.iter().map(|s| s.len()).sum();
    let exact_pairs = grid.n_cells() as f64 * total_trees as f64;
    let cpu_limit = if be.is_cuda() {
        a.exact_max_pairs
    } else {
        a.exact_max_pairs.min(2e10)
    };
    let extrapolate = method == Method::Exact && exact_pairs > cpu_limit;
    // The grid actually run: the full map, or (exact beyond the limit) a window of rows.
    let run_grid = if extrapolate {
        // On the GPU, whole 64-row tiles of the exact kernel, so the window fills the device.
        let (budget, quantum) = if be.is_cuda() { (2e12, 64) } else { (1e9, 1) };
        let rows = ((budget / (grid.cols as f64 * total_trees as f64)).floor() as usize)
            .max(1)
            .div_ceil(quantum)
            * quantum;
        let rows = rows.min(grid.rows);
        GridSpec {
            rows,
            y_max_m: grid.y_max_m - r0 as f64 * grid.cell_size_m,
            ..*grid
        }
    } else {
        *grid
    };
    let (wall, kernel, out) = measure(a.warmup, a.repeats, || {
        let mut bands = Vec::new();
        let mut kernel_s = 0.0;
        let mut any_kernel = false;
        let mut pairs = 0.0;
        let mut radii = Vec::new();
        for (sp, src) in species.iter().zip(sources) {
            let src = if extrapolate {
                shift(src, r0 as f64 * grid.cell_size_m)
            } else {
                src.clone()
            };
            let (band, rep) = disperse_species(be, &run_grid, sp, &src, &opts)?;
            if let Some(ms) = rep.kernel_ms {
                kernel_s += ms / 1e3;
                any_kernel = true;
            }
            // Useful pairs: every pair for exact; for the cutoff the pairs within R, estimated
            // from the mean tree density (the kernel evaluates a superset of them).
            pairs += match (rep.method, rep.radius_m) {
                (Method::Cutoff, Some(r)) => {
                    let area = grid.width_m() * grid.height_m();
                    let cells = run_grid.n_cells() as f64;
                    let est = src.len() as f64 / area * std::f64::consts::PI * r * r * cells;
                    est.min(cells * src.len() as f64)
                }
                _ => rep.pairs.unwrap_or(0.0),
            };
            if let Some(r) = rep.radius_m.or(rep.rho_m) {
                radii.push(r);
            }
            // Kept as computed (f32 on the GPU): widened only on the rows compared, below.
            bands.push(band);
        }
        Ok(((bands, pairs, radii), any_kernel.then_some(kernel_s)))
    })?;
    let (bands, pairs, radius_m) = out;
    let scale = if extrapolate {
        grid.rows as f64 / run_grid.rows as f64
    } else {
        1.0
    };
    let seconds = kernel.as_ref().map(|k| k.median).unwrap_or(wall.median) * scale;
    let pairs = pairs * scale;
    // Errors on the reference rows (for an extrapolated exact run, those it computed).
    let mut error = ErrorMetrics::default();
    let cols = grid.cols;
    for (b, band) in bands.iter().enumerate() {
        let (mut win, mut refw) = (Vec::new(), Vec::new());
        for (k, &r) in ref_rows.iter().enumerate() {
            let local = if extrapolate {
                match r.checked_sub(r0).filter(|&l| l < run_grid.rows) {
                    Some(l) => l,
                    None => continue,
                }
            } else {
                r
            };
            let row = local * cols..(local + 1) * cols;
            match band {
                Band::F32(v) => win.extend(v[row].iter().map(|&x| f64::from(x))),
                Band::F64(v) => win.extend_from_slice(&v[row]),
            }
            refw.extend_from_slice(&reference[b][k * cols..(k + 1) * cols]);
        }
        let m = dispersal::compare(&win, &refw);
        error.cells_compared += m.cells_compared;
        error.max_rel = error.max_rel.max(m.max_rel);
        error.mean_rel = error.mean_rel.max(m.mean_rel);
        error.p99_rel = error.p99_rel.max(m.p99_rel);
        error.max_abs_over_max = error.max_abs_over_max.max(m.max_abs_over_max);
        if m.mass_rel.abs() > error.mass_rel.abs() {
            error.mass_rel = m.mass_rel;
        }
    }
    let pairs_per_s = pairs / seconds;
    let sfu_share = env
        .sfu_ops_per_s()
        .filter(|_| method != Method::Multires)
        .map(|sfu| pairs_per_s * 2.0 / sfu);
    Ok(MethodResult {
        method: method.name().into(),
        tolerance: tol,
        wall: Some(wall),
        kernel,
        seconds,
        extrapolated: extrapolate,
        pairs,
        pairs_per_s,
        sfu_share,
        error,
        radius_m,
        note: extrapolate.then(|| {
            format!(
                "timed on {} of {} rows and scaled",
                run_grid.rows, grid.rows
            )
        }),
    })
}

/// The exact sum of one species on `rows` (concatenated): f64 on the CPU, the exact kernel on
/// the GPU (one row at a time, as a one-row grid with the sources shifted to it).
fn reference_rows(
    be: &Backend,
    grid: &GridSpec,
    sp: &dispersal::Species,
    src: &Sources,
    rows: &[usize],
) -> Result<Vec<f64>> {
    let mut out = vec![0.0; rows.len() * grid.cols];
    for (k, &r) in rows.iter().enumerate() {
        let line = &mut out[k * grid.cols..(k + 1) * grid.cols];
        if be.is_cuda() {
            let g1 = GridSpec {
                rows: 1,
                y_max_m: grid.y_max_m - r as f64 * grid.cell_size_m,
                ..*grid
            };
            let o = DisperseOptions {
                method: Method::Exact,
                precision: Precision::F32,
                ..Default::default()
            };
            let (band, _) =
                disperse_species(be, &g1, sp, &shift(src, r as f64 * grid.cell_size_m), &o)?;
            line.copy_from_slice(&band.to_f64());
        } else {
            exact_rows(grid, &sp.kernel, src, false, r, line);
        }
    }
    Ok(out)
}

/// Sources shifted north by `dv` metres (v − dv), for a window whose first row is row r0.
fn shift(src: &Sources, dv: f64) -> Sources {
    Sources {
        u: src.u.clone(),
        v: src.v.iter().map(|v| v - dv).collect(),
        w: src.w.clone(),
    }
}

/// On the CPU, say up front how long a case will take: the tree-cell pairs each step evaluates
/// (the f64 reference window; exact, on a window of rows where it would pass its pair limit; the
/// cutoff within its a-priori radius), at this machine's rate of exact pairs, measured on a small
/// window first. Multires is not estimated (its cost depends on the quadtree's openings).
fn estimate_cpu_time(
    a: &BenchArgs,
    grid: &GridSpec,
    species: &[dispersal::Species],
    sources: &[Sources],
    reference_rows: usize,
) {
    let total_trees: f64 = sources.iter().map(|s| s.len() as f64).sum();
    if total_trees == 0.0 {
        return;
    }
    // Calibrate on about 2e7 pairs of the first species with trees.
    let Some((sp, src)) = species.iter().zip(sources).find(|(_, s)| !s.is_empty()) else {
        return;
    };
    let row_pairs = grid.cols as f64 * src.len() as f64;
    let rows = ((2e7 / row_pairs).ceil() as usize).clamp(1, grid.rows);
    let mut out = vec![0.0; rows * grid.cols];
    let t = std::time::Instant::now();
    exact_rows(grid, &sp.kernel, src, false, 0, &mut out);
    let rate = rows as f64 * row_pairs / t.elapsed().as_secs_f64().max(1e-9);
    let runs = (a.warmup + a.repeats.max(1)) as f64;
    let cells = grid.n_cells() as f64;
    let want = |m: &str| a.methods.iter().any(|x| x.eq_ignore_ascii_case(m));
    let reference = reference_rows as f64 * grid.cols as f64 * total_trees;
    let exact = if want("exact") {
        // The exact run's own window beyond the CPU limit (see run_method).
        let full = cells * total_trees;
        runs * if full > a.exact_max_pairs.min(2e10) {
            1e9
        } else {
            full
        }
    } else {
        0.0
    };
    let area = grid.width_m() * grid.height_m();
    let mut cutoff = 0.0;
    if want("cutoff") {
        for &tol in &a.tolerances {
            for (sp, src) in species.iter().zip(sources) {
                let r = cutoff_radius(grid, &sp.kernel, src, tol).radius_m;
                let within = src.len() as f64 / area * std::f64::consts::PI * r * r;
                cutoff += runs * cells * within.min(src.len() as f64);
            }
        }
    }
    let secs = (reference + exact + cutoff) / rate;
    println!(
        "CPU estimate: {:.1e} exact pairs/s here; reference {:.0} s, exact {:.0} s, cutoff {:.0} s \
         ({} runs per method): about {} before multires",
        rate,
        reference / rate,
        exact / rate,
        cutoff / rate,
        runs,
        human_duration(secs)
    );
}

/// Seconds as "42 s", "12 min" or "3.5 h".
fn human_duration(s: f64) -> String {
    if s < 120.0 {
        format!("{s:.0} s")
    } else if s < 7200.0 {
        format!("{:.0} min", s / 60.0)
    } else {
        format!("{:.1} h", s / 3600.0)
    }
}
