//! [`super::place`] on the CPU: the seeds in batches of Philox blocks, the vector batches of
//! [`super::x86`] and [`super::x86_512`] where the CPU has them (see the module docs of
//! [`super`]).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, PoisonError};

use geofield_core::GridSpec;
use rayon::prelude::*;

use super::{Flight, Parent, fly_draws, grid_relative, random_round};
#[cfg(target_arch = "x86_64")]
use super::{x86, x86_512};
use crate::forest::rng::{Purpose, Stream, philox4x32_10};

/// [`place`] on the CPU: the seeds in batches of Philox blocks (see [`place_batched`]), sixteen
/// blocks at a time on AVX-512F, eight on AVX2 and FMA, counted in per-thread counts where the
/// grid is small enough.
#[allow(clippy::too_many_arguments)]
pub(super) fn place_cpu(
    grid: &GridSpec,
    flight: &Flight,
    parents: &[Parent],
    species: u8,
    torus: bool,
    seed: u64,
    year: u32,
    counts: &mut [u32],
) -> u64 {
    let mode = Mode {
        simd: Simd::detect(),
        private: None,
    };
    place_batched(
        grid, flight, parents, species, torus, seed, year, counts, mode,
    )
}

/// The vector instructions a batch runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(super) enum Simd {
    /// Scalar: one block, then one seed at a time.
    Off,
    /// AVX2 and FMA: eight blocks, then four seeds at a time.
    Avx2,
    /// AVX-512F (with AVX2 and FMA): sixteen blocks, then eight seeds at a time.
    Avx512,
}

impl Simd {
    /// The widest this CPU runs.
    pub(super) fn detect() -> Simd {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            if has!("avx2") && has!("fma") {
                return if has!("avx512f") {
                    Simd::Avx512
                } else {
                    Simd::Avx2
                };
            }
        }
        Simd::Off
    }

    /// The levels this CPU runs, scalar first.
    #[cfg(test)]
    pub(super) fn available() -> Vec<Simd> {
        let best = Simd::detect();
        [Simd::Off, Simd::Avx2, Simd::Avx512]
            .into_iter()
            .filter(|&s| s == Simd::Off || best == Simd::Avx512 || s == best)
            .collect()
    }
}

/// How [`place_batched`] runs: `simd` (the caller checks the CPU has it), and per-thread counts
/// (`private`: Some to force, None to choose by size).
#[derive(Debug, Clone, Copy)]
pub(super) struct Mode {
    pub(super) simd: Simd,
    pub(super) private: Option<bool>,
}

/// The grid as a seed's cell needs it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Plot {
    pub(super) h: f64,
    /// 1/h where h is a power of two: x · (1/h) is then x/h exactly (the same real number,
    /// rounded once), and the vector path multiplies instead of dividing.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(super) inv_h: Option<f64>,
    pub(super) cols: f64,
    pub(super) rows: f64,
    pub(super) ncols: usize,
    pub(super) periods: Option<(f64, f64)>,
}

impl Plot {
    /// The cell (row-major) of grid-relative (u, v), if inside the grid.
    #[inline]
    pub(super) fn cell(&self, u: f64, v: f64) -> Option<usize> {
        let (c, rr) = ((u / self.h).floor(), (v / self.h).floor());
        (c >= 0.0 && c < self.cols && rr >= 0.0 && rr < self.rows)
            .then(|| rr as usize * self.ncols + c as usize)
    }
}

/// A parent with seeds: its stream's counter words 1 and 2, its grid-relative position and its
/// seed count (≥ 1).
#[derive(Debug, Clone, Copy)]
pub(super) struct Shedder {
    pub(super) ctr1: u32,
    pub(super) ctr2: u32,
    pub(super) u0: f64,
    pub(super) v0: f64,
    pub(super) n: u64,
}

