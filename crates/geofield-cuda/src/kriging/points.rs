//! [`points_eval`]: a factored global system evaluated at nodes the host lists, in 2 or 3
//! dimensions, with a covariance per sample (3-D kriging: one; cokriging: C₀ᵥ of the sample's
//! variable v). f64.
//!
//! Per tile of nodes: a kernel writes K (n × m, `kriging_pts_k_f64`), a warp per node forms
//! Kᵀα (`kriging_pts_dot_f64`), and with the variance `kriging_var_fused_f64` reduces
//! [L⁻¹; GᵀL⁻¹]·K to σ² = C₀ − |w|² + |R⁻¹(f − Gᵀw)|² with the host's drift terms f. The
//! caller adds fᵀβ (and any mean) to Kᵀα.

use std::time::Instant;

use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use cudarc::driver::{LaunchConfig, PushKernelArg};

use super::params::{GridParams, VarParams};
use super::variance::{rinv_params, stacked};
use super::{CovParams, KrigingTimes, MODULE, check_finite, event_ms, launch_err};
use crate::context::Gpu;
use crate::error::{CudaError, invalid};

/// Most covariances of one evaluation (`KR_PTS_MAXCOV`).
pub const POINTS_MAX_COVS: usize = 4;
/// Bytes of K per tile.
const TILE_BYTES: usize = 256 << 20;
const FUSED_NODES: usize = 64;
const DOT_WARPS: u32 = 8;

/// C `KrPtsParams` (24 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PtsParams {
    pub j0: u64,
    pub m: u32,
    pub n: u32,
    pub dim: u32,
    pub ncov: u32,
}
// SAFETY: #[repr(C)] integers matching `KrPtsParams` (size asserted on both sides).
unsafe impl DeviceRepr for PtsParams {}

/// The variance's factors (the host's f64 solve): as [`super::VarianceInputs`], with the drift
/// terms of every node given.
#[derive(Clone, Copy, Debug)]
pub struct PointsVariance<'a> {
    /// L⁻¹, n × n lower, row-major.
    pub linv: &'a [f64],
    /// G = L⁻¹F, n × p, row-major.
    pub g: &'a [f64],
    /// R⁻¹, p × p lower, row-major.
    pub rinv: &'a [f64],
    /// p ≤ 6.
    pub p: usize,
    /// The drift terms of every node, p per node.
    pub node_drift: &'a [f64],
    /// C(0) of the prediction.
    pub c00: f64,
}

/// Inputs of [`points_eval`] ([`super::Covariance`] builds the covariances).
#[derive(Clone, Copy, Debug)]
pub struct PointsInputs<'a> {
    /// 2 or 3.
    pub dim: usize,
    /// Sample coordinates in kriging space, `dim` per sample.
    pub samples: &'a [f64],
    /// The covariances (1..=[`POINTS_MAX_COVS`]), as [`Covariance::to_params`] or
    /// [`Covariance::to_params_cross`] gives them.
    pub covs: &'a [CovParams],
    /// Which covariance each sample takes (empty: the first for every sample).
    pub cov_of: &'a [u32],
    /// The dual weights α, one per sample.
    pub alpha: &'a [f64],
    /// Node coordinates in kriging space, `dim` per node.
    pub nodes: &'a [f64],
    pub variance: Option<PointsVariance<'a>>,
}

/// Kᵀα at every node, the variances when asked, and the times.
pub type PointsOutput = (Vec<f64>, Option<Vec<f64>>, KrigingTimes);

