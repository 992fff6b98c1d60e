//! GPU tests of the boids flock (`geofield_cuda::flock`) against a plain host reference written
//! here: brute-force f32 neighbour search and OpenSteer's per-agent arithmetic as in
//! `crates/geofield/src/flock/steer.rs` (rustc never contracts to FMA, so these are the CPU's
//! bits). Nearest mode must match bit for bit, radius mode to rounding.
//!
//! Skipped (with a notice) without a GPU; failing when GEOFIELD_REQUIRE_GPU=1. The PTX check
//! needs NVRTC only.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use geofield_cuda::flock::{FlockConfig, FlockHostState, FlockSearch, GpuFlock};
use geofield_cuda::{CudaError, compile_check, module_source, nvrtc_present, test_gpu};

mod reference;
use reference::*;

/// Every f32 operation of the module is exact-rounding PTX: no flush-to-zero, approximate or
/// fused f32 instruction, even though the module is compiled with --use_fast_math.
#[test]
fn flock_ptx_has_no_inexact_f32_instruction() {
    if !nvrtc_present() {
        eprintln!("skipping: no NVRTC");
        return;
    }
    let src = module_source("flock").unwrap();
    let ptx = compile_check("flock", src, "sm_90").unwrap();
    let bad: Vec<&str> = ptx
        .lines()
        .map(str::trim)
        .filter(|l| {
            l.contains(".ftz")
                || l.contains(".approx")
                || l.starts_with("fma.rn.f32")
                || l.starts_with("mad.f32")
                || l.starts_with("mad.rn.f32")
        })
        .collect();
    assert!(
        bad.is_empty(),
        "{} inexact f32 instructions, e.g. {:?}",
        bad.len(),
        &bad[..bad.len().min(10)]
    );
}

#[test]
fn flock_rejects_bad_input() {
    let good = config(7, 50.0, FlockSearch::Grid);
    for bad in [
        FlockConfig { k: 65, ..good },
        FlockConfig {
            r2: f32::NAN,
            ..good
        },
        FlockConfig {
            r2: f32::INFINITY,
            ..good
        },
        FlockConfig {
            dt: f32::NAN,
            ..good
        },
        FlockConfig {
            dt: f32::NEG_INFINITY,
            ..good
        },
    ] {
        assert!(
            matches!(bad.validate(), Err(CudaError::InvalidInput { .. })),
            "{bad:?} accepted"
        );
    }
    let Some(gpu) = test_gpu() else { return };
    let mut s = random_state(10, 5.0, [0.0; 3], 0, 1);
    s.pos[3][1] = f32::NAN;
    assert!(GpuFlock::new(&gpu, good, &s).is_err());
    let mut s = random_state(10, 5.0, [0.0; 3], 0, 1);
    s.acc.pop();
    assert!(GpuFlock::new(&gpu, good, &s).is_err());
    let s = random_state(10, 5.0, [0.0; 3], 0, 1);
    assert!(GpuFlock::new(&gpu, FlockConfig { k: 65, ..good }, &s).is_err());
}

/// One step from the same state: identical neighbour rows and counts, bitwise-identical forces
/// and state t + 1, for the grid and brute force.
fn check_one_step_nearest(name: &str, cfg: FlockConfig, s: &FlockHostState) {
    let Some(gpu) = test_gpu() else { return };
    let (want, want_det) = reference_step(&cfg, s);
    for search in [
        FlockSearch::Grid,
        FlockSearch::Tree { max_leaf: 16 },
        FlockSearch::Brute,
    ] {
        let cfg = FlockConfig { search, ..cfg };
        let mut fl = GpuFlock::new(&gpu, cfg, s).unwrap();
        assert_eq!(fl.len(), s.len());
        let back = fl.state().unwrap();
        assert_eq!(
            first_state_diff(&back, s),
            None,
            "{name} {search:?}: upload round trip"
        );
        let det = fl.step_detail().unwrap();
        let got = fl.state().unwrap();
        let k = cfg.k as usize;
        for i in 0..s.len() {
            assert_eq!(
                det.neighbors[i * k..(i + 1) * k],
                want_det.neighbors[i * k..(i + 1) * k],
                "{name} {search:?}: neighbours of agent {i}"
            );
        }
        assert_eq!(det.counts, want_det.counts, "{name} {search:?}: counts");
        assert_eq!(
            bits3(&det.force),
            bits3(&want_det.force),
            "{name} {search:?}: forces"
        );
        if let Some(d) = first_state_diff(&got, &want) {
            panic!("{name} {search:?}: state t+1 differs: {d}");
        }
        let found: u32 = det.counts.iter().sum();
        eprintln!(
            "{name} {search:?}: {} agents, mean {:.2} neighbours, bitwise equal",
            s.len(),
            f64::from(found) / s.len().max(1) as f64
        );
    }
}

