//! The tabulated radial law of the spherical and cubic models' wave numbers (the randomisation
//! method of [`super::spectral`] for covariances without a closed-form spectral sampler).
//!
//! # The law
//!
//! Both models are valid isotropic covariances in R³ with a polynomial correlation on the unit
//! range, C(r) = Σₙ cₙ rⁿ for r = h/a < 1 and 0 beyond (C(1) = C′(1) = 0):
//!
//! - spherical: C = 1 − 3/2 r + 1/2 r³ (the self-convolution of a ball of diameter a);
//! - cubic: C = 1 − 7r² + 35/4 r³ − 7/2 r⁵ + 3/4 r⁷.
//!
//! In R³, C(|h|) = E[cos(k·h)] for k with the density f(k) = 1/(2π²) ∫₀¹ C(r) sin(kr)/(kr) r² dr
//! (the isotropic Fourier transform; range 1, the range a scales k by 1/a), so |k| = κ has the
//! density
//!
//! g(κ) = 4πκ² f(κ) = (2/π) κ S(κ),   S(κ) = ∫₀¹ r C(r) sin(κr) dr,
//!
//! and the distribution function (∫₀^K κ sin(κr) dκ = (sin Kr − Kr cos Kr)/r², then by parts,
//! with C(1) = 0)
//!
//! G(K) = (2/π) ∫₀¹ (rC)′(r) sin(Kr)/r dr = (2/π) [Si(K) + Q(K)],   Q(K) = ∫₀¹ q(r) sin(Kr) dr,
//!
//! (rC)′ = 1 + r q(r), q(r) = Σ_{n≥1} (n+1) cₙ r^(n−1). For the spherical model g(κ) =
//! (3/π) j₁(κ/2)² (|FT of the ball|²). A 2-D field is the restriction of the 3-D one to the
//! plane: draw κ from g, a uniform direction u on the sphere, and keep κ/a·(u_x, u_y); for h in
//! the plane, E[cos(k·h)] = C(|h|/a) exactly.
//!
//! # Closed forms
//!
//! For a polynomial ψ, ∫₀¹ ψ(r) sin(κr) dr is, by repeated parts (exact: the sum ends at the
//! degree), Σ_j [ψ^(j)(1) s_j(κ) − ψ^(j)(0) s_j(0)] / κ^(j+1), s_j(x) = −cos(x + jπ/2); this is
//! accurate (to 1e-15) for κ ≥ 3; below, the Taylor series Σ_m odd (−1)^((m−1)/2) κ^m/m! ·
//! ∫₀¹ ψ(r) r^m dr (terms decreasing from the first: to 1e-16). Both were checked against
//! 40-digit quadrature. π/2 − Si(K) = f(K) cos K + g(K) sin K with the asymptotic series
//! f ~ Σ (−1)^i (2i)!/K^(2i+1), g ~ Σ (−1)^i (2i+1)!/K^(2i+2), used from K ≥ [`KMAX`] = 256 with
//! 12 terms (the last below 1e-30 relative).
//!
//! # Table and sampling
//!
//! g(κᵢ) and G(κᵢ) at κᵢ = i·h, h = 1/32, up to [`KMAX`] (8192 intervals, once per model,
//! then shared: the range only scales κ): G by 4-point Gauss–Legendre of g on each interval
//! (g is entire; the rule's error is negligible, the sum's rounding below 1e-14: the nodes
//! were within 1.5e-15 of 40-digit values). Between nodes G is the cubic Hermite interpolant of
//! (Gᵢ, gᵢ), error at most h⁴/384·max|g‴|: measured 1.6e-9 at the midpoints for h = 1/16, so
//! about 1e-10 at h = 1/32 (the test allows 3e-10).
//! A uniform U in [0, 1) below G(KMAX) is inverted on that interpolant (the node interval by
//! bisection of the table, then safeguarded Newton in the interval), so the sampled law's
//! distribution function is within 1e-10 of G. The tail beyond KMAX (mass T(KMAX) = 1 − G(KMAX):
//! 7.5e-3 for the spherical model, whose g ~ 12/(πκ²) cos²(κ/2), T(K) ~ 6/(πK); 2.6e-6 for the
//! cubic, T(K) ~ 140/(πK³)) is not truncated: T(κ) = 1 − U is solved on the closed form
//! T(K) = (2/π)[f(K) cos K + g(K) sin K − Q(K)] (safeguarded Newton, to a few ulps of κ; the
//! closed form's absolute error is below 1e-17 there).

use std::f64::consts::PI;
use std::sync::OnceLock;

use super::super::variogram::Model;

/// The table's end (unit range): beyond it the tail is inverted on the closed form.
pub const KMAX: f64 = 256.0;
/// Intervals of the table per unit of κ (h = 1/32).
const PER_UNIT: usize = 32;
/// Below this κ the Taylor series, above the expansion by parts.
const TAYLOR_BELOW: f64 = 3.0;

/// The unit-range correlation polynomial of a model with a tabulated law.
fn coefficients(model: Model) -> Option<&'static [f64]> {
    match model {
        Model::Spherical => Some(&[1.0, -1.5, 0.0, 0.5]),
        Model::Cubic => Some(&[1.0, 0.0, -7.0, 8.75, 0.0, -3.5, 0.0, 0.75]),
        _ => None,
    }
}

