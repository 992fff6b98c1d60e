//! [`global_variance`]: the global kriging variance in node tiles (kernel, cuBLAS GEMM, kernel).

use std::time::Instant;

use cudarc::cublas::sys as blas_sys;
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig};
use cudarc::driver::{LaunchConfig, PushKernelArg};

use super::params::{GridParams, VarParams};
use super::{
    Covariance, KrigeFloat, MODULE, NodeGrid, TargetSupport, check_finite, event_ms, launch_err,
    samples_count,
};
use crate::context::Gpu;
use crate::error::{CudaError, invalid};

/// Bytes of K and W per tile (the only nodes × samples storage).
const TILE_BYTES: usize = 256 << 20;
const REDUCE_WARPS: u32 = 8;
/// Above this many samples the variance runs cuBLAS' GEMM instead of the fused kernel.
pub const FUSED_MAX_SAMPLES: usize = 4096;
/// Nodes per block and threads of `kriging_var_fused` (`KR_VF_T`, `KR_VF_THREADS`).
const FUSED_NODES: usize = 64;
const FUSED_THREADS: u32 = 256;

/// Inputs of [`global_variance`] (the host's f64 factors of the sample system).
#[derive(Clone, Copy, Debug)]
pub struct VarianceInputs<'a> {
    /// Sample coordinates in kriging space, interleaved: 2n values.
    pub samples_xy: &'a [f64],
    /// L⁻¹, n × n lower triangular, row-major (C = L Lᵀ the sample covariance matrix).
    pub linv: &'a [f64],
    /// G = L⁻¹F, n × p, row-major.
    pub g: &'a [f64],
    /// R⁻¹, p × p lower, row-major (GᵀG = R Rᵀ).
    pub rinv: &'a [f64],
    /// p ∈ {0 (simple kriging), 1, 3, 6}; with the support's node drift, up to its stride.
    pub drift_terms: usize,
    pub drift_scale: f64,
    /// Blocks and host-computed drift terms (default: points, the polynomial drift). The caller
    /// sets the covariance's `var_zero` to C̄(B, B) for blocks.
    pub support: TargetSupport<'a>,
}

/// Times of [`global_variance`], milliseconds (CUDA events, summed over tiles).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct VarianceTimes {
    /// Covariance tiles K.
    pub k_ms: f64,
    /// Products with [L⁻¹; GᵀL⁻¹]: the fused kernel (product and reduction), or cuBLAS' TF32
    /// GEMMs.
    pub gemm_ms: f64,
    /// Reductions to σ² (TF32 path only; the fused kernel reduces as it goes).
    pub reduce_ms: f64,
    /// k + gemm + reduce.
    pub kernel_ms: f64,
    /// The whole call.
    pub total_ms: f64,
    /// Nodes per tile.
    pub tile_nodes: usize,
}

/// GEMM in the precision T (cuBLAS S/DGEMM).
pub trait VarianceFloat: KrigeFloat
where
    CudaBlas: Gemm<Self>,
{
}
impl VarianceFloat for f32 {}
impl VarianceFloat for f64 {}

fn blas_err(action: &str) -> impl FnOnce(cudarc::cublas::result::CublasError) -> CudaError + '_ {
    move |source| CudaError::Cublas {
        action: action.to_string(),
        source,
    }
}

/// The kernels [`global_variance`] launches for `samples` samples without `tf32` (for
/// [`crate::Gpu::prepare`]).
pub fn variance_kernels<T: KrigeFloat>(samples: usize) -> [String; 2] {
    let second = if samples > FUSED_MAX_SAMPLES {
        "reduce"
    } else {
        "fused"
    };
    [
        format!("kriging_var_k_{}", T::SUFFIX),
        format!("kriging_var_{second}_{}", T::SUFFIX),
    ]
}

