#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::needless_range_loop
)]

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

use super::*;
use crate::kriging::Model;

/// Gaussian elimination with partial pivoting (the independent reference).
fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Vec<f64> {
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
fn reference(
    xs: &[f64],
    ys: &[f64],
    z: &[f64],
    v: &Variogram,
    kind: Kind,
    x0: f64,
    y0: f64,
) -> (f64, f64) {
    let n = xs.len();
    let c0 = v.sill();
    let cov = |h: f64| {
        if h == 0.0 {
            c0
        } else {
            v.covariance(h).unwrap()
        }
    };
    let k: Vec<f64> = (0..n)
        .map(|i| cov((xs[i] - x0).hypot(ys[i] - y0)))
        .collect();
    match kind {
        Kind::Ordinary => {
            let mut a = vec![vec![0.0; n + 1]; n + 1];
            for i in 0..n {
                for j in 0..n {
                    a[i][j] = cov((xs[i] - xs[j]).hypot(ys[i] - ys[j]));
                }
                a[i][n] = 1.0;
                a[n][i] = 1.0;
            }
            let mut b = k.clone();
            b.push(1.0);
            let w = solve(a, b);
            let pred = (0..n).map(|i| w[i] * z[i]).sum();
            let var = c0 - (0..n).map(|i| w[i] * k[i]).sum::<f64>() - w[n];
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

fn wells(n: usize, seed: u64, offset: (f64, f64)) -> (Vec<f64>, Vec<f64>, Vec<Vec<f64>>) {
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
                assert!(
                    (var[p] - want_v).abs() <= 1e-9 * v.sill(),
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
        e.contains("samples are 0 and 1") && e.contains("nugget"),
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
    assert!(GlobalKriging::new(&[0.0, 1.0], &[0.0, 1.0], &z, &p, Kind::Ordinary).is_err());
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
