//! The cell list of the radius queries: points counting-sorted into cells about r/2 wide, on
//! open axes over the points' bounding box and on periodic axes over the whole box [0, L).

use rayon::prelude::*;

use super::Space;
use crate::GeofieldError;

/// Most cells a list holds: `max(2N, 64)`, and never more than 2^26.
fn cell_cap(n: usize) -> f64 {
    ((2 * n).max(64) as f64).min((1u64 << 26) as f64)
}

/// Points binned into cells (see the module docs). The cells of one query are those its box
/// [q − r, q + r] overlaps, widened on each side by the rounding of the bounds (see
/// [`CellList::axis_range`]), wrapped on periodic axes.
pub(crate) struct CellList<const D: usize> {
    /// The periodic box per axis (0 on open axes).
    pub(crate) period: [f64; D],
    pub(crate) origin: [f64; D],
    pub(crate) width: [f64; D],
    pub(crate) dims: [usize; D],
    /// Cell c's points are `pts[starts[c]..starts[c + 1]]` (cells row-major, axis 0 fastest).
    pub(crate) starts: Vec<u32>,
    pub(crate) pts: Vec<[f64; D]>,
    pub(crate) ids: Vec<u32>,
}

/// One axis's cells to visit: `count` cells from `first` (wrapped modulo the axis's cells on a
/// periodic axis).
#[derive(Clone, Copy)]
pub(crate) struct AxisRange {
    pub(crate) first: i64,
    pub(crate) count: usize,
}

impl<const D: usize> CellList<D> {
    /// Bin `pts` (already inside [0, L) on periodic axes) for queries of radius up to `r`.
    pub(crate) fn build(pts: &[[f64; D]], period: [f64; D], r: f64) -> Result<Self, GeofieldError> {
        let n = pts.len();
        if u32::try_from(n).is_err() {
            return Err(GeofieldError::Unsupported(format!(
                "{n} points; at most {} are supported",
                u32::MAX
            )));
        }
        let mut lo = [0.0f64; D];
        let mut hi = [0.0f64; D];
        for a in 0..D {
            if period[a] > 0.0 {
                hi[a] = period[a];
            } else if n > 0 {
                let (l, h) = pts.par_iter().map(|p| (p[a], p[a])).reduce(
                    || (f64::INFINITY, f64::NEG_INFINITY),
                    |x, y| (x.0.min(y.0), x.1.max(y.1)),
                );
                lo[a] = l;
                hi[a] = h;
            }
        }
        // Extents halved so that -1e308 .. 1e308 stays finite; widths are doubled back below.
        let ext: [f64; D] = std::array::from_fn(|a| hi[a] * 0.5 - lo[a] * 0.5);
        let widest = ext.iter().fold(0.0f64, |m, &e| m.max(e));
        let mut h = if r > 0.0 && r.is_finite() {
            r * 0.25 // half of r/2, in the halved units
        } else if widest > 0.0 {
            widest
        } else {
            1.0
        };
        let cap = cell_cap(n);
        let dims = loop {
            let mut total = 1.0f64;
            let dims: [usize; D] = std::array::from_fn(|a| {
                let c = if period[a] > 0.0 {
                    (ext[a] / h).floor().max(1.0)
                } else {
                    (ext[a] / h).floor() + 1.0
                };
                let c = if c.is_finite() { c.min(1e12) } else { 1e12 };
                total *= c;
                c as usize
            });
            if total <= cap || !h.is_finite() {
                break dims;
            }
            h *= 2.0;
        };
        let width: [f64; D] = std::array::from_fn(|a| {
            if period[a] > 0.0 {
                period[a] / dims[a] as f64
            } else {
                2.0 * h
            }
        });
        let mut list = CellList {
            period,
            origin: lo,
            width,
            dims,
            starts: Vec::new(),
            pts: Vec::new(),
            ids: Vec::new(),
        };
        let cells: Vec<u32> = pts.par_iter().map(|p| list.cell_of(p) as u32).collect();
        let ncells: usize = dims.iter().product();
        let mut starts = vec![0u32; ncells + 1];
        for &c in &cells {
            starts[c as usize + 1] += 1;
        }
        for c in 0..ncells {
            starts[c + 1] += starts[c];
        }
        let mut at = starts.clone();
        let mut sorted = vec![[0.0f64; D]; n];
        let mut ids = vec![0u32; n];
        for (i, &c) in cells.iter().enumerate() {
            let k = at[c as usize] as usize;
            at[c as usize] += 1;
            sorted[k] = pts[i];
            ids[k] = i as u32;
        }
        list.starts = starts;
        list.pts = sorted;
        list.ids = ids;
        Ok(list)
    }

