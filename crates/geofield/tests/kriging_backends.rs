//! Kriging on every backend against the CPU path: `krige` on a grid (f64 and f32) equals the CPU's
//! f64 result for every kind, model family, neighbourhood and nugget convention, predictions and
//! variances, including NaN nodes of local kriging and surfaces with missing wells, blocks
//! (gstat `block=`) and external drifts (KED), global and local.
//!
//! Each test body runs on the CPU and, with a GPU, on CUDA (`backends::for_each_backend`: the
//! CUDA run skips with a notice without a GPU, fails with `GEOFIELD_REQUIRE_GPU=1`).
//! Tolerances: f64 1e-9 (local: 1e-8) of max(|value|, data spread) (the CPU sums in another order and uses a
//! polynomial exp); f32 2e-4 of the data spread for predictions and of the sill for variances (the
//! note's bound for n ≤ 500 with centred coordinates and f64 block accumulation is ~5e-5).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::needless_range_loop
)]

use geofield::Backend;
use std::sync::Arc;

use geofield::kriging::{
    Anisotropy, Block, Discretisation, Drift, ExternalDrift, Kind, KrigeOptions, KrigeParams,
    Model, Neighbourhood, NuggetMode, Precision, Prediction, SampleSet, Structure, Target,
    Variogram, krige,
};
use geofield_core::{Extent, GridSpec};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

mod backends;
use backends::for_each_backend;

/// n wells over a UTM-sized 2 km x 1.5 km extent, H surfaces, some values missing.
fn wells(n: usize, h: usize, seed: u64, missing: bool) -> SampleSet {
    let mut r = Pcg64::seed_from_u64(seed);
    let xs: Vec<f64> = (0..n).map(|_| 4.2e5 + r.random::<f64>() * 2000.0).collect();
    let ys: Vec<f64> = (0..n).map(|_| 5.1e6 + r.random::<f64>() * 1500.0).collect();
    let z = (0..h)
        .map(|k| {
            (0..n)
                .map(|i| {
                    if missing && k == h - 1 && i % 7 == 3 {
                        f64::NAN
                    } else {
                        100.0 - 10.0 * k as f64
                            + 5.0 * ((xs[i] - 4.2e5) / 300.0).sin()
                            + 3.0 * ((ys[i] - 5.1e6) / 200.0).cos()
                            + r.random::<f64>()
                    }
                })
                .collect()
        })
        .collect();
    SampleSet::new(xs, ys, z)
}

/// The prediction grid: 25 m cells on the device; on the CPU, whose backend run repeats its
/// reference run, 100 m cells keep the test short.
fn grid(be: &Backend) -> GridSpec {
    let cell = if matches!(be, Backend::Cpu) {
        100.0
    } else {
        25.0
    };
    GridSpec::from_extent(
        Extent::new(4.2e5 - 100.0, 5.1e6 - 100.0, 4.2e5 + 2100.0, 5.1e6 + 1600.0).unwrap(),
        cell,
    )
    .unwrap()
}

fn compare(what: &str, cpu: &[Vec<f64>], gpu: &[Vec<f64>], scale: f64, tol: f64) {
    for (h, (a, b)) in cpu.iter().zip(gpu).enumerate() {
        assert_eq!(a.len(), b.len(), "{what}");
        let mut worst = 0.0f64;
        for j in 0..a.len() {
            if a[j].is_nan() || b[j].is_nan() {
                assert!(
                    a[j].is_nan() && b[j].is_nan(),
                    "{what} surface {h} node {j}: {} vs {}",
                    a[j],
                    b[j]
                );
                continue;
            }
            worst = worst.max((a[j] - b[j]).abs() / a[j].abs().max(scale));
        }
        println!("{what} surface {h}: worst {worst:.2e}");
        assert!(worst <= tol, "{what} surface {h}: {worst:e} > {tol:e}");
    }
}

/// The predictions and variances of `krige` on the grid `g`.
fn krige_grid(
    be: &Backend,
    set: &SampleSet,
    v: &Variogram,
    options: KrigeOptions,
    g: &GridSpec,
    external: Option<&Arc<ExternalDrift>>,
) -> Prediction {
    let params = KrigeParams {
        options,
        variance: true,
        external_drift: external.cloned(),
        ..KrigeParams::new(v.clone(), Target::Grid(*g))
    };
    krige(be, set, &params).unwrap().prediction
}

fn case(be: &Backend, what: &str, set: &SampleSet, v: &Variogram, opts: KrigeOptions) {
    case_with(be, what, set, v, opts, None);
}