impl Shedder {
    /// Philox blocks its seeds use: seed j takes block (j + 1)/2, so blocks 0..=n/2.
    pub(super) fn blocks(&self) -> u64 {
        self.n / 2 + 1
    }
}

/// Up to N (≤ 16) Philox blocks of (any) parents: block index, counter words 1 and 2, the
/// parent's position, and which of the block's two seeds (words 0-1: seed 2b − 1; words 2-3:
/// seed 2b) are the parent's (bit i for block i).
#[derive(Debug, Clone, Copy)]
pub(super) struct Batch<const N: usize> {
    pub(super) ctr0: [u32; N],
    pub(super) ctr1: [u32; N],
    pub(super) ctr2: [u32; N],
    pub(super) u0: [f64; N],
    pub(super) v0: [f64; N],
    pub(super) first: u32,
    pub(super) second: u32,
    pub(super) len: usize,
}

impl<const N: usize> Batch<N> {
    pub(super) fn new() -> Self {
        Batch {
            ctr0: [0; N],
            ctr1: [0; N],
            ctr2: [0; N],
            u0: [0.0; N],
            v0: [0.0; N],
            first: 0,
            second: 0,
            len: 0,
        }
    }
}

/// The shared inputs of every batch.
pub(super) struct Ctx<'a> {
    pub(super) flight: &'a Flight,
    pub(super) plot: Plot,
    pub(super) key: [u32; 2],
    pub(super) year: u32,
}

