//! Tests of the kriging kernels against straightforward f64 references written here.
//!
//! Host-only tests (no GPU): parameter-struct sizes, the Matérn constants and evaluation against
//! an independent quadrature of K_ν, the node grid, covariance validation, the NVRTC compile of
//! the module (when libnvrtc is loadable). GPU tests use [`test_gpu`] (skip without a GPU, fail
//! with GEOFIELD_REQUIRE_GPU=1) and compare every kernel with a reference on seeded random inputs
//! at several sizes, including n = 1 and 2 and nodes that coincide with samples. `bench_kriging`
//! (ignored) times the targets; run it on the GPU machine with `--ignored --nocapture`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::cov::{id, matern_gen};
use super::params::PARAM_SIZES;
use super::*;
use crate::{compile_with_log, module_source, nvrtc_present, test_gpu};

// ---------------------------------------------------------------------------------------------
// Small helpers: a seeded generator and dense f64 linear algebra.
// ---------------------------------------------------------------------------------------------
/// The tests' seeded generator (PCG64, as every test of the project uses).
struct Rng(rand_pcg::Pcg64);
impl Rng {
    fn seeded(seed: u64) -> Self {
        use rand::SeedableRng;
        Rng(rand_pcg::Pcg64::seed_from_u64(seed))
    }
    fn next(&mut self) -> f64 {
        rand::Rng::random::<f64>(&mut self.0)
    }
    fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.next()
    }
}

/// Solves A x = b (A n × n row-major) by Gaussian elimination with partial pivoting.
fn solve(mut a: Vec<f64>, mut b: Vec<f64>, n: usize) -> Option<Vec<f64>> {
    for c in 0..n {
        let piv = (c..n).max_by(|&i, &j| a[i * n + c].abs().total_cmp(&a[j * n + c].abs()))?;
        if a[piv * n + c] == 0.0 {
            return None;
        }
        if piv != c {
            for j in 0..n {
                a.swap(c * n + j, piv * n + j);
            }
            b.swap(c, piv);
        }
        for i in c + 1..n {
            let f = a[i * n + c] / a[c * n + c];
            for j in c..n {
                a[i * n + j] -= f * a[c * n + j];
            }
            b[i] -= f * b[c];
        }
    }
    let mut x = vec![0.0; n];
    for i in (0..n).rev() {
        let mut s = b[i];
        for j in i + 1..n {
            s -= a[i * n + j] * x[j];
        }
        x[i] = s / a[i * n + i];
    }
    Some(x)
}

/// Lower Cholesky factor (row-major), None if not positive definite.
fn cholesky(a: &[f64], n: usize) -> Option<Vec<f64>> {
    let mut l = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..=i {
            let mut s = a[i * n + j];
            for k in 0..j {
                s -= l[i * n + k] * l[j * n + k];
            }
            if i == j {
                if s <= 0.0 {
                    return None;
                }
                l[i * n + i] = s.sqrt();
            } else {
                l[i * n + j] = s / l[j * n + j];
            }
        }
    }
    Some(l)
}

/// Inverse of a lower-triangular matrix.
fn lower_inverse(l: &[f64], n: usize) -> Vec<f64> {
    let mut inv = vec![0.0; n * n];
    for c in 0..n {
        for i in c..n {
            let mut s = if i == c { 1.0 } else { 0.0 };
            for k in c..i {
                s -= l[i * n + k] * inv[k * n + c];
            }
            inv[i * n + c] = s / l[i * n + i];
        }
    }
    inv
}

fn drift(x: f64, y: f64, s: f64, p: usize) -> Vec<f64> {
    let (u, v) = (x / s, y / s);
    [1.0, u, v, u * u, u * v, v * v][..p].to_vec()
}

// ---------------------------------------------------------------------------------------------
// Reference covariance: the textbook formulas; Matérn through a quadrature of K_ν.
// ---------------------------------------------------------------------------------------------
/// ln K_ν(x) by the trapezoidal rule on ∫₀^∞ exp(−x cosh t) cosh(νt) dt with a fine step,
/// in the log domain (independent of the kernels' Temme series and recurrence).
fn ln_bessel_k(nu: f64, x: f64) -> f64 {
    let h = 0.002;
    let ln_f = |t: f64| -x * t.cosh() + nu * t + (0.5 * (1.0 + (-2.0 * nu * t).exp())).ln();
    let mut peak = f64::NEG_INFINITY;
    let mut t_peak = 0.0;
    let mut t = 0.0;
    while t < 800.0 {
        let v = ln_f(t);
        if v > peak {
            peak = v;
            t_peak = t;
        }
        if v < peak - 60.0 && t > 1.0 {
            break;
        }
        t += h;
    }
    let mut s = 0.5 * (ln_f(0.0) - peak).exp();
    let mut j = 1;
    loop {
        let t = h * f64::from(j);
        let v = ln_f(t) - peak;
        s += v.exp();
        if v < -60.0 && t > t_peak + 1.0 {
            break;
        }
        j += 1;
    }
    peak + (h * s).ln()
}

