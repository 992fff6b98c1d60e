//! Per-seed dispersal: SORTIE-ND's spatial disperse, every seed drawn and counted in the cell it
//! lands in.
//!
//! A reproductive tree (DBH ≥ the species' minimum) of species s produces
//! N̄ = w · η_K seeds a year, where w = (STR/η)(DBH/30)^β is its weight in the expected map
//! ([`crate::dispersal::Species::weight`]) and η_K = ∫ K dA the kernel's analytic integral: the
//! expected map is then exactly the density of these seeds (with η = η_K, N̄ = STR (DBH/30)^β,
//! SORTIE-ND's count). The tree sheds ⌊N̄⌋ seeds, plus one with probability N̄ − ⌊N̄⌋ (SORTIE-ND's
//! random rounding, which keeps the mean).
//!
//! Each seed travels a distance r drawn from the kernel's radial density 2πr K(r)/η_K in a
//! uniform direction. SORTIE-ND tabulates that density's CDF in 1 m rings and searches it
//! linearly; here every kernel the species file accepts has an exact inverse:
//!
//! - Weibull K = exp(−D r^θ): D r^θ is Gamma(2/θ, 1) distributed, so r = (G/D)^{1/θ};
//! - lognormal K = exp(−½ (ln(r/X0)/Xb)²): ln r is normal with mean ln X0 + 2 Xb² and standard
//!   deviation Xb (the factor r of the radial density shifts the mean by Xb²·2);
//! - Clark's 2Dt K = (1 + r²/u)^{−(p+1)}: P(distance > r) = (1 + r²/u)^{−p}, so
//!   r = √(u (U^{−1/p} − 1)) with U uniform.
//!
//! These are the survival functions [`crate::dispersal::Kernel::mass_beyond`] reports, which the
//! tests check the draws against. [`sample_distance`] draws them so; the seed placement uses a
//! [`Flight`] instead, the same distribution tabulated finely enough that it costs a logarithm,
//! a table lookup and an exponential per seed (see there). On a torus the seed's position wraps
//! into the plot (SORTIE-ND's plot); on an open plot seeds that land outside the grid are lost.
//! Each tree draws from its own [`Stream`] (purpose [`Purpose::SeedPlacement`]), and the counts
//! are sums of integers, so the map is the same for any thread count.
//!
//! On the CPU ([`place`] with [`Backend::Cpu`]) the seeds go in batches of Philox blocks. Each
//! parent's count is drawn first ([`random_round`], its stream's u32 #0 and #1); the parents are
//! put in Z order of their position (neighbouring parents' seeds land on cells still in cache)
//! and their blocks (seed j takes u32 #(2 + 2j) and #(3 + 2j), as below) split into equal ranges
//! over the threads. A batch computes 16 blocks at once with AVX-512F or 8 with AVX2 and FMA
//! (detected at run time; without them, one block at a time), then 8 or 4 seeds per vector
//! through the very operations of the scalar path: the same [`exact_math`] polynomials, FMAs
//! exactly where it calls `mul_add`, the same divisions (a multiplication by 1/h only where the
//! cell size h is a power of two, which gives the same bits). Every seed lands in the same cell
//! as on the scalar path (tested against it); the rare seed the vectors leave out (one that wraps
//! by more than the plot's size) takes the scalar path. Each thread counts into its own grid,
//! summed at the end, where grids are at most 16 M cells and cheap next to the seeds; else atomic
//! adds on one grid.
//!
//! On the CUDA backend ([`place`] with [`Backend::Cuda`]) the host draws each parent's seed
//! count (its stream's first two u32, [`random_round`]) and the device does the rest, one thread
//! per seed (`geofield-cuda/kernels/forest.cu`): seed j of a parent takes its stream's u32
//! #(2 + 2j) and #(3 + 2j), which Philox, being counter-based, computes directly (two lanes of
//! one block), then the same table lookup, logarithm and exponential ([`exact_math`]: FMA,
//! addition, multiplication and division only), direction, wrap and cell as here, adding one to
//! the cell's count atomically. Every one of those operations is correctly rounded in IEEE 754 on
//! both sides, the GPU's f64 arithmetic is written as explicit round-to-nearest instructions (no
//! contraction into FMAs) with FMAs exactly where this code calls `mul_add`, and the counts are
//! sums of ones: the GPU's counts equal the CPU's bit for bit, for any thread or block order.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, PoisonError};

