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
        for rep in 0..reps {
            let (counts, _) = per_seed::place_seeds(&g, sp, b as u32, &stand, false, 1000 + rep, 0);
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
