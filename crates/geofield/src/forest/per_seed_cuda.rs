//! [`super::per_seed::place`] on the CUDA backend: the host draws each parent's seed count with
//! the CPU's own [`random_round`] on the parent's stream, and `geofield_cuda::forest` places
//! every seed on the device, one thread per seed, bit for bit as the CPU does (see the
//! [`per_seed`](super::per_seed) module docs).

use geofield_core::GridSpec;
use geofield_cuda::Gpu;
use geofield_cuda::forest::{FlightTables, PlotGrid, SeedParents, StreamKey};
use rayon::prelude::*;

use super::per_seed::{DIRECTIONS, Flight, Parent, random_round};
use super::rng::{MAX_ID, Purpose, Stream};
use crate::GeofieldError;

// The directions' table is split by the draw's top 12 bits on both sides.
const _: () = assert!(DIRECTIONS == geofield_cuda::forest::DIRECTIONS);

/// The parents that shed seeds this year, as the kernel takes them: positions, stream ids and
/// the exclusive prefix offsets of their seed counts (plus the total).
struct Shedding {
    x_m: Vec<f64>,
    y_m: Vec<f64>,
    id: Vec<u64>,
    offsets: Vec<u64>,
}

impl Shedding {
    /// Each parent's count n_i = `random_round(mean seeds)` on its stream (u32 #0 and #1, as
    /// the CPU draws it); parents shedding none are left out.
    fn new(parents: &[Parent], species: u8, seed: u64, year: u32) -> Result<Self, GeofieldError> {
        let n: Vec<u64> = parents
            .par_iter()
            .map(|p| {
                if p.mean_seeds.is_nan() || p.mean_seeds <= 0.0 {
                    return 0;
                }
                let mut s = Stream::new(seed, year, species, p.id, Purpose::SeedPlacement);
                random_round(p.mean_seeds, &mut s)
            })
            .collect();
        let shedding = n.iter().filter(|&&k| k > 0).count();
        let mut out = Shedding {
            x_m: Vec::with_capacity(shedding),
            y_m: Vec::with_capacity(shedding),
            id: Vec::with_capacity(shedding),
            offsets: Vec::with_capacity(shedding + 1),
        };
        let mut total = 0u64;
        out.offsets.push(0);
        for (p, &k) in parents.iter().zip(&n).filter(|&(_, &k)| k > 0) {
            total = total.checked_add(k).ok_or_else(|| {
                GeofieldError::Invalid(format!(
                    "seed placement: the parents shed more than {} seeds in a year",
                    u64::MAX
                ))
            })?;
            out.x_m.push(p.x_m);
            out.y_m.push(p.y_m);
            out.id.push(p.id & MAX_ID);
            out.offsets.push(total);
        }
        Ok(out)
    }

    fn total(&self) -> u64 {
        self.offsets.last().copied().unwrap_or(0)
    }

    fn view(&self) -> SeedParents<'_> {
        SeedParents {
            x_m: &self.x_m,
            y_m: &self.y_m,
            id: &self.id,
            offsets: &self.offsets,
        }
    }
}

fn tables(flight: &Flight) -> FlightTables<'_> {
    let (near, far, inv_step, dir) = flight.tables();
    FlightTables {
        near,
        far,
        inv_step,
        dir,
    }
}

fn plot(grid: &GridSpec, torus: bool) -> PlotGrid {
    PlotGrid {
        x_min_m: grid.x_min_m,
        y_max_m: grid.y_max_m,
        cell_size_m: grid.cell_size_m,
        cols: grid.cols,
        rows: grid.rows,
        width_m: grid.width_m(),
        height_m: grid.height_m(),
        torus,
    }
}

fn key(seed: u64, year: u32, species: u8) -> StreamKey {
    StreamKey {
        seed,
        year,
        species,
        purpose: Purpose::SeedPlacement as u8,
    }
}

