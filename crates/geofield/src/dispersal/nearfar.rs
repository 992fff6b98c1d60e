//! Near/far split for any kernel, with a certified bound at every cell.
//!
//! # Split
//!
//! With q = d², t = (q − R₁²)/(R² − R₁²) and S_n the C^(n−1) smoothstep of degree 2n − 1
//! (S_n(t) = tⁿ Σ_{k<n} C(n−1+k, k)(1 − t)ᵏ, 0 at t ≤ 0, 1 at t ≥ 1):
//!
//! - **near** kernel K·(1 − S_n(t)): exact, summed over the trees within R by the cutoff's tiled
//!   gather (CPU and GPU), a polynomial factor per pair (no extra transcendental);
//! - **far** kernel G = K·S_n(t): zero within R₁, K beyond R, smooth in between. The far field
//!   F(y) = Σ_k w_k G(y − x_k) is computed on a square lattice of spacing H: every tree's
//!   weight is spread to the n × n lattice nodes around it with tensor-product Lagrange weights
//!   (n points per axis, the tree in the central interval; each term rounded once to a fixed
//!   point and summed exactly in 128 bits, [`Fixed`]: the same node weights whatever order the
//!   trees come in, on one process or summed over several), the node weights are convolved with
//!   G sampled on the lattice (FFT: zero-padded for an open plot, circular on a torus), and each
//!   cell takes the n × n Lagrange interpolation of the node values around it.
//!
//! # Bound
//!
//! Let D_n(r) = sup over unit directions e of |(e·∇)ⁿ G| at distance r (taken from Taylor
//! series along lines, `jet.rs`, over sampled distances and angles, with a margin), and D̄_n its
//! non-increasing envelope. Tensor-product Lagrange interpolation with n equispaced points errs
//! by at most (1 + Λ)·ω·Hⁿ/n!·sup|∂ⁿ| (Λ its Lebesgue constant, ω = max |Π(t − j)| over the
//! central interval); the source side's error per tree is that with the derivative bounded over
//! the tree's stencil box (within s = √2·(n/2)·H of the tree), and the target side's is that of
//! the lattice field, whose n-th derivatives are ≤ Λ²·Σ w D_n. So at every cell y
//!
//! ```text
//! |far(y) − F(y)| ≤ A Σ_k w_k D̄_n(|y − x_k| − 2s),      A = (1 + Λ)(1 + Λ²) ω Hⁿ / n!
//! ```
//!
//! and binning trees and cells to their nearest nodes (each ≤ H/√2 away) turns the sum into a
//! lattice convolution of non-negative node weights with a kernel of the lattice distance ℓ, done
//! by FFT with the far field. Since every distance the error terms involve lies within
//! ±(2s + √2 H) of ℓ, that kernel is the largest sampled D_n over the window [ℓ − 2s − √2 H,
//! ℓ + 2s + √2 H] ([`Envelope::window_table`]; zero where the window lies within R₁, where G ≡ 0)
//! rather than the non-increasing envelope (which would charge every tree near the cell with
//! the blend's largest derivative). Its maximum over the nodes nearest to cells, plus bounds on the FFTs' rounding
//! (and on a torus the minimum image's kink at half the period, where G is only Lipschitz:
//! [`kink_bound`]), is the certified bound. It is required to be ≤ tolerance × L,
//! with L a rigorous lower bound on the band maximum: the largest of the near field itself (every
//! term is non-negative and 1 − S_n ≤ 1) and the largest single-tree term (`radius.rs`). If it is
//! not, H is halved and the far field recomputed, up to the lattice size limit; then the method
//! refuses ([`GeofieldError::Unsupported`]) and `auto` falls back to the cutoff or exact sum.
//!
//! The plan (R₁, R, n, H) is chosen by a cost model (pairs of the near gather against the FFTs,
//! spreading and interpolation) among the candidates whose bound, estimated at the mean tree
//! density with a safety factor of 4, meets the tolerance.

use geofield_core::GridSpec;
use rayon::prelude::*;

use super::params::Kernel;
use super::sources::{Sources, min_image};
use crate::GeofieldError;

mod envelope;
mod far_cpu;
mod fixed;
mod plan;
pub use envelope::{Envelope, WindowTable, far_kernel};
pub use far_cpu::{certified, far_cpu, fixed_point_bound};
pub use fixed::{Fixed, Nodes};
pub use plan::plan;
pub(crate) use plan::{Agree, plan_shared};

