//! Per-seed dispersal against the expected map: over replicates, the mean count of every cell
//! is the exact method's density times the cell's area (the "agrees in distribution").
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use geofield::Backend;
use geofield::dispersal::{self, DisperseOptions, Eta, Kernel, Method, Precision, Species, Stand};
use geofield::forest::per_seed;

#[test]
fn per_seed_means_match_the_expected_map_within_their_standard_errors() {
    let g = geofield_core::GridSpec::from_extent(
        geofield_core::Extent::new(0.0, 0.0, 80.0, 60.0).unwrap(),
        1.0,
    )
    .unwrap();
    let species = vec![
        Species::new(
            "fir".into(),
            Kernel::Weibull {
                d: 1.32e-3,
                theta: 3.0,
            },
            2000.0,
            2.0,
            Eta::Analytic,
            15.0,
            None,
        )
        .unwrap(),
        Species::new(
            "aspen".into(),
            Kernel::TwoDt { u: 30.0, p: 1.5 },
            2000.0,
            2.0,
            Eta::Analytic,
            10.0,
            None,
        )
        .unwrap(),
    ];
    // 40 trees on and around the plot (some outside: their seeds land in it too), DBH 8-50 cm
    // (some below the minimum).
    let mut s =
        geofield::forest::rng::Stream::new(3, 0, 0, 0, geofield::forest::rng::Purpose::Growth);
    let n = 40;
    let (mut x, mut y, mut dbh, mut spc) = (vec![], vec![], vec![], vec![]);
    for i in 0..n {
        x.push(-10.0 + 100.0 * s.uniform());
        y.push(-10.0 + 80.0 * s.uniform());
        dbh.push(8.0 + 42.0 * s.uniform());
        spc.push((i % 2) as u32);
    }
    let stand = Stand::new(x, y, dbh, spc).unwrap();
    let expected = dispersal::disperse(
        &Backend::Cpu,
        &g,
        &species,
        &stand,
        &DisperseOptions {
            method: Method::Exact,
            precision: Precision::F64,
            ..Default::default()
        },
    )
    .unwrap();
    let reps = 100u64;
    for (b, sp) in species.iter().enumerate() {
        let want = expected.raster.band_f64(b); // seeds per m², cells of 1 m²
        let (mut sum, mut sum2) = (vec![0.0f64; g.n_cells()], vec![0.0f64; g.n_cells()]);
        let flight = per_seed::Flight::new(&sp.kernel);
        for rep in 0..reps {
            let (counts, _) =
                per_seed::place_seeds(&g, sp, &flight, b as u32, &stand, false, 1000 + rep, 0);
            for (i, &c) in counts.iter().enumerate() {
                sum[i] += f64::from(c);
                sum2[i] += f64::from(c) * f64::from(c);
            }
        }
        let r = reps as f64;
        let (mut tested, mut beyond) = (0usize, 0usize);
        for i in 0..g.n_cells() {
            // Cells expecting at least one seed a replicate: their mean over 100 replicates is
            // close to normal.
            if want[i] < 1.0 {
                continue;
            }
            let mean = sum[i] / r;
            let var = (sum2[i] - r * mean * mean) / (r - 1.0);
            let z = (mean - want[i]) / (var / r).sqrt();
            tested += 1;
            beyond += usize::from(z.abs() > 3.0);
        }
        // |z| > 3 happens to 0.3-0.4 % of cells by chance (a t with 99 degrees of freedom);
        // ≥ 1.5 % of ≥ 2000 cells would be over 5 standard deviations of that binomial.
        assert!(tested > 2000, "{}: {tested} cells tested", sp.name);
        let share = beyond as f64 / tested as f64;
        assert!(
            share < 0.015,
            "{}: {beyond} of {tested} cells beyond 3 SE",
            sp.name
        );
        // And the plot's total.
        let total_want: f64 = want.iter().sum();
        let total_mean = sum.iter().sum::<f64>() / r;
        // Its replicate spread is about Poisson: sd √total per replicate.
        let se = (total_want / r).sqrt();
        assert!(
            (total_mean - total_want).abs() < 4.0 * se,
            "{}: {total_mean} seeds per replicate, expected {total_want}",
            sp.name
        );
    }
}

/// The same counts for one thread and several (each tree draws from its own stream, the counts
/// are sums of integers), and on a torus every seed shed lands on the plot.
#[test]
fn counts_are_the_same_for_any_thread_count_and_the_torus_keeps_every_seed() {
    let g = geofield_core::GridSpec::from_extent(
        geofield_core::Extent::new(0.0, 0.0, 120.0, 90.0).unwrap(),
        1.0,
    )
    .unwrap();
    let sp = Species::new(
        "pine".into(),
        Kernel::Lognormal { x0: 15.0, xb: 0.6 },
        300.0,
        2.0,
        Eta::Analytic,
        10.0,
        None,
    )
    .unwrap();
    let mut s =
        geofield::forest::rng::Stream::new(9, 0, 0, 0, geofield::forest::rng::Purpose::Growth);
    let n = 200;
    let stand = Stand::new(
        (0..n).map(|_| 120.0 * s.uniform()).collect(),
        (0..n).map(|_| 90.0 * s.uniform()).collect(),
        (0..n).map(|_| 5.0 + 40.0 * s.uniform()).collect(),
        vec![0; n],
    )
    .unwrap();
    let fl = per_seed::Flight::new(&sp.kernel);
    let run = |threads: usize, torus: bool| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| per_seed::place_seeds(&g, &sp, &fl, 0, &stand, torus, 77, 5))
    };
    let (one, shed1) = run(1, true);
    let (four, shed4) = run(4, true);
    assert_eq!(one, four);
    assert_eq!(shed1, shed4);
    let landed: u64 = one.iter().map(|&c| u64::from(c)).sum();
    assert_eq!(landed, shed1, "a torus loses no seed");
    assert!(shed1 > 10_000);
    let (open, shed_open) = run(3, false);
    assert_eq!(shed_open, shed1, "the same trees shed the same seeds");
    let landed_open: u64 = open.iter().map(|&c| u64::from(c)).sum();
    assert!(
        landed_open < shed_open,
        "an open plot loses the seeds that leave it"
    );
}
