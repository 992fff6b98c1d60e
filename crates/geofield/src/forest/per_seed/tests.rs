use super::batched::{Mode, Simd, place_batched, power_of_two_recip};
use super::*;
use crate::dispersal::Kernel;
use crate::forest::rng::Purpose;
use rayon::prelude::*;
use std::sync::atomic::{AtomicU32, Ordering};

/// The scalar [`place_cpu`] as it was before batching (one rayon task per parent, one
/// atomic add per seed): the reference the batched paths must match bit for bit.
#[allow(clippy::too_many_arguments)]
fn place_cpu_reference(
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

/// The batched placement (scalar and AVX2, per-thread and atomic counts) gives the
/// reference's counts and seeds shed, bit for bit: every kernel family, torus and open plot,
/// parents inside and outside the grid, fractional, zero, negative and NaN means, counts
/// that start non-zero, cells of 1 m and of 2.5 m on an offset grid.
#[test]
fn batched_placement_matches_the_scalar_reference() {
    let grids = [
        GridSpec::from_extent(
            geofield_core::Extent::new(0.0, 0.0, 300.0, 200.0).unwrap(),
            1.0,
        )
        .unwrap(),
        GridSpec::from_extent(
            geofield_core::Extent::new(-13.3, 7.1, 186.7, 157.1).unwrap(),
            2.5,
        )
        .unwrap(),
        GridSpec::from_extent(
            geofield_core::Extent::new(3.3, -1.7, 103.3, 78.3).unwrap(),
            0.5,
        )
        .unwrap(),
    ];
    let mut modes = vec![];
    for simd in Simd::available() {
        for private in [false, true] {
            modes.push(Mode {
                simd,
                private: Some(private),
            });
        }
    }
    let mut s = Stream::new(21, 0, 0, 0, Purpose::Growth);
    for (gi, g) in grids.iter().enumerate() {
        let (w, h) = (g.width_m(), g.height_m());
        let parents: Vec<Parent> = (0..400u64)
            .map(|i| Parent {
                x_m: g.x_min_m - 20.0 + (w + 40.0) * s.uniform(),
                y_m: g.y_min_m() - 20.0 + (h + 40.0) * s.uniform(),
                mean_seeds: match i % 50 {
                    0 => 0.0,
                    1 => -3.0,
                    2 => f64::NAN,
                    3 => 0.4,
                    4 => 1.5,
                    5 => 2.0,
                    _ => 300.0 * s.uniform(),
                },
                id: 1000 * i + 7,
            })
            .collect();
        let start: Vec<u32> = (0..g.n_cells()).map(|i| (i % 3) as u32).collect();
        for (ki, k) in test_kernels().iter().enumerate() {
            let fl = Flight::new(k);
            for torus in [true, false] {
                let (seed, year, species) = (0xABCD_0000 + ki as u64, 3 + gi as u32, 2);
                let mut want = start.clone();
                let shed_want =
                    place_cpu_reference(g, &fl, &parents, species, torus, seed, year, &mut want);
                assert!(shed_want > 10_000);
                for &mode in &modes {
                    let mut got = start.clone();
                    let shed =
                        place_batched(g, &fl, &parents, species, torus, seed, year, &mut got, mode);
                    assert_eq!(shed, shed_want, "{k:?} torus {torus} {mode:?}");
                    assert!(got == want, "{k:?} torus {torus} {mode:?}: counts differ");
                }
                let mut got = start.clone();
                place_cpu(g, &fl, &parents, species, torus, seed, year, &mut got);
                assert!(got == want, "{k:?} torus {torus}: place_cpu differs");
            }
        }
    }
}

#[test]
fn only_powers_of_two_have_an_exact_reciprocal() {
    for h in [1.0, 0.5, 2.0, 0.25, 1024.0] {
        assert_eq!(power_of_two_recip(h), Some(1.0 / h));
    }
    for h in [3.0, 2.5, 0.1, 0.0, -1.0, f64::NAN, f64::INFINITY, f64::MAX] {
        assert_eq!(power_of_two_recip(h), None, "{h}");
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