use geofield_core::GridSpec;
use rayon::prelude::*;

use super::exact_math;
use super::rng::{Purpose, Stream, philox4x32_10};
use crate::dispersal::{Kernel, Species, Stand};
use crate::{Backend, GeofieldError};

/// A seed's distance from its parent (m), drawn from the kernel's radial density.
pub fn sample_distance(kernel: &Kernel, s: &mut Stream) -> f64 {
    match *kernel {
        Kernel::Weibull { d, theta } => (s.gamma(2.0 / theta) / d).powf(1.0 / theta),
        Kernel::Lognormal { x0, xb } => s.lognormal(x0.ln() + 2.0 * xb * xb, xb),
        Kernel::TwoDt { u, p } => (u * (s.uniform().powf(-1.0 / p) - 1.0)).max(0.0).sqrt(),
    }
}

/// A species' seed flights: the quantile function of the distance, tabulated.
///
/// A draw u (uniform) gives the distance r with P(distance ≤ r) = u. The table holds ln r at
/// `TABLE` + 1 equally spaced values of a = −ln u for u < ½ (the near side) and of t = −ln(1 − u)
/// for u ≥ ½ (the far side), each from ln 2 to `LOG_MAX` (u or 1 − u down to e⁻²³, below the
/// smallest value a seed's 32-bit draw gives, 2⁻³³: every draw is in the tables), interpolated
/// linearly: ln r is a smooth, nearly linear function of a and of t for every kernel (near the
/// parent u ∝ r² for Weibull and 2Dt, ln u ∝ −(ln r)² for the lognormal; in the tails t ∝ r^θ,
/// t ≈ 2p ln r, t ∝ (ln r)²). A u beyond the tables (not from a 32-bit draw) solves
/// mass_beyond(r) = 1 − u by bisection. Both tables come from a finer forward grid of [`Kernel::mass_beyond`], uniform in
/// ln r. The quantiles are within 1e-6 of the kernel's median distance of the exact ones
/// (tested), far below any cell.
#[derive(Debug, Clone)]
pub struct Flight {
    kernel: Kernel,
    /// ln r on the near side (by a) and the far side (by t).
    near: Vec<f64>,
    far: Vec<f64>,
    inv_step: f64,
    /// Unit vectors at `DIRECTIONS` + 1 equally spaced angles, for the seed's direction.
    dir: Vec<(f64, f64)>,
    /// The vector paths' copies: (ln r, next entry − ln r) per interval, the near table's
    /// `TABLE` then the far one's; (cos, Δcos, sin, Δsin) per direction interval.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    steps: Vec<[f64; 2]>,
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    turns: Vec<[f64; 4]>,
}

/// [`Flight::tables`]: the near and far quantile tables, `inv_step` and the directions.
pub(crate) type FlightTables<'a> = (&'a [f64], &'a [f64], f64, &'a [(f64, f64)]);

/// Intervals of each quantile table, its end in −ln u (or −ln(1 − u)), the forward grid's points
/// per table interval, and the directions' table.
pub(crate) const TABLE: usize = 1 << 14;
const LOG_MAX: f64 = 23.0;
const FORWARD: usize = 16;
pub(crate) const DIRECTIONS: usize = 1 << 12;

