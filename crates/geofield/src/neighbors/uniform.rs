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
//! start offsets (CSR layout, as the paper's index and data blocks). The binning runs on chunks
//! of points in parallel; the counting sort on ranges of cells in parallel (each range counts
//! and places only its own cells' points, so the layout does not depend on the thread count).
//!
//! For the all-points batch query below, m = [`batch_per_cell`]`(k, d)` (3 for 7-NN in 2-D),
//! and the default h is refined once when the points see far more neighbours in their own cell
//! than m (clusters): h is scaled so that the mean occupancy of a point's cell, the point
//! excluded, comes back to about m.
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
//!
//! # All points as queries (batch)
//!
//! When the queries are the points themselves ([`super::Search::search_stored`]), they are
//! answered cell by cell in storage order, on rayon over runs of cells. For each cell the points
//! of the block of cells within Chebyshev distance 1 are gathered once into contiguous arrays
//! (one run of storage per row of the block); for each of the cell's points the squared
//! distances to the whole block are computed (same formula and order as everywhere, the point
//! itself masked with NaN), together with `ob`, the slab lower bound on every point outside the
//! block (as in the stopping rule). The candidates with d² < `ob` (and d² ≤ r²) are kept; if
//! there are at least k of them, or r² < `ob`, the k smallest keys among them are the answer:
//! every other point has d² ≥ `ob`, above each kept key. They are ranked by counting smaller
//! keys (ties by index), or by insertion when many. Otherwise the block within distance 2 is
//! tried the same way (gathered at most once per cell), and last the shell search from shell 3
//! on with the block's points already offered. Rows are written straight to their query's place
//! in the output (see [`super::RowSink`]).

use rayon::prelude::*;

use super::kbest::{K_MAX, KBest, box_dist2};
use super::{Coord, RowSink};
use crate::GeofieldError;

/// Mean number of points per cell aimed at by the default cell size.
pub const TARGET_PER_CELL: f64 = 2.0;
/// Default mean points per cell for answering every point's k nearest neighbours in one batch:
/// enough that a disc (ball) reaching from a query to the edge of the block of cells around its
/// own cell, at least one cell wide, usually holds k + 1 points (the query, k neighbours).
pub fn batch_per_cell(k: usize, dim: usize) -> f64 {
    let k1 = (k + 1) as f64;
    let m = if dim == 2 { k1 * 0.375 } else { k1 * 0.25 };
    m.clamp(TARGET_PER_CELL, 32.0)
}

