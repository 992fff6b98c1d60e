//! Universal kriging with drift variables given by value at the samples and the nodes (PyKrige's
//! `specified` / `functional` drifts), 2-D and 3-D, against an independent dense f64 solve of
//! the variogram-form system PyKrige builds ([[−γ, F], [Fᵀ, 0]] with F = raw x, y (z), the
//! given variables, 1), by Gaussian elimination written here; and the refusals. On every
//! backend: with a GPU the nodes are evaluated on it (a host Cholesky factorisation, not the
//! CPU's LU), and the same 1e-9 bound holds: both are backward-stable f64 solves of systems
//! whose condition numbers here are below ~1e4 (a 0.1 nugget), so ~1e-12 apart.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod backends;

use backends::for_each_backend;

use geofield::kriging::volume::{Krige3Params, Samples3, Target3, krige3d_given};
use geofield::kriging::{
    Anisotropy, Drift, GivenDrift, Kind, KrigeOptions, KrigeParams, Model, Neighbourhood,
    SampleSet, Target, Variogram, krige_given,
};
use geofield::{Backend, GeofieldError};

const SILL: f64 = 1.0;
const RANGE: f64 = 300.0;
const NUGGET: f64 = 0.1;

fn gamma(h: f64) -> f64 {
    if h == 0.0 {
        0.0
    } else {
        NUGGET + SILL * (1.0 - (-3.0 * h / RANGE).exp())
    }
}

fn vg() -> Variogram {
    Variogram::new(Model::Exponential, SILL, RANGE, NUGGET).unwrap()
}

/// Solves a x = b (dense, m × m row-major) by Gaussian elimination with partial pivoting.
fn gauss(mut a: Vec<f64>, mut b: Vec<f64>) -> Vec<f64> {
    let m = b.len();
    for k in 0..m {
        let p = (k..m)
            .max_by(|&i, &j| a[i * m + k].abs().total_cmp(&a[j * m + k].abs()))
            .unwrap();
        for c in 0..m {
            a.swap(k * m + c, p * m + c);
        }
        b.swap(k, p);
        for i in k + 1..m {
            let l = a[i * m + k] / a[k * m + k];
            for c in k..m {
                a[i * m + c] -= l * a[k * m + c];
            }
            b[i] -= l * b[k];
        }
    }
    for i in (0..m).rev() {
        let s: f64 = (i + 1..m).map(|c| a[i * m + c] * b[c]).sum();
        b[i] = (b[i] - s) / a[i * m + i];
    }
    b
}

/// PyKrige's system: distances `d(i, j)` between samples, `d0(i)` from the node, drift rows `f`
/// at the samples and `f0` at the node. Returns (prediction, variance).
fn oracle(
    n: usize,
    d: &dyn Fn(usize, usize) -> f64,
    d0: &dyn Fn(usize) -> f64,
    f: &[Vec<f64>],
    f0: &[f64],
    z: &[f64],
) -> (f64, f64) {
    let p = f0.len();
    let m = n + p;
    let mut a = vec![0.0; m * m];
    let mut b = vec![0.0; m];
    for i in 0..n {
        for j in 0..n {
            a[i * m + j] = -gamma(d(i, j));
        }
        for k in 0..p {
            a[i * m + n + k] = f[i][k];
            a[(n + k) * m + i] = f[i][k];
        }
        b[i] = -gamma(d0(i));
    }
    b[n..].copy_from_slice(f0);
    let x = gauss(a, b.clone());
    let pred = (0..n).map(|i| x[i] * z[i]).sum();
    let var = x.iter().zip(&b).map(|(x, b)| -x * b).sum();
    (pred, var)
}

fn g1(x: f64, y: f64) -> f64 {
    (x / 170.0).sin() * 40.0 + 0.01 * y
}

fn g2(x: f64, y: f64) -> f64 {
    ((x - 400.0).powi(2) + (y - 300.0).powi(2)).sqrt()
}

fn samples2() -> SampleSet {
    let (mut xs, mut ys, mut z) = (vec![], vec![], vec![]);
    for k in 0..30u32 {
        let (x, y) = (
            f64::from((k * 137) % 1000),
            f64::from((k * 71 + 13) % 700) + 0.37 * f64::from(k),
        );
        xs.push(x);
        ys.push(y);
        z.push(0.02 * g1(x, y) - 0.003 * g2(x, y) + (y / 120.0).cos() + 0.001 * x);
    }
    SampleSet::new(xs, ys, vec![z])
}

