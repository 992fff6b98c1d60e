//! CUDA glue of the wind solvers (kernels in `geofield-cuda/kernels/wind*.cu`, wrappers in
//! `geofield_cuda::wind`).
//!
//! - WEST ([`west`]): the faces go to the device as f32 corrections to the first guess, with
//!   the first guess's cell divergence D0 (f32 for the sweeps, f64 for the checks), so that f32
//!   rounds the corrections and not the wind; the transparencies as u8 and α²/Δz per z face.
//!   The sweeps run exactly as `west::run` (red first, the same check points and history), and
//!   the result is u0 + Δu in f64. f32 cannot drive the divergence below a few ulps of D0: the
//!   stop threshold is raised to [`F32_FLOOR_ULPS`] · ε_f32 · max |D0| when it is below
//!   (reported in `threshold_per_s`; on the hill test grid the sweeps stall near 0.4 of that).
//! - Sherman ([`sherman`]): the face coefficients, layers, ground layers and D0 go to the
//!   device, which assembles the finest operator, 1/V, b' and every coarse level with the
//!   CPU's arithmetic (`geofield_cuda::wind::ShermanGrid`; the host never builds the levels).
//!   With cut cells the coefficients are those of the operator (c_f a_f) and the volume
//!   fractions go too.
//!   The solvers are those of the CPU (same cycle, checks and stop rule) with f64 CG,
//!   residuals and SOR and an f32 V-cycle. φ comes back in cell order. The bench times the
//!   same assembled problem ([`time_sherman`]).
//!
//! `report.solve_seconds` is device time (CUDA events around the sweeps or the solve, including
//! the convergence checks' readbacks, excluding uploads and the final download).

mod timing;

use std::sync::Arc;

use rayon::prelude::*;

use geofield_cuda::Gpu;
use geofield_cuda::wind::{
    BandSpec, CycleShape, DeviceTimer, Exchange, GpuSherman, GpuWest, Method, ShermanGrid,
    StopRule, SweepVariant, WestInputs, layer_rows,
};

use super::SolveReport;
use super::grid::WindGrid;
use super::multigrid::{COARSEST_SWEEPS, SMOOTH, SolveRun};
use super::ops::{self, Coeffs};
use super::params::{Solver, WindOptions};
use super::west::SweepRun;
use crate::GeofieldError;

pub use geofield_cuda::wind::SweepVariant as WestVariant;
pub use timing::{ShermanTiming, WestTiming, time_sherman, time_west};

/// The WEST stop threshold is at least this many f32 ulps of max |D0| (see the module docs).
pub const F32_FLOOR_ULPS: f64 = 4.0;

/// The device problem of a WEST run: transparencies, z-face scales, layer thicknesses.
pub(crate) struct WestCoeffs {
    tu: Vec<u8>,
    tv: Vec<u8>,
    tw: Vec<u8>,
    zscale: Vec<f64>,
    dz: Vec<f64>,
}

fn mask(what: &str, c: &[f64], open: f64) -> Result<Vec<u8>, GeofieldError> {
    c.iter()
        .enumerate()
        .map(|(i, &x)| {
            if x == 0.0 {
                Ok(0)
            } else if x == open {
                Ok(1)
            } else {
                Err(GeofieldError::Unsupported(format!(
                    "WEST on CUDA takes transparencies 0 or 1; {what} face {i} has coefficient \
                     {x} (fractional faces run on the CPU backend)"
                )))
            }
        })
        .collect()
}

impl WestCoeffs {
    pub(crate) fn new(grid: &WindGrid, coeffs: &Coeffs) -> Result<Self, GeofieldError> {
        let a2 = coeffs.alpha * coeffs.alpha;
        Ok(Self {
            tu: mask("x", &coeffs.cu, 1.0)?,
            tv: mask("y", &coeffs.cv, 1.0)?,
            tw: mask("z", &coeffs.cw, a2)?,
            zscale: coeffs.dzc_m.iter().map(|d| a2 / d).collect(),
            dz: (0..grid.nz).map(|k| grid.dz_m(k)).collect(),
        })
    }

