//! The uniform grid for the GPU k-NN kernel: points counting-sorted into cells on the host,
//! with per-slab coordinate bounds for exact pruning (mirrors the CPU uniform grid's rules).

use super::{GpuCoord, MAX_CELLS, TARGET_PER_CELL, check_coords};
use crate::error::{CudaError, invalid};

/// A uniform grid over the points, built on the host, in the layout the grid kernel reads.
#[derive(Clone, Debug)]
pub struct GpuGrid<T: GpuCoord> {
    pub dim: usize,
    /// Grid origin (minimum of the points per axis), in f64.
    pub origin: [f64; 3],
    /// Cell size in coordinate units.
    pub cell: f64,
    /// Cells per axis (unused axes 1); cells are stored x fastest.
    pub dims: [u32; 3],
    /// Cell c holds stored points `starts[c]..starts[c+1]`.
    pub starts: Vec<u32>,
    /// Points in storage order (cell by cell, index order inside a cell), `dim` values each.
    pub pts: Vec<T>,
    /// Original index of each stored point.
    pub ids: Vec<u32>,
    /// Per axis a, per slab s (concatenated: axis a at offset dims[0] + … + dims[a-1]): the
    /// minimum / maximum coordinate of the points binned there (±inf when empty).
    pub slab_lo: Vec<T>,
    pub slab_hi: Vec<T>,
    /// Prefix maximum of `slab_hi` and suffix minimum of `slab_lo`, per axis.
    pub pre_max: Vec<T>,
    pub suf_min: Vec<T>,
}

