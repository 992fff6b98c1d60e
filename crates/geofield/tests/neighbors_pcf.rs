//! The pair-correlation function against a brute-force f64 oracle (every ordered pair, the
//! kernel sum written out, no cell list), its mean under complete spatial randomness, and
//! refusals. spatstat's `pcf` itself is compared in `python/tests/test_spatstat.py`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod backends;

use backends::Rng;
use geofield::neighbors::pcf::{Divisor, pair_correlation};
use geofield::neighbors::ripley::{Correction, Window, isotropic_weight, translate_weight};

const W: Window = Window {
    x0: 0.0,
    y0: 0.0,
    x1: 100.0,
    y1: 60.0,
};

fn clustered(seed: u64) -> Vec<f64> {
    let mut r = Rng::new(seed);
    let mut out = vec![];
    for _ in 0..25 {
        let (cx, cy) = (r.uniform(0.0, 100.0), r.uniform(0.0, 60.0));
        for _ in 0..8 {
            let (x, y) = (cx + 3.0 * r.normal(), cy + 3.0 * r.normal());
            if x > 0.0 && x < 100.0 && y > 0.0 && y < 60.0 {
                out.extend([x, y]);
            }
        }
    }
    out
}

/// g(r) written out over every ordered pair.
fn oracle(pts: &[f64], radii: &[f64], h: f64, corr: Correction, by_d: bool) -> Vec<f64> {
    let n = pts.len() / 2;
    let lam2 = (n * (n - 1)) as f64 / W.area();
    radii
        .iter()
        .map(|&r| {
            let mut s = 0.0;
            for i in 0..n {
                for j in 0..n {
                    if i == j {
                        continue;
                    }
                    let (dx, dy) = (pts[2 * j] - pts[2 * i], pts[2 * j + 1] - pts[2 * i + 1]);
                    let d = (dx * dx + dy * dy).sqrt();
                    let u = (r - d) / h;
                    if u.abs() >= 1.0 {
                        continue;
                    }
                    let e = match corr {
                        Correction::Translate => translate_weight(&W, dx, dy),
                        Correction::Isotropic => {
                            isotropic_weight(&W, pts[2 * i], pts[2 * i + 1], d)
                        }
                        _ => 1.0,
                    };
                    let k = 0.75 / h * (1.0 - u * u);
                    s += if by_d { e * k / d } else { e * k };
                }
            }
            let den = 2.0 * std::f64::consts::PI * lam2;
            if by_d { s / den } else { s / (den * r) }
        })
        .collect()
}

#[test]
fn pcf_equals_the_brute_force_sum() {
    let pts = clustered(4);
    let radii: Vec<f64> = (1..=60).map(|k| 0.25 * k as f64).collect();
    let cs = [
        Correction::None,
        Correction::Translate,
        Correction::Isotropic,
    ];
    for (div, by_d) in [(Divisor::R, false), (Divisor::D, true)] {
        let g = pair_correlation(&pts, &W, &radii, &cs, Some(0.4), div).unwrap();
        assert!((g.half_width - 0.4 * 5f64.sqrt()).abs() < 1e-15);
        for (c, v) in g.columns() {
            let want = oracle(&pts, &radii, g.half_width, c, by_d);
            for (k, (a, b)) in v.iter().zip(&want).enumerate() {
                // Same f64 terms summed in another order: ~1e-15 relative.
                assert!(
                    (a - b).abs() <= 1e-12 * b.abs().max(1e-3),
                    "{c:?} {div:?} r = {}: {a} vs {b}",
                    radii[k]
                );
            }
        }
        // Clustered at the clusters' scale (sd 3 m): g well above 1 at 2 m.
        let iso = g.isotropic.as_ref().unwrap();
        assert!(iso[7] > 2.0, "g_iso(2) = {}", iso[7]);
    }
}

#[test]
fn pcf_of_random_patterns_averages_one() {
    // Poisson patterns of 400 points: the translation-corrected estimate is ratio-unbiased, so
    // over 40 patterns the mean at r = 3..8 m is 1 within its sampling error. The standard error
    // of one estimate there is ~0.1 (Stoyan and Stoyan's variance approximation,
    // 1/(2πr·h·λ²|W|) ≈ 0.01 at r = 5), of the mean of 40 about 0.016; 0.06 is > 3.5 of them.
    let radii: Vec<f64> = (3..=8).map(f64::from).collect();
    let mut mean = vec![0.0; radii.len()];
    let reps = 40;
    for s in 0..reps {
        let mut r = Rng::new(100 + s);
        let pts: Vec<f64> = (0..400)
            .flat_map(|_| [r.uniform(0.0, 100.0), r.uniform(0.0, 60.0)])
            .collect();
        let g =
            pair_correlation(&pts, &W, &radii, &[Correction::Translate], None, Divisor::R).unwrap();
        for (m, v) in mean.iter_mut().zip(g.translate.unwrap()) {
            *m += v / reps as f64;
        }
    }
    for (r, m) in radii.iter().zip(&mean) {
        assert!((m - 1.0).abs() < 0.06, "mean g({r}) = {m}");
    }
}

#[test]
fn pcf_refusals_and_defaults() {
    let pts = clustered(5);
    let radii = [0.0, 1.0, 2.0];
    let g = pair_correlation(&pts, &W, &radii, &[Correction::None], None, Divisor::R).unwrap();
    // spatstat's default bandwidth: h = 0.15 / sqrt(lambda), bw = h / sqrt(5).
    let lambda = (pts.len() / 2) as f64 / W.area();
    assert!((g.half_width - 0.15 / lambda.sqrt()).abs() < 1e-12);
    assert!(g.none.as_ref().unwrap()[0].is_nan(), "g(0) with divisor r");
    assert!(pair_correlation(&pts, &W, &radii, &[Correction::Border], None, Divisor::R).is_err());
    assert!(
        pair_correlation(
            &pts,
            &W,
            &radii,
            &[Correction::None],
            Some(-1.0),
            Divisor::R
        )
        .is_err()
    );
    assert!(
        pair_correlation(&pts, &W, &[2.0, 1.0], &[Correction::None], None, Divisor::R).is_err()
    );
    let outside = [1.0, 1.0, 200.0, 5.0];
    assert!(pair_correlation(&outside, &W, &radii, &[Correction::None], None, Divisor::R).is_err());
}
