#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;

const HS: [f64; 9] = [0.0, 1e-9, 3.0, 50.0, 120.0, 299.0, 300.0, 451.0, 2000.0];

fn close(a: f64, b: f64, tol: f64, what: &str) {
    assert!(
        (a - b).abs() <= tol * (1.0 + a.abs().max(b.abs())),
        "{what}: {a} vs {b}"
    );
}

/// Our γ against another library's formula (written as in its source) for the mapped
/// parameters, at distances including 0 and past the range.
fn check(v: &Variogram, other: impl Fn(f64) -> f64, what: &str) {
    for h in HS {
        close(v.gamma(h), other(h), 1e-12, &format!("{what} at h = {h}"));
    }
}

fn bessel_k(nu: f64, x: f64) -> f64 {
    complex_bessel::besselk(nu, num_complex::Complex::new(x, 0.0))
        .unwrap()
        .re
}

fn gamma_fn(x: f64) -> f64 {
    statrs::function::gamma::gamma(x)
}

#[test]
fn the_papers_exponential_is_exponential_with_sill_c_and_range_a() {
    let (c, a) = (400.0, 800.0);
    let v = Variogram::new(Model::Exponential, c, a, 0.0).unwrap();
    check(&v, |h| c * (1.0 - (-3.0 * h / a).exp()), "paper eq. 6");
    assert_eq!(v.covariance(0.0), Some(c));
    close(v.covariance(a).unwrap(), c * (-3.0f64).exp(), 1e-14, "C(a)");
}

#[test]
fn pykrige_mapping() {
    let (ps, a, n) = (2.5, 300.0, 0.3);
    // variogram_models.py: psill * (1 - exp(-d / (range_ / 3))) + nugget, with h > 0 (PyKrige
    // evaluates its models only off the diagonal; γ(0) = 0 is ours and gstat's).
    let nz = |h: f64| if h > 0.0 { n } else { 0.0 };
    let v = Variogram::new(Model::Exponential, ps, a, n).unwrap();
    let r = a;
    check(
        &v,
        |d| ps * (1.0 - (-d / (r / 3.0)).exp()) + nz(d),
        "PyKrige exponential",
    );
    // psill * (1 - exp(-d**2 / (range_ * 4 / 7) ** 2)) + nugget
    let v = Variogram::new(Model::Gaussian, ps, a, n).unwrap();
    let r = 7.0 * a / (4.0 * 3f64.sqrt());
    check(
        &v,
        |d| ps * (1.0 - (-(d * d) / (r * 4.0 / 7.0).powi(2)).exp()) + nz(d),
        "PyKrige gaussian",
    );
    // psill * ((3 d) / (2 range_) - d**3 / (2 range_**3)) + nugget for d <= range_, else psill + nugget
    let v = Variogram::new(Model::Spherical, ps, a, n).unwrap();
    check(
        &v,
        |d| {
            let g = if d <= a {
                3.0 * d / (2.0 * a) - d.powi(3) / (2.0 * a.powi(3))
            } else {
                1.0
            };
            ps * g + nz(d)
        },
        "PyKrige spherical",
    );
    // scale * d**exponent + nugget; slope * d + nugget
    let v = Variogram::new(Model::Power { exponent: 1.4 }, 0.02, 1.0, n).unwrap();
    check(&v, |d| 0.02 * d.powf(1.4) + nz(d), "PyKrige power");
    let v = Variogram::new(Model::Linear, 0.01, 1.0, n).unwrap();
    check(&v, |d| 0.01 * d + nz(d), "PyKrige linear");
}

