//! Establishment: seeds become seedlings (SORTIE-ND's `Establishment`, with an optional
//! suitability layer standing in for its substrate and light behaviours).
//!
//! In every cell of the seed grid, each of the n seeds of species s that landed there becomes a
//! seedling with probability p = p_s × q(cell), p_s the species' establishment probability and
//! q ∈ [0, 1] an optional suitability raster (1 without one). The seedlings of a cell are
//! Binomial(n, p) ([`Stream::binomial`]), drawn from the cell's stream (purpose
//! [`Purpose::Establishment`], id = the cell), and each stands at a uniform random position in
//! its cell with the species' seedling DBH. New trees come in cell order (row-major from the
//! north-west) and take consecutive ids, so the result is the same for any thread count.

use geofield_core::GridSpec;
use rayon::prelude::*;

use super::rng::{Purpose, Stream};
use super::trees::Trees;

/// The seedlings of species `species` this `year` from the seed `counts` (one per cell of
/// `grid`, row-major) with establishment probability `p` and the optional per-cell
/// `suitability` (values outside [0, 1] are clamped; NaN counts as 0). The new trees have
/// DBH `seedling_dbh_cm` and ids from `first_id`.
#[allow(clippy::too_many_arguments)]
pub fn establish(
    grid: &GridSpec,
    counts: &[u32],
    p: f64,
    suitability: Option<&[f32]>,
    seedling_dbh_cm: f64,
    seed: u64,
    year: u32,
    species: u8,
    first_id: u64,
) -> Trees {
    establish_rows(
        grid,
        0..grid.rows,
        counts,
        p,
        suitability,
        seedling_dbh_cm,
        seed,
        year,
        species,
        first_id,
    )
}

/// [`establish`] on grid rows `rows` only: `counts` holds those rows' cells (row-major from
/// the band's first row); `suitability`, when given, the whole grid's. Every cell draws from
/// its own stream (its index in the whole grid), so the bands of a split run establish, in row
/// order, exactly the trees of the whole grid (their ids aside: the caller numbers them).
#[allow(clippy::too_many_arguments)]
pub fn establish_rows(
    grid: &GridSpec,
    rows: std::ops::Range<usize>,
    counts: &[u32],
    p: f64,
    suitability: Option<&[f32]>,
    seedling_dbh_cm: f64,
    seed: u64,
    year: u32,
    species: u8,
    first_id: u64,
) -> Trees {
    let h = grid.cell_size_m;
    let first = rows.start;
    let rows: Vec<Vec<(f64, f64)>> = rows
        .into_par_iter()
        .map(|r| {
            let mut out = Vec::new();
            for c in 0..grid.cols {
                let cell = r * grid.cols + c;
                let n = counts[(r - first) * grid.cols + c];
                if n == 0 {
                    continue;
                }
                let q = suitability.map_or(1.0, |s| {
                    let v = f64::from(s[cell]);
                    if v.is_nan() { 0.0 } else { v.clamp(0.0, 1.0) }
                });
                let mut s = Stream::new(seed, year, species, cell as u64, Purpose::Establishment);
                let k = s.binomial(u64::from(n), p * q);
                let x0 = grid.x_min_m + c as f64 * h;
                let y1 = grid.y_max_m - r as f64 * h;
                for _ in 0..k {
                    out.push((x0 + s.uniform() * h, y1 - s.uniform() * h));
                }
            }
            out
        })
        .collect();
    let n: usize = rows.iter().map(Vec::len).sum();
    let mut xy = Vec::with_capacity(2 * n);
    for (x, y) in rows.into_iter().flatten() {
        xy.push(x);
        xy.push(y);
    }
    seedlings(&xy, seedling_dbh_cm, species, first_id)
}

/// New seedlings of `species` at the positions `xy` (x, y pairs in order) with DBH
/// `seedling_dbh_cm` and consecutive ids from `first_id`.
pub fn seedlings(xy: &[f64], seedling_dbh_cm: f64, species: u8, first_id: u64) -> Trees {
    let n = xy.len() / 2;
    Trees {
        x_m: xy.iter().step_by(2).copied().collect(),
        y_m: xy.iter().skip(1).step_by(2).copied().collect(),
        dbh_cm: vec![seedling_dbh_cm; n],
        species: vec![u32::from(species); n],
        id: (first_id..first_id + n as u64).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use geofield_core::Extent;

    /// p = 1 keeps every seed, in its own cell; p = 0 none; a suitability of 0.5 halves the
    /// mean (binomial, 5 sd); ids are consecutive from `first_id`.
    #[test]
    fn seedlings_are_binomial_and_stay_in_their_cell() {
        let grid =
            GridSpec::from_extent(Extent::new(10.0, 20.0, 30.0, 30.0).unwrap(), 2.0).unwrap();
        let counts: Vec<u32> = (0..grid.n_cells() as u32).map(|i| i % 7).collect();
        let all = establish(&grid, &counts, 1.0, None, 0.1, 1, 3, 2, 100);
        let total: u32 = counts.iter().sum();
        assert_eq!(all.len(), total as usize);
        assert_eq!(all.id.first(), Some(&100));
        assert_eq!(all.id.last(), Some(&(100 + u64::from(total) - 1)));
        assert!(all.species.iter().all(|&s| s == 2) && all.dbh_cm.iter().all(|&d| d == 0.1));
        // Cell by cell: as many trees in each cell as seeds.
        let mut seen = vec![0u32; grid.n_cells()];
        for i in 0..all.len() {
            let (r, c) = grid.cell_of(all.x_m[i], all.y_m[i]).unwrap();
            seen[r * grid.cols + c] += 1;
        }
        assert_eq!(seen, counts);
        assert!(establish(&grid, &counts, 0.0, None, 0.1, 1, 3, 2, 0).is_empty());
        // A band of rows gives the whole grid's trees of those rows, in order.
        let rows = 2..4;
        let band = &counts[rows.start * grid.cols..rows.end * grid.cols];
        let part = establish_rows(&grid, rows.clone(), band, 0.7, None, 0.1, 1, 3, 2, 0);
        let whole = establish(&grid, &counts, 0.7, None, 0.1, 1, 3, 2, 0);
        let inside: Vec<(f64, f64)> = (0..whole.len())
            .filter(|&i| rows.contains(&grid.cell_of(whole.x_m[i], whole.y_m[i]).unwrap().0))
            .map(|i| (whole.x_m[i], whole.y_m[i]))
            .collect();
        assert!(!inside.is_empty());
        assert_eq!(
            part.x_m
                .iter()
                .copied()
                .zip(part.y_m.iter().copied())
                .collect::<Vec<_>>(),
            inside
        );
        let big = vec![40u32; grid.n_cells()];
        let half = vec![0.5f32; grid.n_cells()];
        let n = establish(&grid, &big, 0.6, Some(&half), 0.1, 9, 1, 0, 0).len() as f64;
        let trials = 40.0 * grid.n_cells() as f64;
        let (mean, sd) = (trials * 0.3, (trials * 0.3 * 0.7).sqrt());
        assert!((n - mean).abs() < 5.0 * sd, "{n} vs {mean} ± {sd}");
    }
}
