#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::needless_range_loop
)]
//! The CPU flock: OpenSteer's behaviour rules one by one, the integration and wrap, invariants
//! over many steps, neighbour lists against brute force, index and thread-count independence.

use geofield::Backend;
use geofield::bench::flock::steer::{self, Agent, Sums};
use geofield::bench::flock::step_detail;
use geofield::flock::{
    BoidsConstants, Flock, FlockIndex, FlockParams, FlockState, NeighborMode, Start, stats,
};

fn c() -> BoidsConstants {
    BoidsConstants::opensteer(200.0)
}

/// Steering force of agent (p, f) from neighbours (pj, fj), all passed through `accumulate`.
fn force_from(p: [f32; 3], f: [f32; 3], nb: &[([f32; 3], [f32; 3])]) -> ([f32; 3], Sums) {
    let c = c();
    let mut s = Sums::default();
    for &(pj, fj) in nb {
        let d2 = steer::dot(steer::sub(pj, p), steer::sub(pj, p));
        steer::accumulate(&c, &mut s, p, f, pj, fj, d2);
    }
    (steer::force(&c, &s, p, f), s)
}

fn close(a: [f32; 3], b: [f32; 3], tol: f32) -> bool {
    (0..3).all(|i| (a[i] - b[i]).abs() <= tol)
}

#[test]
fn no_neighbours_no_force() {
    let (f, s) = force_from([1.0, 2.0, 3.0], [1.0, 0.0, 0.0], &[]);
    assert_eq!(f, [0.0; 3]);
    assert_eq!(s, Sums::default());
}

#[test]
fn neighbour_straight_behind_fails_every_cone() {
    // d = 3 (outside the 1.5 always-pass sphere), cos = −1 < every cone's cosine.
    let (f, s) = force_from(
        [0.0; 3],
        [1.0, 0.0, 0.0],
        &[([-3.0, 0.0, 0.0], [0.0, 1.0, 0.0])],
    );
    assert_eq!((s.n_sep, s.n_ali, s.n_coh), (0, 0, 0));
    assert_eq!(f, [0.0; 3]);
}

#[test]
fn neighbour_at_100_degrees_passes_separation_only() {
    let a = 100f32.to_radians();
    let pj = [3.0 * a.cos(), 3.0 * a.sin(), 0.0];
    let (f, s) = force_from([0.0; 3], [1.0, 0.0, 0.0], &[(pj, [0.0, 1.0, 0.0])]);
    assert_eq!((s.n_sep, s.n_ali, s.n_coh), (1, 0, 0));
    // Separation only: 12 × the unit vector pointing away from the neighbour.
    let away = steer::unit([-pj[0], -pj[1], 0.0]);
    assert!(close(f, steer::scale(away, 12.0), 1e-5), "{f:?}");
}

#[test]
fn close_neighbour_passes_whatever_the_angle() {
    // d = 1.2 < 1.5, straight behind: passes all three behaviours.
    let (_, s) = force_from(
        [0.0; 3],
        [1.0, 0.0, 0.0],
        &[([-1.2, 0.0, 0.0], [1.0, 0.0, 0.0])],
    );
    assert_eq!((s.n_sep, s.n_ali, s.n_coh), (1, 1, 1));
}

#[test]
fn identical_headings_give_no_alignment_and_cohesion_points_at_centroid() {
    let f0 = [0.0, 0.0, 1.0];
    // Two neighbours ahead (within every cone), same heading as the agent.
    let nb = [([1.0, 0.0, 4.0], f0), ([-1.0, 0.5, 5.0], f0)];
    let (_, s) = force_from([0.0; 3], f0, &nb);
    assert_eq!((s.n_ali, s.n_coh), (2, 2));
    let c = c();
    let ali = steer::unit(steer::sub(steer::div(s.ali, 2.0), f0));
    assert_eq!(ali, [0.0; 3]);
    let coh = steer::unit(steer::sub(steer::div(s.coh, 2.0), [0.0; 3]));
    let centroid = [0.0, 0.25, 4.5];
    assert!(close(coh, steer::unit(centroid), 1e-6));
    // The whole force: separation + cohesion, alignment zero.
    let f = steer::force(&c, &s, [0.0; 3], f0);
    let sep = steer::unit(s.sep);
    let want = steer::add(steer::scale(sep, 12.0), steer::scale(coh, 8.0));
    assert!(close(f, want, 1e-5));
}

