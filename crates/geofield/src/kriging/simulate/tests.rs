use geofield_core::{Extent, GridSpec};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

use super::spectral::{self, Mode, field_grid, field_points, sincos};
use super::tabulated;
use super::*;
use crate::kriging::{self, KrigeOptions, Model, NuggetMode, Structure, Variogram};

const EPS: f64 = f64::EPSILON;

#[test]
fn sincos_is_within_two_ulps_of_the_library() {
    // For |t| < 1.6e6 the reduction is exact but for r's last rounding (n·P₁, n·P₂ exact; the
    // neglected π/2 − P₁ − P₂ − P₃ is 1e-37·n), and the Taylor remainders are below 5e-17:
    // ours is within ~1.5 ulp of sin/cos, the library's within 1 ulp: 4 ε absolute.
    let mut rng = Pcg64::seed_from_u64(3);
    for i in 0..200_000 {
        let scale = [1.0, 10.0, 1e3, 1.5e6][i % 4];
        let t: f64 = rng.random_range(-scale..scale);
        let (s, c) = sincos(t);
        assert!(
            (s - t.sin()).abs() <= 4.0 * EPS,
            "sin {t}: {s} vs {}",
            t.sin()
        );
        assert!(
            (c - t.cos()).abs() <= 4.0 * EPS,
            "cos {t}: {c} vs {}",
            t.cos()
        );
    }
    for t in [
        0.0,
        std::f64::consts::FRAC_PI_4,
        std::f64::consts::PI,
        -1e-300,
    ] {
        let (s, c) = sincos(t);
        assert!((s - t.sin()).abs() <= 4.0 * EPS && (c - t.cos()).abs() <= 4.0 * EPS);
    }
    // Huge phases stay in [−1, 1] and finite.
    for t in [1e12, -3e15, 1e300] {
        let (s, c) = sincos(t);
        assert!(
            s.abs() <= 1.0 + 1e-12 && c.abs() <= 1.0 + 1e-12,
            "{t}: {s} {c}"
        );
    }
}

fn one(model: Model, range: f64) -> Variogram {
    Variogram {
        nugget: 0.0,
        structures: vec![Structure::new(model, 1.0, range)],
    }
}

#[test]
fn the_modes_have_the_model_as_characteristic_function() {
    // ρ(h) = E[cos(k·h)]: the mean of cos over M independent modes has standard error at most
    // 1/√M (|cos| ≤ 1); 5 standard errors, over 4 lags × 3 directions × 6 models.
    let m = 100_000;
    let tol = 5.0 / (m as f64).sqrt();
    for model in [
        Model::Exponential,
        Model::Gaussian,
        Model::Matern { nu: 1.5 },
        Model::Matern { nu: 0.3 },
        Model::Stable { alpha: 1.0 },
        Model::Stable { alpha: 1.6 },
    ] {
        let vg = one(model, 40.0);
        let mut rng = Pcg64::seed_from_u64(11);
        let modes = spectral::draw_modes(&vg, m, &mut rng).unwrap();
        for h in [10.0, 20.0, 40.0, 80.0] {
            for dir in [0.0f64, 1.0, 2.3] {
                let (hx, hy) = (h * dir.cos(), h * dir.sin());
                let mean = modes
                    .iter()
                    .map(|k| (k[0] * hx + k[1] * hy).cos())
                    .sum::<f64>()
                    / m as f64;
                let rho = vg.covariance(h).unwrap();
                assert!(
                    (mean - rho).abs() < tol,
                    "{model:?} h = {h}: E cos = {mean:.4}, rho = {rho:.4}"
                );
            }
        }
        // The amplitudes: √(c/M)·N(0, 1), so Σ (sa² + sb²) ≈ 2c.
        let p: f64 = modes.iter().map(|k| k[2] * k[2] + k[3] * k[3]).sum();
        assert!((p - 2.0).abs() < 5.0 * (4.0 / m as f64).sqrt(), "{p}");
    }
    for bad in [Model::Linear, Model::Power { exponent: 1.0 }] {
        let e = spectral::check_variogram(&one(bad, 10.0)).unwrap_err();
        assert!(e.to_string().contains(bad.name()), "{e}");
    }
    for good in [Model::Spherical, Model::Cubic] {
        assert!(spectral::check_variogram(&one(good, 10.0)).is_ok());
    }
}

