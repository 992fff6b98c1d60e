//! Timing of the GPU wind kernels for `geofield bench wind`: device time from CUDA events,
//! after a warm-up run (module compilation, first launches), `repeats` timed runs.

use std::sync::Arc;

use geofield_cuda::Gpu;
use geofield_cuda::wind::{
    self as gw, DeviceTimer, GpuWest, StopRule, SweepVariant, WEST_BYTES_PER_CELL_SWEEP,
};

use super::{WestCoeffs, assemble, method};
use crate::GeofieldError;
use crate::wind::grid::WindGrid;
use crate::wind::multigrid::SMOOTH;
use crate::wind::ops::{self, Coeffs};
use crate::wind::params::Solver;

/// Timed runs of fixed-count WEST sweeps.
#[derive(Debug, Clone, serde::Serialize)]
pub struct WestTiming {
    /// "compact" or "parity".
    pub variant: &'static str,
    pub sweeps: usize,
    pub cells: usize,
    /// Device seconds of each timed run (the sweeps only: no check, upload or download).
    pub seconds: Vec<f64>,
    pub median_s: f64,
    /// cells · sweeps / median.
    pub cell_updates_per_s: f64,
    /// Nominal DRAM bytes per cell and sweep ([`WEST_BYTES_PER_CELL_SWEEP`]).
    pub bytes_per_cell_sweep: f64,
    /// bytes_per_cell_sweep · cell updates / s.
    pub bytes_per_s: f64,
    /// bytes_per_s over the device's peak memory bandwidth (0 when unknown).
    pub bandwidth_share: f64,
}

/// Timed solves of Sherman's problem to the threshold.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ShermanTiming {
    /// "multigrid", "mgcg" or "sor".
    pub method: &'static str,
    pub cells: usize,
    /// Iterations (V-cycles, CG iterations or sweeps) of the last run; every run does the same.
    pub iterations: usize,
    pub converged: bool,
    /// max |div| at the last check (s⁻¹).
    pub final_div_per_s: f64,
    /// Device seconds of each timed solve (from φ = 0, checks included).
    pub seconds: Vec<f64>,
    pub median_s: f64,
    /// Nominal DRAM bytes per finest cell and iteration
    /// ([`geofield_cuda::wind::iteration_bytes_per_cell`]).
    pub bytes_per_cell_iteration: f64,
    /// bytes_per_cell_iteration · cells · iterations / median.
    pub bytes_per_s: f64,
    pub bandwidth_share: f64,
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => 0.0,
        n if n % 2 == 1 => s[n / 2],
        n => 0.5 * (s[n / 2 - 1] + s[n / 2]),
    }
}

fn share(gpu: &Gpu, bytes_per_s: f64) -> f64 {
    let peak = gpu.info().peak_bandwidth_bytes_per_s;
    if peak > 0.0 { bytes_per_s / peak } else { 0.0 }
}

/// Times `sweeps` WEST sweeps with the `variant` mapping from the first guess `faces` (the
/// glue's corrections form): one warm-up run of min(sweeps, 10) sweeps, then `repeats` runs,
/// each from the first guess.
#[allow(clippy::too_many_arguments)]
pub fn time_west(
    gpu: &Arc<Gpu>,
    grid: &WindGrid,
    coeffs: &Coeffs,
    faces: (&[f64], &[f64], &[f64]),
    omega: f64,
    sweeps: usize,
    variant: SweepVariant,
    repeats: usize,
) -> Result<WestTiming, GeofieldError> {
    let (u, v, w) = faces;
    let wc = WestCoeffs::new(grid, coeffs)?;
    let div0 = ops::divergence(grid, u, v, w);
    let zeros = (
        vec![0.0f32; u.len()],
        vec![0.0f32; v.len()],
        vec![0.0f32; w.len()],
    );
    let mut dev = GpuWest::new(
        gpu,
        &wc.inputs(grid, &div0, omega),
        &zeros.0,
        &zeros.1,
        &zeros.2,
    )?;
    dev.sweeps(sweeps.min(10), variant)?;
    dev.max_div()?;
    let mut seconds = Vec::with_capacity(repeats);
    for _ in 0..repeats.max(1) {
        dev.set_faces(&zeros.0, &zeros.1, &zeros.2)?;
        let t = DeviceTimer::start(gpu)?;
        dev.sweeps(sweeps, variant)?;
        seconds.push(t.seconds()?);
    }
    let median_s = median(&seconds);
    let cells = dev.cells();
    let updates = if median_s > 0.0 {
        (cells * sweeps) as f64 / median_s
    } else {
        0.0
    };
    let bytes_per_s = updates * WEST_BYTES_PER_CELL_SWEEP;
    Ok(WestTiming {
        variant: variant.name(),
        sweeps,
        cells,
        seconds,
        median_s,
        cell_updates_per_s: updates,
        bytes_per_cell_sweep: WEST_BYTES_PER_CELL_SWEEP,
        bytes_per_s,
        bandwidth_share: share(gpu, bytes_per_s),
    })
}

/// Times `solver` on Sherman's problem of `grid` (assembled on the device as `geofield wind`
/// does, from the coefficients and the first guess's divergence `div0`) to `threshold` (s⁻¹)
/// or `max_iterations`: one warm-up solve, then `repeats` solves, each from φ = 0.
#[allow(clippy::too_many_arguments)]
pub fn time_sherman(
    gpu: &Arc<Gpu>,
    grid: &WindGrid,
    coeffs: &Coeffs,
    div0: &[f64],
    solver: Solver,
    omega: f64,
    max_iterations: usize,
    threshold: f64,
    check_every: usize,
    repeats: usize,
) -> Result<ShermanTiming, GeofieldError> {
    let mut dev = assemble(gpu, grid, coeffs, div0)?;
    let m = method(solver, omega);
    let stop = StopRule {
        max_iterations,
        threshold_per_s: threshold,
        check_every,
    };
    let mut last = dev.solve(m, stop, &mut |_, _| {})?;
    let mut seconds = Vec::with_capacity(repeats);
    for _ in 0..repeats.max(1) {
        last = dev.solve(m, stop, &mut |_, _| {})?;
        seconds.push(last.device_seconds);
    }
    let median_s = median(&seconds);
    let cells = dev.cells();
    let per_cell = gw::iteration_bytes_per_cell(m, SMOOTH);
    let bytes_per_s = if median_s > 0.0 {
        per_cell * (cells * last.iterations) as f64 / median_s
    } else {
        0.0
    };
    Ok(ShermanTiming {
        method: match solver {
            Solver::Multigrid => "multigrid",
            Solver::MgCg => "mgcg",
            Solver::Sor => "sor",
        },
        cells,
        iterations: last.iterations,
        converged: last.converged,
        final_div_per_s: last.history.last().map_or(0.0, |h| h.1),
        seconds,
        median_s,
        bytes_per_cell_iteration: per_cell,
        bytes_per_s,
        bandwidth_share: share(gpu, bytes_per_s),
    })
}
