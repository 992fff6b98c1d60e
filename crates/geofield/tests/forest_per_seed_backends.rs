//! Per-seed placement on every backend against the CPU: for three kernel families (Weibull
//! θ = 3, lognormal, Clark's 2Dt with its fat tail), on an open plot and on a torus, ~200
//! parents and over a million seeds in all, the counts `place` adds on each backend equal the
//! CPU's bit for bit, and so do the seeds shed. On the CPU the comparison is with itself; what
//! the CPU run checks is the bookkeeping (counts add to what was there, a torus keeps every
//! seed, an open plot loses some).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use geofield::Backend;
use geofield::dispersal::Kernel;
use geofield::forest::per_seed::{Flight, Parent, place};
use geofield_core::{Extent, GridSpec};

mod backends;

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

/// 160 x 120 cells of 0.75 m (a cell size that is not a power of two, an origin off zero).
fn grid() -> GridSpec {
    GridSpec::from_extent(Extent::new(-13.25, 4.5, 106.75, 94.5).unwrap(), 0.75).unwrap()
}

/// 200 parents on and around the plot: about 2,500 seeds each on average, a few shedding
/// none (zero or NaN mean), ids with bits above 32, one far outside the plot.
fn parents(rng: &mut backends::Rng) -> Vec<Parent> {
    let mut v: Vec<Parent> = (0..200u64)
        .map(|i| Parent {
            x_m: rng.uniform(-40.0, 130.0),
            y_m: rng.uniform(-20.0, 120.0),
            mean_seeds: match i % 50 {
                0 => 0.0,
                25 => f64::NAN,
                _ => rng.uniform(0.0, 5000.0),
            },
            id: if i % 3 == 0 {
                i | (0x1234 << 32)
            } else {
                i * 7
            },
        })
        .collect();
    v[10].x_m = 2500.0;
    v
}

#[test]
fn per_seed_counts_equal_the_cpus_on_every_backend() {
    let g = grid();
    let mut rng = backends::Rng::new(17);
    let ps = parents(&mut rng);
    // Counts are added to what the caller's buffer holds.
    let base: Vec<u32> = (0..g.n_cells()).map(|i| (i % 7) as u32).collect();
    let base_sum: u64 = base.iter().map(|&c| u64::from(c)).sum();
    let cases: Vec<(Kernel, Flight, bool)> = kernels()
        .into_iter()
        .flat_map(|k| {
            let fl = Flight::new(&k);
            [(k, fl.clone(), false), (k, fl, true)]
        })
        .collect();
    let (species, seed, year) = (2u8, 0x5EED_0000_0000_0042u64, 7u32);
    // The CPU oracle, once per case.
    let oracle: Vec<(Vec<u32>, u64)> = cases
        .iter()
        .map(|(_, fl, torus)| {
            let mut c = base.clone();
            let shed = place(
                &Backend::Cpu,
                &g,
                fl,
                &ps,
                species,
                *torus,
                seed,
                year,
                &mut c,
            )
            .unwrap();
            (c, shed)
        })
        .collect();
    let all: u64 = oracle.iter().map(|(_, s)| s).sum();
    assert!(all > 1_000_000, "only {all} seeds");
    eprintln!("{all} seeds over {} cases", cases.len());
    backends::for_each_backend(|be| {
        for ((k, fl, torus), (want, want_shed)) in cases.iter().zip(&oracle) {
            let mut c = base.clone();
            let shed = place(be, &g, fl, &ps, species, *torus, seed, year, &mut c).unwrap();
            assert_eq!(shed, *want_shed, "{k:?} torus {torus}: seeds shed");
            let landed: u64 = c.iter().map(|&x| u64::from(x)).sum::<u64>() - base_sum;
            if *torus {
                assert_eq!(landed, shed, "{k:?}: a torus keeps every seed");
            } else {
                assert!(
                    landed > shed / 4 && landed < shed,
                    "{k:?}: {landed} of {shed}"
                );
            }
            let differ = c.iter().zip(want).filter(|(a, b)| a != b).count();
            assert!(
                differ == 0,
                "{k:?} torus {torus} on {}: {differ} cells differ from the CPU's",
                be.label()
            );
        }
    });
}

/// No parent, or none shedding, places nothing on any backend; a counts buffer of the wrong
/// length is an error.
#[test]
fn nothing_to_shed_and_bad_lengths() {
    let g = grid();
    let fl = Flight::new(&kernels()[0]);
    let idle = [Parent {
        x_m: 1.0,
        y_m: 50.0,
        mean_seeds: 0.0,
        id: 3,
    }];
    backends::for_each_backend(|be| {
        for ps in [&[][..], &idle[..]] {
            let mut c = vec![5u32; g.n_cells()];
            assert_eq!(place(be, &g, &fl, ps, 0, true, 1, 0, &mut c).unwrap(), 0);
            assert!(c.iter().all(|&x| x == 5));
        }
        let mut short = vec![0u32; g.n_cells() - 1];
        assert!(place(be, &g, &fl, &idle, 0, true, 1, 0, &mut short).is_err());
    });
}
