//! `geofield bench knn`: exact 7-NN (self excluded) with every index in one run, against kiddo
//! (the best Rust kd-tree) on the CPU, on uniform and clustered 2-D point sets.
//!
//! On a GPU backend the geofield rows are the device's: points resident on the GPU, the grid
//! built there and searched, both timed with CUDA events (medians), in f32 and f64; plus one
//! end-to-end row (`knn`: upload, build, search, download, wall clock). kiddo still runs on
//! the host's cores as the CPU reference.

use std::num::NonZero;
use std::time::Instant;

use crate::ctx::{Ctx, Global};
use anyhow::{Result, bail};
use clap::{Args, ValueEnum};
use geofield::Backend;
use geofield::neighbors::{self, IndexKind, KnnParams};
use geofield_cuda::Gpu;
use geofield_cuda::neighbors::{self as gn, DeviceIndex, GpuCoord};
use kiddo::SquaredEuclidean;
use kiddo::immutable::float::kdtree::ImmutableKdTree;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Normal};
use rand_pcg::Pcg64;
use rayon::prelude::*;
use std::sync::Arc;

use super::{BenchEnv, JsonRows, Stats, measure};

mod host;

#[derive(Clone, Copy, ValueEnum, PartialEq)]
pub enum Set {
    Uniform,
    Clustered,
}

#[derive(Args)]
pub struct BenchArgs {
    /// log2 of the point counts (default 10, 14, 18, 20).
    #[arg(long, value_delimiter = ',', default_values_t = vec![10, 14, 18, 20])]
    pub log2_n: Vec<u32>,
    #[arg(long, value_delimiter = ',', value_enum, default_values_t = vec![Set::Uniform, Set::Clustered])]
    pub sets: Vec<Set>,
    #[arg(long, default_value_t = 7)]
    pub k: usize,
    #[arg(long, default_value_t = 3)]
    pub repeats: usize,
    #[arg(long, default_value_t = 1)]
    pub warmup: usize,
    /// Time the library call from host arrays instead (`neighbors::knn` on the GPU backend: the
    /// whole call by wall clock, then the host time of each step with the device synchronised
    /// between steps), in f32 and f64; medians of `--repeats` warm runs.
    #[arg(long)]
    pub host: bool,
    /// With `--host`: exact point counts (instead of `--log2-n`).
    #[arg(long, value_delimiter = ',')]
    pub n: Vec<usize>,
    /// With `--host`: the points' dimension (2 or 3; 3-D points are uniform in the unit cube).
    #[arg(long, default_value_t = 2)]
    pub dim: usize,
}

#[derive(serde::Serialize)]
struct Row {
    set: &'static str,
    n: usize,
    method: String,
    /// Build + query, seconds.
    total: Stats,
    build_s: Option<f64>,
    /// GPU rows: search kernel median, seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    search_s: Option<f64>,
    queries_per_s: f64,
    /// GPU rows: (points read + rows written) / total time over the nominal DRAM bandwidth.
    #[serde(skip_serializing_if = "Option::is_none")]
    dram_share: Option<f64>,
    /// kiddo's total time over this row's (same set and size, same run).
    #[serde(skip_serializing_if = "Option::is_none")]
    vs_kiddo: Option<f64>,
    /// Neighbour distances equal to brute force's (or to the uniform grid's when brute force is
    /// too slow to run).
    agrees: bool,
}

#[derive(serde::Serialize)]
struct Head<'a> {
    env: &'a BenchEnv,
    k: usize,
}

pub(super) fn points(set: Set, n: usize, seed: u64) -> Vec<f64> {
    let mut rng = Pcg64::seed_from_u64(seed);
    let mut v = Vec::with_capacity(2 * n);
    match set {
        Set::Uniform => (0..2 * n).for_each(|_| v.push(rng.random::<f64>())),
        Set::Clustered => {
            let centres: Vec<(f64, f64)> = (0..(n / 64).max(1))
                .map(|_| (rng.random(), rng.random()))
                .collect();
            let spread = Normal::new(0.0, 0.002).ok();
            for i in 0..n {
                let (cx, cy) = centres[i % centres.len()];
                let (dx, dy) =
                    spread.map_or((0.0, 0.0), |d| (d.sample(&mut rng), d.sample(&mut rng)));
                v.push(cx + dx);
                v.push(cy + dy);
            }
        }
    }
    v
}

