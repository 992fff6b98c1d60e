//! The GPU flock against the CPU flock: one step from the same snapshot.
//!
//! Nearest mode: identical neighbour rows and bitwise-identical forces and state t+1 (both
//! backends use the same f32 operation order, round-to-nearest without FMA). Radius mode: same
//! neighbour counts, forces and states within 1e-5·28 (the GPU sums in grid order). Also
//! determinism (same state after the same steps, twice) and the invariants after many steps.
//!
//! Skips (with a notice) without a GPU; with `GEOFIELD_REQUIRE_GPU=1` a missing GPU fails.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::needless_range_loop
)]

use geofield::Backend;
use geofield::flock::{
    Flock, FlockIndex, FlockParams, FlockState, NeighborMode, Start, StepDetail, steer,
};

fn gpu() -> Option<Backend> {
    geofield_cuda::test_gpu().map(Backend::Cuda)
}

fn detail(be: &Backend, p: FlockParams, s: &FlockState) -> (StepDetail, FlockState) {
    let mut f = Flock::new(be, p, s.clone()).unwrap();
    let d = f.step_detail().unwrap();
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
    v
}

#[test]
fn nearest_mode_one_step_matches_cpu_bitwise() {
    let Some(g) = gpu() else {
        eprintln!("no GPU: skipped");
        return;
    };
    for (name, r, s) in snapshots() {
        for index in [FlockIndex::Uniform, FlockIndex::Dynamic, FlockIndex::Brute] {
            let mut p = FlockParams::new(r);
            p.index = index;
            let (dc, sc) = detail(&Backend::Cpu, p, &s);
            let (dg, sg) = detail(&g, p, &s);
            let bad = (0..s.len())
                .filter(|&i| dc.neighbors[i * 7..(i + 1) * 7] != dg.neighbors[i * 7..(i + 1) * 7])
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
}

#[test]
fn radius_mode_one_step_agrees_with_cpu() {
    let Some(g) = gpu() else {
        eprintln!("no GPU: skipped");
        return;
    };
    for (name, r, s) in snapshots() {
        if name == "dense start" {
            continue; // thousands of neighbours each: covered by the smaller sets
        }
        for index in [FlockIndex::Uniform, FlockIndex::Dynamic] {
            let mut p = FlockParams::new(r);
            p.mode = NeighborMode::Radius;
            p.index = index;
            let (dc, sc) = detail(&Backend::Cpu, p, &s);
            let (dg, sg) = detail(&g, p, &s);
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
}

#[test]
fn gpu_flock_is_deterministic_and_keeps_the_invariants() {
    let Some(g) = gpu() else {
        eprintln!("no GPU: skipped");
        return;
    };
    let r = 40.0;
    let s0 = FlockState::init(20_000, Start::Dense, r, 9);
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
            let mut f = Flock::new(&g, p, s0.clone()).unwrap();
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
            &g,
            FlockParams::new(50.0),
            FlockState::init(n, Start::Dense, 50.0, 1),
        )
        .unwrap();
        f.step(5).unwrap();
        assert_eq!(f.state().unwrap().len(), n);
    }
}
