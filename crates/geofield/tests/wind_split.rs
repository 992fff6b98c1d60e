//! The Sherman solve split by rows over parts (threads of this process: what MPI ranks do;
//! on CUDA each part's band on its own `Gpu`, the parts spread over every GPU present) against
//! the one-process solve of the same backend. The CUDA tests run when a GPU is usable (skipped
//! with a notice otherwise; with `GEOFIELD_REQUIRE_GPU=1` a missing GPU fails). The CPU tests
//! fail when the halo rows are left out (checked).
//!
//! - Multigrid: every cell's arithmetic is the one-GPU solve's (the halo rows are the
//!   neighbours' values, the coarse levels are gathered whole), so the field is the same bit
//!   for bit, in the same number of V-cycles.
//! - MG-CG: the bands' dot products add in part order, so the iterates differ by rounding:
//!   converged to the same tolerance in the same number of iterations ± 1, the fields within
//!   `wind_common::agreement_bound` of each other (two fields each of whose largest divergence
//!   is at most r are within the potential's reach × r of the exact field).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use geofield::wind::split::{LocalParts, plan_bands};
use geofield::wind::{self, Levels, Solver, Station, WindField, WindGrid, WindOptions};
use geofield::{Backend, Cancel};
use geofield_core::GridSpec;

mod wind_common;
use wind_common::{agreement_bound, max_diff};

/// A hill and a ridge on 72 × 99 columns (the last band takes an odd remainder of rows), cut
/// cells.
fn case() -> (WindGrid, Vec<Station>) {
    let plan = GridSpec {
        x_min_m: 0.0,
        y_max_m: 99.0 * 40.0,
        cell_size_m: 40.0,
        cols: 72,
        rows: 99,
    };
    let mut terrain = Vec::new();
    for row in 0..plan.rows {
        for col in 0..plan.cols {
            let (x, y) = plan.cell_centre(row, col);
            let hill = ((x - 1500.0).powi(2) + (y - 2200.0).powi(2)) / (2.0 * 400.0f64.powi(2));
            let ridge = (y - 0.4 * x - 900.0).powi(2) / (2.0 * 250.0f64.powi(2));
            terrain.push(50.0 + 150.0 * (-hill).exp() + 60.0 * (-ridge).exp());
        }
    }
    let grid = WindGrid::new(plan, terrain, &Levels::Uniform { nz: 12, dz_m: 20.0 }).unwrap();
    let st = |id: &str, x: f64, y: f64, dir: f64| Station {
        id: id.into(),
        x_m: x,
        y_m: y,
        height_agl_m: 10.0,
        speed_m_per_s: 6.0,
        direction_deg: dir,
        stability: None,
    };
    (
        grid,
        vec![st("a", 400.0, 3000.0, 250.0), st("b", 2500.0, 800.0, 290.0)],
    )
}

/// Each part's backend: its own `Gpu` (parts share a device's stream order but not its
/// lock, as separate processes would), over every GPU present.
fn part_backends(n: usize) -> Option<Vec<Backend>> {
    geofield_cuda::test_gpu()?;
    let count = geofield_cuda::device_count().unwrap().max(1);
    Some(
        (0..n)
            .map(|p| Backend::Cuda(geofield_cuda::Gpu::open(p % count).unwrap()))
            .collect(),
    )
}

