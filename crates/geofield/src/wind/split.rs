//! The Sherman solve split by rows over several processes (MPI ranks: [`crate::mpi::Ranks`]
//! implements [`Exchange`]), for domains larger than one process's memory or to share the
//! solve's time.
//!
//! Each part holds a band of the domain's rows on the finest level and on every distributed
//! coarse level (the bands start at multiples of 2^m finest rows, so that rows pair up on
//! each of the m distributed levels exactly as in the whole domain, and restriction and
//! prolongation stay inside a band). Every smoothing half sweep, residual and operator
//! application first exchanges the band's first and last rows of φ with the neighbouring
//! bands (one halo row each side: the operator's stencil reaches one row). Below level m the
//! levels are small: every part gathers the whole level m (its operator once, its right-hand
//! side at every cycle) and runs the rest of the V-cycle itself, the same on every part, then
//! keeps its band of the correction.
//!
//! The arithmetic of every cell is the whole domain's (`Level`'s methods with a [`Halo`]):
//! the multigrid solver's V-cycles give the whole solve's φ bit for bit; MG-CG's dot products
//! add the parts' sums in part order, so its φ differs from the whole solve's by rounding
//! (within the tolerance, in the same number of iterations or one more or fewer). The stop
//! decisions (divergence, stall, cancel) are the same on every part.

use std::ops::Range;

use rayon::prelude::*;

use super::grid::WindGrid;
use super::level::{Halo, Level, columns_to_cells};
use super::multigrid::{self, Problem, SolveRun, Space, Work};
use super::ops::Coeffs;
use super::params::Solver;
use crate::GeofieldError;

/// What the split solve needs from the processes that hold the other bands (one copy of the
/// contract, shared with the device split in `geofield_cuda`); [`LocalParts`] runs the parts
/// as threads of one process.
pub use geofield_cuda::wind::{Exchange, LocalPart, LocalParts};

/// The number of levels of the whole domain's hierarchy (`Problem::new`'s rule: halve until
/// at most 2 × 2 columns).
fn level_count(mut rows: usize, mut cols: usize) -> usize {
    let mut n = 1;
    while rows.max(cols) > 2 {
        rows = rows.div_ceil(2);
        cols = cols.div_ceil(2);
        n += 1;
    }
    n
}

/// The distributed levels m and each part's band of finest rows: the largest m below the
/// coarsest level that leaves every part at least two units of 2^m rows; bands of whole
/// units as even as can be, the remainder rows to the last. m = 0: the domain is too small to
/// split (every part solves the whole).
pub fn plan_bands(rows: usize, cols: usize, parts: usize) -> (usize, Vec<Range<usize>>) {
    let parts = parts.max(1);
    let levels = level_count(rows, cols);
    let mut m = 0;
    while m + 1 < levels && (rows >> (m + 1)) >= 2 * parts {
        m += 1;
    }
    if m == 0 || parts == 1 {
        return (0, vec![0..rows; parts]);
    }
    let units = rows >> m;
    let at = |p: usize| {
        if p == parts {
            rows
        } else {
            (units * p / parts) << m
        }
    };
    (m, (0..parts).map(|p| at(p)..at(p + 1)).collect())
}

/// One part's bands and the gathered coarse levels.
struct Split<'a> {
    ex: &'a dyn Exchange,
    /// This part's band of levels 0..=m (level m's only gives the shapes of the gather).
    bands: Vec<Level>,
    work: Work,
    /// The whole levels m.. (the same on every part) and their work vectors.
    coarse: Vec<Level>,
    coarse_work: Work,
    /// Where this part's band of level m lies in the whole level m's vectors.
    coarse_range: Range<usize>,
    inv_vol: Vec<f64>,
}