fn grid_dims(ext: &[f64], cell: f64) -> ([usize; 3], f64) {
    let mut dims = [1usize; 3];
    let mut total = 1.0f64;
    for (a, &e) in ext.iter().enumerate() {
        let n = (e / cell).floor() + 1.0;
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

impl<T: GpuCoord> GpuGrid<T> {
    /// Counting-sort `points` (`dim` = 2 or 3 values each, finite) into cells of size
    /// `cell_size` (default: about [`TARGET_PER_CELL`] points per cell, doubled while the grid
    /// has more than max(4N, 64) cells), as the CPU's uniform grid.
    pub fn build(points: &[T], dim: usize, cell_size: Option<f64>) -> Result<Self, CudaError> {
        const K: &str = "neighbors_grid (build)";
        let n = check_coords("point", points, dim, K)?;
        let mut lo = [0.0f64; 3];
        let mut hi = [0.0f64; 3];
        if n > 0 {
            lo = [f64::INFINITY; 3];
            hi = [f64::NEG_INFINITY; 3];
            for p in points.chunks_exact(dim) {
                for a in 0..dim {
                    let v = p[a].widen();
                    lo[a] = lo[a].min(v);
                    hi[a] = hi[a].max(v);
                }
            }
            for a in dim..3 {
                lo[a] = 0.0;
                hi[a] = 0.0;
            }
        }
        let ext: Vec<f64> = (0..dim).map(|a| hi[a] - lo[a]).collect();
        let (cell, dims) = match cell_size {
            Some(h) => {
                if !(h.is_finite() && h > 0.0) {
                    return Err(invalid(
                        K,
                        format!("cell_size = {h} must be finite and > 0"),
                    ));
                }
                let (dims, total) = grid_dims(&ext, h);
                if total > MAX_CELLS {
                    return Err(invalid(
                        K,
                        format!("cell_size {h} gives {total:.3e} cells; at most {MAX_CELLS:.3e}"),
                    ));
                }
                (h, dims)
            }
            None => {
                let mut vol = 1.0f64;
                let mut dpos = 0;
                for &e in &ext {
                    if e > 0.0 {
                        vol *= e;
                        dpos += 1;
                    }
                }
                let mut h = if dpos == 0 {
                    1.0
                } else {
                    (vol * TARGET_PER_CELL / n.max(1) as f64).powf(1.0 / f64::from(dpos))
                };
                if !(h.is_finite() && h > 0.0) {
                    h = ext.iter().copied().fold(0.0, f64::max);
                    if !(h.is_finite() && h > 0.0) {
                        h = 1.0;
                    }
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
        let mut coords = vec![[0u32; 3]; n];
        let mut cell_ids = vec![0usize; n];
        for (i, p) in points.chunks_exact(dim).enumerate() {
            let mut id = 0usize;
            for a in (0..dim).rev() {
                let f = ((p[a].widen() - lo[a]) / cell).floor();
                let last = dims[a] - 1;
                let c = if f >= 0.0 { (f as usize).min(last) } else { 0 };
                coords[i][a] = c as u32;
                id = id * dims[a] + c;
            }
            cell_ids[i] = id;
        }
        let mut starts = vec![0u32; ncells + 1];
        for &c in &cell_ids {
            starts[c + 1] += 1;
        }
        for c in 0..ncells {
            starts[c + 1] += starts[c];
        }
        let mut cursor: Vec<u32> = starts[..ncells].to_vec();
        let mut pts = vec![T::ZERO_VAL; n * dim];
        let mut ids = vec![0u32; n];
        for (i, &c) in cell_ids.iter().enumerate() {
            let pos = cursor[c] as usize;
            cursor[c] += 1;
            pts[pos * dim..(pos + 1) * dim].copy_from_slice(&points[i * dim..(i + 1) * dim]);
            ids[pos] = i as u32;
        }
        let total_slabs: usize = dims.iter().sum();
        let mut off = [0usize; 3];
        for a in 1..3 {
            off[a] = off[a - 1] + dims[a - 1];
        }
        let mut slab_lo = vec![T::POS_INF; total_slabs];
        let mut slab_hi = vec![T::NEG_INF; total_slabs];
        for (p, c) in points.chunks_exact(dim).zip(&coords) {
            for a in 0..dim {
                let s = off[a] + c[a] as usize;
                if p[a] < slab_lo[s] {
                    slab_lo[s] = p[a];
                }
                if p[a] > slab_hi[s] {
                    slab_hi[s] = p[a];
                }
            }
        }
        let mut pre_max = slab_hi.clone();
        let mut suf_min = slab_lo.clone();
        for a in 0..3 {
            let r = off[a]..off[a] + dims[a];
            let mut acc = T::NEG_INF;
            for v in &mut pre_max[r.clone()] {
                if *v > acc {
                    acc = *v;
                }
                *v = acc;
            }
            let mut acc = T::POS_INF;
            for v in suf_min[r].iter_mut().rev() {
                if *v < acc {
                    acc = *v;
                }
                *v = acc;
            }
        }
        let dims32 = dims.map(|d| u32::try_from(d).unwrap_or(u32::MAX));
        Ok(GpuGrid {
            dim,
            origin: lo,
            cell,
            dims: dims32,
            starts,
            pts,
            ids,
            slab_lo,
            slab_hi,
            pre_max,
            suf_min,
        })
    }

    /// Number of points in the grid.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Internal consistency (lengths), so that the kernel never reads out of bounds.
    pub(super) fn check(&self, kernel: &'static str) -> Result<(), CudaError> {
        let n = self.ids.len();
        let ncells = self
            .dims
            .iter()
            .try_fold(1usize, |acc, &d| acc.checked_mul(d as usize));
        let total_slabs: usize = self.dims.iter().map(|&d| d as usize).sum();
        let ok = (self.dim == 2 || self.dim == 3)
            && self.dims.iter().all(|&d| d >= 1)
            && (self.dim == 3 || self.dims[2] == 1)
            && ncells.is_some_and(|c| c < u32::MAX as usize && self.starts.len() == c + 1)
            && self.starts.first() == Some(&0)
            && self.starts.last().map(|&l| l as usize) == Some(n)
            && self.starts.windows(2).all(|w| w[0] <= w[1])
            && self.pts.len() == n * self.dim
            && self.ids.iter().all(|&i| (i as usize) < n)
            && [&self.slab_lo, &self.slab_hi, &self.pre_max, &self.suf_min]
                .iter()
                .all(|v| v.len() == total_slabs)
            && self.cell.is_finite()
            && self.cell > 0.0;
        if ok {
            Ok(())
        } else {
            Err(invalid(kernel, "the grid's arrays are inconsistent"))
        }
    }
}
