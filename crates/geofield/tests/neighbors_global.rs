//! Global CSR envelopes and the MAD and DCLF tests: the band's shape (constant width about its
//! centre), the global test's rejection rate under randomness, the tests' p-values under
//! randomness and for a clustered pattern, the global envelope and MAD test agreeing, and the
//! refusals. The exact agreement with spatstat is python/tests/test_spatstat.py's.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::needless_range_loop
)]

mod backends;

use backends::{Rng, for_each_backend};
use geofield::Backend;
use geofield::neighbors::envelope::{Curves, Summary, csr_pattern, simulate_curves};
use geofield::neighbors::global::{Reference, Statistic};
use geofield::neighbors::pcf::Divisor;
use geofield::neighbors::ripley::{Correction, Window};
use rand_distr::{Distribution, Poisson};

const W: Window = Window {
    x0: 0.0,
    y0: 0.0,
    x1: 100.0,
    y1: 60.0,
};
const RADII: [f64; 6] = [0.0, 2.0, 4.0, 6.0, 8.0, 10.0];

/// A Poisson pattern of mean 60 points.
fn poisson(seed: u64) -> Vec<f64> {
    let mut r = Rng::new(seed);
    let mut g = rand_pcg::Pcg64::new(u128::from(seed) + 11, 0xa02b_dbf7_bb3c_0a7a_c28f_a16a);
    let m = (Poisson::new(60.0).unwrap().sample(&mut g) as usize).max(2);
    (0..m)
        .flat_map(|_| [r.uniform(0.0, 100.0), r.uniform(0.0, 60.0)])
        .collect()
}

/// 60 points in 6 clumps of radius 1.5.
fn clumps() -> Vec<f64> {
    (0..60)
        .flat_map(|i| {
            let (c, t) = (i / 10, f64::from(i % 10) * 0.628);
            let (cx, cy) = (
                15.0 + 30.0 * f64::from(c % 3),
                15.0 + 30.0 * f64::from(c / 3),
            );
            [cx + 1.5 * t.cos(), cy + 1.5 * t.sin()]
        })
        .collect()
}

fn curves(pts: &[f64], summary: Summary, count: usize, seed: u64) -> Curves {
    simulate_curves(
        &Backend::Cpu,
        pts,
        &W,
        &RADII,
        Correction::Translate,
        summary,
        count,
        seed,
    )
    .unwrap()
}

#[test]
fn the_global_band_has_a_constant_width_about_its_centre() {
    let pts = poisson(3);
    let c = curves(&pts, Summary::K, 78, 9);
    for reference in [Reference::Theory, Reference::Mean] {
        let e = c.global(39, 2, Some((2.0, 8.0)), reference).unwrap();
        let g = e.global.as_ref().unwrap();
        assert_eq!(g.interval, (2.0, 8.0));
        assert!((e.alpha() - 2.0 / 40.0).abs() < 1e-15);
        let centre = match reference {
            Reference::Theory => e.theo.clone(),
            Reference::Mean => (0..6)
                .map(|k| c.sims[39..78].iter().map(|v| v[k]).sum::<f64>() / 39.0)
                .collect(),
        };
        // the width is the 2nd largest of the simulations' largest deviations over r in [2, 8]
        let mut sup: Vec<f64> = c.sims[..39]
            .iter()
            .map(|v| (1..5).map(|k| (v[k] - centre[k]).abs()).fold(0.0, f64::max))
            .collect();
        sup.sort_by(|a, b| b.total_cmp(a));
        assert_eq!(g.width, sup[1]);
        assert!(sup[1] > 0.0);
        for k in 0..6 {
            if k == 0 || k == 5 {
                assert!(e.lo[k].is_nan() && e.hi[k].is_nan(), "outside the interval");
                continue;
            }
            assert!((g.centre[k] - centre[k]).abs() <= 1e-9 * centre[k].abs());
            assert!(((e.hi[k] - e.lo[k]) - 2.0 * g.width).abs() <= 1e-9 * g.width);
            assert!(e.lo[k] < g.centre[k] && g.centre[k] < e.hi[k]);
        }
        // exactly nrank - 1 = 1 simulation leaves the band somewhere (no ties)
        let leave = c.sims[..39]
            .iter()
            .filter(|v| (1..5).any(|k| (v[k] - g.centre[k]).abs() > g.width * (1.0 + 1e-12)))
            .count();
        assert_eq!(leave, 1, "{reference:?}");
    }
    // the mean reference needs its own nsim patterns
    assert!(c.global(40, 1, None, Reference::Mean).is_err());
    assert!(c.global(78, 1, None, Reference::Theory).is_ok());
}