fn ref_matern(nu: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    ((1.0 - nu) * std::f64::consts::LN_2 - ln_gamma(nu) + nu * x.ln() + ln_bessel_k(nu, x))
        .exp()
        .min(1.0)
}

fn ref_rho(m: &CovModel, r: f64, h: f64) -> f64 {
    match *m {
        CovModel::Exponential => (-3.0 * r).exp(),
        CovModel::Gaussian => (-3.0 * r * r).exp(),
        CovModel::Spherical => {
            if r < 1.0 {
                1.0 - 1.5 * r + 0.5 * r.powi(3)
            } else {
                0.0
            }
        }
        CovModel::Cubic => {
            if r < 1.0 {
                1.0 - (7.0 * r.powi(2) - 8.75 * r.powi(3) + 3.5 * r.powi(5) - 0.75 * r.powi(7))
            } else {
                0.0
            }
        }
        CovModel::Stable { alpha } => (-3.0 * r.powf(alpha)).exp(),
        CovModel::Matern { nu, scale } => {
            let x = scale * r;
            match nu {
                0.5 => (-x).exp(),
                1.5 => (1.0 + x) * (-x).exp(),
                2.5 => (1.0 + x + x * x / 3.0) * (-x).exp(),
                // the host mirror of the device algorithm, itself checked against the
                // quadrature in `matern_general_nu_matches_quadrature` (the quadrature is too
                // slow per pair)
                _ => matern_gen(&matern_params(nu), x),
            }
        }
        CovModel::Power { exponent } => -h.powf(exponent),
        CovModel::Linear => -h,
    }
}

fn matern_params(nu: f64) -> StructureParams {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static CACHE: OnceLock<Mutex<HashMap<u64, StructureParams>>> = OnceLock::new();
    let mut m = CACHE.get_or_init(Default::default).lock().unwrap();
    *m.entry(nu.to_bits()).or_insert_with(|| {
        let mut p = cov1(CovModel::Matern { nu, scale: 1.0 }, 1.0, 1.0, 0.0)
            .to_params()
            .unwrap();
        p.s[0].model = id::MAT;
        p.s[0]
    })
}

fn ref_cov(c: &Covariance, h: f64) -> f64 {
    let bounded = c.structures.iter().all(|s| s.model.is_bounded());
    let c_zero = if bounded {
        c.nugget + c.structures.iter().map(|s| s.sill).sum::<f64>()
    } else {
        c.pseudo_base.unwrap()
    };
    if c.exact && h <= c.eps {
        return c_zero;
    }
    let base = if bounded { 0.0 } else { c_zero - c.nugget };
    base + c
        .structures
        .iter()
        .map(|s| s.sill * ref_rho(&s.model, h / s.range, h))
        .sum::<f64>()
}

fn cov1(model: CovModel, sill: f64, range: f64, nugget: f64) -> Covariance {
    Covariance {
        nugget,
        structures: vec![CovStructure { model, sill, range }],
        pseudo_base: None,
        eps: 1e-9,
        exact: true,
        var_zero: None,
    }
}

// ---------------------------------------------------------------------------------------------
// Host-only tests.
// ---------------------------------------------------------------------------------------------
#[test]
fn param_struct_sizes() {
    for (name, rust, c) in PARAM_SIZES {
        assert_eq!(rust, c, "{name}: Rust {rust} bytes, C asserts {c}");
    }
    let src = module_source("kriging").unwrap();
    for (name, _, c) in PARAM_SIZES {
        assert!(
            src.contains(&format!("GF_CHECK_SIZE({name}, {c});")),
            "kriging.cu lacks the size check of {name}"
        );
    }
}

#[test]
fn gamma_function_values() {
    let sqrt_pi = std::f64::consts::PI.sqrt();
    let cases = [
        (0.5, sqrt_pi),
        (1.5, 0.5 * sqrt_pi),
        (1.0, 1.0),
        (5.0, 24.0),
        (0.1, 9.513_507_698_668_732),
        (1.7, 0.908_638_732_853_290_4),
    ];
    for (x, want) in cases {
        let got = gamma_fn(x);
        assert!(
            ((got - want) / want).abs() < 2e-15,
            "Gamma({x}) = {got}, want {want}"
        );
    }
    // ln Γ(100) = ln 99!
    let want: f64 = (1..100).map(|i| f64::from(i).ln()).sum();
    assert!((ln_gamma(100.0) - want).abs() < 1e-12 * want);
}

