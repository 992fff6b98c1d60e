//! Uniform grid: points counting-sorted into equal cubic cells, searched shell by shell.
//!
//! # Build, O(N + cells)
//!
//! Cell size h defaults to `(V·m/N)^(1/d')` where V is the product of the d' positive extents
//! of the points' bounding box and m = [`TARGET_PER_CELL`] points per cell on average; it is
//! doubled while the grid has more than `max(4N, 64)` cells (a flat or thin point cloud). A
//! user-given h is kept, and refused when the grid would pass [`MAX_CELLS`]. Each point's cell is
//! `floor((x − x_min)/h)` per axis in f64, clamped into the grid. A counting sort (histogram,
//! exclusive scan, stable scatter) stores the points cell by cell in index order, with the cell
//! start offsets (CSR layout, as the paper's index and data blocks).
//!
//! Besides the cells, each axis keeps for every slab (all cells with one coordinate on that
//! axis) the exact minimum and maximum coordinate, in `T`, of the points binned there, and their
//! prefix maximum / suffix minimum. These make the pruning exact whatever the f64 binning did
//! at cell faces: a cell's points lie in the product of its slabs' ranges, and every point
//! outside the visited block of cells lies beyond a prefix maximum or a suffix minimum on some
//! axis.
//!
//! # Query
//!
//! From the query's (clamped) cell c0, visit shells s = 0, 1, 2, … of cells at Chebyshev
//! distance exactly s, clipped to the grid (no cell is visited twice, however few cells per
//! axis). A cell is skipped when its slab box's lower bound exceeds the current bound (the k-th
//! best squared distance when k are held, else r²). Before shell s the search stops when the
//! lower bound on every point outside shells < s exceeds that bound. Strict comparisons keep
//! equal-distance, lower-index points. Expected O(k + m·3^d) per query on uniform data; the
//! worst case (all points in a dense cluster) degrades towards brute force.

use rayon::prelude::*;

use super::Coord;
use super::kbest::{KBest, box_dist2};
use crate::GeofieldError;

/// Mean number of points per cell aimed at by the default cell size.
pub const TARGET_PER_CELL: f64 = 2.0;
/// Hard cap on the number of cells.
pub const MAX_CELLS: f64 = (1u64 << 26) as f64;

/// A uniform grid over the points (see the module docs).
pub struct UniformGrid<T: Coord, const D: usize> {
    origin: [f64; D],
    cell: f64,
    dims: [usize; D],
    starts: Vec<u32>,
    pts: Vec<[T; D]>,
    ids: Vec<u32>,
    slab_lo: [Vec<T>; D],
    slab_hi: [Vec<T>; D],
    pre_max: [Vec<T>; D],
    suf_min: [Vec<T>; D],
}

fn grid_dims<const D: usize>(ext: &[f64; D], cell: f64) -> ([usize; D], f64) {
    let mut dims = [1usize; D];
    let mut total = 1.0f64;
    for a in 0..D {
        let n = (ext[a] / cell).floor() + 1.0;
        let n = if n.is_finite() && n >= 1.0 {
            n.min(1e12)
        } else {
            1e12
        };
        total *= n;
        dims[a] = n as usize;
    }
    (dims, total)
}

impl<T: Coord, const D: usize> UniformGrid<T, D> {
    /// Build the grid; `cell_size` overrides the default (validated finite and > 0 by the caller).
    pub fn build(points: &[[T; D]], cell_size: Option<f64>) -> Result<Self, GeofieldError> {
        Self::build_capped(points, cell_size, None)
    }