/// Points per parallel chunk of the build's binning pass.
const BUILD_CHUNK: usize = 1 << 16;
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
        Self::build_with(points, cell_size, max_cell, TARGET_PER_CELL, false)
    }

    /// The grid that suits answering every point's k nearest neighbours in one batch
    /// ([`super::Search::search_stored`]): cells of about [`batch_per_cell`]`(k, D)` points, so
    /// that the block of cells within one cell of a query usually settles it.
    pub(crate) fn build_for_batch(
        points: &[[T; D]],
        cell_size: Option<f64>,
        k: usize,
    ) -> Result<Self, GeofieldError> {
        Self::build_with(points, cell_size, None, batch_per_cell(k, D), true)
    }

    /// [`UniformGrid::build_capped`] aiming at `per_cell` points per cell by default. With
    /// `adapt`, a default cell size is refined once when the points sit much more densely than
    /// their bounding box suggests (clusters): the mean occupancy of a point's own cell should
    /// be about `per_cell` + 1 (the point itself), as for evenly spread points.
    fn build_with(
        points: &[[T; D]],
        cell_size: Option<f64>,
        max_cell: Option<f64>,
        per_cell: f64,
        adapt: bool,
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
        let limit = (4.0 * n as f64).clamp(64.0, MAX_CELLS);
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
                    (vol * per_cell / n.max(1) as f64).powf(1.0 / dpos as f64)
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
                let (mut dims, mut total) = grid_dims(&ext, h);
                while total > limit {
                    h *= 2.0;
                    (dims, total) = grid_dims(&ext, h);
                }
                (h, dims)
            }
        };
        let adapt = (adapt && cell_size.is_none()).then_some((per_cell, limit, ext));
        Ok(Self::bin(points, lo, cell, dims, adapt))
    }

    /// Bin the points into the grid of `dims` cells of size `cell` from `lo` (see
    /// [`UniformGrid::build_with`] for `adapt`: per cell target, cell limit, extents).
    fn bin(
        points: &[[T; D]],
        lo: [f64; D],
        cell: f64,
        dims: [usize; D],
        adapt: Option<(f64, f64, [f64; D])>,
    ) -> Self {
        let n = points.len();
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
        let linear = |c: &[u32; D]| -> u32 {
            let mut id = 0usize;
            for a in (0..D).rev() {
                id = id * dims[a] + c[a] as usize;
            }
            id as u32
        };

        // Cell of every point, and per chunk of points the slabs' exact coordinate ranges.
        let mut cell_ids = vec![0u32; n];
        type Slabs<T, const D: usize> = ([Vec<T>; D], [Vec<T>; D]);
        let empty = || -> Slabs<T, D> {
            (
                std::array::from_fn(|a| vec![T::INFINITY; dims[a]]),
                std::array::from_fn(|a| vec![T::NEG_INFINITY; dims[a]]),
            )
        };
        let (slab_lo, slab_hi) = points
            .par_chunks(BUILD_CHUNK)
            .zip(cell_ids.par_chunks_mut(BUILD_CHUNK))
            .map(|(pc, ic)| {
                let (mut slo, mut shi) = empty();
                for (p, id) in pc.iter().zip(ic.iter_mut()) {
                    let c = grid_coords(p);
                    *id = linear(&c);
                    for a in 0..D {
                        let s = c[a] as usize;
                        if p[a] < slo[a][s] {
                            slo[a][s] = p[a];
                        }
                        if p[a] > shi[a][s] {
                            shi[a][s] = p[a];
                        }
                    }
                }
                (slo, shi)
            })
            .reduce(empty, |(mut alo, mut ahi), (blo, bhi)| {
                for a in 0..D {
                    for (x, &y) in alo[a].iter_mut().zip(&blo[a]) {
                        if y < *x {
                            *x = y;
                        }
                    }
                    for (x, &y) in ahi[a].iter_mut().zip(&bhi[a]) {
                        if y > *x {
                            *x = y;
                        }
                    }
                }
                (alo, ahi)
            });

        // Counting sort, stable, split into ranges of cells: each range counts and places only
        // its own points (every range reads all the cell ids), so the ranges run in parallel
        // on disjoint parts of the output and the layout does not depend on their number.
        let parts = rayon::current_num_threads().clamp(1, 64).min(ncells);
        let bounds: Vec<usize> = (0..=parts).map(|t| t * ncells / parts).collect();
        let counted: Vec<(usize, Vec<u32>)> = bounds
            .par_windows(2)
            .map(|w| {
                let (ca, cb) = (w[0] as u32, w[1] as u32);
                let mut below = 0usize;
                let mut hist = vec![0u32; (cb - ca) as usize];
                for &c in &cell_ids {
                    if c < ca {
                        below += 1;
                    } else if c < cb {
                        hist[(c - ca) as usize] += 1;
                    }
                }
                (below, hist)
            })
            .collect();
        if let Some((per_cell, limit, ext)) = adapt {
            // Mean occupancy of a point's own cell, the point excluded.
            let sq: f64 = counted
                .iter()
                .flat_map(|(_, h)| h.iter())
                .map(|&c| f64::from(c) * f64::from(c))
                .sum();
            let seen = sq / n.max(1) as f64 - 1.0;
            let dpos = ext.iter().filter(|&&e| e > 0.0).count();
            if seen > 1.5 * per_cell && dpos > 0 {
                let h = cell * (per_cell / seen).powf(1.0 / dpos as f64);
                let (dims, total) = grid_dims(&ext, h);
                if h > 0.0 && total <= limit {
                    return Self::bin(points, lo, h, dims, None);
                }
            }
        }
        let mut starts = vec![0u32; ncells + 1];
        starts[ncells] = n as u32;
        let mut pts = vec![[T::ZERO; D]; n];
        let mut ids = vec![0u32; n];
        let mut jobs = Vec::with_capacity(parts);
        {
            let (mut st, mut pr, mut ir) = (&mut starts[..ncells], &mut pts[..], &mut ids[..]);
            for (t, (below, hist)) in counted.into_iter().enumerate() {
                let total: usize = hist.iter().map(|&h| h as usize).sum();
                let (s1, s2) = std::mem::take(&mut st).split_at_mut(hist.len());
                let (p1, p2) = std::mem::take(&mut pr).split_at_mut(total);
                let (i1, i2) = std::mem::take(&mut ir).split_at_mut(total);
                (st, pr, ir) = (s2, p2, i2);
                jobs.push((bounds[t] as u32, below, hist, s1, p1, i1));
            }
        }
        jobs.into_par_iter()
            .for_each(|(ca, base, hist, st, pr, ir)| {
                let mut cursor = hist;
                let mut acc = 0u32;
                for (c, s) in cursor.iter_mut().zip(st.iter_mut()) {
                    *s = base as u32 + acc;
                    let h = *c;
                    *c = acc;
                    acc += h;
                }
                let cb = ca + cursor.len() as u32;
                for (i, &c) in cell_ids.iter().enumerate() {
                    if c >= ca && c < cb {
                        let slot = &mut cursor[(c - ca) as usize];
                        let pos = *slot as usize;
                        *slot += 1;
                        pr[pos] = points[i];
                        ir[pos] = i as u32;
                    }
                }
            });

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
        UniformGrid {
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
        }
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
        self.shells_from(q, &c0, 0, skip, r2, best);
    }

    fn search_stored(&self, k: usize, exclude_self: bool, r2: T, sink: &RowSink<'_>) -> bool {
        // Tasks: runs of whole cells holding at least TASK_ROWS points each.
        let ncells = self.starts.len() - 1;
        let mut tasks = Vec::new();
        let mut c0 = 0;
        while c0 < ncells {
            let s0 = self.starts[c0];
            let mut c1 = c0 + 1;
            while c1 < ncells && ((self.starts[c1] - s0) as usize) < TASK_ROWS {
                c1 += 1;
            }
            tasks.push((c0, c1));
            c0 = c1;
        }
        tasks.into_par_iter().for_each(|(c0, c1)| {
            let mut sc = Scratch {
                near: Level::new(),
                far: Level::new(),
                fd: Vec::new(),
                fi: Vec::new(),
                sel_d: [T::ZERO; K_MAX + 1],
                sel_i: [0; K_MAX + 1],
            };
            for c in c0..c1 {
                self.answer_cell(c, k, exclude_self, r2, &mut sc, sink);
            }
        });
        true
    }
}

