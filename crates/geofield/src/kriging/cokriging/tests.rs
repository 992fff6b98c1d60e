//! Cokriging against a dense f64 solve of the textbook ordinary-cokriging system (Gaussian
//! elimination, the Lagrange rows written out), and its known reductions to kriging.
#![allow(clippy::needless_range_loop)]

use super::*;
use crate::Backend;
use crate::kriging::{KrigeParams, LagBin, Variogram};

fn lcg(seed: &mut u64) -> f64 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (*seed >> 11) as f64 / (1u64 << 53) as f64
}

/// 40 locations; the primary known at every third, the secondary at all but every fifth.
fn set(seed: u64) -> SampleSet {
    let mut s = seed;
    let n = 40;
    let (mut xs, mut ys, mut a, mut b) = (vec![], vec![], vec![], vec![]);
    for i in 0..n {
        let (x, y) = (1000.0 * lcg(&mut s) + 3e5, 1000.0 * lcg(&mut s) + 5e6);
        let common = (x / 180.0).sin() + (y / 250.0).cos();
        xs.push(x);
        ys.push(y);
        a.push(if i % 3 == 0 {
            common + 0.2 * lcg(&mut s)
        } else {
            f64::NAN
        });
        b.push(if i % 5 == 4 {
            f64::NAN
        } else {
            2.0 * common + 0.3 * lcg(&mut s)
        });
    }
    SampleSet::new(xs, ys, vec![a, b])
}

fn lmc() -> Lmc {
    Lmc {
        variables: 2,
        structures: vec![
            Structure::new(Model::Spherical, 1.0, 400.0),
            Structure::new(Model::Exponential, 1.0, 1500.0),
        ],
        nugget: vec![0.05, 0.02, 0.02, 0.1],
        sills: vec![vec![0.8, 1.2, 1.2, 2.5], vec![0.3, 0.1, 0.1, 0.6]],
    }
}

/// Ordinary cokriging of variable 0 at (x, y), written out: Σλ of the primary = 1, of the
/// secondary = 0; σ² = C₀₀(0) − λᵀc − μ₀.
fn oracle(s: &SampleSet, m: &Lmc, x: f64, y: f64) -> (f64, f64) {
    let mut e = vec![];
    for k in 0..2 {
        for i in 0..s.len() {
            if s.surfaces[k].values[i].is_finite() {
                e.push((k, i));
            }
        }
    }
    let n = e.len();
    let c = |k: usize, l: usize, h: f64| m.cov(k, l, h, h == 0.0);
    let mut a = vec![vec![0.0; n + 2]; n + 2];
    let mut b = vec![0.0; n + 2];
    for (r, &(k, i)) in e.iter().enumerate() {
        for (q, &(l, j)) in e.iter().enumerate() {
            a[r][q] = c(k, l, (s.xs[i] - s.xs[j]).hypot(s.ys[i] - s.ys[j]));
        }
        a[r][n + k] = 1.0;
        a[n + k][r] = 1.0;
        b[r] = c(k, 0, (s.xs[i] - x).hypot(s.ys[i] - y));
    }
    b[n] = 1.0;
    let w = crate::kriging::global::tests::solve(a, b.clone());
    let pred = e
        .iter()
        .zip(&w)
        .map(|(&(k, i), l)| l * s.surfaces[k].values[i])
        .sum();
    let var = c(0, 0, 0.0) - (0..n).map(|r| w[r] * b[r]).sum::<f64>() - w[n];
    (pred, var)
}

fn points() -> Target {
    Target::Points {
        xs: vec![3e5 + 10.0, 3e5 + 500.0, 3e5 + 990.0, 3e5 + 250.0],
        ys: vec![5e6 + 20.0, 5e6 + 480.0, 5e6 + 700.0, 5e6 + 900.0],
    }
}

#[test]
fn ordinary_cokriging_matches_the_dense_system() {
    let s = set(3);
    let p = CoParams {
        lmc: lmc(),
        kind: CoKind::Ordinary,
        anisotropy: None,
        variance: true,
        target: points(),
    };
    let k = cokrige(&s, &p).unwrap();
    assert_eq!(k.samples, vec![14, 32]);
    let Target::Points { xs, ys } = &p.target else {
        unreachable!()
    };
    for t in 0..xs.len() {
        let (pred, var) = oracle(&s, &p.lmc, xs[t], ys[t]);
        // Two backward-stable f64 solves of a system with condition ~1e4: ~1e-12 apart.
        assert!(
            (k.values[t] - pred).abs() < 1e-9,
            "{t}: {} vs {pred}",
            k.values[t]
        );
        assert!(
            (k.variance.as_ref().unwrap()[t] - var).abs() < 1e-9,
            "{t} var {var}"
        );
    }
    // Exact at a primary sample.
    let p0 = CoParams {
        target: Target::Points {
            xs: vec![s.xs[3]],
            ys: vec![s.ys[3]],
        },
        ..p
    };
    let k0 = cokrige(&s, &p0).unwrap();
    assert!((k0.values[0] - s.surfaces[0].values[3]).abs() < 1e-9);
    assert!(k0.variance.unwrap()[0].abs() < 1e-9);
}