#[test]
fn grid_fields_equal_the_direct_sums_at_the_nodes() {
    // The separable product rounds the phase differently from k·x at the node: each mode's
    // phase error is a few ulps of |θ| (≤ 4 ε (|k|·|x| + 1)), times its amplitude.
    let vg = Variogram {
        nugget: 0.0,
        structures: vec![
            Structure::new(Model::Exponential, 2.0, 30.0),
            Structure::new(Model::Gaussian, 1.0, 80.0),
        ],
    };
    let mut rng = Pcg64::seed_from_u64(5);
    let modes = spectral::draw_modes(&vg, 300, &mut rng).unwrap();
    let grid =
        GridSpec::from_extent(Extent::new(1000.0, 2000.0, 1130.0, 2090.0).unwrap(), 2.0).unwrap();
    let frame = super::Frame::new(&[1000.0, 1100.0], &[2000.0, 2050.0], None);
    let map = frame.node_grid(&grid);
    let z = field_grid(&map, &modes);
    let (mut px, mut py) = (vec![], vec![]);
    for r in 0..grid.rows {
        for c in 0..grid.cols {
            let (x, y) = map.node(r, c);
            px.push(x);
            py.push(y);
        }
    }
    let direct = field_points(&px, &py, &modes);
    let reach = px.iter().chain(&py).fold(0.0f64, |m, v| m.max(v.abs())) * 2.0;
    let tol: f64 = modes
        .iter()
        .map(|k: &Mode| {
            (k[2].abs() + k[3].abs()) * 4.0 * EPS * ((k[0].abs() + k[1].abs()) * reach + 1.0)
        })
        .sum::<f64>()
        + 64.0 * EPS;
    for (i, (a, b)) in z.iter().zip(&direct).enumerate() {
        assert!((a - b).abs() <= tol, "node {i}: {a} vs {b} (tol {tol:.2e})");
    }
}

/// ½(Z(x) − Z(x+h))² over 40 pairs of points at lag h, 2000 apart (independent for ranges
/// ≤ 100), in `reals` realisations: its mean is γ(h) and, Gaussian, its standard deviation
/// √2·γ(h); the mean must be within 5 standard errors of the mean of 40·R terms.
fn assert_reproduces(vg: &Variogram, lags: &[f64], reals: u64) {
    for &h in lags {
        let (mut xs, mut ys) = (vec![], vec![]);
        for p in 0..40 {
            let x0 = 2000.0 * p as f64;
            xs.extend([x0, x0 + h * 0.6]);
            ys.extend([0.0, h * 0.8]);
        }
        let mut sum = 0.0;
        for i in 0..reals {
            let mut rng = Pcg64::seed_from_u64(1000 + i);
            let modes = spectral::draw_modes(vg, 1000, &mut rng).unwrap();
            let z = field_points(&xs, &ys, &modes);
            sum += z
                .chunks(2)
                .map(|p| 0.5 * (p[0] - p[1]).powi(2))
                .sum::<f64>();
        }
        let n = (40 * reals) as f64;
        let g = vg.gamma(h);
        let est = sum / n;
        assert!(
            (est - g).abs() < 5.0 * 2f64.sqrt() * g / n.sqrt(),
            "h = {h}: {est:.4} vs gamma {g:.4}"
        );
    }
}

#[test]
fn unconditional_fields_reproduce_the_variogram() {
    let vg = Variogram {
        nugget: 0.0,
        structures: vec![
            Structure::new(Model::Exponential, 1.5, 20.0),
            Structure::new(Model::Gaussian, 0.5, 60.0),
        ],
    };
    assert_reproduces(&vg, &[5.0, 20.0, 60.0], 500);
    // The tabulated laws, nested: lags inside both ranges, between them and beyond both (the
    // sill, 1.8).
    let vg = Variogram {
        nugget: 0.0,
        structures: vec![
            Structure::new(Model::Spherical, 1.0, 30.0),
            Structure::new(Model::Cubic, 0.8, 70.0),
        ],
    };
    assert_reproduces(&vg, &[5.0, 20.0, 45.0, 100.0], 500);
}