#[test]
fn gstools_mapping() {
    let (var, a, n) = (1.7, 250.0, 0.1);
    let nz = |h: f64| if h > 0.0 { n } else { 0.0 };
    // covmodel/models.py: variogram = var * (1 - cor(r / len_scale * rescale)) + nugget.
    let v = Variogram::new(Model::Exponential, var, a, n).unwrap();
    let l = a / 3.0;
    check(
        &v,
        |r| var * (1.0 - (-(r / l)).exp()) + nz(r),
        "GSTools Exponential",
    );
    // Gaussian: cor(h) = exp(-h^2), rescale = sqrt(pi) / 2.
    let v = Variogram::new(Model::Gaussian, var, a, n).unwrap();
    let l = a * (std::f64::consts::PI / 12.0).sqrt();
    let s = std::f64::consts::PI.sqrt() / 2.0;
    check(
        &v,
        |r| var * (1.0 - (-(s * r / l).powi(2)).exp()) + nz(r),
        "GSTools Gaussian",
    );
    // Spherical: cor(h) = 1 - 1.5 h + 0.5 h^3 for h < 1, else 0.
    let v = Variogram::new(Model::Spherical, var, a, n).unwrap();
    check(
        &v,
        |r| {
            let h = r / a;
            let cor = if h < 1.0 {
                1.0 - 1.5 * h + 0.5 * h.powi(3)
            } else {
                0.0
            };
            var * (1.0 - cor) + nz(r)
        },
        "GSTools Spherical",
    );
    // Stable: cor(h) = exp(-h^alpha).
    for alpha in [0.5, 1.0, 1.5, 2.0] {
        let v = Variogram::new(Model::Stable { alpha }, var, a, n).unwrap();
        let l = a / 3f64.powf(1.0 / alpha);
        check(
            &v,
            |r| var * (1.0 - (-(r / l).powf(alpha)).exp()) + nz(r),
            &format!("GSTools Stable alpha {alpha}"),
        );
    }
    // Matern: cor(h) = 2^(1-nu)/Gamma(nu) (sqrt(nu) h)^nu K_nu(sqrt(nu) h).
    for nu in [0.3, 0.5, 1.5, 2.7, 10.0] {
        let v = Variogram::new(Model::Matern { nu }, var, a, n).unwrap();
        let l = a * nu.sqrt() / matern_scale(nu);
        check(
            &v,
            |r| {
                let x = nu.sqrt() * r / l;
                let cor = if x == 0.0 {
                    1.0
                } else {
                    2f64.powf(1.0 - nu) / gamma_fn(nu) * x.powf(nu) * bessel_k(nu, x)
                };
                var * (1.0 - cor) + nz(r)
            },
            &format!("GSTools Matern nu {nu}"),
        );
    }
}

#[test]
fn gstat_mapping() {
    let (ps, a, n) = (0.6, 900.0, 0.05);
    let nz = |h: f64| if h > 0.0 { n } else { 0.0 };
    // vgm "Exp": psill (1 - exp(-h / range)); the note measured range 100 -> 0.632 at h = 100.
    let v = Variogram::new(Model::Exponential, ps, a, n).unwrap();
    let r = a / 3.0;
    check(&v, |h| ps * (1.0 - (-h / r).exp()) + nz(h), "gstat Exp");
    // "Gau": psill (1 - exp(-(h / range)^2)).
    let v = Variogram::new(Model::Gaussian, ps, a, n).unwrap();
    let r = a / 3f64.sqrt();
    check(
        &v,
        |h| ps * (1.0 - (-(h / r).powi(2)).exp()) + nz(h),
        "gstat Gau",
    );
    // "Exc": psill (1 - exp(-(h / range)^kappa)).
    let v = Variogram::new(Model::Stable { alpha: 1.3 }, ps, a, n).unwrap();
    let r = a / 3f64.powf(1.0 / 1.3);
    check(
        &v,
        |h| ps * (1.0 - (-(h / r).powf(1.3)).exp()) + nz(h),
        "gstat Exc",
    );
    // "Mat": psill (1 - 1/(2^(kappa-1) Gamma(kappa)) (h/range)^kappa K_kappa(h/range)).
    let kappa = 1.5;
    let v = Variogram::new(Model::Matern { nu: kappa }, ps, a, n).unwrap();
    let r = a / matern_scale(kappa);
    check(
        &v,
        |h| {
            let x = h / r;
            let cor = if x == 0.0 {
                1.0
            } else {
                x.powf(kappa) * bessel_k(kappa, x) / (2f64.powf(kappa - 1.0) * gamma_fn(kappa))
            };
            ps * (1.0 - cor) + nz(h)
        },
        "gstat Mat",
    );
    // "Pow": psill h^range; "Lin" with range 0: psill h.
    let v = Variogram::new(Model::Power { exponent: 0.7 }, 3.0, 1.0, n).unwrap();
    check(&v, |h| 3.0 * h.powf(0.7) + nz(h), "gstat Pow");
}

#[test]
fn scikit_gstat_cubic_and_shapes_at_the_range() {
    // skgstat models.cubic: b + c0 (7 (h/a)^2 - 35/4 (h/a)^3 + 7/2 (h/a)^5 - 3/4 (h/a)^7), a = r.
    let (c, a) = (2.0, 100.0);
    let v = Variogram::new(Model::Cubic, c, a, 0.0).unwrap();
    check(
        &v,
        |h| {
            if h >= a {
                return c;
            }
            let r = h / a;
            c * (7.0 * r.powi(2) - 35.0 / 4.0 * r.powi(3) + 3.5 * r.powi(5) - 0.75 * r.powi(7))
        },
        "skgstat cubic",
    );
    let e3 = 1.0 - (-3.0f64).exp();
    for (m, at_a) in [
        (Model::Exponential, e3),
        (Model::Gaussian, e3),
        (Model::Stable { alpha: 0.7 }, e3),
        (Model::Matern { nu: 0.8 }, e3),
        (Model::Matern { nu: 25.0 }, e3),
        (Model::Spherical, 1.0),
        (Model::Cubic, 1.0),
    ] {
        let v = Variogram::new(m, 1.0, 37.0, 0.0).unwrap();
        close(v.gamma(37.0), at_a, 1e-12, &format!("{m:?} at the range"));
        assert_eq!(v.gamma(0.0), 0.0);
        // Non-decreasing, continuous at the range, the sill far out.
        let mut prev = 0.0;
        for i in 1..400 {
            let g = v.gamma(f64::from(i) * 0.25);
            assert!(
                g >= prev - 1e-15,
                "{m:?} decreases at {}",
                f64::from(i) * 0.25
            );
            prev = g;
        }
        close(
            v.gamma(37.0 * (1.0 + 1e-9)),
            v.gamma(37.0),
            1e-7,
            "continuity",
        );
        close(v.gamma(1e4), 1.0, 1e-9, &format!("{m:?} sill"));
    }
}

