//! Trees binned by square source tiles (counting sort: histogram, exclusive scan, scatter), the
//! data structure of the cutoff gather on both backends.
//!
//! Tile corners are multiples of the tile size T (a power of two in metres), so they are exact in
//! f32 too; tree positions are stored relative to their tile's corner, which keeps f32 rounding
//! of large coordinates out of near-field distances (note §4.5).

use geofield_core::GridSpec;
use rayon::prelude::*;

use super::sources::Sources;

/// Trees of one species binned into `tiles_x × tiles_y` tiles of `tile_size_m`, tile t =
/// ty·tiles_x + tx covering u ∈ [origin_u + tx·T, +T), v ∈ [origin_v + ty·T, +T).
#[derive(Debug, Clone, PartialEq)]
pub struct Bins {
    pub tile_size_m: f64,
    pub tiles_x: usize,
    pub tiles_y: usize,
    pub origin_u_m: f64,
    pub origin_v_m: f64,
    /// Start of each tile's trees; length tiles + 1.
    pub tile_start: Vec<u32>,
    /// Tree position relative to its tile's corner, in [0, T).
    pub du: Vec<f64>,
    pub dv: Vec<f64>,
    pub w: Vec<f64>,
}

/// Whether a tree at (u, v) lies within `radius_m` of the grid rectangle (it may reach a cell).
pub(crate) fn reaches(grid: &GridSpec, radius_m: f64, u: f64, v: f64) -> bool {
    let (wm, hm) = (grid.width_m(), grid.height_m());
    let du = (0.0 - u).max(u - wm).max(0.0);
    let dv = (0.0 - v).max(v - hm).max(0.0);
    du * du + dv * dv <= radius_m * radius_m
}

/// The source tile size for a cutoff radius: the power of two in metres nearest R/2, at least the
/// cell size and 4 m (note §4.2 measured 32 m best for R = 40-90 m).
pub fn tile_size_for(radius_m: f64, cell_size_m: f64) -> f64 {
    let target = (radius_m / 2.0).max(cell_size_m).max(4.0);
    2f64.powi(target.log2().round() as i32)
}

impl Bins {
    /// The rectangle the bins of [`Bins::build_in`] cover: the grid's and that of the trees within
    /// `radius_m` of it, (u_lo, v_lo, u_hi, v_hi). Of trees held by several processes, the
    /// rectangles' union (min and max) is the whole stand's.
    pub fn frame(sources: &Sources, grid: &GridSpec, radius_m: f64) -> (f64, f64, f64, f64) {
        let (wm, hm) = (grid.width_m(), grid.height_m());
        (0..sources.len())
            .into_par_iter()
            .filter(|&i| reaches(grid, radius_m, sources.u[i], sources.v[i]))
            .map(|i| (sources.u[i], sources.v[i], sources.u[i], sources.v[i]))
            .reduce(
                || (0.0f64, 0.0f64, wm, hm),
                |a, b| (a.0.min(b.0), a.1.min(b.1), a.2.max(b.2), a.3.max(b.3)),
            )
    }

    /// Bin the trees that lie within `radius_m` of the grid rectangle (the others cannot reach
    /// any cell); the trees of each tile keep their input order. The tiles cover `frame` (from
    /// [`Bins::frame`]; `None`: these trees' own): a process holding some of the trees bins
    /// them in the whole stand's tiles.
    pub fn build_in(
        sources: &Sources,
        grid: &GridSpec,
        radius_m: f64,
        tile_size_m: f64,
        frame: Option<(f64, f64, f64, f64)>,
    ) -> Self {
        Self::bin(sources, grid, radius_m, tile_size_m, frame, true)
    }

    /// [`Bins::build_in`]'s tiles and their counts only (no trees): what
    /// [`Bins::visited_pairs`] and the tile ranges need.
    pub fn count_in(
        sources: &Sources,
        grid: &GridSpec,
        radius_m: f64,
        tile_size_m: f64,
        frame: Option<(f64, f64, f64, f64)>,
    ) -> Self {
        Self::bin(sources, grid, radius_m, tile_size_m, frame, false)
    }