/// Stored points per rayon task in [`UniformGrid`]'s batch search (at least).
const TASK_ROWS: usize = 512;

/// Up to this many candidates, [`select`] ranks them by counting (O(f²), branch-free);
/// above, it inserts them into a sorted buffer.
const RANK_MAX: usize = 32;

/// The points of the block of cells within Chebyshev distance `reach` of one cell, gathered
/// once for all the cell's queries (structure of arrays), with the bounds that the exact
/// stopping rule compares against.
struct Level<T: Coord, const D: usize> {
    /// Block radius in cells; 0 while not gathered for the current cell.
    reach: usize,
    xs: [Vec<T>; D],
    ids: Vec<u32>,
    /// Position of the cell's first point among the candidates.
    home_at: usize,
    /// Per axis: every point below the block has coordinate ≤ `below`, every point above it
    /// coordinate ≥ `above` (−∞ / +∞ where the block reaches the grid's edge).
    below: [T; D],
    above: [T; D],
    /// Squared distances of the current query to the candidates.
    d2: Vec<T>,
}

impl<T: Coord, const D: usize> Level<T, D> {
    fn new() -> Self {
        Level {
            reach: 0,
            xs: std::array::from_fn(|_| Vec::new()),
            ids: Vec::new(),
            home_at: 0,
            below: [T::NEG_INFINITY; D],
            above: [T::INFINITY; D],
            d2: Vec::new(),
        }
    }

    /// Squared distances from `q` to every candidate, in `T` exactly as [`super::kbest::dist2`]
    /// (axes summed in order from zero); the query itself (candidate `me`) and the padding get
    /// NaN, which never compares true.
    #[inline]
    fn distances(&mut self, q: &[T; D], me: Option<usize>) {
        let m = self.d2.len();
        let xs: [&[T]; D] = std::array::from_fn(|a| &self.xs[a][..m]);
        for (j, o) in self.d2.chunks_exact_mut(4).enumerate() {
            for (l, v) in o.iter_mut().enumerate() {
                let mut s = T::ZERO;
                for a in 0..D {
                    let d = xs[a][4 * j + l] - q[a];
                    s = s + d * d;
                }
                *v = s;
            }
        }
        if let Some(v) = me.and_then(|j| self.d2.get_mut(j)) {
            *v = T::from_f64(f64::NAN);
        }
    }

    /// Lower bound on the computed squared distance from `q` to every point outside the block
    /// (as [`UniformGrid::outside_bound`]).
    #[inline]
    fn outside(&self, q: &[T; D]) -> T {
        let mut lb = T::INFINITY;
        for ((&qa, &below), &above) in q.iter().zip(&self.below).zip(&self.above) {
            let lo = if qa > below { qa - below } else { T::ZERO };
            let hi = if above > qa { above - qa } else { T::ZERO };
            let g = if lo < hi { lo } else { hi };
            let g2 = g * g;
            if g2 < lb {
                lb = g2;
            }
        }
        lb
    }
}