    /// [`UniformGrid::build`] with the default cell size capped at `max_cell` (a radius-capped
    /// search never needs cells much wider than its radius: smaller cells hold fewer candidates).
    pub fn build_capped(
        points: &[[T; D]],
        cell_size: Option<f64>,
        max_cell: Option<f64>,
    ) -> Result<Self, GeofieldError> {
        let n = points.len();
        let mut lo = [f64::INFINITY; D];
        let mut hi = [f64::NEG_INFINITY; D];
        for p in points {
            for a in 0..D {
                let v = p[a].to_f64();
                lo[a] = lo[a].min(v);
                hi[a] = hi[a].max(v);
            }
        }
        if n == 0 {
            lo = [0.0; D];
            hi = [0.0; D];
        }
        let mut ext = [0.0f64; D];
        for a in 0..D {
            ext[a] = hi[a] - lo[a];
        }
        let (cell, dims) = match cell_size {
            Some(h) => {
                let (dims, total) = grid_dims(&ext, h);
                if total > MAX_CELLS {
                    return Err(GeofieldError::Invalid(format!(
                        "cell_size {h} gives {total:.3e} cells over the points' extent; at most {MAX_CELLS:.3e} are allowed"
                    )));
                }
                (h, dims)
            }
            None => {
                let mut vol = 1.0f64;
                let mut dpos = 0;
                for e in ext {
                    if e > 0.0 {
                        vol *= e;
                        dpos += 1;
                    }
                }
                let mut h = if dpos == 0 {
                    1.0
                } else {
                    (vol * TARGET_PER_CELL / n.max(1) as f64).powf(1.0 / dpos as f64)
                };
                if !(h.is_finite() && h > 0.0) {
                    h = ext.iter().copied().fold(0.0, f64::max);
                    if !(h.is_finite() && h > 0.0) {
                        h = 1.0;
                    }
                }
                if let Some(m) = max_cell
                    && m > 0.0
                    && m < h
                {
                    h = m;
                }
                let limit = (4.0 * n as f64).clamp(64.0, MAX_CELLS);
                let (mut dims, mut total) = grid_dims(&ext, h);
                while total > limit {
                    h *= 2.0;
                    (dims, total) = grid_dims(&ext, h);
                }
                (h, dims)
            }
        };
        let ncells: usize = dims.iter().product();

        let grid_coords = |p: &[T; D]| -> [u32; D] {
            let mut c = [0u32; D];
            for a in 0..D {
                let f = ((p[a].to_f64() - lo[a]) / cell).floor();
                let last = dims[a] - 1;
                c[a] = if f >= 0.0 {
                    (f as usize).min(last) as u32
                } else {
                    0
                };
            }
            c
        };
        let coords: Vec<[u32; D]> = points.par_iter().map(grid_coords).collect();
        let linear = |c: &[u32; D]| -> usize {
            let mut id = 0usize;
            for a in (0..D).rev() {
                id = id * dims[a] + c[a] as usize;
            }
            id
        };
        let cell_ids: Vec<usize> = coords.par_iter().map(linear).collect();

        let mut starts = vec![0u32; ncells + 1];
        for &c in &cell_ids {
            starts[c + 1] += 1;
        }
        for c in 0..ncells {
            starts[c + 1] += starts[c];
        }
        let mut cursor: Vec<u32> = starts[..ncells].to_vec();
        let mut pts = vec![[T::ZERO; D]; n];
        let mut ids = vec![0u32; n];
        for (i, &c) in cell_ids.iter().enumerate() {
            let pos = cursor[c] as usize;
            cursor[c] += 1;
            pts[pos] = points[i];
            ids[pos] = i as u32;
        }

        let mut slab_lo: [Vec<T>; D] = std::array::from_fn(|a| vec![T::INFINITY; dims[a]]);
        let mut slab_hi: [Vec<T>; D] = std::array::from_fn(|a| vec![T::NEG_INFINITY; dims[a]]);
        for (p, c) in points.iter().zip(&coords) {
            for a in 0..D {
                let s = c[a] as usize;
                if p[a] < slab_lo[a][s] {
                    slab_lo[a][s] = p[a];
                }
                if p[a] > slab_hi[a][s] {
                    slab_hi[a][s] = p[a];
                }
            }
        }
        let pre_max: [Vec<T>; D] = std::array::from_fn(|a| {
            let mut acc = T::NEG_INFINITY;
            slab_hi[a]
                .iter()
                .map(|&v| {
                    if v > acc {
                        acc = v;
                    }
                    acc
                })
                .collect()
        });
        let suf_min: [Vec<T>; D] = std::array::from_fn(|a| {
            let mut acc = T::INFINITY;
            let mut v: Vec<T> = slab_lo[a]
                .iter()
                .rev()
                .map(|&v| {
                    if v < acc {
                        acc = v;
                    }
                    acc
                })
                .collect();
            v.reverse();
            v
        });
        Ok(UniformGrid {
            origin: lo,
            cell,
            dims,
            starts,
            pts,
            ids,
            slab_lo,
            slab_hi,
            pre_max,
            suf_min,
        })
    }