#[test]
fn matern_half_is_the_exponential_and_large_nu_nears_the_gaussian() {
    close(matern_scale(0.5), 3.0, 1e-13, "s_1/2");
    let e = Variogram::new(Model::Exponential, 1.0, 50.0, 0.0).unwrap();
    let m = Variogram::new(Model::Matern { nu: 0.5 }, 1.0, 50.0, 0.0).unwrap();
    let g = Variogram::new(Model::Gaussian, 1.0, 50.0, 0.0).unwrap();
    let m_big = Variogram::new(Model::Matern { nu: 60.0 }, 1.0, 50.0, 0.0).unwrap();
    for h in [1.0, 10.0, 25.0, 50.0, 90.0] {
        close(m.gamma(h), e.gamma(h), 1e-12, "matern 1/2 vs exponential");
        assert!(
            (m_big.gamma(h) - g.gamma(h)).abs() < 0.01,
            "matern 60 vs gaussian at {h}"
        );
    }
}

#[test]
fn nested_structures_add_and_unbounded_ones_have_no_covariance() {
    let v = Variogram {
        nugget: 0.1,
        structures: vec![
            Structure::new(Model::Spherical, 0.5, 100.0),
            Structure::new(Model::Exponential, 0.4, 1000.0),
        ],
    };
    v.validate().unwrap();
    close(v.sill(), 1.0, 1e-15, "sill");
    let h = 60.0;
    let want = 0.1 + 0.5 * (1.5 * 0.6 - 0.5 * 0.216) + 0.4 * (1.0 - (-0.18f64).exp());
    close(v.gamma(h), want, 1e-14, "nested");
    close(v.covariance(h).unwrap(), 1.0 - want, 1e-14, "C(h)");
    let p = Variogram::new(Model::Power { exponent: 1.0 }, 2.0, 1.0, 0.0).unwrap();
    assert!(!p.is_bounded());
    assert_eq!(p.covariance(3.0), None);
    assert_eq!(p.sill(), f64::INFINITY);
    assert_eq!(
        v.to_string(),
        "nugget 0.1 + spherical sill 0.5 range 100 + exponential sill 0.4 range 1000"
    );
}

#[test]
fn parsing_and_bad_parameters_are_clear_errors() {
    assert_eq!(Model::parse("Exponential").unwrap(), Model::Exponential);
    assert_eq!(Model::parse("gau").unwrap(), Model::Gaussian);
    assert_eq!(
        Model::parse("matern:1.5").unwrap(),
        Model::Matern { nu: 1.5 }
    );
    assert_eq!(
        Model::parse("stable:0.5").unwrap(),
        Model::Stable { alpha: 0.5 }
    );
    assert_eq!(
        Model::parse("power:1.2").unwrap(),
        Model::Power { exponent: 1.2 }
    );
    for (bad, needle) in [
        ("hole-effect", "unknown variogram model"),
        ("matern", "needs a nu"),
        ("matern:x", "is not a number"),
        ("stable:3", "alpha = 3"),
        ("power:2", "exponent = 2"),
        ("matern:0", "nu = 0"),
        ("exponential:2", "takes no parameter"),
        ("linear:1", "takes no parameter"),
    ] {
        let e = Model::parse(bad).unwrap_err().to_string();
        assert!(e.contains(needle), "{bad}: {e}");
    }
    for (v, needle) in [
        (
            Variogram::new(Model::Exponential, 1.0, 0.0, 0.0),
            "range = 0",
        ),
        (
            Variogram::new(Model::Exponential, -1.0, 5.0, 0.0),
            "sill = -1",
        ),
        (
            Variogram::new(Model::Exponential, 1.0, f64::NAN, 0.0),
            "range = NaN",
        ),
        (
            Variogram::new(Model::Gaussian, 1.0, 5.0, -0.1),
            "nugget = -0.1",
        ),
    ] {
        let e = v.unwrap_err().to_string();
        assert!(e.contains(needle), "{e}");
    }
    // Power and linear need no range.
    assert!(Variogram::new(Model::Linear, 1.0, 0.0, 0.0).is_ok());
    assert!(
        Variogram {
            nugget: 0.0,
            structures: vec![]
        }
        .validate()
        .is_err()
    );
}
