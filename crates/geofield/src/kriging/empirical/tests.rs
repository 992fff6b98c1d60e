#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::needless_range_loop
)]

use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, StandardNormal};
use rand_pcg::Pcg64;

use super::*;

fn cloud(n: usize, seed: u64) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let mut r = Pcg64::seed_from_u64(seed);
    let xs: Vec<f64> = (0..n).map(|_| r.random::<f64>() * 1000.0).collect();
    let ys: Vec<f64> = (0..n).map(|_| r.random::<f64>() * 600.0).collect();
    let zs: Vec<f64> = (0..n).map(|_| r.random::<f64>() * 5.0 - 2.0).collect();
    (xs, ys, zs)
}

#[test]
fn estimators_equal_a_direct_computation() {
    let (xs, ys, zs) = cloud(300, 1);
    let spec = LagSpec {
        lags: 12,
        max_lag: Some(400.0),
        direction: None,
    };
    for est in [Estimator::Matheron, Estimator::CressieHawkins] {
        let bins = empirical(&xs, &ys, &zs, &spec, est).unwrap();
        assert_eq!(bins.len(), 12);
        let mut n = [0u64; 12];
        let mut sq = [0.0; 12];
        let mut rt = [0.0; 12];
        let mut hs = [0.0; 12];
        for i in 0..300 {
            for j in 0..300 {
                if j <= i {
                    continue;
                }
                let h = ((xs[i] - xs[j]).powi(2) + (ys[i] - ys[j]).powi(2)).sqrt();
                if h > 400.0 {
                    continue;
                }
                let b = ((h / (400.0 / 12.0)) as usize).min(11);
                let d = zs[i] - zs[j];
                n[b] += 1;
                sq[b] += d * d;
                rt[b] += d.abs().sqrt();
                hs[b] += h;
            }
        }
        for b in 0..12 {
            assert_eq!(bins[b].pairs, n[b]);
            let nf = n[b] as f64;
            let want = match est {
                Estimator::Matheron => sq[b] / (2.0 * nf),
                Estimator::CressieHawkins => {
                    (rt[b] / nf).powi(4) / (2.0 * (0.457 + 0.494 / nf + 0.045 / (nf * nf)))
                }
            };
            assert!(
                (bins[b].gamma - want).abs() <= 1e-12 * want,
                "{est:?} bin {b}"
            );
            assert!((bins[b].distance - hs[b] / nf).abs() <= 1e-9);
            assert!(bins[b].lo <= bins[b].distance && bins[b].distance <= bins[b].hi);
        }
    }
}

#[test]
fn a_direction_keeps_only_pairs_along_it() {
    // z = x on a lattice: north-south pairs have equal values, east-west ones differ by h.
    let (mut xs, mut ys, mut zs) = (vec![], vec![], vec![]);
    for i in 0..20 {
        for j in 0..20 {
            xs.push(f64::from(i) * 10.0);
            ys.push(f64::from(j) * 10.0);
            zs.push(f64::from(i) * 10.0);
        }
    }
    let spec = |az| LagSpec {
        lags: 5,
        max_lag: Some(55.0),
        direction: Some((az, 10.0)),
    };
    let north = empirical(&xs, &ys, &zs, &spec(0.0), Estimator::Matheron).unwrap();
    let south = empirical(&xs, &ys, &zs, &spec(180.0), Estimator::Matheron).unwrap();
    let east = empirical(&xs, &ys, &zs, &spec(90.0), Estimator::Matheron).unwrap();
    for b in north.iter().filter(|b| b.pairs > 0) {
        assert_eq!(b.gamma, 0.0);
    }
    assert_eq!(north, south);
    for b in east.iter().filter(|b| b.pairs > 0) {
        assert!(
            (b.gamma - b.distance * b.distance / 2.0).abs() < 1e-9,
            "{b:?}"
        );
    }
    assert!(east.iter().map(|b| b.pairs).sum::<u64>() > 0);
}

fn exact_bins(v: &Variogram, hmax: f64) -> Vec<LagBin> {
    (0..20)
        .map(|k| {
            let h = (f64::from(k) + 0.5) * hmax / 20.0;
            LagBin {
                lo: h - 1.0,
                hi: h + 1.0,
                distance: h,
                gamma: v.gamma(h),
                pairs: 50 + 10 * k as u64,
            }
        })
        .collect()
}

