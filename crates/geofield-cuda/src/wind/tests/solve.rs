//! The device solvers: each reaches the stop threshold, its reported residual is the host's
//! f64 residual of the returned φ, runs are bitwise reproducible, SOR follows the host's SOR.

use super::mgref;
use super::multigrid::{SHAPE, SIZES, problem};
use crate::test_gpu;
use crate::wind::{GpuSherman, Method, StopRule};

fn methods() -> [(Method, usize); 3] {
    [
        (Method::Multigrid, 60),
        (Method::MgCg, 60),
        (Method::Sor { omega: 1.7 }, 100_000),
    ]
}

#[test]
fn every_solver_reaches_the_threshold_with_the_reported_residual() {
    let Some(gpu) = test_gpu() else { return };
    for (i, &(rows, cols, nz)) in SIZES.iter().enumerate() {
        let p = problem(rows, cols, nz, 40 + i as u64);
        let fine = &p.levels[0];
        let d0 = mgref::max_div(&p.b, &p.inv_vol);
        let mut dev = GpuSherman::new(&gpu, &p.inputs(), SHAPE).unwrap();
        for (method, cap) in methods() {
            let tol = if matches!(method, Method::Sor { .. }) {
                1e-5
            } else {
                1e-8
            };
            let stop = StopRule {
                max_iterations: cap,
                threshold_per_s: tol * d0,
                check_every: 10,
            };
            let mut seen = Vec::new();
            let run = dev
                .solve(method, stop, &mut |it, d| seen.push((it, d)))
                .unwrap();
            let what = format!("{method:?} {rows}x{cols}x{nz}");
            eprintln!(
                "{what}: {} iterations, {:.2e} s, history {:?}",
                run.iterations,
                run.device_seconds,
                &run.history[run.history.len().saturating_sub(3)..]
            );
            assert!(run.converged, "{what}: {:?}", run.history);
            assert!(
                (run.history[0].1 - d0).abs() <= 1e-12 * d0,
                "{what}: first check"
            );
            assert_eq!(
                &run.history[1..],
                &seen[..],
                "{what}: progress saw every check"
            );
            let d = mgref::max_div(&mgref::residual(fine, &run.phi, &p.b), &p.inv_vol);
            let last = run.history[run.history.len() - 1].1;
            assert!(
                d <= stop.threshold_per_s * (1.0 + 1e-9),
                "{what}: host residual {d:e}"
            );
            assert!(
                (last - d).abs() <= 1e-9 * d0,
                "{what}: reported {last:e}, host {d:e}"
            );
            if !matches!(method, Method::Sor { .. }) {
                assert!(
                    run.iterations <= 30,
                    "{what}: {} iterations",
                    run.iterations
                );
            }
            let again = dev.solve(method, stop, &mut |_, _| {}).unwrap();
            assert!(
                again
                    .phi
                    .iter()
                    .zip(&run.phi)
                    .all(|(a, b)| a.to_bits() == b.to_bits())
                    && again.history == run.history,
                "{what}: a second solve differs"
            );
        }
    }
}

/// Fixed SOR sweeps equal the host's f64 sweeps up to FMA contraction.
#[test]
fn sor_follows_the_host() {
    let Some(gpu) = test_gpu() else { return };
    for (i, &(rows, cols, nz)) in SIZES.iter().enumerate() {
        let p = problem(rows, cols, nz, 60 + i as u64);
        let mut dev = GpuSherman::new(&gpu, &p.inputs(), SHAPE).unwrap();
        let (sweeps, omega) = (7, 1.6);
        let stop = StopRule {
            max_iterations: sweeps,
            threshold_per_s: 0.0,
            check_every: 3,
        };
        let run = dev
            .solve(Method::Sor { omega }, stop, &mut |_, _| {})
            .unwrap();
        assert_eq!(run.iterations, sweeps);
        let its: Vec<usize> = run.history.iter().map(|h| h.0).collect();
        assert_eq!(
            its,
            vec![0, 3, 6, 7],
            "checks every 3 sweeps and at the last"
        );
        let mut x = vec![0.0; p.b.len()];
        for _ in 0..sweeps {
            mgref::sor_half(&p.levels[0], &mut x, &p.b, 1, omega);
            mgref::sor_half(&p.levels[0], &mut x, &p.b, 0, omega);
        }
        let scale = x.iter().map(|v| v.abs()).fold(0.0, f64::max);
        let e = x
            .iter()
            .zip(&run.phi)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(
            e <= 1e-12 * scale,
            "{rows}x{cols}x{nz}: SOR differs by {e:e} of {scale:e}"
        );
    }
}

/// A right-hand side already below the threshold: no iteration, φ = 0, converged.
#[test]
fn nothing_to_do_returns_zero() {
    let Some(gpu) = test_gpu() else { return };
    let mut p = problem(5, 6, 4, 77);
    p.b.iter_mut().for_each(|b| *b = 0.0);
    let mut dev = GpuSherman::new(&gpu, &p.inputs(), SHAPE).unwrap();
    for (method, cap) in methods() {
        let stop = StopRule {
            max_iterations: cap,
            threshold_per_s: 0.0,
            check_every: 10,
        };
        let run = dev.solve(method, stop, &mut |_, _| {}).unwrap();
        assert!(run.converged && run.iterations == 0 && run.history == vec![(0, 0.0)]);
        assert!(run.phi.iter().all(|&x| x == 0.0));
    }
    // Inconsistent levels are errors, not panics.
    let mut bad = problem(5, 6, 4, 78);
    bad.levels[1].rows += 1;
    assert!(GpuSherman::new(&gpu, &bad.inputs(), SHAPE).is_err());
}