fn close(a: f64, b: f64, scale: f64) -> bool {
    (a - b).abs() <= 1e-9 * scale.max(1e-300)
}

fn check_2d(
    be: &Backend,
    drift: Option<Drift>,
    aniso: Option<Anisotropy>,
) -> Result<(), GeofieldError> {
    let s = samples2();
    let n = s.len();
    let (px, py): (Vec<f64>, Vec<f64>) = (0..40)
        .map(|j| (25.0 * j as f64 + 3.0, 650.0 - 15.0 * j as f64))
        .chain([(s.xs[4], s.ys[4])]) // a node at a sample: exact
        .unzip();
    let vars: [fn(f64, f64) -> f64; 2] = [g1, g2];
    let at = |xs: &[f64], ys: &[f64], g: fn(f64, f64) -> f64| -> Vec<f64> {
        xs.iter().zip(ys).map(|(&x, &y)| g(x, y)).collect()
    };
    let given = GivenDrift::new(
        vec!["g1".into(), "g2".into()],
        vars.iter().map(|&g| at(&s.xs, &s.ys, g)).collect(),
        vars.iter().map(|&g| at(&px, &py, g)).collect(),
    )?;
    let params = KrigeParams {
        options: KrigeOptions {
            kind: drift.map_or(Kind::Ordinary, |drift| Kind::Universal { drift }),
            anisotropy: aniso,
            ..KrigeOptions::default()
        },
        variance: true,
        ..KrigeParams::new(
            vg(),
            Target::Points {
                xs: px.clone(),
                ys: py.clone(),
            },
        )
    };
    let out = krige_given(be, &s, &params, &given)?;
    let on = if matches!(be, Backend::Cpu) {
        "CPU"
    } else {
        "CUDA,"
    };
    assert!(out.evaluated.starts_with(on), "{}", out.evaluated);
    // Independent distances: rotate into (major, minor), the minor over the ratio.
    let dist = |x0: f64, y0: f64, x1: f64, y1: f64| {
        let (dx, dy) = (x1 - x0, y1 - y0);
        match aniso {
            None => dx.hypot(dy),
            Some(a) => {
                let (sn, cs) = a.azimuth_deg.to_radians().sin_cos();
                (dx * sn + dy * cs).hypot((dx * cs - dy * sn) / a.ratio)
            }
        }
    };
    let row = |x: f64, y: f64| -> Vec<f64> {
        let mut r = vec![];
        if drift.is_some() {
            r.extend([x, y]);
        }
        r.extend([g1(x, y), g2(x, y), 1.0]);
        r
    };
    let f: Vec<Vec<f64>> = (0..n).map(|i| row(s.xs[i], s.ys[i])).collect();
    let z = &s.surfaces[0].values;
    let zscale = z.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let var = out.variance.as_ref().unwrap();
    for j in 0..px.len() {
        let (p, v) = oracle(
            n,
            &|a, b| dist(s.xs[a], s.ys[a], s.xs[b], s.ys[b]),
            &|a| dist(px[j], py[j], s.xs[a], s.ys[a]),
            &f,
            &row(px[j], py[j]),
            z,
        );
        assert!(
            close(out.values[0][j], p, zscale),
            "node {j}: {} vs {p}",
            out.values[0][j]
        );
        assert!(
            close(var[0][j], v, SILL + NUGGET),
            "node {j}: {} vs {v}",
            var[0][j]
        );
    }
    let last = px.len() - 1;
    assert!((out.values[0][last] - z[4]).abs() < 1e-9 && var[0][last].abs() < 1e-9);
    Ok(())
}

#[test]
fn two_given_variables_with_and_without_a_linear_drift_equal_the_dense_solve()
-> Result<(), GeofieldError> {
    let mut r = Ok(());
    for_each_backend(|be| {
        if r.is_err() {
            return;
        }
        r = (|| {
            check_2d(be, None, None)?;
            check_2d(be, Some(Drift::Linear), None)?;
            check_2d(
                be,
                Some(Drift::Linear),
                Some(Anisotropy {
                    azimuth_deg: 30.0,
                    ratio: 0.5,
                }),
            )
        })();
    });
    r
}