#[test]
fn fitting_exact_model_values_recovers_the_parameters() {
    for (model, sill, range, nugget) in [
        (Model::Exponential, 1.3, 250.0, 0.2),
        (Model::Spherical, 4.0, 180.0, 0.0),
        (Model::Gaussian, 0.7, 300.0, 0.05),
        (Model::Matern { nu: 1.5 }, 2.0, 220.0, 0.1),
        (Model::Power { exponent: 1.3 }, 0.01, 1.0, 0.3),
    ] {
        let truth = Variogram::new(model, sill, range, nugget).unwrap();
        let f = fit(model, &exact_bins(&truth, 500.0), true).unwrap();
        let s = f.variogram.structures[0];
        let what = format!("{model:?}: {}", f.variogram);
        assert!(
            (f.variogram.nugget - nugget).abs() < 1e-6 * (1.0 + sill),
            "{what}"
        );
        assert!((s.sill - sill).abs() < 1e-6 * sill, "{what}");
        match (model, s.model) {
            (Model::Power { exponent }, Model::Power { exponent: got }) => {
                assert!((got - exponent).abs() < 1e-6, "{what}");
            }
            (Model::Power { .. }, _) => panic!("{what}: not a power model"),
            _ => assert!((s.range - range).abs() < 1e-6 * range, "{what}"),
        }
        assert!(f.wrss < 1e-12, "{what}: wrss {}", f.wrss);
    }
    // Without a nugget the fit keeps it at 0.
    let truth = Variogram::new(Model::Exponential, 1.0, 100.0, 0.0).unwrap();
    let f = fit(Model::Exponential, &exact_bins(&truth, 300.0), false).unwrap();
    assert_eq!(f.variogram.nugget, 0.0);
    assert!((f.variogram.structures[0].range - 100.0).abs() < 1e-4);
}

/// A Gaussian random field with a known exponential covariance at 600 random points (Cholesky
/// of the covariance), 6 realisations pooled: the fit lands near the truth.
#[test]
fn fitting_a_simulated_field_recovers_the_model() {
    let n = 600;
    let (xs, ys, _) = cloud(n, 7);
    let truth = Variogram::new(Model::Exponential, 1.0, 300.0, 0.0).unwrap();
    let mut l = vec![0.0f64; n * n];
    for i in 0..n {
        for j in 0..=i {
            let h = (xs[i] - xs[j]).hypot(ys[i] - ys[j]);
            let mut s = truth.covariance(h).unwrap() + if i == j { 1e-10 } else { 0.0 };
            for k in 0..j {
                s -= l[i * n + k] * l[j * n + k];
            }
            l[i * n + j] = if i == j { s.sqrt() } else { s / l[j * n + j] };
        }
    }
    let spec = LagSpec {
        lags: 15,
        max_lag: Some(600.0),
        direction: None,
    };
    let mut r = Pcg64::seed_from_u64(11);
    let mut pooled: Option<Vec<LagBin>> = None;
    let reps = 6;
    for _ in 0..reps {
        let e: Vec<f64> = (0..n).map(|_| StandardNormal.sample(&mut r)).collect();
        let z: Vec<f64> = (0..n)
            .map(|i| (0..=i).map(|k| l[i * n + k] * e[k]).sum())
            .collect();
        let bins = empirical(&xs, &ys, &z, &spec, Estimator::Matheron).unwrap();
        pooled = Some(match pooled {
            None => bins,
            Some(mut p) => {
                for (a, b) in p.iter_mut().zip(&bins) {
                    a.gamma += b.gamma;
                }
                p
            }
        });
    }
    let mut pooled = pooled.unwrap();
    for b in &mut pooled {
        b.gamma /= f64::from(reps);
    }
    let f = fit(Model::Exponential, &pooled, true).unwrap();
    let s = f.variogram.structures[0];
    let total = s.sill + f.variogram.nugget;
    assert!((total - 1.0).abs() < 0.3, "{}", f.variogram);
    assert!((s.range - 300.0).abs() < 0.4 * 300.0, "{}", f.variogram);
}

