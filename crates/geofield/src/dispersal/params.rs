//! Species and kernel parameters, with units and the analytic normalisers.

use std::f64::consts::PI;

use crate::GeofieldError;

/// The unnormalised dispersal kernel K(r), r in metres.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
#[serde(tag = "kernel", rename_all = "lowercase")]
pub enum Kernel {
    /// SORTIE's "Weibull" (2-D exponential power): K = exp(−D r^θ); D in m^−θ.
    Weibull { d: f64, theta: f64 },
    /// SORTIE's lognormal: K = exp(−½ (ln(r/X0)/Xb)²); X0 in m. K(0) = 0.
    Lognormal { x0: f64, xb: f64 },
    /// Clark et al. (1999) 2Dt: K = (1 + r²/u)^−(p+1); u in m².
    #[serde(rename = "2dt")]
    TwoDt { u: f64, p: f64 },
}

impl Kernel {
    /// Validate the parameters (all finite and > 0; Weibull θ < 50 as SORTIE requires).
    pub fn validated(self) -> Result<Self, String> {
        let check = |v: f64, name: &str| -> Result<(), String> {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(format!("`{name}` must be a finite number > 0, got {v}"))
            }
        };
        match self {
            Kernel::Weibull { d, theta } => {
                check(d, "d")?;
                check(theta, "theta")?;
                if theta >= 50.0 {
                    return Err(format!("`theta` must be < 50, got {theta}"));
                }
            }
            Kernel::Lognormal { x0, xb } => {
                check(x0, "x0")?;
                check(xb, "xb")?;
            }
            Kernel::TwoDt { u, p } => {
                check(u, "u")?;
                check(p, "p")?;
            }
        }
        Ok(self)
    }

    /// K(r), with its limit at r = 0 (1, 0, 1).
    #[inline]
    pub fn eval(&self, r: f64) -> f64 {
        match *self {
            Kernel::Weibull { d, theta } => {
                if theta == 3.0 {
                    (-d * r * r * r).exp()
                } else if theta == 2.0 {
                    (-d * r * r).exp()
                } else {
                    (-d * r.powf(theta)).exp()
                }
            }
            Kernel::Lognormal { x0, xb } => {
                if r <= 0.0 {
                    0.0
                } else {
                    let z = (r / x0).ln() / xb;
                    (-0.5 * z * z).exp()
                }
            }
            Kernel::TwoDt { u, p } => {
                let b = 1.0 + r * r / u;
                if p == 1.0 {
                    1.0 / (b * b)
                } else {
                    b.powf(-(p + 1.0))
                }
            }
        }
    }

    /// K as a function of r², avoiding a square root where the shape allows.
    #[inline]
    #[allow(clippy::redundant_guards)]
    pub fn eval_r2(&self, r2: f64) -> f64 {
        match *self {
            Kernel::Weibull { d, theta } if theta == 2.0 => (-d * r2).exp(),
            Kernel::Weibull { d, theta } if theta == 3.0 => (-d * r2 * r2.sqrt()).exp(),
            Kernel::TwoDt { u, p } => {
                let b = 1.0 + r2 / u;
                if p == 1.0 {
                    1.0 / (b * b)
                } else {
                    b.powf(-(p + 1.0))
                }
            }
            Kernel::Lognormal { x0, xb } => {
                if r2 <= 0.0 {
                    0.0
                } else {
                    let z = (0.5 * r2.ln() - x0.ln()) / xb;
                    (-0.5 * z * z).exp()
                }
            }
            _ => self.eval(r2.sqrt()),
        }
    }

    /// η = ∫0^∞ 2πr K(r) dr in m²: 2π Γ(2/θ)/(θ D^(2/θ)); 2π X0² Xb √(2π) e^(2Xb²); π u / p.
    pub fn eta_analytic(&self) -> f64 {
        match *self {
            Kernel::Weibull { d, theta } => {
                2.0 * PI * statrs::function::gamma::gamma(2.0 / theta)
                    / (theta * d.powf(2.0 / theta))
            }
            Kernel::Lognormal { x0, xb } => {
                2.0 * PI * x0 * x0 * xb * (2.0 * PI).sqrt() * (2.0 * xb * xb).exp()
            }
            Kernel::TwoDt { u, p } => PI * u / p,
        }
    }

    /// The distance where K peaks: 0, except for the lognormal, whose
    /// K(d) = exp(−½ (ln(d/X0)/Xb)²) peaks at d = X0 (K = 1 there). (X0 e^(−Xb²) is the mode of
    /// the lognormal density in d, which has an extra 1/d; SORTIE's kernel K has not.)
    pub fn mode_m(&self) -> f64 {
        match *self {
            Kernel::Lognormal { x0, .. } => x0,
            _ => 0.0,
        }
    }

    /// max_r K(r) (1 for Weibull and 2Dt, 1 for the lognormal at its mode).
    pub fn peak(&self) -> f64 {
        1.0
    }

    /// The smallest r ≥ mode with K(r) ≤ `k` (K is decreasing there); 0 if k ≥ the peak.
    pub fn radius_where(&self, k: f64) -> f64 {
        if k >= self.peak() {
            return self.mode_m();
        }
        if k <= 0.0 {
            return f64::INFINITY;
        }
        let ln_k = k.ln(); // < 0
        match *self {
            Kernel::Weibull { d, theta } => (-ln_k / d).powf(1.0 / theta),
            Kernel::Lognormal { x0, xb } => x0 * (xb * (-2.0 * ln_k).sqrt()).exp(),
            Kernel::TwoDt { u, p } => (u * ((-ln_k / (p + 1.0)).exp() - 1.0)).max(0.0).sqrt(),
        }
    }

    /// Fraction of the kernel's mass beyond distance r (for reports).
    pub fn mass_beyond(&self, r: f64) -> f64 {
        match *self {
            Kernel::Weibull { d, theta } => {
                let x = d * r.max(0.0).powf(theta);
                if x <= 0.0 {
                    1.0
                } else {
                    statrs::function::gamma::checked_gamma_ur(2.0 / theta, x).unwrap_or(f64::NAN)
                }
            }
            Kernel::Lognormal { x0, xb } => {
                if r <= 0.0 {
                    return 1.0;
                }
                let z = ((r / x0).ln() - 2.0 * xb * xb) / xb;
                0.5 * statrs::function::erf::erfc(z / std::f64::consts::SQRT_2)
            }
            Kernel::TwoDt { u, p } => (1.0 + r * r / u).powf(-p),
        }
    }
}

