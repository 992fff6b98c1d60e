//! Variogram models in the practical-range convention.
//!
//! A [`Variogram`] is a nugget c₀ plus a sum of [`Structure`]s, each a [`Model`] with a partial
//! sill c and a practical (effective) range a:
//!
//! γ(h) = c₀·\[h > 0\] + Σ cᵢ·gᵢ(h / aᵢ)
//!
//! | model | g(r), r = h/a | a is |
//! |---|---|---|
//! | exponential | 1 − exp(−3r) | where g = 1 − e⁻³ = 0.9502 |
//! | gaussian | 1 − exp(−3r²) | where g = 1 − e⁻³ |
//! | spherical | 1.5r − 0.5r³ (r < 1), else 1 | the true range |
//! | cubic | 7r² − 35/4 r³ + 7/2 r⁵ − 3/4 r⁷ (r < 1), else 1 | the true range |
//! | stable(α), 0 < α ≤ 2 | 1 − exp(−3r^α) | where g = 1 − e⁻³ |
//! | matern(ν), ν > 0 | 1 − 2^(1−ν)/Γ(ν) (s_ν r)^ν K_ν(s_ν r), s_ν such that g(1) = 1 − e⁻³ | where g = 1 − e⁻³ |
//! | power(ω), 0 < ω < 2 | h^ω (unbounded; c is the scale, a unused) | – |
//! | linear | h (unbounded; c is the slope, a unused) | – |
//!
//! The paper's γ(h) = c(1 − exp(−3h/a)) is `exponential` with sill c and range a and no nugget.
//! Matérn with ν = 1/2 is the exponential (s = 3) and tends to the Gaussian as ν → ∞.
//!
//! # Other libraries' parameters for the same curve
//!
//! Each row is checked by a unit test that evaluates the other library's formula (as written in
//! its source) with the mapped parameters against ours. ps = partial sill, n = nugget.
//!
//! | model | PyKrige 1.7 | GSTools 1.7 (rescale default) | R gstat 2.1 `vgm` |
//! |---|---|---|---|
//! | exponential | `exponential`, {psill: ps, range: a, nugget: n} | `Exponential(var=ps, len_scale=a/3, nugget=n)` | `vgm(ps, "Exp", a/3, n)` |
//! | gaussian | `gaussian`, {psill: ps, range: 7a/(4√3), nugget: n} | `Gaussian(var=ps, len_scale=a·√(π/12), nugget=n)` | `vgm(ps, "Gau", a/√3, n)` |
//! | spherical | `spherical`, {psill: ps, range: a, nugget: n} | `Spherical(var=ps, len_scale=a, nugget=n)` | `vgm(ps, "Sph", a, n)` |
//! | cubic | – | – (`Cubic` is another shape) | – |
//! | stable(α) | – | `Stable(var=ps, len_scale=a/3^(1/α), alpha=α, nugget=n)` | `vgm(ps, "Exc", a/3^(1/α), n, kappa=α)` |
//! | matern(ν) | – | `Matern(var=ps, len_scale=a·√ν/s_ν, nu=ν, nugget=n)` | `vgm(ps, "Mat", a/s_ν, n, kappa=ν)` |
//! | power(ω) | `power`, [scale = c, exponent = ω, n] | – | `vgm(c, "Pow", ω, n)` |
//! | linear | `linear`, [slope = c, n] | – | `vgm(c, "Lin", 0, n)` (range 0: psill is the slope) |
//!
//! PyKrige's *list* form of the parameters is [total sill, range, nugget] (it sets psill = the
//! first minus the nugget), not [psill, range, nugget]: pass the dict form, or ps + n first.
//! `tests/kriging_peers.rs` checks the mapping end to end against PyKrige and GSTools.
//!
//! (scikit-gstat: exponential and spherical take `r = a`, gaussian `r = 2a/√3`, cubic `r = a`.)

use std::fmt;

use statrs::function::gamma::ln_gamma;

use crate::GeofieldError;

/// The shape of one variogram structure.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "model", rename_all = "lowercase")]
pub enum Model {
    Exponential,
    Gaussian,
    Spherical,
    Cubic,
    /// exp(−3 r^alpha), 0 < alpha ≤ 2.
    Stable {
        alpha: f64,
    },
    /// Matérn with smoothness nu > 0 (0.5: exponential; → ∞: Gaussian).
    Matern {
        nu: f64,
    },
    /// c·h^exponent, 0 < exponent < 2 (no sill, no range).
    Power {
        exponent: f64,
    },
    /// c·h (no sill, no range).
    Linear,
}

impl Model {
    /// Bounded models have a sill (and a covariance).
    pub fn is_bounded(&self) -> bool {
        !matches!(self, Model::Power { .. } | Model::Linear)
    }