fn wells() -> SampleSet {
    let xs = vec![12.0, 47.0, 85.0, 30.0, 66.0, 91.0, 8.0, 55.0];
    let ys = vec![15.0, 22.0, 9.0, 58.0, 71.0, 48.0, 88.0, 93.0];
    let zs = vec![3.1, 4.0, 2.2, 5.3, 6.1, 3.7, 4.4, 5.9];
    SampleSet::new(xs, ys, vec![zs])
}

fn params(target: Target, nugget: f64, mode: NuggetMode) -> KrigeParams {
    let vg = Variogram {
        nugget,
        structures: vec![Structure::new(Model::Exponential, 2.0, 60.0)],
    };
    KrigeParams {
        options: KrigeOptions {
            nugget: mode,
            ..KrigeOptions::default()
        },
        ..KrigeParams::new(vg, target)
    }
}

#[test]
fn realisations_honour_the_data_exactly() {
    // Exact kriging returns the residual at a sample to rounding (the system's solve: ~1e-12 of
    // the values' size); the unconditional field cancels exactly (same draw at the sample).
    let set = wells();
    for nugget in [0.0, 0.4] {
        let target = Target::Points {
            xs: set.xs.clone(),
            ys: set.ys.clone(),
        };
        let p = params(target, nugget, NuggetMode::Exact);
        let sim = SimParams {
            realisations: 5,
            seed: 9,
            modes: 500,
        };
        let s = simulate(&Backend::Cpu, &set, &p, &sim).unwrap();
        for v in s.values.chunks(s.nodes) {
            for (a, b) in v.iter().zip(&set.surfaces[0].values) {
                assert!((a - b).abs() < 1e-9, "nugget {nugget}: {a} vs {b}");
            }
        }
    }
}

#[test]
fn the_ensemble_has_the_kriging_mean_and_variance() {
    // At 6 nodes, N realisations: the mean is within 5 standard errors √(σ²_K/N) of the kriging
    // prediction, the sample variance within 5·√(2/(N−1)) relative of σ²_K (Gaussian).
    let set = wells();
    let grid = GridSpec::from_extent(Extent::new(0.0, 0.0, 100.0, 100.0).unwrap(), 20.0).unwrap();
    for (nugget, mode, model) in [
        (0.0, NuggetMode::Exact, Model::Exponential),
        (0.3, NuggetMode::Exact, Model::Exponential),
        (0.3, NuggetMode::MeasurementError, Model::Exponential),
        (0.1, NuggetMode::Exact, Model::Spherical),
        (0.0, NuggetMode::Exact, Model::Cubic),
    ] {
        let mut p = params(Target::Grid(grid), nugget, mode);
        p.variograms[0].structures[0].model = model;
        let n = 2000;
        let sim = SimParams {
            realisations: n,
            seed: 21,
            modes: 1000,
        };
        let s = simulate(&Backend::Cpu, &set, &p, &sim).unwrap();
        p.variance = true;
        let k = kriging::krige(&Backend::Cpu, &set, &p).unwrap();
        let var = k.prediction.variance.as_ref().unwrap();
        for node in [0, 7, 12, 18, 21, 24] {
            let vals: Vec<f64> = (0..n).map(|i| s.realisation(i)[node]).collect();
            let mean = vals.iter().sum::<f64>() / n as f64;
            let sv = vals.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            let (pk, vk) = (k.prediction.values[0][node], var[0][node]);
            // The kriging variance of Z (exact nugget) or of the signal (measurement error:
            // the nugget is not part of the realisations).
            let vk = if mode == NuggetMode::MeasurementError {
                vk - nugget
            } else {
                vk
            };
            assert!(
                (mean - pk).abs() < 5.0 * (vk / n as f64).sqrt(),
                "{model:?} {mode:?} node {node}: mean {mean} vs {pk}"
            );
            let rel = 5.0 * (2.0 / (n - 1) as f64).sqrt();
            assert!(
                (sv / vk - 1.0).abs() < rel,
                "{model:?} {mode:?} node {node}: var {sv} vs {vk}"
            );
        }
    }
}

