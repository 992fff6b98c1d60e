//! The far field on the CPU (rustfft) and the certificate's arithmetic (shared with the GPU).

use std::ops::Range;

use geofield_core::GridSpec;
use rayon::prelude::*;
use rustfft::FftPlanner;
use rustfft::num_complex::Complex;

use super::super::params::Kernel;
use super::fixed::{Fixed, Nodes};
use super::{Envelope, NearFarPlan, far_kernel, kink_bound, lagrange_constants, stencil};

/// The far field at the cells of `rows` (row-major) and the certified bound on its error
/// (absolute, at every cell of the grid), on the CPU, from the lattice's node weights (the whole
/// stand's: [`Nodes`]) of `n_trees` trees of total weight `w_total`.
#[allow(clippy::too_many_arguments)]
pub fn far_cpu(
    grid: &GridSpec,
    kernel: &Kernel,
    plan: &NearFarPlan,
    env: &Envelope,
    nodes: &Nodes,
    n_trees: usize,
    w_total: f64,
    rows: Range<usize>,
) -> (Vec<f64>, f64) {
    let lat = plan.lattice;
    let n = plan.blend.order;
    let (px, py) = (lat.px, lat.py);
    // The nodes (nx × ny) in the zero-padded px × py arrays.
    let complex = |v: &[i128]| -> Vec<Complex<f64>> {
        let mut c = vec![Complex::new(0.0, 0.0); px * py];
        c.par_chunks_mut(px)
            .zip(v.par_chunks(lat.nx.max(1)))
            .for_each(|(row, src)| {
                for (a, &x) in row.iter_mut().zip(src) {
                    a.re = nodes.fixed.to_f64(x);
                }
            });
        c
    };
    // Node weights: Lagrange-spread (far field) and nearest-node (bound).
    let wl = complex(&nodes.spread);
    let wb = complex(&nodes.nearest);
    // Kernel arrays.
    let win = env.window_table(plan.shift_m);
    let mut g = vec![Complex::new(0.0, 0.0); px * py];
    let mut e = vec![Complex::new(0.0, 0.0); px * py];
    let (g_sup, e_sup) = g
        .par_chunks_mut(px)
        .zip(e.par_chunks_mut(px))
        .enumerate()
        .map(|(j, (gr, er))| {
            let (mut gs, mut es) = (0.0f64, 0.0f64);
            for i in 0..px {
                if let Some((dx, dy)) = lat.offset(i, j) {
                    let r2 = dx * dx + dy * dy;
                    gr[i].re = far_kernel(kernel, &plan.blend, r2);
                    er[i].re = win.at(r2.sqrt());
                    gs = gs.max(gr[i].re.abs());
                    es = es.max(er[i].re);
                }
            }
            (gs, es)
        })
        .reduce(|| (0.0, 0.0), |a, b| (a.0.max(b.0), a.1.max(b.1)));
    let mut planner = FftPlanner::new();
    let phi = convolve(&mut planner, wl, g, px, py);
    let bound_field = convolve(&mut planner, wb, e, px, py);
    // Per-cell stencils (columns and rows separately: the weights are a tensor product).
    let h = grid.cell_size_m;
    let cols: Vec<(i64, [f64; 8])> = (0..grid.cols)
        .map(|c| stencil(n, lat.coords((c as f64 + 0.5) * h, 0.0).0))
        .collect();
    let row_stencils: Vec<(i64, [f64; 8])> = rows
        .clone()
        .map(|r| stencil(n, lat.coords(0.0, (r as f64 + 0.5) * h).1))
        .collect();
    let mut out = vec![0.0; rows.len() * grid.cols];
    out.par_chunks_mut(grid.cols.max(1))
        .zip(row_stencils.par_iter())
        .for_each(|(line, &(by, ly))| {
            let mut rowsum = vec![0.0f64; lat.nx];
            // Interpolate along v first (one pass over the needed nodes), then along u.
            for (j, &lyj) in ly.iter().enumerate().take(n) {
                let row = lat.wrap(by + j as i64, lat.ny) * px;
                for (i, acc) in rowsum.iter_mut().enumerate() {
                    *acc += lyj * phi[row + i];
                }
            }
            for (cell, &(bx, lx)) in line.iter_mut().zip(&cols) {
                let mut s = 0.0;
                for i in 0..n {
                    s += lx[i] * rowsum[lat.wrap(bx + i as i64, lat.nx)];
                }
                *cell = s;
            }
        });
    // The bound: max over the nodes nearest to cells.
    let near_x: Vec<usize> = dedup(
        (0..grid.cols)
            .map(|c| {
                let a = lat.coords((c as f64 + 0.5) * h, 0.0).0;
                lat.wrap(a.round() as i64, lat.nx)
            })
            .collect(),
    );
    let near_y: Vec<usize> = dedup(
        (0..grid.rows)
            .map(|r| {
                let b = lat.coords(0.0, (r as f64 + 0.5) * h).1;
                lat.wrap(b.round() as i64, lat.ny)
            })
            .collect(),
    );
    let conv_max = near_y
        .par_iter()
        .map(|&j| {
            near_x
                .iter()
                .map(|&i| bound_field[j * px + i])
                .fold(0.0f64, f64::max)
        })
        .reduce(|| 0.0, f64::max);
    let bound = certified(plan, grid, w_total, conv_max, g_sup, e_sup, px * py, env)
        + fixed_point_bound(plan, nodes.fixed, n_trees, g_sup, e_sup);
    (out, bound)
}

