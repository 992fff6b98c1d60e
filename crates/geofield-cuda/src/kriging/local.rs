//! [`local_krige`]: kriging in a moving neighbourhood of the k nearest samples.

use std::time::Instant;

use cudarc::driver::{DevicePtr, LaunchConfig, PushKernelArg};

use super::params::{GridParams, LocalParams, NodesParams, SupportArgs};
use super::variance::nonempty;
use super::{
    Covariance, K_MAX, KrigeFloat, MODULE, NodeGrid, TargetSupport, check_finite, event_ms,
    launch_err, samples_count,
};
use crate::context::Gpu;
use crate::error::{CudaError, invalid};
use crate::neighbors::{DeviceGrid, DeviceIndex};

/// Nodes per tile: the neighbour lists of one tile (nodes × k indices and d²) are the only
/// per-node storage.
const TILE_NODES: usize = 1 << 17;
/// Dynamic shared memory available to one block without an opt-in (48 KB, less the 464-byte
/// staged covariance).
const SMEM_BUDGET: usize = 48 * 1024 - 512;
const MAX_WARPS: usize = 4;
const BSTRIDE: usize = 9;

/// Inputs of [`local_krige`].
#[derive(Clone, Copy, Debug)]
pub struct LocalInputs<'a> {
    /// Sample coordinates in kriging space, interleaved: 2n values.
    pub samples_xy: &'a [f64],
    /// Values, n × H, sample-major: `values[i·H + h]`.
    pub values: &'a [f64],
    /// H ≥ 1.
    pub surfaces: usize,
    /// Neighbours per node, 1..=64.
    pub k: usize,
    /// Keep only samples with d² ≤ radius2 (r² computed by the caller in f64).
    pub radius2: Option<f64>,
    /// p: 0 (simple kriging with `means`), 1 (ordinary), 3 or 6 (universal).
    pub drift_terms: usize,
    pub drift_scale: f64,
    /// Simple kriging: the known mean of each surface (H values); ignored when p > 0.
    pub means: &'a [f64],
    /// Also compute the kriging variance.
    pub want_variance: bool,
    /// Blocks and host-computed drift terms (default: points, the polynomial drift; with
    /// `node_drift`, `sample_drift` too). The caller sets the covariance's `var_zero` to
    /// C̄(B, B) for blocks.
    pub support: TargetSupport<'a>,
}

/// Predictions (H · rows · cols, surface-major) and variances (rows · cols) when asked.
#[derive(Clone, Debug, PartialEq)]
pub struct LocalOutput<T> {
    pub pred: Vec<T>,
    pub var: Option<Vec<T>>,
}

/// Times of [`local_krige`], milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LocalTimes {
    /// Building the sample grid.
    pub build_ms: f64,
    /// Node coordinates and k-NN searches (all tiles).
    pub search_ms: f64,
    /// The per-node systems (all tiles).
    pub solve_ms: f64,
    /// build + search + solve.
    pub kernel_ms: f64,
    pub total_ms: f64,
}

/// Elements of T per warp and warps per block for neighbourhoods of k.
pub(crate) fn local_layout(k: usize, elem: usize) -> (usize, usize) {
    let region = k * (k + 1) + k * BSTRIDE + k + 32;
    let per_warp = region * elem + 4 * k;
    let warps = (SMEM_BUDGET / per_warp).clamp(1, MAX_WARPS);
    (region, warps)
}