    /// The cell of x on axis a, not clamped (saturating at the i64 range).
    #[inline]
    fn axis_cell(&self, a: usize, x: f64) -> i64 {
        ((x - self.origin[a]) / self.width[a]).floor() as i64
    }

    /// The row-major cell index of a stored point (clamped into the grid).
    fn cell_of(&self, p: &[f64; D]) -> usize {
        let mut id = 0usize;
        for a in (0..D).rev() {
            let c = self.axis_cell(a, p[a]).clamp(0, self.dims[a] as i64 - 1) as usize;
            id = id * self.dims[a] + c;
        }
        id
    }

    /// The cells along axis a that a query at q with radius r must visit. The bounds q ∓ r are
    /// widened by `slack`, more than the rounding of the distance test can move a point that
    /// passes it beyond [q − r, q + r] (a few ulps of |q| + r), so every point that passes lies
    /// in a visited cell: binning is monotone in the coordinate.
    #[inline]
    pub(crate) fn axis_range(&self, a: usize, q: f64, r: f64) -> AxisRange {
        let slack = 8.0 * f64::EPSILON * (q.abs() + r + self.origin[a].abs()) + f64::MIN_POSITIVE;
        let lo = self.axis_cell(a, q - r - slack);
        let hi = self.axis_cell(a, q + r + slack);
        let n = self.dims[a] as i64;
        if self.period[a] > 0.0 {
            if hi.saturating_sub(lo).saturating_add(1) >= n {
                AxisRange {
                    first: 0,
                    count: n as usize,
                }
            } else {
                AxisRange {
                    first: lo,
                    count: (hi - lo + 1) as usize,
                }
            }
        } else {
            let (l, h) = (lo.clamp(0, n - 1), hi.clamp(0, n - 1));
            AxisRange {
                first: l,
                count: (h - l + 1) as usize,
            }
        }
    }

    /// Call `f` with the stored points and ids of every cell a query at `q` with radius `r`
    /// must visit, in a fixed order (axis 0 fastest, each axis from its first cell on). The
    /// cells of one row along axis 0 are contiguous in storage: each row's run comes as one
    /// slice (two where it wraps around a periodic axis), in the same order.
    #[inline]
    pub(crate) fn visit(&self, q: &[f64; D], r: f64, mut f: impl FnMut(&[[f64; D]], &[u32])) {
        if self.pts.is_empty() {
            return;
        }
        let ranges: [AxisRange; D] = std::array::from_fn(|a| self.axis_range(a, q[a], r));
        let n0 = self.dims[0] as i64;
        // Axis 0's run as one or two spans of cells [a, b).
        let first0 = ranges[0].first.rem_euclid(n0);
        let end0 = first0 + ranges[0].count as i64;
        let spans: [(usize, usize); 2] = if end0 <= n0 {
            [(first0 as usize, end0 as usize), (0, 0)]
        } else {
            [(first0 as usize, n0 as usize), (0, (end0 - n0) as usize)]
        };
        let mut step = [0usize; D];
        loop {
            let mut row = 0usize;
            for a in (1..D).rev() {
                let n = self.dims[a] as i64;
                let c = (ranges[a].first + step[a] as i64).rem_euclid(n) as usize;
                row = row * self.dims[a] + c;
            }
            row *= self.dims[0];
            for &(a, b) in &spans {
                if a < b {
                    let (s, e) = (self.starts[row + a] as usize, self.starts[row + b] as usize);
                    if s < e {
                        f(&self.pts[s..e], &self.ids[s..e]);
                    }
                }
            }
            let mut a = 1;
            loop {
                if a == D {
                    return;
                }
                step[a] += 1;
                if step[a] < ranges[a].count {
                    break;
                }
                step[a] = 0;
                a += 1;
            }
        }
    }
}

/// The space's periodic box as an array (0 on open axes).
pub(crate) fn period_of<const D: usize>(space: &Space) -> [f64; D] {
    std::array::from_fn(|a| space.boxsize.as_ref().map_or(0.0, |b| b[a]))
}
