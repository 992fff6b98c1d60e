//! Shared helper of the kriging tests: an independent dense f64 solve.
#![allow(dead_code, clippy::unwrap_used)]

/// The solution of the m × m system held in `a`, an m × (m + 1) row-major augmented matrix
/// (the right-hand side in the last column), by Gauss–Jordan elimination with partial pivoting.
pub fn solve_augmented(mut a: Vec<f64>, m: usize) -> Vec<f64> {
    let w = m + 1;
    for col in 0..m {
        let piv = (col..m)
            .max_by(|&i, &j| a[i * w + col].abs().total_cmp(&a[j * w + col].abs()))
            .unwrap();
        for k in 0..w {
            a.swap(col * w + k, piv * w + k);
        }
        for r in 0..m {
            if r != col {
                let t = a[r * w + col] / a[col * w + col];
                for k in 0..w {
                    a[r * w + k] -= t * a[col * w + k];
                }
            }
        }
    }
    (0..m).map(|i| a[i * w + m] / a[i * w + i]).collect()
}