    pub(crate) fn inputs<'a>(
        &'a self,
        grid: &'a WindGrid,
        div0: &'a [f64],
        omega: f64,
    ) -> WestInputs<'a> {
        WestInputs {
            rows: grid.rows(),
            cols: grid.cols(),
            nz: grid.nz,
            dx_m: grid.dx_m(),
            dz_m: &self.dz,
            zscale_per_m: &self.zscale,
            tu: &self.tu,
            tv: &self.tv,
            tw: &self.tw,
            ground_k: &grid.ground_k,
            div0_per_s: div0,
            omega,
        }
    }
}

/// WEST sweeps on the GPU, in place on (u, v, w): `opts.max_iterations` of them when
/// `opts.fixed_iterations`, else until max |div u| ≤ the threshold (raised to the f32 floor;
/// `report.threshold_per_s` says which), checked every `opts.check_every` sweeps and at the end.
#[allow(clippy::too_many_arguments)]
pub fn west(
    gpu: &Arc<Gpu>,
    grid: &WindGrid,
    coeffs: &Coeffs,
    omega: f64,
    faces: (&mut [f64], &mut [f64], &mut [f64]),
    opts: &WindOptions,
    threshold: f64,
    report: &mut SolveReport,
    progress: &mut dyn FnMut(usize, f64),
) -> Result<SweepRun, GeofieldError> {
    let (u, v, w) = faces;
    let wc = WestCoeffs::new(grid, coeffs)?;
    let div0 = ops::divergence(grid, u, v, w);
    let (max_div0, _) = ops::divergence_stats(grid, &div0);
    let floor = F32_FLOOR_ULPS * f64::from(f32::EPSILON) * max_div0;
    let threshold = threshold.max(floor);
    report.threshold_per_s = threshold;
    let zeros = |n: usize| vec![0.0f32; n];
    let mut dev = GpuWest::new(
        gpu,
        &wc.inputs(grid, &div0, omega),
        &zeros(u.len()),
        &zeros(v.len()),
        &zeros(w.len()),
    )?;
    let fixed = opts.fixed_iterations;
    let max = opts.max_iterations;
    let check = opts.check_every.max(1);
    let timer = DeviceTimer::start(gpu)?;
    let mut out = SweepRun::default();
    let d0 = dev.max_div()?;
    out.history.push((0, d0));
    if d0 <= threshold && !fixed {
        out.converged = true;
        report.solve_seconds = timer.seconds()?;
        return Ok(out);
    }
    let mut done = 0;
    while done < max {
        let next = ((done / check + 1) * check).min(max);
        dev.sweeps(next - done, SweepVariant::Compact)?;
        done = next;
        out.iterations = done;
        let d = dev.max_div()?;
        out.history.push((done, d));
        progress(done, d);
        out.converged = d <= threshold;
        if out.converged && !fixed {
            break;
        }
    }
    report.solve_seconds = timer.seconds()?;
    let (du, dv, dw) = dev.faces()?;
    for (f, d) in [(u, du), (v, dv), (w, dw)] {
        for (x, c) in f.iter_mut().zip(d) {
            *x += f64::from(c);
        }
    }
    Ok(out)
}

/// The device's inputs of Sherman's problem: the operator's face coefficients (with cut
/// cells, c_f a_f), the layer thicknesses and the cut cells' volume fractions.
struct DeviceInputs<'c> {
    op: std::borrow::Cow<'c, Coeffs>,
    dz: Vec<f64>,
    vol_frac: Option<Vec<f64>>,
}

