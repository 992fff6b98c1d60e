//! 3-D kriging and cokriging on every backend against the CPU path: the GPU evaluates the
//! host's f64 system at listed nodes (`geofield_cuda::kriging::points_eval`), predictions and
//! variances equal the CPU's to 1e-9 of the data's scale (f64 both; the sums over samples run in
//! another order, ~1e-14 relative, and the GPU's exp/sqrt are correctly rounded to ~1 ulp).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod backends;

use backends::{Rng, for_each_backend};
use geofield::Backend;
use geofield::kriging::cokriging::{CoKind, CoParams, Lmc, cokrige_on};
use geofield::kriging::volume::{Anisotropy3, Axes3, Krige3Params, Samples3, Target3, krige3d};
use geofield::kriging::{Drift, Kind, Model, NuggetMode, SampleSet, Structure, Target, Variogram};
use geofield_core::{Extent, GridSpec};

fn close(what: &str, cpu: &[f64], got: &[f64], scale: f64) {
    assert_eq!(cpu.len(), got.len(), "{what}");
    let worst = cpu
        .iter()
        .zip(got)
        .map(|(a, b)| (a - b).abs() / a.abs().max(scale))
        .fold(0.0f64, f64::max);
    println!("{what}: worst {worst:.2e}");
    assert!(worst <= 1e-9, "{what}: {worst:e}");
}

fn samples3(n: usize) -> Samples3 {
    let mut r = Rng::new(31);
    let mut s = Samples3 {
        xs: vec![],
        ys: vec![],
        zs: vec![],
        values: vec![],
    };
    for _ in 0..n {
        let (x, y, z) = (
            r.uniform(5e5, 5e5 + 1000.0),
            r.uniform(4e6, 4e6 + 800.0),
            r.uniform(0.0, 60.0),
        );
        s.xs.push(x);
        s.ys.push(y);
        s.zs.push(z);
        s.values
            .push(0.01 * (x - 5e5) - 0.02 * z + (0.01 * y).sin() + r.unit());
    }
    s
}

#[test]
fn kriging_3d_on_every_backend_equals_the_cpu() {
    let s = samples3(300);
    // On the CPU, whose backend run repeats its reference run, a coarser grid keeps it short.
    let grid = |be: &Backend| {
        let f = if matches!(be, Backend::Cpu) { 3 } else { 1 };
        Target3::Grid(Axes3 {
            x: Axes3::centres(5e5 - 50.0, 25.0 * f as f64, 44 / f),
            y: Axes3::centres(4e6 - 50.0, 25.0 * f as f64, 36 / f),
            z: Axes3::centres(-5.0, 5.0 * f as f64, 15 / f),
        })
    };
    let points = Target3::Points {
        xs: s.xs[..40].iter().map(|x| x + 3.0).collect(),
        ys: s.ys[..40].to_vec(),
        zs: s.zs[..40].to_vec(),
    };
    let sph = Variogram::new(Model::Spherical, 1.5, 600.0, 0.2).unwrap();
    let nested = Variogram {
        nugget: 0.1,
        structures: vec![
            Structure::new(Model::Exponential, 0.8, 300.0),
            Structure::new(Model::Matern { nu: 1.5 }, 0.7, 900.0),
        ],
    };
    let power = Variogram::new(Model::Power { exponent: 1.3 }, 0.01, 1.0, 0.1).unwrap();
    let anis = Anisotropy3::gstat(40.0, 10.0, 5.0, 0.6, 0.1).unwrap();
    for_each_backend(|be| {
        let grid = grid(be);
        let cases: Vec<(&str, Krige3Params)> = vec![
            (
                "ordinary spherical, anisotropic, grid",
                Krige3Params {
                    anisotropy: anis,
                    ..Krige3Params::new(sph.clone(), grid.clone())
                },
            ),
            (
                "simple nested, points",
                Krige3Params {
                    kind: Kind::Simple { mean: 3.0 },
                    ..Krige3Params::new(nested.clone(), points.clone())
                },
            ),
            (
                "universal linear, nugget as error, grid",
                Krige3Params {
                    kind: Kind::Universal {
                        drift: Drift::Linear,
                    },
                    nugget: NuggetMode::MeasurementError,
                    anisotropy: anis,
                    ..Krige3Params::new(nested.clone(), grid.clone())
                },
            ),
            (
                "ordinary power (pseudo-covariance), grid",
                Krige3Params::new(power.clone(), grid.clone()),
            ),
            // Local systems (the k nearest samples of each node): on the GPU the k-NN search
            // and every node's Cholesky run on the device.
            (
                "local ordinary spherical, anisotropic, 24 nearest, grid",
                Krige3Params {
                    anisotropy: anis,
                    neighbors: Some(24),
                    ..Krige3Params::new(sph.clone(), grid.clone())
                },
            ),
            (
                "local simple nested, 16 nearest, points",
                Krige3Params {
                    kind: Kind::Simple { mean: 3.0 },
                    neighbors: Some(16),
                    ..Krige3Params::new(nested.clone(), points.clone())
                },
            ),
            (
                "local universal linear, nugget as error, 40 nearest, grid",
                Krige3Params {
                    kind: Kind::Universal {
                        drift: Drift::Linear,
                    },
                    nugget: NuggetMode::MeasurementError,
                    anisotropy: anis,
                    neighbors: Some(40),
                    ..Krige3Params::new(nested.clone(), grid.clone())
                },
            ),
            (
                "local ordinary power, 64 nearest within 250 m, grid",
                Krige3Params {
                    neighbors: Some(64),
                    radius: Some(250.0),
                    ..Krige3Params::new(power.clone(), grid.clone())
                },
            ),
        ];
        for (what, p) in cases {
            let cpu = krige3d(&Backend::Cpu, &s, &p).unwrap();
            let got = krige3d(be, &s, &p).unwrap();
            if matches!(be, Backend::Cuda(_)) {
                assert!(got.evaluated.starts_with("CUDA,"), "{}", got.evaluated);
            }
            // Nodes without enough neighbours within the radius are NaN on both (compared
            // below as equal).
            let nan = |v: &[f64]| v.iter().map(|x| x.is_nan()).collect::<Vec<_>>();
            assert_eq!(nan(&cpu.values), nan(&got.values), "{what}: NaN nodes");
            let keep = |v: &[f64]| {
                v.iter()
                    .map(|x| if x.is_nan() { 0.0 } else { *x })
                    .collect::<Vec<_>>()
            };
            let (cpu, got) = (
                geofield::kriging::volume::Kriged3 {
                    values: keep(&cpu.values),
                    variance: cpu.variance.as_deref().map(keep),
                    ..cpu
                },
                geofield::kriging::volume::Kriged3 {
                    values: keep(&got.values),
                    variance: got.variance.as_deref().map(keep),
                    ..got
                },
            );
            let scale = s.values.iter().fold(0.0f64, |a, v| a.max(v.abs()));
            close(
                &format!("{what}: prediction"),
                &cpu.values,
                &got.values,
                scale,
            );
            // The variances' scale: the total sill, or 1 for the unbounded power variogram
            // (whose sill is infinite and would make every difference 0 relative to it).
            let sill = if p.variogram.is_bounded() {
                p.variogram.sill().max(1.0)
            } else {
                1.0
            };
            close(
                &format!("{what}: variance"),
                cpu.variance.as_ref().unwrap(),
                got.variance.as_ref().unwrap(),
                sill,
            );
        }
    });
}