/// The kriging variance at every node of `grid` (rows · cols values). `tf32` (f32 only): the
/// GEMM runs on TF32 tensor cores (10-bit mantissa inputs; see the measured error in the docs).
/// `tile_nodes`: nodes per tile (None: as many as fit in 256 MB of K and W).
pub fn global_variance<T: VarianceFloat>(
    gpu: &Gpu,
    cov: &Covariance,
    grid: &NodeGrid,
    inp: &VarianceInputs,
    tf32: bool,
    tile_nodes: Option<usize>,
) -> Result<(Vec<T>, VarianceTimes), CudaError>
where
    CudaBlas: Gemm<T>,
{
    const K: &str = "kriging_var";
    let wall = Instant::now();
    let cp = cov.to_params()?;
    let nn = grid.check(K)?;
    let n = samples_count(inp.samples_xy, K)?;
    if n == 0 {
        return Err(invalid(K, "no samples"));
    }
    let p = inp.drift_terms;
    inp.support.check(nn, n, p, inp.drift_scale, false, K)?;
    check_finite("linv", inp.linv, n * n, K)?;
    check_finite("g", inp.g, n * p, K)?;
    check_finite("rinv", inp.rinv, p * p, K)?;
    if nn == 0 {
        return Ok((Vec::new(), VarianceTimes::default()));
    }
    let sfx = T::SUFFIX;
    // The fused kernel needs no cuBLAS handle, whose creation and first GEMM cost a process
    // ~0.25 s on an H100: more than the whole variance up to a few thousand samples. TF32 needs
    // cuBLAS' tensor-core GEMM, and many samples leave few node tiles per launch for the fused
    // kernel's 64-node blocks while the GEMM takes seconds: both run cuBLAS.
    let use_blas = (tf32 && sfx == "f32") || n > FUSED_MAX_SAMPLES;
    let blas = if use_blas { Some(gpu.blas()?) } else { None };
    let ldw = n + p;
    let per_node = if use_blas { 2 * n + p } else { n } * std::mem::size_of::<T>();
    let tile = tile_nodes
        .unwrap_or(TILE_BYTES / per_node)
        .clamp(1, nn)
        .min(i32::MAX as usize / ldw);
    let a = stacked::<T>(inp.linv, inp.g, n, p);
    let rinv = rinv_params(inp.rinv, p);
    let xy_t = T::vec_from(inp.samples_xy);
    let _held = gpu.hold();
    let d_xy = gpu.upload(&xy_t, "the sample coordinates")?;
    let d_a = gpu.upload(&a, "[L^-1; G^T L^-1]")?;
    let mut d_k = gpu.zeros::<T>(n * tile, "a covariance tile")?;
    let mut d_w = gpu.zeros::<T>(if use_blas { ldw * tile } else { 1 }, "a GEMM tile")?;
    let mut d_out = gpu.zeros::<T>(nn, "the variances")?;
    // Absent support arrays: one unread value (nb = 0, fstride = 0).
    let d_boff = gpu.upload(nonempty(inp.support.block), "the block points")?;
    let nb = inp.support.points() as u32;
    let d_fnode = gpu.upload(
        nonempty(inp.support.node_drift.unwrap_or(&[])),
        "the nodes' drift",
    )?;
    let fstride = if inp.support.node_drift.is_some() {
        inp.support.stride as u32
    } else {
        0
    };
    let names = if use_blas {
        [
            format!("kriging_var_k_{sfx}"),
            format!("kriging_var_reduce_{sfx}"),
        ]
    } else {
        variance_kernels::<T>(n)
    };
    gpu.prepare(MODULE, &[&names[0], &names[1]])?;
    let fk = gpu.function(MODULE, &names[0])?;
    let fr = gpu.function(MODULE, &names[1])?;
    if let Some(blas) = &blas {
        let mode = if tf32 && sfx == "f32" {
            blas_sys::cublasMath_t::CUBLAS_TF32_TENSOR_OP_MATH
        } else {
            blas_sys::cublasMath_t::CUBLAS_DEFAULT_MATH
        };
        // SAFETY: the handle is live (owned by `blas`); the device is held, so no other call
        // shares the handle while the mode is changed (reset below).
        unsafe { blas_sys::cublasSetMathMode(*blas.handle(), mode) }
            .result()
            .map_err(blas_err("setting the cuBLAS math mode"))?;
    }
    let mut times = VarianceTimes {
        tile_nodes: tile,
        ..VarianceTimes::default()
    };
    let mut j0 = 0usize;
    let mut result = Ok(());
    while j0 < nn {
        let m = tile.min(nn - j0);
        let params = VarParams {
            grid: GridParams::from_grid(grid),
            drift_scale: inp.drift_scale,
            j0: j0 as u64,
            m: m as u32,
            n: n as u32,
            p: p as u32,
            ldw: ldw as u32,
            rinv,
        };
        let e0 = gpu.mark()?;
        {
            let mut lb = gpu.stream().launch_builder(&fk);
            lb.arg(&params)
                .arg(&cp)
                .arg(&d_xy)
                .arg(&mut d_k)
                .arg(&d_boff)
                .arg(&nb);
            let cfg = LaunchConfig {
                grid_dim: (m as u32, 1, 1),
                block_dim: (128, 1, 1),
                shared_mem_bytes: 0,
            };
            // SAFETY: kriging_var_k_*(KrVarParams, KrCov, const T* sxy (2n), T* K, const double*
            // boff, u32 nb): block jl < m writes K[jl·n + i], i < n, inside the n·tile buffer
            // (m <= tile); reads boff[0..3nb) (nb = 0: none).
            unsafe { lb.launch(cfg) }.map_err(launch_err("kriging_var_k".into()))?;
        }
        let e1 = gpu.mark()?;
        if let Some(blas) = &blas {
            let cfg = GemmConfig {
                transa: blas_sys::cublasOperation_t::CUBLAS_OP_N,
                transb: blas_sys::cublasOperation_t::CUBLAS_OP_N,
                m: ldw as i32,
                n: m as i32,
                k: n as i32,
                alpha: T::from_f64(1.0),
                lda: ldw as i32,
                ldb: n as i32,
                beta: T::from_f64(0.0),
                ldc: ldw as i32,
            };
            // SAFETY: column-major A (ldw × n, lda = ldw: ldw·n elements), K (n × m, ldb = n:
            // n·m <= n·tile elements), W (ldw × m, ldc = ldw: ldw·m <= ldw·tile elements); all
            // on this device, the handle on its stream.
            if let Err(e) = unsafe { blas.gemm(cfg, &d_a, &d_k, &mut d_w) } {
                result = Err(blas_err("running the variance GEMM")(e));
                break;
            }
        }
        let e2 = gpu.mark()?;
        if blas.is_some() {
            let mut lb = gpu.stream().launch_builder(&fr);
            lb.arg(&params)
                .arg(&cp)
                .arg(&d_w)
                .arg(&mut d_out)
                .arg(&d_fnode)
                .arg(&fstride);
            let cfg = LaunchConfig {
                grid_dim: (m.div_ceil(REDUCE_WARPS as usize) as u32, 1, 1),
                block_dim: (32 * REDUCE_WARPS, 1, 1),
                shared_mem_bytes: 0,
            };
            // SAFETY: kriging_var_reduce_*(KrVarParams, KrCov, const T* W, T* out, const double*
            // fnode, u32 fstride): warp jl < m reads W[jl·ldw + r], r < ldw, fnode[(j0 + jl)·
            // fstride + l] for l < p (checked: nn·fstride values; none when fstride = 0), and
            // writes out[j0 + jl] < nn.
            unsafe { lb.launch(cfg) }.map_err(launch_err("kriging_var_reduce".into()))?;
        } else {
            let mut lb = gpu.stream().launch_builder(&fr);
            lb.arg(&params)
                .arg(&cp)
                .arg(&d_a)
                .arg(&d_k)
                .arg(&mut d_out)
                .arg(&d_fnode)
                .arg(&fstride);
            let cfg = LaunchConfig {
                grid_dim: (m.div_ceil(FUSED_NODES) as u32, 1, 1),
                block_dim: (FUSED_THREADS, 1, 1),
                shared_mem_bytes: 0,
            };
            // SAFETY: kriging_var_fused_*(KrVarParams, KrCov, const T* A, const T* K, T* out):
            // reads A[c·ldw + r] for r < n + p = ldw, c < n (ldw·n elements), K[jl·n + c] for
            // jl < m, c < n (inside n·tile), fnode as kriging_var_reduce, and writes
            // out[j0 + jl] < nn; block b owns nodes
            // [64 b, 64 b + 64) ∩ [0, m).
            unsafe { lb.launch(cfg) }.map_err(launch_err("kriging_var_fused".into()))?;
        }
        let e3 = gpu.mark()?;
        times.k_ms += event_ms(&e0, &e1)?;
        times.gemm_ms += event_ms(&e1, &e2)?
            + if blas.is_some() {
                0.0
            } else {
                event_ms(&e2, &e3)?
            };
        times.reduce_ms += if blas.is_some() {
            event_ms(&e2, &e3)?
        } else {
            0.0
        };
        j0 += m;
    }
    if let Some(blas) = &blas {
        // SAFETY: as above; back to the default for the handle's other users.
        let reset = unsafe {
            blas_sys::cublasSetMathMode(*blas.handle(), blas_sys::cublasMath_t::CUBLAS_DEFAULT_MATH)
        }
        .result()
        .map_err(blas_err("resetting the cuBLAS math mode"));
        result?;
        reset?;
    } else {
        result?;
    }
    let out = gpu.download(&d_out, nn, "the variances")?;
    times.kernel_ms = times.k_ms + times.gemm_ms + times.reduce_ms;
    times.total_ms = wall.elapsed().as_secs_f64() * 1e3;
    Ok((out, times))
}

