//! Predators: pursuers of the nearest boid, and the boids' evasion of them (f32, pinned
//! operation order, mirrored by `kernels/flock_scene.cu`).
//!
//! OpenSteer's boids plug-in has no predator; these rules come from its other plug-ins:
//!
//! - **Pursuit** (`SteerLibrary.h` `steerForPursuit`, as `MultiplePursuit.cpp`'s pursuers and
//!   `CaptureTheFlag.cpp`'s `CtfEnemy` use it): the quarry is the nearest boid, the smallest
//!   key (d², id) over all boids at state t. With offset o = q − p, distance d = |o|,
//!   forwardness = f·o/d and parallelness = f·f_q, each compared with ±0.707
//!   (`intervalComparison`), a time factor is taken from OpenSteer's 3 × 3 table; the
//!   predicted time is min(d / s · factor, max_prediction) (max_prediction when s = 0) and the
//!   force is `steerForSeek` of the quarry's predicted position q + v_q·t: (target − p) − v.
//! - **Obstacles first** (`CtfEnemy::update`): a predator's own `steerToAvoidObstacles` force,
//!   when non-zero, replaces its pursuit.
//! - **Evasion** (`steerForEvasion`, as `CtfSeeker::XXXsteerToEvadeAllDefenders` sums it over
//!   the menaces): each boid flees the predicted position m + v_m·t of every predator with
//!   d² ≤ evade_r2 (t = min(d / s_m, evade_time), 0 when s_m = 0): flee = (p − target) − v,
//!   summed over those predators in scene order. The boid's force is then
//!   flocking + evade_weight · u(Σ flee), below obstacle avoidance in priority.

use super::steer::{self, Agent, V3, add, dot, length, scale, sub, unit};
use super::{BoidsConstants, FlockState};

/// A predator's limits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Limits {
    pub max_speed: f32,
    pub max_force: f32,
    pub max_prediction: f32,
}

/// `intervalComparison(x, −0.707, 0.707)`.
#[inline]
fn interval(x: f32) -> i32 {
    if x < -0.707 {
        -1
    } else if x > 0.707 {
        1
    } else {
        0
    }
}

/// OpenSteer's pursuit time factor for the quarry ahead/aside/behind (f) and heading
/// parallel/perpendicular/anti-parallel (par).
#[inline]
fn time_factor(f: i32, par: i32) -> f32 {
    match (f, par) {
        (1, 1) => 4.0,
        (1, 0) => 1.8,
        (1, _) => 0.85,
        (0, 1) => 1.0,
        (0, 0) => 0.8,
        (0, _) => 4.0,
        (_, 1) => 0.5,
        _ => 2.0,
    }
}

/// `steerForPursuit(quarry, max_prediction)` of the predator `a` after the quarry `q`.
pub(crate) fn pursuit(a: &Agent, q: &Agent, max_prediction: f32) -> V3 {
    let offset = sub(q.pos, a.pos);
    let distance = length(offset);
    let unit_offset = unit(offset);
    let parallelness = dot(a.fwd, q.fwd);
    let forwardness = dot(a.fwd, unit_offset);
    let factor = time_factor(interval(forwardness), interval(parallelness));
    let t = if a.speed > 0.0 {
        let et = distance / a.speed * factor;
        if et > max_prediction {
            max_prediction
        } else {
            et
        }
    } else {
        max_prediction
    };
    let target = add(q.pos, scale(scale(q.fwd, q.speed), t));
    sub(sub(target, a.pos), scale(a.fwd, a.speed))
}

/// The flee term of one menace `m` (`steerForEvasion`).
pub(crate) fn flee(a: &Agent, m: &Agent, evade_time: f32) -> V3 {
    let distance = length(sub(m.pos, a.pos));
    let t = if m.speed > 0.0 {
        let rough = distance / m.speed;
        if rough > evade_time {
            evade_time
        } else {
            rough
        }
    } else {
        0.0
    };
    let target = add(m.pos, scale(scale(m.fwd, m.speed), t));
    sub(sub(a.pos, target), scale(a.fwd, a.speed))
}

/// The scene's part of the steering, in priority order: obstacle avoidance, else the flocking
/// force plus the evasion of the predators within reach.
pub(crate) fn boid_force(
    scene: &super::scene::Compiled,
    c: &BoidsConstants,
    a: &Agent,
    flocking: V3,
    predators: &FlockState,
) -> V3 {
    let k = &scene.constants;
    if !scene.obstacles.is_empty() {
        let avoid = super::avoid::steer_to_avoid(
            &scene.obstacles,
            k.body_radius,
            k.avoid_time,
            c.max_force,
            a.pos,
            a.fwd,
            a.speed,
        );
        if avoid != [0.0; 3] {
            return avoid;
        }
    }
    let mut sum = [0.0f32; 3];
    let mut seen = 0u32;
    for j in 0..predators.len() {
        let m = predators.agent(j);
        let off = sub(m.pos, a.pos);
        if dot(off, off) <= k.evade_r2 {
            sum = add(sum, flee(a, &m, k.evade_time));
            seen += 1;
        }
    }
    if seen == 0 {
        return flocking;
    }
    add(flocking, scale(unit(sum), k.evade_weight))
}

/// The nearest boid to `p`: the smallest (d², id) over the boids (positions `pos` with ids
/// `ids`), d² as the neighbour search computes it; its slot, or None without boids.
pub(crate) fn nearest_boid(pos: &[[f32; 3]], ids: &[u32], p: V3) -> Option<usize> {
    use rayon::prelude::*;
    pos.par_iter()
        .zip(ids.par_iter())
        .enumerate()
        .map(|(s, (q, &id))| {
            let d2 = dist2(p, *q);
            ((u64::from(d2.to_bits()) << 32) | u64::from(id), s)
        })
        .min_by_key(|&(key, _)| key)
        .map(|(_, s)| s)
}

/// ((0 + dx²) + dy²) + dz² with d = q − p (the neighbour search's order).
#[inline]
pub(crate) fn dist2(p: V3, q: V3) -> f32 {
    let d = sub(q, p);
    0.0 + d[0] * d[0] + d[1] * d[1] + d[2] * d[2]
}

/// One step of every predator from state t of the boids (`boids` in storage order with their
/// `ids`) and of the predators.
pub(crate) fn step_predators(
    scene: &super::scene::Compiled,
    c: &BoidsConstants,
    dt: f32,
    boids: &FlockState,
    ids: &[u32],
    predators: &FlockState,
) -> FlockState {
    let k = &scene.constants;
    let mut next = FlockState::default();
    for j in 0..predators.len() {
        let a = predators.agent(j);
        let lim = scene.limits[j];
        let pc = BoidsConstants {
            max_speed: lim.max_speed,
            max_force: lim.max_force,
            ..*c
        };
        let mut force = [0.0f32; 3];
        if !scene.obstacles.is_empty() {
            force = super::avoid::steer_to_avoid(
                &scene.obstacles,
                k.body_radius,
                k.avoid_time,
                lim.max_force,
                a.pos,
                a.fwd,
                a.speed,
            );
        }
        if force == [0.0; 3]
            && let Some(s) = nearest_boid(&boids.pos, ids, a.pos)
        {
            force = pursuit(&a, &boids.agent(s), lim.max_prediction);
        }
        let b = steer::integrate(&pc, &a, force, dt);
        next.pos.push(b.pos);
        next.fwd.push(b.fwd);
        next.speed.push(b.speed);
        next.acc.push(b.acc);
    }
    next
}
