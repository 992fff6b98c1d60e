//! CSR simulation envelopes: the pointwise envelope's defining property (an observed random
//! pattern falls outside [lo, hi] at a given r with probability 2·nrank/(nsim + 1), by
//! exchangeability), the envelope's order, determinism in the seed, and equality across
//! backends.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod backends;

use backends::{Rng, for_each_backend};
use geofield::Backend;
use geofield::neighbors::envelope::{Summary, csr_envelope};
use geofield::neighbors::pcf::Divisor;
use geofield::neighbors::ripley::{Correction, Window};
use rand_distr::{Distribution, Poisson};

const W: Window = Window {
    x0: 0.0,
    y0: 0.0,
    x1: 100.0,
    y1: 60.0,
};

/// A Poisson pattern of mean 80 points (as the envelope's own simulations).
fn poisson(seed: u64) -> Vec<f64> {
    let mut r = Rng::new(seed);
    let m = loop {
        let mut g = rand_pcg::Pcg64::new(u128::from(seed) + 7, 0xa02b_dbf7_bb3c_0a7a_c28f_a16a);
        let m = Poisson::new(80.0).unwrap().sample(&mut g) as usize;
        if m >= 2 {
            break m;
        }
    };
    (0..m)
        .flat_map(|_| [r.uniform(0.0, 100.0), r.uniform(0.0, 60.0)])
        .collect()
}

#[test]
fn a_random_pattern_leaves_the_envelope_at_the_stated_rate() {
    // nsim = 19, nrank = 1: P(outside at a given r) = 2/20 = 0.1 exactly (the observed and the
    // 19 simulated values are exchangeable; ties have probability 0). Over 150 independent
    // patterns at one r the count is Binomial(150, 0.1): mean 15, sd 3.7; 15 ± 12 is > 3 sd.
    let radii = [0.0, 4.0, 8.0];
    let mut outside = [0usize; 3];
    for s in 0..150 {
        let pts = poisson(1000 + s);
        for (k, summary) in [
            Summary::L,
            Summary::G {
                bw: None,
                divisor: Divisor::R,
            },
        ]
        .into_iter()
        .enumerate()
        {
            let e = csr_envelope(
                &Backend::Cpu,
                &pts,
                &W,
                &radii,
                Correction::Translate,
                summary,
                19,
                1,
                s,
            )
            .unwrap();
            assert!((e.alpha() - 0.1).abs() < 1e-15);
            let j = 2;
            if e.obs[j] < e.lo[j] || e.obs[j] > e.hi[j] {
                outside[k] += 1;
            }
            if k == 0 && s == 0 {
                for j in 1..3 {
                    assert!(e.lo[j] <= e.mean[j] && e.mean[j] <= e.hi[j]);
                    // the band holds the theory (L = r) for a pattern this size
                    assert!(e.lo[j] < e.theo[j] && e.theo[j] < e.hi[j], "{e:?}");
                }
            }
        }
    }
    for (k, &o) in outside.iter().take(2).enumerate() {
        assert!(
            (3..=27).contains(&o),
            "summary {k}: {o} of 150 outside (expected 15)"
        );
    }
}

#[test]
fn envelopes_are_deterministic_and_equal_on_every_backend() {
    let pts = poisson(7);
    let radii: Vec<f64> = (0..20).map(|k| 0.5 * f64::from(k)).collect();
    let cpu = csr_envelope(
        &Backend::Cpu,
        &pts,
        &W,
        &radii,
        Correction::Isotropic,
        Summary::K,
        39,
        2,
        42,
    )
    .unwrap();
    for_each_backend(|be| {
        let e = csr_envelope(
            be,
            &pts,
            &W,
            &radii,
            Correction::Isotropic,
            Summary::K,
            39,
            2,
            42,
        )
        .unwrap();
        // K's isotropic sums agree across backends to 1e-13 (the device's arc cosine).
        for (a, b) in cpu.lo.iter().zip(&e.lo).chain(cpu.hi.iter().zip(&e.hi)) {
            assert!((a - b).abs() <= 1e-12 * a.abs().max(1.0), "{a} vs {b}");
        }
    });
    let other = csr_envelope(
        &Backend::Cpu,
        &pts,
        &W,
        &radii,
        Correction::Isotropic,
        Summary::K,
        39,
        2,
        43,
    )
    .unwrap();
    assert_ne!(cpu.hi, other.hi, "another seed, other simulations");
    assert!(
        csr_envelope(
            &Backend::Cpu,
            &pts,
            &W,
            &radii,
            Correction::Border,
            Summary::K,
            9,
            4,
            1
        )
        .is_ok()
    );
    assert!(
        csr_envelope(
            &Backend::Cpu,
            &pts,
            &W,
            &radii,
            Correction::Border,
            Summary::K,
            9,
            5,
            1
        )
        .is_err(),
        "nrank > nsim / 2"
    );
    assert!(
        csr_envelope(
            &Backend::Cpu,
            &pts,
            &W,
            &radii,
            Correction::Border,
            Summary::K,
            0,
            1,
            1
        )
        .is_err()
    );
}
