#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::needless_range_loop,
    clippy::cloned_ref_to_slice_refs
)]

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

use super::*;
use crate::kriging::{Drift, Model};

/// Gaussian elimination with partial pivoting (the independent reference).
pub(crate) fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Vec<f64> {
    let n = b.len();
    for c in 0..n {
        let p = (c..n)
            .max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs()))
            .unwrap();
        a.swap(c, p);
        b.swap(c, p);
        for r in c + 1..n {
            let f = a[r][c] / a[c][c];
            for k in c..n {
                a[r][k] -= f * a[c][k];
            }
            b[r] -= f * b[c];
        }
    }
    let mut x = vec![0.0; n];
    for r in (0..n).rev() {
        let s: f64 = (r + 1..n).map(|k| a[r][k] * x[k]).sum();
        x[r] = (b[r] - s) / a[r][r];
    }
    x
}

/// The textbook per-node system (note §1, covariance form): weights, prediction, variance.
pub(crate) fn reference(
    xs: &[f64],
    ys: &[f64],
    z: &[f64],
    v: &Variogram,
    kind: Kind,
    x0: f64,
    y0: f64,
) -> (f64, f64) {
    let n = xs.len();
    // Covariance form; for a variogram without a sill C = −γ, which turns the bordered system
    // into the variogram form (same weights, σ² = λᵀγ₀ + m).
    let c0 = if v.is_bounded() { v.sill() } else { 0.0 };
    let cov = |h: f64| if h == 0.0 { c0 } else { c0 - v.gamma(h) };
    let k: Vec<f64> = (0..n)
        .map(|i| cov((xs[i] - x0).hypot(ys[i] - y0)))
        .collect();
    // Drift functions on world coordinates with their own (arbitrary) centring and scale:
    // the span, hence the kriging, does not depend on them.
    let p = kind.drift_terms();
    let f = |x: f64, y: f64| {
        let (u, v) = ((x - xs[0] - 30.0) / 700.0, (y - ys[0] + 20.0) / 700.0);
        [1.0, u, v, u * u, u * v, v * v][..p].to_vec()
    };
    match kind {
        Kind::Ordinary | Kind::Universal { .. } => {
            let mut a = vec![vec![0.0; n + p]; n + p];
            for i in 0..n {
                for j in 0..n {
                    a[i][j] = cov((xs[i] - xs[j]).hypot(ys[i] - ys[j]));
                }
                let fi = f(xs[i], ys[i]);
                for l in 0..p {
                    a[i][n + l] = fi[l];
                    a[n + l][i] = fi[l];
                }
            }
            let mut b = k.clone();
            b.extend(f(x0, y0));
            let w = solve(a, b.clone());
            let pred = (0..n).map(|i| w[i] * z[i]).sum();
            let var = c0 - (0..n + p).map(|i| w[i] * b[i]).sum::<f64>();
            (pred, var)
        }
        Kind::Simple { mean } => {
            let a: Vec<Vec<f64>> = (0..n)
                .map(|i| {
                    (0..n)
                        .map(|j| cov((xs[i] - xs[j]).hypot(ys[i] - ys[j])))
                        .collect()
                })
                .collect();
            let w = solve(a, k.clone());
            let pred = mean + (0..n).map(|i| w[i] * (z[i] - mean)).sum::<f64>();
            let var = c0 - (0..n).map(|i| w[i] * k[i]).sum::<f64>();
            (pred, var)
        }
    }
}

pub(crate) fn wells(
    n: usize,
    seed: u64,
    offset: (f64, f64),
) -> (Vec<f64>, Vec<f64>, Vec<Vec<f64>>) {
    let mut r = Pcg64::seed_from_u64(seed);
    let xs: Vec<f64> = (0..n)
        .map(|_| offset.0 + r.random::<f64>() * 1000.0)
        .collect();
    let ys: Vec<f64> = (0..n)
        .map(|_| offset.1 + r.random::<f64>() * 1800.0)
        .collect();
    let z = (0..3)
        .map(|h| {
            (0..n)
                .map(|i| 100.0 - 20.0 * h as f64 + (xs[i] / 150.0).sin() * 5.0 + r.random::<f64>())
                .collect()
        })
        .collect();
    (xs, ys, z)
}

