//! GPU-only rows of `geofield bench kriging`: the paper's kernels (experiments 1, 2, 4, f32 with
//! the fast exp as its experiment 6, and f64) and the dual kernel with the fast f32 exp, all
//! timed by CUDA events (kernels) and wall clock (the whole call: uploads, kernels, copy back).

use anyhow::Result;
use geofield::Backend;
use geofield::bench::kriging::{GlobalKriging, NodeGrid, device_covariance};
use geofield_cuda::kriging::{self as gk, DualInputs, KrigeFloat, PaperMode};

use super::kriging::{BenchArgs, Row};
use super::{BenchEnv, Stats, measure};

fn rel_err(got: &[f64], want: &[Vec<f64>], nodes: usize, spread: f64) -> f64 {
    let mut e = 0.0f64;
    for (h, w) in want.iter().enumerate() {
        for j in 0..nodes.min(w.len()) {
            e = e.max((got[h * nodes + j] - w[j]).abs());
        }
    }
    e / spread
}

#[allow(clippy::too_many_arguments)]
fn row(
    rows: &mut Vec<Row>,
    env: &BenchEnv,
    case: &str,
    g: &GlobalKriging,
    nodes: usize,
    method: String,
    time: Stats,
    device: Option<Stats>,
    err: f64,
) {
    let n = g.samples();
    let t = device.as_ref().map_or(time.median, |d| d.median).max(1e-12);
    let pairs_per_s = nodes as f64 * n as f64 / t;
    let r = Row {
        case: case.to_string(),
        n,
        surfaces: g.surfaces(),
        nodes,
        method,
        variance: false,
        nodes_per_s: nodes as f64 / time.median.max(1e-12),
        pairs_per_s,
        time,
        device_s: device.map(|d| d.median),
        max_err: err,
        sfu_share: env.sfu_ops_per_s().map(|l| 2.0 * pairs_per_s / l),
    };
    super::kriging::print_row(&r);
    rows.push(r);
}

fn paper_t<T: KrigeFloat>(
    a: &BenchArgs,
    gpu: &geofield_cuda::Gpu,
    g: &GlobalKriging,
    grid: &gk::NodeGrid,
    xy: &[f64],
    mode: PaperMode,
) -> Result<(Stats, Option<Stats>, Vec<f64>)> {
    let cov = device_covariance(g.covariance());
    measure(a.warmup, a.repeats, || {
        let (v, t) = gk::paper_krige::<T>(gpu, &cov, grid, xy, g.values(), g.surfaces(), mode)?;
        Ok((
            v.into_iter().map(|x| x.widen()).collect::<Vec<f64>>(),
            Some(t.kernel_ms / 1e3),
        ))
    })
}

/// The paper's kernels and the fast-exp dual kernel on the paper's case.
#[allow(clippy::too_many_arguments)]
pub fn paper_rows(
    a: &BenchArgs,
    be: &Backend,
    env: &BenchEnv,
    case: &str,
    g: &GlobalKriging,
    grid: &NodeGrid,
    reference: &[Vec<f64>],
    spread: f64,
    rows: &mut Vec<Row>,
) -> Result<()> {
    let Backend::Cuda(gpu) = be else {
        return Ok(());
    };
    let nodes = grid.len();
    let (xs, ys) = g.sample_coords();
    let xy: Vec<f64> = xs.iter().zip(ys).flat_map(|(&x, &y)| [x, y]).collect();
    for mode in [PaperMode::Exp1, PaperMode::Exp2, PaperMode::Exp4] {
        let (t, d, v) = paper_t::<f32>(a, gpu, g, grid, &xy, mode)?;
        let e = rel_err(&v, reference, nodes, spread);
        row(
            rows,
            env,
            case,
            g,
            nodes,
            format!("gpu paper {mode:?} f32 fast-exp"),
            t,
            d,
            e,
        );
        let (t, d, v) = paper_t::<f64>(a, gpu, g, grid, &xy, mode)?;
        let e = rel_err(&v, reference, nodes, spread);
        row(
            rows,
            env,
            case,
            g,
            nodes,
            format!("gpu paper {mode:?} f64"),
            t,
            d,
            e,
        );
    }
    dual_rows(
        a,
        gpu,
        env,
        case,
        g,
        grid,
        &[true, false],
        reference,
        spread,
        rows,
    )
}

/// The dual kernel alone (wall = the wrapper call: upload, kernel, copy back into a host f32
/// vector), with the fast and/or the accurate f32 exp.
#[allow(clippy::too_many_arguments)]
fn dual_rows(
    a: &BenchArgs,
    gpu: &geofield_cuda::Gpu,
    env: &BenchEnv,
    case: &str,
    g: &GlobalKriging,
    grid: &gk::NodeGrid,
    fast: &[bool],
    reference: &[Vec<f64>],
    spread: f64,
    rows: &mut Vec<Row>,
) -> Result<()> {
    let nodes = grid.len();
    let (xs, ys) = g.sample_coords();
    let xy: Vec<f64> = xs.iter().zip(ys).flat_map(|(&x, &y)| [x, y]).collect();
    let cov = device_covariance(g.covariance());
    let (alpha, beta, p) = g.dual_coefficients();
    let inp = DualInputs {
        samples_xy: &xy,
        alpha,
        beta,
        surfaces: g.surfaces(),
        drift_terms: p,
        drift_scale: g.frame().drift_scale,
    };
    for &fast in fast {
        let (t, d, v) = measure(a.warmup, a.repeats, || {
            let (v, t) = gk::dual_predict::<f32>(gpu, &cov, grid, &inp, fast)?;
            Ok((v, Some(t.kernel_ms / 1e3)))
        })?;
        let v: Vec<f64> = v.into_iter().map(f64::from).collect();
        let e = rel_err(&v, reference, nodes, spread);
        let name = if fast {
            "gpu dual f32 fast-exp (call)"
        } else {
            "gpu dual f32 (call)"
        };
        row(rows, env, case, g, nodes, name.into(), t, d, e);
    }
    Ok(())
}

/// The dual kernel alone with the fast f32 exp on a large case (global, no variance).
#[allow(clippy::too_many_arguments)]
pub fn large_fast_row(
    a: &BenchArgs,
    be: &Backend,
    env: &BenchEnv,
    case: &str,
    g: &GlobalKriging,
    grid: &NodeGrid,
    reference: &[Vec<f64>],
    spread: f64,
    rows: &mut Vec<Row>,
) -> Result<()> {
    let Backend::Cuda(gpu) = be else {
        return Ok(());
    };
    dual_rows(a, gpu, env, case, g, grid, &[true], reference, spread, rows)
}
