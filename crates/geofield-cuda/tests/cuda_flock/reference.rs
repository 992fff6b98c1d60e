//! The tests' host reference: a deterministic generator, brute-force f32 neighbours and
//! OpenSteer's per-agent arithmetic (as `crates/geofield/src/flock/steer.rs`), plus state helpers.

use geofield_cuda::flock::{FlockConfig, FlockConstants, FlockDetail, FlockHostState, FlockSearch};

// ---- a small deterministic generator ----------------------------------------------------------
pub(crate) struct Rng(pub(crate) u64);

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
pub(crate) type V3 = [f32; 3];

pub(crate) fn sub(a: V3, b: V3) -> V3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}
pub(crate) fn add(a: V3, b: V3) -> V3 {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}
pub(crate) fn scale(a: V3, s: f32) -> V3 {
    [a[0] * s, a[1] * s, a[2] * s]
}
pub(crate) fn div(a: V3, s: f32) -> V3 {
    [a[0] / s, a[1] / s, a[2] / s]
}
pub(crate) fn dot(a: V3, b: V3) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}
pub(crate) fn length(a: V3) -> f32 {
    dot(a, a).sqrt()
}
pub(crate) fn unit(a: V3) -> V3 {
    let m = length(a);
    if m > 0.0 { div(a, m) } else { [0.0; 3] }
}
pub(crate) fn truncate(a: V3, max: f32) -> V3 {
    let l2 = dot(a, a);
    if l2 <= max * max {
        a
    } else {
        scale(a, max / l2.sqrt())
    }
}
/// The neighbour search's squared distance: ((0 + dx²) + dy²) + dz², d = p − q.
pub(crate) fn dist2(q: V3, p: V3) -> f32 {
    let d = sub(p, q);
    ((0.0 + d[0] * d[0]) + d[1] * d[1]) + d[2] * d[2]
}

#[derive(Default)]
pub(crate) struct Sums {
    pub(crate) sep: V3,
    pub(crate) ali: V3,
    pub(crate) coh: V3,
    pub(crate) n_sep: u32,
    pub(crate) n_ali: u32,
    pub(crate) n_coh: u32,
}

pub(crate) fn accumulate(
    c: &FlockConstants,
    s: &mut Sums,
    pi: V3,
    fi: V3,
    pj: V3,
    fj: V3,
    d2: f32,
) {
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

pub(crate) fn force(c: &FlockConstants, s: &Sums, pi: V3, fi: V3) -> V3 {
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

pub(crate) fn pow20(x: f32) -> f32 {
    let x2 = x * x;
    let x4 = x2 * x2;
    let x8 = x4 * x4;
    let x16 = x8 * x8;
    x16 * x4
}

pub(crate) fn adjust_low_speed(c: &FlockConstants, f: V3, speed: f32, fwd: V3) -> V3 {
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
pub(crate) struct Agent {
    pub(crate) pos: V3,
    pub(crate) fwd: V3,
    pub(crate) speed: f32,
    pub(crate) acc: V3,
}

pub(crate) fn integrate(c: &FlockConstants, a: &Agent, force: V3, dt: f32) -> Agent {
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
pub(crate) fn reference_step(
    cfg: &FlockConfig,
    s: &FlockHostState,
) -> (FlockHostState, FlockDetail) {
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
pub(crate) fn random_state(
    n: usize,
    ball: f32,
    centre: V3,
    dups: usize,
    seed: u64,
) -> FlockHostState {
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
pub(crate) fn lattice_state(n: usize, side: i32, seed: u64) -> FlockHostState {
    let mut rng = Rng(seed);
    let mut s = random_state(n, 1.0, [0.0; 3], 0, seed ^ 0x55);
    for p in &mut s.pos {
        *p = std::array::from_fn(|_| (rng.below(side as usize) as i32 - side / 2) as f32);
    }
    s
}

pub(crate) fn r2_below(radius: f32) -> f32 {
    f32::from_bits((radius * radius).to_bits() - 1)
}

pub(crate) fn config(k: u32, world_radius: f32, search: FlockSearch) -> FlockConfig {
    FlockConfig {
        constants: FlockConstants::opensteer(world_radius),
        k,
        r2: r2_below(9.0),
        dt: 1.0 / 60.0,
        search,
    }
}

pub(crate) fn bits3(v: &[[f32; 3]]) -> Vec<[u32; 3]> {
    v.iter().map(|a| a.map(f32::to_bits)).collect()
}

/// The first agent whose state differs bitwise, with both values.
pub(crate) fn first_state_diff(a: &FlockHostState, b: &FlockHostState) -> Option<String> {
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

pub(crate) fn check_invariants(s: &FlockHostState, c: &FlockConstants, what: &str) {
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