#[test]
fn realisations_do_not_depend_on_how_many_are_drawn_or_on_threads() {
    let set = wells();
    let grid = GridSpec::from_extent(Extent::new(0.0, 0.0, 100.0, 60.0).unwrap(), 4.0).unwrap();
    let p = params(Target::Grid(grid), 0.2, NuggetMode::Exact);
    let run = |n, threads| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let sim = SimParams {
            realisations: n,
            seed: 4,
            modes: 200,
        };
        pool.install(|| simulate(&Backend::Cpu, &set, &p, &sim).unwrap())
    };
    let a = run(2, 1);
    let b = run(4, 3);
    assert_eq!(a.values[..], b.values[..2 * b.nodes]);
    assert_ne!(b.realisation(0), b.realisation(1));
    let r = b.to_raster().unwrap();
    assert_eq!(r.n_bands(), 4);
}

#[test]
fn bad_requests_are_errors() {
    let set = wells();
    let grid = GridSpec::from_extent(Extent::new(0.0, 0.0, 100.0, 60.0).unwrap(), 4.0).unwrap();
    let p = params(Target::Grid(grid), 0.0, NuggetMode::Exact);
    let sim = SimParams::default();
    let two = SampleSet::new(
        set.xs.clone(),
        set.ys.clone(),
        vec![vec![1.0; 8], vec![2.0; 8]],
    );
    assert!(simulate(&Backend::Cpu, &two, &p, &sim).is_err());
    let mut lin = p.clone();
    lin.variograms[0].structures[0].model = Model::Linear;
    let e = simulate(&Backend::Cpu, &set, &lin, &sim).unwrap_err();
    assert!(e.to_string().contains("linear"), "{e}");
    for bad in [
        SimParams {
            realisations: 0,
            ..sim
        },
        SimParams { modes: 0, ..sim },
        SimParams {
            realisations: MAX_REALISATIONS + 1,
            ..sim
        },
    ] {
        assert!(simulate(&Backend::Cpu, &set, &p, &bad).is_err());
    }
    let huge = GridSpec::from_extent(Extent::new(0.0, 0.0, 1e7, 1e7).unwrap(), 1.0).unwrap();
    let big = SimParams {
        realisations: 100_000,
        ..sim
    };
    assert!(
        simulate(
            &Backend::Cpu,
            &set,
            &params(Target::Grid(huge), 0.0, NuggetMode::Exact),
            &big
        )
        .is_err()
    );
}

/// 5-point Gauss–Legendre on [lo, hi] in `panels` panels.
fn gauss_legendre(f: impl Fn(f64) -> f64, lo: f64, hi: f64, panels: usize) -> f64 {
    const X: [f64; 5] = [
        0.0,
        0.538_469_310_105_683,
        -0.538_469_310_105_683,
        0.906_179_845_938_664,
        -0.906_179_845_938_664,
    ];
    const W: [f64; 5] = [
        0.568_888_888_888_888_9,
        0.478_628_670_499_366_5,
        0.478_628_670_499_366_5,
        0.236_926_885_056_189_1,
        0.236_926_885_056_189_1,
    ];
    let h = (hi - lo) / panels as f64;
    (0..panels)
        .map(|i| {
            let mid = lo + (i as f64 + 0.5) * h;
            X.iter()
                .zip(W)
                .map(|(x, w)| w * f(mid + 0.5 * h * x))
                .sum::<f64>()
                * 0.5
                * h
        })
        .sum()
}