fn case_with(
    be: &Backend,
    what: &str,
    set: &SampleSet,
    v: &Variogram,
    opts: KrigeOptions,
    external: Option<&Arc<ExternalDrift>>,
) {
    // Local systems are solved in another form on the GPU (explicit weights) than on the CPU
    // (dual coefficients per neighbour set); a drift on the few samples within a radius is
    // ill-conditioned, so f64 agrees to ~1e-9 there (observed 1.1e-9).
    let tol64 = match opts.neighbourhood {
        Neighbourhood::Global => 1e-9,
        Neighbourhood::Local { .. } => 1e-8,
    };
    let g = grid(be);
    let cpu = krige_grid(&Backend::Cpu, set, v, opts, &g, external);
    let spread = 30.0;
    let sill = if v.is_bounded() { v.sill() } else { 100.0 };
    // f32 local universal kriging is not held to the CPU: where a node's few neighbours barely
    // determine the drift (near-collinear within the radius), G = L⁻¹F in f32 loses the digits
    // the drift needs (measured 3.3e-2 of the data spread at one node). Local kriging therefore
    // runs in f64 on the GPU by default (`geofield krige --precision auto`).
    let f32_ok = !matches!(
        (opts.neighbourhood, opts.kind),
        (Neighbourhood::Local { .. }, Kind::Universal { .. })
    );
    let precisions: Vec<(Precision, f64, f64)> =
        [(Precision::F64, tol64, tol64), (Precision::F32, 2e-4, 2e-4)]
            .into_iter()
            .filter(|p| p.0 == Precision::F64 || f32_ok)
            .collect();
    for (precision, tp, tv) in precisions {
        let o = KrigeOptions { precision, ..opts };
        let got = krige_grid(be, set, v, o, &g, external);
        if matches!(be, Backend::Cuda(_)) {
            assert!(got.evaluated.starts_with("cuda"), "{}", got.evaluated);
            assert!(got.device_seconds.is_some());
        }
        compare(
            &format!("{what} {precision:?} prediction"),
            &cpu.values,
            &got.values,
            spread,
            tp,
        );
        compare(
            &format!("{what} {precision:?} variance"),
            cpu.variance.as_ref().unwrap(),
            got.variance.as_ref().unwrap(),
            sill,
            tv,
        );
    }
}

#[test]
fn global_kriging_on_every_backend_equals_the_cpu() {
    for_each_backend(|be| {
        let set = wells(120, 3, 1, true);
        let exp = Variogram::new(Model::Exponential, 40.0, 900.0, 1.0).unwrap();
        case(
            be,
            "ordinary exponential",
            &set,
            &exp,
            KrigeOptions::default(),
        );
        case(
            be,
            "simple spherical anisotropic",
            &set,
            &Variogram::new(Model::Spherical, 40.0, 1200.0, 0.5).unwrap(),
            KrigeOptions {
                kind: Kind::Simple { mean: 85.0 },
                anisotropy: Some(Anisotropy {
                    azimuth_deg: 30.0,
                    ratio: 0.5,
                }),
                ..KrigeOptions::default()
            },
        );
        case(
            be,
            "universal quadratic gaussian, nugget as error",
            &set,
            &Variogram::new(Model::Gaussian, 20.0, 700.0, 2.0).unwrap(),
            KrigeOptions {
                kind: Kind::Universal {
                    drift: Drift::Quadratic,
                },
                nugget: NuggetMode::MeasurementError,
                ..KrigeOptions::default()
            },
        );
        let nested = Variogram {
            nugget: 0.5,
            structures: vec![
                Structure::new(Model::Matern { nu: 1.2 }, 20.0, 800.0),
                Structure::new(Model::Cubic, 10.0, 1500.0),
            ],
        };
        case(
            be,
            "ordinary matern + cubic",
            &set,
            &nested,
            KrigeOptions::default(),
        );
        case(
            be,
            "universal linear, power variogram",
            &set,
            &Variogram::new(Model::Power { exponent: 1.4 }, 0.05, 1.0, 0.5).unwrap(),
            KrigeOptions {
                kind: Kind::Universal {
                    drift: Drift::Linear,
                },
                ..KrigeOptions::default()
            },
        );
    });
}

