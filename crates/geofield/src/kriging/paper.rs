//! The paper's per-node algorithm (Li & Dong, experiments 1, 2 and 4), kept for the benchmark
//! only: at every node the (n + 1) × (n + 1) bordered ordinary-kriging system
//! [[C, 1], [1ᵀ, 0]] [λ; ν] = [k; 1] is solved by Gaussian elimination without pivoting (safe in
//! the natural order: C is SPD and the last pivot −1ᵀC⁻¹1 < 0), then z* = λᵀz per surface.
//!
//! - [`PaperMode::Exp1`]: A and the right-hand side built per node and per surface (the paper's
//!   baseline: one kernel launch per surface).
//! - [`PaperMode::Exp2`]: A built once, copied per node, still one solve per node and surface.
//! - [`PaperMode::Exp4`]: one solve per node, the weights reused for the H surfaces.
//!
//! Cost per node: (2/3)(n+1)³ flops per solve (Exp1, Exp2: H solves; Exp4: one).

use rayon::prelude::*;

use super::space::Covariance;

/// Which of the paper's experiments.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PaperMode {
    Exp1,
    Exp2,
    Exp4,
}

/// Ordinary kriging of `z[h][i]` at the nodes (`nx`, `ny`) by per-node elimination; all
/// coordinates already in kriging space (centred). Returns `pred[h][j]`.
pub fn paper_nodes(
    cov: &Covariance,
    xs: &[f64],
    ys: &[f64],
    z: &[Vec<f64>],
    nx: &[f64],
    ny: &[f64],
    mode: PaperMode,
) -> Vec<Vec<f64>> {
    let n = xs.len();
    let s = n + 1;
    let d = |ax: f64, ay: f64, bx: f64, by: f64| ((ax - bx).powi(2) + (ay - by).powi(2)).sqrt();
    let build_a = || {
        let mut a = vec![0.0; s * s];
        for i in 0..n {
            for j in 0..n {
                a[i * s + j] = if i == j {
                    cov.c0
                } else {
                    cov.between_samples(d(xs[i], ys[i], xs[j], ys[j]))
                };
            }
            a[i * s + n] = 1.0;
            a[n * s + i] = 1.0;
        }
        a
    };
    let a_once = build_a();
    let hc = z.len();
    let rows: Vec<Vec<f64>> = (0..nx.len())
        .into_par_iter()
        .map_init(
            || (vec![0.0; s * s], vec![0.0; s]),
            |(a, b), j| {
                let rhs = |b: &mut [f64]| {
                    for i in 0..n {
                        b[i] = cov.at(d(xs[i], ys[i], nx[j], ny[j]));
                    }
                    b[n] = 1.0;
                };
                let mut out = vec![0.0; hc];
                match mode {
                    PaperMode::Exp4 => {
                        a.copy_from_slice(&a_once);
                        rhs(b);
                        eliminate(a, b, s);
                        for (h, o) in out.iter_mut().enumerate() {
                            *o = (0..n).map(|i| b[i] * z[h][i]).sum();
                        }
                    }
                    PaperMode::Exp1 | PaperMode::Exp2 => {
                        for (h, o) in out.iter_mut().enumerate() {
                            if mode == PaperMode::Exp1 {
                                a.copy_from_slice(&build_a());
                            } else {
                                a.copy_from_slice(&a_once);
                            }
                            rhs(b);
                            eliminate(a, b, s);
                            *o = (0..n).map(|i| b[i] * z[h][i]).sum();
                        }
                    }
                }
                out
            },
        )
        .collect();
    (0..hc)
        .map(|h| rows.iter().map(|r| r[h]).collect())
        .collect()
}

/// Gaussian elimination without pivoting, then back substitution; the solution replaces `b`.
fn eliminate(a: &mut [f64], b: &mut [f64], s: usize) {
    for k in 0..s {
        let p = a[k * s + k];
        for i in k + 1..s {
            let f = a[i * s + k] / p;
            if f != 0.0 {
                for j in k..s {
                    a[i * s + j] -= f * a[k * s + j];
                }
                b[i] -= f * b[k];
            }
        }
    }
    for k in (0..s).rev() {
        let t: f64 = (k + 1..s).map(|j| a[k * s + j] * b[j]).sum();
        b[k] = (b[k] - t) / a[k * s + k];
    }
}