/// The normaliser η: a number (1 reproduces the 2012 paper) or the analytic integral of K.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub enum Eta {
    Value(f64),
    Analytic,
}

/// One species' dispersal parameters.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Species {
    pub name: String,
    pub kernel: Kernel,
    /// Standardised total recruits of a 30 cm tree (seeds per year over the plane with the
    /// analytic η; seeds/m² under the tree with η = 1 and K(0) = 1).
    pub str_: f64,
    /// DBH exponent β.
    pub beta: f64,
    pub eta: Eta,
    /// Trees with DBH ≥ this contribute (SORTIE's rule).
    pub min_dbh_cm: f64,
    /// The paper's opening distance ρ for the multi-resolution method, if given.
    pub multires_threshold_m: Option<f64>,
}

impl Species {
    /// Validate all fields; the message names the field.
    pub fn new(
        name: String,
        kernel: Kernel,
        str_: f64,
        beta: f64,
        eta: Eta,
        min_dbh_cm: f64,
        multires_threshold_m: Option<f64>,
    ) -> Result<Self, GeofieldError> {
        let bad = |m: String| GeofieldError::Invalid(format!("species {name:?}: {m}"));
        let kernel = kernel.validated().map_err(bad)?;
        if !(str_.is_finite() && str_ >= 0.0) {
            return Err(bad(format!(
                "`str` must be a finite number >= 0, got {str_}"
            )));
        }
        if !(beta.is_finite() && beta.abs() <= 25.0) {
            return Err(bad(format!(
                "`beta` must be finite with |beta| <= 25, got {beta}"
            )));
        }
        if let Eta::Value(v) = eta
            && !(v.is_finite() && v > 0.0)
        {
            {
                return Err(bad(format!(
                    "`eta` must be a number > 0 or \"analytic\", got {v}"
                )));
            }
        }
        if !(min_dbh_cm.is_finite() && min_dbh_cm >= 0.0) {
            return Err(bad(format!(
                "`min_dbh_cm` must be a finite number >= 0, got {min_dbh_cm}"
            )));
        }
        if let Some(r) = multires_threshold_m
            && !(r.is_finite() && r > 0.0)
        {
            {
                return Err(bad(format!("`multires_threshold_m` must be > 0, got {r}")));
            }
        }
        Ok(Self {
            name,
            kernel,
            str_,
            beta,
            eta,
            min_dbh_cm,
            multires_threshold_m,
        })
    }

