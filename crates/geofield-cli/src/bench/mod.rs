//! `geofield bench <capability>`: warm-up, repeats, medians, every method in one run, ratios,
//! errors against the exact method, throughput and the share of the hardware limit. `--json`
//! writes every number.

mod dispersal;
mod dispersal_e2e;
mod dispersal_print;
mod flock;
mod forest;
mod knn;
mod kriging;
mod kriging_gpu;
mod wind;
mod wind_gpu;

use std::time::Instant;

use anyhow::Result;
use clap::Subcommand;

#[derive(Subcommand)]
pub enum BenchCommand {
    /// Seed dispersal: exact, multires (the paper's method) and cutoff on the paper's Table 2
    /// scales or the 10.24 km landscape.
    Dispersal(dispersal::BenchArgs),
    /// Exact k-NN: brute force, uniform grid, dynamic grid, and kiddo's kd-tree as the CPU peer.
    Knn(knn::BenchArgs),
    /// Kriging: the paper's case and zoom series (per-node elimination, factor-once weights,
    /// dual) and a large case (n up to 10,000, 1 M nodes, variance, local k = 32).
    Kriging(kriging::BenchArgs),
    /// The forest loop end to end: the seed paper's Fig. 13 (exact vs multires), a 1 km stand
    /// and the 10.24 km landscape over 30 years, and per-seed placement's seeds per second.
    Forest(forest::BenchArgs),
    /// Boids steps per second for every neighbour index, uniform and dense starts.
    Flock(flock::BenchArgs),
    /// Wind field: the paper's fixed WEST runs and every solver to tolerance on R1…R64 and
    /// 512 × 512 × 128.
    Wind(wind::BenchArgs),
}

pub fn run(c: &BenchCommand, ctx: &crate::ctx::Ctx) -> Result<()> {
    match c {
        BenchCommand::Dispersal(a) => dispersal::run(a, ctx),
        BenchCommand::Knn(a) => knn::run(a, ctx),
        BenchCommand::Flock(a) => flock::run(a, ctx),
        BenchCommand::Forest(a) => forest::run(a, ctx),
        BenchCommand::Kriging(a) => kriging::run(a, ctx),
        BenchCommand::Wind(a) => wind::run(a, ctx),
    }
}

/// The `--json` file of a bench, rewritten (atomically) whenever a row is added, so that a run
/// stopped half-way keeps every row it measured. The file is one object: the bench's head fields
/// and its rows under `key`.
pub struct JsonRows {
    path: Option<std::path::PathBuf>,
    head: serde_json::Map<String, serde_json::Value>,
    key: &'static str,
    written: Option<usize>,
}

impl JsonRows {
    /// `head` must serialise to an object; nothing is written without `--json`.
    pub fn new(
        ctx: &crate::ctx::Ctx,
        head: &impl serde::Serialize,
        key: &'static str,
    ) -> Result<Self> {
        let path = ctx.json().map(std::path::Path::to_path_buf);
        if let Some(p) = &path {
            crate::output::preflight(p)?;
        }
        let head = match serde_json::to_value(head)? {
            serde_json::Value::Object(m) => m,
            _ => anyhow::bail!("a bench's JSON head must be an object"),
        };
        Ok(JsonRows {
            path,
            head,
            key,
            written: None,
        })
    }

    /// Add a field to the head (written with the next rows).
    pub fn head_insert(&mut self, key: &str, value: serde_json::Value) {
        self.head.insert(key.to_string(), value);
        self.written = None;
    }

    /// Write the file with `rows` unless it already holds as many.
    pub fn sync<T: serde::Serialize>(&mut self, rows: &[T]) -> Result<()> {
        let Some(p) = &self.path else { return Ok(()) };
        if self.written == Some(rows.len()) {
            return Ok(());
        }
        let mut doc = self.head.clone();
        doc.insert(self.key.to_string(), serde_json::to_value(rows)?);
        crate::output::write_json(p, &doc)?;
        self.written = Some(rows.len());
        Ok(())
    }

