//! The wind field on every backend against the CPU path (`wind::compute` on the backend and on
//! `Backend::Cpu`), on the hill grid of `wind_cpu.rs`.
//!
//! Each test body runs on the CPU and, with a GPU, on CUDA (`backends::for_each_backend`: the
//! CUDA run skips with a notice without a GPU, fails with `GEOFIELD_REQUIRE_GPU=1`); the timing
//! API is the device's alone.
//!
//! Tolerances:
//! - WEST, fixed sweeps: the GPU sweeps f32 corrections to the first guess, the CPU f64 winds.
//!   A host emulation of the kernel's f32 arithmetic on this grid differs from the CPU by
//!   5.7e-7 m/s after 100 sweeps (and by 1.2e-5 m/s if the wind itself were stored in f32);
//!   the test asks for 1e-5 m/s.
//! - Sherman: each backend stops at max |div u| ≤ threshold; a field whose largest divergence
//!   is r is within `poisson_reach_m` · r of the exact one (derivation in `wind_common`), so the
//!   two fields are within `agreement_bound` of each other, computed from the divergences each
//!   report gives.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use geofield::Backend;
use geofield::bench::wind::{
    cuda, init,
    multigrid::{self, Problem},
    ops::{self, Coeffs},
    sor,
};
use geofield::wind::{self, Levels, Model, Profile, Solver, WindField, WindGrid, WindOptions};

mod wind_common;
use wind_common::{
    agreement_bound, hill_grid, max_diff, plan, poisson_reach_m, station, stations_for,
};

mod backends;
use backends::{for_each_backend, gpu};

fn opts(model: Model, solver: Solver, tol: f64) -> WindOptions {
    WindOptions {
        model,
        solver,
        tolerance: tol,
        max_iterations: 20_000,
        divergence_removal: false,
        ..Default::default()
    }
}

fn field_diff(a: &WindField, b: &WindField) -> f64 {
    max_diff(&a.u, &b.u)
        .max(max_diff(&a.v, &b.v))
        .max(max_diff(&a.w, &b.w))
}

#[test]
fn west_fixed_sweeps_match_the_cpu() {
    for_each_backend(|be| {
        let g = hill_grid();
        let st = stations_for(&g);
        let o = WindOptions {
            fixed_iterations: true,
            max_iterations: 100,
            ..opts(Model::West, Solver::Sor, 1e-6)
        };
        let cpu = wind::compute(&Backend::Cpu, g.clone(), &st, &o).unwrap();
        let dev = wind::compute(be, g.clone(), &st, &o).unwrap();
        let d = field_diff(&cpu, &dev);
        eprintln!(
            "WEST 100 sweeps: |gpu - cpu| = {d:.2e} m/s, {:.2e} s on the device",
            dev.report.solve_seconds
        );
        assert!(d <= 1e-5, "GPU and CPU WEST differ by {d} m/s");
        assert_eq!(dev.report.iterations, 100);
        assert_eq!(dev.report.method, "west");
        assert!(
            !dev.report.converged,
            "100 sweeps at ω = 1.25 do not converge"
        );
        let its = |f: &WindField| f.report.history.iter().map(|h| h.0).collect::<Vec<_>>();
        assert_eq!(its(&cpu), its(&dev), "the same check points");
        // 1e-5 m/s over 10 m layers: the divergences agree to ~6e-6 s⁻¹ at worst.
        for (c, d) in cpu.report.history.iter().zip(&dev.report.history) {
            assert!((c.1 - d.1).abs() <= 6e-6, "{c:?} vs {d:?}");
        }
    });
}

#[test]
fn sherman_solvers_match_the_cpu() {
    for_each_backend(|be| {
        let g = hill_grid();
        let st = stations_for(&g);
        for solver in [Solver::Multigrid, Solver::MgCg, Solver::Sor] {
            let o = opts(Model::Sherman, solver, 1e-6);
            let cpu = wind::compute(&Backend::Cpu, g.clone(), &st, &o).unwrap();
            let dev = wind::compute(be, g.clone(), &st, &o).unwrap();
            let (rc, rd) = (&cpu.report, &dev.report);
            // Each field is within poisson_reach · (its max |div|) of the exact one (wind_common).
            let tol = agreement_bound(&g, rc.max_div_per_s, rd.max_div_per_s);
            let d = field_diff(&cpu, &dev);
            eprintln!(
                "{solver:?}: cpu {} iterations, gpu {} in {:.2e} s, |gpu - cpu| = {d:.2e} m/s (tol {tol:.2e})",
                rc.iterations, rd.iterations, rd.solve_seconds
            );
            assert!(
                rd.converged && rd.max_div_per_s <= rd.threshold_per_s,
                "{rd:?}"
            );
            assert_eq!(rc.threshold_per_s, rd.threshold_per_s);
            assert!(d <= tol, "{solver:?}: {d} m/s apart, tolerance {tol}");
            // The f32 V-cycle may need one cycle more (measured on an H100: equal counts for every
            // solver); SOR is f64 on both sides (FMA aside), so only a check landing within
            // rounding of the threshold can move it.
            let slack = if solver == Solver::Sor {
                o.check_every
            } else {
                1
            };
            assert!(
                rc.iterations.abs_diff(rd.iterations) <= slack,
                "{rc:?} vs {rd:?}"
            );
            assert!(rd.solve_seconds > 0.0);
        }
    });
}

