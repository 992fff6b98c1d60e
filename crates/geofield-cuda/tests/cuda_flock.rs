//! GPU tests of the boids flock (`geofield_cuda::flock`) against a plain host reference written
//! here: brute-force f32 neighbour search and OpenSteer's per-agent arithmetic as in
//! `crates/geofield/src/flock/steer.rs` (rustc never contracts to FMA, so these are the CPU's
//! bits). Nearest mode must match bit for bit, radius mode to rounding.
//!
//! Skipped (with a notice) without a GPU; failing when GEOFIELD_REQUIRE_GPU=1. The PTX check
//! needs NVRTC only.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use geofield_cuda::flock::{
    FlockConfig, FlockConstants, FlockDetail, FlockHostState, FlockSearch, GpuFlock,
};
use geofield_cuda::{CudaError, compile_check, module_source, nvrtc_present, test_gpu};

// ---- a small deterministic generator ----------------------------------------------------------
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn in_ball(&mut self) -> V3 {
        loop {
            let v = [
                self.unit() * 2.0 - 1.0,
                self.unit() * 2.0 - 1.0,
                self.unit() * 2.0 - 1.0,
            ];
            let l2 = dot(v, v);
            if l2 <= 1.0 && l2 > 1e-6 {
                return v;
            }
        }
    }
}

// ---- the reference: steer.rs, written plainly ------------------------------------------------
type V3 = [f32; 3];

fn sub(a: V3, b: V3) -> V3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}
fn add(a: V3, b: V3) -> V3 {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}
fn scale(a: V3, s: f32) -> V3 {
    [a[0] * s, a[1] * s, a[2] * s]
}
fn div(a: V3, s: f32) -> V3 {
    [a[0] / s, a[1] / s, a[2] / s]
}
fn dot(a: V3, b: V3) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}
fn length(a: V3) -> f32 {
    dot(a, a).sqrt()
}
fn unit(a: V3) -> V3 {
    let m = length(a);
    if m > 0.0 { div(a, m) } else { [0.0; 3] }
}
fn truncate(a: V3, max: f32) -> V3 {
    let l2 = dot(a, a);
    if l2 <= max * max {
        a
    } else {
        scale(a, max / l2.sqrt())
    }
}
/// The neighbour search's squared distance: ((0 + dx²) + dy²) + dz², d = p − q.
fn dist2(q: V3, p: V3) -> f32 {
    let d = sub(p, q);
    ((0.0 + d[0] * d[0]) + d[1] * d[1]) + d[2] * d[2]
}

#[derive(Default)]
struct Sums {
    sep: V3,
    ali: V3,
    coh: V3,
    n_sep: u32,
    n_ali: u32,
    n_coh: u32,
}

fn accumulate(c: &FlockConstants, s: &mut Sums, pi: V3, fi: V3, pj: V3, fj: V3, d2: f32) {
    let off = sub(pj, pi);
    let near = d2 < c.near2;
    let fwd = if near {
        0.0
    } else {
        let d = d2.sqrt();
        dot(fi, div(off, d))
    };
    if near || (d2 <= c.sep_r2 && fwd > c.sep_cos) {
        if d2 > 0.0 {
            s.sep = add(s.sep, div(sub(pi, pj), d2));
        }
        s.n_sep += 1;
    }
    if near || (d2 <= c.ali_r2 && fwd > c.ali_cos) {
        s.ali = add(s.ali, fj);
        s.n_ali += 1;
    }
    if near || (d2 <= c.coh_r2 && fwd > c.coh_cos) {
        s.coh = add(s.coh, pj);
        s.n_coh += 1;
    }
}

fn force(c: &FlockConstants, s: &Sums, pi: V3, fi: V3) -> V3 {
    let sep = unit(s.sep);
    let ali = if s.n_ali > 0 {
        unit(sub(div(s.ali, s.n_ali as f32), fi))
    } else {
        [0.0; 3]
    };
    let coh = if s.n_coh > 0 {
        unit(sub(div(s.coh, s.n_coh as f32), pi))
    } else {
        [0.0; 3]
    };
    add(
        add(scale(sep, c.sep_weight), scale(ali, c.ali_weight)),
        scale(coh, c.coh_weight),
    )
}

