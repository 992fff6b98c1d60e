//! [`local_krige3`]: 3-D kriging in a moving neighbourhood (f64). The host maps the samples and
//! the nodes into kriging space (centred, anisotropy applied); the device finds each node's k
//! nearest samples on its 3-D grid and solves the node's system with the 2-D kernel's warp
//! (`kr_local<double, 3>`): the same Cholesky, drift system and weights, on (x, y, z) with the
//! drift (1, u, v, w).

use std::time::Instant;

use cudarc::driver::{LaunchConfig, PushKernelArg};

use super::local::{download_local, local_layout};
use super::params::{LocalParams, SupportArgs};
use super::{
    Covariance, K_MAX, LocalOutput, LocalTimes, MODULE, check_finite, event_ms, launch_err,
};
use crate::context::Gpu;
use crate::error::{CudaError, invalid};
use crate::neighbors::{DeviceGrid, DeviceIndex};

/// Nodes per tile (the tile's coordinates and neighbour lists are the per-node storage).
const TILE_NODES: usize = 1 << 17;

/// Inputs of [`local_krige3`].
#[derive(Clone, Copy, Debug)]
pub struct Local3Inputs<'a> {
    /// Sample coordinates in kriging space, interleaved: 3n values.
    pub samples: &'a [f64],
    /// The n sample values.
    pub values: &'a [f64],
    /// Node coordinates in kriging space, interleaved: 3m values.
    pub nodes: &'a [f64],
    /// Neighbours per node, 1..=64.
    pub k: usize,
    /// Keep only samples with d² ≤ radius2.
    pub radius2: Option<f64>,
    /// p: 0 (simple kriging with `mean`), 1 (ordinary) or 4 (the linear drift 1, u, v, w).
    pub drift_terms: usize,
    /// The drift's coordinates are divided by this (> 0).
    pub drift_scale: f64,
    /// Simple kriging's known mean (ignored when p > 0).
    pub mean: f64,
    pub want_variance: bool,
}