/// 300 locations over 2 km; the primary at every third, the secondaries at most others; the
/// second secondary negatively correlated.
fn co_set(vars: usize) -> SampleSet {
    let mut r = Rng::new(5);
    let (mut xs, mut ys) = (vec![], vec![]);
    let mut cols = vec![vec![]; vars];
    for i in 0..300 {
        let (x, y) = (r.uniform(3e5, 3e5 + 2000.0), r.uniform(5e6, 5e6 + 2000.0));
        let common = (x / 300.0).sin() + (y / 400.0).cos();
        xs.push(x);
        ys.push(y);
        for (k, c) in cols.iter_mut().enumerate() {
            let known = match k {
                0 => i % 3 == 0,
                _ => (i + k) % 5 != 0,
            };
            let sign = if k == 2 { -1.0 } else { 1.0 };
            c.push(if known {
                sign * (1.0 + k as f64) * common + 0.3 * r.unit()
            } else {
                f64::NAN
            });
        }
    }
    SampleSet::new(xs, ys, cols)
}

fn lmc(vars: usize) -> Lmc {
    let (nug, s1, s2) = if vars == 2 {
        (
            vec![0.05, 0.02, 0.02, 0.1],
            vec![0.8, 1.2, 1.2, 2.5],
            vec![0.3, 0.1, 0.1, 0.6],
        )
    } else {
        (
            vec![0.05, 0.0, 0.0, 0.0, 0.1, 0.0, 0.0, 0.0, 0.2],
            vec![0.8, 1.2, -1.0, 1.2, 2.5, -1.5, -1.0, -1.5, 2.0],
            vec![0.3, 0.1, 0.0, 0.1, 0.6, 0.0, 0.0, 0.0, 0.4],
        )
    };
    Lmc {
        variables: vars,
        structures: vec![
            Structure::new(Model::Spherical, 1.0, 600.0),
            Structure::new(Model::Exponential, 1.0, 1500.0),
        ],
        nugget: nug,
        sills: vec![s1, s2],
    }
}

#[test]
fn cokriging_on_every_backend_equals_the_cpu() {
    let grid = GridSpec::from_extent(
        Extent::new(3e5 - 100.0, 5e6 - 100.0, 3e5 + 2100.0, 5e6 + 2100.0).unwrap(),
        20.0,
    )
    .unwrap();
    for_each_backend(|be| {
        for (vars, kind) in [
            (2, CoKind::Ordinary),
            (3, CoKind::Ordinary),
            (
                3,
                CoKind::Simple {
                    means: vec![0.5, 1.0, -1.5],
                },
            ),
        ] {
            let set = co_set(vars);
            let p = CoParams {
                lmc: lmc(vars),
                kind: kind.clone(),
                anisotropy: None,
                variance: true,
                target: Target::Grid(grid),
            };
            let cpu = cokrige_on(&Backend::Cpu, &set, &p).unwrap();
            let got = cokrige_on(be, &set, &p).unwrap();
            if matches!(be, Backend::Cuda(_)) {
                assert!(got.evaluated.starts_with("CUDA"), "{}", got.evaluated);
            }
            let what = format!("{vars} variables, {kind:?}");
            close(
                &format!("{what}: prediction"),
                &cpu.values,
                &got.values,
                3.0,
            );
            close(
                &format!("{what}: variance"),
                cpu.variance.as_ref().unwrap(),
                got.variance.as_ref().unwrap(),
                1.0,
            );
        }
    });
}
