//! A kriging system factored once for dual kriging, shared by 3-D kriging and cokriging: the
//! covariance matrix C = LLᵀ (faer's Cholesky, f64), the drift matrix F with G = L⁻¹F and
//! GᵀG = RRᵀ, the generalised-least-squares drift coefficients β = (GᵀG)⁻¹Gᵀy (y = L⁻¹z) and
//! the dual weights α = L⁻ᵀ(y − Gβ) = C⁻¹(z − Fβ).
//!
//! At a node with covariances c to the samples and drift terms f: the prediction cᵀα + fᵀβ,
//! the variance σ² = C(0) − |w|² + |R⁻¹(f − Gᵀw)|² with w = L⁻¹c (nodes taken in tiles, one
//! triangular solve per tile); the formulas of the 2-D global path ([`super::global`]).

use faer::{Mat, Par, Side};

use super::global::linalg_par;
use super::global::small::{invert_lower, lower_mul, small_cholesky};

/// Why a system could not be built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fail {
    /// C is not positive definite.
    Singular,
    /// FᵀC⁻¹F is singular: the drift cannot be estimated from these samples.
    Drift,
}

pub(crate) struct DualSystem {
    n: usize,
    p: usize,
    l: Mat<f64>,
    /// G = L⁻¹F, row-major n × p.
    g: Vec<f64>,
    rinv: Vec<f64>,
    pub(crate) alpha: Vec<f64>,
    pub(crate) beta: Vec<f64>,
}

impl DualSystem {
    /// The system of the covariance matrix `c` (n × n, SPD), drift `f(i, col)` (p columns) and
    /// values `z`.
    pub(crate) fn new(
        c: Mat<f64>,
        f: impl Fn(usize, usize) -> f64,
        p: usize,
        z: &[f64],
    ) -> Result<DualSystem, Fail> {
        let n = z.len();
        let par = linalg_par();
        let l = c
            .llt(Side::Lower)
            .map_err(|_| Fail::Singular)?
            .L()
            .to_owned();
        let mut gm = Mat::<f64>::from_fn(n, p, f);
        faer::linalg::triangular_solve::solve_lower_triangular_in_place(
            l.as_ref(),
            gm.as_mut(),
            par,
        );
        let mut gtg = vec![0.0; p * p];
        for a in 0..p {
            for b in 0..=a {
                gtg[a * p + b] = (0..n).map(|i| gm[(i, a)] * gm[(i, b)]).sum();
            }
        }
        let r = small_cholesky(&gtg, p).ok_or(Fail::Drift)?;
        let rinv = invert_lower(&r, p);
        let mut y = Mat::<f64>::from_fn(n, 1, |i, _| z[i]);
        faer::linalg::triangular_solve::solve_lower_triangular_in_place(
            l.as_ref(),
            y.as_mut(),
            par,
        );
        let t: Vec<f64> = (0..p)
            .map(|c| (0..n).map(|i| gm[(i, c)] * y[(i, 0)]).sum())
            .collect();
        let sv = lower_mul(&rinv, p, &t);
        let beta: Vec<f64> = (0..p)
            .map(|c| (c..p).map(|k| rinv[k * p + c] * sv[k]).sum())
            .collect();
        for i in 0..n {
            y[(i, 0)] -= (0..p).map(|c| gm[(i, c)] * beta[c]).sum::<f64>();
        }
        faer::linalg::triangular_solve::solve_upper_triangular_in_place(
            l.as_ref().transpose(),
            y.as_mut(),
            par,
        );
        let alpha: Vec<f64> = (0..n).map(|i| y[(i, 0)]).collect();
        let g: Vec<f64> = (0..n)
            .flat_map(|i| (0..p).map(move |c| (i, c)))
            .map(|(i, c)| gm[(i, c)])
            .collect();
        Ok(DualSystem {
            n,
            p,
            l,
            g,
            rinv,
            alpha,
            beta,
        })
    }

    /// The factors the GPU variance takes: L⁻¹ (row-major n × n, lower), G (row-major n × p),
    /// R⁻¹ (p × p) and p.
    pub(crate) fn device_factors(&self) -> (Vec<f64>, &[f64], &[f64], usize) {
        (
            super::global::lower_inverse(self.l.as_ref()),
            &self.g,
            &self.rinv,
            self.p,
        )
    }

    /// The prediction cᵀα + fᵀβ at a node (c: n covariances, f: p drift terms).
    #[inline]
    pub(crate) fn predict(&self, c: &[f64], f: &[f64]) -> f64 {
        let kz: f64 = c.iter().zip(&self.alpha).map(|(a, b)| a * b).sum();
        kz + f.iter().zip(&self.beta).map(|(a, b)| a * b).sum::<f64>()
    }

    /// The variances of a tile of nodes: `c` holds their covariance columns (n × m; overwritten
    /// with L⁻¹c), `f(j)` node j's drift terms, `c00` the covariance of a node with itself.
    pub(crate) fn variances(
        &self,
        c: &mut Mat<f64>,
        f: impl Fn(usize) -> Vec<f64>,
        c00: f64,
        out: &mut [f64],
    ) {
        let (n, p) = (self.n, self.p);
        faer::linalg::triangular_solve::solve_lower_triangular_in_place(
            self.l.as_ref(),
            c.as_mut(),
            Par::Seq,
        );
        for (j, o) in out.iter_mut().enumerate() {
            let ww: f64 = (0..n).map(|i| c[(i, j)] * c[(i, j)]).sum();
            let mut extra = 0.0;
            if p > 0 {
                let fj = f(j);
                let rr: Vec<f64> = (0..p)
                    .map(|a| fj[a] - (0..n).map(|i| self.g[i * p + a] * c[(i, j)]).sum::<f64>())
                    .collect();
                extra = lower_mul(&self.rinv, p, &rr).iter().map(|v| v * v).sum();
            }
            *o = (c00 - ww + extra).max(0.0);
        }
    }
}
