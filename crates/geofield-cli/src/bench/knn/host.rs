//! `geofield bench knn --host`: the k-NN library call from host arrays on the GPU backend
//! (`neighbors::knn(&Backend::Cuda(..), points, None, dim, &KnnParams::new(k))`, self excluded,
//! index `auto`; and `neighbors::knn_distances`, the Python package's call), in f32 and f64: the whole call by wall clock (medians of `--repeats` warm runs
//! after `--warmup` ones), then the same call with the device synchronised after each step and
//! the host time of each step (check, upload, setup, build, search, download, convert; medians
//! per step), so that where the time goes is visible.

use anyhow::{Result, bail};
use geofield::Backend;
use geofield::bench::neighbors::{HostSplit, knn_cuda_split};
use geofield::neighbors::{self, Coord, KnnParams};
use geofield_cuda::Gpu;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

use super::{BenchArgs, Set, points};
use crate::bench::{BenchEnv, JsonRows, Stats, measure};
use crate::ctx::Ctx;

#[derive(serde::Serialize)]
struct Row {
    set: &'static str,
    n: usize,
    dim: usize,
    /// Coordinate type of the points (the search runs in it).
    ty: &'static str,
    /// The library call timed.
    call: &'static str,
    /// The whole call, seconds.
    total: Stats,
    /// Medians of the per-step host times (ms) of the synchronised runs.
    split: HostSplit,
    /// The split runs' sum of steps, median, ms.
    split_total_ms: f64,
    /// The timed call's rows equal the synchronised call's rows.
    agrees: bool,
}

#[derive(serde::Serialize)]
struct Head<'a> {
    env: &'a BenchEnv,
    k: usize,
    mode: &'static str,
}

fn unit_cube(n: usize, dim: usize, seed: u64) -> Vec<f64> {
    let mut rng = Pcg64::seed_from_u64(seed);
    (0..n * dim).map(|_| rng.random::<f64>()).collect()
}

pub fn run(a: &BenchArgs, ctx: &Ctx, be: &Backend) -> Result<()> {
    let Backend::Cuda(gpu) = be else {
        bail!("--host times the GPU backend's call from host arrays: pass --backend cuda");
    };
    if a.dim != 2 && a.dim != 3 {
        bail!("--dim must be 2 or 3");
    }
    let env = BenchEnv::new(be);
    let mut json = JsonRows::new(
        ctx,
        &Head {
            env: &env,
            k: a.k,
            mode: "host",
        },
        "rows",
    )?;
    println!(
        "geofield bench knn --host ({}-NN, self excluded, index auto, {}-D) on {} ({}), commit {}",
        a.k, a.dim, env.backend, env.device, env.commit
    );
    println!(
        "medians of {} warm runs (after {}); split: host ms per step, device synchronised after each",
        a.repeats.max(1),
        a.warmup
    );
    println!(
        "{:<10} {:>9} {:<4} {:<14} {:>9} | {:>6} {:>6} {:>6} {:>6} {:>6} {:>8} {:>7} {:>7} {:>5}",
        "set",
        "n",
        "type",
        "call",
        "total ms",
        "check",
        "upload",
        "setup",
        "build",
        "search",
        "download",
        "convert",
        "sum",
        "same"
    );
    let sizes: Vec<usize> = if a.n.is_empty() {
        a.log2_n.iter().map(|&l| 1usize << l).collect()
    } else {
        a.n.clone()
    };
    let mut rows = Vec::new();
    for &set in &a.sets {
        let set_name = match set {
            Set::Uniform => "uniform",
            Set::Clustered if a.dim == 2 => "clustered",
            // Only uniform 3-D points are generated.
            Set::Clustered => continue,
        };
        for &n in &sizes {
            let seed = 11 + n as u64;
            let p64 = if a.dim == 2 {
                points(set, n, seed)
            } else {
                unit_cube(n, a.dim, seed)
            };
            let p32: Vec<f32> = p64.iter().map(|&v| v as f32).collect();
            host_rows(gpu, a, set_name, &p32, "f32", &mut rows)?;
            json.sync(&rows)?;
            host_rows(gpu, a, set_name, &p64, "f64", &mut rows)?;
            json.sync(&rows)?;
        }
    }
    json.finish(&rows)?;
    Ok(())
}

fn host_rows<T: Coord>(
    gpu: &std::sync::Arc<Gpu>,
    a: &BenchArgs,
    set: &'static str,
    pts: &[T],
    ty: &'static str,
    rows: &mut Vec<Row>,
) -> Result<()> {
    let dim = a.dim;
    let n = pts.len() / dim;
    let be = Backend::Cuda(std::sync::Arc::clone(gpu));
    let params = KnnParams::new(a.k);
    // `knn`: squared distances, -1 / NaN padding; `knn_distances`: the Python package's form
    // (distances, index n / inf padding).
    for (call, missing) in [("knn", None), ("knn_distances", Some(n as i64))] {
        let (total, _, plain) = measure(a.warmup, a.repeats, || {
            let rows = match missing {
                None => {
                    let nb = neighbors::knn(&be, pts, None, dim, &params)?;
                    (nb.indices, nb.dist2)
                }
                Some(m) => {
                    let nb = neighbors::knn_distances(&be, pts, None, dim, &params, m)?;
                    (nb.indices, nb.dist)
                }
            };
            Ok((rows, None))
        })?;
        let mut splits = Vec::new();
        let mut same = true;
        for it in 0..a.warmup + a.repeats.max(1) {
            let (i, d, s) = knn_cuda_split(gpu, pts, None, dim, &params, missing)?;
            if it >= a.warmup {
                splits.push(s);
            }
            same &= i == plain.0
                && d.len() == plain.1.len()
                && d.iter()
                    .zip(&plain.1)
                    .all(|(x, y)| x.to_bits() == y.to_bits());
        }
        let med = |f: fn(&HostSplit) -> f64| Stats::of(splits.iter().map(f).collect()).median;
        let split = HostSplit {
            check_ms: med(|s| s.check_ms),
            upload_ms: med(|s| s.upload_ms),
            setup_ms: med(|s| s.setup_ms),
            build_ms: med(|s| s.build_ms),
            search_ms: med(|s| s.search_ms),
            download_ms: med(|s| s.download_ms),
            convert_ms: med(|s| s.convert_ms),
        };
        let row = Row {
            set,
            n,
            dim,
            ty,
            call,
            total,
            split,
            split_total_ms: med(HostSplit::total_ms),
            agrees: same,
        };
        print_row(&row);
        rows.push(row);
    }
    Ok(())
}

fn print_row(r: &Row) {
    let s = &r.split;
    println!(
        "{:<10} {:>9} {:<4} {:<14} {:>9.2} | {:>6.2} {:>6.2} {:>6.2} {:>6.2} {:>6.2} {:>8.2} {:>7.2} {:>7.2} {:>5}",
        r.set,
        r.n,
        r.ty,
        r.call,
        r.total.median * 1e3,
        s.check_ms,
        s.upload_ms,
        s.setup_ms,
        s.build_ms,
        s.search_ms,
        s.download_ms,
        s.convert_ms,
        r.split_total_ms,
        if r.agrees { "yes" } else { "NO" }
    );
}