pub fn run(a: &BenchArgs, ctx: &Ctx) -> Result<()> {
    ctx.refuse_unused(&[Global::Crs, Global::Compress])?;
    let sel = ctx.open_backend()?;
    if a.k == 0 || a.k > neighbors::K_MAX {
        bail!("--k must be 1..={}", neighbors::K_MAX);
    }
    let be = sel.backend;
    if a.host {
        return host::run(a, ctx, &be);
    }
    let env = BenchEnv::new(&be);
    let mut json = JsonRows::new(ctx, &Head { env: &env, k: a.k }, "rows")?;
    println!(
        "geofield bench knn ({}-NN, self excluded, build included) on {} ({}), commit {}",
        a.k, env.backend, env.device, env.commit
    );
    println!(
        "{:<10} {:>9} {:<28} {:>11} {:>11} {:>13} {:>6} {:>8}",
        "set", "n", "method", "total", "build", "queries/s", "exact", "DRAM"
    );
    let q = KnnParams::new(a.k);
    let mut rows = Vec::new();
    for &set in &a.sets {
        for &l in &a.log2_n {
            let n = 1usize << l;
            let pts = points(set, n, 7 + l as u64);
            let set_name = if set == Set::Uniform {
                "uniform"
            } else {
                "clustered"
            };
            let mut reference: Option<Vec<f64>> = None;
            if let Backend::Cuda(g) = &be {
                reference = Some(gpu_rows(g, a, set_name, &pts, &mut rows)?);
            } else {
                cpu_rows(a, set_name, &pts, &q, &mut reference, &mut rows)?;
            }
            json.sync(&rows)?;
            // kiddo: immutable kd-tree (its fastest), k + 1 neighbours with the point itself dropped.
            let arr: Vec<[f64; 2]> = pts.chunks_exact(2).map(|c| [c[0], c[1]]).collect();
            let kq = NonZero::new(a.k + 1).unwrap_or(NonZero::<usize>::MIN);
            let mut build_s = Vec::new();
            let (total, _, d2) = measure(a.warmup, a.repeats, || {
                let t = Instant::now();
                let tree: ImmutableKdTree<f64, u32, 2, 32> = ImmutableKdTree::new_from_slice(&arr);
                build_s.push(t.elapsed().as_secs_f64());
                let d2: Vec<f64> = arr
                    .par_iter()
                    .enumerate()
                    .flat_map_iter(|(i, p)| {
                        let nn = tree.nearest_n::<SquaredEuclidean>(p, kq);
                        let mut v: Vec<f64> = nn
                            .iter()
                            .filter(|x| x.item as usize != i)
                            .map(|x| x.distance)
                            .collect();
                        v.truncate(a.k);
                        v
                    })
                    .collect();
                Ok((d2, None))
            })?;
            let agrees = reference
                .as_ref()
                .is_some_and(|r| r.len() == d2.len() && r.iter().zip(&d2).all(|(a, b)| a == b));
            let row = Row {
                set: set_name,
                n,
                method: "kiddo ImmutableKdTree".into(),
                queries_per_s: n as f64 / total.median,
                build_s: Some(Stats::of(build_s).median),
                search_s: None,
                total,
                dram_share: None,
                agrees,
                vs_kiddo: None,
            };
            print_row(&row);
            // Speed-ups over kiddo for this set and size (kiddo's total time / the row's).
            let kt = row.total.median;
            let mut line = String::new();
            for r in rows.iter_mut().filter(|r| r.set == set_name && r.n == n) {
                let x = kt / r.total.median;
                r.vs_kiddo = Some(x);
                line.push_str(&format!(
                    "  {} {x:.2}x",
                    r.method.trim_start_matches("geofield ")
                ));
            }
            println!("{:<10} {:>9} vs kiddo:{line}", set_name, n);
            rows.push(row);
            json.sync(&rows)?;
        }
    }
    json.finish(&rows)?;
    Ok(())
}

fn cpu_rows(
    a: &BenchArgs,
    set_name: &'static str,
    pts: &[f64],
    q: &KnnParams,
    reference: &mut Option<Vec<f64>>,
    rows: &mut Vec<Row>,
) -> Result<()> {
    let n = pts.len() / 2;
    let mut methods: Vec<(&str, IndexKind)> = vec![];
    if n <= 1 << 14 {
        methods.push(("brute", IndexKind::Brute));
    }
    methods.push(("uniform grid", IndexKind::Uniform { cell_size: None }));
    methods.push(("dynamic grid", IndexKind::Dynamic { max_per_leaf: 16 }));
    for (name, index) in methods {
        let (total, _, res) = measure(a.warmup, a.repeats, || {
            let r = neighbors::knn(&Backend::Cpu, pts, None, 2, &KnnParams { index, ..*q })?;
            Ok((r, None))
        })?;
        let agrees = match reference {
            None => {
                *reference = Some(res.dist2.clone());
                true
            }
            Some(r) => r == &res.dist2,
        };
        let row = Row {
            set: set_name,
            n,
            method: format!("geofield {name}"),
            queries_per_s: n as f64 / total.median,
            total,
            build_s: None,
            search_s: None,
            dram_share: None,
            agrees,
            vs_kiddo: None,
        };
        print_row(&row);
        rows.push(row);
    }
    Ok(())
}

