//! Kriging on the GPU: safe wrappers over `kernels/kriging.cu`. The host (geofield's CPU code)
//! prepares everything in f64: centred, anisotropy-transformed sample coordinates ("kriging
//! space"), the dual weights, the inverse Cholesky factors; the GPU only evaluates.
//!
//! - [`dual_predict`]: z*(x) = Σᵢ C(|x − xᵢ|) α_{ih} + Σ_l f_l(x) β_{lh}, one thread per node
//!   (two for H ≤ 4), samples and α staged in shared memory, H a template (1, 2, 4, 8, 12, 16;
//!   more surfaces run in groups of 16), surface-major coalesced stores. f64, f32 (accurate
//!   polynomial exp on the FMA pipe, IEEE sqrt) and f32 fast (one MUFU.EX2 and MUFU sqrt per
//!   pair); f32 partial sums over each staged block of 256 samples are added into f64
//!   accumulators (note §5: f32 accumulation over hundreds of samples loses digits). Single
//!   exponential, Gaussian or spherical structures take a specialised pair loop; anything else
//!   runs the general covariance.
//! - [`global_variance`]: σ² = max(0, C₀ − |w|² + |R⁻¹(f(x) − Gᵀw)|²), w = L⁻¹k, in node tiles:
//!   a kernel writes K (n × m), then one fused kernel computes [L⁻¹; GᵀL⁻¹]·K tile by tile
//!   (skipping the zero upper triangle of L⁻¹: half a dense GEMM's flops) and reduces each
//!   node's column to σ² without writing W. No cuBLAS: its handle and first GEMM cost a process
//!   ~0.25 s, more than the whole evaluation. Above [`FUSED_MAX_SAMPLES`] samples (the
//!   GEMM then takes seconds) and for the TF32 option, one cuBLAS GEMM per tile and a warp per
//!   node reducing. Never more than one tile of nodes × samples in memory.
//! - [`local_krige`]: k nearest samples (the device grid of [`crate::neighbors`], f64 keys (d², i)
//!   with d² = (dx·dx) + (dy·dy) rounded to nearest, no FMA, ties to the lower index, d² ≤ r²),
//!   then one warp per node: the m × m system in shared memory, Cholesky with the forward
//!   substitution of [k, F] folded in, the p × p drift system, the weights λ = L⁻ᵀ(w + G M⁻¹r) and
//!   z* = λᵀz. NaN where fewer than max(p, 1) neighbours or a non-positive pivot.
//! - [`paper_krige`]: the paper's method (Li & Dong): per node the (n+1) bordered ordinary
//!   system, Gaussian elimination without pivoting (modes exp1, exp2, exp4; note §2.2).
//!
//! Node grid: x = (ox + col·cx) + row·rx, y = (oy + col·cy) + row·ry, each operation rounded to
//! nearest without FMA ([`NodeGrid::node`] is the same on the host, bit for bit). Outputs are
//! surface-major: `out[h·rows·cols + row·cols + col]`. Drift basis on (u, v) = (x/s, y/s):
//! f = [1, u, v, u², uv, v²], first p ∈ {0, 1, 3, 6} terms.
//!
//! Every wrapper checks lengths, returns host vectors and reports the kernel time from CUDA events
//! (`kernel_ms`) and the end-to-end time including uploads, allocations and downloads
//! (`total_ms`).
//!
//! # Measured (one H100 80GB HBM3, commit 1f0be16, `tests::bench_kriging`, medians)
//!
//! Samples uniform in a 1000 m square (centred), exponential a = 300 m, sill 1, grid 1000²:
//!
//! | what | time | throughput | error vs f64 |
//! |---|---|---|---|
//! | dual f32 fast, 1e6 nodes × 500 samples, H = 1 | 0.347 ms | 1.44e12 pairs/s | 2.8e-6 abs |
//! | dual f32 (accurate exp), same | 0.654 ms | 7.6e11 pairs/s | 2.8e-6 abs |
//! | dual f64, same | 1.513 ms | 3.3e11 pairs/s | – |
//! | dual f32 fast, 450k nodes × 10 samples, H = 11 | 0.041 ms | | |
//! | variance f32, 1e6 nodes × 500 samples, p = 1 | 14.2 ms (K 3.4, fused product and reduction 10.8; a70dafa, `examples/variance_init`); was 15.1 ms with cuBLAS (SGEMM 10.7, reduce 1.0) plus ~0.25 s of cuBLAS start per process | | 3.1e-6 abs (C₀ = 1) |
//! | variance f32 + TF32 GEMM, same | 9.3 ms (GEMM 4.9) | | **2.1e-3** abs: not for default use |
//! | variance f64 (DGEMM, before a70dafa), same | 22.1 ms | | – |
//! | local f32, 1e6 nodes, k = 32, 10⁴ samples, p = 1, with variance | 28.6 ms (search 4.5, solve 24.0) | | pred 1.5e-5, var 4.7e-7 abs |
//! | local f64, same | 32.7 ms (search 4.5, solve 28.1) | | – |
//! | paper exp1 / exp2 / exp4 f32, 450k nodes × 10 wells, H = 11 | 6.71 / 4.62 / 0.472 ms | | 8.8e-7 abs |
//! | paper exp1 / exp2 / exp4 f64, same | 18.6 / 16.6 / 1.57 ms | | – |
//!
//! f32 dual error against the f64 reference in the GPU tests, relative to Σ|C α|: 5e-8 to 2e-6
//! for bounded models (1.5e-5 with n = 2, where one term dominates), up to 7e-5 relative to the
//! covariance's size for pseudo-covariances B − γ (cancellation inside C itself).