impl Split<'_> {
    /// The halo rows of `v` on band level `l`.
    fn halo(&self, l: usize, v: &[f64]) -> (Option<Vec<f64>>, Option<Vec<f64>>) {
        let line = self.bands[l].cols * self.bands[l].nz;
        self.ex.halo(&v[..line], &v[v.len() - line..])
    }

    fn relax(&mut self, l: usize, x: &mut [f64], b: &[f64], colour: usize, s: &mut [f64]) {
        let (north, south) = self.halo(l, x);
        let halo = Halo {
            north: north.as_deref(),
            south: south.as_deref(),
        };
        self.bands[l].line_relax_with(x, halo, b, colour, s);
    }

    /// x = V(b) on band level `l` (b in `work.b[l]`, result in `work.x[l]`), from x = 0:
    /// `multigrid::vcycle`'s steps with the halos exchanged.
    fn vcycle(&mut self, l: usize) {
        let m = self.bands.len() - 1;
        if l == m {
            let whole_b = self.ex.all_gather(&self.work.b[m]);
            self.coarse_work.b[0] = whole_b;
            multigrid::vcycle(&self.coarse, 0, &mut self.coarse_work);
            let x = &self.coarse_work.x[0][self.coarse_range.clone()];
            self.work.x[m].copy_from_slice(x);
            return;
        }
        let mut x = std::mem::take(&mut self.work.x[l]);
        let b = std::mem::take(&mut self.work.b[l]);
        let mut scratch = std::mem::take(&mut self.work.scratch[l]);
        x.fill(0.0);
        for _ in 0..multigrid::SMOOTH {
            self.relax(l, &mut x, &b, 0, &mut scratch);
            self.relax(l, &mut x, &b, 1, &mut scratch);
        }
        let mut r = std::mem::take(&mut self.work.r[l]);
        self.residual_on(l, &x, &b, &mut r);
        let mut next_b = std::mem::take(&mut self.work.b[l + 1]);
        self.bands[l].restrict(&r, &self.bands[l + 1], &mut next_b);
        self.work.b[l + 1] = next_b;
        self.work.r[l] = r;
        self.vcycle(l + 1);
        self.bands[l].prolong_add(&self.bands[l + 1], &self.work.x[l + 1], &mut x);
        for _ in 0..multigrid::SMOOTH {
            self.relax(l, &mut x, &b, 1, &mut scratch);
            self.relax(l, &mut x, &b, 0, &mut scratch);
        }
        self.work.x[l] = x;
        self.work.b[l] = b;
        self.work.scratch[l] = scratch;
    }

    fn residual_on(&self, l: usize, phi: &[f64], b: &[f64], r: &mut [f64]) {
        let (north, south) = self.halo(l, phi);
        let halo = Halo {
            north: north.as_deref(),
            south: south.as_deref(),
        };
        self.bands[l].residual_with(phi, halo, b, r);
    }
}

impl Space for Split<'_> {
    fn residual(&mut self, phi: &[f64], b: &[f64], r: &mut [f64]) {
        self.residual_on(0, phi, b, r);
    }

    fn apply(&mut self, p: &[f64], out: &mut [f64]) {
        let (north, south) = self.halo(0, p);
        let halo = Halo {
            north: north.as_deref(),
            south: south.as_deref(),
        };
        self.bands[0].apply_with(p, halo, out);
    }

    fn precondition(&mut self, r: &[f64], z: &mut [f64]) {
        self.work.b[0].copy_from_slice(r);
        self.vcycle(0);
        z.copy_from_slice(&self.work.x[0]);
    }

    fn max_div(&mut self, r: &[f64]) -> f64 {
        let mine = r
            .par_iter()
            .zip(self.inv_vol.par_iter())
            .map(|(r, iv)| (r * iv).abs())
            .reduce(|| 0.0, f64::max);
        self.ex.max(mine)
    }

    fn dot(&mut self, a: &[f64], b: &[f64]) -> f64 {
        let mine: f64 = a.par_iter().zip(b.par_iter()).map(|(x, y)| x * y).sum();
        // The parts' sums added in part order: the same bits on every part.
        self.ex.all_gather(&[mine]).iter().sum()
    }

    fn any(&mut self, stop: bool) -> bool {
        self.ex.max(if stop { 1.0 } else { 0.0 }) > 0.0
    }
}