/// The device rows (f32 then f64; brute force up to 2^16 points), and the f64 reference
/// distances for kiddo's check.
fn gpu_rows(
    g: &Arc<Gpu>,
    a: &BenchArgs,
    set_name: &'static str,
    pts: &[f64],
    rows: &mut Vec<Row>,
) -> Result<Vec<f64>> {
    let n = pts.len() / 2;
    let bw = g.info().peak_bandwidth_bytes_per_s;
    let p32: Vec<f32> = pts.iter().map(|&v| v as f32).collect();
    let mut reference64 = Vec::new();
    for f64_run in [false, true] {
        let mut reference: Option<Vec<f64>> = None;
        let mut methods: Vec<(&str, Option<DeviceIndex>)> = vec![];
        if n <= 1 << 16 {
            methods.push(("brute", None));
        }
        methods.push(("uniform grid", Some(DeviceIndex::Uniform)));
        methods.push(("dynamic grid", Some(DeviceIndex::Morton { max_leaf: 16 })));
        let ty = if f64_run { "f64" } else { "f32" };
        let elem = if f64_run { 8.0 } else { 4.0 };
        for (name, index) in methods {
            let (times, d2): (Vec<(f64, f64)>, Vec<f64>) = match (index, f64_run) {
                (Some(ix), false) => device(g, &p32, a, ix)?,
                (Some(ix), true) => device(g, pts, a, ix)?,
                (None, false) => brute(g, &p32, a)?,
                (None, true) => brute(g, pts, a)?,
            };
            let total = Stats::of(times.iter().map(|t| t.0 + t.1).collect());
            let build = Stats::of(times.iter().map(|t| t.0).collect()).median;
            let search = Stats::of(times.iter().map(|t| t.1).collect()).median;
            let agrees = match &reference {
                None => {
                    reference = Some(d2.clone());
                    true
                }
                Some(r) => r == &d2,
            };
            // Input points once, output rows (i64 index + distance) once.
            let bytes = n as f64 * (2.0 * elem + a.k as f64 * (8.0 + elem));
            let row = Row {
                set: set_name,
                n,
                method: format!("cuda {name} {ty}"),
                queries_per_s: n as f64 / total.median,
                build_s: index.map(|_| build),
                search_s: Some(search),
                dram_share: (bw > 0.0).then(|| bytes / total.median / bw),
                total,
                agrees,
                vs_kiddo: None,
            };
            print_row(&row);
            rows.push(row);
        }
        if f64_run {
            reference64 = reference.unwrap_or_default();
        }
    }
    // End to end from host memory (upload, build, search, download), f32.
    let be = Backend::Cuda(Arc::clone(g));
    let q = KnnParams {
        index: IndexKind::Uniform { cell_size: None },
        ..KnnParams::new(a.k)
    };
    let (total, _, res) = measure(a.warmup, a.repeats, || {
        Ok((neighbors::knn(&be, &p32, None, 2, &q)?, None))
    })?;
    let row = Row {
        set: set_name,
        n,
        method: "cuda uniform f32 end-to-end".into(),
        queries_per_s: n as f64 / total.median,
        total,
        build_s: None,
        search_s: None,
        dram_share: None,
        vs_kiddo: None,
        agrees: rows
            .iter()
            .rev()
            .find(|r| r.method == "cuda uniform grid f32")
            .is_some_and(|r| r.agrees)
            && !res.dist2.is_empty(),
    };
    print_row(&row);
    rows.push(row);
    Ok(reference64)
}

type DeviceRun = (Vec<(f64, f64)>, Vec<f64>);

fn device<T: GpuCoord>(g: &Gpu, p: &[T], a: &BenchArgs, ix: DeviceIndex) -> Result<DeviceRun> {
    let (times, (_, d2, _)) = gn::bench_device(g, p, 2, a.k, ix, a.warmup.max(1), a.repeats)?;
    Ok((
        times
            .iter()
            .map(|t| (f64::from(t.build_ms) * 1e-3, f64::from(t.query_ms) * 1e-3))
            .collect(),
        d2.iter().map(|&v| v.widen()).collect(),
    ))
}

fn brute<T: GpuCoord>(g: &Gpu, p: &[T], a: &BenchArgs) -> Result<DeviceRun> {
    let mut times = Vec::new();
    let mut last = Vec::new();
    for it in 0..a.warmup + a.repeats.max(1) {
        let (_, d2, ms) = gn::knn_brute(g, p, p, 2, a.k, None, true)?;
        if it >= a.warmup {
            times.push((0.0, f64::from(ms) * 1e-3));
        }
        last = d2;
    }
    Ok((times, last.iter().map(|&v| v.widen()).collect()))
}

fn print_row(r: &Row) {
    println!(
        "{:<10} {:>9} {:<28} {:>9.3} ms {:>11} {:>13.3e} {:>6} {:>8}",
        r.set,
        r.n,
        r.method.trim_start_matches("geofield "),
        r.total.median * 1e3,
        r.build_s
            .map(|b| format!("{:.3} ms", b * 1e3))
            .unwrap_or_else(|| "-".into()),
        r.queries_per_s,
        if r.agrees { "yes" } else { "NO" },
        r.dram_share
            .map(|s| format!("{:.1} %", s * 100.0))
            .unwrap_or_default()
    );
}
