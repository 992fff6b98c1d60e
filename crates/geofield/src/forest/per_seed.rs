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

use geofield_core::GridSpec;

use super::rng::Stream;
use crate::dispersal::{Species, Stand};
use crate::{Backend, GeofieldError};

mod flight;
pub(crate) use flight::{DIRECTIONS, TABLE};
pub use flight::{Flight, quantile, sample_distance};

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

mod batched;
use batched::place_cpu;

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