#[test]
fn dual_kriging_equals_the_per_node_system() {
    // UTM-sized coordinates: centring keeps f64 accurate.
    let (xs, ys, z) = wells(40, 1, (5.0e5, 7.8e6));
    for (v, kind) in [
        (
            Variogram::new(Model::Exponential, 400.0, 800.0, 0.0).unwrap(),
            Kind::Ordinary,
        ),
        (
            Variogram::new(Model::Spherical, 30.0, 600.0, 2.0).unwrap(),
            Kind::Ordinary,
        ),
        (
            Variogram::new(Model::Gaussian, 10.0, 900.0, 0.5).unwrap(),
            Kind::Simple { mean: 80.0 },
        ),
        (
            Variogram::new(Model::Matern { nu: 1.5 }, 5.0, 700.0, 0.1).unwrap(),
            Kind::Ordinary,
        ),
        (
            Variogram::new(Model::Exponential, 30.0, 900.0, 1.0).unwrap(),
            Kind::Universal {
                drift: Drift::Linear,
            },
        ),
        (
            Variogram::new(Model::Cubic, 30.0, 500.0, 0.5).unwrap(),
            Kind::Ordinary,
        ),
        (
            Variogram::new(Model::Exponential, 30.0, 500.0, 0.5).unwrap(),
            Kind::Universal {
                drift: Drift::Quadratic,
            },
        ),
        (
            Variogram::new(Model::Power { exponent: 1.5 }, 0.01, 1.0, 0.2).unwrap(),
            Kind::Ordinary,
        ),
        (
            Variogram::new(Model::Linear, 0.05, 1.0, 0.0).unwrap(),
            Kind::Universal {
                drift: Drift::Linear,
            },
        ),
        (
            Variogram::new(Model::Cubic, 30.0, 500.0, 0.5).unwrap(),
            Kind::Universal {
                drift: Drift::Quadratic,
            },
        ),
    ] {
        let g = GlobalKriging::new(&xs, &ys, &z, &v, kind).unwrap();
        let mut r = Pcg64::seed_from_u64(9);
        let qx: Vec<f64> = (0..30)
            .map(|_| 5.0e5 - 100.0 + r.random::<f64>() * 1200.0)
            .collect();
        let qy: Vec<f64> = (0..30)
            .map(|_| 7.8e6 - 100.0 + r.random::<f64>() * 2000.0)
            .collect();
        let (pred, var) = g.predict(&qx, &qy, true);
        let var = var.unwrap();
        for p in 0..30 {
            for h in 0..3 {
                let (want, want_v) = reference(&xs, &ys, &z[h], &v, kind, qx[p], qy[p]);
                let what = format!("{v} {kind:?} node {p} surface {h}");
                assert!(
                    (pred[h][p] - want).abs() <= 1e-9 * want.abs().max(1.0),
                    "{what}: {} vs {want}",
                    pred[h][p]
                );
                let scale = if v.is_bounded() {
                    v.sill()
                } else {
                    want_v.abs().max(1.0)
                };
                assert!(
                    (var[p] - want_v).abs() <= 1e-9 * scale,
                    "{what}: var {} vs {want_v}",
                    var[p]
                );
            }
        }
    }
}

#[test]
fn exact_at_the_samples_even_with_a_nugget() {
    let (xs, ys, z) = wells(25, 2, (0.0, 0.0));
    let v = Variogram::new(Model::Exponential, 4.0, 500.0, 1.0).unwrap();
    for kind in [Kind::Ordinary, Kind::Simple { mean: 90.0 }] {
        let g = GlobalKriging::new(&xs, &ys, &z, &v, kind).unwrap();
        let (pred, var) = g.predict(&xs, &ys, true);
        for i in 0..25 {
            for h in 0..3 {
                assert!((pred[h][i] - z[h][i]).abs() < 1e-9, "{kind:?} sample {i}");
            }
            assert!(
                var.as_ref().unwrap()[i] < 1e-9,
                "{kind:?} variance at sample {i}"
            );
        }
        // Away from the samples the nugget shows in the variance.
        let (_, v2) = g.predict(&[5000.0], &[5000.0], true);
        assert!(v2.unwrap()[0] > 1.0);
    }
}

