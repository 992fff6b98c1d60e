//! Solvers of Sherman's problem A'φ = b' (volume-weighted, symmetric positive definite):
//! geometric multigrid V-cycles, CG preconditioned by one V-cycle, and red-black SOR.
//!
//! Multigrid: z-line Gauss–Seidel smoothing (each column solved exactly, columns in a
//! checkerboard), horizontal semicoarsening ([`Level::coarsen`]) down to at most 2 × 2
//! columns, residuals summed over 2 × 2 blocks, corrections prolonged piecewise constant.
//! Coarse boundary faces keep φ = 0 half a finest column outside the domain on every level
//! ([`Level::coarsen`]): with plain halving that point drifted outward level by level, and
//! 512² × 128 converged at ~0.4 per cycle; now ~0.05–0.1. (Bilinear prolongation with its
//! transpose as the restriction was tried too and converged more slowly than this.)
//! Pre-smoothing runs the colours (0, 1) and post-smoothing (1, 0), so the cycle is a
//! symmetric operator and can precondition CG. Line smoothing in z is what makes this robust
//! when Δz ≪ Δx (vertical coupling (αΔx/Δz)² times the horizontal).
//!
//! The stop test is on the divergence: max over fluid cells of |r'_c| / V_c ≤ threshold, where
//! r' = b' − A'φ; CG checks its recurrence residual and confirms with the true one. A solve
//! that stops contracting stops early (`geofield_cuda::wind::stall`, the rule the device's
//! solvers share): V-cycles and CG iterations must gain 2× over 3 checks, SOR 1 % over 1000
//! sweeps.

use geofield_cuda::wind::stall::{Stall, StallRule};
use rayon::prelude::*;

use super::grid::WindGrid;
use super::level::Level;
use super::ops::Coeffs;
use super::params::Solver;
use super::sor;
use crate::GeofieldError;
use crate::cancel::Proceed;

/// Smoothing sweeps (each both colours) before and after the coarse correction.
pub const SMOOTH: usize = 2;
/// Sweeps on the coarsest level.
pub const COARSEST_SWEEPS: usize = 40;

/// The assembled problem and its multigrid hierarchy.
#[derive(Debug, Clone)]
pub struct Problem {
    /// Finest first.
    pub levels: Vec<Level>,
    /// 1/V_c for fluid cells (V_c = max(θ, floor) Δx² Δz with cut cells), 0 for solid ones
    /// (column layout).
    pub inv_vol: Vec<f64>,
    /// b' = V · div u0 (column layout).
    pub b: Vec<f64>,
}

impl Problem {
    /// `div0` is the divergence of the first guess in cell order.
    pub fn new(grid: &WindGrid, coeffs: &Coeffs, div0: &[f64]) -> Self {
        let (finest, inv_vol, b) = Self::band(grid, coeffs, div0, 0..grid.rows());
        let mut levels = vec![finest];
        loop {
            let last = &levels[levels.len() - 1];
            if last.rows.max(last.cols) <= 2 {
                break;
            }
            levels.push(last.coarsen());
        }
        Self { levels, inv_vol, b }
    }

    /// Rows `band` of the finest level, with their 1/V and b' (column layout).
    pub(crate) fn band(
        grid: &WindGrid,
        coeffs: &Coeffs,
        div0: &[f64],
        band: std::ops::Range<usize>,
    ) -> (Level, Vec<f64>, Vec<f64>) {
        // Cut cells: conductances through the open parts of the faces, volumes max(θ, floor) V
        // (`ops::divergence`'s), so that r/V is the divergence there too.
        let r0 = band.start;
        let finest = Level::finest_rows(grid, &coeffs.operator(grid), band);
        let (cols, nz) = (grid.cols(), grid.nz);
        let mut inv_vol = vec![0.0; finest.n()];
        let mut b = vec![0.0; finest.n()];
        let area = grid.dx_m() * grid.dx_m();
        inv_vol
            .par_chunks_mut(cols * nz)
            .zip(b.par_chunks_mut(cols * nz))
            .enumerate()
            .for_each(|(row, (iv, bl))| {
                let row = r0 + row;
                for col in 0..cols {
                    for k in grid.ground_k[row * cols + col] as usize..nz {
                        let vol = area * grid.dz_m(k) * grid.div_fraction(grid.cell(k, row, col));
                        iv[col * nz + k] = 1.0 / vol;
                        bl[col * nz + k] = vol * div0[grid.cell(k, row, col)];
                    }
                }
            });
        (finest, inv_vol, b)
    }