/// `v`, or one zero when it is empty (a kernel argument that is not read).
pub(crate) fn nonempty(v: &[f64]) -> &[f64] {
    if v.is_empty() { &[0.0] } else { v }
}

/// A = [L⁻¹; Gᵀ L⁻¹], (n + p) × n, column-major (a[r + c·(n + p)]), from L⁻¹ (row-major n × n,
/// lower) and G (row-major n × p).
pub(crate) fn stacked<T: KrigeFloat>(linv: &[f64], g: &[f64], n: usize, p: usize) -> Vec<T> {
    let ldw = n + p;
    let mut a = vec![T::default(); ldw * n];
    for c in 0..n {
        for r in c..n {
            a[r + c * ldw] = T::from_f64(linv[r * n + c]);
        }
        for l in 0..p {
            let mut s = 0.0;
            for i in c..n {
                s += g[i * p + l] * linv[i * n + c];
            }
            a[n + l + c * ldw] = T::from_f64(s);
        }
    }
    a
}

/// R⁻¹ (p × p lower, row-major) in the parameters' fixed array.
pub(crate) fn rinv_params(rinv: &[f64], p: usize) -> [f64; 36] {
    let mut out = [0.0f64; 36];
    for a in 0..p {
        for b in 0..=a {
            out[a * p + b] = rinv[a * p + b];
        }
    }
    out
}