    /// Replace every stored point index i by `labels[i]` (the ids results are keyed and
    /// tie-broken by), e.g. stable agent ids of points given in a storage order.
    pub fn relabel(&mut self, labels: &[u32]) {
        for id in &mut self.ids {
            *id = labels[*id as usize];
        }
    }

    /// Cell size used, in coordinate units.
    pub fn cell_size(&self) -> f64 {
        self.cell
    }

    /// Cells per axis.
    pub fn dims(&self) -> [usize; D] {
        self.dims
    }

    fn home(&self, q: &[T; D]) -> [usize; D] {
        let mut c = [0usize; D];
        for a in 0..D {
            let f = ((q[a].to_f64() - self.origin[a]) / self.cell).floor();
            let last = self.dims[a] - 1;
            c[a] = if f >= 0.0 { (f as usize).min(last) } else { 0 };
        }
        c
    }

    /// Lower bound on the squared distance of every point outside the block of cells at
    /// Chebyshev distance ≤ t from c0 (infinite when the block covers the grid).
    fn outside_bound(&self, q: &[T; D], c0: &[usize; D], t: usize) -> T {
        let mut lb = T::INFINITY;
        for a in 0..D {
            if c0[a] > t {
                let m = self.pre_max[a][c0[a] - t - 1];
                let g = if q[a] > m { q[a] - m } else { T::ZERO };
                let g2 = g * g;
                if g2 < lb {
                    lb = g2;
                }
            }
            let up = c0[a] + t + 1;
            if up < self.dims[a] {
                let m = self.suf_min[a][up];
                let g = if m > q[a] { m - q[a] } else { T::ZERO };
                let g2 = g * g;
                if g2 < lb {
                    lb = g2;
                }
            }
        }
        lb
    }

    /// Scan the contiguous run of cells `x0..=x1` on axis 0 (the fastest axis) whose other
    /// coordinates are `cell[1..]`, unless its slab box is beyond the current bound. `partial`
    /// is the box's squared gap on axes 1.. (already checked against the bound).
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn visit_strip(
        &self,
        q: &[T; D],
        cell: &[usize; D],
        x0: usize,
        x1: usize,
        partial: T,
        sk: Option<u32>,
        r2: T,
        best: &mut KBest<T>,
    ) {
        let mut base = 0usize;
        for a in (1..D).rev() {
            base = base * self.dims[a] + cell[a];
        }
        base *= self.dims[0];
        let (s, e) = (
            self.starts[base + x0] as usize,
            self.starts[base + x1 + 1] as usize,
        );
        if s == e {
            return;
        }
        let mut lo = self.slab_lo[0][x0];
        let mut hi = self.slab_hi[0][x0];
        for x in x0 + 1..=x1 {
            if self.slab_lo[0][x] < lo {
                lo = self.slab_lo[0][x];
            }
            if self.slab_hi[0][x] > hi {
                hi = self.slab_hi[0][x];
            }
        }
        let g = if q[0] < lo {
            lo - q[0]
        } else if q[0] > hi {
            q[0] - hi
        } else {
            T::ZERO
        };
        if loose(partial + g * g) > best.bound(r2) {
            return;
        }
        best.scan(q, &self.pts[s..e], &self.ids[s..e], sk, r2);
    }