#[test]
fn coincident_agents_add_no_separation_but_count() {
    let (f, s) = force_from([2.0; 3], [1.0, 0.0, 0.0], &[([2.0; 3], [0.0, 1.0, 0.0])]);
    assert_eq!((s.n_sep, s.n_ali, s.n_coh), (1, 1, 1));
    assert_eq!(s.sep, [0.0; 3]);
    assert!(f.iter().all(|v| v.is_finite()));
    // Alignment u((0,1,0) − (1,0,0)) × 8; cohesion u(0) = 0.
    let want = steer::scale(steer::unit([-1.0, 1.0, 0.0]), 8.0);
    assert!(close(f, want, 1e-6), "{f:?}");
}

#[test]
fn separation_sums_inverse_distance_terms() {
    // Neighbours at distance 2 and 4 on the +x axis, ahead: Σ (p − pj)/d² = −1/2 − 1/4.
    let (_, s) = force_from(
        [0.0; 3],
        [1.0, 0.0, 0.0],
        &[
            ([2.0, 0.0, 0.0], [1.0, 0.0, 0.0]),
            ([4.0, 0.0, 0.0], [1.0, 0.0, 0.0]),
        ],
    );
    assert_eq!(s.n_sep, 2);
    assert!(close(s.sep, [-0.75, 0.0, 0.0], 1e-7));
}

#[test]
fn low_speed_limit_turns_force_onto_the_cone() {
    let c = c();
    let fwd = [1.0, 0.0, 0.0];
    let f = [0.0, 10.0, 0.0]; // perpendicular
    // At speed 0 only forward force remains, with the same length.
    let g = steer::adjust_low_speed(&c, f, 0.0, fwd);
    assert!(close(g, [10.0, 0.0, 0.0], 1e-5), "{g:?}");
    // Above 1.8 nothing changes.
    assert_eq!(steer::adjust_low_speed(&c, f, 2.0, fwd), f);
    // At s = 1.8·0.9: cone cosine 1 − 2·0.9^20 ≈ 0.757; the result lies on the cone.
    let s = 1.8 * 0.9;
    let cosine = 1.0 - 2.0 * 0.9f64.powi(20);
    let g = steer::adjust_low_speed(&c, f, s, fwd);
    let l = steer::length(g);
    assert!((l - 10.0).abs() < 1e-4);
    assert!(
        (f64::from(g[0] / l) - cosine).abs() < 1e-5,
        "{g:?} vs {cosine}"
    );
    // A force already inside the cone is kept.
    let inside = [10.0, 1.0, 0.0];
    assert_eq!(steer::adjust_low_speed(&c, inside, s, fwd), inside);
}

#[test]
fn integration_follows_opensteer() {
    let c = c();
    let dt = 1.0f32 / 60.0;
    let a = Agent {
        pos: [1.0, 2.0, 3.0],
        fwd: [0.0, 1.0, 0.0],
        speed: 5.0,
        acc: [0.0; 3],
    };
    let force = [0.0, 40.0, 0.0]; // above max force, along the heading
    let b = steer::integrate(&c, &a, force, dt);
    // Clipped to 27, smoothed at rate 0.15: a = 4.05; v = 5 + 4.05/60.
    assert!((b.acc[1] - 4.05).abs() < 1e-5);
    let v = 5.0 + 4.05 / 60.0;
    assert!((b.speed - v).abs() < 1e-5);
    assert!(close(b.pos, [1.0, 2.0 + v / 60.0, 3.0], 1e-6));
    assert_eq!(b.fwd, [0.0, 1.0, 0.0]);
    // The speed never passes 9.
    let fast = Agent { speed: 9.0, ..a };
    let b = steer::integrate(&c, &fast, force, dt);
    assert!(b.speed <= 9.0 * (1.0 + 1e-6));
}