impl Flight {
    pub fn new(kernel: &Kernel) -> Self {
        let kernel = *kernel;
        let lo_u = (-LOG_MAX).exp();
        // The distances where u = e⁻²³ and 1 − u = e⁻²³.
        let r_lo = quantile(&kernel, lo_u);
        let r_hi = quantile(&kernel, 1.0 - lo_u);
        let m = FORWARD * TABLE;
        let (l0, l1) = (r_lo.ln(), r_hi.ln());
        // (−ln F, −ln(1 − F), ln r) on a grid uniform in ln r.
        let fwd: Vec<(f64, f64, f64)> = (0..=m)
            .into_par_iter()
            .map(|i| {
                let lr = l0 + (l1 - l0) * i as f64 / m as f64;
                let tail = kernel.mass_beyond(lr.exp());
                (-(1.0 - tail).ln(), -tail.ln(), lr)
            })
            .collect();
        let step = (LOG_MAX - std::f64::consts::LN_2) / TABLE as f64;
        // Near side: a = −ln F decreases along the grid; far side: t increases.
        let table = |key: &(dyn Fn(&(f64, f64, f64)) -> f64 + Sync), rising: bool| -> Vec<f64> {
            (0..=TABLE)
                .into_par_iter()
                .map(|j| {
                    let target = std::f64::consts::LN_2 + j as f64 * step;
                    // The first grid interval whose keys bracket the target (keys monotone).
                    let idx = fwd.partition_point(|p| {
                        if rising {
                            key(p) < target
                        } else {
                            key(p) > target
                        }
                    });
                    let i1 = idx.clamp(1, m);
                    let (p0, p1) = (&fwd[i1 - 1], &fwd[i1]);
                    let (k0, k1) = (key(p0), key(p1));
                    let f = if k1 != k0 {
                        ((target - k0) / (k1 - k0)).clamp(0.0, 1.0)
                    } else {
                        0.0
                    };
                    p0.2 + f * (p1.2 - p0.2)
                })
                .collect()
        };
        let near = table(&|p| p.0, false);
        let far = table(&|p| p.1, true);
        let dir: Vec<(f64, f64)> = (0..=DIRECTIONS)
            .map(|k| {
                let phi = std::f64::consts::TAU * k as f64 / DIRECTIONS as f64;
                (phi.cos(), phi.sin())
            })
            .collect();
        let steps = [&near, &far]
            .iter()
            .flat_map(|t| t.windows(2).map(|w| [w[0], w[1] - w[0]]))
            .collect();
        let turns = dir
            .windows(2)
            .map(|w| [w[0].0, w[1].0 - w[0].0, w[0].1, w[1].1 - w[0].1])
            .collect();
        Flight {
            kernel,
            near,
            far,
            inv_step: 1.0 / step,
            dir,
            steps,
            turns,
        }
    }

    /// The tables as the GPU mirrors them: ln r on the near and far sides (`TABLE` + 1 values
    /// each, by (x − ln 2) · `inv_step`), `inv_step`, and the directions' unit vectors
    /// (`DIRECTIONS` + 1).
    pub(crate) fn tables(&self) -> FlightTables<'_> {
        (&self.near, &self.far, self.inv_step, &self.dir)
    }

    /// The distance at u (0 < u < 1).
    fn distance_at(&self, u: f64) -> f64 {
        // The logarithm and exponential of `exact_math`: the GPU computes the same bits.
        let (tab, x) = if u < 0.5 {
            (&self.near, -exact_math::ln(u))
        } else {
            (&self.far, -exact_math::ln(1.0 - u))
        };
        let pos = (x - std::f64::consts::LN_2) * self.inv_step;
        if pos.is_nan() || pos >= TABLE as f64 {
            return quantile(&self.kernel, u);
        }
        let j = (pos.max(0.0) as usize).min(TABLE - 1);
        let f = pos - j as f64;
        exact_math::exp(f.mul_add(tab[j + 1] - tab[j], tab[j]))
    }

    /// A seed's distance (m), one u32 of `s`.
    pub fn distance(&self, s: &mut Stream) -> f64 {
        self.distance_of(s.next_u32())
    }

    /// The distance of the draw `x`.
    #[inline]
    fn distance_of(&self, x: u32) -> f64 {
        self.distance_at((f64::from(x) + 0.5) * (1.0 / 4_294_967_296.0))
    }

    /// A uniform direction (cos, sin), one u32 of `s`: 12 bits pick the table's interval, 20
    /// interpolate in it.
    pub fn direction(&self, s: &mut Stream) -> (f64, f64) {
        self.direction_of(s.next_u32())
    }

    /// The direction of the draw `x`.
    #[inline]
    fn direction_of(&self, x: u32) -> (f64, f64) {
        let k = (x >> 20) as usize;
        let f = f64::from(x & 0xF_FFFF) * (1.0 / 1_048_576.0);
        let ((c0, s0), (c1, s1)) = (self.dir[k], self.dir[k + 1]);
        (c0 + f * (c1 - c0), s0 + f * (s1 - s0))
    }
}