#[test]
fn local_kriging_on_every_backend_equals_the_cpu() {
    for_each_backend(|be| {
        let set = wells(400, 2, 2, true);
        let exp = Variogram::new(Model::Exponential, 40.0, 600.0, 1.0).unwrap();
        case(
            be,
            "local 16 ordinary",
            &set,
            &exp,
            KrigeOptions {
                neighbourhood: Neighbourhood::Local {
                    k: 16,
                    radius: None,
                },
                ..KrigeOptions::default()
            },
        );
        case(
            be,
            "local 32 within 250 m, universal linear, anisotropic",
            &set,
            &exp,
            KrigeOptions {
                kind: Kind::Universal {
                    drift: Drift::Linear,
                },
                anisotropy: Some(Anisotropy {
                    azimuth_deg: 110.0,
                    ratio: 0.6,
                }),
                neighbourhood: Neighbourhood::Local {
                    k: 32,
                    radius: Some(250.0),
                },
                ..KrigeOptions::default()
            },
        );
        case(
            be,
            "local 8 simple",
            &set,
            &exp,
            KrigeOptions {
                kind: Kind::Simple { mean: 90.0 },
                neighbourhood: Neighbourhood::Local { k: 8, radius: None },
                ..KrigeOptions::default()
            },
        );
    });
}

/// A smooth "DEM" on 50 m cells covering the wells' grid and its blocks' points.
fn dem() -> Arc<ExternalDrift> {
    let grid = GridSpec::from_extent(
        Extent::new(4.2e5 - 400.0, 5.1e6 - 400.0, 4.2e5 + 2400.0, 5.1e6 + 1900.0).unwrap(),
        50.0,
    )
    .unwrap();
    let mut v = Vec::with_capacity(grid.n_cells());
    for r in 0..grid.rows {
        for c in 0..grid.cols {
            let (x, y) = (25.0 + 50.0 * c as f64, 2275.0 - 50.0 * r as f64);
            v.push(300.0 + 0.02 * x - 0.05 * y + 15.0 * (x / 400.0).sin() * (y / 350.0).cos());
        }
    }
    Arc::new(ExternalDrift::new(grid, v, "dem").unwrap())
}

fn blocks(size: f64, discretisation: Discretisation) -> Option<Block> {
    Some(Block {
        size_x_m: size,
        size_y_m: size,
        discretisation,
    })
}

#[test]
fn blocks_and_external_drifts_on_every_backend_equal_the_cpu() {
    for_each_backend(|be| {
        let set = wells(150, 2, 3, true);
        let dem = dem();
        let exp = Variogram::new(Model::Exponential, 40.0, 900.0, 1.0).unwrap();
        let sph = Variogram::new(Model::Spherical, 30.0, 1100.0, 0.5).unwrap();
        let local = |k| Neighbourhood::Local { k, radius: None };
        let ked = |drift| Kind::Universal { drift };
        case(
            be,
            "global ordinary, 100 m Gauss blocks",
            &set,
            &exp,
            KrigeOptions {
                block: blocks(100.0, Discretisation::Gauss),
                ..KrigeOptions::default()
            },
        );
        case(
            be,
            "global simple, anisotropic, 60 m blocks of 3 x 3",
            &set,
            &sph,
            KrigeOptions {
                kind: Kind::Simple { mean: 85.0 },
                anisotropy: Some(Anisotropy {
                    azimuth_deg: 30.0,
                    ratio: 0.5,
                }),
                block: blocks(60.0, Discretisation::Regular { n: 3 }),
                ..KrigeOptions::default()
            },
        );
        case_with(
            be,
            "global KED",
            &set,
            &exp,
            KrigeOptions {
                kind: ked(Drift::External),
                ..KrigeOptions::default()
            },
            Some(&dem),
        );
        case_with(
            be,
            "global linear + external drift, anisotropic, 80 m blocks",
            &set,
            &sph,
            KrigeOptions {
                kind: ked(Drift::LinearExternal),
                anisotropy: Some(Anisotropy {
                    azimuth_deg: 120.0,
                    ratio: 0.7,
                }),
                block: blocks(80.0, Discretisation::Gauss),
                ..KrigeOptions::default()
            },
            Some(&dem),
        );
        case(
            be,
            "local 16 ordinary, 100 m blocks",
            &set,
            &exp,
            KrigeOptions {
                neighbourhood: local(16),
                block: blocks(100.0, Discretisation::Regular { n: 4 }),
                ..KrigeOptions::default()
            },
        );
        case_with(
            be,
            "local 24 KED",
            &set,
            &exp,
            KrigeOptions {
                kind: ked(Drift::External),
                neighbourhood: local(24),
                ..KrigeOptions::default()
            },
            Some(&dem),
        );
        case_with(
            be,
            "local 32 linear + external drift, 50 m Gauss blocks",
            &set,
            &sph,
            KrigeOptions {
                kind: ked(Drift::LinearExternal),
                neighbourhood: local(32),
                block: blocks(50.0, Discretisation::Gauss),
                ..KrigeOptions::default()
            },
            Some(&dem),
        );
    });
}