#[test]
fn no_flux_through_solid_faces_and_residual_is_the_divergence() {
    for_each_backend(|be| {
        let g = hill_grid();
        let st = stations_for(&g);
        for (model, solver) in [
            (Model::Sherman, Solver::Multigrid),
            (Model::Sherman, Solver::MgCg),
            (Model::Sherman, Solver::Sor),
            (Model::West, Solver::Sor),
        ] {
            let o = opts(model, solver, 1e-6);
            let f = wind::compute(be, g.clone(), &st, &o).unwrap();
            // The field's own grid: cut cells for Sherman, stair steps for WEST.
            let coeffs = Coeffs::new(&f.grid, 1.0, o.top);
            for (c, x) in coeffs
                .cu
                .iter()
                .zip(&f.u)
                .chain(coeffs.cv.iter().zip(&f.v))
                .chain(coeffs.cw.iter().zip(&f.w))
            {
                if *c == 0.0 {
                    assert_eq!(*x, 0.0, "{model:?} {solver:?}: flux through a solid face");
                }
            }
            let r = &f.report;
            assert!(r.converged && r.max_div_per_s <= r.threshold_per_s, "{r:?}");
            let last = r.history.last().unwrap().1;
            assert!(
                (last - r.max_div_per_s).abs() <= 1e-9 * r.max_div0_per_s,
                "{model:?} {solver:?}: solver said {last:e}, field has {:e}",
                r.max_div_per_s
            );
            let fg = &f.grid;
            let (max, _) = ops::divergence_stats(fg, &ops::divergence(fg, &f.u, &f.v, &f.w));
            assert_eq!(max, r.max_div_per_s);
        }
    });
}

