//! What a scene does to a flock, measured (collisions, predator distances), and its outline
//! for pictures.

use super::super::FlockState;
use super::super::steer::V3;
use super::compile::{dot64, f32v, f64v, frame, unit64};
use super::{Obstacle, Scene, SeenFrom};
use geofield_cuda::flock::{OBSTACLE_PLANE, OBSTACLE_SPHERE};

impl Scene {
    /// The predators' starting state (heading normalised, speed 0.3 × max speed by default).
    pub fn predator_state(&self) -> FlockState {
        let mut s = FlockState::default();
        for p in &self.predators {
            s.pos.push(p.start);
            s.fwd.push(f32v(unit64(f64v(p.heading))));
            s.speed.push(p.speed.unwrap_or(0.3 * p.max_speed));
            s.acc.push([0.0; 3]);
        }
        s
    }

    /// Agents of `state` inside a solid obstacle (see the module docs).
    pub fn collisions(&self, state: &FlockState) -> usize {
        state
            .pos
            .iter()
            .filter(|p| self.inside_solid(f64v(**p)))
            .count()
    }

    /// Whether the point `p` is inside the solid part of any obstacle.
    pub fn inside_solid(&self, p: [f64; 3]) -> bool {
        self.obstacles.iter().any(|o| inside_solid(o, p))
    }

    /// Each predator's distance to its nearest agent of `state` (NaN without agents).
    pub fn predator_distances(state: &FlockState, predators: &FlockState) -> Vec<f64> {
        predators
            .pos
            .iter()
            .map(|m| {
                let m = f64v(*m);
                state
                    .pos
                    .iter()
                    .map(|p| {
                        let d = [
                            f64::from(p[0]) - m[0],
                            f64::from(p[1]) - m[1],
                            f64::from(p[2]) - m[2],
                        ];
                        dot64(d, d)
                    })
                    .fold(f64::INFINITY, f64::min)
                    .sqrt()
            })
            .map(|d| if d.is_finite() { d } else { f64::NAN })
            .collect()
    }
}

fn inside_solid(o: &Obstacle, p: [f64; 3]) -> bool {
    let sub = |a: [f64; 3], b: [f32; 3]| {
        [
            a[0] - f64::from(b[0]),
            a[1] - f64::from(b[1]),
            a[2] - f64::from(b[2]),
        ]
    };
    match *o {
        Obstacle::Sphere {
            centre,
            radius,
            seen_from,
        } => {
            let d = sub(p, centre);
            let d2 = dot64(d, d);
            let r2 = f64::from(radius) * f64::from(radius);
            match seen_from {
                SeenFrom::Outside => d2 < r2,
                SeenFrom::Inside => d2 > r2,
                SeenFrom::Both => false,
            }
        }
        Obstacle::Box {
            centre,
            size,
            forward,
            up,
            seen_from,
        } => {
            let Ok(axes) = frame("box", "forward", forward.unwrap_or([0.0, 0.0, 1.0]), up) else {
                return false;
            };
            let d = sub(p, centre);
            let within = axes
                .iter()
                .zip(size)
                .all(|(a, s)| dot64(d, *a).abs() < 0.5 * f64::from(s));
            match seen_from {
                SeenFrom::Outside => within,
                SeenFrom::Inside => !within,
                SeenFrom::Both => false,
            }
        }
        Obstacle::Plane {
            point,
            normal,
            seen_from,
        } => {
            let z = dot64(sub(p, point), f64v(normal));
            match seen_from {
                SeenFrom::Outside => z < 0.0,
                SeenFrom::Inside => z > 0.0,
                SeenFrom::Both => false,
            }
        }
        Obstacle::Rectangle { .. } => false,
    }
}

/// World-space line segments that outline the obstacles, for pictures: three great circles
/// per sphere, twelve edges per box, four per rectangle, and a square patch of side
/// 2 × `extent` with a cross for a plane.
pub fn outline(scene: &Scene, extent: f32) -> Vec<(V3, V3)> {
    let mut segs = Vec::new();
    let Ok(compiled) = scene.compile() else {
        return segs;
    };
    let quad = |c: V3, s: V3, u: V3, hw: f32, hh: f32, segs: &mut Vec<(V3, V3)>| {
        let corner = |a: f32, b: f32| -> V3 { std::array::from_fn(|k| c[k] + s[k] * a + u[k] * b) };
        let pts = [
            corner(-hw, -hh),
            corner(hw, -hh),
            corner(hw, hh),
            corner(-hw, hh),
        ];
        for k in 0..4 {
            segs.push((pts[k], pts[(k + 1) % 4]));
        }
    };
    for o in &compiled.obstacles {
        match o.kind {
            OBSTACLE_SPHERE => {
                const N: usize = 48;
                let axes = [[1.0f32, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
                for (a, b) in [(0, 1), (1, 2), (0, 2)] {
                    let pt = |k: usize| -> V3 {
                        let t = k as f32 / N as f32 * std::f32::consts::TAU;
                        std::array::from_fn(|i| {
                            o.centre[i] + o.radius * (t.cos() * axes[a][i] + t.sin() * axes[b][i])
                        })
                    };
                    for k in 0..N {
                        segs.push((pt(k), pt(k + 1)));
                    }
                }
            }
            OBSTACLE_PLANE => {
                quad(o.centre, o.side, o.up, extent, extent, &mut segs);
                let c = o.centre;
                let e = |v: V3, t: f32| -> V3 { std::array::from_fn(|i| c[i] + v[i] * t) };
                segs.push((e(o.side, -extent), e(o.side, extent)));
                segs.push((e(o.up, -extent), e(o.up, extent)));
            }
            // A box's faces outline its edges (each edge drawn twice).
            _ => quad(o.centre, o.side, o.up, o.half_w, o.half_h, &mut segs),
        }
    }
    segs
}