#[test]
fn wrap_teleports_through_the_centre() {
    let c = BoidsConstants::opensteer(50.0);
    let a = Agent {
        pos: [0.0, 0.0, 49.95],
        fwd: [0.0, 0.0, 1.0],
        speed: 9.0,
        acc: [0.0; 3],
    };
    let b = steer::integrate(&c, &a, [0.0; 3], 1.0 / 60.0);
    // Moved to 50.1 > 50: reappears at 50.1 − 100 = −49.9.
    assert!((b.pos[2] + 49.9).abs() < 1e-4, "{:?}", b.pos);
    assert_eq!(b.fwd, a.fwd);
    assert!(steer::length(b.pos) <= 50.0);
}

fn check_invariants(s: &FlockState, n: usize, r: f32) {
    assert_eq!(s.len(), n);
    for i in 0..n {
        let a = s.agent(i);
        assert!(
            a.pos
                .iter()
                .chain(&a.fwd)
                .chain(&a.acc)
                .all(|v| v.is_finite())
                && a.speed.is_finite(),
            "agent {i} not finite"
        );
        assert!(
            steer::length(a.pos) <= r * (1.0 + 1e-6),
            "agent {i} outside"
        );
        assert!(a.speed <= 9.0 * (1.0 + 1e-6), "agent {i} too fast");
        assert!(steer::length(a.acc) <= 27.0 * (1.0 + 1e-6), "agent {i} acc");
        if a.speed > 0.0 {
            assert!(
                (steer::length(a.fwd) - 1.0).abs() <= 1e-5,
                "agent {i} heading"
            );
        }
    }
}

fn run(params: FlockParams, state: &FlockState, steps: usize) -> FlockState {
    let mut f = Flock::new(&Backend::Cpu, params, state.clone()).unwrap();
    f.step(steps).unwrap();
    f.state().unwrap()
}

#[test]
fn invariants_hold_every_step_both_modes() {
    for mode in [NeighborMode::Nearest { k: 7 }, NeighborMode::Radius] {
        let n = 1500;
        let r = 40.0;
        let mut p = FlockParams::new(r);
        p.mode = mode;
        let s0 = FlockState::init(n, Start::Dense, r, 3);
        let mut f = Flock::new(&Backend::Cpu, p, s0).unwrap();
        for _ in 0..120 {
            let d = step_detail(&mut f).unwrap();
            for (i, fv) in d.force.iter().enumerate() {
                assert!(fv.iter().all(|v| v.is_finite()), "force {i}");
                assert!(steer::length(*fv) <= 28.0 + 1e-4);
            }
            if let NeighborMode::Nearest { k } = mode {
                assert!(d.counts.iter().all(|&c| c as usize <= k));
            }
            check_invariants(&f.state().unwrap(), n, r);
        }
    }
}

#[test]
fn neighbour_rows_equal_brute_force() {
    let n = 2000;
    let r = 30.0;
    let s0 = FlockState::init(n, Start::Uniform, r, 11);
    let mut p = FlockParams::new(r);
    p.index = FlockIndex::Uniform;
    let mut f = Flock::new(&Backend::Cpu, p, s0.clone()).unwrap();
    let d = step_detail(&mut f).unwrap();
    let r2 = 81.0f32;
    for i in 0..n {
        let mut all: Vec<(f32, u32)> = (0..n)
            .filter(|&j| j != i)
            .map(|j| {
                let o = steer::sub(s0.pos[j], s0.pos[i]);
                (steer::dot(o, o), j as u32)
            })
            .filter(|&(d2, _)| d2 < r2)
            .collect();
        all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        all.truncate(7);
        let want: Vec<u32> = all.iter().map(|x| x.1).collect();
        let row: Vec<u32> = d.neighbors[i * 7..(i + 1) * 7]
            .iter()
            .copied()
            .filter(|&j| j != u32::MAX)
            .collect();
        assert_eq!(row, want, "agent {i}");
        assert_eq!(d.counts[i] as usize, want.len());
    }
}