fn split_run(backends: &[Backend], opts: &WindOptions) -> Vec<WindField> {
    let (grid, stations) = case();
    let n = backends.len();
    let all = LocalParts::new(n);
    std::thread::scope(|s| {
        let runs: Vec<_> = backends
            .iter()
            .enumerate()
            .map(|(p, be)| {
                let (grid, stations, all) = (grid.clone(), &stations, &all);
                s.spawn(move || {
                    wind::compute_split(
                        be,
                        grid,
                        stations,
                        opts,
                        &all.part(p),
                        &mut |_, _| {},
                        &Cancel::new(),
                    )
                    .unwrap()
                })
            })
            .collect();
        runs.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// The multigrid solver split over 2 and 3 parts on the CPU gives the one-process field bit for
/// bit (every cell's arithmetic is the same; the coarse levels are gathered whole).
#[test]
fn a_split_cpu_multigrid_solve_is_the_whole_solve() {
    let opts = WindOptions::default();
    let (grid, stations) = case();
    let whole = wind::compute(&Backend::Cpu, grid, &stations, &opts).unwrap();
    assert!(whole.report.converged && whole.report.iterations >= 3);
    for n in [2, 3] {
        assert!(plan_bands(99, 72, n).0 >= 2);
        for f in split_run(&vec![Backend::Cpu; n], &opts) {
            assert_eq!(f.report.iterations, whole.report.iterations);
            assert!(
                f.u == whole.u && f.v == whole.v && f.w == whole.w,
                "{n} parts"
            );
        }
    }
}

/// MG-CG split over 3 parts on the CPU: the same tolerance in the same number of iterations
/// ± 1, the fields within the agreement bound of each other (the parts' dot products add in
/// another order: rounding only).
#[test]
fn a_split_cpu_mgcg_solve_converges_like_the_whole_solve() {
    let opts = WindOptions {
        solver: Solver::MgCg,
        ..WindOptions::default()
    };
    let (grid, stations) = case();
    let whole = wind::compute(&Backend::Cpu, grid.clone(), &stations, &opts).unwrap();
    for f in split_run(&vec![Backend::Cpu; 3], &opts) {
        mgcg_agrees(&grid, &f, &whole);
    }
}

/// A split MG-CG run against the whole one: converged, ± 1 iteration, within the bound.
fn mgcg_agrees(grid: &WindGrid, f: &WindField, whole: &WindField) {
    assert!(f.report.converged);
    assert!(f.report.max_div_per_s <= f.report.threshold_per_s);
    assert!(f.report.iterations.abs_diff(whole.report.iterations) <= 1);
    let bound = agreement_bound(grid, f.report.max_div_per_s, whole.report.max_div_per_s);
    let diff = max_diff(&f.u, &whole.u)
        .max(max_diff(&f.v, &whole.v))
        .max(max_diff(&f.w, &whole.w));
    assert!(diff <= bound, "{diff} m/s vs the bound {bound} m/s");
}

#[test]
fn a_split_gpu_multigrid_solve_is_the_one_gpu_solve() {
    let Some(gpu) = geofield_cuda::test_gpu() else {
        return;
    };
    let opts = WindOptions::default();
    let (grid, stations) = case();
    let whole = wind::compute(&Backend::Cuda(Arc::clone(&gpu)), grid, &stations, &opts).unwrap();
    assert!(whole.report.converged && whole.report.iterations >= 3);
    for n in [2, 3] {
        assert!(plan_bands(99, 72, n).0 >= 3, "the case splits {n} ways");
        let backends = part_backends(n).unwrap();
        for (p, f) in split_run(&backends, &opts).into_iter().enumerate() {
            assert_eq!(f.report.split_parts, Some(n));
            assert_eq!(f.report.iterations, whole.report.iterations, "{n} parts");
            assert_eq!(f.report.history, whole.report.history, "{n} parts");
            assert!(
                f.u == whole.u && f.v == whole.v && f.w == whole.w,
                "{n} parts: part {p}'s field differs from the one-GPU field"
            );
        }
    }
}

#[test]
fn a_split_gpu_mgcg_solve_converges_like_the_one_gpu_solve() {
    let Some(gpu) = geofield_cuda::test_gpu() else {
        return;
    };
    let opts = WindOptions {
        solver: Solver::MgCg,
        ..WindOptions::default()
    };
    let (grid, stations) = case();
    let whole = wind::compute(&Backend::Cuda(gpu), grid.clone(), &stations, &opts).unwrap();
    let backends = part_backends(3).unwrap();
    let runs = split_run(&backends, &opts);
    for f in &runs {
        mgcg_agrees(&grid, f, &whole);
        // Every part returns the same field.
        assert!(f.u == runs[0].u && f.w == runs[0].w);
    }
}

/// The split GPU solve against the CPU's split solve of the same problem: both converge, and
/// their fields agree as two solves to the same tolerance do (the f32 V-cycle is only a
/// preconditioner: each stops at max |div| ≤ threshold).
#[test]
fn a_split_gpu_solve_meets_the_cpu_split_solve() {
    let Some(backends) = part_backends(2) else {
        return;
    };
    let opts = WindOptions::default();
    let (grid, _) = case();
    let gpu = split_run(&backends, &opts);
    let cpu = split_run(&[Backend::Cpu, Backend::Cpu], &opts);
    for f in gpu.iter().chain(&cpu) {
        assert!(f.report.converged);
    }
    let (g, c) = (&gpu[0], &cpu[0]);
    let bound = agreement_bound(&grid, g.report.max_div_per_s, c.report.max_div_per_s);
    let diff = max_diff(&g.u, &c.u)
        .max(max_diff(&g.v, &c.v))
        .max(max_diff(&g.w, &c.w));
    assert!(diff <= bound, "{diff} m/s vs the bound {bound} m/s");
}