#[test]
fn a_grid_target_and_3d_equal_the_dense_solve() -> Result<(), GeofieldError> {
    // 3-D, ordinary plus one given variable, isotropic.
    let (mut xs, mut ys, mut zs, mut v) = (vec![], vec![], vec![], vec![]);
    for k in 0..25u32 {
        let (x, y, z) = (
            f64::from((k * 137) % 500),
            f64::from((k * 71 + 13) % 400),
            -f64::from((k * 29) % 60),
        );
        xs.push(x);
        ys.push(y);
        zs.push(z);
        v.push(0.01 * g1(x, y) * (1.0 + z / 100.0) + (y / 90.0).sin());
    }
    let g = |x: f64, y: f64, z: f64| g1(x, y) * (1.0 + z / 100.0);
    let s = Samples3 {
        xs: xs.clone(),
        ys: ys.clone(),
        zs: zs.clone(),
        values: v.clone(),
    };
    let axes = geofield::kriging::volume::Axes3 {
        x: vec![10.0, 160.0, 310.0],
        y: vec![20.0, 220.0],
        z: vec![-50.0, -5.0],
    };
    let target = Target3::Grid(axes);
    let nodes: Vec<[f64; 3]> = (0..target.len()).map(|t| target.node(t)).collect();
    let given = GivenDrift::new(
        vec!["g".into()],
        vec![(0..s.len()).map(|i| g(xs[i], ys[i], zs[i])).collect()],
        vec![nodes.iter().map(|p| g(p[0], p[1], p[2])).collect()],
    )?;
    let params = Krige3Params::new(vg(), target);
    let mut outs = vec![];
    for_each_backend(|be| outs.push((be.clone(), krige3d_given(be, &s, &params, &given))));
    let d3 = |a: [f64; 3], b: [f64; 3]| {
        ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2) + (a[2] - b[2]).powi(2)).sqrt()
    };
    let sp = |i: usize| [xs[i], ys[i], zs[i]];
    let f: Vec<Vec<f64>> = (0..s.len())
        .map(|i| vec![g(xs[i], ys[i], zs[i]), 1.0])
        .collect();
    for (be, out) in outs {
        let out = out?;
        let on = if matches!(be, Backend::Cpu) {
            "CPU"
        } else {
            "CUDA,"
        };
        assert!(out.evaluated.starts_with(on), "{}", out.evaluated);
        for (t, p0) in nodes.iter().enumerate() {
            let (p, var) = oracle(
                s.len(),
                &|a, b| d3(sp(a), sp(b)),
                &|a| d3(*p0, sp(a)),
                &f,
                &[g(p0[0], p0[1], p0[2]), 1.0],
                &v,
            );
            assert!(
                close(out.values[t], p, 1.0),
                "node {t}: {} vs {p}",
                out.values[t]
            );
            let ov = out.variance.as_ref().unwrap()[t];
            assert!(close(ov, var, 1.1), "node {t}: {ov} vs {var}");
        }
    }
    Ok(())
}

