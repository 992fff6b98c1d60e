//! The cutoff radius from a tolerance, with an a-priori bound.
//!
//! K decreases beyond its mode, so at every cell the neglected part of the sum obeys
//!
//! ```text
//! E(c) = Σ_{d > R} w_k K(d_kc) ≤ K(R) · W,      W = Σ_k w_k.
//! ```
//!
//! Every term of R(c) is non-negative, so any single term w_k K(d_kc) at an actual cell centre c
//! is a lower bound L on the band maximum. Choosing R with K(R) · W ≤ tol · L therefore guarantees
//! E(c) ≤ tol · max_c R(c) at every cell (note §4.1). L is the largest such single term over all
//! trees, evaluated at the cell nearest the tree and, for the lognormal, at cells near its mode.

use geofield_core::GridSpec;
use rayon::prelude::*;

use super::params::Kernel;
use super::sources::Sources;

/// The guaranteed radius and the quantities behind it.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct CutoffBound {
    /// Radius R in metres (∞ when no finite radius meets the tolerance, e.g. W = 0 is 0 instead).
    pub radius_m: f64,
    /// W = Σ w.
    pub total_weight: f64,
    /// Rigorous lower bound on the band maximum.
    pub max_lower_bound: f64,
    /// K(R)·W / L: the guaranteed bound on max error / band maximum.
    pub bound_rel: f64,
}

/// A rigorous lower bound on max_c Σ_k w_k K(d_kc): the largest single-tree term at a real cell.
pub fn max_lower_bound(grid: &GridSpec, kernel: &Kernel, sources: &Sources) -> f64 {
    let h = grid.cell_size_m;
    let mode = kernel.mode_m();
    let clamp_centre = |x: f64, n: usize| ((x / h).floor().clamp(0.0, n as f64 - 1.0) + 0.5) * h;
    let offsets: &[(f64, f64)] = if mode > 0.0 {
        &[(0.0, 0.0), (1.0, 0.0), (-1.0, 0.0), (0.0, 1.0), (0.0, -1.0)]
    } else {
        &[(0.0, 0.0)]
    };
    // The maximum is the same in any order: in parallel over the trees.
    (0..sources.len())
        .into_par_iter()
        .map(|k| {
            let (u, v, w) = (sources.u[k], sources.v[k], sources.w[k]);
            let mut best = 0.0f64;
            for &(ox, oy) in offsets {
                let cu = clamp_centre(u + ox * mode, grid.cols);
                let cv = clamp_centre(v + oy * mode, grid.rows);
                let d2 = (u - cu) * (u - cu) + (v - cv) * (v - cv);
                best = best.max(w * kernel.eval_r2(d2));
            }
            best
        })
        .reduce(|| 0.0, f64::max)
}

/// The smallest radius whose a-priori bound meets `tolerance` (relative to the band maximum).
pub fn cutoff_radius(
    grid: &GridSpec,
    kernel: &Kernel,
    sources: &Sources,
    tolerance: f64,
) -> CutoffBound {
    let lower = max_lower_bound(grid, kernel, sources);
    bound_from(kernel, sources.total_weight(), lower, tolerance)
}

/// [`cutoff_radius`] from W = Σw and the lower bound L (of trees held by several processes:
/// W and L combined over them).
pub fn bound_from(kernel: &Kernel, total_weight: f64, lower: f64, tolerance: f64) -> CutoffBound {
    if total_weight <= 0.0 || lower <= 0.0 {
        return CutoffBound {
            radius_m: 0.0,
            total_weight,
            max_lower_bound: lower,
            bound_rel: 0.0,
        };
    }
    let target = tolerance * lower / total_weight;
    let radius_m = kernel.radius_where(target);
    let bound_rel = kernel.eval(radius_m) * total_weight / lower;
    CutoffBound {
        radius_m,
        total_weight,
        max_lower_bound: lower,
        bound_rel,
    }
}
