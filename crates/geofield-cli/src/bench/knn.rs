//! `geofield bench knn`: exact 7-NN (self excluded) with every index in one run, against kiddo
//! (the best Rust kd-tree) on the CPU, on uniform and clustered 2-D point sets.

use std::num::NonZero;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Result, bail};
use clap::{Args, ValueEnum};
use geofield::neighbors::{self, IndexKind, KnnQuery};
use geofield::{BackendChoice, backend};
use kiddo::SquaredEuclidean;
use kiddo::immutable::float::kdtree::ImmutableKdTree;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Normal};
use rand_pcg::Pcg64;
use rayon::prelude::*;

use super::{BenchEnv, Stats, measure};
use crate::output;

#[derive(Clone, Copy, ValueEnum, PartialEq)]
pub enum Set {
    Uniform,
    Clustered,
}

#[derive(Args)]
pub struct BenchArgs {
    /// auto | cpu | cuda | cuda:N.
    #[arg(long, env = "GEOFIELD_BACKEND", default_value = "auto")]
    pub backend: String,
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
    #[arg(long)]
    pub json: Option<PathBuf>,
}

#[derive(serde::Serialize)]
struct Row {
    set: &'static str,
    n: usize,
    method: String,
    /// Build + query, seconds.
    total: Stats,
    build_s: Option<f64>,
    queries_per_s: f64,
    /// Neighbour distances equal to brute force's (or to the uniform grid's when brute force is
    /// too slow to run).
    agrees: bool,
}

#[derive(serde::Serialize)]
struct Report {
    env: BenchEnv,
    k: usize,
    rows: Vec<Row>,
}

fn points(set: Set, n: usize, seed: u64) -> Vec<f64> {
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

pub fn run(a: &BenchArgs) -> Result<()> {
    let choice: BackendChoice = a.backend.parse().map_err(anyhow::Error::msg)?;
    let sel = backend::select(choice)?;
    if let Some(p) = &a.json {
        output::preflight(p, false)?;
    }
    if a.k == 0 || a.k > neighbors::K_MAX {
        bail!("--k must be 1..={}", neighbors::K_MAX);
    }
    let be = sel.backend;
    let env = BenchEnv::new(&be);
    println!(
        "geofield bench knn ({}-NN, self excluded, build included) on {} ({}), commit {}",
        a.k, env.backend, env.device, env.commit
    );
    println!(
        "{:<10} {:>9} {:<16} {:>11} {:>11} {:>13} {:>6}",
        "set", "n", "method", "total", "build", "queries/s", "exact"
    );
    let q = KnnQuery {
        k: a.k,
        radius: None,
        exclude_self: true,
    };
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
            let mut methods: Vec<(&str, IndexKind)> = vec![];
            if n <= 1 << 14 {
                methods.push(("brute", IndexKind::Brute));
            }
            methods.push(("uniform grid", IndexKind::Uniform { cell_size: None }));
            methods.push(("dynamic grid", IndexKind::Dynamic { max_per_leaf: 16 }));
            for (name, index) in methods {
                let (total, _, res) = measure(a.warmup, a.repeats, || {
                    Ok((neighbors::knn(&pts, None, 2, &q, index)?, None))
                })?;
                let agrees = match &reference {
                    None => {
                        reference = Some(res.dist2.clone());
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
                    agrees,
                };
                print_row(&row);
                rows.push(row);
            }
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
                total,
                agrees,
            };
            print_row(&row);
            rows.push(row);
        }
    }
    if let Some(p) = &a.json {
        output::write_json(p, &Report { env, k: a.k, rows })?;
        println!("wrote {}", p.display());
    }
    Ok(())
}

fn print_row(r: &Row) {
    println!(
        "{:<10} {:>9} {:<16} {:>9.3} ms {:>11} {:>13.3e} {:>6}",
        r.set,
        r.n,
        r.method.trim_start_matches("geofield "),
        r.total.median * 1e3,
        r.build_s
            .map(|b| format!("{:.3} ms", b * 1e3))
            .unwrap_or_else(|| "-".into()),
        r.queries_per_s,
        if r.agrees { "yes" } else { "NO" }
    );
}
