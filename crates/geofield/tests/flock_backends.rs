//! The flock on every backend against the CPU flock: one step from the same snapshot.
//!
//! Nearest mode: identical neighbour rows and bitwise-identical forces and state t+1 (both
//! backends use the same f32 operation order, round-to-nearest without FMA). Radius mode: same
//! neighbour counts, forces and states within 1e-5·28 (the GPU sums in grid order). Also
//! determinism (same state after the same steps, twice) and the invariants after many steps.
//!
//! Each test body runs on the CPU and, with a GPU, on CUDA (`backends::for_each_backend`: the
//! CUDA run skips with a notice without a GPU, fails with `GEOFIELD_REQUIRE_GPU=1`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::needless_range_loop
)]

use geofield::Backend;
use geofield::bench::flock::{StepDetail, steer, step_detail};
use geofield::flock::{Flock, FlockIndex, FlockParams, FlockState, NeighborMode, Start};

mod backends;
use backends::{Rng, for_each_backend};

fn detail(be: &Backend, p: FlockParams, s: &FlockState) -> (StepDetail, FlockState) {
    let mut f = Flock::new(be, p, s.clone()).unwrap();
    let d = step_detail(&mut f).unwrap();
    (d, f.state().unwrap())
}

fn snapshots() -> Vec<(&'static str, f32, FlockState)> {
    let mut v = Vec::new();
    v.push((
        "dense start",
        40.0,
        FlockState::init(4000, Start::Dense, 40.0, 1),
    ));
    v.push((
        "uniform",
        60.0,
        FlockState::init(5000, Start::Uniform, 60.0, 2),
    ));
    // An evolved flock (CPU, 400 steps).
    let mut f = Flock::new(
        &Backend::Cpu,
        FlockParams::new(30.0),
        FlockState::init(3000, Start::Dense, 30.0, 3),
    )
    .unwrap();
    f.step(400).unwrap();
    v.push(("evolved", 30.0, f.state().unwrap()));
    // Duplicated positions (coincident agents) and agents on the world sphere.
    let mut d = FlockState::init(2000, Start::Dense, 25.0, 4);
    for i in 0..200 {
        d.pos[2 * i + 1] = d.pos[2 * i];
    }
    d.pos[1999] = [25.0, 0.0, 0.0];
    v.push(("duplicates", 25.0, d));
    // Exact ties in d² everywhere (the id breaks them) and agents on cell faces: an integer
    // lattice of side 15 with many duplicates.
    let mut l = FlockState::init(3000, Start::Uniform, 50.0, 5);
    let mut r = Rng::new(13);
    for p in &mut l.pos {
        *p = std::array::from_fn(|_| r.below(15) as f32 - 7.0);
    }
    v.push(("lattice", 50.0, l));
    v
}

/// A flock of radius 40 m centred 4e4 m from the origin in a world of radius 1e5 m: large
/// coordinates, where binning rounds.
fn far_from_origin() -> FlockState {
    let mut s = FlockState::init(2000, Start::Uniform, 40.0, 17);
    for p in &mut s.pos {
        p[0] += 1.0e4;
        p[1] -= 2.5e4;
        p[2] += 3.0e4;
    }
    s
}

/// One step, nearest mode: the same neighbour rows, counts, forces and state bits as the CPU.
fn assert_step_equals_cpu(be: &Backend, what: &str, p: FlockParams, s: &FlockState) {
    let (dc, sc) = detail(&Backend::Cpu, p, s);
    let (dg, sg) = detail(be, p, s);
    assert_eq!(dc.neighbors, dg.neighbors, "{what}: neighbour rows");
    assert_eq!(dc.counts, dg.counts, "{what}: counts");
    assert_eq!(dc.force, dg.force, "{what}: forces");
    for i in 0..s.len() {
        assert_eq!(sc.agent(i), sg.agent(i), "{what}: agent {i} at t+1");
    }
}

/// k = 1, 16 and 64 (the device's register and local buffers) far from the origin, and a
/// radius below the mean spacing (many agents with fewer than k neighbours).
#[test]
fn nearest_mode_other_k_and_far_from_origin() {
    for_each_backend(|be| {
        let far = far_from_origin();
        for k in [1usize, 16, 64] {
            for index in [FlockIndex::Uniform, FlockIndex::Dynamic, FlockIndex::Brute] {
                let mut p = FlockParams::new(1.0e5);
                p.mode = NeighborMode::Nearest { k };
                p.index = index;
                assert_step_equals_cpu(be, &format!("far k={k} {index:?}"), p, &far);
            }
        }
        let s = FlockState::init(2000, Start::Uniform, 60.0, 19);
        let mut p = FlockParams::new(60.0);
        p.mode = NeighborMode::Nearest { k: 12 };
        p.radius = 2.5;
        assert_step_equals_cpu(be, "small radius", p, &s);
    });
}