#[test]
fn cuda_flock_nearest_one_step_uniform_ball() {
    let s = random_state(3000, 60.0, [0.0; 3], 0, 7);
    for search in [FlockSearch::Grid, FlockSearch::Tree { max_leaf: 16 }] {
        check_one_step_nearest("uniform r=60", config(7, 60.0, search), &s);
    }
}

#[test]
fn cuda_flock_nearest_one_step_dense_ball_with_duplicates() {
    let s = random_state(3000, 5.0, [0.0; 3], 200, 11);
    for search in [FlockSearch::Grid, FlockSearch::Tree { max_leaf: 4 }] {
        check_one_step_nearest("dense r=5", config(7, 50.0, search), &s);
    }
}

#[test]
fn cuda_flock_nearest_one_step_lattice_ties() {
    // Exact ties in d² everywhere (the id breaks them), agents on cell faces, duplicates.
    let s = lattice_state(3000, 15, 13);
    for search in [FlockSearch::Grid, FlockSearch::Tree { max_leaf: 16 }] {
        check_one_step_nearest("lattice", config(7, 50.0, search), &s);
    }
}

#[test]
fn cuda_flock_nearest_one_step_far_from_origin_and_other_k() {
    // Large coordinates (binning rounding), k = 1, 16 and 64 (register and local buffers).
    let s = random_state(2000, 40.0, [1.0e4, -2.5e4, 3.0e4], 50, 17);
    for k in [1, 16, 64] {
        let cfg = config(k, 1.0e5, FlockSearch::Grid);
        check_one_step_nearest(&format!("far k={k}"), cfg, &s);
    }
    // A radius smaller than the mean spacing: many agents with fewer than k neighbours.
    let s = random_state(2000, 60.0, [0.0; 3], 0, 19);
    let cfg = FlockConfig {
        r2: r2_below(2.5),
        ..config(12, 60.0, FlockSearch::Grid)
    };
    check_one_step_nearest("small radius", cfg, &s);
}

#[test]
fn cuda_flock_nearest_many_steps_stay_bitwise_equal() {
    // Near the world sphere, so that agents wrap around during the run.
    let Some(gpu) = test_gpu() else { return };
    let mut s = random_state(1500, 30.0, [0.0; 3], 20, 23);
    let cfg = config(7, 30.0, FlockSearch::Grid);
    let mut fl = GpuFlock::new(&gpu, cfg, &s).unwrap();
    for _ in 0..15 {
        s = reference_step(&cfg, &s).0;
    }
    fl.step(15).unwrap();
    fl.synchronize().unwrap();
    let got = fl.state().unwrap();
    if let Some(d) = first_state_diff(&got, &s) {
        panic!("after 15 steps: {d}");
    }
    check_invariants(&got, &cfg.constants, "15 steps");
}

#[test]
fn cuda_flock_radius_mode_counts_and_forces() {
    let Some(gpu) = test_gpu() else { return };
    for (name, s) in [
        ("uniform r=60", random_state(3000, 60.0, [0.0; 3], 0, 29)),
        ("dense r=5", random_state(3000, 5.0, [0.0; 3], 200, 31)),
    ] {
        let cfg = config(0, 60.0, FlockSearch::Grid);
        let (_, want) = reference_step(&cfg, &s);
        for search in [
            FlockSearch::Grid,
            FlockSearch::Tree { max_leaf: 16 },
            FlockSearch::Brute,
        ] {
            let cfg = FlockConfig { search, ..cfg };
            let mut fl = GpuFlock::new(&gpu, cfg, &s).unwrap();
            let det = fl.step_detail().unwrap();
            assert!(det.neighbors.is_empty());
            assert_eq!(det.counts, want.counts, "{name} {search:?}: counts");
            let mut worst = 0.0f32;
            for (i, (g, w)) in det.force.iter().zip(&want.force).enumerate() {
                for a in 0..3 {
                    let e = (g[a] - w[a]).abs();
                    assert!(
                        e <= 1e-5 * 28.0,
                        "{name} {search:?}: agent {i} force {g:?} vs {w:?}"
                    );
                    worst = worst.max(e);
                }
            }
            let st = fl.state().unwrap();
            check_invariants(&st, &cfg.constants, name);
            eprintln!("{name} {search:?} radius mode: counts equal, max |ΔF| = {worst:e}");
        }
    }
}