/// Solves A'φ = b' (the Sherman problem of `grid`, `coeffs` and the first guess's divergence
/// `div0`, cell order) split by rows over the parts `ex` connects, each part calling this with
/// the same inputs; `solver` is multigrid or MG-CG. Returns, on every part, the whole φ in
/// cell order (`run.phi`, `cell_order`), the history and the stop, the same on every part.
/// `stop(iteration, max |div|)` is asked at every check (any part asking stops every part).
#[allow(clippy::too_many_arguments)]
pub(crate) fn solve(
    grid: &WindGrid,
    coeffs: &Coeffs,
    div0: &[f64],
    solver: Solver,
    max_iterations: usize,
    threshold: f64,
    ex: &dyn Exchange,
    mut stop: impl FnMut(usize, f64) -> bool,
) -> Result<SolveRun, GeofieldError> {
    if solver == Solver::Sor {
        return Err(GeofieldError::Unsupported(
            "the split wind solve runs the multigrid and MG-CG solvers, not SOR".into(),
        ));
    }
    let (rows, cols, nz) = (grid.rows(), grid.cols(), grid.nz);
    let (m, bands) = plan_bands(rows, cols, ex.parts());
    if m == 0 {
        // Too few rows to split: every part solves the whole domain (the same run).
        let problem = Problem::new(grid, coeffs, div0);
        let mut run = multigrid::solve(
            &problem,
            solver,
            1.0,
            max_iterations,
            threshold,
            1,
            |it, d| {
                let stops = stop(it, d);
                match ex.max(if stops { 1.0 } else { 0.0 }) > 0.0 {
                    true => std::ops::ControlFlow::Break(()),
                    false => std::ops::ControlFlow::Continue(()),
                }
            },
        )?;
        run.phi = problem.to_cells(&std::mem::take(&mut run.phi));
        run.cell_order = true;
        return Ok(run);
    }
    let band = bands[ex.part()].clone();
    let (finest, inv_vol, b) = Problem::band(grid, coeffs, div0, band.clone());
    let mut levels = vec![finest];
    for _ in 0..m {
        let next = levels[levels.len() - 1].coarsen();
        levels.push(next);
    }
    // The whole level m from every band's, then its coarser levels, on every part.
    let level_m = &levels[m];
    let shape = |l: &Level| [l.kx.len(), l.ky.len(), l.kz.len(), l.row_w.len()];
    let mut mine = Vec::new();
    for v in [&level_m.kx, &level_m.ky, &level_m.kz] {
        mine.extend_from_slice(v);
    }
    mine.extend(level_m.row_w.iter().map(|&w| f64::from(w)));
    let sizes = ex.all_gather(&shape(level_m).map(|s| s as f64));
    let all = ex.all_gather(&mine);
    let mut joined = Vec::with_capacity(ex.parts());
    let mut at = 0;
    for s in sizes.chunks_exact(4) {
        let [kx, ky, kz, rw] = [s[0], s[1], s[2], s[3]].map(|x| x as usize);
        let mut take = |n: usize| {
            let v = all[at..at + n].to_vec();
            at += n;
            v
        };
        let (kx, ky, kz) = (take(kx), take(ky), take(kz));
        let row_w = take(rw).into_iter().map(|w| w as u32).collect();
        joined.push(Level {
            rows: rw,
            cols: level_m.cols,
            nz,
            kx,
            ky,
            kz,
            diag: Vec::new(),
            col_w: level_m.col_w.clone(),
            row_w,
            part: None,
        });
    }
    let first_m = joined[..ex.part()].iter().map(|l| l.rows).sum::<usize>();
    let mut coarse = vec![Level::join(&joined)];
    drop(joined);
    while {
        let last = &coarse[coarse.len() - 1];
        last.rows.max(last.cols) > 2
    } {
        let next = coarse[coarse.len() - 1].coarsen();
        coarse.push(next);
    }
    let line_m = level_m.cols * nz;
    let coarse_range = first_m * line_m..(first_m + level_m.rows) * line_m;
    let mut split = Split {
        ex,
        work: Work::new(&levels),
        bands: levels,
        coarse_work: Work::new(&coarse),
        coarse,
        coarse_range,
        inv_vol,
    };
    let mut run = SolveRun {
        phi: vec![0.0; b.len()],
        ..Default::default()
    };
    let d0 = split.max_div(&b);
    run.history.push((0, d0));
    if d0 > threshold {
        multigrid::solve_mg(
            &mut split,
            solver,
            max_iterations,
            threshold,
            &b,
            b.clone(),
            &mut run,
            stop,
        );
    } else {
        run.converged = true;
    }
    // The whole φ on every part: the bands in order are the whole column layout.
    let whole = ex.all_gather(&run.phi);
    run.phi = columns_to_cells(rows * cols, nz, &whole);
    run.cell_order = true;
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bands_are_whole_units_and_cover_the_rows() {
        for (rows, cols) in [(99, 72), (512, 512), (1000, 37), (40, 40), (7, 300)] {
            for parts in 1..=6 {
                let (m, bands) = plan_bands(rows, cols, parts);
                assert_eq!(bands.len(), parts);
                assert_eq!(bands[0].start, 0);
                assert_eq!(bands[parts - 1].end, rows);
                if m == 0 {
                    continue;
                }
                assert!(m < level_count(rows, cols));
                for w in bands.windows(2) {
                    assert_eq!(w[0].end, w[1].start);
                }
                for b in &bands {
                    assert_eq!(b.start % (1 << m), 0, "{rows} {parts} {bands:?}");
                    assert!(b.len() >= 2 << m, "{rows} {parts} {bands:?}");
                }
            }
        }
        // Enough rows always split.
        assert!(plan_bands(512, 512, 4).0 >= 6);
    }
}