#[test]
fn refusals_name_the_problem() {
    let s = samples2();
    let n = s.len();
    let col: Vec<f64> = (0..n).map(|i| g1(s.xs[i], s.ys[i])).collect();
    let dependent: Vec<f64> = col.iter().map(|v| 2.0 * v + 3.0).collect();
    let pts = Target::Points {
        xs: vec![1.0, 2.0],
        ys: vec![1.0, 2.0],
    };
    let params = KrigeParams {
        variance: true,
        ..KrigeParams::new(vg(), pts)
    };
    let given = GivenDrift::new(
        vec!["a".into(), "b".into()],
        vec![col.clone(), dependent],
        vec![vec![0.0; 2], vec![0.0; 2]],
    )
    .unwrap();
    let e = krige_given(&Backend::Cpu, &s, &params, &given).unwrap_err();
    assert!(e.to_string().contains("drift variable b"), "{e}");
    // Wrong counts.
    let short = GivenDrift::new(vec!["a".into()], vec![col.clone()], vec![vec![0.0; 3]]).unwrap();
    let e = krige_given(&Backend::Cpu, &s, &params, &short).unwrap_err();
    assert!(
        e.to_string()
            .contains("drift variable a: 3 values for 2 nodes"),
        "{e}"
    );
    assert!(GivenDrift::new(vec!["a".into()], vec![vec![f64::NAN]], vec![vec![]]).is_err());
    assert!(GivenDrift::new(vec![], vec![], vec![]).is_err());
    // Local kriging and an external drift are refused.
    let ok = GivenDrift::new(vec!["a".into()], vec![col], vec![vec![0.0; 2]]).unwrap();
    let mut local = params.clone();
    local.options.neighbourhood = Neighbourhood::Local {
        k: 10,
        radius: None,
    };
    let e = krige_given(&Backend::Cpu, &s, &local, &ok).unwrap_err();
    assert!(e.to_string().contains("global only"), "{e}");
    let mut ext = params.clone();
    ext.options.kind = Kind::Universal {
        drift: Drift::External,
    };
    assert!(krige_given(&Backend::Cpu, &s, &ext, &ok).is_err());
    // Two samples at one place.
    let mut dup = s.clone();
    dup.xs[1] = dup.xs[0];
    dup.ys[1] = dup.ys[0];
    let e = krige_given(&Backend::Cpu, &dup, &params, &ok).unwrap_err();
    assert!(e.to_string().contains("same place"), "{e}");
}

/// `cargo test --release --test kriging_given_drift -- --ignored --nocapture`: 1000 samples, two
/// given variables plus the linear drift, 200 × 200 points with variances, on every backend
/// (medians of 3 after a warm-up); the GPU's values against the CPU's.
#[test]
#[ignore = "a benchmark"]
fn bench_given_drift() {
    let n = 1000u32;
    let (mut xs, mut ys, mut z) = (vec![], vec![], vec![]);
    for k in 0..n {
        let (x, y) = (
            f64::from((k * 7919) % 10007) / 10.007,
            f64::from((k * 104_729 + 17) % 10009) / 14.3,
        );
        xs.push(x);
        ys.push(y);
        z.push(0.02 * g1(x, y) - 0.003 * g2(x, y) + (y / 120.0).cos() + 0.001 * x);
    }
    let s = SampleSet::new(xs.clone(), ys.clone(), vec![z]);
    let (px, py): (Vec<f64>, Vec<f64>) = (0..40_000)
        .map(|j| {
            (
                5.0 * f64::from(j % 200) + 2.5,
                3.5 * f64::from(j / 200) + 1.75,
            )
        })
        .unzip();
    let at = |a: &[f64], b: &[f64], g: fn(f64, f64) -> f64| -> Vec<f64> {
        a.iter().zip(b).map(|(&x, &y)| g(x, y)).collect()
    };
    let given = GivenDrift::new(
        vec!["g1".into(), "g2".into()],
        vec![at(&xs, &ys, g1), at(&xs, &ys, g2)],
        vec![at(&px, &py, g1), at(&px, &py, g2)],
    )
    .unwrap();
    let params = KrigeParams {
        options: KrigeOptions {
            kind: Kind::Universal {
                drift: Drift::Linear,
            },
            ..KrigeOptions::default()
        },
        variance: true,
        ..KrigeParams::new(vg(), Target::Points { xs: px, ys: py })
    };
    let mut reference: Option<Vec<f64>> = None;
    for_each_backend(|be| {
        let _ = krige_given(be, &s, &params, &given).unwrap();
        let mut times = vec![];
        let mut out = None;
        for _ in 0..3 {
            let t = std::time::Instant::now();
            out = Some(krige_given(be, &s, &params, &given).unwrap());
            times.push(t.elapsed().as_secs_f64());
        }
        times.sort_by(f64::total_cmp);
        let out = out.unwrap();
        let v = out.values[0].clone();
        let diff = reference.as_ref().map_or(0.0, |r| {
            r.iter()
                .zip(&v)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max)
        });
        println!(
            "given drift, {n} samples, 40000 points with variance: {} median {:.3} s (max |diff| to the first backend {diff:.2e})",
            out.evaluated, times[1]
        );
        reference.get_or_insert(v);
    });
}
