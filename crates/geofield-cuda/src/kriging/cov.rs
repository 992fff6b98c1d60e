//! The covariance description shared by every kriging kernel ([`CovParams`], C `KrCov`) and its
//! host mirror ([`CovParams::eval`], the same formulas in f64, used for the paper's host-built
//! matrix and by tests).
//!
//! C(h) = c_zero                          if `exact` and h ≤ eps
//!      = offset + Σ_s c_s ρ_s(h / a_s)    otherwise
//!
//! Bounded models: offset = 0 and c_zero = c₀ + Σ c_s (the nugget only ever enters at h ≤ eps,
//! and never with `exact = false`, "nugget as measurement error"). Unbounded models (power,
//! linear) use the pseudo-covariance C(h) = B − γ(h): offset = B − c₀, c_zero = B, and ρ = −h^ω
//! (power, c the scale) or −h (linear, c the slope). The diagonal of every kriging system is
//! c_zero; the variance uses `var_zero` (c_zero unless the caller says otherwise).
//!
//! Matérn(ν) with x = s_ν h/a: ρ = 2^(1−ν)/Γ(ν) x^ν K_ν(x). ν = 1/2, 3/2, 5/2 use the closed
//! forms e^(−x), (1+x)e^(−x), (1+x+x²/3)e^(−x). Any other ν is evaluated in f64 on the device:
//! K_μ and K_μ+1 (μ = ν − round(ν), |μ| ≤ 1/2) by Temme's series for x ≤ 2 and by the trapezoidal
//! rule on e^x K_μ(x) = ∫₀^∞ exp(−x(cosh t − 1)) cosh(μt) dt for x > 2 (step min(0.2, 0.5/√x),
//! discretisation error < e⁻⁴⁹), then the upward recurrence G_{j+1} = 2jG_j + x²G_{j−1} on
//! G_j = x^j K_j (forward stable for K). The constants Γ(1±μ), Temme's Γ₁, Γ₂ and ln Γ(ν) come
//! from the Taylor series of ln Γ(1+μ) in ζ(k) (no cancellation at μ → 0). Measured against an
//! independent quadrature of K_ν (unit test): relative error below 1e-13 for 0.05 ≤ ν ≤ 100.

use cudarc::driver::DeviceRepr;

use crate::error::{CudaError, invalid};

/// Nested structures per covariance.
pub const MAX_STRUCTURES: usize = 4;

/// Model ids (C `KrModel`).
pub(crate) mod id {
    pub const EXP: u32 = 0;
    pub const GAU: u32 = 1;
    pub const SPH: u32 = 2;
    pub const CUB: u32 = 3;
    pub const STAB: u32 = 4;
    pub const MAT: u32 = 5;
    pub const POW: u32 = 6;
    pub const LIN: u32 = 7;
    pub const MAT05: u32 = 8;
    pub const MAT15: u32 = 9;
    pub const MAT25: u32 = 10;
}

/// The shape of one structure (practical-range convention, r = h/a).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CovModel {
    /// exp(−3r)
    Exponential,
    /// exp(−3r²)
    Gaussian,
    /// 1 − 1.5r + 0.5r³ (r < 1), else 0
    Spherical,
    /// 1 − (7r² − 35/4 r³ + 7/2 r⁵ − 3/4 r⁷) (r < 1), else 0
    Cubic,
    /// exp(−3 r^alpha), 0 < alpha ≤ 2
    Stable { alpha: f64 },
    /// Matérn(nu) at x = scale·r (scale = s_ν, the host's `matern_scale(nu)`), 0 < nu ≤ 100
    Matern { nu: f64, scale: f64 },
    /// pseudo-covariance term −c·h^exponent, 0 < exponent < 2 (range unused)
    Power { exponent: f64 },
    /// pseudo-covariance term −c·h (range unused)
    Linear,
}

impl CovModel {
    pub fn is_bounded(&self) -> bool {
        !matches!(self, CovModel::Power { .. } | CovModel::Linear)
    }
}

/// One nested structure: model, partial sill c (power: scale, linear: slope), practical range a.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CovStructure {
    pub model: CovModel,
    pub sill: f64,
    pub range: f64,
}

/// A nugget plus up to [`MAX_STRUCTURES`] structures, the exactness rule and, for unbounded
/// models, the pseudo-covariance constant B.
#[derive(Clone, Debug, PartialEq)]
pub struct Covariance {
    pub nugget: f64,
    pub structures: Vec<CovStructure>,
    /// B of C(h) = B − γ(h); required when a structure is unbounded, ignored otherwise.
    pub pseudo_base: Option<f64>,
    /// Distances h ≤ eps count as 0 (exact mode only).
    pub eps: f64,
    /// Exact interpolation: C(h ≤ eps) = c_zero. False: the nugget is measurement error and never
    /// enters a node-sample covariance.
    pub exact: bool,
    /// C(0) of the variance formula; None: c_zero.
    pub var_zero: Option<f64>,
}