    /// The model's name as the command line writes it.
    pub fn name(&self) -> &'static str {
        match self {
            Model::Exponential => "exponential",
            Model::Gaussian => "gaussian",
            Model::Spherical => "spherical",
            Model::Cubic => "cubic",
            Model::Stable { .. } => "stable",
            Model::Matern { .. } => "matern",
            Model::Power { .. } => "power",
            Model::Linear => "linear",
        }
    }

    /// Parses `exponential`, `gaussian`, `spherical`, `cubic`, `linear`, `stable:ALPHA`,
    /// `matern:NU`, `power:EXPONENT` (case-insensitive).
    pub fn parse(s: &str) -> Result<Model, GeofieldError> {
        let lower = s.trim().to_ascii_lowercase();
        let (name, arg) = match lower.split_once(':') {
            Some((n, a)) => (n, Some(a)),
            None => (lower.as_str(), None),
        };
        let num = |what: &str| -> Result<f64, GeofieldError> {
            let a = arg.ok_or_else(|| {
                GeofieldError::Invalid(format!("model `{s}` needs a {what}: `{name}:{what}`"))
            })?;
            a.trim().parse::<f64>().map_err(|_| {
                GeofieldError::Invalid(format!("model `{s}`: {what} `{a}` is not a number"))
            })
        };
        let none = |m: Model| -> Result<Model, GeofieldError> {
            match arg {
                Some(a) => Err(GeofieldError::Invalid(format!(
                    "model `{s}`: `{name}` takes no parameter (got `{a}`)"
                ))),
                None => Ok(m),
            }
        };
        let m = match name {
            "exponential" | "exp" => none(Model::Exponential)?,
            "gaussian" | "gau" => none(Model::Gaussian)?,
            "spherical" | "sph" => none(Model::Spherical)?,
            "cubic" => none(Model::Cubic)?,
            "linear" | "lin" => none(Model::Linear)?,
            "stable" => Model::Stable {
                alpha: num("alpha")?,
            },
            "matern" | "mat" => Model::Matern { nu: num("nu")? },
            "power" | "pow" => Model::Power {
                exponent: num("exponent")?,
            },
            _ => {
                return Err(GeofieldError::Invalid(format!(
                    "unknown variogram model `{s}` (exponential, gaussian, spherical, cubic, \
                     stable:ALPHA, matern:NU, power:EXPONENT, linear)"
                )));
            }
        };
        m.validate()?;
        Ok(m)
    }

    /// Parses nested models joined by `+` (`spherical+exponential`, `gau+matern:1.5`), each as
    /// [`Model::parse`] reads it; at most [`MAX_STRUCTURES`].
    pub fn parse_nested(s: &str) -> Result<Vec<Model>, GeofieldError> {
        let models = s
            .split('+')
            .map(|t| {
                if t.trim().is_empty() {
                    Err(GeofieldError::Invalid(format!(
                        "model `{s}`: an empty term between `+` signs"
                    )))
                } else {
                    Model::parse(t)
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        if models.len() > MAX_STRUCTURES {
            return Err(GeofieldError::Invalid(format!(
                "model `{s}`: {} structures, at most {MAX_STRUCTURES} are nested",
                models.len()
            )));
        }
        Ok(models)
    }

    /// The name with its parameter, as [`Model::parse`] reads it (`stable:1.5`).
    pub fn spec(&self) -> String {
        match self {
            Model::Stable { alpha } => format!("stable:{alpha}"),
            Model::Matern { nu } => format!("matern:{nu}"),
            Model::Power { exponent } => format!("power:{exponent}"),
            m => m.name().to_string(),
        }
    }

    fn validate(&self) -> Result<(), GeofieldError> {
        let bad = |what: String| Err(GeofieldError::Invalid(what));
        match *self {
            Model::Stable { alpha } if !(alpha > 0.0 && alpha <= 2.0) => {
                bad(format!("stable: alpha = {alpha} must be in (0, 2]"))
            }
            Model::Matern { nu } if !(nu > 0.0 && nu <= 100.0) => {
                bad(format!("matern: nu = {nu} must be in (0, 100]"))
            }
            Model::Power { exponent } if !(exponent > 0.0 && exponent < 2.0) => {
                bad(format!("power: exponent = {exponent} must be in (0, 2)"))
            }
            _ => Ok(()),
        }
    }

    /// g(r) for a bounded model at r = h/a ≥ 0 (0 at r = 0, → 1).
    fn shape(&self, r: f64) -> f64 {
        match *self {
            Model::Exponential => -(-3.0 * r).exp_m1(),
            Model::Gaussian => -(-3.0 * r * r).exp_m1(),
            Model::Spherical => {
                if r < 1.0 {
                    r * (1.5 - 0.5 * r * r)
                } else {
                    1.0
                }
            }
            Model::Cubic => {
                if r < 1.0 {
                    let r2 = r * r;
                    r2 * (7.0 - r * (8.75 - r2 * (3.5 - 0.75 * r2)))
                } else {
                    1.0
                }
            }
            Model::Stable { alpha } => -(-3.0 * r.powf(alpha)).exp_m1(),
            Model::Matern { nu } => 1.0 - matern_corr(nu, matern_scale(nu) * r),
            Model::Power { .. } | Model::Linear => f64::NAN,
        }
    }
}

/// ρ(x) = 2^(1−ν)/Γ(ν) x^ν K_ν(x), ρ(0) = 1.
fn matern_corr(nu: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    if x > 700.0 + 2.0 * nu {
        return 0.0;
    }
    let k = complex_bessel::besselk(nu, num_complex::Complex::new(x, 0.0))
        .map(|c| c.re)
        .unwrap_or(0.0);
    if !(k.is_finite() && k > 0.0) {
        // Underflow far out (ρ ≈ 0) or overflow very close to 0 (ρ ≈ 1).
        return if x > 1.0 { 0.0 } else { 1.0 };
    }
    let ln = (1.0 - nu) * std::f64::consts::LN_2 - ln_gamma(nu) + nu * x.ln() + k.ln();
    ln.exp().min(1.0)
}

/// s_ν with ρ_ν(s_ν) = e⁻³ (so that a is the practical range, as for the exponential), by
/// bisection on the decreasing ρ; about 1e-15 relative. s_½ = 3.
pub fn matern_scale(nu: f64) -> f64 {
    let target = (-3.0f64).exp();
    let (mut lo, mut hi) = (1e-6f64, 1.0f64);
    while matern_corr(nu, hi) > target && hi < 1e6 {
        lo = hi;
        hi *= 2.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if matern_corr(nu, mid) > target {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo <= 1e-15 * hi {
            break;
        }
    }
    0.5 * (lo + hi)
}

/// One nested structure: a model, its partial sill (or scale/slope) and practical range.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Structure {
    #[serde(flatten)]
    pub model: Model,
    /// Partial sill c (power: scale; linear: slope), ≥ 0.
    pub sill: f64,
    /// Practical range a > 0 (ignored by power and linear).
    pub range: f64,
}

impl Structure {
    pub fn new(model: Model, sill: f64, range: f64) -> Self {
        Structure { model, sill, range }
    }

    /// This structure's γ at distance h ≥ 0 (0 at h = 0).
    pub fn gamma(&self, h: f64) -> f64 {
        match self.model {
            Model::Power { exponent } => self.sill * h.powf(exponent),
            Model::Linear => self.sill * h,
            m => self.sill * m.shape(h / self.range),
        }
    }
}

/// A nugget plus nested structures (see the module docs).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Variogram {
    pub nugget: f64,
    pub structures: Vec<Structure>,
}

impl Variogram {
    /// One structure and a nugget, validated.
    pub fn new(model: Model, sill: f64, range: f64, nugget: f64) -> Result<Self, GeofieldError> {
        let v = Variogram {
            nugget,
            structures: vec![Structure::new(model, sill, range)],
        };
        v.validate()?;
        Ok(v)
    }

    /// A nugget and nested structures, validated: `models[i]` with partial sill `sills[i]` and
    /// range `ranges[i]`. `ranges` has one entry per structure, or one per bounded structure
    /// (power and linear have no range; they then take none).
    ///
    /// ```
    /// use geofield::kriging::{Model, Variogram};
    /// let models = Model::parse_nested("spherical+exponential")?;
    /// let v = Variogram::nested(&models, &[1.0, 0.5], &[300.0, 2000.0], 0.1)?;
    /// assert_eq!(v.structures.len(), 2);
    /// assert!((v.sill() - 1.6).abs() < 1e-12);
    /// # Ok::<(), geofield::GeofieldError>(())
    /// ```
    pub fn nested(
        models: &[Model],
        sills: &[f64],
        ranges: &[f64],
        nugget: f64,
    ) -> Result<Self, GeofieldError> {
        if models.is_empty() {
            return Err(GeofieldError::Invalid(
                "no variogram structure given".into(),
            ));
        }
        if sills.len() != models.len() {
            return Err(GeofieldError::Invalid(format!(
                "{} sills for {} structures ({}): give one partial sill per structure",
                sills.len(),
                models.len(),
                names(models)
            )));
        }
        let bounded = models.iter().filter(|m| m.is_bounded()).count();
        let per_structure = ranges.len() == models.len();
        if !per_structure && ranges.len() != bounded {
            return Err(GeofieldError::Invalid(format!(
                "{} ranges for {} structures ({}): give one range per structure, or one per \
                 bounded structure ({bounded}; power and linear have none)",
                ranges.len(),
                models.len(),
                names(models)
            )));
        }
        let mut next = ranges.iter();
        let structures = models
            .iter()
            .zip(sills)
            .map(|(&m, &c)| {
                let r = if per_structure || m.is_bounded() {
                    next.next().copied().unwrap_or(1.0)
                } else {
                    1.0
                };
                Structure::new(m, c, r)
            })
            .collect();
        let v = Variogram { nugget, structures };
        v.validate()?;
        Ok(v)
    }

    /// The models of the structures joined by `+` (as [`Model::parse_nested`] reads them).
    pub fn models_name(&self) -> String {
        let models: Vec<Model> = self.structures.iter().map(|s| s.model).collect();
        names(&models)
    }

    /// Checks every parameter; the error names it.
    pub fn validate(&self) -> Result<(), GeofieldError> {
        if !(self.nugget.is_finite() && self.nugget >= 0.0) {
            return Err(GeofieldError::Invalid(format!(
                "nugget = {} must be finite and >= 0",
                self.nugget
            )));
        }
        if self.structures.is_empty() && self.nugget == 0.0 {
            return Err(GeofieldError::Invalid(
                "the variogram is zero everywhere: give a structure or a nugget".into(),
            ));
        }
        for (i, s) in self.structures.iter().enumerate() {
            s.model.validate()?;
            let name = s.model.name();
            if !(s.sill.is_finite() && s.sill >= 0.0) {
                return Err(GeofieldError::Invalid(format!(
                    "structure {} ({name}): sill = {} must be finite and >= 0",
                    i + 1,
                    s.sill
                )));
            }
            if s.model.is_bounded() && !(s.range.is_finite() && s.range > 0.0) {
                return Err(GeofieldError::Invalid(format!(
                    "structure {} ({name}): range = {} must be finite and > 0",
                    i + 1,
                    s.range
                )));
            }
        }
        if self.nugget == 0.0 && self.structures.iter().all(|s| s.sill == 0.0) {
            return Err(GeofieldError::InvalidParameter {
                name: "sill".into(),
                value: "0".into(),
                expected: "a partial sill > 0 when the nugget is 0 (the variogram would be zero everywhere and \
                           every kriging system singular)"
                    .into(),
            });
        }
        Ok(())
    }

    /// All structures bounded: the variogram has a sill and a covariance C(h) = sill − γ(h).
    pub fn is_bounded(&self) -> bool {
        self.structures.iter().all(|s| s.model.is_bounded())
    }

    /// Total sill c₀ + Σ cᵢ (bounded variograms; +∞ otherwise).
    pub fn sill(&self) -> f64 {
        if self.is_bounded() {
            self.nugget + self.structures.iter().map(|s| s.sill).sum::<f64>()
        } else {
            f64::INFINITY
        }
    }

    /// γ(h) for h ≥ 0: 0 at h = 0, the nugget jumps in for any h > 0.
    pub fn gamma(&self, h: f64) -> f64 {
        if h <= 0.0 {
            return 0.0;
        }
        self.nugget + self.structures.iter().map(|s| s.gamma(h)).sum::<f64>()
    }

    /// C(h) = C(0) − γ(h) for a bounded variogram (C(0) = the total sill); `None` otherwise.
    pub fn covariance(&self, h: f64) -> Option<f64> {
        self.is_bounded().then(|| self.sill() - self.gamma(h))
    }
}

/// The most structures of a nested model (gstat's fits rarely go past three; four leaves room).
pub const MAX_STRUCTURES: usize = 4;

fn names(models: &[Model]) -> String {
    models.iter().map(Model::spec).collect::<Vec<_>>().join("+")
}

/// `v` rounded to 5 significant digits, for display.
fn sig5(v: f64) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return v;
    }
    let k = 4 - v.abs().log10().floor() as i32;
    let p = 10f64.powi(k);
    (v * p).round() / p
}

/// Parameters to 5 significant digits (the exact values are in the struct).
impl fmt::Display for Variogram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "nugget {}", sig5(self.nugget))?;
        for s in &self.structures {
            match s.model {
                Model::Stable { alpha } => write!(f, " + stable(alpha {alpha})")?,
                Model::Matern { nu } => write!(f, " + matern(nu {nu})")?,
                Model::Power { exponent } => write!(f, " + power(exponent {exponent})")?,
                m => write!(f, " + {}", m.name())?,
            }
            if s.model.is_bounded() {
                write!(f, " sill {} range {}", sig5(s.sill), sig5(s.range))?;
            } else {
                write!(f, " scale {}", sig5(s.sill))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
