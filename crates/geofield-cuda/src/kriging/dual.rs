//! [`dual_predict`]: dual-kriging predictions on a node grid.

use std::time::Instant;

use cudarc::driver::{LaunchConfig, PushKernelArg};

use super::cov::id;
use super::params::{DualParams, GridParams};
use super::{
    Covariance, H_MAX_LAUNCH, KrigeFloat, KrigingTimes, MODULE, NodeGrid, check_drift,
    check_finite, event_ms, launch_err, prec_suffix, samples_count,
};
use crate::context::Gpu;
use crate::error::{CudaError, invalid};

const THREADS: u32 = 256;
const H_TEMPLATES: [usize; 6] = [1, 2, 4, 8, 12, 16];

/// Inputs of [`dual_predict`], all f64 from the host's solve.
#[derive(Clone, Copy, Debug)]
pub struct DualInputs<'a> {
    /// Sample coordinates in kriging space, interleaved (x₀, y₀, x₁, …): 2n values.
    pub samples_xy: &'a [f64],
    /// α, n × H, sample-major: `alpha[i·H + h]`.
    pub alpha: &'a [f64],
    /// β, p × H: `beta[l·H + h]` (simple kriging: p = 1 and β = the mean).
    pub beta: &'a [f64],
    /// H, the number of surfaces (≥ 1).
    pub surfaces: usize,
    /// p ∈ {0, 1, 3, 6}.
    pub drift_terms: usize,
    /// s of the drift coordinates (u, v) = (x/s, y/s).
    pub drift_scale: f64,
}

/// Which specialised pair loop a covariance can take: (suffix, k1 for f32, k1 for f64).
fn fast_path(cov: &super::CovParams) -> Option<(&'static str, f64, f64)> {
    if cov.n_struct != 1 || cov.offset != 0.0 {
        return None;
    }
    let s = &cov.s[0];
    if s.sill.is_nan() || s.sill <= 0.0 {
        return None;
    }
    let log2e = std::f64::consts::LOG2_E;
    match s.model {
        id::EXP => Some(("exp", -3.0 * log2e / s.range, -3.0 / s.range)),
        id::GAU => Some((
            "gau",
            -3.0 * log2e / (s.range * s.range),
            -3.0 / (s.range * s.range),
        )),
        id::SPH => Some(("sph", 1.0 / s.range, 1.0 / s.range)),
        _ => None,
    }
}

/// Surfaces per launch as a template (the smallest of [`H_TEMPLATES`] holding `hg`).
fn template_for(hg: usize) -> usize {
    H_TEMPLATES
        .iter()
        .copied()
        .find(|&t| t >= hg)
        .unwrap_or(H_MAX_LAUNCH)
}

fn dual_kernels_for(prec: &str, model: &str, surfaces: usize) -> Vec<String> {
    let mut v: Vec<String> = (0..surfaces)
        .step_by(H_MAX_LAUNCH)
        .map(|h0| {
            let ht = template_for((surfaces - h0).min(H_MAX_LAUNCH));
            format!("kriging_dual_{prec}_{model}_h{ht}")
        })
        .collect();
    v.dedup();
    v
}

/// The kernels [`dual_predict`] launches for `surfaces` surfaces of `cov` (for
/// [`crate::Gpu::prepare`], so that a caller can compile them together with others).
pub fn dual_kernels<T: KrigeFloat>(
    cov: &Covariance,
    surfaces: usize,
    fast: bool,
) -> Result<Vec<String>, CudaError> {
    let cp = cov.to_params()?;
    let model = fast_path(&cp).map_or("gen", |f| f.0);
    Ok(dual_kernels_for(
        prec_suffix::<T>(fast),
        model,
        surfaces.max(1),
    ))
}

