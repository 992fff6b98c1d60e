//! 3-D kriging against a dense f64 solve of the textbook system in variogram form
//! ([Γ F; Fᵀ 0][λ; μ] = [γ₀; f₀], Gaussian elimination with partial pivoting, the drift in world
//! coordinates), an independent path from the Cholesky/dual form under test.
#![allow(clippy::needless_range_loop)]

use super::*;
use crate::kriging::{Model, Variogram};

fn lcg(seed: &mut u64) -> f64 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (*seed >> 11) as f64 / (1u64 << 53) as f64
}

fn samples(n: usize, seed: u64) -> Samples3 {
    let mut s = seed;
    let mut out = Samples3 {
        xs: vec![],
        ys: vec![],
        zs: vec![],
        values: vec![],
    };
    for _ in 0..n {
        let (x, y, z) = (
            1000.0 * lcg(&mut s) + 5e5,
            800.0 * lcg(&mut s) + 4e6,
            60.0 * lcg(&mut s),
        );
        out.xs.push(x);
        out.ys.push(y);
        out.zs.push(z);
        out.values
            .push(0.01 * (x - 5e5) - 0.02 * z + (0.01 * y).sin() + lcg(&mut s));
    }
    out
}

/// (prediction, variance) of the textbook system over the samples `ids`.
fn oracle(s: &Samples3, ids: &[usize], p: &Krige3Params, q: [f64; 3]) -> (f64, f64) {
    let h = |a: [f64; 3], b: [f64; 3]| {
        let d = p.anisotropy.apply([a[0] - b[0], a[1] - b[1], a[2] - b[2]]);
        (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt()
    };
    let pt = |i: usize| [s.xs[i], s.ys[i], s.zs[i]];
    let g = |d: f64| if d == 0.0 { 0.0 } else { p.variogram.gamma(d) };
    let m = ids.len();
    let f = |x: [f64; 3]| -> Vec<f64> {
        match p.kind {
            Kind::Simple { .. } => vec![],
            Kind::Ordinary => vec![1.0],
            _ => vec![1.0, x[0], x[1], x[2]],
        }
    };
    if let Kind::Simple { mean } = p.kind {
        let sill = p.variogram.sill();
        let a: Vec<Vec<f64>> = ids
            .iter()
            .map(|&i| ids.iter().map(|&j| sill - g(h(pt(i), pt(j)))).collect())
            .collect();
        let c: Vec<f64> = ids.iter().map(|&i| sill - g(h(pt(i), q))).collect();
        let lam = crate::kriging::global::tests::solve(a, c.clone());
        let pred = mean
            + ids
                .iter()
                .zip(&lam)
                .map(|(&i, l)| l * (s.values[i] - mean))
                .sum::<f64>();
        let var = sill - lam.iter().zip(&c).map(|(l, c)| l * c).sum::<f64>();
        return (pred, var);
    }
    let np = f(q).len();
    let mut a = vec![vec![0.0; m + np]; m + np];
    let mut b = vec![0.0; m + np];
    for (r, &i) in ids.iter().enumerate() {
        for (c, &j) in ids.iter().enumerate() {
            a[r][c] = g(h(pt(i), pt(j)));
        }
        for (c, v) in f(pt(i)).into_iter().enumerate() {
            a[r][m + c] = v;
            a[m + c][r] = v;
        }
        b[r] = g(h(pt(i), q));
    }
    for (c, v) in f(q).into_iter().enumerate() {
        b[m + c] = v;
    }
    let x = crate::kriging::global::tests::solve(a, b.clone());
    let pred = ids.iter().zip(&x).map(|(&i, l)| l * s.values[i]).sum();
    let var = x.iter().zip(&b).map(|(l, b)| l * b).sum();
    (pred, var)
}

fn nodes() -> Axes3 {
    Axes3 {
        x: Axes3::centres(5e5 - 100.0, 150.0, 9),
        y: Axes3::centres(4e6 - 50.0, 120.0, 8),
        z: vec![-5.0, 12.0, 31.0, 70.0],
    }
}

fn check(s: &Samples3, p: &Krige3Params, k: &Kriged3, ids_of: impl Fn([f64; 3]) -> Vec<usize>) {
    let var = k.variance.as_ref().unwrap();
    let scale = s.values.iter().fold(0.0f64, |a, v| a.max(v.abs()));
    for t in (0..p.target.len()).step_by(7) {
        let q = p.target.node(t);
        let (pred, v) = oracle(s, &ids_of(q), p, q);
        // Both solve the same well-conditioned f64 system (sills ~1, ranges ~ the spacing):
        // backward-stable solves agree to ~1e-12 of the data's scale; 1e-9 leaves room.
        assert!(
            (k.values[t] - pred).abs() <= 1e-9 * scale,
            "node {t}: {} vs {pred}",
            k.values[t]
        );
        assert!(
            (var[t] - v).abs() <= 1e-9 * p.variogram.sill().max(1.0),
            "node {t} var: {} vs {v}",
            var[t]
        );
    }
}

#[test]
fn global_kinds_match_the_dense_solve() {
    let s = samples(60, 7);
    let vg = Variogram::new(Model::Spherical, 1.5, 600.0, 0.2).unwrap();
    let anis = Anisotropy3::gstat(40.0, 10.0, 5.0, 0.6, 0.1).unwrap();
    let all: Vec<usize> = (0..s.len()).collect();
    for kind in [
        Kind::Ordinary,
        Kind::Simple { mean: 3.0 },
        Kind::Universal {
            drift: Drift::Linear,
        },
    ] {
        let p = Krige3Params {
            kind,
            anisotropy: anis,
            ..Krige3Params::new(vg.clone(), Target3::Grid(nodes()))
        };
        let k = krige3d(&Backend::Cpu, &s, &p).unwrap();
        check(&s, &p, &k, |_| all.clone());
    }
}

#[test]
fn local_is_the_nearest_samples_system() {
    let s = samples(80, 11);
    let vg = Variogram::new(Model::Exponential, 1.0, 500.0, 0.05).unwrap();
    let anis = Anisotropy3::gstat(-20.0, 0.0, 0.0, 0.5, 0.05).unwrap();
    let p = Krige3Params {
        anisotropy: anis,
        neighbors: Some(12),
        ..Krige3Params::new(vg.clone(), Target3::Grid(nodes()))
    };
    let k = krige3d(&Backend::Cpu, &s, &p).unwrap();
    // Brute force: the 12 smallest (anisotropic distance, index).
    let nearest = |q: [f64; 3]| {
        let mut d: Vec<(f64, usize)> = (0..s.len())
            .map(|i| {
                let v = anis.apply([s.xs[i] - q[0], s.ys[i] - q[1], s.zs[i] - q[2]]);
                (v[0] * v[0] + v[1] * v[1] + v[2] * v[2], i)
            })
            .collect();
        d.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        d[..12].iter().map(|e| e.1).collect::<Vec<_>>()
    };
    check(&s, &p, &k, nearest);
    // All samples as neighbours: the global result.
    let pa = Krige3Params {
        neighbors: Some(64),
        ..p.clone()
    };
    let s64 = samples(64, 3);
    let kl = krige3d(&Backend::Cpu, &s64, &pa).unwrap();
    let kg = krige3d(
        &Backend::Cpu,
        &s64,
        &Krige3Params {
            neighbors: None,
            ..pa
        },
    )
    .unwrap();
    for (a, b) in kl.values.iter().zip(&kg.values) {
        assert!((a - b).abs() < 1e-9 * (1.0 + b.abs()));
    }
}

#[test]
fn exact_at_samples_and_duplicates_merged() {
    let mut s = samples(30, 5);
    // A duplicate of sample 3 with another value: averaged.
    s.xs.push(s.xs[3]);
    s.ys.push(s.ys[3]);
    s.zs.push(s.zs[3]);
    s.values.push(s.values[3] + 2.0);
    let vg = Variogram::new(Model::Gaussian, 1.0, 400.0, 0.1).unwrap();
    let pts = Target3::Points {
        xs: s.xs[..5].to_vec(),
        ys: s.ys[..5].to_vec(),
        zs: s.zs[..5].to_vec(),
    };
    let k = krige3d(
        &Backend::Cpu,
        &s,
        &Krige3Params::new(vg.clone(), pts.clone()),
    )
    .unwrap();
    assert_eq!((k.locations, k.merged), (30, 1));
    for i in 0..5 {
        let want = if i == 3 {
            s.values[3] + 1.0
        } else {
            s.values[i]
        };
        assert!((k.values[i] - want).abs() < 1e-9, "{i}");
        assert!(k.variance.as_ref().unwrap()[i].abs() < 1e-9);
    }
    // The nugget as measurement error: smoothed, variance > 0 at the samples.
    let p = Krige3Params {
        nugget: NuggetMode::MeasurementError,
        ..Krige3Params::new(vg, pts)
    };
    let k = krige3d(&Backend::Cpu, &s, &p).unwrap();
    assert!(k.variance.unwrap()[0] > 0.01);
}

#[test]
fn refusals_name_the_problem() {
    let vg = Variogram::new(Model::Spherical, 1.0, 100.0, 0.0).unwrap();
    let mut s = samples(10, 1);
    // Coplanar samples (z = 0) cannot carry a linear drift in z.
    s.zs.iter_mut().for_each(|z| *z = 0.0);
    let p = Krige3Params {
        kind: Kind::Universal {
            drift: Drift::Linear,
        },
        ..Krige3Params::new(vg.clone(), Target3::Grid(nodes()))
    };
    let e = krige3d(&Backend::Cpu, &s, &p).unwrap_err().to_string();
    assert!(e.contains("plane"), "{e}");
    s.values[4] = f64::NAN;
    let e = krige3d(
        &Backend::Cpu,
        &s,
        &Krige3Params::new(vg.clone(), Target3::Grid(nodes())),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("sample 4"), "{e}");
    let bad = Axes3 {
        x: vec![0.0, 1.0, 1.0],
        ..nodes()
    };
    let e = krige3d(
        &Backend::Cpu,
        &samples(5, 2),
        &Krige3Params::new(vg, Target3::Grid(bad)),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("x axis"), "{e}");
}

#[test]
fn radius_leaves_far_nodes_missing() {
    let s = samples(40, 9);
    let vg = Variogram::new(Model::Spherical, 1.0, 300.0, 0.0).unwrap();
    let far = Target3::Points {
        xs: vec![s.xs[0], 9e5],
        ys: vec![s.ys[0], 9e6],
        zs: vec![s.zs[0], 0.0],
    };
    let p = Krige3Params {
        neighbors: Some(8),
        radius: Some(200.0),
        ..Krige3Params::new(vg, far)
    };
    let k = krige3d(&Backend::Cpu, &s, &p).unwrap();
    assert_eq!(k.missing, 1);
    assert!((k.values[0] - s.values[0]).abs() < 1e-9 && k.values[1].is_nan());
}

#[test]
fn empirical_bins_every_pair() {
    let s = samples(50, 4);
    let a = Anisotropy3::gstat(0.0, 0.0, 0.0, 1.0, 0.1).unwrap();
    let bins = empirical3(&s, &a, 6, Some(700.0)).unwrap();
    let mut cnt = [0u64; 6];
    let mut sq = [0.0f64; 6];
    for i in 0..s.len() {
        for j in i + 1..s.len() {
            let (dx, dy, dz) = (
                s.xs[j] - s.xs[i],
                s.ys[j] - s.ys[i],
                10.0 * (s.zs[j] - s.zs[i]),
            );
            let h = (dx * dx + dy * dy + dz * dz).sqrt();
            if h <= 700.0 {
                let b = ((h / (700.0 / 6.0)) as usize).min(5);
                cnt[b] += 1;
                sq[b] += (s.values[i] - s.values[j]).powi(2);
            }
        }
    }
    for b in 0..6 {
        assert_eq!(bins[b].pairs, cnt[b]);
        assert!((bins[b].gamma - sq[b] / (2.0 * cnt[b] as f64)).abs() < 1e-12 * sq[b].max(1.0));
    }
}

#[test]
fn drift_residuals_are_orthogonal_to_the_drift() {
    let mut s = samples(40, 8);
    // An exact plane leaves nothing.
    let plane: Vec<f64> = (0..s.len())
        .map(|i| 3.0 + 0.01 * s.xs[i] - 0.002 * s.ys[i] + 0.5 * s.zs[i])
        .collect();
    s.values = plane;
    let r = drift_residuals3(&s).unwrap();
    assert!(
        r.values.iter().all(|v| v.abs() < 1e-6),
        "{:?}",
        &r.values[..3]
    );
    let s = samples(40, 8);
    let r = drift_residuals3(&s).unwrap();
    for col in [&s.xs, &s.ys, &s.zs] {
        let dot: f64 = col
            .iter()
            .zip(&r.values)
            .map(|(a, b)| (a - col[0]) * b)
            .sum();
        assert!(dot.abs() < 1e-6 * col.iter().map(|v| (v - col[0]).abs()).sum::<f64>());
    }
    assert!(r.values.iter().sum::<f64>().abs() < 1e-9);
}
