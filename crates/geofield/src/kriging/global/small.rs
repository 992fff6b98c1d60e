//! Small dense helpers of the kriging systems: the p × p drift matrices.

/// Cholesky of a small SPD matrix (row-major lower part used); `None` when a pivot falls under
/// 1e-10 of its diagonal entry (rank deficient to rounding).
pub(crate) fn small_cholesky(a: &[f64], p: usize) -> Option<Vec<f64>> {
    let mut r = vec![0.0; p * p];
    for i in 0..p {
        for j in 0..=i {
            let s: f64 = (0..j).map(|k| r[i * p + k] * r[j * p + k]).sum();
            if i == j {
                let d = a[i * p + i] - s;
                if d.is_nan() || d <= 1e-10 * a[i * p + i].abs() || !d.is_finite() {
                    return None;
                }
                r[i * p + i] = d.sqrt();
            } else {
                r[i * p + j] = (a[i * p + j] - s) / r[j * p + j];
            }
        }
    }
    Some(r)
}

/// Inverse of a lower-triangular p × p matrix (row-major).
pub(crate) fn invert_lower(r: &[f64], p: usize) -> Vec<f64> {
    let mut inv = vec![0.0; p * p];
    for c in 0..p {
        for i in c..p {
            let e = if i == c { 1.0 } else { 0.0 };
            let s: f64 = (c..i).map(|k| r[i * p + k] * inv[k * p + c]).sum();
            inv[i * p + c] = (e - s) / r[i * p + i];
        }
    }
    inv
}

/// Lower-triangular p × p (row-major) times a vector.
pub(crate) fn lower_mul(a: &[f64], p: usize, x: &[f64]) -> Vec<f64> {
    (0..p)
        .map(|i| (0..=i).map(|k| a[i * p + k] * x[k]).sum())
        .collect()
}