    /// max_c |r_c| / V_c over fluid cells: the divergence (s⁻¹) of the field φ gives when
    /// `r = b − A'φ`.
    pub fn max_div(&self, r: &[f64]) -> f64 {
        r.par_iter()
            .zip(self.inv_vol.par_iter())
            .map(|(r, iv)| (r * iv).abs())
            .reduce(|| 0.0, f64::max)
    }

    /// φ from column layout to cell order.
    pub fn to_cells(&self, phi: &[f64]) -> Vec<f64> {
        self.levels[0].to_cells(phi)
    }
}

/// What a solver did.
#[derive(Debug, Clone, Default)]
pub struct SolveRun {
    /// φ in column layout, or in cell order when `cell_order` (the GPU's).
    pub phi: Vec<f64>,
    pub cell_order: bool,
    pub iterations: usize,
    pub history: Vec<(usize, f64)>,
    pub converged: bool,
    /// Why an unconverged solve stopped before its iteration cap.
    pub stall: Option<Stall>,
}

/// Per level: right-hand side, solution, residual, smoother scratch.
pub(crate) struct Work {
    pub(crate) b: Vec<Vec<f64>>,
    pub(crate) x: Vec<Vec<f64>>,
    pub(crate) r: Vec<Vec<f64>>,
    pub(crate) scratch: Vec<Vec<f64>>,
}

impl Work {
    pub(crate) fn new(levels: &[Level]) -> Self {
        let z = |l: &Level| vec![0.0; l.n()];
        Self {
            b: levels.iter().map(z).collect(),
            x: levels.iter().map(z).collect(),
            r: levels.iter().map(z).collect(),
            scratch: levels.iter().map(z).collect(),
        }
    }
}

/// x = V(b) on level `l` (b in `work.b[l]`, result in `work.x[l]`), starting from x = 0.
pub(crate) fn vcycle(levels: &[Level], l: usize, work: &mut Work) {
    let level = &levels[l];
    let mut x = std::mem::take(&mut work.x[l]);
    let b = std::mem::take(&mut work.b[l]);
    let mut scratch = std::mem::take(&mut work.scratch[l]);
    x.fill(0.0);
    if l + 1 == levels.len() {
        for _ in 0..COARSEST_SWEEPS {
            level.line_relax(&mut x, &b, 0, &mut scratch);
            level.line_relax(&mut x, &b, 1, &mut scratch);
        }
    } else {
        for _ in 0..SMOOTH {
            level.line_relax(&mut x, &b, 0, &mut scratch);
            level.line_relax(&mut x, &b, 1, &mut scratch);
        }
        let mut r = std::mem::take(&mut work.r[l]);
        level.residual(&x, &b, &mut r);
        level.restrict(&r, &levels[l + 1], &mut work.b[l + 1]);
        work.r[l] = r;
        vcycle(levels, l + 1, work);
        level.prolong_add(&levels[l + 1], &work.x[l + 1], &mut x);
        for _ in 0..SMOOTH {
            level.line_relax(&mut x, &b, 1, &mut scratch);
            level.line_relax(&mut x, &b, 0, &mut scratch);
        }
    }
    work.x[l] = x;
    work.b[l] = b;
    work.scratch[l] = scratch;
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.par_iter().zip(b.par_iter()).map(|(x, y)| x * y).sum()
}