/// Prediction and (when asked) variance at every node; NaN where the node has fewer than
/// max(p, 1) neighbours or its system is singular.
pub fn local_krige3(
    gpu: &Gpu,
    cov: &Covariance,
    inp: &Local3Inputs,
) -> Result<(LocalOutput<f64>, LocalTimes), CudaError> {
    const K: &str = "kriging_local3";
    let wall = Instant::now();
    let cp = cov.to_params()?;
    let n = inp.values.len();
    check_finite("values", inp.values, n, K)?;
    check_finite("samples", inp.samples, 3 * n, K)?;
    if n >= i32::MAX as usize {
        return Err(invalid(K, format!("{n} samples is too many")));
    }
    if !inp.nodes.len().is_multiple_of(3) {
        return Err(invalid(
            K,
            format!("nodes has {} values, not triples", inp.nodes.len()),
        ));
    }
    let nn = inp.nodes.len() / 3;
    check_finite("nodes", inp.nodes, 3 * nn, K)?;
    if inp.k == 0 || inp.k > K_MAX {
        return Err(invalid(K, format!("k = {} out of 1..={K_MAX}", inp.k)));
    }
    let p = inp.drift_terms;
    if ![0, 1, 4].contains(&p) {
        return Err(invalid(K, format!("drift_terms = {p} (0, 1 or 4)")));
    }
    if !(inp.drift_scale.is_finite() && inp.drift_scale > 0.0) {
        return Err(invalid(
            K,
            format!("drift_scale = {} must be > 0", inp.drift_scale),
        ));
    }
    let mean = if p == 0 { inp.mean } else { 0.0 };
    if !mean.is_finite() {
        return Err(invalid(K, "the mean is not finite"));
    }
    if let Some(r2) = inp.radius2
        && (r2.is_nan() || r2 < 0.0)
    {
        return Err(invalid(K, format!("radius2 = {r2} must be >= 0")));
    }
    if nn == 0 || n == 0 {
        let nan = vec![f64::NAN; nn];
        return Ok((
            LocalOutput {
                pred: nan.clone(),
                var: inp.want_variance.then_some(nan),
            },
            LocalTimes::default(),
        ));
    }
    let k = inp.k;
    let (region, warps) = local_layout(k, 8);
    let smem = warps * (region * 8 + 4 * k);
    let _held = gpu.hold();
    let mut times = LocalTimes::default();
    let d_xyz = gpu.upload(inp.samples, "the sample coordinates")?;
    let d_z = gpu.upload(inp.values, "the sample values")?;
    let d_mean = gpu.upload(&[mean], "the mean")?;
    let mut d_pred = gpu.zeros::<f64>(nn, "the predictions")?;
    let mut d_var = gpu.zeros::<f64>(if inp.want_variance { nn } else { 1 }, "the variances")?;
    let tile = TILE_NODES.min(nn);
    let mut d_idx = gpu.zeros::<i64>(tile * k, "the neighbour indices")?;
    let mut d_d2 = gpu.zeros::<f64>(tile * k, "the neighbour distances")?;
    let mut dgrid = DeviceGrid::<f64>::new(gpu, n, 3, DeviceIndex::Uniform)?;
    let name = "kriging_local3_f64";
    let mut units = dgrid.kernels();
    units.push((MODULE, name.to_string()));
    let refs: Vec<(&'static str, &str)> = units.iter().map(|(m, k)| (*m, k.as_str())).collect();
    gpu.prepare_units(&refs)?;
    let e0 = gpu.mark()?;
    dgrid.build(gpu, &d_xyz)?;
    let e1 = gpu.mark()?;
    times.build_ms = event_ms(&e0, &e1)?;
    let f_local = gpu.function(MODULE, name)?;
    // No block points and no host drift terms: the kernel reads none of these pointers.
    let sargs = SupportArgs::default();
    let mut j0 = 0usize;
    while j0 < nn {
        let m = tile.min(nn - j0);
        let d_q = gpu.upload(&inp.nodes[3 * j0..3 * (j0 + m)], "the node coordinates")?;
        let t0 = gpu.mark()?;
        dgrid.knn(
            gpu,
            Some((&d_q, m)),
            k,
            inp.radius2,
            false,
            &mut d_idx,
            &mut d_d2,
        )?;
        let t1 = gpu.mark()?;
        let lp = LocalParams {
            grid: Default::default(),
            drift_scale: inp.drift_scale,
            j0: j0 as u64,
            n_nodes: nn as u64,
            m: m as u32,
            k: k as u32,
            n: n as u32,
            h: 1,
            p: p as u32,
            want_var: u32::from(inp.want_variance),
            region: region as u32,
            pad0: 0,
        };
        {
            let mut lb = gpu.stream().launch_builder(&f_local);
            lb.arg(&lp)
                .arg(&cp)
                .arg(&d_xyz)
                .arg(&d_z)
                .arg(&d_mean)
                .arg(&d_idx)
                .arg(&mut d_pred)
                .arg(&mut d_var)
                .arg(&sargs)
                .arg(&d_q);
            let cfg = LaunchConfig {
                grid_dim: (m.div_ceil(warps) as u32, 1, 1),
                block_dim: (32 * warps as u32, 1, 1),
                shared_mem_bytes: smem as u32,
            };
            // SAFETY: kriging_local3_f64(KrLocalParams, KrCov, const double* sxyz (3n), const
            // double* z (n), const double* mean (1), const long long* nbr (m·k), double* pred
            // (N), double* var (N when want_var), KrSupportArgs (nb = 0, fstride = 0: no
            // pointer read), const double* qpts (3m)): warp jl < m reads nbr[jl·k..] (indices
            // < n from the k-NN search, -1 padding skipped) and qpts[3jl..3jl+3], writes
            // pred[j0 + jl] and var[j0 + jl] when want_var. Shared memory: warps × (region
            // doubles + k ints), as the kernel lays it out.
            unsafe { lb.launch(cfg) }.map_err(launch_err(name.into()))?;
        }
        let t2 = gpu.mark()?;
        times.search_ms += event_ms(&t0, &t1)?;
        times.solve_ms += event_ms(&t1, &t2)?;
        j0 += m;
    }
    let out = download_local(gpu, &d_pred, &d_var, nn, 1, inp.want_variance)?;
    times.kernel_ms = times.build_ms + times.search_ms + times.solve_ms;
    times.total_ms = wall.elapsed().as_secs_f64() * 1e3;
    Ok((out, times))
}
