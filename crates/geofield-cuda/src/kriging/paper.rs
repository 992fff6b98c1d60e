//! [`paper_krige`]: the paper's per-node method (Li & Dong; note §2.2), for the benchmark.

use std::time::Instant;

use cudarc::driver::{LaunchConfig, PushKernelArg};

use super::params::{GridParams, PaperParams};
use super::{
    Covariance, K_MAX, KrigeFloat, KrigingTimes, MODULE, NodeGrid, check_finite, event_ms,
    launch_err, samples_count,
};
use crate::context::Gpu;
use crate::error::{CudaError, invalid};

const THREADS: u32 = 128;

/// The paper's experiments reproduced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PaperMode {
    /// exp1: A and B built per node, one launch per surface.
    Exp1,
    /// exp2: A built once on the host, copied by each thread, solved per node and surface.
    Exp2,
    /// exp4: as exp2, solved once per node, all surfaces combined (one launch).
    Exp4,
}

/// Ordinary kriging by the paper's method: per node, [[C, 1], [1ᵀ, 0]] [λ; ν] = [k; 1] solved
/// by Gaussian elimination without pivoting in a per-thread array, z* = λᵀZ. n ≤ 64 samples.
/// f32 uses the fast exp (the paper's experiment 6).
pub fn paper_krige<T: KrigeFloat>(
    gpu: &Gpu,
    cov: &Covariance,
    grid: &NodeGrid,
    samples_xy: &[f64],
    values: &[f64],
    surfaces: usize,
    mode: PaperMode,
) -> Result<(Vec<T>, KrigingTimes), CudaError> {
    const K: &str = "kriging_paper";
    let wall = Instant::now();
    let cp = cov.to_params()?;
    let nn = grid.check(K)?;
    let n = samples_count(samples_xy, K)?;
    if n == 0 || n > K_MAX {
        return Err(invalid(K, format!("n = {n} samples: 1..={K_MAX}")));
    }
    if surfaces == 0 {
        return Err(invalid(K, "surfaces must be >= 1"));
    }
    check_finite("values", values, n * surfaces, K)?;
    let out_len = nn
        .checked_mul(surfaces)
        .ok_or_else(|| invalid(K, "nodes × surfaces overflows"))?;
    if nn == 0 {
        return Ok((Vec::new(), KrigingTimes::default()));
    }
    // The bordered matrix, built once on the host in f64 (modes 2 and 4).
    let n1 = n + 1;
    let mut a = vec![0.0f64; n1 * n1];
    for i in 0..n1 {
        for c in 0..n1 {
            a[i * n1 + c] = if i == n || c == n {
                if i == c { 0.0 } else { 1.0 }
            } else if i == c {
                cp.c_zero
            } else {
                let dx = samples_xy[2 * i] - samples_xy[2 * c];
                let dy = samples_xy[2 * i + 1] - samples_xy[2 * c + 1];
                cp.eval((dx * dx + dy * dy).sqrt())
            };
        }
    }
    let nm = if n <= 16 { 16 } else { 64 };
    let name = format!("kriging_paper_{}_n{nm}", T::SUFFIX);
    let f = gpu.function(MODULE, &name)?;
    let _held = gpu.hold();
    let d_xy = gpu.upload(&T::vec_from(samples_xy), "the sample coordinates")?;
    let d_z = gpu.upload(&T::vec_from(values), "the sample values")?;
    let d_a = gpu.upload(&T::vec_from(&a), "the bordered matrix")?;
    let mut d_out = gpu.zeros::<T>(out_len, "the predictions")?;
    let launches: Vec<(u32, u32)> = match mode {
        PaperMode::Exp1 => (0..surfaces).map(|h| (1, h as u32)).collect(),
        PaperMode::Exp2 => (0..surfaces).map(|h| (2, h as u32)).collect(),
        PaperMode::Exp4 => vec![(4, 0)],
    };
    let t0 = gpu.mark()?;
    for (m, h) in launches {
        let params = PaperParams {
            grid: GridParams::from_grid(grid),
            n_nodes: nn as u64,
            n: n as u32,
            h: surfaces as u32,
            mode: m,
            surface: h,
        };
        let mut lb = gpu.stream().launch_builder(&f);
        lb.arg(&params)
            .arg(&cp)
            .arg(&d_xy)
            .arg(&d_z)
            .arg(&d_a)
            .arg(&mut d_out);
        let cfg = LaunchConfig {
            grid_dim: (nn.div_ceil(THREADS as usize) as u32, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: kriging_paper_*_n<NM>(KrPaperParams, KrCov, const T* sxy (2n), const T* z
        // (n·h), const T* amat ((n+1)²), T* out (N·h)): n <= NM (checked: NM is the smallest
        // template >= n), thread j < N writes out[h'·N + j] for its surfaces h' < h.
        unsafe { lb.launch(cfg) }.map_err(launch_err(name.clone()))?;
    }
    let t1 = gpu.mark()?;
    let kernel_ms = event_ms(&t0, &t1)?;
    let out = gpu.download(&d_out, out_len, "the predictions")?;
    Ok((
        out,
        KrigingTimes {
            kernel_ms,
            total_ms: wall.elapsed().as_secs_f64() * 1e3,
        },
    ))
}