/// Flocks of 0 to 3 agents in both modes: the same step as the CPU, then steps without error.
#[test]
fn tiny_flocks_step_like_the_cpu() {
    for_each_backend(|be| {
        for n in 0..4usize {
            let s = FlockState::init(n, Start::Dense, 3.0, 41 + n as u64);
            for (mode, index) in [
                (NeighborMode::Nearest { k: 7 }, FlockIndex::Uniform),
                (NeighborMode::Radius, FlockIndex::Uniform),
                (NeighborMode::Nearest { k: 7 }, FlockIndex::Brute),
            ] {
                let mut p = FlockParams::new(50.0);
                p.mode = mode;
                p.index = index;
                let what = format!("n = {n} {mode:?} {index:?}");
                let (dc, sc) = detail(&Backend::Cpu, p, &s);
                let (dg, sg) = detail(be, p, &s);
                assert_eq!(dc.counts, dg.counts, "{what}");
                assert_eq!(dc.neighbors, dg.neighbors, "{what}");
                assert_eq!(sc.len(), n);
                if matches!(mode, NeighborMode::Nearest { .. }) {
                    assert_eq!(sc, sg, "{what}");
                }
                let mut f = Flock::new(be, p, s.clone()).unwrap();
                f.step(5).unwrap();
                assert_eq!(f.state().unwrap().len(), n, "{what}");
            }
        }
    });
}

#[test]
fn nearest_mode_one_step_matches_cpu_bitwise() {
    let snaps = snapshots();
    for_each_backend(|g| {
        for (name, r, s) in &snaps {
            for index in [FlockIndex::Uniform, FlockIndex::Dynamic, FlockIndex::Brute] {
                let mut p = FlockParams::new(*r);
                p.index = index;
                let (dc, sc) = detail(&Backend::Cpu, p, s);
                let (dg, sg) = detail(g, p, s);
                let bad = (0..s.len())
                    .filter(|&i| {
                        dc.neighbors[i * 7..(i + 1) * 7] != dg.neighbors[i * 7..(i + 1) * 7]
                    })
                    .collect::<Vec<_>>();
                if let Some(&i) = bad.first() {
                    panic!(
                        "{name} {index:?}: {} rows differ; agent {i}: cpu {:?} gpu {:?}",
                        bad.len(),
                        &dc.neighbors[i * 7..(i + 1) * 7],
                        &dg.neighbors[i * 7..(i + 1) * 7]
                    );
                }
                assert_eq!(dc.counts, dg.counts, "{name} {index:?}");
                for i in 0..s.len() {
                    assert_eq!(
                        dc.force[i], dg.force[i],
                        "{name} {index:?}: force of agent {i}"
                    );
                }
                for i in 0..s.len() {
                    assert_eq!(
                        sc.agent(i),
                        sg.agent(i),
                        "{name} {index:?}: agent {i} at t+1"
                    );
                }
            }
        }
    });
}

#[test]
fn radius_mode_one_step_agrees_with_cpu() {
    let snaps = snapshots();
    for_each_backend(|g| {
        for (name, r, s) in &snaps {
            if *name == "dense start" {
                continue; // thousands of neighbours each: covered by the smaller sets
            }
            for index in [FlockIndex::Uniform, FlockIndex::Dynamic] {
                let mut p = FlockParams::new(*r);
                p.mode = NeighborMode::Radius;
                p.index = index;
                let (dc, sc) = detail(&Backend::Cpu, p, s);
                let (dg, sg) = detail(g, p, s);
                assert_eq!(dc.counts, dg.counts, "{name} {index:?}");
                let tol = 1e-5 * 28.0;
                for i in 0..s.len() {
                    for a in 0..3 {
                        assert!(
                            (dc.force[i][a] - dg.force[i][a]).abs() <= tol,
                            "{name}: force of agent {i}: {:?} vs {:?}",
                            dc.force[i],
                            dg.force[i]
                        );
                        assert!(
                            (sc.pos[i][a] - sg.pos[i][a]).abs() <= 1e-4,
                            "{name}: agent {i}"
                        );
                    }
                }
            }
        }
    });
}

#[test]
fn flock_is_deterministic_and_keeps_the_invariants() {
    for_each_backend(|g| {
        let r = 40.0;
        // The CPU's many steps are slow: a tenth of the device's flock.
        let n = if matches!(g, Backend::Cpu) {
            2000
        } else {
            20_000
        };
        let s0 = FlockState::init(n, Start::Dense, r, 9);
        for (mode, index) in [
            (NeighborMode::Nearest { k: 7 }, FlockIndex::Uniform),
            (NeighborMode::Radius, FlockIndex::Uniform),
            (NeighborMode::Nearest { k: 7 }, FlockIndex::Dynamic),
            (NeighborMode::Radius, FlockIndex::Dynamic),
        ] {
            let mut p = FlockParams::new(r);
            p.mode = mode;
            p.index = index;
            let run = || {
                let mut f = Flock::new(g, p, s0.clone()).unwrap();
                f.step(200).unwrap();
                f.state().unwrap()
            };
            let a = run();
            let b = run();
            assert_eq!(a, b, "{mode:?} {index:?}: two runs differ");
            for i in 0..a.len() {
                let x = a.agent(i);
                assert!(
                    x.pos
                        .iter()
                        .chain(&x.fwd)
                        .chain(&x.acc)
                        .all(|v| v.is_finite())
                );
                assert!(steer::length(x.pos) <= r * (1.0 + 1e-6));
                assert!(x.speed <= 9.0 * (1.0 + 1e-6));
            }
        }
        // Tiny flocks.
        for n in [1usize, 2, 8] {
            let mut f = Flock::new(
                g,
                FlockParams::new(50.0),
                FlockState::init(n, Start::Dense, 50.0, 1),
            )
            .unwrap();
            f.step(5).unwrap();
            assert_eq!(f.state().unwrap().len(), n);
        }
    });
}
