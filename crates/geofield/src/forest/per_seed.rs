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
//! a table lookup and a square root per seed (see there). On a torus the seed's position wraps into the plot (SORTIE-ND's
//! plot); on an open plot seeds that land outside the grid are lost. Each tree draws from its own
//! [`Stream`] (purpose [`Purpose::SeedPlacement`]), and the counts are sums of integers, so the
//! map is the same for any thread count.
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

use geofield_core::GridSpec;
use rayon::prelude::*;

use super::exact_math;
use super::rng::{Purpose, Stream};
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
            .map(|i| {
                let lr = l0 + (l1 - l0) * i as f64 / m as f64;
                let tail = kernel.mass_beyond(lr.exp());
                (-(1.0 - tail).ln(), -tail.ln(), lr)
            })
            .collect();
        let step = (LOG_MAX - std::f64::consts::LN_2) / TABLE as f64;
        // Near side: a = −ln F decreases along the grid; far side: t increases.
        let table = |key: &dyn Fn(&(f64, f64, f64)) -> f64, rising: bool| -> Vec<f64> {
            let mut out = Vec::with_capacity(TABLE + 1);
            for j in 0..=TABLE {
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
                out.push(p0.2 + f * (p1.2 - p0.2));
            }
            out
        };
        let near = table(&|p| p.0, false);
        let far = table(&|p| p.1, true);
        let dir = (0..=DIRECTIONS)
            .map(|k| {
                let phi = std::f64::consts::TAU * k as f64 / DIRECTIONS as f64;
                (phi.cos(), phi.sin())
            })
            .collect();
        Flight {
            kernel,
            near,
            far,
            inv_step: 1.0 / step,
            dir,
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
        let u = (f64::from(s.next_u32()) + 0.5) * (1.0 / 4_294_967_296.0);
        self.distance_at(u)
    }

    /// A uniform direction (cos, sin), one u32 of `s`: 12 bits pick the table's interval, 20
    /// interpolate in it.
    pub fn direction(&self, s: &mut Stream) -> (f64, f64) {
        let x = s.next_u32();
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

/// [`place`] on the CPU (rayon, one task per parent).
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
    let cells: Vec<AtomicU32> = counts.iter().map(|&c| AtomicU32::new(c)).collect();
    let h = grid.cell_size_m;
    let periods = torus.then(|| (grid.width_m(), grid.height_m()));
    let (cols, rows) = (grid.cols as f64, grid.rows as f64);
    let shed: u64 = parents
        .par_iter()
        .map(|p| {
            if p.mean_seeds.is_nan() || p.mean_seeds <= 0.0 {
                return 0;
            }
            let mut s = Stream::new(seed, year, species, p.id, Purpose::SeedPlacement);
            let n = random_round(p.mean_seeds, &mut s);
            let (u0, v0) = grid_relative(grid, p);
            for _ in 0..n {
                let (_, u, v) = fly(flight, &mut s, u0, v0, periods);
                let (c, rr) = ((u / h).floor(), (v / h).floor());
                if c >= 0.0 && c < cols && rr >= 0.0 && rr < rows {
                    let cell = rr as usize * grid.cols + c as usize;
                    cells[cell].fetch_add(1, Ordering::Relaxed);
                }
            }
            n
        })
        .sum();
    for (c, a) in counts.iter_mut().zip(cells) {
        *c = a.into_inner();
    }
    shed
}

/// A parent's grid-relative position: u east from the grid's west edge, v south from its north
/// edge (m).
#[inline]
pub(crate) fn grid_relative(grid: &GridSpec, p: &Parent) -> (f64, f64) {
    (p.x_m - grid.x_min_m, grid.y_max_m - p.y_m)
}