/// Dual-kriging predictions at every node of `grid`, surface-major (H · rows · cols values).
/// `fast` (f32 only): MUFU exp and sqrt instead of the accurate f32 versions.
pub fn dual_predict<T: KrigeFloat>(
    gpu: &Gpu,
    cov: &Covariance,
    grid: &NodeGrid,
    inp: &DualInputs,
    fast: bool,
) -> Result<(Vec<T>, KrigingTimes), CudaError> {
    const K: &str = "kriging_dual";
    let wall = Instant::now();
    let cp = cov.to_params()?;
    let nn = grid.check(K)?;
    let n = samples_count(inp.samples_xy, K)?;
    let hh = inp.surfaces;
    if hh == 0 {
        return Err(invalid(K, "surfaces must be >= 1"));
    }
    check_drift(inp.drift_terms, inp.drift_scale, K)?;
    let p = inp.drift_terms;
    check_finite("alpha", inp.alpha, n * hh, K)?;
    check_finite("beta", inp.beta, p * hh, K)?;
    let out_len = nn
        .checked_mul(hh)
        .ok_or_else(|| invalid(K, "nodes × surfaces overflows"))?;
    if nn == 0 {
        return Ok((Vec::new(), KrigingTimes::default()));
    }
    let prec = prec_suffix::<T>(fast);
    let fp = fast_path(&cp);
    let model = fp.map_or("gen", |f| f.0);
    let is_f64 = T::SUFFIX == "f64";
    let (k1, eps2, czero, ascale) = match fp {
        Some((_, k32, k64)) => (
            if is_f64 { k64 } else { k32 },
            if cp.exact != 0 { cp.eps * cp.eps } else { -1.0 },
            cp.c_zero / cp.s[0].sill,
            cp.s[0].sill,
        ),
        None => (0.0, -1.0, 0.0, 1.0),
    };
    let xy_t = T::vec_from(inp.samples_xy);
    let _held = gpu.hold();
    let d_xy = gpu.upload(&xy_t, "the sample coordinates")?;
    let mut d_out = gpu.zeros::<T>(out_len, "the predictions")?;
    let mut kernel_ms = 0.0;
    let blocks_per = |npt: usize| nn.div_ceil(THREADS as usize * npt);
    let names = dual_kernels_for(prec, model, hh);
    let names_ref: Vec<&str> = names.iter().map(String::as_str).collect();
    gpu.prepare(MODULE, &names_ref)?;
    for h0 in (0..hh).step_by(H_MAX_LAUNCH) {
        let hg = (hh - h0).min(H_MAX_LAUNCH);
        let ht = template_for(hg);
        let npt = if ht <= 4 { 2 } else { 1 };
        // α and β of this group of surfaces, H = hg columns
        let mut a = Vec::with_capacity(n * hg);
        for i in 0..n {
            a.extend(
                inp.alpha[i * hh + h0..i * hh + h0 + hg]
                    .iter()
                    .map(|&v| T::from_f64(v)),
            );
        }
        let mut b = Vec::with_capacity(p * hg);
        for l in 0..p {
            b.extend_from_slice(&inp.beta[l * hh + h0..l * hh + h0 + hg]);
        }
        let d_a = gpu.upload(&a, "alpha")?;
        let d_b = gpu.upload(&b, "beta")?;
        let params = DualParams {
            grid: GridParams::from_grid(grid),
            drift_scale: inp.drift_scale,
            n_nodes: nn as u64,
            n: n as u32,
            h: hg as u32,
            p: p as u32,
            pad0: 0,
            k1,
            eps2,
            czero,
            alpha_scale: ascale,
        };
        let name = format!("kriging_dual_{prec}_{model}_h{ht}");
        let f = gpu.function(MODULE, &name)?;
        let mut view = d_out.slice_mut(h0 * nn..(h0 + hg) * nn);
        let t0 = gpu.mark()?;
        {
            let mut lb = gpu.stream().launch_builder(&f);
            lb.arg(&params)
                .arg(&cp)
                .arg(&d_xy)
                .arg(&d_a)
                .arg(&d_b)
                .arg(&mut view);
            let cfg = LaunchConfig {
                grid_dim: (u32::try_from(blocks_per(npt)).unwrap_or(u32::MAX), 1, 1),
                block_dim: (THREADS, 1, 1),
                shared_mem_bytes: 0,
            };
            // SAFETY: kriging_dual_*(KrDualParams, KrCov by value, const T* sxy (2n), const T*
            // alpha (n·h), const double* beta (p·h), T* out): the kernel reads samples < n,
            // alpha/beta entries < n·h / p·h (one-element dummies when empty, never read when
            // n or p is 0) and writes out[h'·N + j] for h' < h, j < N = rows·cols, all inside
            // the view of h·N elements. The grid covers N nodes (NPT per thread, 256 threads).
            unsafe { lb.launch(cfg) }.map_err(launch_err(name.clone()))?;
        }
        let t1 = gpu.mark()?;
        kernel_ms += event_ms(&t0, &t1)?;
    }
    let out = gpu.download(&d_out, out_len, "the predictions")?;
    Ok((
        out,
        KrigingTimes {
            kernel_ms,
            total_ms: wall.elapsed().as_secs_f64() * 1e3,
        },
    ))
}
