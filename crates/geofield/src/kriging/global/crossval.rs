//! Closed-form leave-one-out cross-validation of global kriging (Dubrule 1983).

use faer::Mat;
use rayon::prelude::*;

use super::{GlobalKriging, lower_mul};

/// Leave-one-out cross-validation of a [`GlobalKriging`] (per merged sample).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct CrossValidation {
    /// `error[h][i]` = zᵢ − z*₋ᵢ: the datum minus the prediction from all other samples.
    pub error: Vec<Vec<f64>>,
    /// The kriging variance of each left-out prediction.
    pub variance: Vec<f64>,
    /// Per surface: root mean square error, mean error, mean and mean square of the
    /// standardised errors e / σ (≈ 0 and ≈ 1 for a well-fitted model).
    pub rmse: Vec<f64>,
    pub mean_error: Vec<f64>,
    pub mean_standardised: Vec<f64>,
    pub mean_square_standardised: Vec<f64>,
}

impl GlobalKriging {
    /// Leave-one-out cross-validation in closed form (Dubrule 1983): with Q the sample block of
    /// the inverse of the kriging matrix, Q = C⁻¹ − U (FᵀC⁻¹F)⁻¹ Uᵀ with U = C⁻¹F (Q = C⁻¹ for
    /// simple kriging), eᵢ = αᵢ / Qᵢᵢ and σ²₋ᵢ = 1 / Qᵢᵢ, for every surface at once; O(n³) once
    /// instead of n refits. The model is held fixed. Merged samples count as one.
    pub fn cross_validate(&self) -> CrossValidation {
        let n = self.samples();
        let hc = self.surfaces;
        let p = self.p_var;
        let l = self.l.as_ref();
        // (C⁻¹)ⱼⱼ = |L⁻¹ eⱼ|²: column j of L⁻¹ by a forward solve that starts at row j.
        let diag: Vec<f64> = (0..n)
            .into_par_iter()
            .map(|j| {
                // Column-oriented forward substitution from row j.
                let mut x = vec![0.0; n];
                x[j] = 1.0;
                for c in j..n {
                    let v = x[c] / l[(c, c)];
                    x[c] = v;
                    if v != 0.0 {
                        let col = l.col(c);
                        for r in c + 1..n {
                            x[r] -= col[r] * v;
                        }
                    }
                }
                x[j..].iter().map(|v| v * v).sum()
            })
            .collect();
        // U = C⁻¹F = L⁻ᵀG (n × p).
        let mut umat = Mat::<f64>::from_fn(n, p, |i, c| self.g[i * p + c]);
        faer::linalg::triangular_solve::solve_upper_triangular_in_place(
            l.transpose(),
            umat.as_mut(),
            super::linalg_par(),
        );
        let q: Vec<f64> = (0..n)
            .map(|i| {
                if p == 0 {
                    return diag[i];
                }
                let ui: Vec<f64> = (0..p).map(|c| umat[(i, c)]).collect();
                let t = lower_mul(&self.rinv, p, &ui);
                diag[i] - t.iter().map(|v| v * v).sum::<f64>()
            })
            .collect();
        let variance: Vec<f64> = q.iter().map(|&v| 1.0 / v).collect();
        let error: Vec<Vec<f64>> = (0..hc)
            .map(|h| (0..n).map(|i| self.alpha[i * hc + h] / q[i]).collect())
            .collect();
        summarise(error, variance)
    }
}

/// RMSE, mean error and standardised-error moments of leave-one-out errors.
pub(crate) fn summarise(error: Vec<Vec<f64>>, variance: Vec<f64>) -> CrossValidation {
    let nf = variance.len() as f64;
    let rmse = error
        .iter()
        .map(|e| (e.iter().map(|v| v * v).sum::<f64>() / nf).sqrt())
        .collect();
    let mean_error = error.iter().map(|e| e.iter().sum::<f64>() / nf).collect();
    let std =
        |e: &Vec<f64>| -> Vec<f64> { e.iter().zip(&variance).map(|(v, s)| v / s.sqrt()).collect() };
    let mean_standardised = error
        .iter()
        .map(|e| std(e).iter().sum::<f64>() / nf)
        .collect();
    let mean_square_standardised = error
        .iter()
        .map(|e| std(e).iter().map(|v| v * v).sum::<f64>() / nf)
        .collect();
    CrossValidation {
        error,
        variance,
        rmse,
        mean_error,
        mean_standardised,
        mean_square_standardised,
    }
}