/// One structure as the kernels read it (C `KrStructure`, 104 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StructureParams {
    pub model: u32,
    pub pad0: u32,
    pub sill: f64,
    pub range: f64,
    pub param: f64,
    pub scale: f64,
    pub mu: f64,
    pub n_up: u32,
    pub pad1: u32,
    pub g1: f64,
    pub g2: f64,
    pub gp: f64,
    pub gm: f64,
    pub fact: f64,
    pub log_norm: f64,
}

/// The covariance as the kernels read it (C `KrCov`, 464 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CovParams {
    pub s: [StructureParams; MAX_STRUCTURES],
    pub nugget: f64,
    pub c_zero: f64,
    pub offset: f64,
    pub var_zero: f64,
    pub eps: f64,
    pub n_struct: u32,
    pub exact: u32,
}

// SAFETY: #[repr(C)] plain old data (integers and floats) matching KrStructure / KrCov, sizes
// checked on both sides (GF_CHECK_SIZE and `param_struct_sizes`).
unsafe impl DeviceRepr for StructureParams {}
// SAFETY: as above.
unsafe impl DeviceRepr for CovParams {}

const EULER_GAMMA: f64 = 0.577_215_664_901_532_9;

/// ζ(k) for k ≥ 2: the first 99 terms summed directly (smallest first), the tail from n = 100
/// by Euler–Maclaurin with three Bernoulli terms (next term < 1e-20 for k = 2).
fn zeta(k: u32) -> f64 {
    let kf = f64::from(k);
    let n = 100.0f64;
    let tail = n.powf(1.0 - kf) / (kf - 1.0) + 0.5 * n.powf(-kf) + kf * n.powf(-kf - 1.0) / 12.0
        - kf * (kf + 1.0) * (kf + 2.0) * n.powf(-kf - 3.0) / 720.0
        + kf * (kf + 1.0) * (kf + 2.0) * (kf + 3.0) * (kf + 4.0) * n.powf(-kf - 5.0) / 30240.0;
    let mut s = tail;
    for i in (1..100u32).rev() {
        s += f64::from(i).powf(-kf);
    }
    s
}

/// (A_odd(μ)/μ, A_even(μ)) with ln Γ(1+μ) = −μ·A_odd/μ − A_even, |μ| ≤ 1/2:
/// A_odd = γμ + Σ_{k odd ≥ 3} ζ(k) μ^k / k, A_even = −Σ_{k even ≥ 2} ζ(k) μ^k / k.
fn lgamma1p_parts(mu: f64) -> (f64, f64) {
    let mut odd_over_mu = EULER_GAMMA;
    let mut even = 0.0;
    for k in (2..=64u32).rev() {
        let term = zeta(k) / f64::from(k);
        if k % 2 == 1 {
            odd_over_mu += term * mu.powi(k as i32 - 1);
        } else {
            even -= term * mu.powi(k as i32);
        }
    }
    (odd_over_mu, even)
}

/// Γ(x) for 0 < x ≤ 101 (tests and checks): Γ(1+μ) from the ζ series, then the recurrence.
pub fn gamma_fn(x: f64) -> f64 {
    ln_gamma(x).exp()
}

/// ln Γ(x) for 0 < x ≤ 101.
pub fn ln_gamma(x: f64) -> f64 {
    let n = x.round();
    let mu = x - n;
    let (om, ev) = lgamma1p_parts(mu);
    let lg1 = -(mu * om) - ev; // ln Γ(1+μ)
    if n >= 1.0 {
        // Γ(μ + n) = Γ(1+μ) Π_{i=1}^{n-1} (μ + i)
        let mut s = lg1;
        let mut i = 1.0;
        while i < n {
            s += (mu + i).ln();
            i += 1.0;
        }
        s
    } else {
        lg1 - mu.ln()
    }
}

fn matern_constants(nu: f64, s: &mut StructureParams) {
    let n_up = nu.round();
    let mu = nu - n_up;
    let (om, ev) = lgamma1p_parts(mu);
    let ao = mu * om;
    s.mu = mu;
    s.n_up = n_up as u32;
    // sinh(Ao)/μ = (sinh(Ao)/Ao)·(Ao/μ), no cancellation at μ → 0
    let sinhc = if ao == 0.0 { 1.0 } else { ao.sinh() / ao };
    s.g1 = -ev.exp() * sinhc * om;
    s.g2 = ev.exp() * ao.cosh();
    s.gp = (-(ao + ev)).exp();
    s.gm = (ao - ev).exp();
    s.fact = if mu == 0.0 {
        1.0
    } else {
        mu * std::f64::consts::PI / (mu * std::f64::consts::PI).sin()
    };
    s.log_norm = (1.0 - nu) * std::f64::consts::LN_2 - ln_gamma(nu);
}