    /// Visit the cells of shell `s` around `c0` (Chebyshev distance exactly s), axis `a`
    /// downwards; axis 0 is scanned as contiguous strips. `partial` is the squared gap of the
    /// slab box on the axes above `a` (summed from the highest axis down, a lower bound on the
    /// distance of every point in the sub-block; sub-blocks beyond the bound are skipped).
    #[allow(clippy::too_many_arguments)]
    fn visit_shell(
        &self,
        a: usize,
        cell: &mut [usize; D],
        on_shell: bool,
        c0: &[usize; D],
        s: usize,
        partial: T,
        q: &[T; D],
        sk: Option<u32>,
        r2: T,
        best: &mut KBest<T>,
    ) {
        let lo = c0[a].saturating_sub(s);
        let hi = (c0[a] + s).min(self.dims[a] - 1);
        if a == 0 {
            if on_shell {
                self.visit_strip(q, cell, lo, hi, partial, sk, r2, best);
            } else {
                if c0[0] >= s {
                    self.visit_strip(q, cell, c0[0] - s, c0[0] - s, partial, sk, r2, best);
                }
                if s > 0 && c0[0] + s < self.dims[0] {
                    self.visit_strip(q, cell, c0[0] + s, c0[0] + s, partial, sk, r2, best);
                }
            }
            return;
        }
        for c in lo..=hi {
            let (sl, sh) = (self.slab_lo[a][c], self.slab_hi[a][c]);
            if sl > sh {
                continue; // an empty slab
            }
            let g = if q[a] < sl {
                sl - q[a]
            } else if q[a] > sh {
                q[a] - sh
            } else {
                T::ZERO
            };
            let p = partial + g * g;
            if loose(p) > best.bound(r2) {
                continue;
            }
            cell[a] = c;
            let on = on_shell || c + s == c0[a] || c == c0[a] + s;
            self.visit_shell(a - 1, cell, on, c0, s, p, q, sk, r2, best);
        }
    }
}

/// The partial box bounds sum the axes from the highest down, while d² sums them from axis 0
/// up; the two orders can round apart by a few ulps, so a bound is shrunk by 2⁻²⁰ (relative)
/// before it may prune: still a valid lower bound on every inner point's computed d².
#[inline]
fn loose<T: Coord>(p: T) -> T {
    p - p * T::from_f64(1.0 / 1_048_576.0)
}

impl<T: Coord, const D: usize> super::Search<T, D> for UniformGrid<T, D> {
    fn storage_order(&self) -> Option<&[u32]> {
        Some(&self.ids)
    }

    fn within(&self, q: &[T; D], skip: Option<u32>, r2: T, out: &mut Vec<(T, u32)>) {
        if self.pts.is_empty() {
            return;
        }
        // The block of cells within one cell of the box [q − r, q + r]: the margin covers
        // rounding in the binning and in d²; each cell is then pruned by its exact slab box.
        let r = r2.to_f64().max(0.0).sqrt();
        let mut lo = [0usize; D];
        let mut hi = [0usize; D];
        for a in 0..D {
            let last = self.dims[a] - 1;
            let f = |x: f64| {
                let c = ((x - self.origin[a]) / self.cell).floor();
                if c >= 0.0 { (c as usize).min(last) } else { 0 }
            };
            lo[a] = f(q[a].to_f64() - r).saturating_sub(1);
            hi[a] = (f(q[a].to_f64() + r) + 1).min(last);
        }
        let mut cell = lo;
        loop {
            let mut id = 0usize;
            for a in (0..D).rev() {
                id = id * self.dims[a] + cell[a];
            }
            let (s, e) = (self.starts[id] as usize, self.starts[id + 1] as usize);
            if s < e {
                let blo: [T; D] = std::array::from_fn(|a| self.slab_lo[a][cell[a]]);
                let bhi: [T; D] = std::array::from_fn(|a| self.slab_hi[a][cell[a]]);
                if box_dist2(q, &blo, &bhi) <= r2 {
                    super::kbest::scan_within(q, &self.pts[s..e], &self.ids[s..e], skip, r2, out);
                }
            }
            let mut a = 0;
            loop {
                if cell[a] < hi[a] {
                    cell[a] += 1;
                    break;
                }
                cell[a] = lo[a];
                a += 1;
                if a == D {
                    return;
                }
            }
        }
    }

    fn search(&self, q: &[T; D], skip: Option<u32>, r2: T, best: &mut KBest<T>) {
        if self.pts.is_empty() {
            return;
        }
        let c0 = self.home(q);
        let mut smax = 0;
        for (&c, &n) in c0.iter().zip(&self.dims) {
            smax = smax.max(c).max(n - 1 - c);
        }
        let mut cell = [0usize; D];
        for s in 0..=smax {
            if s > 0 && self.outside_bound(q, &c0, s - 1) > best.bound(r2) {
                break;
            }
            self.visit_shell(D - 1, &mut cell, false, &c0, s, T::ZERO, q, skip, r2, best);
        }
    }
}