/// What the multigrid solvers need of a problem: the whole domain's ([`Whole`]) or a band's
/// of rows whose neighbours other processes hold (`wind::split`). Vectors are this part's
/// cells in column layout; what the parts decide (the divergence, dot products, stopping)
/// comes out the same on every part.
pub(crate) trait Space {
    /// r = b − A'φ.
    fn residual(&mut self, phi: &[f64], b: &[f64], r: &mut [f64]);
    /// out = A'p.
    fn apply(&mut self, p: &[f64], out: &mut [f64]);
    /// z = one V-cycle on r from zero.
    fn precondition(&mut self, r: &[f64], z: &mut [f64]);
    /// max |r_c| / V_c over every part's fluid cells.
    fn max_div(&mut self, r: &[f64]) -> f64;
    /// a · b over every part.
    fn dot(&mut self, a: &[f64], b: &[f64]) -> f64;
    /// Whether any part asks to stop.
    fn any(&mut self, stop: bool) -> bool;
}

/// The whole domain in this process.
pub(crate) struct Whole<'a> {
    pub(crate) problem: &'a Problem,
    work: Work,
}

impl<'a> Whole<'a> {
    pub(crate) fn new(problem: &'a Problem) -> Self {
        Self {
            problem,
            work: Work::new(&problem.levels),
        }
    }

    /// One V-cycle from zero on `b` (the coarse levels of a split solve, gathered).
    pub(crate) fn vcycle(&mut self, b: &[f64]) -> &[f64] {
        self.work.b[0].copy_from_slice(b);
        vcycle(&self.problem.levels, 0, &mut self.work);
        &self.work.x[0]
    }
}

impl Space for Whole<'_> {
    fn residual(&mut self, phi: &[f64], b: &[f64], r: &mut [f64]) {
        self.problem.levels[0].residual(phi, b, r);
    }

    fn apply(&mut self, p: &[f64], out: &mut [f64]) {
        self.problem.levels[0].apply(p, out);
    }

    fn precondition(&mut self, r: &[f64], z: &mut [f64]) {
        z.copy_from_slice(self.vcycle(r));
    }

    fn max_div(&mut self, r: &[f64]) -> f64 {
        self.problem.max_div(r)
    }

    fn dot(&mut self, a: &[f64], b: &[f64]) -> f64 {
        dot(a, b)
    }

    fn any(&mut self, stop: bool) -> bool {
        stop
    }
}

/// Records a check of the V-cycles or CG; whether the solve ends there: `asked` to stop,
/// converged (max|div| `d` ≤ `threshold`), or stalled.
fn record(run: &mut SolveRun, it: usize, d: f64, threshold: f64, asked: bool) -> bool {
    run.history.push((it, d));
    if asked {
        return true;
    }
    if d <= threshold {
        run.converged = true;
        return true;
    }
    if let Some(s) = StallRule::CYCLES.check(&run.history) {
        run.stall = Some(s);
        return true;
    }
    false
}