impl<'c> DeviceInputs<'c> {
    fn new(grid: &WindGrid, coeffs: &'c Coeffs) -> Self {
        Self {
            // Cut cells: the conductances through the open parts of the faces and the volumes
            // of `Problem::new`.
            op: coeffs.operator(grid),
            dz: (0..grid.nz).map(|k| grid.dz_m(k)).collect(),
            vol_frac: grid.cut.as_ref().map(|_| {
                (0..grid.n_cells())
                    .into_par_iter()
                    .map(|i| grid.div_fraction(i))
                    .collect()
            }),
        }
    }

    fn grid<'a>(&'a self, grid: &'a WindGrid, div0: &'a [f64]) -> ShermanGrid<'a> {
        ShermanGrid {
            rows: grid.rows(),
            cols: grid.cols(),
            nz: grid.nz,
            dx_m: grid.dx_m(),
            dz_m: &self.dz,
            dzc_m: &self.op.dzc_m,
            cu: &self.op.cu,
            cv: &self.op.cv,
            cw: &self.op.cw,
            ground_k: &grid.ground_k,
            div0,
            vol_frac: self.vol_frac.as_deref(),
        }
    }
}

fn shape() -> CycleShape {
    CycleShape {
        smooth: SMOOTH,
        coarsest_sweeps: COARSEST_SWEEPS,
    }
}

/// Sherman's problem on the device, assembled there from the grid's coefficients and the
/// first guess's divergence `div0` (cell order) with the CPU's cycle shape.
pub(crate) fn assemble(
    gpu: &Arc<Gpu>,
    grid: &WindGrid,
    coeffs: &Coeffs,
    div0: &[f64],
) -> Result<GpuSherman, GeofieldError> {
    let inputs = DeviceInputs::new(grid, coeffs);
    Ok(GpuSherman::assemble(
        gpu,
        &inputs.grid(grid, div0),
        shape(),
    )?)
}

pub(crate) fn method(solver: Solver, omega: f64) -> Method {
    match solver {
        Solver::Multigrid => Method::Multigrid,
        Solver::MgCg => Method::MgCg,
        Solver::Sor => Method::Sor { omega },
    }
}

/// Sherman's problem on the GPU, assembled there from the grid's coefficients (the CPU's
/// `Problem::new` arithmetic) and solved with the same solver, cycle, checks and stop rule as
/// the CPU's `multigrid::solve`; φ in cell order.
#[allow(clippy::too_many_arguments)]
pub fn sherman(
    gpu: &Arc<Gpu>,
    grid: &WindGrid,
    coeffs: &Coeffs,
    div0: &[f64],
    solver: Solver,
    omega: f64,
    opts: &WindOptions,
    threshold: f64,
    report: &mut SolveReport,
    progress: &mut dyn FnMut(usize, f64),
) -> Result<SolveRun, GeofieldError> {
    // Host-side breakdown of the GPU solve, appended to the report's steps.
    let t = std::time::Instant::now();
    let mut dev = assemble(gpu, grid, coeffs, div0)?;
    let prepared = t.elapsed().as_secs_f64();
    let stop = StopRule {
        max_iterations: opts.max_iterations,
        threshold_per_s: threshold,
        check_every: opts.check_every,
    };
    let t = std::time::Instant::now();
    let run = dev.solve(method(solver, omega), stop, progress)?;
    let solved = t.elapsed().as_secs_f64();
    report.solve_seconds = run.device_seconds;
    report.step_seconds.extend([
        ("gpu: problem uploaded and assembled".to_string(), prepared),
        ("gpu: solve and download".to_string(), solved),
    ]);
    Ok(SolveRun {
        phi: run.phi,
        cell_order: true,
        iterations: run.iterations,
        history: run.history,
        converged: run.converged,
        stall: run.stall,
    })
}

