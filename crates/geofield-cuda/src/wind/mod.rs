//! The mass-consistent wind field on the GPU: safe wrappers over `kernels/wind*.cu`, with the
//! state resident on the device between launches (geofield's `wind::cuda` is the glue).
//!
//! - [`GpuWest`]: the paper's divergence minimisation (Pinheiro et al. 2017, Fig. 2) in velocity
//!   form, f32 faces updated in place, one launch per colour (red = (col + row + k) odd first).
//!   Coefficients come from u8 transparencies T and per-layer scalars, on the fly:
//!   g_f = T_f/Δx on x and y faces, T_f α²/Δz_{k−½} on z faces, S = Σ g_f/Δ_cell,
//!   δ = (ω/S)·D, u_W += g_W δ, u_E −= g_E δ (v, w alike): the arithmetic of `west.rs`.
//!   The faces may hold corrections to a first guess with cell divergence D0 (D = D0 + div of
//!   the faces): f32 then rounds the corrections (≲ 1 m/s) instead of the wind (~10 m/s). On
//!   geofield's hill test grid (24 × 20 × 16, winds to 9 m/s) a host emulation of the kernel's
//!   f32 arithmetic differs from the f64 CPU sweeps by 1.2e-5 m/s after 100 sweeps storing the
//!   wind, by 5.7e-7 m/s storing corrections.
//!   [`SweepVariant::Compact`] launches threads for the active colour only, thread t of row
//!   (row, k) taking col = 2t + ((row + k + c) mod 2) (the paper's relocation of idle threads,
//!   on the contiguous axis); [`SweepVariant::Parity`] launches one thread per cell and tests
//!   (col + row + k) mod 2 (the paper's GPU1). Both compute the same bits.
//! - [`GpuSherman`]: Sherman's problem A'φ = b' on the volume-weighted operator of geofield's
//!   `level.rs`, levels given by the caller in the layout below. Multigrid: f32 V-cycles with
//!   z-line Gauss–Seidel (one thread per column of the active checkerboard colour, Thomas solve,
//!   the eliminated super-diagonal in a scratch array), fused residual + restriction (sum of
//!   2 × 2 children), piecewise-constant prolongation onto cells with diag ≠ 0, the whole
//!   coarsest level in one block; pre-smoothing colours (0, 1), post (1, 0). Solvers: iterative
//!   refinement (f64 residual, f32 V-cycle correction), CG in f64 preconditioned by one f32
//!   V-cycle (scalars stay on the device), and red-black SOR in f64 (compact mapping).
//!
//! Layout of every array, [k][row][col] with col fastest (row 0 north): cells
//! `(k·rows + row)·cols + col`; x faces `(k·rows + row)·(cols + 1) + i`; y faces
//! `(k·(rows + 1) + r)·cols + col` with face r the north edge of row r; z faces
//! `(k·rows + row)·cols + col` for k ≤ nz, face k the bottom of layer k. Threads on adjacent
//! columns read adjacent addresses.
//!
//! Host–device traffic: the convergence checks are the only synchronisations, one scalar
//! readback each (`max |div u|`, and for CG the stop test with p·Ap). Reductions are f64 in a
//! fixed tree order (see `wind.cu`), so every run is bitwise reproducible.
//!
//! # Cost model (nominal DRAM bytes per cell)
//!
//! Memory bound throughout; the bench divides these by the measured time and the device's
//! bandwidth. Per cell and per sweep (both colours), each face array read and written once per
//! colour, masks read once per colour:
//!
//! | operation | bytes per cell |
//! | --- | --- |
//! | WEST sweep, either mapping: u, v, w f32 read + write ×2, 3 u8 masks ×2, D0 f32 | [`WEST_BYTES_PER_CELL_SWEEP`] = 58 |
//! | max \|div u\| (f32 faces, D0 f64, per-column ground index) | [`DIVMAX_BYTES_PER_CELL`] = 20 |
//! | SOR sweep f64: φ read ×2, half written ×2, b, diag (half) ×2, kx ky kz ×2 | [`SOR_BYTES_PER_CELL_SWEEP`] = 88 |
//! | residual f64 (x, kx, ky, kz, diag, b, 1/V read, r written) | [`RESIDUAL_BYTES_PER_CELL`] = 64 |
//! | V-cycle (f32), per finest cell | [`vcycle_bytes_per_cell`] (≈ 290 with 2 smoothing sweeps) |
//! | one solver iteration, per finest cell | [`iteration_bytes_per_cell`] |
//!
//! A z-line sweep moves ≈ 22 B per cell and colour: kx and ky (every horizontal face borders
//! one active column, 8 B), b, diag and kz of the active half (6 B), the neighbours' x read and
//! the active x written (4 B), the scratch written and read back (4 B); 44 B per sweep of both
//! colours. Restriction ≈ 25 B and prolongation ≈ 13 B per fine cell, zeroing x 4 B; the
//! coarser levels add a third (horizontal semicoarsening).