/// Local kriging at every node of `grid`.
pub fn local_krige<T: KrigeFloat>(
    gpu: &Gpu,
    cov: &Covariance,
    grid: &NodeGrid,
    inp: &LocalInputs,
) -> Result<(LocalOutput<T>, LocalTimes), CudaError> {
    const K: &str = "kriging_local";
    let wall = Instant::now();
    let cp = cov.to_params()?;
    let nn = grid.check(K)?;
    let n = samples_count(inp.samples_xy, K)?;
    let hh = inp.surfaces;
    if hh == 0 {
        return Err(invalid(K, "surfaces must be >= 1"));
    }
    if inp.k == 0 || inp.k > K_MAX {
        return Err(invalid(K, format!("k = {} out of 1..={K_MAX}", inp.k)));
    }
    let p = inp.drift_terms;
    inp.support.check(nn, n, p, inp.drift_scale, true, K)?;
    check_finite("values", inp.values, n * hh, K)?;
    let means: Vec<f64> = if p == 0 {
        check_finite("means", inp.means, hh, K)?;
        inp.means.to_vec()
    } else {
        vec![0.0; hh]
    };
    if let Some(r2) = inp.radius2
        && (r2.is_nan() || r2 < 0.0)
    {
        return Err(invalid(K, format!("radius2 = {r2} must be >= 0")));
    }
    let out_len = nn
        .checked_mul(hh)
        .ok_or_else(|| invalid(K, "nodes × surfaces overflows"))?;
    if nn == 0 {
        return Ok((
            LocalOutput {
                pred: Vec::new(),
                var: inp.want_variance.then(Vec::new),
            },
            LocalTimes::default(),
        ));
    }
    let k = inp.k;
    let elem = std::mem::size_of::<T>();
    let (region, warps) = local_layout(k, elem);
    let smem = warps * (region * elem + 4 * k);
    let z_t = T::vec_from(inp.values);
    let _held = gpu.hold();
    let mut times = LocalTimes::default();
    let d_xy = gpu.upload(inp.samples_xy, "the sample coordinates")?;
    let d_z = gpu.upload(&z_t, "the sample values")?;
    let d_mean = gpu.upload(&means, "the means")?;
    let mut d_pred = gpu.zeros::<T>(out_len, "the predictions")?;
    let mut d_var = gpu.zeros::<T>(if inp.want_variance { nn } else { 1 }, "the variances")?;
    let sup = &inp.support;
    let d_boff = gpu.upload(nonempty(sup.block), "the block points")?;
    let d_sdrift = gpu.upload(
        nonempty(sup.sample_drift.unwrap_or(&[])),
        "the samples' drift",
    )?;
    let d_fnode = gpu.upload(nonempty(sup.node_drift.unwrap_or(&[])), "the nodes' drift")?;
    // The pointers stay valid while the buffers live (to the end of this call); the guards
    // order the stream's later uses of them after the launches.
    let (boff, _g0) = d_boff.device_ptr(gpu.stream());
    let (sdrift, _g1) = d_sdrift.device_ptr(gpu.stream());
    let (fnode, _g2) = d_fnode.device_ptr(gpu.stream());
    let sargs = SupportArgs {
        boff,
        sdrift,
        fnode,
        nb: sup.points() as u32,
        fstride: if sup.node_drift.is_some() {
            sup.stride as u32
        } else {
            0
        },
    };
    let tile = TILE_NODES.min(nn);
    let mut d_q = gpu.zeros::<f64>(2 * tile, "the node coordinates")?;
    let mut d_idx = gpu.zeros::<i64>(tile * k, "the neighbour indices")?;
    let mut d_d2 = gpu.zeros::<f64>(tile * k, "the neighbour distances")?;
    let mut dgrid = DeviceGrid::<f64>::new(gpu, n, 2, DeviceIndex::Uniform)?;
    let name = format!("kriging_local_{}", T::SUFFIX);
    let mut units = dgrid.kernels();
    units.push((MODULE, "kriging_nodes".to_string()));
    units.push((MODULE, name.clone()));
    let refs: Vec<(&'static str, &str)> = units.iter().map(|(m, k)| (*m, k.as_str())).collect();
    gpu.prepare_units(&refs)?;
    let e0 = gpu.mark()?;
    dgrid.build(gpu, &d_xy)?;
    let e1 = gpu.mark()?;
    times.build_ms = event_ms(&e0, &e1)?;
    let f_nodes = gpu.function(MODULE, "kriging_nodes")?;
    let f_local = gpu.function(MODULE, &name)?;
    let mut j0 = 0usize;
    while j0 < nn {
        let m = tile.min(nn - j0);
        let np = NodesParams {
            grid: GridParams::from_grid(grid),
            j0: j0 as u64,
            m: m as u32,
            pad0: 0,
        };
        let t0 = gpu.mark()?;
        {
            let mut lb = gpu.stream().launch_builder(&f_nodes);
            lb.arg(&np).arg(&mut d_q);
            let cfg = LaunchConfig {
                grid_dim: (m.div_ceil(256) as u32, 1, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            };
            // SAFETY: kriging_nodes(KrNodesParams, double* q): thread jl < m writes q[2jl],
            // q[2jl+1] inside the 2·tile buffer.
            unsafe { lb.launch(cfg) }.map_err(launch_err("kriging_nodes".into()))?;
        }
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
            grid: GridParams::from_grid(grid),
            drift_scale: inp.drift_scale,
            j0: j0 as u64,
            n_nodes: nn as u64,
            m: m as u32,
            k: k as u32,
            n: n as u32,
            h: hh as u32,
            p: p as u32,
            want_var: u32::from(inp.want_variance),
            region: region as u32,
            pad0: 0,
        };
        {
            let mut lb = gpu.stream().launch_builder(&f_local);
            lb.arg(&lp)
                .arg(&cp)
                .arg(&d_xy)
                .arg(&d_z)
                .arg(&d_mean)
                .arg(&d_idx)
                .arg(&mut d_pred)
                .arg(&mut d_var)
                .arg(&sargs);
            let cfg = LaunchConfig {
                grid_dim: (m.div_ceil(warps) as u32, 1, 1),
                block_dim: (32 * warps as u32, 1, 1),
                shared_mem_bytes: smem as u32,
            };
            // SAFETY: kriging_local_*(KrLocalParams, KrCov, const double* sxy (2n), const T* z
            // (n·h), const double* mean (h), const long long* nbr (m·k), T* pred, T* var): warp
            // jl < m reads nbr[jl·k..], sample indices < n (from the k-NN search, -1 padding
            // skipped), writes pred[h'·N + j0 + jl] (h' < h, inside N·h) and var[j0 + jl] only
            // when want_var (then var holds N); KrSupportArgs: boff[0..3nb), with fstride > 0
            // sdrift[i·fstride + l] (i < n) and fnode[(j0 + jl)·fstride + l] (l < p <= fstride;
            // n·fstride and N·fstride values, checked), else none. Shared memory: warps ×
            // (region T + k ints) bytes, as the kernel lays it out.
            unsafe { lb.launch(cfg) }.map_err(launch_err(name.clone()))?;
        }
        let t2 = gpu.mark()?;
        times.search_ms += event_ms(&t0, &t1)?;
        times.solve_ms += event_ms(&t1, &t2)?;
        j0 += m;
    }
    let out = download_local(gpu, &d_pred, &d_var, nn, hh, inp.want_variance)?;
    times.kernel_ms = times.build_ms + times.search_ms + times.solve_ms;
    times.total_ms = wall.elapsed().as_secs_f64() * 1e3;
    Ok((out, times))
}

/// The local kernels' predictions (`hh` surfaces of `nn` nodes, surface-major) and variances
/// (when `want_var`) downloaded. A system too ill-conditioned for the precision can overflow:
/// such a node gets no value (NaN in every surface and the variance), never ±inf.
pub(super) fn download_local<T: KrigeFloat>(
    gpu: &Gpu,
    d_pred: &cudarc::driver::CudaSlice<T>,
    d_var: &cudarc::driver::CudaSlice<T>,
    nn: usize,
    hh: usize,
    want_var: bool,
) -> Result<LocalOutput<T>, CudaError> {
    let mut pred = gpu.download(d_pred, nn * hh, "the predictions")?;
    let mut var = if want_var {
        Some(gpu.download(d_var, nn, "the variances")?)
    } else {
        None
    };
    let nan = T::from_f64(f64::NAN);
    for j in 0..nn {
        let inf = (0..hh).any(|h| pred[h * nn + j].widen().is_infinite())
            || var.as_ref().is_some_and(|v| v[j].widen().is_infinite());
        if inf {
            for h in 0..hh {
                pred[h * nn + j] = nan;
            }
            if let Some(v) = var.as_mut() {
                v[j] = nan;
            }
        }
    }
    Ok(LocalOutput { pred, var })
}