/// The kernels' Matérn algorithm (host mirror, same code path as the device's f64) against an
/// independent quadrature of K_ν: relative error ≤ 1e-12 where ρ ≥ 1e-250.
#[test]
fn matern_general_nu_matches_quadrature() {
    let mut worst = 0.0f64;
    for nu in [
        0.05, 0.3, 0.5, 0.75, 1.0, 1.2, 1.5, 2.0, 2.5, 3.7, 10.0, 20.0, 55.5, 100.0,
    ] {
        let cov = cov1(CovModel::Matern { nu, scale: 1.0 }, 1.0, 1.0, 0.0);
        let mut p = cov.to_params().unwrap();
        p.s[0].model = id::MAT; // the general algorithm even where a closed form exists
        for i in 0..=60 {
            let x = 10f64.powf(-6.0 + 0.14 * f64::from(i)); // 1e-6 ..= ~2.5e2
            let want = ref_matern(nu, x);
            if want < 1e-250 {
                continue;
            }
            let got = matern_gen(&p.s[0], x);
            let rel = ((got - want) / want).abs();
            worst = worst.max(rel);
            assert!(rel < 1e-12, "nu {nu} x {x}: {got} vs quadrature {want}");
        }
    }
    eprintln!("Matern general nu: worst relative error {worst:.2e}");
    // closed forms agree with the quadrature
    for (nu, f) in [
        (0.5, (|x: f64| (-x).exp()) as fn(f64) -> f64),
        (1.5, |x: f64| (1.0 + x) * (-x).exp()),
        (2.5, |x: f64| (1.0 + x + x * x / 3.0) * (-x).exp()),
    ] {
        for x in [1e-3, 0.1, 1.0, 2.0, 3.0, 10.0] {
            assert!(((ref_matern(nu, x) - f(x)) / f(x)).abs() < 1e-12);
        }
    }
}

#[test]
fn host_covariance_matches_reference() {
    let models = [
        CovModel::Exponential,
        CovModel::Gaussian,
        CovModel::Spherical,
        CovModel::Cubic,
        CovModel::Stable { alpha: 1.3 },
        CovModel::Matern {
            nu: 0.8,
            scale: 2.1,
        },
        CovModel::Matern {
            nu: 1.5,
            scale: 4.7,
        },
    ];
    for m in models {
        for exact in [true, false] {
            let mut c = cov1(m, 2.0, 300.0, 0.3);
            c.exact = exact;
            let p = c.to_params().unwrap();
            for h in [0.0, 1e-10, 0.5, 10.0, 150.0, 299.0, 301.0, 900.0] {
                let (got, want) = (p.eval(h), ref_cov(&c, h));
                assert!((got - want).abs() < 1e-13, "{m:?} h {h}: {got} vs {want}");
            }
        }
    }
    let c = Covariance {
        nugget: 0.2,
        structures: vec![
            CovStructure {
                model: CovModel::Power { exponent: 1.5 },
                sill: 0.01,
                range: 0.0,
            },
            CovStructure {
                model: CovModel::Linear,
                sill: 0.003,
                range: 0.0,
            },
        ],
        pseudo_base: Some(50.0),
        eps: 1e-9,
        exact: true,
        var_zero: None,
    };
    let p = c.to_params().unwrap();
    assert_eq!(p.c_zero, 50.0);
    for h in [0.0, 1.0, 100.0] {
        assert!((p.eval(h) - ref_cov(&c, h)).abs() < 1e-12);
    }
}

#[test]
fn covariance_validation() {
    let bad = [
        cov1(CovModel::Exponential, 1.0, 0.0, 0.0),
        cov1(CovModel::Exponential, -1.0, 10.0, 0.0),
        cov1(CovModel::Stable { alpha: 2.5 }, 1.0, 10.0, 0.0),
        cov1(
            CovModel::Matern {
                nu: 0.0,
                scale: 1.0,
            },
            1.0,
            10.0,
            0.0,
        ),
        cov1(CovModel::Power { exponent: 1.0 }, 1.0, 1.0, 0.0), // no pseudo base
        cov1(CovModel::Exponential, 1.0, 10.0, f64::NAN),
    ];
    for c in bad {
        assert!(
            matches!(c.to_params(), Err(CudaError::InvalidInput { .. })),
            "{c:?}"
        );
    }
    let mut five = cov1(CovModel::Exponential, 1.0, 10.0, 0.0);
    five.structures = vec![five.structures[0]; 5];
    assert!(five.to_params().is_err());
}