use crate::error::{CudaError, invalid};
use crate::neighbors::GpuCoord;

mod cov;
mod dual;
mod local;
mod local3;
mod paper;
pub mod params;
mod points;
pub mod sim;
mod support;
mod variance;

pub use cov::{
    CovModel, CovParams, CovStructure, Covariance, MAX_STRUCTURES, StructureParams, gamma_fn,
    ln_gamma,
};
pub use dual::{DualInputs, dual_kernels, dual_predict};
pub use local::{LocalInputs, LocalOutput, LocalTimes, local_krige};
pub use local3::{Local3Inputs, local_krige3};
pub use paper::{PaperMode, paper_krige};
pub use points::{
    POINTS_MAX_COVS, PointsInputs, PointsOutput, PointsVariance, PtsParams, points_eval,
};
pub use support::{BLOCK_POINTS_MAX, P_MAX, TargetSupport};
pub use variance::{
    FUSED_MAX_SAMPLES, VarianceFloat, VarianceInputs, VarianceTimes, global_variance,
    variance_kernels,
};

/// Compiles (or loads from the disk cache) every kernel of a global evaluation at once, in
/// parallel: the dual kernels for `surfaces` and, with `variance`, the variance kernels for
/// `samples` samples.
pub fn prepare_global<T: KrigeFloat>(
    gpu: &crate::Gpu,
    cov: &Covariance,
    samples: usize,
    surfaces: usize,
    fast: bool,
    variance: bool,
) -> Result<(), CudaError> {
    let mut names = dual_kernels::<T>(cov, surfaces, fast)?;
    if variance {
        names.extend(variance_kernels::<T>(samples));
    }
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    gpu.prepare(MODULE, &refs)
}

pub(crate) const MODULE: &str = "kriging";
/// Largest neighbourhood of [`local_krige`] and largest sample count of [`paper_krige`].
pub const K_MAX: usize = 64;
/// Surfaces per launch of the dual kernel.
pub const H_MAX_LAUNCH: usize = 16;

/// The affine node grid in kriging space: node (row, col) at
/// x = (origin.x + col·col_step.x) + r·row_step.x (and y likewise), r = `row0` + row: a window
/// of rows `row0..row0 + rows` of a larger grid places its nodes exactly where the whole grid
/// does (see [`NodeGrid::window`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NodeGrid {
    pub origin: [f64; 2],
    pub col_step: [f64; 2],
    pub row_step: [f64; 2],
    pub rows: usize,
    pub cols: usize,
    /// The grid row of this grid's row 0 (0 for a whole grid).
    pub row0: usize,
}

impl NodeGrid {
    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.rows * self.cols
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Rows `rows` of this grid (relative to its row 0; clamped to its rows), whose nodes are
    /// bit for bit this grid's.
    pub fn window(&self, rows: std::ops::Range<usize>) -> NodeGrid {
        let end = rows.end.min(self.rows);
        let start = rows.start.min(end);
        NodeGrid {
            rows: end - start,
            row0: self.row0 + start,
            ..*self
        }
    }