/// Largest padded lattice (nodes) the CPU path accepts (complex f64 arrays of 256 MB).
pub const MAX_LATTICE_CPU: usize = 1 << 24;
/// Largest padded lattice (nodes) on the GPU (six f64 arrays of ~1.1 GB).
pub const MAX_LATTICE_GPU: usize = 1 << 27;
/// Share of the tolerance the planner aims at (the certificate then uses the whole tolerance).
const PLAN_SAFETY: f64 = 1.0;
/// Margin on the sampled derivative envelope (between samples in distance and angle).
const ENVELOPE_MARGIN: f64 = 1.3;

/// The blend between the near and far kernels.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Blend {
    /// R₁: the far kernel is zero within it.
    pub inner_m: f64,
    /// R: the near kernel is zero beyond it.
    pub outer_m: f64,
    /// n: S_n is C^(n−1); also the interpolation's points per axis.
    pub order: usize,
    /// C(n−1+k, k), k < n: S_n(t) = tⁿ Σ_k c_k (1 − t)ᵏ, all terms positive (stable in f32);
    /// 1 − S_n(t) = S_n(1 − t).
    #[serde(skip)]
    pub coef: Vec<f64>,
}

impl Blend {
    pub fn new(inner_m: f64, outer_m: f64, order: usize) -> Self {
        Self {
            inner_m,
            outer_m,
            order,
            coef: (0..order).map(|k| binomial(order - 1 + k, k)).collect(),
        }
    }
    /// t(q) = (q − R₁²)/(R² − R₁²).
    #[inline]
    pub fn t(&self, q: f64) -> f64 {
        let (a, b) = (self.inner_m * self.inner_m, self.outer_m * self.outer_m);
        (q - a) / (b - a)
    }
    /// S_n(t) for t in [0, 1].
    #[inline]
    fn step(&self, t: f64) -> f64 {
        let u = 1.0 - t;
        let inner = self.coef.iter().rev().fold(0.0, |acc, &c| acc * u + c);
        t.powi(self.order as i32) * inner
    }
    /// S_n(t(q)): the far kernel's share of K at squared distance q.
    #[inline]
    pub fn far_factor(&self, q: f64) -> f64 {
        let t = self.t(q);
        if t <= 0.0 {
            0.0
        } else if t >= 1.0 {
            1.0
        } else {
            self.step(t)
        }
    }
    /// 1 − S_n(t(q)) = S_n(1 − t): the near kernel's share (0 beyond R).
    #[inline]
    pub fn near_factor(&self, q: f64) -> f64 {
        let t = self.t(q);
        if t <= 0.0 {
            1.0
        } else if t >= 1.0 {
            0.0
        } else {
            self.step(1.0 - t)
        }
    }
}

fn binomial(n: usize, k: usize) -> f64 {
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

/// Lagrange interpolation constants for n equispaced points, the point in the central interval:
/// (ω, Λ) = (max |Π_j (t − j)|, max Σ_k |l_k(t)|), sampled with a small margin.
pub fn lagrange_constants(n: usize) -> (f64, f64) {
    let lo = (n / 2 - 1) as f64;
    let (mut om, mut lam) = (0.0f64, 0.0f64);
    for i in 0..=1000 {
        let t = lo + i as f64 / 1000.0;
        om = om.max((0..n).map(|j| t - j as f64).product::<f64>().abs());
        lam = lam.max(lagrange_weights(n, t).iter().map(|w| w.abs()).sum());
    }
    (om * 1.001, lam * 1.001)
}

/// l_k(t) for nodes 0..n−1.
#[inline]
pub fn lagrange_weights(n: usize, t: f64) -> [f64; 8] {
    let mut w = [0.0; 8];
    for (k, wk) in w.iter_mut().enumerate().take(n) {
        let mut p = 1.0;
        for j in 0..n {
            if j != k {
                p *= (t - j as f64) / (k as f64 - j as f64);
            }
        }
        *wk = p;
    }
    w
}

/// A lattice position `a` (in lattice units) → first stencil node and the n weights.
#[inline]
pub fn stencil(n: usize, a: f64) -> (i64, [f64; 8]) {
    let m = a.floor();
    let base = m - (n / 2 - 1) as f64;
    (base as i64, lagrange_weights(n, a - base))
}

/// The far-field lattice: node (i, j) at (origin_u + i·hx, origin_v + j·hy), `nx × ny` nodes,
/// FFT size `px × py` (= nx × ny on a torus, circular).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Lattice {
    pub origin_u_m: f64,
    pub origin_v_m: f64,
    pub hx_m: f64,
    pub hy_m: f64,
    pub nx: usize,
    pub ny: usize,
    pub px: usize,
    pub py: usize,
    pub periodic: bool,
}