#[test]
fn cuda_flock_is_deterministic() {
    let Some(gpu) = test_gpu() else { return };
    let s = random_state(3000, 20.0, [0.0; 3], 30, 37);
    for (k, search) in [
        (7, FlockSearch::Grid),
        (0, FlockSearch::Grid),
        (7, FlockSearch::Brute),
        (0, FlockSearch::Brute),
    ] {
        let cfg = config(k, 25.0, search);
        let run = || {
            let mut fl = GpuFlock::new(&gpu, cfg, &s).unwrap();
            fl.step(20).unwrap();
            fl.state().unwrap()
        };
        let a = run();
        let b = run();
        if let Some(d) = first_state_diff(&a, &b) {
            panic!("k = {k} {search:?}: two runs differ: {d}");
        }
        check_invariants(&a, &cfg.constants, &format!("k = {k} {search:?}"));
    }
}

#[test]
fn cuda_flock_tiny_flocks() {
    let Some(gpu) = test_gpu() else { return };
    for n in [0usize, 1, 2, 3] {
        let s = random_state(n, 3.0, [0.0; 3], 0, 41 + n as u64);
        for (k, search) in [
            (7, FlockSearch::Grid),
            (0, FlockSearch::Grid),
            (7, FlockSearch::Brute),
        ] {
            let cfg = config(k, 50.0, search);
            let mut fl = GpuFlock::new(&gpu, cfg, &s).unwrap();
            assert_eq!(fl.len(), n);
            assert_eq!(fl.is_empty(), n == 0);
            let (want, want_det) = reference_step(&cfg, &s);
            let det = fl.step_detail().unwrap();
            assert_eq!(det.counts, want_det.counts, "n = {n} k = {k} {search:?}");
            assert_eq!(
                det.neighbors, want_det.neighbors,
                "n = {n} k = {k} {search:?}"
            );
            if k > 0 {
                assert_eq!(first_state_diff(&fl.state().unwrap(), &want), None);
            }
            fl.step(5).unwrap();
            fl.synchronize().unwrap();
            let st = fl.state().unwrap();
            assert_eq!(st.len(), n);
            check_invariants(&st, &cfg.constants, &format!("n = {n}"));
            let phases = fl.profile_step().unwrap();
            assert!(phases.iter().all(|(_, ms)| ms.is_finite() && *ms >= 0.0));
        }
    }
}

#[test]
fn cuda_flock_profile_and_throughput_report() {
    let Some(gpu) = test_gpu() else { return };
    for (name, n, ball, world) in [
        ("10240 uniform", 10_240usize, 126.0f32, 126.0f32),
        ("10240 dense", 10_240, 20.0, 126.0),
        ("262144 uniform", 262_144, 370.0, 370.0),
        ("262144 dense", 262_144, 20.0, 370.0),
    ] {
        let s = random_state(n, ball, [0.0; 3], 0, 43);
        let cfg = config(7, world, FlockSearch::Grid);
        let mut fl = GpuFlock::new(&gpu, cfg, &s).unwrap();
        fl.step(3).unwrap();
        fl.synchronize().unwrap();
        let phases = fl.profile_step().unwrap();
        let steps = 50;
        let t = std::time::Instant::now();
        fl.step(steps).unwrap();
        fl.synchronize().unwrap();
        let per = t.elapsed().as_secs_f64() / steps as f64;
        eprintln!(
            "{name}: {:.3} ms/step ({:.0} steps/s); phases {phases:?}",
            per * 1e3,
            1.0 / per
        );
        check_invariants(&fl.state().unwrap(), &cfg.constants, name);
    }
}