#[test]
fn node_grid_order_is_pinned() {
    let g = NodeGrid {
        origin: [-0.1, 0.7],
        col_step: [0.3, 0.01],
        row_step: [-0.02, 0.3],
        rows: 5,
        cols: 7,
        row0: 0,
    };
    let (x, y) = g.node(3, 4);
    assert_eq!(x.to_bits(), ((-0.1 + 4.0 * 0.3) + 3.0 * -0.02f64).to_bits());
    assert_eq!(y.to_bits(), ((0.7 + 4.0 * 0.01) + 3.0 * 0.3f64).to_bits());
    assert_eq!(g.len(), 35);
    // A window places its nodes where the whole grid does, bit for bit.
    let w = g.window(2..5);
    assert_eq!((w.rows, w.row0, w.len()), (3, 2, 21));
    let (wx, wy) = w.node(1, 4);
    assert_eq!((wx.to_bits(), wy.to_bits()), (x.to_bits(), y.to_bits()));
    assert_eq!(w.window(1..9).row0, 3);
    assert_eq!(w.window(1..9).rows, 2);
}

#[test]
fn kriging_module_compiles() {
    if !nvrtc_present() {
        eprintln!("skipping: {}", CudaError::NvrtcMissing);
        return;
    }
    let src = module_source("kriging").unwrap();
    let t = std::time::Instant::now();
    let c = match compile_with_log("kriging", src, "sm_90") {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    };
    eprintln!(
        "kriging sm_90: {:.1} s, {} bytes of PTX",
        t.elapsed().as_secs_f64(),
        c.ptx.len()
    );
    for name in [
        "kriging_dual_f32fast_exp_h1",
        "kriging_dual_f64_gen_h16",
        "kriging_var_k_f32",
        "kriging_var_reduce_f64",
        "kriging_nodes",
        "kriging_local_f32",
        "kriging_local_f64",
        "kriging_paper_f32_n16",
        "kriging_paper_f64_n64",
    ] {
        assert!(c.ptx.contains(&format!(".entry {name}(")), "{name} missing");
    }
    let spills: Vec<&str> = c
        .log
        .lines()
        .filter(|l| l.contains("spill") && !l.contains(" 0 bytes spill stores"))
        .collect();
    assert!(spills.is_empty(), "spills: {spills:?}");
}

// ---------------------------------------------------------------------------------------------
// Test data.
// ---------------------------------------------------------------------------------------------
struct Case {
    grid: NodeGrid,
    xy: Vec<f64>,
}

/// n samples uniform in [-500, 500]², the first `coincide` of them moved onto grid nodes; a
/// slightly rotated grid of rows × cols covering the same square.
fn case(n: usize, rows: usize, cols: usize, coincide: usize, seed: u64) -> Case {
    let mut rng = Rng::seeded(seed);
    let grid = NodeGrid {
        origin: [-520.0, -480.0],
        col_step: [1040.0 / cols as f64, 7.0 / cols as f64],
        row_step: [-5.0 / rows as f64, 1000.0 / rows as f64],
        rows,
        cols,
        row0: 0,
    };
    let mut xy = Vec::with_capacity(2 * n);
    // distinct nodes (duplicate samples would make the sample matrix singular)
    let mut picked = std::collections::BTreeSet::new();
    for i in 0..n {
        if i < coincide.min(rows * cols) {
            let mut j = (rng.next() * (rows * cols) as f64) as usize;
            while !picked.insert(j) {
                j = (j + 1) % (rows * cols);
            }
            let (x, y) = grid.node(j / cols, j % cols);
            xy.extend([x, y]);
        } else {
            xy.extend([rng.uniform(-500.0, 500.0), rng.uniform(-500.0, 500.0)]);
        }
    }
    Case { grid, xy }
}

fn values(xy: &[f64], hh: usize, seed: u64) -> Vec<f64> {
    let mut rng = Rng::seeded(seed);
    let n = xy.len() / 2;
    let mut z = Vec::with_capacity(n * hh);
    for i in 0..n {
        for h in 0..hh {
            let (x, y) = (xy[2 * i], xy[2 * i + 1]);
            z.push(
                (x / (150.0 + 10.0 * h as f64)).sin()
                    + (y / 200.0).cos()
                    + 0.1 * rng.uniform(-1.0, 1.0),
            );
        }
    }
    z
}

fn max_err<T: KrigeFloat>(got: &[T], want: &[f64]) -> f64 {
    got.iter()
        .zip(want)
        .map(|(g, w)| {
            let g = g.widen();
            if g.is_nan() && w.is_nan() {
                0.0
            } else if g.is_nan() != w.is_nan() {
                f64::INFINITY
            } else {
                (g - w).abs()
            }
        })
        .fold(0.0, f64::max)
}

mod bench;
mod dual;
mod local;
mod paper;
mod variance;