/// [`PointsOutput`] of `inp`.
pub fn points_eval(gpu: &Gpu, inp: &PointsInputs) -> Result<PointsOutput, CudaError> {
    const K: &str = "kriging_pts";
    let wall = Instant::now();
    let d = inp.dim;
    if d != 2 && d != 3 {
        return Err(invalid(K, format!("dimension {d}: 2 or 3")));
    }
    if inp.covs.is_empty() || inp.covs.len() > POINTS_MAX_COVS {
        return Err(invalid(
            K,
            format!("{} covariances: 1 to {POINTS_MAX_COVS}", inp.covs.len()),
        ));
    }
    let cps = inp.covs.to_vec();
    if !inp.samples.len().is_multiple_of(d) || !inp.nodes.len().is_multiple_of(d) {
        return Err(invalid(K, "coordinates are not whole points"));
    }
    let (n, nn) = (inp.samples.len() / d, inp.nodes.len() / d);
    if n == 0 || n >= i32::MAX as usize {
        return Err(invalid(K, format!("{n} samples")));
    }
    check_finite("samples", inp.samples, n * d, K)?;
    check_finite("nodes", inp.nodes, nn * d, K)?;
    check_finite("alpha", inp.alpha, n, K)?;
    let cid: Vec<u32> = if inp.cov_of.is_empty() {
        vec![0; n]
    } else {
        inp.cov_of.to_vec()
    };
    if cid.len() != n || cid.iter().any(|&c| c as usize >= inp.covs.len()) {
        return Err(invalid(K, "a sample's covariance index is out of range"));
    }
    let p = inp.variance.map_or(0, |v| v.p);
    if let Some(v) = &inp.variance {
        if p > super::P_MAX {
            return Err(invalid(K, format!("p = {p} drift terms")));
        }
        check_finite("linv", v.linv, n * n, K)?;
        check_finite("g", v.g, n * p, K)?;
        check_finite("rinv", v.rinv, p * p, K)?;
        check_finite("node drift", v.node_drift, nn * p, K)?;
    }
    if nn == 0 {
        return Ok((
            Vec::new(),
            inp.variance.map(|_| Vec::new()),
            KrigingTimes::default(),
        ));
    }
    let ldw = n + p;
    let tile = (TILE_BYTES / (n * 8)).clamp(1, nn);
    let _held = gpu.hold();
    let d_covs = gpu.upload(&cps, "the covariances")?;
    let d_cid = gpu.upload(&cid, "the samples' covariances")?;
    let d_s = gpu.upload(inp.samples, "the sample coordinates")?;
    let d_alpha = gpu.upload(inp.alpha, "the dual weights")?;
    let mut d_q = gpu.zeros::<f64>(tile * d, "a tile of nodes")?;
    let mut d_k = gpu.zeros::<f64>(n * tile, "a covariance tile")?;
    let mut d_pred = gpu.zeros::<f64>(nn, "the predictions")?;
    let mut d_var =
        gpu.zeros::<f64>(if inp.variance.is_some() { nn } else { 1 }, "the variances")?;
    let (d_a, d_fnode, mut var_cov) = match &inp.variance {
        Some(v) => {
            let mut c = cps[0];
            c.var_zero = v.c00;
            (
                Some(gpu.upload(&stacked::<f64>(v.linv, v.g, n, p), "[L^-1; G^T L^-1]")?),
                Some(gpu.upload(v.node_drift, "the nodes' drift")?),
                Some(c),
            )
        }
        None => (None, None, None),
    };
    let mut names = vec!["kriging_pts_k_f64", "kriging_pts_dot_f64"];
    if inp.variance.is_some() {
        names.push("kriging_var_fused_f64");
    }
    gpu.prepare(MODULE, &names)?;
    let fk = gpu.function(MODULE, names[0])?;
    let fd = gpu.function(MODULE, names[1])?;
    let ff = if inp.variance.is_some() {
        Some(gpu.function(MODULE, names[2])?)
    } else {
        None
    };
    let rinv = inp.variance.map_or([0.0; 36], |v| rinv_params(v.rinv, p));
    // The fused kernel's node grid is not read (its drift comes from fnode); one column keeps
    // its index arithmetic defined.
    let grid = GridParams {
        cols: 1,
        rows: nn as u32,
        ..GridParams::default()
    };
    let mut kernel_ms = 0.0;
    let mut j0 = 0usize;
    while j0 < nn {
        let m = tile.min(nn - j0);
        gpu.stream()
            .memcpy_htod(&inp.nodes[j0 * d..(j0 + m) * d], &mut d_q)
            .map_err(|source| CudaError::Driver {
                action: "copying a tile of nodes to the device".into(),
                source,
            })?;
        let pp = PtsParams {
            j0: j0 as u64,
            m: m as u32,
            n: n as u32,
            dim: d as u32,
            ncov: cps.len() as u32,
        };
        let e0 = gpu.mark()?;
        {
            let mut lb = gpu.stream().launch_builder(&fk);
            lb.arg(&pp)
                .arg(&d_covs)
                .arg(&d_cid)
                .arg(&d_s)
                .arg(&d_q)
                .arg(&mut d_k);
            let cfg = LaunchConfig {
                grid_dim: (m as u32, 1, 1),
                block_dim: (128, 1, 1),
                shared_mem_bytes: 0,
            };
            // SAFETY: kriging_pts_k_f64(KrPtsParams, const KrCov* covs (ncov), const u32* cid
            // (n, each < ncov: checked), const double* s (n·dim), const double* q (m·dim <=
            // tile·dim), double* K): block jl < m writes K[jl·n + i], i < n (n·tile values).
            unsafe { lb.launch(cfg) }.map_err(launch_err("kriging_pts_k_f64".into()))?;
        }
        {
            let mut lb = gpu.stream().launch_builder(&fd);
            lb.arg(&pp).arg(&d_k).arg(&d_alpha).arg(&mut d_pred);
            let cfg = LaunchConfig {
                grid_dim: (m.div_ceil(DOT_WARPS as usize) as u32, 1, 1),
                block_dim: (32 * DOT_WARPS, 1, 1),
                shared_mem_bytes: 0,
            };
            // SAFETY: kriging_pts_dot_f64(KrPtsParams, const double* K, const double* alpha (n),
            // double* out (nn)): warp jl < m reads K[jl·n + i] and writes out[j0 + jl] < nn.
            unsafe { lb.launch(cfg) }.map_err(launch_err("kriging_pts_dot_f64".into()))?;
        }
        if let (Some(ff), Some(d_a), Some(d_fnode), Some(vc)) =
            (&ff, &d_a, &d_fnode, var_cov.as_mut())
        {
            let params = VarParams {
                grid,
                drift_scale: 1.0,
                j0: j0 as u64,
                m: m as u32,
                n: n as u32,
                p: p as u32,
                ldw: ldw as u32,
                rinv,
            };
            let fstride = p as u32;
            let mut lb = gpu.stream().launch_builder(ff);
            lb.arg(&params)
                .arg(&*vc)
                .arg(d_a)
                .arg(&d_k)
                .arg(&mut d_var)
                .arg(d_fnode)
                .arg(&fstride);
            let cfg = LaunchConfig {
                grid_dim: (m.div_ceil(FUSED_NODES) as u32, 1, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            };
            // SAFETY: kriging_var_fused_f64(KrVarParams, KrCov, const double* A ((n+p)·n),
            // const double* K (n·tile), double* out (nn), const double* fnode (nn·p), u32
            // fstride = p): reads A[c·ldw + r], K[jl·n + c] (jl < m, c < n), fnode[(j0 + jl)·p
            // + l] (l < p), writes out[j0 + jl] < nn.
            unsafe { lb.launch(cfg) }.map_err(launch_err("kriging_var_fused_f64".into()))?;
        }
        let e1 = gpu.mark()?;
        kernel_ms += event_ms(&e0, &e1)?;
        j0 += m;
    }
    let pred = gpu.download(&d_pred, nn, "the predictions")?;
    let var = if inp.variance.is_some() {
        Some(gpu.download(&d_var, nn, "the variances")?)
    } else {
        None
    };
    Ok((
        pred,
        var,
        KrigingTimes {
            kernel_ms,
            total_ms: wall.elapsed().as_secs_f64() * 1e3,
        },
    ))
}

// Zero bits are a valid covariance description (all numbers), for the upload of an array of them.
// SAFETY: `CovParams` is #[repr(C)] plain old data (integers, floats and arrays of them).
unsafe impl ValidAsZeroBits for CovParams {}