/// The smallest m ≥ n whose only prime factors are 2, 3, 5, 7.
pub fn fft_size(n: usize) -> usize {
    let mut m = n.max(1);
    loop {
        let mut x = m;
        for p in [2, 3, 5, 7] {
            while x.is_multiple_of(p) {
                x /= p;
            }
        }
        if x == 1 {
            return m;
        }
        m += 1;
    }
}

/// What the planner needs of a species' trees: how many, Σw, and the region they and the grid
/// cover; of trees held by several processes, combined over them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SourceStats {
    pub n: usize,
    pub w_total: f64,
    /// (u_lo, v_lo, u_hi, v_hi): the trees' and the grid's.
    pub region: (f64, f64, f64, f64),
}

impl SourceStats {
    pub fn of(grid: &GridSpec, sources: &Sources) -> Self {
        Self {
            n: sources.len(),
            w_total: sources.total_weight(),
            region: region(grid, sources),
        }
    }
}

/// The region the far field must cover: the trees and the grid, (u_lo, v_lo, u_hi, v_hi).
pub(crate) fn region(grid: &GridSpec, sources: &Sources) -> (f64, f64, f64, f64) {
    let init = (0.0f64, 0.0f64, grid.width_m(), grid.height_m());
    (0..sources.len())
        .into_par_iter()
        .map(|i| (sources.u[i], sources.v[i], sources.u[i], sources.v[i]))
        .reduce(
            || init,
            |a, b| (a.0.min(b.0), a.1.min(b.1), a.2.max(b.2), a.3.max(b.3)),
        )
}

impl Lattice {
    /// The lattice of spacing ≈ `h_m` for `order`-point stencils; `None` when it would have
    /// more than `max_nodes` padded nodes.
    pub fn new(
        grid: &GridSpec,
        region: (f64, f64, f64, f64),
        h_m: f64,
        order: usize,
        torus: bool,
        max_nodes: usize,
    ) -> Option<Self> {
        if torus {
            let (lx, ly) = (grid.width_m(), grid.height_m());
            let nx = ((lx / h_m).round() as usize).max(order);
            let ny = ((ly / h_m).round() as usize).max(order);
            if nx.checked_mul(ny)? > max_nodes {
                return None;
            }
            return Some(Self {
                origin_u_m: 0.0,
                origin_v_m: 0.0,
                hx_m: lx / nx as f64,
                hy_m: ly / ny as f64,
                nx,
                ny,
                px: nx,
                py: ny,
                periodic: true,
            });
        }
        let (u0, v0, u1, v1) = region;
        let margin = (order / 2) as f64 + 1.0;
        let origin_u_m = ((u0 / h_m).floor() - margin) * h_m;
        let origin_v_m = ((v0 / h_m).floor() - margin) * h_m;
        let nx = ((u1 - origin_u_m) / h_m).ceil() as usize + order + 2;
        let ny = ((v1 - origin_v_m) / h_m).ceil() as usize + order + 2;
        let (px, py) = (fft_size(2 * nx), fft_size(2 * ny));
        if px.checked_mul(py)? > max_nodes || !(nx as f64).is_finite() {
            return None;
        }
        Some(Self {
            origin_u_m,
            origin_v_m,
            hx_m: h_m,
            hy_m: h_m,
            nx,
            ny,
            px,
            py,
            periodic: false,
        })
    }
    pub fn h_max(&self) -> f64 {
        self.hx_m.max(self.hy_m)
    }
    /// Lattice coordinates of (u, v).
    #[inline]
    pub fn coords(&self, u: f64, v: f64) -> (f64, f64) {
        (
            (u - self.origin_u_m) / self.hx_m,
            (v - self.origin_v_m) / self.hy_m,
        )
    }
    /// The node index along an axis of `n` nodes, wrapped on a torus.
    #[inline]
    fn wrap(&self, i: i64, n: usize) -> usize {
        if self.periodic {
            i.rem_euclid(n as i64) as usize
        } else {
            i as usize
        }
    }
    /// The offset (m) of FFT index (i, j) of the kernel arrays.
    #[inline]
    pub fn offset(&self, i: usize, j: usize) -> Option<(f64, f64)> {
        let f = |i: usize, n: usize, p: usize, h: f64| -> Option<f64> {
            if self.periodic {
                Some(min_image(i as f64, n as f64) * h)
            } else if i < n {
                Some(i as f64 * h)
            } else if i > p - n {
                Some((i as f64 - p as f64) * h)
            } else {
                None
            }
        };
        Some((
            f(i, self.nx, self.px, self.hx_m)?,
            f(j, self.ny, self.py, self.hy_m)?,
        ))
    }
}