#[test]
fn bad_input_is_a_clear_error() {
    let (xs, ys, zs) = cloud(10, 3);
    let spec = LagSpec::default();
    let m = Estimator::Matheron;
    let err = |r: Result<Vec<LagBin>, GeofieldError>| r.unwrap_err().to_string();
    assert!(err(empirical(&xs[..9], &ys, &zs, &spec, m)).contains("lengths differ"));
    assert!(err(empirical(&xs[..1], &ys[..1], &zs[..1], &spec, m)).contains("at least 2"));
    let mut bad = zs.clone();
    bad[4] = f64::NAN;
    assert!(err(empirical(&xs, &ys, &bad, &spec, m)).contains("sample 4"));
    let zero = LagSpec { lags: 0, ..spec };
    assert!(err(empirical(&xs, &ys, &zs, &zero, m)).contains("lags"));
    let neg = LagSpec {
        max_lag: Some(-1.0),
        ..spec
    };
    assert!(err(empirical(&xs, &ys, &zs, &neg, m)).contains("max lag"));
    let dir = LagSpec {
        direction: Some((10.0, 0.0)),
        ..spec
    };
    assert!(err(empirical(&xs, &ys, &zs, &dir, m)).contains("tolerance"));
    let same = vec![1.0; 10];
    assert!(err(empirical(&same, &same, &zs, &spec, m)).contains("one location"));
    let bins = empirical(&xs, &ys, &zs, &LagSpec { lags: 2, ..spec }, m).unwrap();
    assert!(fit(Model::Exponential, &bins[..1], true).is_err());
}

#[test]
fn surfaces_share_bins_and_pool_by_pairs() {
    use crate::kriging::{SampleSet, pool, surface_bins};
    let xs: Vec<f64> = (0..30).map(|i| (i * 37 % 101) as f64 * 10.0).collect();
    let ys: Vec<f64> = (0..30).map(|i| (i * 53 % 97) as f64 * 10.0).collect();
    let a: Vec<f64> = (0..30).map(|i| ((i * 7) % 5) as f64).collect();
    // The second surface is missing at the far corner samples: its own bounding box is smaller,
    // yet its bins must be the set's.
    let b: Vec<f64> = (0..30)
        .map(|i| {
            if xs[i] > 800.0 {
                f64::NAN
            } else {
                ((i * 3) % 4) as f64
            }
        })
        .collect();
    let set = SampleSet::new(xs, ys, vec![a, b]);
    let spec = LagSpec::default();
    let bins = surface_bins(&set, &spec, Estimator::Matheron).unwrap();
    assert_eq!(bins[0].len(), bins[1].len());
    for (p, q) in bins[0].iter().zip(&bins[1]) {
        assert_eq!((p.lo, p.hi), (q.lo, q.hi));
    }
    let pooled = pool(&bins);
    let mut any = false;
    for (k, p) in pooled.iter().enumerate() {
        let (x, y) = (&bins[0][k], &bins[1][k]);
        assert_eq!(p.pairs, x.pairs + y.pairs);
        if p.pairs > 0 {
            let g = |v: &LagBin| {
                if v.pairs > 0 {
                    v.gamma * v.pairs as f64
                } else {
                    0.0
                }
            };
            let want = (g(x) + g(y)) / p.pairs as f64;
            assert!((p.gamma - want).abs() <= 1e-12 * want.abs().max(1.0));
            any |= x.pairs > 0 && y.pairs > 0;
        } else {
            assert!(p.gamma.is_nan());
        }
    }
    assert!(any);
}

#[test]
fn a_fitted_range_far_beyond_the_largest_lag_warns() {
    let bins: Vec<LagBin> = (0..10)
        .map(|i| LagBin {
            lo: 10.0 * i as f64,
            hi: 10.0 * (i + 1) as f64,
            distance: 10.0 * i as f64 + 5.0,
            gamma: 1.0,
            pairs: 10,
        })
        .collect();
    let fit = |range: f64| Fit {
        variogram: Variogram::new(Model::Exponential, 1.0, range, 0.0).unwrap(),
        wrss: 0.0,
    };
    // Largest lag 100 m: a range of 2x that is the limit.
    assert!(fit(150.0).warnings(&bins).is_empty());
    assert!(fit(200.0).warnings(&bins).is_empty());
    let w = fit(500.0).warnings(&bins);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("5.0x the largest lag"), "{w:?}");
    // Unbounded models have no range to check.
    let power = Fit {
        variogram: Variogram::new(Model::Power { exponent: 1.5 }, 1.0, 1e6, 0.0).unwrap(),
        wrss: 0.0,
    };
    assert!(power.warnings(&bins).is_empty());
}