/// The values at x of ψ and all its derivatives (ψ by its coefficients, lowest first).
fn derivatives(p: &[f64], x: f64) -> Vec<f64> {
    let mut p = p.to_vec();
    let mut out = Vec::with_capacity(p.len());
    while !p.is_empty() {
        out.push(p.iter().rev().fold(0.0, |acc, &c| acc * x + c));
        p = p
            .iter()
            .enumerate()
            .skip(1)
            .map(|(i, &c)| i as f64 * c)
            .collect();
    }
    out
}

/// ∫₀¹ ψ(r) sin(κr) dr, κ ≥ 0 (see the module docs).
fn int_sin(p: &[f64], kappa: f64) -> f64 {
    if kappa < TAYLOR_BELOW {
        // Σ over odd m of (−1)^((m−1)/2) κ^m/m! · Σₙ ψₙ/(n+m+1).
        let mut sum = 0.0;
        let mut term = kappa;
        let mut m = 1usize;
        while m < 120 {
            let moment: f64 = p
                .iter()
                .enumerate()
                .map(|(n, &c)| c / (n + m + 1) as f64)
                .sum();
            sum += term * moment;
            if term.abs() < 1e-18 {
                break;
            }
            term *= -kappa * kappa / ((m + 1) * (m + 2)) as f64;
            m += 2;
        }
        sum
    } else {
        let (s, c) = kappa.sin_cos();
        let at1 = derivatives(p, 1.0);
        let at0 = derivatives(p, 0.0);
        let mut sum = 0.0;
        let mut pow = kappa;
        for (j, (d1, d0)) in at1.iter().zip(&at0).enumerate() {
            // s_j(κ) and s_j(0), s_j(x) = −cos(x + jπ/2).
            let (sk, s0) = match j % 4 {
                0 => (-c, -1.0),
                1 => (s, 0.0),
                2 => (c, 1.0),
                _ => (-s, 0.0),
            };
            sum += (d1 * sk - d0 * s0) / pow;
            pow *= kappa;
        }
        sum
    }
}

/// One model's law on the unit range.
#[derive(Debug)]
pub struct RadialTable {
    /// r·C(r): coefficients of r⁰, r¹, ….
    phi: Vec<f64>,
    /// q(r) = Σ_{n≥1} (n+1) cₙ r^(n−1).
    q: Vec<f64>,
    /// G and g at κᵢ = i/PER_UNIT.
    cdf: Vec<f64>,
    pdf: Vec<f64>,
    /// T(KMAX) by the closed form.
    tail_mass: f64,
    /// T(K) ~ A/K^p: p.
    tail_power: i32,
}

impl RadialTable {
    fn new(c: &[f64]) -> Self {
        let mut phi = vec![0.0];
        phi.extend_from_slice(c);
        let q: Vec<f64> = c
            .iter()
            .enumerate()
            .skip(1)
            .map(|(n, &cn)| (n + 1) as f64 * cn)
            .collect();
        let n = KMAX as usize * PER_UNIT;
        let h = 1.0 / PER_UNIT as f64;
        let mut law = RadialTable {
            phi,
            q,
            cdf: vec![0.0; n + 1],
            pdf: vec![0.0; n + 1],
            tail_mass: 0.0,
            tail_power: 1,
        };
        // 4-point Gauss–Legendre nodes and weights on [−1, 1].
        let (x1, x2) = (0.339_981_043_584_856_3, 0.861_136_311_594_052_6);
        let (w1, w2) = (0.652_145_154_862_546_2, 0.347_854_845_137_453_8);
        for i in 0..=n {
            law.pdf[i] = law.pdf_at(i as f64 * h);
        }
        for i in 0..n {
            let mid = (i as f64 + 0.5) * h;
            let half = 0.5 * h;
            let s = w1 * (law.pdf_at(mid - half * x1) + law.pdf_at(mid + half * x1))
                + w2 * (law.pdf_at(mid - half * x2) + law.pdf_at(mid + half * x2));
            law.cdf[i + 1] = law.cdf[i] + half * s;
        }
        law.tail_mass = law.tail(KMAX);
        // The tail's power: the first even j with q^(j)(0) ≠ 0, plus 1 (the tail's
        // non-oscillating part is (2/π) Σ_j q^(j)(0) s_j(0)/K^(j+1)).
        let at0 = derivatives(&law.q, 0.0);
        law.tail_power = at0
            .iter()
            .enumerate()
            .find(|&(j, d)| j % 2 == 0 && *d != 0.0)
            .map_or(1, |(j, _)| j as i32 + 1);
        law
    }

    /// The density g(κ) on the unit range.
    pub fn pdf_at(&self, kappa: f64) -> f64 {
        2.0 / PI * kappa * int_sin(&self.phi, kappa)
    }

