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
        let tiles: Vec<usize> = keep.par_iter().map(|&i| tile_of(i)).collect();
        // Trees per tile: a count per thread's share, added, where the tiles are few enough
        // beside the trees for a count each (the same whole numbers either way).
        let threads = rayon::current_num_threads();
        let count = |c: &[usize]| {
            let mut h = vec![0u32; n_tiles];
            for &tt in c {
                h[tt] += 1;
            }
            h
        };
        let counts = if threads > 1 && n_tiles.saturating_mul(threads) <= 4 * tiles.len() {
            tiles
                .par_chunks(tiles.len().div_ceil(threads).max(1))
                .map(count)
                .reduce_with(|mut a, b| {
                    a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
                    a
                })
                .unwrap_or_else(|| vec![0; n_tiles])
        } else {
            count(&tiles)
        };
        let mut tile_start = vec![0u32; n_tiles + 1];
        for k in 0..n_tiles {
            tile_start[k + 1] = tile_start[k] + counts[k];
        }
        let (du, dv, w) = match trees {
            true => scatter(&keep, &tiles, &tile_start, |i, tt| {
                let (tx, ty) = ((tt % tiles_x) as f64, (tt / tiles_x) as f64);
                (
                    sources.u[i] - (origin_u_m + tx * t),
                    sources.v[i] - (origin_v_m + ty * t),
                    sources.w[i],
                )
            }),
            false => Default::default(),
        };
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

/// The counting sort's scatter: tree `keep[j]` (in tile `tiles[j]`) to the next slot of its
/// tile (`tile_start`), as `place(tree, tile)` gives its (du, dv, w). In parallel over runs of
/// tiles holding about equal numbers of trees, one per thread: each task owns its run's slots
/// and places its trees in input order (the serial scatter's result, however the tiles are
/// split).
fn scatter(
    keep: &[usize],
    tiles: &[usize],
    tile_start: &[u32],
    place: impl Fn(usize, usize) -> (f64, f64, f64) + Sync,
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (n, n_tiles) = (keep.len(), tile_start.len() - 1);
    let (mut du, mut dv, mut w) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
    let parts = if n < 1 << 16 {
        1
    } else {
        rayon::current_num_threads()
    };
    let mut cuts = vec![0usize];
    for p in 1..parts {
        let target = (n * p / parts) as u32;
        let tile = tile_start[..n_tiles].partition_point(|&s| s < target);
        if tile > *cuts.last().unwrap_or(&0) {
            cuts.push(tile);
        }
    }
    cuts.push(n_tiles);
    let mut runs = Vec::with_capacity(cuts.len());
    let (mut rest_u, mut rest_v, mut rest_w) = (&mut du[..], &mut dv[..], &mut w[..]);
    for c in cuts.windows(2) {
        let len = (tile_start[c[1]] - tile_start[c[0]]) as usize;
        let (u_run, u_rest) = std::mem::take(&mut rest_u).split_at_mut(len);
        let (v_run, v_rest) = std::mem::take(&mut rest_v).split_at_mut(len);
        let (w_run, w_rest) = std::mem::take(&mut rest_w).split_at_mut(len);
        runs.push((c[0]..c[1], u_run, v_run, w_run));
        (rest_u, rest_v, rest_w) = (u_rest, v_rest, w_rest);
    }
    runs.into_par_iter()
        .filter(|r| !r.1.is_empty())
        .for_each(|(range, ru, rv, rw)| {
            let base = tile_start[range.start];
            let mut next: Vec<u32> = tile_start[range.clone()].iter().map(|s| s - base).collect();
            for (&i, &tt) in keep.iter().zip(tiles) {
                if !range.contains(&tt) {
                    continue;
                }
                let slot = next[tt - range.start] as usize;
                next[tt - range.start] += 1;
                (ru[slot], rv[slot], rw[slot]) = place(i, tt);
            }
        });
    (du, dv, w)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The bins by the definition: every tree that reaches the grid, tile by tile in tile order
    /// and in input order within a tile, found by a scan per tile (no counting sort).
    fn by_definition(
        s: &Sources,
        g: &GridSpec,
        r: f64,
        t: f64,
    ) -> (Vec<u32>, Vec<f64>, Vec<f64>, Vec<f64>) {
        let b = Bins::count_in(s, g, r, t, None);
        let (mut start, mut du, mut dv, mut w) = (vec![0u32], Vec::new(), Vec::new(), Vec::new());
        let mut in_tile: Vec<Vec<usize>> = vec![Vec::new(); b.tiles_x * b.tiles_y];
        for i in 0..s.len() {
            if reaches(g, r, s.u[i], s.v[i]) {
                let tx = (((s.u[i] - b.origin_u_m) / t).floor() as usize).min(b.tiles_x - 1);
                let ty = (((s.v[i] - b.origin_v_m) / t).floor() as usize).min(b.tiles_y - 1);
                in_tile[ty * b.tiles_x + tx].push(i);
            }
        }
        for (k, trees) in in_tile.iter().enumerate() {
            let (tx, ty) = ((k % b.tiles_x) as f64, (k / b.tiles_x) as f64);
            for &i in trees {
                du.push(s.u[i] - (b.origin_u_m + tx * t));
                dv.push(s.v[i] - (b.origin_v_m + ty * t));
                w.push(s.w[i]);
            }
            start.push(du.len() as u32);
        }
        (start, du, dv, w)
    }

    /// The parallel counting sort (per-thread counts, the scatter split by runs of tiles) gives
    /// the bins of the definition, with 1 to 7 threads: the split never shows in the result.
    #[test]
    fn parallel_binning_is_the_definition() {
        let g = GridSpec::from_extent(
            geofield_core::Extent::new(0.0, 0.0, 640.0, 480.0).unwrap(),
            1.0,
        )
        .unwrap();
        // 200,000 trees (above the parallel scatter's 65,536), clustered so that runs of tiles
        // differ in size, some outside the grid (beyond the radius: dropped), with equal
        // positions repeated so that order within a tile matters.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut r = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut s = Sources::default();
        for k in 0..200_000 {
            let (u, v) = match k % 4 {
                0 => (r() * 800.0 - 80.0, r() * 640.0 - 80.0),
                1 => (100.0 + 30.0 * r(), 200.0 + 30.0 * r()),
                2 => (s.u[k - 2], s.v[k - 2]),
                _ => (r() * 640.0, r() * 480.0),
            };
            s.u.push(u);
            s.v.push(v);
            s.w.push(k as f64);
        }
        let (radius, tile) = (40.0, 16.0);
        let (start, du, dv, w) = by_definition(&s, &g, radius, tile);
        assert!(w.len() > 150_000 && w.len() < 200_000, "{}", w.len());
        for threads in [1, 2, 3, 7] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let (b, c) = pool.install(|| {
                (
                    Bins::build_in(&s, &g, radius, tile, None),
                    Bins::count_in(&s, &g, radius, tile, None),
                )
            });
            assert!(b.tile_start == start, "{threads} threads: tile starts");
            assert!(
                c.tile_start == start && c.w.is_empty(),
                "{threads} threads: counts"
            );
            assert!(
                b.du == du && b.dv == dv && b.w == w,
                "{threads} threads: trees"
            );
        }
    }
}