#[test]
fn duplicates_are_merged_and_a_singular_system_names_the_pair() {
    let xs = vec![0.0, 100.0, 100.0, 250.0, 400.0];
    let ys = vec![0.0, 50.0, 50.0, 300.0, 10.0];
    let z = vec![vec![1.0, 2.0, 4.0, 3.0, 5.0]];
    let v = Variogram::new(Model::Exponential, 1.0, 300.0, 0.0).unwrap();
    let g = GlobalKriging::new(&xs, &ys, &z, &v, Kind::Ordinary).unwrap();
    assert_eq!(g.merged, vec![vec![1, 2]]);
    assert_eq!(g.samples(), 4);
    let (pred, _) = g.predict(&[100.0], &[50.0], false);
    assert!(
        (pred[0][0] - 3.0).abs() < 1e-12,
        "the merged sample holds the mean"
    );
    // Near-duplicates with a Gaussian model and no nugget: numerically singular.
    let xs = vec![0.0, 1e-7, 500.0, 900.0];
    let ys = vec![0.0, 0.0, 200.0, 40.0];
    let z = vec![vec![1.0, 1.5, 2.0, 0.0]];
    let v = Variogram::new(Model::Gaussian, 1.0, 2000.0, 0.0).unwrap();
    let e = GlobalKriging::new(&xs, &ys, &z, &v, Kind::Ordinary)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("sample 0 and sample 1") && e.contains("nugget"),
        "{e}"
    );
}

#[test]
fn bad_input_is_refused() {
    let v = Variogram::new(Model::Exponential, 1.0, 300.0, 0.0).unwrap();
    let z = vec![vec![1.0, 2.0]];
    assert!(GlobalKriging::new(&[0.0], &[0.0], &[vec![1.0]], &v, Kind::Ordinary).is_err());
    assert!(GlobalKriging::new(&[0.0, 1.0], &[0.0], &z, &v, Kind::Ordinary).is_err());
    assert!(GlobalKriging::new(&[0.0, f64::NAN], &[0.0, 1.0], &z, &v, Kind::Ordinary).is_err());
    let e = GlobalKriging::new(
        &[0.0, 1.0],
        &[0.0, 1.0],
        &[vec![1.0, f64::NAN]],
        &v,
        Kind::Ordinary,
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("sample 1") && e.contains("surface 1"), "{e}");
    let p = Variogram::new(Model::Linear, 1.0, 1.0, 0.0).unwrap();
    let e = GlobalKriging::new(&[0.0, 1.0], &[0.0, 1.0], &z, &p, Kind::Simple { mean: 0.0 })
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("sill"), "{e}");
    // Linear drift on collinear samples.
    let e = GlobalKriging::new(
        &[0.0, 1.0, 2.0, 3.0],
        &[0.0, 2.0, 4.0, 6.0],
        &[vec![1.0, 2.0, 3.0, 5.0]],
        &v,
        Kind::Universal {
            drift: Drift::Linear,
        },
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("line"), "{e}");
    // Too few samples for a quadratic drift.
    assert!(
        GlobalKriging::new(
            &[0.0, 1.0, 2.0],
            &[0.0, 2.0, 1.0],
            &[vec![1.0, 2.0, 3.0]],
            &v,
            Kind::Universal {
                drift: Drift::Quadratic
            },
        )
        .is_err()
    );
    assert!(
        GlobalKriging::new(
            &[0.0, 1.0],
            &[0.0, 1.0],
            &z,
            &v,
            Kind::Simple { mean: f64::NAN }
        )
        .is_err()
    );
}