/// The distance r with P(distance ≤ r) = u, by bisection on [`Kernel::mass_beyond`].
pub fn quantile(kernel: &Kernel, u: f64) -> f64 {
    let tail = 1.0 - u;
    let mut hi = 1.0f64;
    while kernel.mass_beyond(hi) > tail && hi < 1e15 {
        hi *= 2.0;
    }
    bisect(|r| tail - kernel.mass_beyond(r), 0.0, hi)
}

/// The root of an increasing `f` in [lo, hi] (f(lo) ≤ 0 ≤ f(hi)) to the last bit.
fn bisect(f: impl Fn(f64) -> f64, mut lo: f64, mut hi: f64) -> f64 {
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if f(mid) < 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// Seeds a tree of `dbh_cm` sheds in a year on average: w · η_K (0 below the minimum DBH).
pub fn mean_seeds(sp: &Species, dbh_cm: f64) -> f64 {
    sp.weight(dbh_cm)
        .map_or(0.0, |w| w * sp.kernel.eta_analytic())
}

/// ⌊x⌋, plus one with probability x − ⌊x⌋ (x ≥ 0; 0 for anything else).
pub fn random_round(x: f64, s: &mut Stream) -> u64 {
    if !(x > 0.0 && x.is_finite()) {
        return 0;
    }
    let whole = x.floor();
    whole as u64 + u64::from(s.uniform() < x - whole)
}

/// Seed counts per cell (row-major from the north-west) of species `index` (`sp`, whose
/// flights `flight` is: built once per species and run) from every tree of `stand` in `year`,
/// with the run's `seed`. Returns the counts and the seeds shed (those lost off an open plot
/// included).
#[allow(clippy::too_many_arguments)]
pub fn place_seeds(
    grid: &GridSpec,
    sp: &Species,
    flight: &Flight,
    index: u32,
    stand: &Stand,
    torus: bool,
    seed: u64,
    year: u32,
) -> (Vec<u32>, u64) {
    let parents: Vec<Parent> = (0..stand.x_m.len())
        .filter(|&i| stand.species[i] == index)
        .map(|i| Parent {
            x_m: stand.x_m[i],
            y_m: stand.y_m[i],
            mean_seeds: mean_seeds(sp, stand.dbh_cm[i]),
            id: i as u64,
        })
        .collect();
    let mut counts = vec![0u32; grid.n_cells()];
    let shed = place_cpu(
        grid,
        flight,
        &parents,
        index as u8,
        torus,
        seed,
        year,
        &mut counts,
    );
    (counts, shed)
}

/// A tree shedding seeds: its position, its expected seeds this year and its id (which keys
/// its random stream).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Parent {
    pub x_m: f64,
    pub y_m: f64,
    pub mean_seeds: f64,
    pub id: u64,
}