    fn bin(
        sources: &Sources,
        grid: &GridSpec,
        radius_m: f64,
        tile_size_m: f64,
        frame: Option<(f64, f64, f64, f64)>,
        trees: bool,
    ) -> Self {
        let t = tile_size_m;
        // In parallel, in input order (rayon's collect keeps it).
        let keep: Vec<usize> = (0..sources.len())
            .into_par_iter()
            .filter(|&i| reaches(grid, radius_m, sources.u[i], sources.v[i]))
            .collect();
        let (u_lo, v_lo, u_hi, v_hi) =
            frame.unwrap_or_else(|| Self::frame(sources, grid, radius_m));
        let origin_u_m = (u_lo / t).floor() * t;
        let origin_v_m = (v_lo / t).floor() * t;
        let tiles_x = (((u_hi - origin_u_m) / t).floor() as usize + 1).max(1);
        let tiles_y = (((v_hi - origin_v_m) / t).floor() as usize + 1).max(1);
        let n_tiles = tiles_x * tiles_y;
        let tile_of = |i: usize| -> usize {
            let tx = (((sources.u[i] - origin_u_m) / t).floor() as usize).min(tiles_x - 1);
            let ty = (((sources.v[i] - origin_v_m) / t).floor() as usize).min(tiles_y - 1);
            ty * tiles_x + tx
        };
        let mut tile_start = vec![0u32; n_tiles + 1];
        let tiles: Vec<usize> = keep.par_iter().map(|&i| tile_of(i)).collect();
        for &tt in &tiles {
            tile_start[tt + 1] += 1;
        }
        for k in 0..n_tiles {
            tile_start[k + 1] += tile_start[k];
        }
        let mut next: Vec<u32> = tile_start[..n_tiles].to_vec();
        let n = if trees { keep.len() } else { 0 };
        let (mut du, mut dv, mut w) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
        for (j, &i) in keep.iter().enumerate().take(n) {
            let tt = tiles[j];
            let slot = next[tt] as usize;
            next[tt] += 1;
            let (tx, ty) = ((tt % tiles_x) as f64, (tt / tiles_x) as f64);
            du[slot] = sources.u[i] - (origin_u_m + tx * t);
            dv[slot] = sources.v[i] - (origin_v_m + ty * t);
            w[slot] = sources.w[i];
        }
        Bins {
            tile_size_m: t,
            tiles_x,
            tiles_y,
            origin_u_m,
            origin_v_m,
            tile_start,
            du,
            dv,
            w,
        }
    }

    /// Range of tile indices along one axis whose tiles can hold trees within `radius_m` of the
    /// interval [lo, hi] (grid-relative metres).
    pub fn tile_range(
        &self,
        lo: f64,
        hi: f64,
        radius_m: f64,
        origin: f64,
        count: usize,
    ) -> (usize, usize) {
        let t = self.tile_size_m;
        let a = ((lo - radius_m - origin) / t).floor().max(0.0) as usize;
        let b = ((hi + radius_m - origin) / t).floor();
        if b < 0.0 {
            return (1, 0);
        }
        (a, (b as usize).min(count.saturating_sub(1)))
    }

    /// Distance from tile (tx, ty) to the rectangle [u0, u1] × [v0, v1].
    pub fn tile_rect_distance(
        &self,
        tx: usize,
        ty: usize,
        u0: f64,
        u1: f64,
        v0: f64,
        v1: f64,
    ) -> f64 {
        let t = self.tile_size_m;
        let (a0, b0) = (
            self.origin_u_m + tx as f64 * t,
            self.origin_v_m + ty as f64 * t,
        );
        let du = (a0 - u1).max(u0 - (a0 + t)).max(0.0);
        let dv = (b0 - v1).max(v0 - (b0 + t)).max(0.0);
        (du * du + dv * dv).sqrt()
    }

    /// Estimated (tree, cell) pairs a tiled gather visits with output tiles of `out_tile` cells:
    /// the cost model of `auto`.
    pub fn visited_pairs(&self, grid: &GridSpec, radius_m: f64, out_tile: usize) -> f64 {
        let h = grid.cell_size_m;
        // Whole numbers below 2^53 add exactly in any order: rows of output tiles in parallel.
        let row_starts: Vec<usize> = (0..grid.rows).step_by(out_tile).collect();
        row_starts
            .into_par_iter()
            .map(|oty| {
                let mut pairs = 0.0;
                for otx in (0..grid.cols).step_by(out_tile) {
                    let ncols = out_tile.min(grid.cols - otx);
                    let nrows = out_tile.min(grid.rows - oty);
                    let (u0, u1) = (otx as f64 * h, (otx + ncols) as f64 * h);
                    let (v0, v1) = (oty as f64 * h, (oty + nrows) as f64 * h);
                    let (ax, bx) = self.tile_range(u0, u1, radius_m, self.origin_u_m, self.tiles_x);
                    let (ay, by) = self.tile_range(v0, v1, radius_m, self.origin_v_m, self.tiles_y);
                    let mut trees = 0usize;
                    for ty in ay..=by.min(self.tiles_y.saturating_sub(1)) {
                        for tx in ax..=bx.min(self.tiles_x.saturating_sub(1)) {
                            if ay > by || ax > bx {
                                continue;
                            }
                            if self.tile_rect_distance(tx, ty, u0, u1, v0, v1) <= radius_m {
                                let t = ty * self.tiles_x + tx;
                                trees += (self.tile_start[t + 1] - self.tile_start[t]) as usize;
                            }
                        }
                    }
                    pairs += (trees * ncols * nrows) as f64;
                }
                pairs
            })
            .sum()
    }
}

/// The cutoff's bins for `radius_m` (with the periodic images within it on a torus).
pub(crate) fn build_bins(grid: &GridSpec, sources: &Sources, radius_m: f64, torus: bool) -> Bins {
    build_bins_in(grid, sources, radius_m, torus, None)
}

/// [`build_bins`] in the whole stand's `frame` ([`Bins::build_in`]).
pub(crate) fn build_bins_in(
    grid: &GridSpec,
    sources: &Sources,
    radius_m: f64,
    torus: bool,
    frame: Option<(f64, f64, f64, f64)>,
) -> Bins {
    let images;
    let src = if torus {
        images = sources.with_periodic_images(grid.width_m(), grid.height_m(), radius_m);
        &images
    } else {
        sources
    };
    Bins::build_in(
        src,
        grid,
        radius_m,
        tile_size_for(radius_m, grid.cell_size_m),
        frame,
    )
}