fn pow20(x: f32) -> f32 {
    let x2 = x * x;
    let x4 = x2 * x2;
    let x8 = x4 * x4;
    let x16 = x8 * x8;
    x16 * x4
}

fn adjust_low_speed(c: &FlockConstants, f: V3, speed: f32, fwd: V3) -> V3 {
    let max_adj = c.max_speed * 0.2;
    if speed > max_adj || f == [0.0; 3] {
        return f;
    }
    let range = speed / max_adj;
    let cosine = 1.0 + (-2.0) * pow20(range);
    let len = length(f);
    if len == 0.0 {
        return f;
    }
    let dir = div(f, len);
    if dot(dir, fwd) >= cosine {
        return f;
    }
    let perp = sub(f, scale(fwd, dot(f, fwd)));
    let uperp = unit(perp);
    let perp_dist = (1.0 - cosine * cosine).sqrt();
    let c0 = scale(fwd, cosine);
    let c1 = scale(uperp, perp_dist);
    scale(add(c0, c1), len)
}

#[derive(Clone, Copy)]
struct Agent {
    pos: V3,
    fwd: V3,
    speed: f32,
    acc: V3,
}

fn integrate(c: &FlockConstants, a: &Agent, force: V3, dt: f32) -> Agent {
    let adjusted = adjust_low_speed(c, force, a.speed, a.fwd);
    let clipped = truncate(adjusted, c.max_force);
    let new_acc = div(clipped, c.mass);
    let mut acc = a.acc;
    if dt > 0.0 {
        let rate = (9.0 * dt).clamp(0.15, 0.4);
        acc = add(acc, scale(sub(new_acc, acc), rate));
    }
    let vel = add(scale(a.fwd, a.speed), scale(acc, dt));
    let vel = truncate(vel, c.max_speed);
    let speed = length(vel);
    let mut pos = add(a.pos, scale(vel, dt));
    let fwd = if speed > 0.0 { div(vel, speed) } else { a.fwd };
    let r = length(pos);
    if r > c.world_radius {
        pos = add(pos, scale(scale(div(pos, r), c.world_radius), -2.0));
    }
    Agent {
        pos,
        fwd,
        speed,
        acc,
    }
}

/// One reference step: (state t + 1, detail). Nearest mode: the k smallest (d², id) among
/// j ≠ i with d² ≤ r2, summed ascending; radius mode: every such j in ascending id.
fn reference_step(cfg: &FlockConfig, s: &FlockHostState) -> (FlockHostState, FlockDetail) {
    let n = s.len();
    let c = &cfg.constants;
    let k = cfg.k as usize;
    let mut next = FlockHostState::default();
    let mut det = FlockDetail {
        neighbors: vec![u32::MAX; n * k],
        counts: vec![0; n],
        force: vec![[0.0; 3]; n],
    };
    for i in 0..n {
        let me = Agent {
            pos: s.pos[i],
            fwd: s.fwd[i],
            speed: s.speed[i],
            acc: s.acc[i],
        };
        let mut list: Vec<(f32, usize)> = (0..n)
            .filter(|&j| j != i)
            .map(|j| (dist2(me.pos, s.pos[j]), j))
            .filter(|&(d2, _)| d2 <= cfg.r2)
            .collect();
        if k > 0 {
            list.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap().then(a.1.cmp(&b.1)));
            list.truncate(k);
            for (slot, &(_, j)) in list.iter().enumerate() {
                det.neighbors[i * k + slot] = j as u32;
            }
        }
        let mut sums = Sums::default();
        for &(d2, j) in &list {
            accumulate(c, &mut sums, me.pos, me.fwd, s.pos[j], s.fwd[j], d2);
        }
        let f = force(c, &sums, me.pos, me.fwd);
        det.counts[i] = list.len() as u32;
        det.force[i] = f;
        let a = integrate(c, &me, f, cfg.dt);
        next.pos.push(a.pos);
        next.fwd.push(a.fwd);
        next.speed.push(a.speed);
        next.acc.push(a.acc);
    }
    if k == 0 {
        det.neighbors.clear();
    }
    (next, det)
}