fn dedup(mut v: Vec<usize>) -> Vec<usize> {
    v.sort_unstable();
    v.dedup();
    v
}

/// The certified absolute bound from the maximum of the bound convolution and the FFT rounding
/// (and the torus kink).
#[allow(clippy::too_many_arguments)]
pub fn certified(
    plan: &NearFarPlan,
    grid: &GridSpec,
    w_total: f64,
    conv_max: f64,
    g_sup: f64,
    e_sup: f64,
    fft_len: usize,
    env: &Envelope,
) -> f64 {
    let (_, lam) = lagrange_constants(plan.blend.order);
    // FFT convolution rounding: ≤ c ε log₂(N) Σ|input| max|kernel| (c = 8, generous for
    // rustfft's and cuFFT's mixed-radix passes), for both convolutions; the far field's node
    // weights sum to ≤ Λ² W in absolute value.
    let eps = 8.0 * f64::EPSILON * (fft_len as f64).log2().max(1.0);
    let mut b = plan.bound_factor * (conv_max + eps * w_total * e_sup);
    b += eps * lam * lam * w_total * g_sup * (1.0 + lam * lam);
    if plan.lattice.periodic {
        let l_min = grid.width_m().min(grid.height_m());
        b += kink_bound(
            plan.blend.order,
            plan.spacing_m,
            plan.shift_m,
            l_min,
            w_total,
            env,
        );
    }
    b
}

/// The node weights' fixed-point rounding, as it reaches the cells (absolute): the spread
/// weights' total error (n² terms per tree) through the far kernel and the interpolation (Λ²),
/// the nearest-node weights' (one term per tree) through the bound's envelope and factor.
pub fn fixed_point_bound(
    plan: &NearFarPlan,
    fixed: Fixed,
    n_trees: usize,
    g_sup: f64,
    e_sup: f64,
) -> f64 {
    let n = plan.blend.order as f64;
    let (_, lam) = lagrange_constants(plan.blend.order);
    lam * lam * fixed.error(n_trees as f64 * n * n) * g_sup
        + plan.bound_factor * fixed.error(n_trees as f64) * e_sup
}

/// Linear (zero-padded) or circular convolution of two px × py arrays; the real part.
fn convolve(
    planner: &mut FftPlanner<f64>,
    mut a: Vec<Complex<f64>>,
    mut b: Vec<Complex<f64>>,
    px: usize,
    py: usize,
) -> Vec<f64> {
    fft2(planner, &mut a, px, py, false);
    fft2(planner, &mut b, px, py, false);
    let norm = 1.0 / (px * py) as f64;
    a.par_iter_mut().zip(b.par_iter()).for_each(|(x, y)| {
        *x = *x * *y * norm;
    });
    drop(b);
    fft2(planner, &mut a, px, py, true);
    a.into_par_iter().map(|c| c.re).collect()
}

fn fft2(planner: &mut FftPlanner<f64>, a: &mut [Complex<f64>], px: usize, py: usize, inv: bool) {
    let (fx, fy) = if inv {
        (planner.plan_fft_inverse(px), planner.plan_fft_inverse(py))
    } else {
        (planner.plan_fft_forward(px), planner.plan_fft_forward(py))
    };
    a.par_chunks_mut(px).for_each(|row| fx.process(row));
    let mut t = vec![Complex::new(0.0, 0.0); px * py];
    t.par_chunks_mut(py).enumerate().for_each(|(i, col)| {
        for (j, c) in col.iter_mut().enumerate() {
            *c = a[j * px + i];
        }
    });
    t.par_chunks_mut(py).for_each(|col| fy.process(col));
    a.par_chunks_mut(px).enumerate().for_each(|(j, row)| {
        for (i, c) in row.iter_mut().enumerate() {
            *c = t[i * py + j];
        }
    });
}