#[test]
fn every_index_gives_the_same_flock() {
    let n = 1200;
    let r = 25.0;
    for mode in [NeighborMode::Nearest { k: 7 }, NeighborMode::Radius] {
        let s0 = FlockState::init(n, Start::Dense, r, 5);
        let mut out = Vec::new();
        for index in [FlockIndex::Brute, FlockIndex::Uniform, FlockIndex::Dynamic] {
            let mut p = FlockParams::new(r);
            p.mode = mode;
            p.index = index;
            out.push(run(p, &s0, 30));
        }
        assert_eq!(out[0], out[1], "{mode:?}: uniform differs from brute force");
        assert_eq!(out[0], out[2], "{mode:?}: dynamic differs from brute force");
    }
}

#[test]
fn same_seed_same_flock_for_any_thread_count() {
    let n = 3000;
    let r = 60.0;
    let s0 = FlockState::init(n, Start::Uniform, r, 9);
    assert_eq!(s0, FlockState::init(n, Start::Uniform, r, 9));
    assert_ne!(s0, FlockState::init(n, Start::Uniform, r, 10));
    let p = FlockParams::new(r);
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let three = rayon::ThreadPoolBuilder::new()
        .num_threads(3)
        .build()
        .unwrap();
    let a = one.install(|| run(p, &s0, 25));
    let b = three.install(|| run(p, &s0, 25));
    assert_eq!(a, b);
}

#[test]
fn the_flock_aligns() {
    // From random headings the flock organises: neighbours come to share their heading.
    // (Measured: polarisation 0.04 → 0.88 and local alignment 0.01 → 0.92 after 1,600 steps.)
    let n = 800;
    let r = 30.0;
    let s0 = FlockState::init(n, Start::Dense, r, 2);
    let st0 = stats(&s0, r);
    let s = run(FlockParams::new(r), &s0, 1600);
    let st = stats(&s, r);
    assert!(
        st0.local_alignment.abs() < 0.1 && st0.polarisation < 0.1,
        "{st0:?}"
    );
    assert!(st.local_alignment > 0.8 && st.polarisation > 0.6, "{st:?}");
    assert!(
        st.mean_nn_distance > 0.5 && st.mean_nn_distance < 9.0,
        "{st:?}"
    );
}

#[test]
fn tiny_flocks() {
    for n in [1usize, 2, 7, 8] {
        let s0 = FlockState::init(n, Start::Dense, 50.0, 1);
        let s = run(FlockParams::new(50.0), &s0, 10);
        check_invariants(&s, n, 50.0);
    }
    let empty = run(FlockParams::new(50.0), &FlockState::default(), 3);
    assert!(empty.is_empty());
}

#[test]
fn bad_parameters_and_states_are_refused() {
    let s0 = FlockState::init(10, Start::Dense, 50.0, 1);
    let mut p = FlockParams::new(50.0);
    p.mode = NeighborMode::Nearest { k: 0 };
    assert!(Flock::new(&Backend::Cpu, p, s0.clone()).is_err());
    p.mode = NeighborMode::Nearest { k: 65 };
    assert!(Flock::new(&Backend::Cpu, p, s0.clone()).is_err());
    let mut p = FlockParams::new(f32::NAN);
    assert!(Flock::new(&Backend::Cpu, p, s0.clone()).is_err());
    p = FlockParams::new(50.0);
    p.radius = -1.0;
    assert!(Flock::new(&Backend::Cpu, p, s0.clone()).is_err());
    let mut bad = s0.clone();
    bad.pos[3][1] = f32::NAN;
    let e = Flock::new(&Backend::Cpu, FlockParams::new(50.0), bad)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("agent 3"), "{e}");
    assert!(FlockState::from_rows(&[0.0; 7]).is_err());
    let e = FlockState::from_rows(&[0.0, 0.0, 0.0, 1.0, f32::INFINITY, 0.0])
        .unwrap_err()
        .to_string();
    assert!(e.contains("agent 0") && e.contains("column 4"), "{e}");
    // Round trip through the (N × 6) rows.
    let rows = s0.to_rows();
    let back = FlockState::from_rows(&rows).unwrap();
    for i in 0..10 {
        assert!(close(back.pos[i], s0.pos[i], 0.0));
        assert!((back.speed[i] - s0.speed[i]).abs() < 1e-6);
    }
}