// ---- states and configurations ----------------------------------------------------------------
/// `n` agents uniform in a ball of radius `ball` around `centre`; random unit headings, speeds
/// in [0, 9] (a tenth exactly 0, a fifth below the low-speed limit 1.8), accelerations up to 27;
/// `dups` agents copy another agent's position exactly.
fn random_state(n: usize, ball: f32, centre: V3, dups: usize, seed: u64) -> FlockHostState {
    let mut rng = Rng(seed);
    let mut s = FlockHostState::default();
    for i in 0..n {
        s.pos.push(add(centre, scale(rng.in_ball(), ball)));
        s.fwd.push(unit(rng.in_ball()));
        s.speed.push(match i % 10 {
            0 => 0.0,
            1 | 2 => rng.unit() * 1.8,
            _ => rng.unit() * 9.0,
        });
        s.acc.push(scale(rng.in_ball(), 27.0 * rng.unit()));
    }
    for _ in 0..dups.min(n / 2) {
        let (a, b) = (rng.below(n), rng.below(n));
        s.pos[a] = s.pos[b];
    }
    s
}

/// Agents on an integer lattice (exact squared distances, many exact ties), some duplicated.
fn lattice_state(n: usize, side: i32, seed: u64) -> FlockHostState {
    let mut rng = Rng(seed);
    let mut s = random_state(n, 1.0, [0.0; 3], 0, seed ^ 0x55);
    for p in &mut s.pos {
        *p = std::array::from_fn(|_| (rng.below(side as usize) as i32 - side / 2) as f32);
    }
    s
}

fn r2_below(radius: f32) -> f32 {
    f32::from_bits((radius * radius).to_bits() - 1)
}

fn config(k: u32, world_radius: f32, search: FlockSearch) -> FlockConfig {
    FlockConfig {
        constants: FlockConstants::opensteer(world_radius),
        k,
        r2: r2_below(9.0),
        dt: 1.0 / 60.0,
        search,
    }
}

fn bits3(v: &[[f32; 3]]) -> Vec<[u32; 3]> {
    v.iter().map(|a| a.map(f32::to_bits)).collect()
}

/// The first agent whose state differs bitwise, with both values.
fn first_state_diff(a: &FlockHostState, b: &FlockHostState) -> Option<String> {
    if a.len() != b.len() {
        return Some(format!("lengths {} vs {}", a.len(), b.len()));
    }
    for i in 0..a.len() {
        let same = bits3(&a.pos[i..=i]) == bits3(&b.pos[i..=i])
            && bits3(&a.fwd[i..=i]) == bits3(&b.fwd[i..=i])
            && bits3(&a.acc[i..=i]) == bits3(&b.acc[i..=i])
            && a.speed[i].to_bits() == b.speed[i].to_bits();
        if !same {
            return Some(format!(
                "agent {i}: pos {:?} vs {:?}, fwd {:?} vs {:?}, speed {} vs {}, acc {:?} vs {:?}",
                a.pos[i], b.pos[i], a.fwd[i], b.fwd[i], a.speed[i], b.speed[i], a.acc[i], b.acc[i]
            ));
        }
    }
    None
}

fn check_invariants(s: &FlockHostState, c: &FlockConstants, what: &str) {
    for i in 0..s.len() {
        let a = [s.pos[i], s.fwd[i], s.acc[i]];
        assert!(
            a.iter().flatten().all(|v| v.is_finite()) && s.speed[i].is_finite(),
            "{what}: agent {i} is not finite"
        );
        let r = f64::from(length(s.pos[i]));
        assert!(
            r <= f64::from(c.world_radius) * (1.0 + 1e-6),
            "{what}: agent {i} at |p| = {r} beyond R = {}",
            c.world_radius
        );
        assert!(
            f64::from(s.speed[i]) <= f64::from(c.max_speed) * (1.0 + 1e-6),
            "{what}: agent {i} speed {}",
            s.speed[i]
        );
    }
}

// ---- tests ------------------------------------------------------------------------------------

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