use std::sync::Arc;

use cudarc::driver::{CudaEvent, DriverError, LaunchConfig};

use crate::context::Gpu;
use crate::error::{CudaError, invalid};

mod assemble;
mod band;
pub mod coarsening;
mod exchange;
mod halo;
mod hierarchy;
pub mod params;
mod reduce;
mod sherman;
mod solve;
pub mod stall;
mod west;

pub use assemble::ShermanGrid;
pub use band::{BandSpec, layer_rows};
pub use exchange::{Exchange, LocalPart, LocalParts};
pub use sherman::{CycleShape, DeviceSolve, GpuSherman, Method, StopRule};
pub use west::{Faces, GpuWest, SweepVariant, WestInputs};

pub(crate) const MODULE: &str = "wind";

/// Loads (compiling on first use) the wind kernels, so that a caller opening the GPU in the
/// background pays for them there rather than on the first solve.
pub fn warm_up(gpu: &Gpu) -> Result<(), CudaError> {
    gpu.module(MODULE).map(|_| ())
}
/// Threads of the 1-D kernels and of the reducing kernels' blocks (`WIND_THREADS`).
pub(crate) const THREADS: u32 = 256;
/// Most partials a reducing kernel writes, and the final reduction's block (`WIND_PARTS`).
pub(crate) const PARTS: usize = 1024;
/// Block shape of the plane kernels (sweeps, line relaxation): x on the contiguous axis.
const PLANE_BLOCK: (u32, u32) = (64, 4);
/// Largest grid dimension y and z.
const GRID_YZ_MAX: usize = 65_535;
/// Cap on grid-stride grids in x.
const GRID_X_MAX: usize = 1 << 20;

/// Nominal bytes per cell of one WEST sweep (both colours), compact or parity mapping.
pub const WEST_BYTES_PER_CELL_SWEEP: f64 = 58.0;
/// Nominal bytes per cell of one max |div u| check of the WEST faces.
pub const DIVMAX_BYTES_PER_CELL: f64 = 20.0;
/// Nominal bytes per cell of one f64 φ-form SOR sweep (both colours).
pub const SOR_BYTES_PER_CELL_SWEEP: f64 = 88.0;
/// Nominal bytes per cell of one f64 residual with its max |r/V|.
pub const RESIDUAL_BYTES_PER_CELL: f64 = 64.0;

/// Nominal bytes per finest cell of one f32 V-cycle with `smooth` sweeps before and after the
/// coarse correction: (2·smooth·68 + 42) per cell of a level, and the levels sum to 4/3 of the
/// finest (horizontal semicoarsening). A sweep (both colours) is 40 bytes of right-hand side
/// (b, four faces, four neighbours, g written) and 28 of column solve (g, kz, 1/pivot read, x
/// written; x, super-diagonal read, x written); the fused residual and restriction and the
/// prolongation 42.
pub fn vcycle_bytes_per_cell(smooth: usize) -> f64 {
    (136.0 * smooth as f64 + 42.0) * 4.0 / 3.0
}

/// Nominal bytes per finest cell of one iteration of `method` (SOR: one sweep plus a residual
/// every `check_every`; not counted here): refinement = V-cycle + 96 (conversion, update,
/// residual); CG = V-cycle + 148 (A p with p·Ap, the update with max |r/V|, conversion, r·z,
/// direction); SOR = one sweep.
pub fn iteration_bytes_per_cell(method: Method, smooth: usize) -> f64 {
    match method {
        Method::Multigrid => vcycle_bytes_per_cell(smooth) + 96.0,
        Method::MgCg => vcycle_bytes_per_cell(smooth) + 148.0,
        Method::Sor { .. } => SOR_BYTES_PER_CELL_SWEEP,
    }
}

