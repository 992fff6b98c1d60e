//! Uniform grid: points counting-sorted into equal cubic cells, searched shell by shell.
//!
//! # Build, O(N + cells)
//!
//! Cell size h defaults to `(V·m/N)^(1/d')` where V is the product of the d' positive extents
//! of the points' bounding box and m = [`TARGET_PER_CELL`] points per cell on average; it is
//! doubled while the grid has more than `max(4N, 64)` cells (a flat or thin point cloud). A
//! user-given h is kept, and refused when the grid would pass [`MAX_CELLS`]. Each point's cell is
//! `floor((x − x_min)/h)` per axis in f64, clamped into the grid. Points whose extent overflows
//! f64 (finite coordinates from near −f64::MAX to near f64::MAX) are laid out on halved
//! coordinates (x/2 is exact, and x_max/2 − x_min/2 is finite); the cell-doubling loop stops at
//! h = f64::MAX at the latest. A counting sort (histogram,
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
    /// Cells are placed in coordinates multiplied by `scale` (1, or 1/2 when the points'
    /// extent overflows f64, e.g. from -1e308 to 1e308); `origin` and `cell` are in those units.
    scale: f64,
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
                if !v.is_finite() {
                    return Err(GeofieldError::Invalid(format!(
                        "point coordinate {v} is not finite"
                    )));
                }
                lo[a] = lo[a].min(v);
                hi[a] = hi[a].max(v);
            }
        }
        if n == 0 {
            lo = [0.0; D];
            hi = [0.0; D];
        }
        // Finite points can span more than f64::MAX (hi - lo = inf); halved coordinates cannot
        // (|x/2| <= f64::MAX/2), so the grid is then laid out on halved coordinates.
        let scale = if (0..D).all(|a| (hi[a] - lo[a]).is_finite()) {
            1.0
        } else {
            0.5
        };
        let mut ext = [0.0f64; D];
        for a in 0..D {
            lo[a] *= scale;
            hi[a] *= scale;
            ext[a] = hi[a] - lo[a];
        }
        let cell_size = cell_size.map(|h| h * scale);
        let max_cell = max_cell.map(|h| h * scale);
        let limit = (4.0 * n as f64).clamp(64.0, MAX_CELLS);
        let (cell, dims) = match cell_size {
            Some(h) => {
                let (dims, total) = grid_dims(&ext, h);
                if total > MAX_CELLS {
                    return Err(GeofieldError::Invalid(format!(
                        "cell_size {:e} gives {total:.3e} cells over the points' extent; at most {MAX_CELLS:.3e} are allowed",
                        h / scale
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
                // Terminates: at h = f64::MAX every extent (finite, <= f64::MAX) spans at most
                // 2 cells per axis, 8 in all, below the limit (>= 64).
                while total > limit {
                    h = (h * 2.0).min(f64::MAX);
                    (dims, total) = grid_dims(&ext, h);
                }
                (h, dims)
            }
        };
        let adapt = (adapt && cell_size.is_none()).then_some((per_cell, limit, ext));
        Ok(Self::bin(points, scale, lo, cell, dims, adapt))
    }

    /// Bin the points into the grid of `dims` cells of size `cell` from `lo` (see
    /// [`UniformGrid::build_with`] for `adapt`: per cell target, cell limit, extents).
    fn bin(
        points: &[[T; D]],
        scale: f64,
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
                let f = ((p[a].to_f64() * scale - lo[a]) / cell).floor();
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
                    return Self::bin(points, scale, lo, h, dims, None);
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
            scale,
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
        self.cell / self.scale
    }

    /// Cells per axis.
    pub fn dims(&self) -> [usize; D] {
        self.dims
    }
}

mod batch;
mod query;
