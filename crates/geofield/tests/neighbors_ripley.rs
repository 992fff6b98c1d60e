//! Ripley's K against independent oracles: numerical integration of the isotropic edge weight,
//! the estimators' definitions evaluated by brute force, and K's expectation under complete
//! spatial randomness.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use geofield::Backend;
use geofield::neighbors::ripley::{self, Correction, Window};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

/// The fraction of the circle of radius d about (x, y) inside the window, from m equally
/// spaced points on it (each crossing of an edge misplaces at most one point: error ≤ 8/m).
fn circle_fraction(w: &Window, x: f64, y: f64, d: f64, m: usize) -> f64 {
    let inside = (0..m)
        .filter(|&k| {
            let t = (k as f64 + 0.5) * std::f64::consts::TAU / m as f64;
            let (px, py) = (x + d * t.cos(), y + d * t.sin());
            px >= w.x0 && px <= w.x1 && py >= w.y0 && py <= w.y1
        })
        .count();
    inside as f64 / m as f64
}

#[test]
fn isotropic_weight_matches_numerical_integration() {
    let w = Window {
        x0: -1.0,
        y0: 2.0,
        x1: 3.0,
        y1: 4.5,
    };
    let mut rng = Pcg64::seed_from_u64(1);
    let m = 400_000;
    for _ in 0..300 {
        let x = rng.random_range(w.x0..=w.x1);
        let y = rng.random_range(w.y0..=w.y1);
        let d = rng.random_range(0.01..2.5);
        let frac = circle_fraction(&w, x, y, d, m);
        let got = ripley::isotropic_weight(&w, x, y, d);
        if frac > 0.02 {
            // |1/f − 1/f'| ≤ |f − f'| / (f·f'), with |f − f'| ≤ 8/m.
            let tol = 8.0 / m as f64 / (frac * (frac - 8.0 / m as f64)) + 1e-12;
            assert!(
                (got - 1.0 / frac).abs() <= tol,
                "({x}, {y}) d {d}: {got} vs {}",
                1.0 / frac
            );
        }
    }
    // On an edge half the circle is out, in a corner three quarters.
    assert!((ripley::isotropic_weight(&w, -1.0, 3.0, 0.5) - 2.0).abs() < 1e-12);
    assert!((ripley::isotropic_weight(&w, 3.0, 4.5, 0.5) - 4.0).abs() < 1e-12);
    assert_eq!(ripley::translate_weight(&w, 1.0, -0.5), 10.0 / (3.0 * 2.0));
}

/// K from its definition, by brute force over ordered pairs (the spatstat formulas, module
/// docs of `ripley`).
fn k_brute(pts: &[f64], w: &Window, radii: &[f64]) -> [Vec<f64>; 4] {
    let n = pts.len() / 2;
    let a = w.area();
    let mut out: [Vec<f64>; 4] = Default::default();
    for &r in radii {
        let (mut un, mut tr, mut iso, mut bnum, mut bden) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for i in 0..n {
            let (xi, yi) = (pts[2 * i], pts[2 * i + 1]);
            let b = (xi - w.x0).min(w.x1 - xi).min(yi - w.y0).min(w.y1 - yi);
            if b >= r {
                bden += 1.0;
            }
            for j in 0..n {
                if i == j {
                    continue;
                }
                let (dx, dy) = (pts[2 * j] - xi, pts[2 * j + 1] - yi);
                if dx * dx + dy * dy <= r * r {
                    un += 1.0;
                    tr += ripley::translate_weight(w, dx, dy);
                    iso += ripley::isotropic_weight(w, xi, yi, (dx * dx + dy * dy).sqrt());
                    if b >= r {
                        bnum += 1.0;
                    }
                }
            }
        }
        let s = a / (n * (n - 1)) as f64;
        out[0].push(un * s);
        out[1].push(if bden > 0.0 {
            bnum / (n as f64 / a * bden)
        } else {
            f64::NAN
        });
        out[2].push(tr * s);
        out[3].push(iso * s);
    }
    out
}

#[test]
fn ripley_k_matches_its_definition_and_csr() {
    let w = Window {
        x0: 10.0,
        y0: -5.0,
        x1: 60.0,
        y1: 25.0,
    };
    let all = [
        Correction::None,
        Correction::Border,
        Correction::Translate,
        Correction::Isotropic,
    ];
    let mut rng = Pcg64::seed_from_u64(42);
    let pts: Vec<f64> = (0..400)
        .flat_map(|_| [rng.random_range(w.x0..w.x1), rng.random_range(w.y0..w.y1)])
        .collect();
    let radii = ripley::default_radii(400, &w);
    assert_eq!(radii.len(), 513);
    assert!((radii[512] - 30.0 / 4.0).abs() < 1e-12); // the shorter side / 4 rules here
    let k = ripley::ripley_k(&Backend::Cpu, &pts, &w, &radii, &all).unwrap();
    let brute = k_brute(&pts, &w, &radii);
    for (got, want) in [&k.none, &k.border, &k.translate, &k.isotropic]
        .iter()
        .zip(&brute)
    {
        let got = got.as_ref().unwrap();
        for (g, v) in got.iter().zip(want) {
            // Brute force sums the weights in f64 (≤ 400² terms: relative error ≤ 1.6e5 ε);
            // the library's fixed-point sums err far less.
            assert!(
                (g - v).abs() <= 1e-10 * v.abs() || (g.is_nan() && v.is_nan()),
                "{g} vs {v}"
            );
        }
    }

    // Under complete spatial randomness E K(r) = πr² for the translation and isotropic
    // estimators (unbiased); over 40 patterns the mean is within 4 standard errors.
    let pats = 40;
    let r = [2.0, 4.0, 7.0];
    let mut ks = vec![Vec::new(); 2];
    for s in 0..pats {
        let mut rng = Pcg64::seed_from_u64(100 + s);
        let pts: Vec<f64> = (0..500)
            .flat_map(|_| [rng.random_range(w.x0..w.x1), rng.random_range(w.y0..w.y1)])
            .collect();
        let k = ripley::ripley_k(&Backend::Cpu, &pts, &w, &r, &all).unwrap();
        ks[0].push(k.translate.unwrap());
        ks[1].push(k.isotropic.unwrap());
    }
    for est in &ks {
        for (i, &ri) in r.iter().enumerate() {
            let v: Vec<f64> = est.iter().map(|k| k[i]).collect();
            let mean = v.iter().sum::<f64>() / pats as f64;
            let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (pats - 1) as f64).sqrt();
            let se = sd / (pats as f64).sqrt();
            let theo = std::f64::consts::PI * ri * ri;
            assert!(
                (mean - theo).abs() <= 4.0 * se,
                "r {ri}: mean {mean} vs {theo} (se {se})"
            );
        }
    }
}