#[test]
fn the_tabulated_law_is_the_models_spectral_law() {
    // Independently of the table's polynomials: G(K) = (2/π) ∫₀¹ C(r) (sin Kr − Kr cos Kr)/r dr
    // with C the variogram's own covariance at range 1, by Gauss–Legendre (5 points on panels
    // of phase K·h ≤ 0.25: the rule's error ~ (Kh)¹⁰/10! < 1e-13). The table's interpolant is
    // within h⁴/384·max|g‴| of G (measured 1.6e-9 at h = 1/16, so 1e-10 at h = 1/32), the
    // tail's closed form within 1e-15: 3e-10 and 1e-12.
    for model in [Model::Spherical, Model::Cubic] {
        let vg = one(model, 1.0);
        let law = tabulated::table(model).unwrap();
        let c = |r: f64| vg.covariance(r).unwrap();
        for k in [
            0.3, 1.7, 3.3, 5.05, 9.01, 17.3, 40.1, 100.7, 255.9, 300.0, 1000.0, 4000.0,
        ] {
            let panels = 64 + 4 * k as usize;
            let g = 2.0 / std::f64::consts::PI
                * gauss_legendre(
                    |r| c(r) * ((k * r).sin() - k * r * (k * r).cos()) / r,
                    0.0,
                    1.0,
                    panels,
                );
            let tol = if k < tabulated::KMAX { 3e-10 } else { 1e-12 };
            let ours = law.cdf_at(k);
            assert!(
                (ours - g).abs() < tol,
                "{model:?} G({k}) = {ours:.15} vs quadrature {g:.15}"
            );
            // The density: g(κ) = (2/π) κ ∫₀¹ C(r) r sin(κr) dr, to 1e-13.
            let d = 2.0 / std::f64::consts::PI
                * k
                * gauss_legendre(|r| c(r) * r * (k * r).sin(), 0.0, 1.0, panels);
            assert!((law.pdf_at(k) - d).abs() < 1e-13, "{model:?} g({k})");
        }
        // The sampler inverts the interpolant: G(G⁻¹(u)) = u to rounding (the Newton steps'
        // end, 1e-15 in t; the tail's to 4 ulps of κ: |Δu| ≤ g·4ε·κ).
        let mut rng = Pcg64::seed_from_u64(8);
        for i in 0..2000 {
            let u: f64 = if i % 2 == 0 {
                rng.random()
            } else {
                1.0 - rng.random::<f64>() * 1e-2
            };
            let k = law.quantile(u);
            assert!(
                (law.cdf_at(k) - u).abs() < 1e-13,
                "{model:?} u = {u}: G({k}) = {}",
                law.cdf_at(k)
            );
        }
    }
    // The spherical model's closed form, (3/π) j₁(κ/2)², j₁(x) = (sin x − x cos x)/x².
    let law = tabulated::table(Model::Spherical).unwrap();
    for k in [0.5f64, 2.0, 7.0, 30.0, 500.0] {
        let x = k / 2.0;
        let j1 = (x.sin() - x * x.cos()) / (x * x);
        let g = 3.0 / std::f64::consts::PI * j1 * j1;
        assert!((law.pdf_at(k) - g).abs() < 1e-14 + 1e-12 * g, "g({k})");
    }
}

#[test]
fn the_tabulated_modes_have_the_model_as_characteristic_function() {
    // E[cos(k·h)] = C(|h|) for the 2-D projection of the 3-D wave vectors: with N modes, the
    // mean of cos is within 4 standard errors (the sample standard deviation of cos over √N)
    // of C, also 0 beyond the range.
    let n = 200_000;
    for model in [Model::Spherical, Model::Cubic] {
        let vg = one(model, 40.0);
        let mut rng = Pcg64::seed_from_u64(17);
        let modes = spectral::draw_modes(&vg, n, &mut rng).unwrap();
        for f in [0.1, 0.25, 0.5, 0.75, 1.0, 1.5] {
            let h = 40.0 * f;
            let dir = 0.7 + f;
            let (hx, hy) = (h * f64::cos(dir), h * f64::sin(dir));
            let cs: Vec<f64> = modes
                .iter()
                .map(|k| (k[0] * hx + k[1] * hy).cos())
                .collect();
            let mean = cs.iter().sum::<f64>() / n as f64;
            let var = cs.iter().map(|c| (c - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            let se = (var / n as f64).sqrt();
            let rho = vg.covariance(h).unwrap();
            assert!(
                (mean - rho).abs() < 4.0 * se,
                "{model:?} h = {h}: E cos = {mean:.5}, C = {rho:.5}, se {se:.1e}"
            );
        }
    }
}