/// [`place_cpu`] by batches of blocks. Each parent's count is [`random_round`] on its stream's
/// first two u32, as in the scalar path; then seed j of the parent draws its stream's u32
/// #(2 + 2j) and #(3 + 2j), i.e. words 2-3 of block 0 (j = 0) or of block j/2 (j even), words
/// 0-1 of block (j + 1)/2 (j odd). Philox being counter-based, every block is computed directly
/// from its counter, and the blocks of all parents are split into equal ranges (about four per
/// thread) whatever their parents' sizes. The counts are sums of ones, so the order is free.
#[allow(clippy::too_many_arguments)]
pub(super) fn place_batched(
    grid: &GridSpec,
    flight: &Flight,
    parents: &[Parent],
    species: u8,
    torus: bool,
    seed: u64,
    year: u32,
    counts: &mut [u32],
    mode: Mode,
) -> u64 {
    let plot = Plot {
        h: grid.cell_size_m,
        inv_h: power_of_two_recip(grid.cell_size_m),
        cols: grid.cols as f64,
        rows: grid.rows as f64,
        ncols: grid.cols,
        periods: torus.then(|| (grid.width_m(), grid.height_m())),
    };
    let mut jobs: Vec<(u32, Shedder)> = parents
        .par_iter()
        .filter_map(|p| {
            if p.mean_seeds.is_nan() || p.mean_seeds <= 0.0 {
                return None;
            }
            let mut s = Stream::new(seed, year, species, p.id, Purpose::SeedPlacement);
            let (ctr, _) = s.counter_and_key();
            let n = random_round(p.mean_seeds, &mut s);
            let (u0, v0) = grid_relative(grid, p);
            (n > 0).then_some((
                z_order(u0 / 16.0, v0 / 16.0),
                Shedder {
                    ctr1: ctr[1],
                    ctr2: ctr[2],
                    u0,
                    v0,
                    n,
                },
            ))
        })
        .collect();
    // Parents in Z order of 16 m tiles: the seeds of neighbouring parents fall on the same
    // cells, which then stay in cache (the counts do not depend on the order).
    jobs.par_sort_unstable_by_key(|j| j.0);
    let jobs: Vec<Shedder> = jobs.into_iter().map(|j| j.1).collect();
    let shed: u64 = jobs.iter().map(|j| j.n).sum();
    // The blocks' prefix ends, one per job.
    let ends: Vec<u64> = jobs
        .iter()
        .scan(0u64, |acc, j| {
            *acc += j.blocks();
            Some(*acc)
        })
        .collect();
    let total = ends.last().copied().unwrap_or(0);
    if total == 0 {
        return 0;
    }
    let (_, key) = Stream::new(seed, year, species, 0, Purpose::SeedPlacement).counter_and_key();
    let ctx = Ctx {
        flight,
        plot,
        key,
        year,
    };
    let threads = rayon::current_num_threads().max(1);
    let pieces = (4 * threads as u64).min(total.div_ceil(256)).max(1);
    let range = |k: u64| {
        let at = |k: u64| (u128::from(total) * u128::from(k) / u128::from(pieces)) as u64;
        (at(k), at(k + 1))
    };
    let n_cells = counts.len();
    // Per-thread counts (zeroed and summed: ~2 passes over the grid per thread) where they cost
    // less than an atomic add per seed and fit in 512 MiB; else atomic adds on one grid.
    let private = mode.private.unwrap_or(
        n_cells <= 1 << 24
            && (threads as u64).saturating_mul(n_cells as u64)
                <= (1 << 27).min(shed.saturating_mul(8)),
    );
    if private {
        let bufs: Vec<Mutex<Vec<u32>>> = (0..threads).map(|_| Mutex::new(Vec::new())).collect();
        (0..pieces).into_par_iter().for_each(|k| {
            let t = rayon::current_thread_index().unwrap_or(0) % threads;
            let mut buf = bufs[t].lock().unwrap_or_else(PoisonError::into_inner);
            if buf.is_empty() {
                buf.resize(n_cells, 0);
            }
            let (lo, hi) = range(k);
            run_blocks(&ctx, &jobs, &ends, lo, hi, mode.simd, &mut |c| {
                buf[c] = buf[c].wrapping_add(1);
            });
        });
        let bufs: Vec<Vec<u32>> = bufs
            .into_iter()
            .map(|m| m.into_inner().unwrap_or_else(PoisonError::into_inner))
            .filter(|b| !b.is_empty())
            .collect();
        const CHUNK: usize = 1 << 14;
        counts
            .par_chunks_mut(CHUNK)
            .enumerate()
            .for_each(|(i, chunk)| {
                for b in &bufs {
                    for (c, &x) in chunk.iter_mut().zip(&b[i * CHUNK..]) {
                        *c = c.wrapping_add(x);
                    }
                }
            });
    } else {
        let cells: Vec<AtomicU32> = counts.iter().map(|&c| AtomicU32::new(c)).collect();
        (0..pieces).into_par_iter().for_each(|k| {
            let (lo, hi) = range(k);
            run_blocks(&ctx, &jobs, &ends, lo, hi, mode.simd, &mut |c| {
                cells[c].fetch_add(1, Ordering::Relaxed);
            });
        });
        for (c, a) in counts.iter_mut().zip(cells) {
            *c = a.into_inner();
        }
    }
    shed
}

/// 1/h if h is a power of two (normal, and so is 1/h), else None.
pub(super) fn power_of_two_recip(h: f64) -> Option<f64> {
    let inv = 1.0 / h;
    let pow2 = |x: f64| x.is_normal() && x > 0.0 && x.to_bits() & 0x000F_FFFF_FFFF_FFFF == 0;
    (pow2(h) && pow2(inv)).then_some(inv)
}

/// The Z-order (Morton) key of (⌊x⌋, ⌊y⌋), each clamped to [0, 2¹⁶) (NaN to 0).
pub(super) fn z_order(x: f64, y: f64) -> u32 {
    let spread = |t: f64| {
        let mut v = (t.clamp(0.0, 65_535.0) as u32) & 0xFFFF;
        v = (v | (v << 8)) & 0x00FF_00FF;
        v = (v | (v << 4)) & 0x0F0F_0F0F;
        v = (v | (v << 2)) & 0x3333_3333;
        (v | (v << 1)) & 0x5555_5555
    };
    spread(x) | (spread(y) << 1)
}