impl Covariance {
    /// Validates and converts to the kernels' form.
    /// [`Self::to_params`] of a cross-covariance of a coregionalisation model, whose nugget and
    /// sills may be negative (its matrices are positive semi-definite, not their entries); bounded
    /// structures only.
    pub fn to_params_cross(&self) -> Result<CovParams, CudaError> {
        if self.structures.iter().any(|s| !s.model.is_bounded()) {
            return Err(invalid(
                "kriging (covariance)",
                "a cross-covariance needs bounded structures",
            ));
        }
        let magnitudes = Covariance {
            nugget: self.nugget.abs(),
            structures: self
                .structures
                .iter()
                .map(|s| CovStructure {
                    sill: s.sill.abs(),
                    ..*s
                })
                .collect(),
            ..self.clone()
        };
        let mut p = magnitudes.to_params()?;
        p.nugget = self.nugget;
        let mut total = self.nugget;
        for (i, st) in self.structures.iter().enumerate() {
            p.s[i].sill = st.sill;
            total += st.sill;
        }
        p.c_zero = total;
        p.var_zero = self.var_zero.unwrap_or(total);
        Ok(p)
    }

    pub fn to_params(&self) -> Result<CovParams, CudaError> {
        const K: &str = "kriging (covariance)";
        if self.structures.len() > MAX_STRUCTURES {
            return Err(invalid(
                K,
                format!(
                    "{} structures; at most {MAX_STRUCTURES}",
                    self.structures.len()
                ),
            ));
        }
        if !(self.nugget.is_finite() && self.nugget >= 0.0) {
            return Err(invalid(K, format!("nugget = {} must be >= 0", self.nugget)));
        }
        if !(self.eps.is_finite() && self.eps >= 0.0) {
            return Err(invalid(K, format!("eps = {} must be >= 0", self.eps)));
        }
        let bounded = self.structures.iter().all(|s| s.model.is_bounded());
        let mut p = CovParams {
            nugget: self.nugget,
            eps: self.eps,
            exact: u32::from(self.exact),
            n_struct: self.structures.len() as u32,
            ..CovParams::default()
        };
        let mut total = self.nugget;
        for (i, st) in self.structures.iter().enumerate() {
            if !(st.sill.is_finite() && st.sill >= 0.0) {
                return Err(invalid(
                    K,
                    format!("structure {i}: sill = {} must be >= 0", st.sill),
                ));
            }
            if st.model.is_bounded() && !(st.range.is_finite() && st.range > 0.0) {
                return Err(invalid(
                    K,
                    format!("structure {i}: range = {} must be > 0", st.range),
                ));
            }
            let s = &mut p.s[i];
            s.sill = st.sill;
            s.range = if st.model.is_bounded() { st.range } else { 1.0 };
            total += st.sill;
            match st.model {
                CovModel::Exponential => s.model = id::EXP,
                CovModel::Gaussian => s.model = id::GAU,
                CovModel::Spherical => s.model = id::SPH,
                CovModel::Cubic => s.model = id::CUB,
                CovModel::Stable { alpha } => {
                    if !(alpha > 0.0 && alpha <= 2.0) {
                        return Err(invalid(K, format!("stable alpha = {alpha} not in (0, 2]")));
                    }
                    s.model = id::STAB;
                    s.param = alpha;
                }
                CovModel::Matern { nu, scale } => {
                    if !(nu > 0.0 && nu <= 100.0 && scale.is_finite() && scale > 0.0) {
                        return Err(invalid(
                            K,
                            format!("matern nu = {nu} (0, 100], scale = {scale} (> 0)"),
                        ));
                    }
                    s.param = nu;
                    s.scale = scale;
                    s.model = if nu == 0.5 {
                        id::MAT05
                    } else if nu == 1.5 {
                        id::MAT15
                    } else if nu == 2.5 {
                        id::MAT25
                    } else {
                        id::MAT
                    };
                    matern_constants(nu, s);
                }
                CovModel::Power { exponent } => {
                    if !(exponent > 0.0 && exponent < 2.0) {
                        return Err(invalid(
                            K,
                            format!("power exponent = {exponent} not in (0, 2)"),
                        ));
                    }
                    s.model = id::POW;
                    s.param = exponent;
                }
                CovModel::Linear => s.model = id::LIN,
            }
        }
        if bounded {
            p.offset = 0.0;
            p.c_zero = total;
        } else {
            let b = self.pseudo_base.ok_or_else(|| {
                invalid(
                    K,
                    "an unbounded structure needs the pseudo-covariance base B",
                )
            })?;
            if !b.is_finite() {
                return Err(invalid(K, format!("pseudo-covariance base B = {b}")));
            }
            p.offset = b - self.nugget;
            p.c_zero = b;
        }
        p.var_zero = self.var_zero.unwrap_or(p.c_zero);
        Ok(p)
    }
}