/// [`super::per_seed::place`] on `gpu`: the same counts added to `counts` (bit for bit) and the
/// same seeds shed.
#[allow(clippy::too_many_arguments)]
pub(crate) fn place_cuda(
    gpu: &Gpu,
    grid: &GridSpec,
    flight: &Flight,
    parents: &[Parent],
    species: u8,
    torus: bool,
    seed: u64,
    year: u32,
    counts: &mut [u32],
) -> Result<u64, GeofieldError> {
    let shedding = Shedding::new(parents, species, seed, year)?;
    geofield_cuda::forest::place_seeds(
        gpu,
        &tables(flight),
        &shedding.view(),
        &plot(grid, torus),
        key(seed, year, species),
        counts,
    )?;
    Ok(shedding.total())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::super::per_seed::{fly, grid_relative, place};
    use super::*;
    use crate::Backend;
    use crate::dispersal::Kernel;

    fn kernels() -> [Kernel; 3] {
        [
            Kernel::Weibull {
                d: 1.32e-4,
                theta: 3.0,
            },
            Kernel::Lognormal { x0: 15.0, xb: 0.6 },
            Kernel::TwoDt { u: 400.0, p: 1.0 },
        ]
    }

    fn grid() -> GridSpec {
        GridSpec::from_extent(
            geofield_core::Extent::new(-20.0, 10.0, 60.0, 70.0).unwrap(),
            0.5,
        )
        .unwrap()
    }

    /// 60 parents in and around the plot, a few shedding nothing, ids beyond 32 bits.
    fn parents() -> Vec<Parent> {
        let mut s = Stream::new(9, 0, 0, 0, Purpose::Growth);
        (0..60u64)
            .map(|i| Parent {
                x_m: -40.0 + 120.0 * s.uniform(),
                y_m: -10.0 + 100.0 * s.uniform(),
                mean_seeds: match i % 15 {
                    0 => 0.0,
                    7 => f64::NAN,
                    _ => 1500.0 * s.uniform(),
                },
                id: if i % 4 == 0 { i + (3 << 40) } else { i },
            })
            .collect()
    }

    /// The host's counts and offsets shed what the CPU sheds.
    #[test]
    fn shedding_totals_the_cpus_seeds() {
        let (g, ps) = (grid(), parents());
        let fl = Flight::new(&kernels()[0]);
        let mut counts = vec![0u32; g.n_cells()];
        let shed = place(&Backend::Cpu, &g, &fl, &ps, 2, false, 5, 3, &mut counts).unwrap();
        let sh = Shedding::new(&ps, 2, 5, 3).unwrap();
        assert_eq!(sh.total(), shed);
        assert!(sh.x_m.len() < ps.len() && sh.offsets.windows(2).all(|w| w[0] < w[1]));
        assert!(sh.id.iter().any(|&i| i > u64::from(u32::MAX)));
    }

    /// On a GPU: every seed's distance and landing position have the CPU's bits (seed by seed,
    /// not only the counts), and the counts are the CPU's.
    #[test]
    fn every_seed_lands_where_the_cpu_puts_it() {
        let Some(gpu) = geofield_cuda::test_gpu() else {
            return;
        };
        let (g, ps) = (grid(), parents());
        let (species, seed, year) = (3u8, 0xDEAD_BEEF_0123_4567u64, 12u32);
        for k in kernels() {
            let fl = Flight::new(&k);
            for torus in [false, true] {
                let sh = Shedding::new(&ps, species, seed, year).unwrap();
                let mut gpu_counts = vec![0u32; g.n_cells()];
                let rec = geofield_cuda::forest::seed_positions(
                    &gpu,
                    &tables(&fl),
                    &sh.view(),
                    &plot(&g, torus),
                    key(seed, year, species),
                    &mut gpu_counts,
                )
                .unwrap();
                assert_eq!(rec.len() as u64, sh.total());
                let periods = torus.then(|| (g.width_m(), g.height_m()));
                let mut at = 0usize;
                for p in &ps {
                    if p.mean_seeds.is_nan() || p.mean_seeds <= 0.0 {
                        continue;
                    }
                    let mut s = Stream::new(seed, year, species, p.id, Purpose::SeedPlacement);
                    let n = random_round(p.mean_seeds, &mut s);
                    let (u0, v0) = grid_relative(&g, p);
                    for j in 0..n {
                        let (r, u, v) = fly(&fl, &mut s, u0, v0, periods);
                        let [gr, gu, gv] = rec[at];
                        assert!(
                            r.to_bits() == gr.to_bits()
                                && u.to_bits() == gu.to_bits()
                                && v.to_bits() == gv.to_bits(),
                            "{k:?} torus {torus}, parent {}, seed {j}: CPU ({r:e}, {u:e}, \
                             {v:e}), GPU ({gr:e}, {gu:e}, {gv:e})",
                            p.id
                        );
                        at += 1;
                    }
                }
                assert_eq!(at, rec.len());
                let mut cpu_counts = vec![0u32; g.n_cells()];
                place(
                    &Backend::Cpu,
                    &g,
                    &fl,
                    &ps,
                    species,
                    torus,
                    seed,
                    year,
                    &mut cpu_counts,
                )
                .unwrap();
                assert!(
                    cpu_counts == gpu_counts,
                    "{k:?} torus {torus}: counts differ"
                );
            }
        }
    }
}