/// Multigrid V-cycles or MG-preconditioned CG on `space` from φ = `run.phi` with residual `r`
/// (= b), until max|div| ≤ `threshold`, `max_iterations`, a stall, or `stop(iteration,
/// max|div|)` (asked at every check; on every part alike).
#[allow(clippy::too_many_arguments)]
pub(crate) fn solve_mg(
    space: &mut impl Space,
    solver: Solver,
    max_iterations: usize,
    threshold: f64,
    b: &[f64],
    mut r: Vec<f64>,
    run: &mut SolveRun,
    mut stop: impl FnMut(usize, f64) -> bool,
) {
    let n = r.len();
    let mut z = vec![0.0; n];
    let mut stops = |space: &mut _, it, d| {
        let s = stop(it, d);
        Space::any(space, s)
    };
    if solver == Solver::Multigrid {
        for it in 1..=max_iterations {
            space.precondition(&r, &mut z);
            run.phi
                .par_iter_mut()
                .zip(z.par_iter())
                .for_each(|(p, e)| *p += e);
            space.residual(&run.phi, b, &mut r);
            let d = space.max_div(&r);
            run.iterations = it;
            let asked = stops(space, it, d);
            if record(run, it, d, threshold, asked) {
                break;
            }
        }
        return;
    }
    space.precondition(&r, &mut z);
    let mut p = z.clone();
    let mut rz = space.dot(&r, &z);
    let mut ap = vec![0.0; n];
    for it in 1..=max_iterations {
        space.apply(&p, &mut ap);
        let pap = space.dot(&p, &ap);
        if pap.is_nan() || pap <= 0.0 {
            // No direction left to move along (the residual is at the rounding level,
            // or the operator lost definiteness): nothing would change any more.
            run.stall = Some(Stall::Stagnated);
            break;
        }
        let a = rz / pap;
        run.phi
            .par_iter_mut()
            .zip(p.par_iter())
            .for_each(|(x, p)| *x += a * p);
        r.par_iter_mut()
            .zip(ap.par_iter())
            .for_each(|(r, q)| *r -= a * q);
        run.iterations = it;
        let mut d = space.max_div(&r);
        if d <= threshold {
            // Confirm with the true residual; restart from it if rounding drifted.
            space.residual(&run.phi, b, &mut r);
            d = space.max_div(&r);
            let asked = stops(space, it, d);
            if record(run, it, d, threshold, asked) {
                break;
            }
            space.precondition(&r, &mut z);
            p.copy_from_slice(&z);
            rz = space.dot(&r, &z);
            continue;
        }
        // d > threshold here: only a stall or a stop ends the solve.
        let asked = stops(space, it, d);
        if record(run, it, d, threshold, asked) {
            break;
        }
        space.precondition(&r, &mut z);
        let rz_new = space.dot(&r, &z);
        let beta = rz_new / rz;
        rz = rz_new;
        p.par_iter_mut()
            .zip(z.par_iter())
            .for_each(|(p, z)| *p = z + beta * *p);
    }
}

/// Solve A'φ = b' from φ = 0 until max|div| ≤ `threshold` or `max_iterations`.
/// `progress(iteration, max|div|)` is called at every check; when it returns
/// [`ControlFlow::Break`](std::ops::ControlFlow::Break) (a [`crate::Cancel`]) the solve stops there.
pub fn solve<R: Proceed>(
    problem: &Problem,
    solver: Solver,
    omega: f64,
    max_iterations: usize,
    threshold: f64,
    check_every: usize,
    mut progress: impl FnMut(usize, f64) -> R,
) -> Result<SolveRun, GeofieldError> {
    let fine = &problem.levels[0];
    let n = fine.n();
    let b = &problem.b;
    let mut run = SolveRun {
        phi: vec![0.0; n],
        ..Default::default()
    };
    let d0 = problem.max_div(b);
    run.history.push((0, d0));
    if d0 <= threshold {
        run.converged = true;
        return Ok(run);
    }
    let mut r = b.clone();
    match solver {
        Solver::Sor => {
            let mut scratch = vec![0.0; n];
            let check = check_every.max(1);
            let sor_rule = StallRule::sweeps(check);
            for it in 1..=max_iterations {
                sor::half_sweep(fine, &mut run.phi, b, 1, omega, &mut scratch);
                sor::half_sweep(fine, &mut run.phi, b, 0, omega, &mut scratch);
                run.iterations = it;
                if it % check == 0 || it == max_iterations {
                    fine.residual(&run.phi, b, &mut r);
                    let d = problem.max_div(&r);
                    run.history.push((it, d));
                    if progress(it, d).stops() {
                        break;
                    }
                    if d <= threshold {
                        run.converged = true;
                        break;
                    }
                    if let Some(s) = sor_rule.check(&run.history) {
                        run.stall = Some(s);
                        break;
                    }
                }
            }
        }
        Solver::Multigrid | Solver::MgCg => {
            let mut space = Whole::new(problem);
            solve_mg(
                &mut space,
                solver,
                max_iterations,
                threshold,
                b,
                r,
                &mut run,
                |it, d| progress(it, d).stops(),
            );
        }
    }
    Ok(run)
}