    /// T(K) = 1 − G(K) by the closed form, K ≥ [`KMAX`].
    fn tail(&self, k: f64) -> f64 {
        let (s, c) = k.sin_cos();
        let k2 = k * k;
        let (mut f, mut g) = (0.0, 0.0);
        let (mut tf, mut tg) = (1.0 / k, 1.0 / k2);
        for i in 0..12 {
            f += tf;
            g += tg;
            let i = i as f64;
            tf *= -(2.0 * i + 1.0) * (2.0 * i + 2.0) / k2;
            tg *= -(2.0 * i + 2.0) * (2.0 * i + 3.0) / k2;
        }
        2.0 / PI * (f * c + g * s - int_sin(&self.q, k))
    }

    /// The distribution function G(K) of the unit-range law that the sampler draws from: the
    /// table's Hermite interpolant below [`KMAX`], the closed form beyond.
    pub fn cdf_at(&self, k: f64) -> f64 {
        if k <= 0.0 {
            return 0.0;
        }
        if k >= KMAX {
            return 1.0 - self.tail(k);
        }
        let x = k * PER_UNIT as f64;
        let i = (x as usize).min(self.cdf.len() - 2);
        self.hermite(i, x - i as f64).0
    }

    /// The Hermite interpolant on interval i at t ∈ [0, 1], and its derivative in t.
    fn hermite(&self, i: usize, t: f64) -> (f64, f64) {
        let h = 1.0 / PER_UNIT as f64;
        let (g0, g1) = (self.cdf[i], self.cdf[i + 1]);
        let (d0, d1) = (self.pdf[i] * h, self.pdf[i + 1] * h);
        let t2 = t * t;
        let t3 = t2 * t;
        let h00 = 2.0 * t3 - 3.0 * t2 + 1.0;
        let h10 = t3 - 2.0 * t2 + t;
        let h01 = -2.0 * t3 + 3.0 * t2;
        let h11 = t3 - t2;
        let v = h00 * g0 + h10 * d0 + h01 * g1 + h11 * d1;
        let dv = (6.0 * t2 - 6.0 * t) * (g0 - g1)
            + (3.0 * t2 - 4.0 * t + 1.0) * d0
            + (3.0 * t2 - 2.0 * t) * d1;
        (v, dv)
    }

    /// The unit-range κ with G(κ) = u, u ∈ [0, 1) (see the module docs).
    pub fn quantile(&self, u: f64) -> f64 {
        let n = self.cdf.len() - 1;
        if u < self.cdf[n] {
            // cdf[i] ≤ u < cdf[i + 1].
            let i = self.cdf.partition_point(|&c| c <= u).max(1) - 1;
            let (mut lo, mut hi) = (0.0f64, 1.0f64);
            let mut t = match self.cdf[i + 1] - self.cdf[i] {
                d if d > 0.0 => ((u - self.cdf[i]) / d).clamp(0.0, 1.0),
                _ => 0.5,
            };
            for _ in 0..100 {
                let (v, dv) = self.hermite(i, t);
                if v < u {
                    lo = t;
                } else {
                    hi = t;
                }
                let next = t - (v - u) / dv;
                let next = if dv > 0.0 && next > lo && next < hi {
                    next
                } else {
                    0.5 * (lo + hi)
                };
                if (next - t).abs() <= 1e-15 || hi - lo <= 1e-15 {
                    t = next;
                    break;
                }
                t = next;
            }
            (i as f64 + t) / PER_UNIT as f64
        } else {
            self.tail_quantile(1.0 - u)
        }
    }

    /// K ≥ KMAX with T(K) = v, 0 < v ≤ T(KMAX) (to rounding).
    fn tail_quantile(&self, v: f64) -> f64 {
        if v >= self.tail_mass {
            return KMAX;
        }
        // T(K) ≈ T(KMAX)·(KMAX/K)^p: the start; then a bracket and safeguarded Newton.
        let guess = KMAX * (self.tail_mass / v).powf(1.0 / self.tail_power as f64);
        let mut lo = KMAX;
        let mut hi = (2.0 * guess).max(2.0 * KMAX);
        while self.tail(hi) > v && hi < 1e300 {
            lo = hi;
            hi *= 2.0;
        }
        let mut k = guess.clamp(lo, hi);
        for _ in 0..200 {
            let t = self.tail(k);
            if t > v {
                lo = k;
            } else {
                hi = k;
            }
            let g = self.pdf_at(k);
            let next = k + (t - v) / g;
            let next = if g > 0.0 && next > lo && next < hi {
                next
            } else {
                0.5 * (lo + hi)
            };
            if (next - k).abs() <= 4.0 * f64::EPSILON * k || hi - lo <= 4.0 * f64::EPSILON * hi {
                return next;
            }
            k = next;
        }
        k
    }
}

/// The shared unit-range law of `model`, built on first use; None for models without one.
pub fn table(model: Model) -> Option<&'static RadialTable> {
    static SPHERICAL: OnceLock<RadialTable> = OnceLock::new();
    static CUBIC: OnceLock<RadialTable> = OnceLock::new();
    let c = coefficients(model)?;
    let cell = match model {
        Model::Spherical => &SPHERICAL,
        _ => &CUBIC,
    };
    Some(cell.get_or_init(|| RadialTable::new(c)))
}
