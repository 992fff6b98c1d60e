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

/// Assembling on the device from the grid's coefficients gives the problem the host builds
/// (finest operator, 1/V, b' and the hierarchy): the same iterations and the same φ to 1e-12 of
/// its size, for multigrid and MG-CG, on stair-step grids with random face weights.
#[test]
fn device_assembly_matches_the_host_hierarchy() {
    use super::reference::{Grid, Rng, hierarchy};
    use crate::wind::{HostLevel, ShermanGrid, ShermanInputs};
    let Some(gpu) = test_gpu() else { return };
    for (i, &(rows, cols, nz)) in SIZES.iter().enumerate() {
        let g = Grid::random(rows, cols, nz, 90 + i as u64);
        let mut r = Rng(7 + i as u64);
        let a2 = g.alpha * g.alpha;
        let mut wt = |t: u8| f64::from(t) * r.uniform(0.5, 2.0);
        let cu: Vec<f64> = g.tu.iter().map(|&t| wt(t)).collect();
        let cv: Vec<f64> = g.tv.iter().map(|&t| wt(t)).collect();
        let cw: Vec<f64> = g.tw.iter().map(|&t| a2 * wt(t)).collect();
        let dzc: Vec<f64> = (0..=nz).map(|k| g.dzc(k)).collect();
        let div0: Vec<f64> = (0..g.n()).map(|_| r.uniform(-0.1, 0.1)).collect();
        // The host problem, as geofield's Level::finest and Problem::new form it.
        let (pu, pv, plane) = (rows * (cols + 1), (rows + 1) * cols, rows * cols);
        let kx: Vec<f64> = (0..cu.len()).map(|j| cu[j] * g.dz[j / pu]).collect();
        let ky: Vec<f64> = (0..cv.len()).map(|j| cv[j] * g.dz[j / pv]).collect();
        let kz: Vec<f64> = (0..cw.len())
            .map(|j| {
                let k = j / plane;
                if k == 0 {
                    0.0
                } else {
                    cw[j] * g.dx * g.dx / dzc[k]
                }
            })
            .collect();
        let mut finest = HostLevel {
            rows,
            cols,
            nz,
            kx,
            ky,
            kz,
            diag: Vec::new(),
        };
        finest.diag = (0..g.n())
            .map(|c| {
                let (k, rc) = (c / plane, c % plane);
                let (row, col) = (rc / cols, rc % cols);
                let ix = (k * rows + row) * (cols + 1) + col;
                let iy = (k * (rows + 1) + row) * cols + col;
                finest.kx[ix]
                    + finest.kx[ix + 1]
                    + finest.ky[iy]
                    + finest.ky[iy + cols]
                    + finest.kz[c]
                    + finest.kz[c + plane]
            })
            .collect();
        let levels = hierarchy(finest);
        let inv_vol = g.inv_vol();
        let b: Vec<f64> = (0..g.n())
            .map(|c| {
                if inv_vol[c] > 0.0 {
                    g.dx * g.dx * g.dz[c / plane] * div0[c]
                } else {
                    0.0
                }
            })
            .collect();
        let host = ShermanInputs {
            levels: &levels,
            inv_vol: &inv_vol,
            b: &b,
        };
        let grid = ShermanGrid {
            rows,
            cols,
            nz,
            dx_m: g.dx,
            dz_m: &g.dz,
            dzc_m: &dzc,
            cu: &cu,
            cv: &cv,
            cw: &cw,
            ground_k: &g.ground_k,
            div0: &div0,
        };
        let mut from_host = GpuSherman::new(&gpu, &host, SHAPE).unwrap();
        let mut on_device = GpuSherman::assemble(&gpu, &grid, SHAPE).unwrap();
        let d0 = mgref::max_div(&b, &inv_vol);
        for method in [Method::Multigrid, Method::MgCg] {
            let stop = StopRule {
                max_iterations: 60,
                threshold_per_s: 1e-8 * d0,
                check_every: 1,
            };
            let a = from_host.solve(method, stop, &mut |_, _| {}).unwrap();
            let d = on_device.solve(method, stop, &mut |_, _| {}).unwrap();
            let what = format!("{method:?} {rows}x{cols}x{nz}");
            assert!(a.converged && d.converged, "{what}");
            assert_eq!(a.iterations, d.iterations, "{what}: iterations");
            assert!(
                (a.history[0].1 - d.history[0].1).abs() <= 1e-12 * d0,
                "{what}: max |b/V| {} vs {}",
                a.history[0].1,
                d.history[0].1
            );
            let size = a.phi.iter().map(|x| x.abs()).fold(0.0, f64::max);
            let diff = a
                .phi
                .iter()
                .zip(&d.phi)
                .map(|(x, y)| (x - y).abs())
                .fold(0.0, f64::max);
            eprintln!(
                "{what}: {} iterations, |Δφ| {diff:.2e} of {size:.2e}",
                a.iterations
            );
            assert!(diff <= 1e-12 * size.max(1e-300), "{what}: |Δφ| {diff:e}");
        }
    }
}

/// A problem larger than the free device memory is refused before anything is allocated, with
/// a message that says how much it needs and what to do.
#[test]
fn too_large_for_the_device_is_refused_up_front() {
    let Some(gpu) = test_gpu() else { return };
    let e = gpu.ensure_free("a test problem", u64::MAX).unwrap_err();
    let msg = e.to_string();
    assert!(
        matches!(e, crate::error::CudaError::DeviceMemory { .. }),
        "{msg}"
    );
    assert!(
        msg.contains("a test problem needs about") && msg.contains("--backend cpu"),
        "{msg}"
    );
    gpu.ensure_free("one byte", 1).unwrap();
}
