//! The far kernel's derivative envelopes (Taylor jets along lines) and the bound's windowed
//! convolution kernel (see the parent module's docs).

use std::f64::consts::PI;

use rayon::prelude::*;

use super::super::jet::Jet;
use super::super::params::Kernel;
use super::{Blend, ENVELOPE_MARGIN};

/// K as a jet in q (q.c[0] > 0).
fn kernel_jet(k: &Kernel, q: &Jet) -> Jet {
    match *k {
        Kernel::Weibull { d, theta } => q.powf(theta / 2.0).scale(-d).exp(),
        Kernel::Lognormal { x0, xb } => {
            let z = q.ln().scale(0.5).add_scalar(-x0.ln());
            z.mul(&z).scale(-0.5 / (xb * xb)).exp()
        }
        Kernel::TwoDt { u, p } => q.scale(1.0 / u).add_scalar(1.0).powf(-(p + 1.0)),
    }
}

/// G = K·S_n(t(q)) as a jet in q.
pub(super) fn far_jet(k: &Kernel, b: &Blend, q: &Jet) -> Jet {
    let t0 = b.t(q.value());
    if t0 <= 0.0 {
        return Jet::constant(0.0, q.len);
    }
    let kj = kernel_jet(k, q);
    if t0 >= 1.0 {
        return kj;
    }
    let (a, bb) = (b.inner_m * b.inner_m, b.outer_m * b.outer_m);
    let t = q.add_scalar(-a).scale(1.0 / (bb - a));
    let u = t.scale(-1.0).add_scalar(1.0);
    let mut tn = Jet::constant(1.0, q.len);
    for _ in 0..b.order {
        tn = tn.mul(&t);
    }
    kj.mul(&tn.mul(&u.poly(&b.coef)))
}

/// G(r) = K(r)·S_n(t(r²)).
#[inline]
pub fn far_kernel(k: &Kernel, b: &Blend, r2: f64) -> f64 {
    let f = b.far_factor(r2);
    if f == 0.0 { 0.0 } else { f * k.eval_r2(r2) }
}

/// Sampled envelopes: D̄_n(r) = sup_{s ≥ r} sup_e |(e·∇)ⁿ G| and Ḡ(r) = sup_{s ≥ r} |G|, with
/// [`ENVELOPE_MARGIN`]; distances from R₁ to `r_max`.
#[derive(Debug, Clone)]
pub struct Envelope {
    r: Vec<f64>,
    /// D_n at the samples, with the margin (not an envelope).
    raw: Vec<f64>,
    dn: Vec<f64>,
    g: Vec<f64>,
    d1: Vec<f64>,
}