#[test]
fn a_random_pattern_leaves_the_global_band_at_the_stated_rate() {
    // nsim = 19, nrank = 1: the observed curve leaves the global band (anywhere in the interval)
    // with probability 1/20 when it is exchangeable with the simulations (ties have probability
    // 0). The simulations' intensity is the pattern's own, so exchangeability is approximate
    // (the test is conservative if anything). Over 200 patterns the count is about
    // Binomial(200, 0.05): mean 10, sd 3.1; 0..=22 is the mean + 3.9 sd (and a rate of 0.15,
    // count 30, fails it). The global test is the MAD test against the theory: rejection
    // exactly when the MAD p-value is 1/20, checked pattern by pattern.
    let mut out = [0usize; 2];
    for s in 0..200 {
        let pts = poisson(5000 + s);
        for (j, summary) in [Summary::L, Summary::K].into_iter().enumerate() {
            let c = curves(&pts, summary, 19, s);
            let e = c.global(19, 1, None, Reference::Theory).unwrap();
            assert!((e.alpha() - 0.05).abs() < 1e-15);
            let leaves = (0..6).any(|k| e.obs[k] < e.lo[k] || e.obs[k] > e.hi[k]);
            let mad = c
                .deviation_test(Statistic::Mad, 19, None, Reference::Theory)
                .unwrap();
            assert_eq!(leaves, mad.rank == 1, "seed {s}: {mad:?}");
            out[j] += usize::from(leaves);
        }
    }
    for o in out {
        assert!(o <= 22, "{o} of 200 random patterns rejected (expected 10)");
    }
    // and not never: P(count = 0) = 0.95^200 = 3.5e-5 per summary
    assert!(out.iter().all(|&o| o > 0), "{out:?}");
}

#[test]
fn deviation_test_p_values_are_uniform_under_randomness() {
    // With nsim = 19, p = rank / 20 is uniform on {1/20, ..., 20/20} for an exchangeable
    // pattern: mean 0.525, sd 0.288. Over 150 patterns the mean p has sd 0.0235: 0.525 ± 0.1
    // is > 4 sd. The share with p <= 0.25 is about Binomial(150, 0.25)/150: 0.25 ± 0.035 sd;
    // 0.25 ± 0.15 is > 4 sd.
    for (statistic, reference) in [
        (Statistic::Mad, Reference::Theory),
        (Statistic::Dclf, Reference::Theory),
        (Statistic::Mad, Reference::Mean),
        (Statistic::Dclf, Reference::Mean),
    ] {
        let (mut sum, mut low) = (0.0, 0usize);
        for s in 0..150 {
            let c = curves(&poisson(9000 + s), Summary::L, 19, s);
            let t = c.deviation_test(statistic, 19, None, reference).unwrap();
            assert_eq!(t.simulated.len(), 19);
            // ties happen: at r = 2 some small patterns have no pair (L = 0), and the largest
            // deviation |0 - 2| of two such curves is the same; they count against the pattern
            assert!((t.p_value - t.rank as f64 / 20.0).abs() < 1e-15 && (1..=20).contains(&t.rank));
            sum += t.p_value;
            low += usize::from(t.p_value <= 0.25);
        }
        let mean = sum / 150.0;
        let share = low as f64 / 150.0;
        assert!(
            (mean - 0.525).abs() < 0.1,
            "{statistic:?} {reference:?}: mean p {mean}"
        );
        assert!(
            (share - 0.25).abs() < 0.15,
            "{statistic:?} {reference:?}: {share}"
        );
    }
}

