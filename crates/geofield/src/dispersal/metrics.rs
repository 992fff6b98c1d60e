//! Error metrics of a fast method against the exact sum (note P7).

/// Errors of `approx` against `exact` over one band.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
pub struct ErrorMetrics {
    /// Cells with exact ≥ 1e-6 · max(exact), over which the relative errors are taken.
    pub cells_compared: usize,
    pub max_rel: f64,
    pub mean_rel: f64,
    pub p99_rel: f64,
    /// max |approx − exact| / max(exact), over all cells.
    pub max_abs_over_max: f64,
    /// (Σ approx − Σ exact) / Σ exact.
    pub mass_rel: f64,
}

/// Compare two bands of equal length.
pub fn compare(approx: &[f64], exact: &[f64]) -> ErrorMetrics {
    let max = exact.iter().cloned().fold(0.0f64, f64::max);
    if max <= 0.0 {
        let worst = approx.iter().map(|a| a.abs()).fold(0.0f64, f64::max);
        return ErrorMetrics {
            max_abs_over_max: if worst > 0.0 { f64::INFINITY } else { 0.0 },
            ..Default::default()
        };
    }
    let floor = 1e-6 * max;
    let mut rels = Vec::new();
    let (mut max_abs, mut sa, mut se) = (0.0f64, 0.0f64, 0.0f64);
    for (&a, &e) in approx.iter().zip(exact) {
        max_abs = max_abs.max((a - e).abs());
        sa += a;
        se += e;
        if e >= floor {
            rels.push((a - e).abs() / e);
        }
    }
    let n = rels.len();
    let mean = rels.iter().sum::<f64>() / n.max(1) as f64;
    rels.sort_by(f64::total_cmp);
    let p99 = if n == 0 {
        0.0
    } else {
        rels[((n as f64 * 0.99).ceil() as usize).clamp(1, n) - 1]
    };
    ErrorMetrics {
        cells_compared: n,
        max_rel: rels.last().copied().unwrap_or(0.0),
        mean_rel: mean,
        p99_rel: p99,
        max_abs_over_max: max_abs / max,
        mass_rel: (sa - se) / se,
    }
}
