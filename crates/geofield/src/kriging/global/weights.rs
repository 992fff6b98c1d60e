//! Explicit kriging weights from the factor (note §4.2), for the benchmark and for callers that
//! need the weights themselves: the same function as dual kriging at O(n²) per node.

use faer::{Mat, Par};
use rayon::prelude::*;

use super::{GlobalKriging, TILE, lower_mul};
use crate::kriging::params::Kind;

impl GlobalKriging {
    /// Predictions by explicit weights from the factor (note §4.2, "factor once, solve per
    /// node"), `pred[h][j]`: per node w = L⁻¹k, λ = L⁻ᵀ(w + G R⁻ᵀR⁻¹(f − Gᵀw)), z* = λᵀz
    /// (simple: m + λᵀ(z − m)). Two triangular solves per node, O(n²) instead of the dual's
    /// O(n); the same function, kept for the benchmark and for callers that need the weights.
    pub fn eval_weights(&self, nx: &[f64], ny: &[f64]) -> Vec<Vec<f64>> {
        let n = self.samples();
        let hc = self.surfaces;
        let p = self.p_var;
        let tiles: Vec<Vec<f64>> = nx
            .par_chunks(TILE)
            .zip(ny.par_chunks(TILE))
            .map(|(tx, ty)| {
                let m = tx.len();
                let mut d = vec![0.0; m];
                let mut c = vec![0.0; m];
                let mut k = Mat::<f64>::zeros(n, m);
                for i in 0..n {
                    self.cov.row(self.xs[i], self.ys[i], tx, ty, &mut d, &mut c);
                    for j in 0..m {
                        k[(i, j)] = c[j];
                    }
                }
                faer::linalg::triangular_solve::solve_lower_triangular_in_place(
                    self.l.as_ref(),
                    k.as_mut(),
                    Par::Seq,
                );
                if p > 0 {
                    let mut f = [0.0; 6];
                    for j in 0..m {
                        self.frame.drift(tx[j], ty[j], p, &mut f);
                        let r: Vec<f64> = (0..p)
                            .map(|c| {
                                f[c] - (0..n).map(|i| self.g[i * p + c] * k[(i, j)]).sum::<f64>()
                            })
                            .collect();
                        let s = lower_mul(&self.rinv, p, &r);
                        let t: Vec<f64> = (0..p)
                            .map(|c| (c..p).map(|q| self.rinv[q * p + c] * s[q]).sum())
                            .collect();
                        for i in 0..n {
                            let gt: f64 = (0..p).map(|c| self.g[i * p + c] * t[c]).sum();
                            k[(i, j)] += gt;
                        }
                    }
                }
                faer::linalg::triangular_solve::solve_upper_triangular_in_place(
                    self.l.as_ref().transpose(),
                    k.as_mut(),
                    Par::Seq,
                );
                let offset = match self.kind {
                    Kind::Simple { mean } => mean,
                    _ => 0.0,
                };
                let mut out = vec![0.0; hc * m];
                for j in 0..m {
                    for h in 0..hc {
                        let s: f64 = (0..n)
                            .map(|i| k[(i, j)] * (self.z[i * hc + h] - offset))
                            .sum();
                        out[h * m + j] = offset + s;
                    }
                }
                out
            })
            .collect();
        let mut pred = vec![Vec::with_capacity(nx.len()); hc];
        for t in tiles {
            let m = t.len() / hc.max(1);
            for (h, ph) in pred.iter_mut().enumerate() {
                ph.extend_from_slice(&t[h * m..(h + 1) * m]);
            }
        }
        pred
    }
}