/// Ordinary kriging of the primary alone, through the 2-D kriging path.
fn kriging_alone(s: &SampleSet, vg: Variogram, target: Target) -> (Vec<f64>, Vec<f64>) {
    let keep: Vec<usize> = (0..s.len())
        .filter(|&i| s.surfaces[0].values[i].is_finite())
        .collect();
    let one = SampleSet::new(
        keep.iter().map(|&i| s.xs[i]).collect(),
        keep.iter().map(|&i| s.ys[i]).collect(),
        vec![keep.iter().map(|&i| s.surfaces[0].values[i]).collect()],
    );
    let params = KrigeParams {
        variance: true,
        ..KrigeParams::new(vg, target)
    };
    let k = crate::kriging::krige(&Backend::Cpu, &one, &params).unwrap();
    let p = k.prediction;
    (p.values[0].clone(), p.variance.unwrap()[0].clone())
}

#[test]
fn uncorrelated_secondary_changes_nothing() {
    let s = set(5);
    let mut m = lmc();
    for b in m.sills.iter_mut().chain(std::iter::once(&mut m.nugget)) {
        b[1] = 0.0;
        b[2] = 0.0;
    }
    let p = CoParams {
        lmc: m.clone(),
        kind: CoKind::Ordinary,
        anisotropy: None,
        variance: true,
        target: points(),
    };
    let k = cokrige(&s, &p).unwrap();
    let vg = Variogram::nested(
        &[Model::Spherical, Model::Exponential],
        &[0.8, 0.3],
        &[400.0, 1500.0],
        0.05,
    )
    .unwrap();
    let (v, var) = kriging_alone(&s, vg, points());
    for t in 0..v.len() {
        assert!((k.values[t] - v[t]).abs() < 1e-9);
        assert!((k.variance.as_ref().unwrap()[t] - var[t]).abs() < 1e-9);
    }
}

#[test]
fn correlated_secondary_lowers_the_variance() {
    let s = set(7);
    let p = CoParams {
        lmc: lmc(),
        kind: CoKind::Ordinary,
        anisotropy: None,
        variance: true,
        target: points(),
    };
    let k = cokrige(&s, &p).unwrap();
    let vg = Variogram::nested(
        &[Model::Spherical, Model::Exponential],
        &[0.8, 0.3],
        &[400.0, 1500.0],
        0.05,
    )
    .unwrap();
    let (_, var) = kriging_alone(&s, vg, points());
    // Cokriging minimises the variance over a set of weights that includes kriging's.
    for t in 0..var.len() {
        assert!(k.variance.as_ref().unwrap()[t] <= var[t] + 1e-12);
    }
    assert!(k.variance.unwrap()[1] < 0.95 * var[1]);
}

#[test]
fn eigen_and_projection() {
    let a = [4.0, 1.0, 0.5, 1.0, 3.0, -2.0, 0.5, -2.0, -1.0];
    let (vals, v) = fit::eigen_sym(&a, 3);
    for r in 0..3 {
        for c in 0..3 {
            let back: f64 = (0..3).map(|e| vals[e] * v[r * 3 + e] * v[c * 3 + e]).sum();
            assert!((back - a[r * 3 + c]).abs() < 1e-12);
        }
    }
    let p = psd_projection(&a, 3);
    let (pv, _) = fit::eigen_sym(&p, 3);
    assert!(pv.iter().all(|&x| x > -1e-12));
    // A PSD matrix is left as it is.
    let b = [2.0, 1.0, 1.0, 2.0];
    let q = psd_projection(&b, 2);
    assert!(q.iter().zip(&b).all(|(x, y)| (x - y).abs() < 1e-12));
}

#[test]
fn fit_recovers_an_exact_model_and_bins_match_brute_force() {
    let m = lmc();
    // Bins carrying the model's exact γ: the weighted least squares recovers it.
    let bins: Vec<Vec<LagBin>> = fit::pair_order(2)
        .into_iter()
        .map(|(k, l)| {
            (1..=12)
                .map(|i| {
                    let h = 80.0 * i as f64;
                    LagBin {
                        lo: h - 40.0,
                        hi: h + 40.0,
                        distance: h,
                        gamma: m.gamma(k, l, h),
                        pairs: 10 + i as u64,
                    }
                })
                .collect()
        })
        .collect();
    let f = fit_lmc(&bins, 2, &m.structures, true).unwrap();
    for (a, b) in f
        .sills
        .iter()
        .flatten()
        .chain(&f.nugget)
        .zip(m.sills.iter().flatten().chain(&m.nugget))
    {
        assert!((a - b).abs() < 1e-8, "{a} vs {b}");
    }
    let s = set(9);
    let got = cross_bins(&s, None, 5, Some(600.0)).unwrap();
    let (k, l) = (0, 1);
    let mut cnt = [0u64; 5];
    let mut sum = [0.0; 5];
    for i in 0..s.len() {
        for j in i + 1..s.len() {
            let h = (s.xs[i] - s.xs[j]).hypot(s.ys[i] - s.ys[j]);
            let (a, b) = (
                s.surfaces[k].values[i] - s.surfaces[k].values[j],
                s.surfaces[l].values[i] - s.surfaces[l].values[j],
            );
            if h <= 600.0 && a.is_finite() && b.is_finite() {
                let bin = ((h / 120.0) as usize).min(4);
                cnt[bin] += 1;
                sum[bin] += a * b;
            }
        }
    }
    for b in 0..5 {
        assert_eq!(got[1][b].pairs, cnt[b]);
        if cnt[b] > 0 {
            assert!((got[1][b].gamma - sum[b] / (2.0 * cnt[b] as f64)).abs() < 1e-12);
        }
    }
}
