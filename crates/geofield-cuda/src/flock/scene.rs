//! The flock's scene on the device: obstacles (OpenSteer's spheres, rectangles, planes and
//! boxes, the latter as six faces) and predators, uploaded once.
//!
//! The records are built on the host by `geofield::flock::Scene` (every frame vector and face
//! centre computed there, in f32), so that the CPU and the GPU read the same numbers; the step
//! kernels and `flock_predators` then run `crates/geofield/src/flock/avoid.rs` and
//! `predator.rs` operation for operation (`kernels/flock_scene.cu`).

use super::FlockHostState;

/// [`FlockObstacle::kind`]: a sphere (`centre`, `radius`).
pub const OBSTACLE_SPHERE: u32 = 0;
/// [`FlockObstacle::kind`]: a rectangle (`centre`, `side`, `up`, `normal`, `half_w`, `half_h`).
pub const OBSTACLE_RECTANGLE: u32 = 1;
/// [`FlockObstacle::kind`]: an infinite plane through `centre` (`side`, `up`, `normal`).
pub const OBSTACLE_PLANE: u32 = 2;
/// [`FlockObstacle::kind`]: one face of a box, a rectangle whose steering hint points away from
/// the box's centre `origin`.
pub const OBSTACLE_BOX_FACE: u32 = 3;

/// [`FlockObstacle::seen_from`]: a solid (the agent stays outside).
pub const SEEN_FROM_OUTSIDE: u32 = 0;
/// [`FlockObstacle::seen_from`]: a container (the agent stays inside).
pub const SEEN_FROM_INSIDE: u32 = 1;
/// [`FlockObstacle::seen_from`]: a thin shell avoided from either side.
pub const SEEN_FROM_BOTH: u32 = 2;

/// One obstacle record (C: `FlObstacle`). A planar record's local frame is (`side`, `up`,
/// `normal`), unit and orthogonal; its local z is the signed distance along `normal`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct FlockObstacle {
    pub kind: u32,
    pub seen_from: u32,
    /// Sphere radius (0 for the other kinds).
    pub radius: f32,
    /// Rectangle and box face: half extents along `side` and `up`.
    pub half_w: f32,
    pub half_h: f32,
    pub centre: [f32; 3],
    pub side: [f32; 3],
    pub up: [f32; 3],
    pub normal: [f32; 3],
    /// Box face: the box's centre.
    pub origin: [f32; 3],
}

impl FlockObstacle {
    /// The record as the 20 four-byte words of its C layout (`FlObstacle`), f32 as their bits.
    pub fn words(&self) -> [u32; 20] {
        let f = |v: [f32; 3]| v.map(f32::to_bits);
        let mut w = [0u32; 20];
        w[0] = self.kind;
        w[1] = self.seen_from;
        w[2] = self.radius.to_bits();
        w[3] = self.half_w.to_bits();
        w[4] = self.half_h.to_bits();
        w[5..8].copy_from_slice(&f(self.centre));
        w[8..11].copy_from_slice(&f(self.side));
        w[11..14].copy_from_slice(&f(self.up));
        w[14..17].copy_from_slice(&f(self.normal));
        w[17..20].copy_from_slice(&f(self.origin));
        w
    }
}

/// Scene-wide constants of the avoidance and the evasion.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlockSceneConstants {
    /// The agents' body radius (OpenSteer's 0.5): spheres grow and rectangles widen by it.
    pub body_radius: f32,
    /// OpenSteer's `minTimeToCollision` (s): an intersection nearer than this times the speed
    /// is avoided.
    pub avoid_time: f32,
    /// Boids evade the predators with d² ≤ this (inclusive threshold).
    pub evade_r2: f32,
    pub evade_weight: f32,
    /// Longest prediction (s) of a predator's position when evading it.
    pub evade_time: f32,
}

impl Default for FlockSceneConstants {
    fn default() -> Self {
        FlockSceneConstants {
            body_radius: 0.5,
            avoid_time: 1.0,
            evade_r2: 0.0,
            evade_weight: 0.0,
            evade_time: 1.0,
        }
    }
}

/// Everything the device needs of a scene.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlockSceneHost {
    pub obstacles: Vec<FlockObstacle>,
    /// The predators' state (their own dynamic state, as the agents').
    pub predators: FlockHostState,
    /// Per predator: max speed, max force, longest pursuit prediction (s).
    pub predator_limits: Vec<[f32; 3]>,
    pub constants: FlockSceneConstants,
}

impl FlockSceneHost {
    /// True when the scene changes nothing (no obstacle, no predator).
    pub fn is_empty(&self) -> bool {
        self.obstacles.is_empty() && self.predators.is_empty()
    }

    pub(super) fn check(&self) -> Result<(), crate::CudaError> {
        const K: &str = "flock (scene)";
        let np = self.predators.check()?;
        if self.predator_limits.len() != np {
            return Err(crate::error::invalid(
                K,
                format!(
                    "{} predator limits for {np} predators",
                    self.predator_limits.len()
                ),
            ));
        }
        let c = &self.constants;
        let finite = [
            c.body_radius,
            c.avoid_time,
            c.evade_r2,
            c.evade_weight,
            c.evade_time,
        ]
        .iter()
        .chain(self.predator_limits.iter().flatten())
        .all(|v| v.is_finite());
        if !finite {
            return Err(crate::error::invalid(K, "a scene constant is not finite"));
        }
        if self.obstacles.len() > u32::MAX as usize / 2 || np > 1 << 16 {
            return Err(crate::error::invalid(K, "too many obstacles or predators"));
        }
        Ok(())
    }
}