#[test]
fn closed_form_leave_one_out_equals_refitting_without_each_sample() {
    let (xs, ys, z) = wells(30, 5, (3.0e5, 4.1e6));
    for (v, kind) in [
        (
            Variogram::new(Model::Exponential, 20.0, 700.0, 0.5).unwrap(),
            Kind::Ordinary,
        ),
        (
            Variogram::new(Model::Spherical, 15.0, 900.0, 0.0).unwrap(),
            Kind::Simple { mean: 75.0 },
        ),
        (
            Variogram::new(Model::Gaussian, 15.0, 900.0, 0.3).unwrap(),
            Kind::Universal {
                drift: Drift::Linear,
            },
        ),
    ] {
        let g = GlobalKriging::new(&xs, &ys, &z, &v, kind).unwrap();
        let cv = g.cross_validate();
        for i in 0..30 {
            let keep: Vec<usize> = (0..30).filter(|&j| j != i).collect();
            let sx: Vec<f64> = keep.iter().map(|&j| xs[j]).collect();
            let sy: Vec<f64> = keep.iter().map(|&j| ys[j]).collect();
            let sz: Vec<Vec<f64>> = z
                .iter()
                .map(|s| keep.iter().map(|&j| s[j]).collect())
                .collect();
            let gi = GlobalKriging::new(&sx, &sy, &sz, &v, kind).unwrap();
            let (p, var) = gi.predict(&[xs[i]], &[ys[i]], true);
            for h in 0..3 {
                let e = z[h][i] - p[h][0];
                assert!(
                    (cv.error[h][i] - e).abs() < 1e-8 * (1.0 + e.abs()),
                    "{kind:?} sample {i} surface {h}: {} vs {e}",
                    cv.error[h][i]
                );
            }
            let want = var.unwrap()[0];
            assert!(
                (cv.variance[i] - want).abs() < 1e-8 * v.sill(),
                "{kind:?} variance {i}"
            );
        }
        for h in 0..3 {
            let rmse = (cv.error[h].iter().map(|e| e * e).sum::<f64>() / 30.0).sqrt();
            assert!((cv.rmse[h] - rmse).abs() < 1e-12);
            assert!(cv.mean_square_standardised[h] > 0.0);
        }
    }
}

#[test]
fn universal_kriging_reproduces_its_drift() {
    let (xs, ys, _) = wells(40, 1, (5.0e5, 7.8e6));
    let q = |x: f64, y: f64| {
        let (u, v) = ((x - 5.0e5) / 1000.0, (y - 7.8e6) / 1000.0);
        3.0 + 2.0 * u - v + 0.5 * u * u - 0.7 * u * v + 0.2 * v * v
    };
    let z = vec![
        xs.iter()
            .zip(&ys)
            .map(|(&x, &y)| q(x, y))
            .collect::<Vec<_>>(),
    ];
    let v = Variogram::new(Model::Exponential, 30.0, 500.0, 0.5).unwrap();
    let kind = Kind::Universal {
        drift: Drift::Quadratic,
    };
    let g = GlobalKriging::new(&xs, &ys, &z, &v, kind).unwrap();
    let (qx, qy) = (
        vec![5.0e5 + 333.0, 5.0e5 + 777.0],
        vec![7.8e6 + 1234.0, 7.8e6 + 99.0],
    );
    let (pred, _) = g.predict(&qx, &qy, false);
    for p in 0..2 {
        let want = q(qx[p], qy[p]);
        let (r, _) = reference(&xs, &ys, &z[0], &v, kind, qx[p], qy[p]);
        assert!(
            (pred[0][p] - want).abs() < 1e-9,
            "dual {} vs {want} (reference {r})",
            pred[0][p]
        );
        assert!((r - want).abs() < 1e-9, "reference {r} vs {want}");
    }
}

#[test]
fn explicit_weights_equal_dual_kriging() {
    let (xs, ys, z) = wells(30, 21, (1.0e5, 2.0e5));
    let v = Variogram::new(Model::Exponential, 10.0, 700.0, 0.5).unwrap();
    for kind in [
        Kind::Ordinary,
        Kind::Simple { mean: 85.0 },
        Kind::Universal {
            drift: Drift::Linear,
        },
    ] {
        let g = GlobalKriging::new(&xs, &ys, &z, &v, kind).unwrap();
        let (qx, qy): (Vec<f64>, Vec<f64>) = (0..300)
            .map(|i| {
                (
                    -400.0 + (i % 20) as f64 * 45.0,
                    -800.0 + (i / 20) as f64 * 110.0,
                )
            })
            .unzip();
        let (dual, _) = g.eval_nodes(&qx, &qy, false);
        let w = g.eval_weights(&qx, &qy);
        for h in 0..3 {
            for j in 0..300 {
                assert!(
                    (dual[h][j] - w[h][j]).abs() < 1e-9 * dual[h][j].abs().max(1.0),
                    "{kind:?} {j}: {} vs {}",
                    dual[h][j],
                    w[h][j]
                );
            }
        }
    }
}
