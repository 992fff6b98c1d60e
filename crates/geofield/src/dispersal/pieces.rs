//! A species' trees held in pieces by the processes of a run split by rows
//! ([`RowShare::trees`](super::RowShare::trees)): each process holds a contiguous run of the stand
//! in file order (its byte range of the stem map), the pieces in process order.
//!
//! What the methods need of the whole stand is combined over the pieces so that every process
//! gets the one-process value bit for bit: the number of trees (a sum of whole numbers), Σw
//! (an exact sum rounded once, [`geofield_core::ExactSum`]), the largest single-tree term (a
//! maximum), the rectangles of the far field and of the bins (minima and maxima), and the pairs
//! the cutoff visits (a sum of whole numbers below 2^53). Then each process receives the trees
//! its method needs, in file order: the cutoff, only those in the bins its rows visit (its rows
//! plus the radius, [`halo`]); the other methods, whose every cell sees every tree, all of them
//! ([`gather_all`]).

use std::ops::Range;

use rayon::prelude::*;

use geofield_core::{ExactSum, GridSpec};
use geofield_cuda::wind::Exchange;

use super::bins::{self, Bins};
use super::nearfar::{self, SourceStats};
use super::params::Kernel;
use super::radius;
use super::sources::Sources;

/// The whole stand's [`SourceStats`] and single-tree lower bound (see [`radius`]), from every
/// process's piece.
pub(super) fn combined(
    grid: &GridSpec,
    kernel: &Kernel,
    piece: &Sources,
    ex: &dyn Exchange,
) -> (SourceStats, f64) {
    let reg = nearfar::region(grid, piece);
    let lower = radius::max_lower_bound(grid, kernel, piece);
    let mine = [piece.len() as f64, lower, reg.0, reg.1, reg.2, reg.3];
    let all = ex.all_gather(&mine);
    let (mut n, mut low) = (0.0, 0.0f64);
    let mut region = reg;
    for p in all.chunks_exact(mine.len()) {
        n += p[0];
        low = low.max(p[1]);
        region = (
            region.0.min(p[2]),
            region.1.min(p[3]),
            region.2.max(p[4]),
            region.3.max(p[5]),
        );
    }
    // Every process's partials, merged exactly: the exact Σw, rounded once.
    let mut w = ExactSum::new();
    w.merge(&ex.all_gather(piece.weight_sum().partials()));
    let stats = SourceStats {
        n: n as usize,
        w_total: w.value(),
        region,
    };
    (stats, low)
}

/// The whole stand's [`Bins::frame`] for `radius_m`.
pub(super) fn frame(
    grid: &GridSpec,
    piece: &Sources,
    radius_m: f64,
    ex: &dyn Exchange,
) -> (f64, f64, f64, f64) {
    let f = Bins::frame(piece, grid, radius_m);
    let all = ex.all_gather(&[f.0, f.1, f.2, f.3]);
    all.chunks_exact(4).fold(f, |a, p| {
        (a.0.min(p[0]), a.1.min(p[1]), a.2.max(p[2]), a.3.max(p[3]))
    })
}

/// The bins of the near field within `radius_m` of this process's `rows` (its [`halo`]'s trees,
/// binned in the whole stand's frame: every cell of the rows visits the trees one process's bins
/// give it, in the same order) and the pairs the whole map's cells visit.
pub(super) fn near_bins(
    grid: &GridSpec,
    piece: &Sources,
    radius_m: f64,
    rows: &Range<usize>,
    ex: &dyn Exchange,
) -> (Bins, f64) {
    let f = frame(grid, piece, radius_m, ex);
    let counted = Bins::count_in(
        piece,
        grid,
        radius_m,
        bins::tile_size_for(radius_m, grid.cell_size_m),
        Some(f),
    );
    // Whole numbers below 2^53: the pieces' sum is the whole stand's in any order.
    let pairs = ex.sum(counted.visited_pairs(grid, radius_m, super::cutoff_cpu::OUT_TILE));
    let near = halo(grid, piece, &counted, radius_m, rows, ex);
    (
        bins::build_bins_in(grid, &near, radius_m, false, Some(f)),
        pairs,
    )
}

/// Every process's piece, on every process, in process order: the whole species' trees in file
/// order.
pub(super) fn gather_all(piece: &Sources, ex: &dyn Exchange) -> Sources {
    Sources {
        u: ex.all_gather(&piece.u),
        v: ex.all_gather(&piece.v),
        w: ex.all_gather(&piece.w),
    }
}

/// The trees the cutoff at `radius_m` needs for this process's rows (`rows`; every process
/// passes its own): those in the tiles of `binned` (this process's piece binned in the whole
/// stand's frame) whose rows of tiles lie within the radius of the rows, one row of tiles more
/// on each side, received from every process in process order: in file order.
pub(super) fn halo(
    grid: &GridSpec,
    piece: &Sources,
    binned: &Bins,
    radius_m: f64,
    rows: &Range<usize>,
    ex: &dyn Exchange,
) -> Sources {
    let h = grid.cell_size_m;
    let all_rows = ex.all_gather(&[rows.start as f64, rows.end as f64]);
    // Each process's rows of tiles (inclusive), or none.
    let wanted: Vec<Option<(usize, usize)>> = all_rows
        .chunks_exact(2)
        .map(|r| {
            let (r0, r1) = (r[0], r[1]);
            if r1 <= r0 {
                return None;
            }
            let (a, b) =
                binned.tile_range(r0 * h, r1 * h, radius_m, binned.origin_v_m, binned.tiles_y);
            (a <= b).then(|| (a.saturating_sub(1), b + 1))
        })
        .collect();
    let t = binned.tile_size_m;
    // Each tree's row of tiles (none for a tree that reaches no cell), in parallel.
    let tile_row: Vec<Option<usize>> = (0..piece.len())
        .into_par_iter()
        .map(|i| {
            let (u, v) = (piece.u[i], piece.v[i]);
            bins::reaches(grid, radius_m, u, v)
                .then(|| (((v - binned.origin_v_m) / t).floor() as usize).min(binned.tiles_y - 1))
        })
        .collect();
    // Per process, its trees in piece order (rayon's collect keeps it).
    let to: Vec<Vec<f64>> = wanted
        .iter()
        .map(|range| match *range {
            Some((a, b)) => (0..piece.len())
                .into_par_iter()
                .filter(|&i| tile_row[i].is_some_and(|ty| (a..=b).contains(&ty)))
                .flat_map_iter(|i| [piece.u[i], piece.v[i], piece.w[i]])
                .collect(),
            None => Vec::new(),
        })
        .collect();
    let got = ex.all_to_all(to);
    let mut s = Sources::default();
    for g in &got {
        s.u.par_extend(g.par_chunks_exact(3).map(|t| t[0]));
        s.v.par_extend(g.par_chunks_exact(3).map(|t| t[1]));
        s.w.par_extend(g.par_chunks_exact(3).map(|t| t[2]));
    }
    s
}