    /// Node coordinates in the kernels' exact order (no FMA: Rust never contracts); the CPU
    /// evaluation of `geofield` places its nodes with this too.
    #[inline]
    pub fn node(&self, row: usize, col: usize) -> (f64, f64) {
        let (c, r) = (col as f64, (self.row0 + row) as f64);
        (
            (self.origin[0] + c * self.col_step[0]) + r * self.row_step[0],
            (self.origin[1] + c * self.col_step[1]) + r * self.row_step[1],
        )
    }

    pub(crate) fn check(&self, kernel: &'static str) -> Result<usize, CudaError> {
        let vals = [
            self.origin[0],
            self.origin[1],
            self.col_step[0],
            self.col_step[1],
            self.row_step[0],
            self.row_step[1],
        ];
        if vals.iter().any(|v| !v.is_finite()) {
            return Err(invalid(kernel, "the node grid has a non-finite value"));
        }
        if self.rows > u32::MAX as usize
            || self.cols > u32::MAX as usize
            || self
                .row0
                .checked_add(self.rows)
                .is_none_or(|e| e > u32::MAX as usize)
        {
            return Err(invalid(kernel, "rows and cols must fit in 32 bits"));
        }
        self.rows
            .checked_mul(self.cols)
            .ok_or_else(|| invalid(kernel, "rows × cols overflows"))
    }
}

/// A precision with kernels: f32 or f64.
pub trait KrigeFloat: GpuCoord + Default {
    /// Rounds an f64 to this type.
    fn from_f64(v: f64) -> Self;
    /// Converts a slice.
    fn vec_from(v: &[f64]) -> Vec<Self> {
        v.iter().map(|&x| Self::from_f64(x)).collect()
    }
}

impl KrigeFloat for f32 {
    fn from_f64(v: f64) -> Self {
        v as f32
    }
}

impl KrigeFloat for f64 {
    fn from_f64(v: f64) -> Self {
        v
    }
}

/// Kernel and end-to-end times of one wrapper call, milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KrigingTimes {
    /// Sum of the kernels' CUDA-event times.
    pub kernel_ms: f64,
    /// Wall time of the whole call: allocations, uploads, launches, downloads.
    pub total_ms: f64,
}

pub(crate) fn check_drift(p: usize, scale: f64, kernel: &'static str) -> Result<(), CudaError> {
    if !matches!(p, 0 | 1 | 3 | 6) {
        return Err(invalid(
            kernel,
            format!("drift terms p = {p}: 0, 1, 3 or 6"),
        ));
    }
    if !(scale.is_finite() && scale > 0.0) {
        return Err(invalid(
            kernel,
            format!("drift scale = {scale} must be > 0"),
        ));
    }
    Ok(())
}

pub(crate) fn check_finite(
    what: &str,
    v: &[f64],
    len: usize,
    kernel: &'static str,
) -> Result<(), CudaError> {
    if v.len() != len {
        return Err(invalid(
            kernel,
            format!("{what} has {} values, expected {len}", v.len()),
        ));
    }
    if let Some(i) = v.iter().position(|x| !x.is_finite()) {
        return Err(invalid(kernel, format!("{what}[{i}] is not finite")));
    }
    Ok(())
}

pub(crate) fn samples_count(xy: &[f64], kernel: &'static str) -> Result<usize, CudaError> {
    if !xy.len().is_multiple_of(2) {
        return Err(invalid(
            kernel,
            format!("samples_xy has {} values, not pairs", xy.len()),
        ));
    }
    let n = xy.len() / 2;
    check_finite("samples_xy", xy, 2 * n, kernel)?;
    if n >= i32::MAX as usize {
        return Err(invalid(kernel, format!("{n} samples is too many")));
    }
    Ok(n)
}

pub(crate) fn launch_err(kernel: String) -> impl FnOnce(cudarc::driver::DriverError) -> CudaError {
    move |source| CudaError::Driver {
        action: format!("launching {kernel}"),
        source,
    }
}

pub(crate) fn event_ms(
    a: &cudarc::driver::CudaEvent,
    b: &cudarc::driver::CudaEvent,
) -> Result<f64, CudaError> {
    a.elapsed_ms(b)
        .map(f64::from)
        .map_err(|source| CudaError::Driver {
            action: "reading a kernel timing event".into(),
            source,
        })
}

/// Kernel-name suffix for a precision (`f64`, `f32`, `f32fast`).
pub(crate) fn prec_suffix<T: KrigeFloat>(fast: bool) -> &'static str {
    match (T::SUFFIX, fast) {
        ("f64", _) => "f64",
        (_, true) => "f32fast",
        _ => "f32",
    }
}

#[cfg(test)]
mod tests;