/// One seed's flight from a parent at grid-relative (u0, v0): its distance r and landing
/// position (u, v), wrapped into [0, Lx) × [0, Ly) when `periods` = Some((Lx, Ly)) (a torus).
/// Two u32 of `s`: the distance's, then the direction's.
#[inline]
pub(crate) fn fly(
    flight: &Flight,
    s: &mut Stream,
    u0: f64,
    v0: f64,
    periods: Option<(f64, f64)>,
) -> (f64, f64, f64) {
    let r = flight.distance(s);
    let (cos, sin) = flight.direction(s);
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
mod tests {
    use super::*;

    /// Kolmogorov–Smirnov: the largest gap between the empirical CDF of `n` draws and
    /// 1 − mass_beyond must stay below 1.95/√n (the 0.1 % critical value: with fixed seeds the
    /// test is deterministic; a correct sampler fails one such check in a thousand seeds).
    fn assert_follows(k: &Kernel, mut draw: impl FnMut() -> f64, n: usize) {
        let mut r: Vec<f64> = (0..n).map(|_| draw()).collect();
        assert!(r.iter().all(|x| x.is_finite() && *x >= 0.0), "{k:?}");
        r.sort_by(f64::total_cmp);
        let mut d = 0.0f64;
        for (j, &x) in r.iter().enumerate() {
            let f = 1.0 - k.mass_beyond(x);
            d = d.max((f - j as f64 / n as f64).abs());
            d = d.max((f - (j + 1) as f64 / n as f64).abs());
        }
        assert!(d < 1.95 / (n as f64).sqrt(), "{k:?}: KS distance {d}");
    }

    /// Every kernel family, light and fat tails, θ below, at and above 2.
    fn test_kernels() -> Vec<Kernel> {
        vec![
            Kernel::Weibull {
                d: 1.32e-4,
                theta: 3.0,
            },
            Kernel::Weibull {
                d: 0.05,
                theta: 1.0,
            },
            Kernel::Weibull {
                d: 2e-3,
                theta: 2.2,
            },
            Kernel::Lognormal { x0: 15.0, xb: 0.6 },
            Kernel::TwoDt { u: 400.0, p: 1.0 },
            Kernel::TwoDt { u: 30.0, p: 2.5 },
        ]
    }

    /// The exact draws follow each kernel's radial law ([`assert_follows`]).
    #[test]
    fn distances_follow_each_kernels_radial_distribution() {
        let kernels = test_kernels();
        for (i, k) in kernels.iter().enumerate() {
            let mut s = Stream::new(11, 0, 0, i as u64, Purpose::SeedPlacement);
            assert_follows(k, || sample_distance(k, &mut s), 100_000);
        }
    }

    /// The tabulated flights follow the same distributions (KS as above), and the table's
    /// quantiles match the exact ones (bisection on mass_beyond) within 1e-6 of the median
    /// distance: a seed then lands in another cell than its exact draw's only when it falls
    /// within that distance of a cell edge (for a fir, 17 µm of a 1 m cell: < 4e-5 of seeds).
    #[test]
    fn tabulated_flights_match_the_exact_quantiles() {
        let kernels = test_kernels();
        for (i, k) in kernels.iter().enumerate() {
            let fl = Flight::new(k);
            // The median distance sets the scale.
            let scale = quantile(k, 0.5);
            for q in [
                1.2e-10,
                1e-9,
                1e-7,
                1e-5,
                1e-3,
                0.1,
                0.4999,
                0.5,
                0.9,
                0.999,
                0.99998,
                1.0 - 1e-7,
                1.0 - 1e-9,
                1.0 - 1.2e-10,
            ] {
                let exact = quantile(k, q);
                let got = fl.distance_at(q);
                // Far out in a fat tail, 1e-6 of the distance itself (still far below a cell's
                // share of it).
                assert!(
                    (got - exact).abs() <= 1e-6 * scale.max(exact),
                    "{k:?} quantile {q}: {got} vs {exact}"
                );
            }
            let n = 100_000;
            let mut s = Stream::new(12, 0, 0, i as u64, Purpose::SeedPlacement);
            assert_follows(k, || fl.distance(&mut s), n);
            // Directions: unit length to 1e-6 and uniform angles (mean of cos and sin ~ 0).
            let (mut sc, mut ss) = (0.0, 0.0);
            for _ in 0..n {
                let (c, sn) = fl.direction(&mut s);
                assert!(((c * c + sn * sn).sqrt() - 1.0).abs() < 1e-6);
                sc += c;
                ss += sn;
            }
            // Each mean has sd √(1/2n) ≈ 0.0022; within 5 sd.
            assert!((sc / n as f64).abs() < 0.012 && (ss / n as f64).abs() < 0.012);
        }
    }

    #[test]
    fn wrap_agrees_with_rem_euclid() {
        for &x in &[
            -250.5, -100.0, -99.999, -1e-300, 0.0, 3.5, 99.999, 100.0, 150.0, 350.25,
        ] {
            let (w, r) = (wrap(x, 100.0), f64::rem_euclid(x, 100.0));
            assert!((0.0..100.0).contains(&w), "{x} -> {w}");
            assert!(
                (w - r).abs() < 1e-12 || (r - 100.0).abs() < 1e-9,
                "{x}: {w} vs {r}"
            );
        }
    }

    #[test]
    fn random_rounding_keeps_the_mean() {
        let mut s = Stream::new(5, 0, 0, 0, Purpose::SeedCount);
        let n = 100_000;
        let total: u64 = (0..n).map(|_| random_round(2.3, &mut s)).sum();
        // Each draw is 2 or 3 with p = 0.3: sd of the total √(n·0.21) ≈ 145; within 5 sd.
        let dev = total as f64 - 2.3 * n as f64;
        assert!(dev.abs() < 5.0 * (n as f64 * 0.21).sqrt(), "{total}");
        assert_eq!(random_round(4.0, &mut s), 4);
        assert_eq!(random_round(-1.0, &mut s), 0);
        assert_eq!(random_round(f64::NAN, &mut s), 0);
    }
}

#[cfg(test)]
mod speed {
    use super::*;

    /// Seeds placed per second on this machine (not a check: `cargo test -- --ignored
    /// --nocapture seeds_per_second`).
    #[test]
    #[ignore]
    fn seeds_per_second() {
        let g = GridSpec::from_extent(
            geofield_core::Extent::new(0.0, 0.0, 1000.0, 500.0).unwrap(),
            1.0,
        )
        .unwrap();
        for sp in crate::synth::sbs_species() {
            let n = 100_000;
            let mut s = Stream::new(1, 0, 0, 0, Purpose::Growth);
            let stand = Stand::new(
                (0..n).map(|_| 1000.0 * s.uniform()).collect(),
                (0..n).map(|_| 500.0 * s.uniform()).collect(),
                vec![30.0; n],
                vec![0; n],
            )
            .unwrap();
            let t = std::time::Instant::now();
            let fl = Flight::new(&sp.kernel);
            let (_, shed) = place_seeds(&g, &sp, &fl, 0, &stand, true, 1, 0);
            let dt = t.elapsed().as_secs_f64();
            eprintln!(
                "{}: {shed} seeds in {dt:.3} s: {:.1} ns per seed on {} threads",
                sp.name,
                dt / shed as f64 * 1e9,
                rayon::current_num_threads()
            );
        }
    }
}