/// A uniform flow over flat ground is divergence-free, so a solver's sweeps must leave it as it
/// is. The first guess of every profile varies with height only, so its largest divergence d0
/// is rounding (face averages at the edges). `compute` stops such a field before the first
/// iteration (its rounding floor), so the sweeps are forced: WEST runs exactly 50 sweeps on
/// every backend (`fixed_iterations`), and Sherman's three solvers run 30 iterations with a zero
/// threshold through `multigrid::solve` (the CPU's; `compute` on the device must then agree
/// with the first guess as well).
///
/// Tolerance: the sweeps change u by a gradient ∇φ driven by the divergence alone, so
/// |u − u0| ≤ `poisson_reach_m` · (d0 + d_end) (see `wind_common`), plus one rounding of each
/// face per sweep (ε · max |u0| · sweeps); a sweep that moved the flow by its own size, or a
/// boundary face the solver updated wrongly, exceeds it by orders of magnitude.
#[test]
fn uniform_flow_over_flat_ground_is_a_fixed_point() {
    let p = plan(12, 10, 30.0);
    let g = WindGrid::new(
        p,
        vec![250.0; p.n_cells()],
        &Levels::Uniform { nz: 8, dz_m: 10.0 },
    )
    .unwrap();
    let st = vec![station(100.0, 100.0, 7.0, 225.0)];
    let reach = poisson_reach_m(&g);
    let profiles = [
        Profile::Uniform,
        Profile::Power,
        Profile::Log { roughness_m: 0.1 },
    ];
    for_each_backend(|be| {
        for profile in profiles {
            let o = WindOptions {
                profile,
                fixed_iterations: true,
                max_iterations: 50,
                ..opts(Model::West, Solver::Sor, 1e-6)
            };
            let coeffs = Coeffs::new(&g, 1.0, o.top);
            let guess = init::first_guess(&g, &coeffs, &st, &o).unwrap();
            let f = wind::compute(be, g.clone(), &st, &o).unwrap();
            let r = &f.report;
            assert_eq!(r.iterations, 50, "{profile:?}: the sweeps ran");
            let u_max = guess
                .u
                .iter()
                .chain(&guess.v)
                .fold(0.0f64, |m, x| m.max(x.abs()));
            let tol = reach * (r.max_div0_per_s + r.max_div_per_s) + 50.0 * f64::EPSILON * u_max;
            let d = max_diff(&f.u, &guess.u)
                .max(max_diff(&f.v, &guess.v))
                .max(max_diff(&f.w, &guess.w));
            eprintln!(
                "WEST {profile:?}: d0 {:.1e} s⁻¹, |u − u0| {d:.1e} m/s (tol {tol:.1e})",
                r.max_div0_per_s
            );
            assert!(
                d <= tol,
                "WEST {profile:?}: moved by {d} m/s, tolerance {tol}"
            );
            // Sherman through compute: no iteration is needed, the field is the first guess.
            for solver in [Solver::Multigrid, Solver::MgCg, Solver::Sor] {
                let o = WindOptions {
                    profile,
                    ..opts(Model::Sherman, solver, 1e-6)
                };
                let f = wind::compute(be, g.clone(), &st, &o).unwrap();
                let d = max_diff(&f.u, &guess.u)
                    .max(max_diff(&f.v, &guess.v))
                    .max(max_diff(&f.w, &guess.w));
                assert!(d <= tol, "{solver:?} {profile:?}: moved by {d} m/s");
                assert!(f.report.converged);
            }
        }
    });
    // Sherman's solvers forced to iterate (CPU): φ stays at the rounding level.
    for profile in profiles {
        let o = WindOptions {
            profile,
            ..opts(Model::Sherman, Solver::Multigrid, 1e-6)
        };
        let coeffs = Coeffs::new(&g, 1.0, o.top);
        let guess = init::first_guess(&g, &coeffs, &st, &o).unwrap();
        let div0 = ops::divergence(&g, &guess.u, &guess.v, &guess.w);
        let (d0, _) = ops::divergence_stats(&g, &div0);
        let problem = Problem::new(&g, &coeffs, &div0);
        let u_max = guess
            .u
            .iter()
            .chain(&guess.v)
            .fold(0.0f64, |m, x| m.max(x.abs()));
        for solver in [Solver::Multigrid, Solver::MgCg, Solver::Sor] {
            let omega = sor::optimal_omega(&g, 1.0);
            let run = multigrid::solve(&problem, solver, omega, 30, 0.0, 1, |_, _| {}).unwrap();
            let (mut u, mut v, mut w) = (guess.u.clone(), guess.v.clone(), guess.w.clone());
            let phi = if run.cell_order {
                run.phi.clone()
            } else {
                problem.to_cells(&run.phi)
            };
            ops::apply_potential(&g, &coeffs, &phi, &mut u, &mut v, &mut w);
            let (d_end, _) = ops::divergence_stats(&g, &ops::divergence(&g, &u, &v, &w));
            let tol = reach * (d0 + d_end) + 30.0 * f64::EPSILON * u_max;
            let d = max_diff(&u, &guess.u)
                .max(max_diff(&v, &guess.v))
                .max(max_diff(&w, &guess.w));
            eprintln!(
                "{solver:?} {profile:?}: {} iterations, d0 {d0:.1e} s⁻¹, |u − u0| {d:.1e} m/s (tol {tol:.1e})",
                run.iterations
            );
            // The sweeps ran until the 30-iteration cap or until the solver had stopped
            // contracting (stagnated at the rounding level: at least the stall rule's window).
            if d0 > 0.0 {
                assert!(
                    run.iterations == 30 || (run.stall.is_some() && run.iterations >= 3),
                    "{solver:?} {profile:?}: {} iterations, {:?}",
                    run.iterations,
                    run.stall
                );
            }
            assert!(
                d <= tol,
                "{solver:?} {profile:?}: moved by {d} m/s, tolerance {tol}"
            );
        }
    }
}

/// The bench's timing API runs every variant and solver and reports sensible numbers.
#[test]
fn timing_api() {
    let Some(Backend::Cuda(gpu)) = gpu() else {
        return;
    };
    let g = hill_grid();
    let st = stations_for(&g);
    let o = opts(Model::Sherman, Solver::MgCg, 1e-6);
    let coeffs = Coeffs::new(&g, 1.0, o.top);
    let guess = init::first_guess(&g, &coeffs, &st, &o).unwrap();
    for variant in [cuda::WestVariant::Compact, cuda::WestVariant::Parity] {
        let t = cuda::time_west(
            &gpu,
            &g,
            &coeffs,
            (&guess.u, &guess.v, &guess.w),
            1.25,
            50,
            variant,
            3,
        )
        .unwrap();
        eprintln!("{t:?}");
        assert_eq!(t.seconds.len(), 3);
        assert!(t.median_s > 0.0 && t.cell_updates_per_s > 0.0);
        assert!(t.bandwidth_share >= 0.0 && t.bandwidth_share.is_finite());
    }
    let div0 = ops::divergence(&g, &guess.u, &guess.v, &guess.w);
    let (max0, _) = ops::divergence_stats(&g, &div0);
    for solver in [Solver::Multigrid, Solver::MgCg, Solver::Sor] {
        let omega = sor::optimal_omega(&g, 1.0);
        let t = cuda::time_sherman(
            &gpu,
            &g,
            &coeffs,
            &div0,
            solver,
            omega,
            5000,
            1e-6 * max0,
            10,
            2,
        )
        .unwrap();
        eprintln!("{t:?}");
        assert!(t.converged && t.final_div_per_s <= 1e-6 * max0);
        assert!(t.median_s > 0.0 && t.bytes_per_s > 0.0);
    }
}