/// Sherman's problem split by rows over the parts `ex` connects, each part's band on its own
/// GPU (`gpu`; every part calls this with the same inputs): `super::split`'s plan and
/// arithmetic on the device ([`GpuSherman::assemble_band`], [`GpuSherman::solve_split`]).
/// The multigrid solver gives the one-GPU φ bit for bit; MG-CG adds the bands' dot products in
/// part order. Returns the whole φ in cell order on every part; `report.solve_seconds` is this
/// part's device time (its waits for the others included). Too few rows to split: every part
/// solves the whole problem on its GPU.
#[allow(clippy::too_many_arguments)]
pub fn sherman_split(
    gpu: &Arc<Gpu>,
    grid: &WindGrid,
    coeffs: &Coeffs,
    div0: &[f64],
    solver: Solver,
    opts: &WindOptions,
    threshold: f64,
    report: &mut SolveReport,
    progress: &mut dyn FnMut(usize, f64),
    ex: &dyn Exchange,
) -> Result<SolveRun, GeofieldError> {
    if solver == Solver::Sor {
        return Err(GeofieldError::Unsupported(
            "the split wind solve runs the multigrid and MG-CG solvers, not SOR".into(),
        ));
    }
    let (rows, cols, nz) = (grid.rows(), grid.cols(), grid.nz);
    let (m, bands) = super::split::plan_bands(rows, cols, ex.parts());
    report.split_parts = Some(ex.parts());
    if m == 0 {
        return sherman(
            gpu, grid, coeffs, div0, solver, 1.0, opts, threshold, report, progress,
        );
    }
    let mut lap = {
        let mut t = std::time::Instant::now();
        move |name: &str, report: &mut SolveReport| {
            report
                .step_seconds
                .push((format!("gpu: {name}"), t.elapsed().as_secs_f64()));
            t = std::time::Instant::now();
        }
    };
    let band = bands[ex.part()].clone();
    let mine = BandInputs::new(grid, coeffs, div0, band.clone());
    lap("band's inputs", report);
    let spec = BandSpec {
        first_row: band.start,
        all_rows: rows,
        levels: m,
    };
    let mut dev =
        GpuSherman::assemble_band(gpu, &mine.grid(grid, &coeffs.dzc_m), shape(), spec, ex)?;
    drop(mine);
    lap("band uploaded and assembled", report);
    let stop = StopRule {
        max_iterations: opts.max_iterations,
        threshold_per_s: threshold,
        check_every: opts.check_every,
    };
    let run = dev.solve_split(ex, method(solver, 1.0), stop, progress)?;
    drop(dev);
    lap("split solve and download", report);
    let whole = ex.all_gather(&run.phi);
    let band_rows: Vec<usize> = bands.iter().map(|b| b.len()).collect();
    let phi = bands_to_cells(&whole, &band_rows, cols, nz);
    lap("φ gathered from the bands", report);
    report.solve_seconds = run.device_seconds;
    Ok(SolveRun {
        phi,
        cell_order: true,
        iterations: run.iterations,
        history: run.history,
        converged: run.converged,
        stall: run.stall,
    })
}

/// A band's rows of the device's inputs (`DeviceInputs`), built from the band's rows alone:
/// the whole operator and volume fractions are never formed.
struct BandInputs {
    rows: usize,
    dz: Vec<f64>,
    cu: Vec<f64>,
    cv: Vec<f64>,
    cw: Vec<f64>,
    ground_k: Vec<u32>,
    div0: Vec<f64>,
    vol_frac: Option<Vec<f64>>,
}