/// ρ(x) of Matérn with the constants of `s` (host mirror of `kr_matern_gen`).
pub(crate) fn matern_gen(s: &StructureParams, x: f64) -> f64 {
    if x.is_nan() || x <= 0.0 {
        return 1.0;
    }
    let mu = s.mu;
    let (g0, g1, mut lsc);
    if x <= 2.0 {
        let lnh = -(0.5 * x).ln();
        let sig = mu * lnh;
        let shs = if sig == 0.0 { 1.0 } else { sig.sinh() / sig };
        let mut f = s.fact * (s.g1 * sig.cosh() + s.g2 * shs * lnh);
        let mut pp = 0.5 * sig.exp() * s.gp;
        let mut qq = 0.5 * (-sig).exp() * s.gm;
        let (mut c, mut sum, mut sum1) = (1.0, f, pp);
        let q4 = 0.25 * x * x;
        for k in 1..200 {
            let dk = f64::from(k);
            f = (dk * f + pp + qq) / (dk * dk - mu * mu);
            c *= q4 / dk;
            pp /= dk - mu;
            qq /= dk + mu;
            let t = c * f;
            sum += t;
            sum1 += c * (pp - dk * f);
            if t.abs() < 1e-17 * sum.abs() {
                break;
            }
        }
        let xm = (mu * x.ln()).exp();
        g0 = xm * sum;
        g1 = xm * 2.0 * sum1;
        lsc = 0.0;
    } else {
        let h = (0.5 / x.sqrt()).min(0.2);
        let (mut s0, mut s1) = (0.5, 0.5);
        for j in 1..400 {
            let t = h * f64::from(j);
            let sh = (0.5 * t).sinh();
            let e = (-2.0 * x * sh * sh).exp();
            s0 += e * (mu * t).cosh();
            let a1 = e * ((mu + 1.0) * t).cosh();
            s1 += a1;
            if a1 < 1e-18 * s1 {
                break;
            }
        }
        let xm = (mu * x.ln()).exp();
        g0 = xm * h * s0;
        g1 = xm * x * h * s1;
        lsc = -x;
    }
    let mut g = g0;
    if s.n_up > 0 {
        let mut gp = g0;
        g = g1;
        let x2 = x * x;
        for i in 1..s.n_up {
            let gn = 2.0 * (mu + f64::from(i)) * g + x2 * gp;
            gp = g;
            g = gn;
            if g > 1e250 {
                g *= 1e-250;
                gp *= 1e-250;
                lsc += 575.646_273_248_511_4;
            }
        }
    }
    if g.is_nan() || g <= 0.0 {
        return 0.0;
    }
    (s.log_norm + g.ln() + lsc).exp().min(1.0)
}

fn rho(s: &StructureParams, h: f64) -> f64 {
    let r = h / s.range;
    match s.model {
        id::EXP => (-3.0 * r).exp(),
        id::GAU => (-3.0 * r * r).exp(),
        id::SPH => {
            if r < 1.0 {
                1.0 - r * (1.5 - 0.5 * r * r)
            } else {
                0.0
            }
        }
        id::CUB => {
            let r2 = r * r;
            if r < 1.0 {
                1.0 - r2 * (7.0 - r * (8.75 - r2 * (3.5 - 0.75 * r2)))
            } else {
                0.0
            }
        }
        id::STAB => {
            if r > 0.0 {
                (-3.0 * r.powf(s.param)).exp()
            } else {
                1.0
            }
        }
        id::MAT05 => (-s.scale * r).exp(),
        id::MAT15 => {
            let x = s.scale * r;
            (1.0 + x) * (-x).exp()
        }
        id::MAT25 => {
            let x = s.scale * r;
            (1.0 + x + x * x / 3.0) * (-x).exp()
        }
        id::MAT => matern_gen(s, s.scale * r),
        id::POW => {
            if h > 0.0 {
                -h.powf(s.param)
            } else {
                0.0
            }
        }
        _ => -h,
    }
}

impl CovParams {
    /// C(h) in f64, the device's formulas (host mirror).
    pub fn eval(&self, h: f64) -> f64 {
        if self.exact != 0 && h <= self.eps {
            return self.c_zero;
        }
        let mut s = self.offset;
        for st in &self.s[..self.n_struct as usize] {
            s += st.sill * rho(st, h);
        }
        s
    }
}