/// Device time between two points on the GPU's stream (CUDA events).
pub struct DeviceTimer {
    gpu: Arc<Gpu>,
    start: CudaEvent,
}

impl DeviceTimer {
    /// Records the start event now (after everything already queued).
    pub fn start(gpu: &Arc<Gpu>) -> Result<Self, CudaError> {
        Ok(Self {
            gpu: Arc::clone(gpu),
            start: gpu.mark()?,
        })
    }

    /// Seconds from the start event to now on the stream; waits for the queued work.
    pub fn seconds(&self) -> Result<f64, CudaError> {
        Ok(f64::from(self.gpu.elapsed_ms(&self.start)?) * 1e-3)
    }
}

pub(crate) fn launch_err(kernel: &'static str) -> impl FnOnce(DriverError) -> CudaError {
    move |source| CudaError::Driver {
        action: format!("launching {kernel}"),
        source,
    }
}

/// A grid-stride 1-D launch over `n` elements.
pub(crate) fn cfg_1d(n: usize) -> LaunchConfig {
    let blocks = n.div_ceil(THREADS as usize).clamp(1, GRID_X_MAX);
    LaunchConfig {
        grid_dim: (blocks as u32, 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// The fixed launch of a reducing kernel over `n` elements and its number of partials.
pub(crate) fn cfg_reduce(n: usize) -> (LaunchConfig, u32) {
    let blocks = n.div_ceil(THREADS as usize).clamp(1, PARTS);
    (
        LaunchConfig {
            grid_dim: (blocks as u32, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        },
        blocks as u32,
    )
}

/// A grid-stride launch over `span` threads per row, `rows` rows and `planes` planes.
pub(crate) fn cfg_planes(span: usize, rows: usize, planes: usize) -> LaunchConfig {
    let (bx, by) = PLANE_BLOCK;
    LaunchConfig {
        grid_dim: (
            span.div_ceil(bx as usize).clamp(1, GRID_X_MAX) as u32,
            rows.div_ceil(by as usize).clamp(1, GRID_YZ_MAX) as u32,
            planes.clamp(1, GRID_YZ_MAX) as u32,
        ),
        block_dim: (bx, by, 1),
        shared_mem_bytes: 0,
    }
}

/// Checks a grid of `rows × cols × nz` cells: non-empty, and every cell and face count below
/// 2³¹ (the kernels index with u32 and grid-stride without overflow).
pub(crate) fn check_dims(
    kernel: &'static str,
    rows: usize,
    cols: usize,
    nz: usize,
) -> Result<usize, CudaError> {
    if rows == 0 || cols == 0 || nz == 0 {
        return Err(invalid(
            kernel,
            format!("empty grid {rows} rows × {cols} cols × {nz} layers"),
        ));
    }
    let limit = (1usize << 31) - 1;
    let n = rows
        .checked_mul(cols)
        .and_then(|p| p.checked_mul(nz))
        .ok_or_else(|| invalid(kernel, "the cell count overflows"))?;
    let biggest = [
        (rows + 1) * (cols + 1) * (nz + 1), // bounds every face array
        n,
    ];
    if biggest.iter().any(|&m| m > limit) {
        return Err(invalid(
            kernel,
            format!(
                "{rows} × {cols} × {nz} cells is too large for one device grid (faces must \
                 number below 2^31); split the domain"
            ),
        ));
    }
    Ok(n)
}

/// Checks that `what` has `len` values, all finite.
pub(crate) fn check_finite(
    kernel: &'static str,
    what: &str,
    v: &[f64],
    len: usize,
) -> Result<(), CudaError> {
    if v.len() != len {
        return Err(invalid(
            kernel,
            format!("{what} has {} values, expected {len}", v.len()),
        ));
    }
    use rayon::prelude::*;
    if let Some(i) = v.par_iter().position_first(|x| !x.is_finite()) {
        return Err(invalid(
            kernel,
            format!("{what}[{i}] = {} is not finite", v[i]),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