impl BandInputs {
    fn new(grid: &WindGrid, coeffs: &Coeffs, div0: &[f64], band: std::ops::Range<usize>) -> Self {
        let (rows, cols, nz) = (grid.rows(), grid.cols(), grid.nz);
        let cut = grid.cut.as_ref();
        // A band's faces, with cut cells c_f a_f as `Coeffs::operator` (the same product).
        let scaled = |c: &[f64], a: Option<&[f64]>, layers, per_layer, width, r| {
            let mut c = layer_rows(c, layers, per_layer, width, r);
            if let Some(a) = a {
                let n = c.len() / (layers * width).max(1);
                c.par_chunks_mut(width.max(1))
                    .enumerate()
                    .for_each(|(j, line)| {
                        let at = ((j / n) * per_layer + band.start + j % n) * width;
                        for (c, a) in line.iter_mut().zip(&a[at..at + width]) {
                            *c *= a;
                        }
                    });
            }
            c
        };
        let (r0, r1) = (band.start, band.end);
        let band_cells = nz * band.len() * cols;
        Self {
            rows: band.len(),
            dz: (0..nz).map(|k| grid.dz_m(k)).collect(),
            cu: scaled(
                &coeffs.cu,
                cut.map(|c| &c.ax[..]),
                nz,
                rows,
                cols + 1,
                r0..r1,
            ),
            cv: scaled(
                &coeffs.cv,
                cut.map(|c| &c.ay[..]),
                nz,
                rows + 1,
                cols,
                r0..r1 + 1,
            ),
            cw: scaled(
                &coeffs.cw,
                cut.map(|c| &c.az[..]),
                nz + 1,
                rows,
                cols,
                r0..r1,
            ),
            ground_k: layer_rows(&grid.ground_k, 1, rows, cols, r0..r1),
            div0: layer_rows(div0, nz, rows, cols, r0..r1),
            vol_frac: cut.map(|_| {
                let n = band.len() * cols;
                (0..band_cells)
                    .into_par_iter()
                    .map(|j| grid.div_fraction((j / n) * rows * cols + r0 * cols + j % n))
                    .collect()
            }),
        }
    }

    fn grid<'a>(&'a self, grid: &WindGrid, dzc_m: &'a [f64]) -> ShermanGrid<'a> {
        ShermanGrid {
            rows: self.rows,
            cols: grid.cols(),
            nz: grid.nz,
            dx_m: grid.dx_m(),
            dz_m: &self.dz,
            dzc_m,
            cu: &self.cu,
            cv: &self.cv,
            cw: &self.cw,
            ground_k: &self.ground_k,
            div0: &self.div0,
            vol_frac: self.vol_frac.as_deref(),
        }
    }
}

/// The whole cell vector `[k][row][col]` from the bands' (`all`: each band's `[k][row][col]`
/// block in band order, `band_rows` rows each).
fn bands_to_cells(all: &[f64], band_rows: &[usize], cols: usize, nz: usize) -> Vec<f64> {
    let rows: usize = band_rows.iter().sum();
    // Where each band's block starts in `all`, and each whole row's band.
    let mut starts = Vec::with_capacity(band_rows.len());
    let mut owner = Vec::with_capacity(rows);
    let mut at = 0;
    for (b, &r) in band_rows.iter().enumerate() {
        starts.push((at, owner.len()));
        owner.extend(std::iter::repeat_n(b, r));
        at += nz * r * cols;
    }
    let mut out = vec![0.0; nz * rows * cols];
    if cols == 0 || rows == 0 {
        return out;
    }
    out.par_chunks_mut(cols).enumerate().for_each(|(j, line)| {
        let (k, row) = (j / rows, j % rows);
        let b = owner[row];
        let (at, row0) = starts[b];
        let from = at + (k * band_rows[b] + row - row0) * cols;
        line.copy_from_slice(&all[from..from + cols]);
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bands_in_order_are_the_whole_cell_vector() {
        let (rows, cols, nz) = (7, 3, 2);
        let whole: Vec<f64> = (0..nz * rows * cols).map(|i| i as f64).collect();
        let band_rows = [2, 4, 1];
        let mut all = Vec::new();
        let mut r0 = 0;
        for &r in &band_rows {
            all.extend(layer_rows(&whole, nz, rows, cols, r0..r0 + r));
            r0 += r;
        }
        assert_eq!(bands_to_cells(&all, &band_rows, cols, nz), whole);
    }
}