/// The chosen split and what its bound promises.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct NearFarPlan {
    pub blend: Blend,
    /// Far-field lattice spacing (the largest of its two axes on a torus).
    pub spacing_m: f64,
    pub lattice: Lattice,
    /// A = (1 + Λ)(1 + Λ²) ω Hⁿ / n!.
    pub bound_factor: f64,
    /// shift = 2s + √2 H of the bound's envelope.
    pub shift_m: f64,
    /// The planner's estimate of the bound relative to the band maximum.
    pub estimate_rel: f64,
    /// Estimated near-field pairs and total cost (pair equivalents).
    pub near_pairs: f64,
    pub cost: f64,
}

impl NearFarPlan {
    /// The same split on another lattice (a refinement), with its bound constants.
    pub fn with_lattice(p: &NearFarPlan, lattice: Lattice) -> Self {
        let (a, shift) = bound_constants(p.blend.order, lattice.h_max());
        Self {
            spacing_m: lattice.h_max(),
            lattice,
            bound_factor: a,
            shift_m: shift,
            ..p.clone()
        }
    }
}

/// Relative costs of the pieces in near-field pair evaluations.
#[derive(Debug, Clone, Copy)]
pub struct CostModel {
    /// Per near-field pair (the blend's polynomial on top of the kernel), in cutoff pairs.
    pub near: f64,
    /// Per complex element per log₂ of an FFT.
    pub fft: f64,
    /// Per cell per stencil weight of the interpolation.
    pub interp: f64,
    pub max_nodes: usize,
    /// Planning itself (the kernel's jets and envelopes, the lattice search: about 0.05 to
    /// 0.1 s of host time per species). `auto` plans a near/far split only when the cutoff or
    /// the exact sum would cost more than this.
    pub plan: f64,
}

impl CostModel {
    /// Measured on 2 cores (paper's largest case, Weibull, lognormal and 2Dt): a blended near
    /// pair costs ~1.5 cutoff pairs (the blend's polynomial on top of the kernel, in the same
    /// vectorised loop), and the lattice's passes (complex FFTs with transposes, the kernel and
    /// bound tables) ~2.5 pairs per element and log₂.
    pub const CPU: CostModel = CostModel {
        near: 1.5,
        fft: 2.5,
        interp: 0.02,
        max_nodes: MAX_LATTICE_CPU,
        // ~0.1 s at the 2-core rate of ~5e8 exact pairs per second.
        plan: 5e7,
    };
    /// cuFFT in f64 (memory-bound, ~1.5 ps per element and log₂ on an H100) against ~1.2 ps
    /// per near-field pair.
    pub const GPU: CostModel = CostModel {
        near: 1.0,
        fft: 1.2,
        interp: 0.1,
        max_nodes: MAX_LATTICE_GPU,
        // ~0.1 s at ~1.2 ps per pair.
        plan: 1e11,
    };
}

/// (A, shift) of the bound for order n and lattice spacing h.
fn bound_constants(n: usize, h: f64) -> (f64, f64) {
    let (om, lam) = lagrange_constants(n);
    let fact: f64 = (1..=n).map(|i| i as f64).product();
    let a = (1.0 + lam) * (1.0 + lam * lam) * om * h.powi(n as i32) / fact;
    let s = std::f64::consts::SQRT_2 * (n / 2) as f64 * h;
    (a, 2.0 * s + std::f64::consts::SQRT_2 * h)
}

