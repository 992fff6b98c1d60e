//! Where the first global-variance call of a process spends its time (GPU needed): library
//! presence check, cuBLAS handle, first and later calls; then checks nodes against a host f64
//! evaluation of the same formula. `cargo run --release -p geofield-cuda --example variance_init
//! [-- samples]` (above `FUSED_MAX_SAMPLES` samples the cuBLAS path runs).
use std::time::Instant;

use geofield_cuda::kriging::{self as gk, CovModel, CovStructure, NodeGrid, VarianceInputs};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let t = Instant::now();
    let gpu = geofield_cuda::Gpu::open(0)?;
    println!("open            {:8.1} ms", t.elapsed().as_secs_f64() * 1e3);
    let t = Instant::now();
    let present = geofield_cuda::cublas_present();
    println!(
        "cublas_present  {:8.1} ms ({present})",
        t.elapsed().as_secs_f64() * 1e3
    );
    let t = Instant::now();
    gpu.blas()?;
    println!("blas handle     {:8.1} ms", t.elapsed().as_secs_f64() * 1e3);
    // 500 samples on a 1000 m square, exponential a = 300 m; L = I stands in for the factor.
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(500);
    let mut xy = Vec::with_capacity(2 * n);
    let mut s = 1u64;
    for _ in 0..2 * n {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        xy.push(((s >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 1000.0);
    }
    // L⁻¹ = I/√n, G = 0, R⁻¹ = 1/2: σ² = 1 − mean(k²) + 1/4, inside (0, 1.25].
    let mut linv = vec![0.0; n * n];
    for i in 0..n {
        linv[i * n + i] = 1.0 / (n as f64).sqrt();
    }
    let g = vec![0.0; n];
    let cov = gk::Covariance {
        nugget: 0.0,
        structures: vec![CovStructure {
            model: CovModel::Exponential,
            sill: 1.0,
            range: 300.0,
        }],
        pseudo_base: None,
        eps: 1e-9,
        exact: true,
        var_zero: None,
    };
    let grid = NodeGrid {
        origin: [-500.0, -500.0],
        col_step: [1.0, 0.0],
        row_step: [0.0, 1.0],
        rows: 1000,
        cols: 1000,
        row0: 0,
    };
    let inp = VarianceInputs {
        samples_xy: &xy,
        linv: &linv,
        g: &g,
        rinv: &[0.5],
        drift_terms: 1,
        drift_scale: 1000.0,
        support: Default::default(),
    };
    let mut last = Vec::new();
    for i in 0..3 {
        let t = Instant::now();
        let (v, tm) = gk::global_variance::<f32>(&gpu, &cov, &grid, &inp, false, None)?;
        last = v;
        println!(
            "variance call {i} {:8.1} ms wall, kernels {:.1} ms (K {:.1}, GEMM {:.1}, reduce {:.1}), total {:.1}",
            t.elapsed().as_secs_f64() * 1e3,
            tm.kernel_ms,
            tm.k_ms,
            tm.gemm_ms,
            tm.reduce_ms,
            tm.total_ms
        );
    }
    let mut worst = 0.0f64;
    for j in (0..grid.len()).step_by(9973) {
        let (x, y) = grid.node(j / grid.cols, j % grid.cols);
        let mut s = 0.0;
        for i in 0..n {
            let h = (xy[2 * i] - x).hypot(xy[2 * i + 1] - y);
            let k = if h <= 1e-9 {
                1.0
            } else {
                (-3.0 * h / 300.0).exp()
            };
            s += k * k / n as f64;
        }
        let want = 1.0 - s + 0.25;
        worst = worst.max((f64::from(last[j]) - want).abs());
    }
    println!(
        "n = {n} ({}): max |gpu − host f64| over {} nodes = {worst:.2e}",
        if n > gk::FUSED_MAX_SAMPLES {
            "cuBLAS"
        } else {
            "fused"
        },
        grid.len().div_ceil(9973)
    );
    Ok(())
}