impl Envelope {
    pub fn new(k: &Kernel, b: &Blend, r_max: f64) -> Self {
        let n = b.order;
        let mut r = Vec::new();
        // Fine steps over the blend and the next stretch (where G varies on the blend's scale),
        // then geometric.
        let w = b.outer_m - b.inner_m;
        let mut x = b.inner_m;
        while x < b.outer_m + w && x < r_max {
            r.push(x);
            x += w / 256.0;
        }
        while x < r_max {
            r.push(x);
            x *= 1.004;
        }
        r.push(r_max.max(b.inner_m));
        const ANGLES: usize = 17;
        let raw: Vec<(f64, f64, f64)> = r
            .par_iter()
            .map(|&x| {
                let mut best: f64 = 0.0;
                let mut g: f64 = 0.0;
                let mut d1: f64 = 0.0;
                for a in 0..ANGLES {
                    let c = (a as f64 / (ANGLES - 1) as f64 * PI / 2.0).cos();
                    // q(s) = |x e_r + s e|² = x² + 2 x c s + s²
                    let q = Jet::quadratic(x * x, 2.0 * x * c, 1.0, n + 1);
                    let j = far_jet(k, b, &q);
                    best = best.max(j.derivative(n).abs());
                    g = g.max(j.value().abs());
                    d1 = d1.max(j.derivative(1).abs());
                }
                (best, g, d1)
            })
            .collect();
        let raw_dn: Vec<f64> = raw
            .iter()
            .map(|&(d, _, _)| {
                if d.is_finite() {
                    d * ENVELOPE_MARGIN
                } else {
                    f64::INFINITY
                }
            })
            .collect();
        let mut dn = vec![0.0; r.len()];
        let mut gv = vec![0.0; r.len()];
        let mut d1v = vec![0.0; r.len()];
        let (mut md, mut mg, mut m1) = (0.0f64, 0.0f64, 0.0f64);
        for i in (0..r.len()).rev() {
            let (d, g, d1) = raw[i];
            m1 = if d1.is_finite() {
                m1.max(d1)
            } else {
                f64::INFINITY
            };
            d1v[i] = m1 * ENVELOPE_MARGIN;
            // A NaN (a kernel the jets cannot follow) makes the bound infinite: the plan fails.
            md = if d.is_finite() {
                md.max(d)
            } else {
                f64::INFINITY
            };
            mg = if g.is_finite() {
                mg.max(g)
            } else {
                f64::INFINITY
            };
            dn[i] = md * ENVELOPE_MARGIN;
            gv[i] = mg * ENVELOPE_MARGIN;
        }
        Self {
            r,
            raw: raw_dn,
            dn,
            g: gv,
            d1: d1v,
        }
    }
    /// The bound's kernel as a table over lattice distances ℓ: entry k covers ℓ ∈ [kδ, (k+1)δ)
    /// and holds the largest sampled D_n over [kδ − shift, (k+1)δ + shift], widened by one sample
    /// on each side (what lies between samples is within the margin); the last entry also holds
    /// the tail's envelope and covers every larger ℓ. The stencil boxes and the binning keep the
    /// true distances within ±shift of ℓ, and G ≡ 0 within R₁: windows below R₁ hold 0.
    pub fn window_table(&self, shift: f64) -> WindowTable {
        let last = *self.r.last().unwrap_or(&0.0);
        let step = (shift / 4.0).max(last / 20000.0).max(1e-3);
        let len = ((last + shift) / step).ceil() as usize + 2;
        let vals: Vec<f64> = (0..len)
            .into_par_iter()
            .map(|k| {
                let (a, b) = (k as f64 * step - shift, (k + 1) as f64 * step + shift);
                if b < self.r[0] {
                    return 0.0;
                }
                let lo = self.r.partition_point(|&x| x < a).saturating_sub(1);
                let hi = (self.r.partition_point(|&x| x <= b) + 1).min(self.r.len());
                let mut m = self.raw[lo..hi].iter().cloned().fold(0.0, f64::max);
                if k + 1 == len || b >= last {
                    m = m.max(self.dn[self.r.len() - 1]);
                }
                m
            })
            .collect();
        WindowTable { step, vals }
    }
    fn index(&self, x: f64) -> usize {
        // The last sample at or below x (the envelope is non-increasing).
        self.r.partition_point(|&s| s <= x).saturating_sub(1)
    }
    /// D̄_n(x).
    pub fn dn(&self, x: f64) -> f64 {
        if x <= self.r[0] {
            self.dn[0]
        } else {
            self.dn[self.index(x)]
        }
    }
    /// sup |G| (an upper bound: the envelope at R₁) and sup of the bound's envelope.
    pub fn sups(&self) -> (f64, f64) {
        (self.g[0], self.dn[0])
    }
    /// Ḡ(x).
    pub fn g(&self, x: f64) -> f64 {
        if x <= self.r[0] {
            self.g[0]
        } else {
            self.g[self.index(x)]
        }
    }
    /// D̄₁(x): the envelope of |∇G|.
    pub fn d1(&self, x: f64) -> f64 {
        if x <= self.r[0] {
            self.d1[0]
        } else {
            self.d1[self.index(x)]
        }
    }
}

/// [`Envelope::window_table`]: the bound's convolution kernel by lattice distance.
#[derive(Debug, Clone)]
pub struct WindowTable {
    pub step: f64,
    pub vals: Vec<f64>,
}

impl WindowTable {
    #[inline]
    pub fn at(&self, x: f64) -> f64 {
        let k = (x.max(0.0) / self.step) as usize;
        self.vals[k.min(self.vals.len() - 1)]
    }
    pub fn sup(&self) -> f64 {
        self.vals.iter().cloned().fold(0.0, f64::max)
    }
    /// ∫ at(|y|) dA over the plane (for the planner).
    pub(super) fn area_integral(&self) -> f64 {
        self.vals
            .iter()
            .enumerate()
            .map(|(k, v)| {
                let (a, b) = (k as f64 * self.step, (k + 1) as f64 * self.step);
                v * PI * (b * b - a * a)
            })
            .sum()
    }
    /// The table's sample distances (kδ), for the GPU.
    pub fn distances(&self) -> Vec<f64> {
        (0..self.vals.len()).map(|k| k as f64 * self.step).collect()
    }
}