/// The torus kink's bound (absolute): the minimum-image kernel G(|Δ|) is only Lipschitz where
/// a component of Δ is half the period. Interpolation reproduces constants, so there its error
/// is ≤ (1 + Λ²) × the best constant's error ≤ (1 + Λ²) Lip √2 (n − 1) H / 2, Lip ≤ D̄₁ beyond
/// L/2 − shift; the target side's field has Lipschitz constant ≤ Λ² Σ w D̄₁: two sides, all trees.
pub fn kink_bound(n: usize, h: f64, shift: f64, l_min: f64, w_total: f64, env: &Envelope) -> f64 {
    let (_, lam) = lagrange_constants(n);
    let half = std::f64::consts::SQRT_2 * (n - 1) as f64 * h / 2.0;
    2.0 * (1.0 + lam * lam) * (1.0 + lam * lam) * w_total * env.d1(0.5 * l_min - shift) * half
}

/// The error message of a refusal.
pub fn refusal(bound_rel: f64, tolerance: f64, plan: &NearFarPlan) -> GeofieldError {
    GeofieldError::Unsupported(format!(
        "near/far: the certified far-field bound {bound_rel:.2e} of the band maximum exceeds the \
         tolerance {tolerance:.1e} at the finest lattice allowed (H = {:.3} m, R = {:.1} m); use \
         the cutoff or exact method",
        plan.spacing_m, plan.blend.outer_m
    ))
}

#[cfg(test)]
mod tests {
    use super::super::jet::Jet;
    use super::*;
    use envelope::far_jet;

    #[test]
    fn smoothstep_is_a_smooth_step() {
        for n in [2usize, 4, 6] {
            let b = Blend::new(1.0, 2.0, n);
            let s = |t: f64| b.step(t);
            assert!(
                s(0.0).abs() < 1e-15 && (s(1.0) - 1.0).abs() < 1e-12,
                "n = {n}"
            );
            assert!((s(0.5) - 0.5).abs() < 1e-12);
            for t in [0.1, 0.37, 0.8] {
                assert!((s(t) + s(1.0 - t) - 1.0).abs() < 1e-12, "symmetry");
                let q = 1.0 + 3.0 * t;
                assert!((b.near_factor(q) + b.far_factor(q) - 1.0).abs() < 1e-12);
            }
            // Flat to order n − 1 at both ends: S(ε) ~ C(2n−1, n) εⁿ.
            let e = 1e-3;
            assert!(s(e) < 2.0 * e.powi(n as i32) * binomial(2 * n - 1, n));
        }
    }

    #[test]
    fn jet_derivatives_of_g_match_finite_differences() {
        let b = Blend::new(20.0, 60.0, 4);
        for k in [
            Kernel::Lognormal { x0: 15.0, xb: 0.6 },
            Kernel::TwoDt { u: 600.0, p: 1.0 },
            Kernel::Weibull {
                d: 1e-4,
                theta: 2.5,
            },
        ] {
            for &(r, c) in &[(35.0, 0.3), (50.0, 1.0), (80.0, 0.0)] {
                let q = Jet::quadratic(r * r, 2.0 * r * c, 1.0, 5);
                let j = far_jet(&k, &b, &q);
                let f = |s: f64| far_kernel(&k, &b, r * r + 2.0 * r * c * s + s * s);
                let hh = 1e-3;
                let d1 = (f(hh) - f(-hh)) / (2.0 * hh);
                let d2 = (f(hh) - 2.0 * f(0.0) + f(-hh)) / (hh * hh);
                let scale = f(0.0).abs() + 1e-12;
                assert!((j.value() - f(0.0)).abs() <= 1e-12 * scale, "{k:?} value");
                assert!((j.derivative(1) - d1).abs() <= 1e-6 * scale, "{k:?} d1");
                assert!((j.derivative(2) - d2).abs() <= 1e-3 * scale, "{k:?} d2");
            }
        }
    }

    #[test]
    fn lagrange_constants_are_the_known_values() {
        // Cubic on the central interval: ω = 9/16 at t = 1.5, Λ = 1.25.
        let (om, lam) = lagrange_constants(4);
        assert!(
            (om - 0.5625).abs() < 1e-3 && (lam - 1.25).abs() < 2e-3,
            "{om} {lam}"
        );
        let w = lagrange_weights(6, 2.37);
        // Reproduces polynomials of degree ≤ 5.
        let p = |x: f64| 1.0 - 2.0 * x + 0.5 * x.powi(3) - 0.01 * x.powi(5);
        let got: f64 = (0..6).map(|k| w[k] * p(k as f64)).sum();
        assert!((got - p(2.37)).abs() < 1e-10);
    }
}
