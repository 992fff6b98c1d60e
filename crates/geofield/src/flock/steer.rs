//! OpenSteer's boids arithmetic for one agent, in f32, with a pinned operation order.
//!
//! Every function here is mirrored operation for operation by the CUDA kernel
//! (`crates/geofield-cuda/kernels/flock.cu`), which uses round-to-nearest intrinsics without
//! fused multiply-add; square roots and divisions are correctly rounded on both sides, and the
//! one power in OpenSteer (`pow(s/1.8, 20)`) is computed by repeated squaring. From the same
//! state and the same neighbour lists the two backends therefore produce the same bits.
//!
//! Vector conventions: dot and length sum the axes in order ((x·x + y·y) + z·z); `unit(v)` is
//! v / |v| per component, and 0 for v = 0.

use super::BoidsConstants;

pub(crate) type V3 = [f32; 3];

#[inline]
pub fn sub(a: V3, b: V3) -> V3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

#[inline]
pub fn add(a: V3, b: V3) -> V3 {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}

#[inline]
pub fn scale(a: V3, s: f32) -> V3 {
    [a[0] * s, a[1] * s, a[2] * s]
}

#[inline]
pub fn div(a: V3, s: f32) -> V3 {
    [a[0] / s, a[1] / s, a[2] / s]
}

#[inline]
pub fn dot(a: V3, b: V3) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

#[inline]
pub fn length(a: V3) -> f32 {
    dot(a, a).sqrt()
}

/// v / |v|, or 0 when |v| = 0 (OpenSteer's `normalize`).
#[inline]
pub fn unit(a: V3) -> V3 {
    let m = length(a);
    if m > 0.0 { div(a, m) } else { [0.0; 3] }
}

/// OpenSteer's `truncateLength`: v scaled to length `max` when longer.
#[inline]
pub(crate) fn truncate(a: V3, max: f32) -> V3 {
    let l2 = dot(a, a);
    if l2 <= max * max {
        a
    } else {
        scale(a, max / l2.sqrt())
    }
}

/// Sums over the neighbours that pass each behaviour's test.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sums {
    pub sep: V3,
    pub ali: V3,
    pub coh: V3,
    pub n_sep: u32,
    pub n_ali: u32,
    pub n_coh: u32,
}

/// Add neighbour j (position `pj`, forward `fj`, squared distance `d2` as computed by the
/// neighbour search: ((pj − pi)² summed x, y, z)) to agent i's sums.
///
/// OpenSteer's `inBoidNeighborhood` per behaviour: d² < (3·body radius)² passes whatever the
/// angle; d² > R_b² fails; otherwise f_i · ((p_j − p_i)/d) > cos_b passes (strict).
#[inline]
pub fn accumulate(c: &BoidsConstants, s: &mut Sums, pi: V3, fi: V3, pj: V3, fj: V3, d2: f32) {
    let off = sub(pj, pi);
    let near = d2 < c.near2;
    let fwd = if near {
        0.0
    } else {
        let d = d2.sqrt();
        dot(fi, div(off, d))
    };
    if near || (d2 <= c.sep_r2 && fwd > c.sep_cos) {
        // OpenSteer: steering += (p_i − p_j) / d²; coincident agents add nothing (D7).
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

/// The flocking force from the sums: 12·u(sep) + 8·u(mean f − f_i) + 8·u(mean p − p_i).
#[inline]
pub fn force(c: &BoidsConstants, s: &Sums, pi: V3, fi: V3) -> V3 {
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

/// x^20 by repeated squaring (the same bits on every backend, unlike `powf`).
#[inline]
pub(crate) fn pow20(x: f32) -> f32 {
    let x2 = x * x;
    let x4 = x2 * x2;
    let x8 = x4 * x4;
    let x16 = x8 * x8;
    x16 * x4
}

/// OpenSteer's `adjustRawSteeringForce`: below 0.2·max speed the force is turned onto a cone
/// around the heading, narrowing to straight ahead at speed 0.
#[inline]
pub fn adjust_low_speed(c: &BoidsConstants, f: V3, speed: f32, fwd: V3) -> V3 {
    let max_adj = c.max_speed * 0.2;
    if speed > max_adj || f == [0.0; 3] {
        return f;
    }
    let range = speed / max_adj;
    // interpolate(pow(range, 20), 1, −1) = 1 + (−1 − 1)·pow
    let cosine = 1.0 + (-2.0) * pow20(range);
    // vecLimitDeviationAngleUtility(inside = true, f, cosine, fwd)
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

/// One agent's dynamic state.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Agent {
    pub pos: V3,
    pub fwd: V3,
    pub speed: f32,
    pub acc: V3,
}

/// OpenSteer's `applySteeringForce` (with the boids' banking update of the heading) and the
/// spherical wrap-around, for the fixed step `dt`.
#[inline]
pub fn integrate(c: &BoidsConstants, a: &Agent, force: V3, dt: f32) -> Agent {
    let adjusted = adjust_low_speed(c, force, a.speed, a.fwd);
    let clipped = truncate(adjusted, c.max_force);
    let new_acc = div(clipped, c.mass);
    let mut acc = a.acc;
    if dt > 0.0 {
        let rate = (9.0 * dt).clamp(0.15, 0.4);
        // interpolate(rate, acc, new) = acc + (new − acc)·rate
        acc = add(acc, scale(sub(new_acc, acc), rate));
    }
    let vel = add(scale(a.fwd, a.speed), scale(acc, dt));
    let vel = truncate(vel, c.max_speed);
    let speed = length(vel);
    let mut pos = add(a.pos, scale(vel, dt));
    let fwd = if speed > 0.0 { div(vel, speed) } else { a.fwd };
    // sphericalWrapAround: p + ((p / r)·R)·(−2) when r = |p| > R.
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