    /// The final write, and a line saying where it went.
    pub fn finish<T: serde::Serialize>(mut self, rows: &[T]) -> Result<()> {
        self.written = None;
        self.sync(rows)?;
        if let Some(p) = &self.path {
            println!("wrote {}", p.display());
        }
        Ok(())
    }
}

/// Median and spread of repeated measurements, in seconds.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Stats {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub samples: Vec<f64>,
}

impl Stats {
    pub fn of(samples: Vec<f64>) -> Self {
        let mut s = samples.clone();
        s.sort_by(f64::total_cmp);
        let n = s.len();
        let median = if n == 0 {
            f64::NAN
        } else if n % 2 == 1 {
            s[n / 2]
        } else {
            0.5 * (s[n / 2 - 1] + s[n / 2])
        };
        Stats {
            median,
            min: s.first().copied().unwrap_or(f64::NAN),
            max: s.last().copied().unwrap_or(f64::NAN),
            samples,
        }
    }
}

/// Run `f` `warmup` times untimed, then `repeats` times; returns wall-clock stats, the stats of
/// the extra time each run reports (e.g. GPU kernel seconds from device events), and the last
/// result.
pub fn measure<T>(
    warmup: usize,
    repeats: usize,
    mut f: impl FnMut() -> Result<(T, Option<f64>)>,
) -> Result<(Stats, Option<Stats>, T)> {
    for _ in 0..warmup {
        f()?;
    }
    let mut wall = Vec::new();
    let mut extra = Vec::new();
    let mut last = None;
    for _ in 0..repeats.max(1) {
        let t = Instant::now();
        let (v, e) = f()?;
        wall.push(t.elapsed().as_secs_f64());
        if let Some(e) = e {
            extra.push(e);
        }
        last = Some(v);
    }
    let extra = (!extra.is_empty()).then(|| Stats::of(extra));
    match last {
        Some(v) => Ok((Stats::of(wall), extra, v)),
        None => anyhow::bail!("no measurement was taken"),
    }
}

/// Where and what was measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BenchEnv {
    pub version: &'static str,
    pub commit: &'static str,
    pub command: String,
    pub backend: String,
    pub device: String,
    pub host_threads: usize,
    pub gpu_multiprocessors: Option<u32>,
    pub gpu_clock_mhz: Option<f64>,
}

impl BenchEnv {
    pub fn new(be: &geofield::Backend) -> Self {
        let (sm, clk) = match be {
            geofield::Backend::Cuda(g) => (
                Some(g.info().multiprocessors),
                Some(g.info().clock_rate_khz as f64 / 1000.0),
            ),
            geofield::Backend::Cpu => (None, None),
        };
        BenchEnv {
            version: env!("CARGO_PKG_VERSION"),
            commit: env!("GEOFIELD_COMMIT"),
            command: std::env::args().collect::<Vec<_>>().join(" "),
            backend: be.label(),
            device: be.device_name(),
            host_threads: rayon::current_num_threads(),
            gpu_multiprocessors: sm,
            gpu_clock_mhz: clk,
        }
    }

    /// Special-function-unit results per second of the GPU (16 per SM per clock), if known.
    pub fn sfu_ops_per_s(&self) -> Option<f64> {
        Some(self.gpu_multiprocessors? as f64 * 16.0 * self.gpu_clock_mhz? * 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(Stats::of(vec![3.0, 1.0, 2.0]).median, 2.0);
        assert_eq!(Stats::of(vec![4.0, 1.0, 2.0, 3.0]).median, 2.5);
        let (s, e, v) = measure(1, 3, || Ok((7, Some(0.5)))).unwrap();
        assert_eq!(s.samples.len(), 3);
        assert_eq!(e.unwrap().median, 0.5);
        assert_eq!(v, 7);
    }
}