/// Per-thread scratch of the batch search.
struct Scratch<T: Coord, const D: usize> {
    near: Level<T, D>,
    far: Level<T, D>,
    /// Filtered candidates (padded for the counting loop).
    fd: Vec<T>,
    fi: Vec<u32>,
    /// One query's result, ascending (slot `K_MAX` takes discarded writes).
    sel_d: [T; K_MAX + 1],
    sel_i: [u32; K_MAX + 1],
}

/// Candidates with d² < `ob` and d² ≤ `r2` (NaN never qualifies), in order, into `fd` / `fi`
/// (at least 4 longer than `d2`), followed by +∞ up to a multiple of 4; returns their number.
#[inline]
fn filter<T: Coord>(d2: &[T], ids: &[u32], ob: T, r2: T, fd: &mut [T], fi: &mut [u32]) -> usize {
    let mut f = 0;
    if r2 < ob {
        for (&d, &i) in d2.iter().zip(ids) {
            fd[f] = d;
            fi[f] = i;
            f += usize::from(d <= r2);
        }
    } else {
        for (&d, &i) in d2.iter().zip(ids) {
            fd[f] = d;
            fi[f] = i;
            f += usize::from(d < ob);
        }
    }
    for v in &mut fd[f..f.div_ceil(4) * 4] {
        *v = T::INFINITY;
    }
    f
}

/// The up to k smallest keys (d², id) of the `f` filtered candidates (all finite, distinct
/// ids; +∞ padding after them), ascending, into `sel_d` / `sel_i`; returns how many.
#[inline]
fn select<T: Coord>(
    fd: &[T],
    fi: &[u32],
    f: usize,
    k: usize,
    sel_d: &mut [T; K_MAX + 1],
    sel_i: &mut [u32; K_MAX + 1],
) -> usize {
    if f > RANK_MAX {
        let mut best = KBest::new(k);
        for (&d, &i) in fd[..f].iter().zip(&fi[..f]) {
            if d <= best.bound(T::INFINITY) {
                best.push(d, i);
            }
        }
        let (d, ix) = best.keys();
        sel_d[..d.len()].copy_from_slice(d);
        sel_i[..ix.len()].copy_from_slice(ix);
        return d.len();
    }
    // A key's place is the number of smaller keys; the padding never counts.
    let padded = f.div_ceil(4) * 4;
    let (pd, pi) = (&fd[..padded], &fi[..padded]);
    for (&dj, &ij) in fd[..f].iter().zip(&fi[..f]) {
        let mut lt = 0usize;
        let mut eq = 0usize;
        for c in pd.chunks_exact(4) {
            for &di in c {
                lt += usize::from(di < dj);
                eq += usize::from(di == dj);
            }
        }
        if eq > 1 {
            // Equal distances (dj itself counts once): order them by index.
            for (&di, &ii) in pd.iter().zip(pi) {
                lt += usize::from(di == dj && ii < ij);
            }
        }
        let slot = lt.min(K_MAX);
        sel_d[slot] = dj;
        sel_i[slot] = ij;
    }
    f.min(k)
}

impl<T: Coord, const D: usize> UniformGrid<T, D> {
    /// Shells `s_first, s_first + 1, …` around `c0` with the exact stopping rule; every point
    /// at Chebyshev cell distance below `s_first` must already have been offered to `best`.
    fn shells_from(
        &self,
        q: &[T; D],
        c0: &[usize; D],
        s_first: usize,
        skip: Option<u32>,
        r2: T,
        best: &mut KBest<T>,
    ) {
        let mut smax = 0;
        for (&c, &n) in c0.iter().zip(&self.dims) {
            smax = smax.max(c).max(n - 1 - c);
        }
        let mut cell = [0usize; D];
        for s in s_first..=smax {
            if s > 0 && self.outside_bound(q, c0, s - 1) > best.bound(r2) {
                break;
            }
            self.visit_shell(D - 1, &mut cell, false, c0, s, T::ZERO, q, skip, r2, best);
        }
    }