#[test]
fn a_clustered_pattern_gets_the_smallest_p_value() {
    let pts = clumps();
    for summary in [
        Summary::K,
        Summary::L,
        Summary::G {
            bw: None,
            divisor: Divisor::R,
        },
    ] {
        let c = curves(&pts, summary, 78, 1);
        for reference in [Reference::Theory, Reference::Mean] {
            for statistic in [Statistic::Mad, Statistic::Dclf] {
                let t = c.deviation_test(statistic, 39, None, reference).unwrap();
                assert_eq!(
                    (t.rank, t.ties),
                    (1, 0),
                    "{summary:?} {statistic:?} {reference:?}"
                );
                assert_eq!(t.p_value, 1.0 / 40.0);
                if matches!(summary, Summary::G { .. }) {
                    // g(0) is undefined with divisor r: the interval starts at the next radius
                    assert_eq!(t.interval, (2.0, 10.0));
                } else {
                    assert_eq!(t.interval, (0.0, 10.0));
                }
            }
            let e = c.global(39, 1, None, reference).unwrap();
            assert!(
                (0..6).any(|k| e.obs[k] > e.hi[k]),
                "{summary:?} {reference:?}"
            );
        }
    }
}

#[test]
fn the_dclf_statistic_is_the_interval_length_times_the_mean_squared_deviation() {
    let c = curves(&clumps(), Summary::L, 19, 4);
    let t = c
        .deviation_test(Statistic::Dclf, 19, Some((2.0, 8.0)), Reference::Theory)
        .unwrap();
    let want = 6.0 * (1..5).map(|k| (c.obs[k] - RADII[k]).powi(2)).sum::<f64>() / 4.0;
    assert!(
        (t.observed - want).abs() <= 1e-12 * want,
        "{} vs {want}",
        t.observed
    );
    // leave-one-out with the mean: the deviation from the mean of the simulations and the
    // observed curve, times (nsim + 1) / nsim
    let t = c
        .deviation_test(Statistic::Mad, 19, Some((4.0, 4.0)), Reference::Mean)
        .unwrap();
    let m = (c.sims.iter().map(|v| v[2]).sum::<f64>() + c.obs[2]) / 20.0;
    let want = (c.obs[2] - m).abs() * 20.0 / 19.0;
    assert!((t.observed - want).abs() <= 1e-12 * want);
}

#[test]
fn envelopes_are_the_same_on_every_backend_and_patterns_are_reproducible() {
    let pts = poisson(1);
    let cpu = curves(&pts, Summary::K, 20, 2)
        .global(20, 1, None, Reference::Theory)
        .unwrap();
    for_each_backend(|be| {
        let e = simulate_curves(
            be,
            &pts,
            &W,
            &RADII,
            Correction::Translate,
            Summary::K,
            20,
            2,
        )
        .unwrap()
        .global(20, 1, None, Reference::Theory)
        .unwrap();
        let (a, b) = (cpu.global.as_ref().unwrap().width, e.global.unwrap().width);
        assert!((a - b).abs() <= 1e-12 * a, "{a} vs {b}");
    });
    // simulation s's curve is the summary of csr_pattern(.., s)
    let n = pts.len() / 2;
    let c = curves(&pts, Summary::K, 3, 2);
    let p = csr_pattern(&W, n, 2, 1).unwrap();
    let one = curves(&p, Summary::K, 1, 0);
    assert_eq!(one.obs, c.sims[1]);
}

#[test]
fn bad_input_is_refused() {
    let c = curves(&poisson(2), Summary::K, 10, 0);
    let t = |n, iv| c.deviation_test(Statistic::Mad, n, iv, Reference::Theory);
    assert!(t(0, None).is_err(), "nsim = 0");
    assert!(t(11, None).is_err(), "more than simulated");
    assert!(t(10, Some((-1.0, 5.0))).is_err(), "below the radii");
    assert!(t(10, Some((5.0, 11.0))).is_err(), "above the radii");
    assert!(t(10, Some((5.0, 3.0))).is_err(), "reversed");
    assert!(t(10, Some((4.5, 5.5))).is_err(), "no radius inside");
    assert!(t(10, Some((f64::NAN, 5.0))).is_err());
    assert!(t(10, Some((4.0, 4.0))).is_ok(), "one radius");
    assert!(c.global(10, 6, None, Reference::Theory).is_err(), "nrank");
    assert!(c.global(0, 1, None, Reference::Theory).is_err(), "nsim");
    assert!(
        c.global(6, 1, None, Reference::Mean).is_err(),
        "2 nsim needed"
    );
    let e = c.global(10, 5, None, Reference::Theory).unwrap();
    assert!(e.lo.iter().all(|x| x.is_finite()));
}