/// Blocks `lo..hi` (of all jobs' blocks in order; `ends` their prefix ends): every seed's cell
/// to `count`.
#[allow(clippy::too_many_arguments)]
pub(super) fn run_blocks(
    ctx: &Ctx,
    jobs: &[Shedder],
    ends: &[u64],
    lo: u64,
    hi: u64,
    simd: Simd,
    count: &mut impl FnMut(usize),
) {
    #[cfg(target_arch = "x86_64")]
    match simd {
        Simd::Avx2 => {
            let mut cells = [0usize; 16];
            fill_batches::<8>(jobs, ends, lo, hi, |b| {
                #[allow(unsafe_code)]
                // SAFETY: `Simd::Avx2` only where the CPU has AVX2 and FMA (`Simd::detect`).
                let n = unsafe { x86::batch(ctx, b, &mut cells) };
                for &c in &cells[..n] {
                    count(c);
                }
            });
            return;
        }
        Simd::Avx512 => {
            let mut cells = [0usize; 32];
            fill_batches::<16>(jobs, ends, lo, hi, |b| {
                #[allow(unsafe_code)]
                // SAFETY: `Simd::Avx512` only where the CPU has AVX-512F, AVX2 and FMA
                // (`Simd::detect`).
                let n = unsafe { x86_512::batch(ctx, b, &mut cells) };
                for &c in &cells[..n] {
                    count(c);
                }
            });
            return;
        }
        Simd::Off => {}
    }
    let _ = simd;
    fill_batches::<8>(jobs, ends, lo, hi, |b| {
        for l in 0..b.len {
            let ctr = [b.ctr0[l], b.ctr1[l], b.ctr2[l], ctx.year];
            let x = philox4x32_10(ctr, ctx.key);
            let (u0, v0) = (b.u0[l], b.v0[l]);
            for (bit, a, d) in [(b.first, x[0], x[1]), (b.second, x[2], x[3])] {
                if bit >> l & 1 == 1 {
                    let (_, u, v) = fly_draws(ctx.flight, a, d, u0, v0, ctx.plot.periods);
                    if let Some(c) = ctx.plot.cell(u, v) {
                        count(c);
                    }
                }
            }
        }
    });
}

/// Blocks `lo..hi` in batches of N (the last one partial) to `run`.
pub(super) fn fill_batches<const N: usize>(
    jobs: &[Shedder],
    ends: &[u64],
    lo: u64,
    hi: u64,
    mut run: impl FnMut(&Batch<N>),
) {
    let mut i = ends.partition_point(|&e| e <= lo);
    let Some(first) = jobs.get(i) else {
        return;
    };
    let mut b = lo - (ends[i] - first.blocks());
    let mut batch = Batch::<N>::new();
    let mut g = lo;
    while g < hi {
        let Some(p) = jobs.get(i) else {
            break;
        };
        // The parent's next blocks, as many as the batch takes. Words 0-1: seed 2b − 1 (none
        // in block 0); words 2-3: seed 2b, if 2b < n.
        let take = (p.blocks() - b).min(hi - g).min((N - batch.len) as u64);
        for t in 0..take {
            let (l, bt) = (batch.len + t as usize, b + t);
            batch.ctr0[l] = bt as u32;
            batch.ctr1[l] = p.ctr1;
            batch.ctr2[l] = p.ctr2;
            batch.u0[l] = p.u0;
            batch.v0[l] = p.v0;
            batch.first |= u32::from(bt > 0) << l;
            batch.second |= u32::from(2 * bt < p.n) << l;
        }
        batch.len += take as usize;
        (b, g) = (b + take, g + take);
        if batch.len == N {
            run(&batch);
            batch.first = 0;
            batch.second = 0;
            batch.len = 0;
        }
        if b == p.blocks() {
            i += 1;
            b = 0;
        }
    }
    if batch.len > 0 {
        run(&batch);
    }
}