    /// Gather into `lv` the points of the cells within Chebyshev distance `reach` of `cc`
    /// (whose first point is stored at `s0`): one contiguous run along axis 0 per combination
    /// of the other axes.
    fn gather(&self, cc: &[usize; D], s0: usize, reach: usize, lv: &mut Level<T, D>) {
        for v in &mut lv.xs {
            v.clear();
        }
        lv.ids.clear();
        lv.reach = reach;
        let mut lo = [0usize; D];
        let mut hi = [0usize; D];
        for a in 0..D {
            lo[a] = cc[a].saturating_sub(reach);
            hi[a] = (cc[a] + reach).min(self.dims[a] - 1);
            lv.below[a] = if cc[a] > reach {
                self.pre_max[a][cc[a] - reach - 1]
            } else {
                T::NEG_INFINITY
            };
            lv.above[a] = if cc[a] + reach + 1 < self.dims[a] {
                self.suf_min[a][cc[a] + reach + 1]
            } else {
                T::INFINITY
            };
        }
        let mut cur = lo;
        loop {
            let mut base = 0usize;
            for a in (1..D).rev() {
                base = base * self.dims[a] + cur[a];
            }
            base *= self.dims[0];
            let (s, e) = (
                self.starts[base + lo[0]] as usize,
                self.starts[base + hi[0] + 1] as usize,
            );
            if (s..e).contains(&s0) {
                lv.home_at = lv.ids.len() + (s0 - s);
            }
            for (a, v) in lv.xs.iter_mut().enumerate() {
                v.extend(self.pts[s..e].iter().map(|p| p[a]));
            }
            lv.ids.extend_from_slice(&self.ids[s..e]);
            let mut a = 1;
            while a < D {
                if cur[a] < hi[a] {
                    cur[a] += 1;
                    break;
                }
                cur[a] = lo[a];
                a += 1;
            }
            if a >= D {
                break;
            }
        }
        // Pad to whole groups of 4 with NaN coordinates (NaN distances are never taken).
        let m = lv.ids.len().div_ceil(4) * 4;
        let nan = T::from_f64(f64::NAN);
        for v in &mut lv.xs {
            v.resize(m, nan);
        }
        lv.ids.resize(m, u32::MAX);
        lv.d2.clear();
        lv.d2.resize(m, T::ZERO);
    }

    /// Answer the stored points of cell `c` into `sink`. The block of cells within one cell is
    /// gathered once and scanned for every query of the cell; a query is done when at least k
    /// candidates (or every candidate within the radius) lie strictly below the lower bound on
    /// every point outside the block: the k smallest keys are then among them. Otherwise the
    /// block within two cells is tried the same way, and last the shell-by-shell search.
    #[allow(clippy::too_many_arguments)]
    fn answer_cell(
        &self,
        c: usize,
        k: usize,
        exclude_self: bool,
        r2: T,
        sc: &mut Scratch<T, D>,
        sink: &RowSink<'_>,
    ) {
        let (s0, s1) = (self.starts[c] as usize, self.starts[c + 1] as usize);
        if s0 == s1 {
            return;
        }
        let mut cc = [0usize; D];
        let mut rest = c;
        for (x, &n) in cc.iter_mut().zip(&self.dims) {
            *x = rest % n;
            rest /= n;
        }
        self.gather(&cc, s0, 1, &mut sc.near);
        sc.far.reach = 0;
        for s in s0..s1 {
            let q = &self.pts[s];
            let mut done = false;
            for level in 0..2 {
                let lv = if level == 0 {
                    &mut sc.near
                } else {
                    if sc.far.reach == 0 {
                        self.gather(&cc, s0, 2, &mut sc.far);
                    }
                    &mut sc.far
                };
                let me = exclude_self.then_some(lv.home_at + (s - s0));
                lv.distances(q, me);
                let ob = lv.outside(q);
                if sc.fd.len() < lv.d2.len() + 4 {
                    sc.fd.resize(lv.d2.len() + 4, T::INFINITY);
                    sc.fi.resize(lv.d2.len() + 4, u32::MAX);
                }
                let f = filter(&lv.d2, &lv.ids, ob, r2, &mut sc.fd, &mut sc.fi);
                if f >= k || r2 < ob {
                    let m = select(&sc.fd, &sc.fi, f, k, &mut sc.sel_d, &mut sc.sel_i);
                    sink.put(s, &sc.sel_d[..m], &sc.sel_i[..m]);
                    done = true;
                    break;
                }
            }
            if done {
                continue;
            }
            // Rare: the k-th key may lie beyond two cells; go on shell by shell.
            let mut best = KBest::new(k);
            for (&d, &i) in sc.far.d2.iter().zip(&sc.far.ids) {
                if d <= best.bound(r2) {
                    best.push(d, i);
                }
            }
            let skip = exclude_self.then_some(self.ids[s]);
            self.shells_from(q, &cc, 3, skip, r2, &mut best);
            let (d, ix) = best.keys();
            sink.put(s, d, ix);
        }
    }
}