    /// η in m².
    pub fn eta_m2(&self) -> f64 {
        match self.eta {
            Eta::Value(v) => v,
            Eta::Analytic => self.kernel.eta_analytic(),
        }
    }

    /// STR/η: the factor in front of (DBH/30)^β K(d).
    pub fn scale(&self) -> f64 {
        self.str_ / self.eta_m2()
    }

    /// The tree's weight w = (STR/η)(DBH/30)^β, or None below the minimum DBH.
    #[inline]
    pub fn weight(&self, dbh_cm: f64) -> Option<f64> {
        if dbh_cm >= self.min_dbh_cm {
            Some(self.scale() * (dbh_cm / 30.0).powf(self.beta))
        } else {
            None
        }
    }

    /// ρ for the multi-resolution method: the given threshold, or where K/K(0) = 2.5e-4 (the
    /// kernel height of the paper's fir/aspen thresholds; note §3.5).
    pub fn multires_threshold(&self) -> f64 {
        self.multires_threshold_m
            .unwrap_or_else(|| self.kernel.radius_where(2.5e-4 * self.kernel.peak()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// η by the midpoint rule on a fine radial grid, an independent check of the closed forms.
    fn eta_numeric(k: &Kernel, r_max: f64, n: usize) -> f64 {
        let h = r_max / n as f64;
        (0..n)
            .map(|i| (i as f64 + 0.5) * h)
            .map(|r| 2.0 * PI * r * k.eval(r) * h)
            .sum()
    }

    #[test]
    fn eta_matches_quadrature_and_note() {
        let fir = Kernel::Weibull {
            d: 1.32e-4,
            theta: 3.0,
        };
        assert!(
            (fir.eta_analytic() - 1094.0).abs() < 0.5,
            "{}",
            fir.eta_analytic()
        );
        let aspen = Kernel::Weibull {
            d: 3.8e-5,
            theta: 3.0,
        };
        assert!((aspen.eta_analytic() - 2509.1).abs() < 0.5);
        for k in [
            fir,
            Kernel::Weibull {
                d: 0.01,
                theta: 1.5,
            },
            Kernel::Weibull {
                d: 0.02,
                theta: 2.0,
            },
            Kernel::Lognormal { x0: 10.0, xb: 0.5 },
            Kernel::TwoDt { u: 50.0, p: 2.0 },
        ] {
            let num = eta_numeric(&k, 5000.0, 2_000_000);
            let rel = (num - k.eta_analytic()).abs() / num;
            assert!(
                rel < 1e-6,
                "{k:?}: numeric {num} analytic {} rel {rel}",
                k.eta_analytic()
            );
        }
    }

    #[test]
    fn the_kernel_peaks_at_its_mode() {
        for k in [
            Kernel::Weibull {
                d: 0.01,
                theta: 1.5,
            },
            Kernel::Lognormal { x0: 10.0, xb: 0.5 },
            Kernel::Lognormal { x0: 3.0, xb: 1.2 },
            Kernel::TwoDt { u: 50.0, p: 1.7 },
        ] {
            let m = k.mode_m();
            assert_eq!(k.eval(m), k.peak(), "{k:?}");
            // A scan of distances finds nothing above the peak, and K falls off on both sides.
            for i in 1..2000 {
                let d = 0.05 * f64::from(i);
                assert!(k.eval(d) <= k.eval(m), "{k:?} at {d}");
            }
            assert!(k.eval(m + 0.5) < k.eval(m), "{k:?}");
        }
    }

    #[test]
    fn radius_inverts_kernel() {
        for k in [
            Kernel::Weibull {
                d: 3.8e-5,
                theta: 3.0,
            },
            Kernel::Weibull {
                d: 0.01,
                theta: 1.5,
            },
            Kernel::Lognormal { x0: 10.0, xb: 0.5 },
            Kernel::TwoDt { u: 6447.0, p: 1.0 },
            Kernel::TwoDt { u: 50.0, p: 1.7 },
        ] {
            for target in [1e-2, 1e-6, 1e-12] {
                let r = k.radius_where(target);
                assert!(r >= k.mode_m());
                assert!(
                    (k.eval(r) - target).abs() <= 1e-9 * target,
                    "{k:?} {target} {r} {}",
                    k.eval(r)
                );
            }
        }
        // Note §1.5: aspen reaches 1e-6 of its peak at 71.4 m.
        let aspen = Kernel::Weibull {
            d: 3.8e-5,
            theta: 3.0,
        };
        assert!((aspen.radius_where(1e-6) - 71.4).abs() < 0.1);
    }

    #[test]
    fn eval_r2_agrees_with_eval() {
        for k in [
            Kernel::Weibull {
                d: 3.8e-5,
                theta: 3.0,
            },
            Kernel::Weibull {
                d: 0.02,
                theta: 2.0,
            },
            Kernel::Weibull {
                d: 0.01,
                theta: 1.5,
            },
            Kernel::Lognormal { x0: 10.0, xb: 0.5 },
            Kernel::TwoDt { u: 6447.0, p: 1.0 },
            Kernel::TwoDt { u: 50.0, p: 1.7 },
        ] {
            for r in [0.0, 0.3, 1.0, 7.5, 40.0, 200.0] {
                let (a, b) = (k.eval(r), k.eval_r2(r * r));
                assert!(
                    (a - b).abs() <= 1e-14 + 1e-12 * a,
                    "{k:?} r={r}: {a} vs {b}"
                );
            }
        }
        assert_eq!(Kernel::Lognormal { x0: 1.0, xb: 1.0 }.eval(0.0), 0.0);
    }

    #[test]
    fn mass_beyond_limits() {
        let k = Kernel::Weibull {
            d: 3.8e-5,
            theta: 3.0,
        };
        assert!((k.mass_beyond(0.0) - 1.0).abs() < 1e-12);
        // note §1.5: 95 % of aspen's mass within 39.3 m
        assert!((k.mass_beyond(39.3) - 0.05).abs() < 1e-3);
        let t = Kernel::TwoDt { u: 6447.0, p: 1.0 };
        assert!((t.mass_beyond(1000.0) - 0.0064).abs() < 1e-4);
    }

    #[test]
    fn species_validation_names_field() {
        let k = Kernel::Weibull {
            d: 1e-4,
            theta: 3.0,
        };
        let e = Species::new("fir".into(), k, 0.1, 2.0, Eta::Value(-1.0), 15.0, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("eta") && e.contains("fir"), "{e}");
        let e = Species::new(
            "fir".into(),
            Kernel::Weibull {
                d: -1.0,
                theta: 3.0,
            },
            0.1,
            2.0,
            Eta::Analytic,
            15.0,
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("`d`"), "{e}");
        // The free test of note §5: (STR₁, η = 1) equals (STR₁·η_analytic, analytic).
        let a = Species::new("a".into(), k, 0.2, 2.0, Eta::Value(1.0), 15.0, None).unwrap();
        let b = Species::new(
            "b".into(),
            k,
            0.2 * k.eta_analytic(),
            2.0,
            Eta::Analytic,
            15.0,
            None,
        )
        .unwrap();
        let (wa, wb) = (a.weight(40.0).unwrap(), b.weight(40.0).unwrap());
        assert!((wa - wb).abs() < 1e-14 * wa);
        assert!(a.weight(14.9).is_none() && a.weight(15.0).is_some());
    }
}