/// Shed the seeds of `parents` (of species `species`) with `flight` and add each to the count
/// of the cell of `grid` it lands in (`counts`, row-major, one per cell, `grid.n_cells()` of
/// them); returns the seeds shed. Each parent sheds its mean rounded at random and draws every
/// seed from its own stream (purpose [`Purpose::SeedPlacement`], id = the parent's id). Both
/// backends give the same counts, bit for bit (see the [module docs](self)).
///
/// ```
/// use geofield::Backend;
/// use geofield::dispersal::Kernel;
/// use geofield::forest::per_seed::{Flight, Parent, place};
///
/// let grid = geofield_core::GridSpec::from_extent(
///     geofield_core::Extent::new(0.0, 0.0, 50.0, 40.0)?,
///     1.0,
/// )?;
/// let flight = Flight::new(&Kernel::Weibull { d: 1.32e-3, theta: 3.0 });
/// let parents = [Parent { x_m: 20.0, y_m: 15.0, mean_seeds: 500.5, id: 0 }];
/// let mut counts = vec![0u32; grid.n_cells()];
/// let shed = place(&Backend::Cpu, &grid, &flight, &parents, 0, true, 1, 0, &mut counts)?;
/// // On a torus every seed lands in a cell.
/// assert_eq!(counts.iter().map(|&c| u64::from(c)).sum::<u64>(), shed);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[allow(clippy::too_many_arguments)]
pub fn place(
    backend: &Backend,
    grid: &GridSpec,
    flight: &Flight,
    parents: &[Parent],
    species: u8,
    torus: bool,
    seed: u64,
    year: u32,
    counts: &mut [u32],
) -> Result<u64, GeofieldError> {
    if counts.len() != grid.n_cells() {
        return Err(GeofieldError::Invalid(format!(
            "seed placement: {} counts for a grid of {} cells",
            counts.len(),
            grid.n_cells()
        )));
    }
    match backend {
        Backend::Cuda(gpu) => super::per_seed_cuda::place_cuda(
            gpu, grid, flight, parents, species, torus, seed, year, counts,
        ),
        Backend::Cpu => Ok(place_cpu(
            grid, flight, parents, species, torus, seed, year, counts,
        )),
    }
}

