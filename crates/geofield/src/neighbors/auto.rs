//! [`IndexKind::Auto`]'s choice: brute force for few points, else the uniform grid unless the
//! points are clustered (their [`clustering_of`] above [`AUTO_CLUSTERING_MAX`]), then the
//! dynamic grid.

use super::cpu::to_points;
use super::{Coord, IndexKind};
use crate::GeofieldError;

/// Up to this many points, [`IndexKind::Auto`] uses brute force.
pub const AUTO_BRUTE_MAX: usize = 256;
/// Leaf size [`IndexKind::Auto`] gives the dynamic grid.
pub const AUTO_LEAF: usize = 16;
/// Above this [`clustering_of`], [`IndexKind::Auto`] takes the dynamic grid instead of the uniform
/// one. The uniform grid's cells are sized for the mean density; points crowded 3× denser than
/// that make each query scan about 3× the points, which costs more than the dynamic grid's
/// tree descent (the uniform grid is ~2× faster on evenly spread points).
pub const AUTO_CLUSTERING_MAX: f64 = 3.0;
/// Mean points per cell of `clustering`'s coarse grid.
const CLUSTER_MEAN: f64 = 4.0;
/// Most cells of `clustering`'s coarse grid (16 MB of counts).
const CLUSTER_MAX_CELLS: f64 = (1u64 << 22) as f64;
/// Most points `clustering` counts (a regular subsample of larger sets).
const CLUSTER_SAMPLE: usize = 1 << 16;

/// The index [`IndexKind::Auto`] takes on the CPU for these points (`dim` = 2 or 3, flat as
/// for [`knn`]): brute force, the uniform grid or the dynamic grid (see the module docs).
pub fn auto_index<T: Coord>(points: &[T], dim: usize) -> Result<IndexKind, GeofieldError> {
    match dim {
        2 => Ok(resolve_auto(&to_points::<T, 2>(points, "point")?)),
        3 => Ok(resolve_auto(&to_points::<T, 3>(points, "point")?)),
        _ => Err(GeofieldError::Invalid(format!(
            "points must be 2-D or 3-D, not {dim}-D"
        ))),
    }
}

/// How clustered flat points are (`dim` = 2 or 3): points (every one up to 65,536, else a
/// regular subsample of that many) are counted into a coarse uniform grid over their bounding
/// box (about 4 points per cell; an axis of zero extent gets one cell), and the result is
/// Σc² / Σc (the mean count of the cell a point lies in) over m + 1, its expectation for Poisson
/// points of mean m per cell. ≈ 1 for evenly spread points, ≈ 1/f when the points fill a
/// fraction f of the box. Coordinates are halved before subtracting, so any finite input works
/// (a span near 1e308 does not overflow).
pub fn clustering_of<T: Coord>(points: &[T], dim: usize) -> Result<f64, GeofieldError> {
    match dim {
        2 => Ok(clustering(&to_points::<T, 2>(points, "point")?)),
        3 => Ok(clustering(&to_points::<T, 3>(points, "point")?)),
        _ => Err(GeofieldError::Invalid(format!(
            "points must be 2-D or 3-D, not {dim}-D"
        ))),
    }
}

pub(super) fn resolve_auto<T: Coord, const D: usize>(pts: &[[T; D]]) -> IndexKind {
    if pts.len() <= AUTO_BRUTE_MAX {
        IndexKind::Brute
    } else if clustering(pts) > AUTO_CLUSTERING_MAX {
        IndexKind::Dynamic {
            max_per_leaf: AUTO_LEAF,
        }
    } else {
        IndexKind::Uniform { cell_size: None }
    }
}

/// [`clustering_of`] of points as arrays.
fn clustering<T: Coord, const D: usize>(pts: &[[T; D]]) -> f64 {
    // A regular subsample of at most CLUSTER_SAMPLE points measures the same thing at a
    // fraction of the search's cost.
    let stride = pts.len().div_ceil(CLUSTER_SAMPLE).max(1);
    let sample: Vec<[T; D]> = pts.iter().step_by(stride).copied().collect();
    let pts = &sample[..];
    let n = pts.len();
    if n < 2 {
        return 1.0;
    }
    let mut lo = [f64::INFINITY; D];
    let mut hi = [f64::NEG_INFINITY; D];
    for p in pts {
        for d in 0..D {
            let v = p[d].to_f64() * 0.5;
            lo[d] = lo[d].min(v);
            hi[d] = hi[d].max(v);
        }
    }
    let target = (n as f64 / CLUSTER_MEAN).clamp(1.0, CLUSTER_MAX_CELLS);
    // Cell side h from the axes of non-zero extent: prod(span_d / h) = target (in logs).
    let spans: Vec<f64> = (0..D).map(|d| hi[d] - lo[d]).collect();
    let live: Vec<f64> = spans.iter().copied().filter(|s| *s > 0.0).collect();
    if live.is_empty() {
        return n as f64 / 2.0; // every point at one place: as clustered as it gets
    }
    let ln_h = (live.iter().map(|s| s.ln()).sum::<f64>() - target.ln()) / live.len() as f64;
    let mut cells = [1usize; D];
    for d in 0..D {
        if spans[d] > 0.0 {
            cells[d] = ((spans[d].ln() - ln_h).exp().round() as usize).clamp(1, target as usize);
        }
    }
    // Rounding (or a very flat box) can overshoot: halve the longest axis until within 2×.
    let total_of = |c: &[usize; D]| c.iter().fold(1usize, |a, &b| a.saturating_mul(b));
    while total_of(&cells) as f64 > 2.0 * target {
        if let Some(d) = (0..D).max_by_key(|&d| cells[d]) {
            cells[d] = (cells[d] / 2).max(1);
        }
    }
    let total = total_of(&cells);
    let mut counts = vec![0u32; total];
    for p in pts {
        let mut idx = 0usize;
        for d in 0..D {
            let c = if spans[d] > 0.0 {
                let t = (p[d].to_f64() * 0.5 - lo[d]) / spans[d];
                ((t * cells[d] as f64) as usize).min(cells[d] - 1)
            } else {
                0
            };
            idx = idx * cells[d] + c;
        }
        counts[idx] += 1;
    }
    let sum_sq: f64 = counts.iter().map(|&c| f64::from(c) * f64::from(c)).sum();
    let m = n as f64 / total as f64;
    (sum_sq / n as f64) / (m + 1.0)
}