/// [`place`] on the CPU: the seeds in batches of Philox blocks (see [`place_batched`]), sixteen
/// blocks at a time on AVX-512F, eight on AVX2 and FMA, counted in per-thread counts where the
/// grid is small enough.
#[allow(clippy::too_many_arguments)]
fn place_cpu(
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
enum Simd {
    /// Scalar: one block, then one seed at a time.
    Off,
    /// AVX2 and FMA: eight blocks, then four seeds at a time.
    Avx2,
    /// AVX-512F (with AVX2 and FMA): sixteen blocks, then eight seeds at a time.
    Avx512,
}

impl Simd {
    /// The widest this CPU runs.
    fn detect() -> Simd {
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
    fn available() -> Vec<Simd> {
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
struct Mode {
    simd: Simd,
    private: Option<bool>,
}

/// The grid as a seed's cell needs it.
#[derive(Debug, Clone, Copy)]
struct Plot {
    h: f64,
    /// 1/h where h is a power of two: x · (1/h) is then x/h exactly (the same real number,
    /// rounded once), and the vector path multiplies instead of dividing.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    inv_h: Option<f64>,
    cols: f64,
    rows: f64,
    ncols: usize,
    periods: Option<(f64, f64)>,
}

impl Plot {
    /// The cell (row-major) of grid-relative (u, v), if inside the grid.
    #[inline]
    fn cell(&self, u: f64, v: f64) -> Option<usize> {
        let (c, rr) = ((u / self.h).floor(), (v / self.h).floor());
        (c >= 0.0 && c < self.cols && rr >= 0.0 && rr < self.rows)
            .then(|| rr as usize * self.ncols + c as usize)
    }
}

/// A parent with seeds: its stream's counter words 1 and 2, its grid-relative position and its
/// seed count (≥ 1).
#[derive(Debug, Clone, Copy)]
struct Shedder {
    ctr1: u32,
    ctr2: u32,
    u0: f64,
    v0: f64,
    n: u64,
}

impl Shedder {
    /// Philox blocks its seeds use: seed j takes block (j + 1)/2, so blocks 0..=n/2.
    fn blocks(&self) -> u64 {
        self.n / 2 + 1
    }
}

/// Up to N (≤ 16) Philox blocks of (any) parents: block index, counter words 1 and 2, the
/// parent's position, and which of the block's two seeds (words 0-1: seed 2b − 1; words 2-3:
/// seed 2b) are the parent's (bit i for block i).
#[derive(Debug, Clone, Copy)]
struct Batch<const N: usize> {
    ctr0: [u32; N],
    ctr1: [u32; N],
    ctr2: [u32; N],
    u0: [f64; N],
    v0: [f64; N],
    first: u32,
    second: u32,
    len: usize,
}

impl<const N: usize> Batch<N> {
    fn new() -> Self {
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
struct Ctx<'a> {
    flight: &'a Flight,
    plot: Plot,
    key: [u32; 2],
    year: u32,
}

/// [`place_cpu`] by batches of blocks. Each parent's count is [`random_round`] on its stream's
/// first two u32, as in the scalar path; then seed j of the parent draws its stream's u32
/// #(2 + 2j) and #(3 + 2j), i.e. words 2-3 of block 0 (j = 0) or of block j/2 (j even), words
/// 0-1 of block (j + 1)/2 (j odd). Philox being counter-based, every block is computed directly
/// from its counter, and the blocks of all parents are split into equal ranges (about four per
/// thread) whatever their parents' sizes. The counts are sums of ones, so the order is free.
#[allow(clippy::too_many_arguments)]
fn place_batched(
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
fn power_of_two_recip(h: f64) -> Option<f64> {
    let inv = 1.0 / h;
    let pow2 = |x: f64| x.is_normal() && x > 0.0 && x.to_bits() & 0x000F_FFFF_FFFF_FFFF == 0;
    (pow2(h) && pow2(inv)).then_some(inv)
}

/// The Z-order (Morton) key of (⌊x⌋, ⌊y⌋), each clamped to [0, 2¹⁶) (NaN to 0).
fn z_order(x: f64, y: f64) -> u32 {
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
fn run_blocks(
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
fn fill_batches<const N: usize>(
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

/// The AVX2 and FMA batch: eight Philox blocks at once, then four seeds at a time through the
/// same operations as [`fly_draws`] and [`Plot::cell`] (the same bits); a seed the vector path
/// does not cover (a draw beyond the tables, an exponent beyond ±700, a wrap by more than one
/// period) goes through [`fly_draws`] itself.
#[cfg(target_arch = "x86_64")]
mod x86;

/// The AVX-512 batch: [`x86::batch`] on sixteen blocks and eight seeds a vector, the same
/// operations lane by lane.
#[cfg(target_arch = "x86_64")]
mod x86_512;

/// A parent's grid-relative position: u east from the grid's west edge, v south from its north
/// edge (m).
#[inline]
pub(crate) fn grid_relative(grid: &GridSpec, p: &Parent) -> (f64, f64) {
    (p.x_m - grid.x_min_m, grid.y_max_m - p.y_m)
}

/// One seed's flight from a parent at grid-relative (u0, v0): its distance r and landing
/// position (u, v), wrapped into [0, Lx) × [0, Ly) when `periods` = Some((Lx, Ly)) (a torus).
/// Two u32 of `s`: the distance's, then the direction's.
/// The scalar reference's (and the GPU tests') form; the batched path calls [`fly_draws`].
#[cfg(test)]
pub(crate) fn fly(
    flight: &Flight,
    s: &mut Stream,
    u0: f64,
    v0: f64,
    periods: Option<(f64, f64)>,
) -> (f64, f64, f64) {
    let a = s.next_u32();
    let d = s.next_u32();
    fly_draws(flight, a, d, u0, v0, periods)
}

/// [`fly`] with its two u32 given: `a` the distance's, `d` the direction's.
#[inline]
fn fly_draws(
    flight: &Flight,
    a: u32,
    d: u32,
    u0: f64,
    v0: f64,
    periods: Option<(f64, f64)>,
) -> (f64, f64, f64) {
    let r = flight.distance_of(a);
    let (cos, sin) = flight.direction_of(d);
    let (mut u, mut v) = (u0 + r * cos, v0 - r * sin);
    if let Some((lx, ly)) = periods {
        u = wrap(u, lx);
        v = wrap(v, ly);
    }
    (r, u, v)
}

/// `x` wrapped into [0, period): one addition or subtraction for the seeds that leave the plot
/// by less than its size (nearly all), `rem_euclid` for the others.
#[inline]
fn wrap(x: f64, period: f64) -> f64 {
    if x < 0.0 {
        let y = x + period;
        if y >= 0.0 {
            y.min(period.next_down())
        } else {
            x.rem_euclid(period)
        }
    } else if x >= period {
        let y = x - period;
        if y < period { y } else { x.rem_euclid(period) }
    } else {
        x
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod speed;
