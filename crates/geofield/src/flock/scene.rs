//! A flock's scene: obstacles as OpenSteer's boids world has them, and optional predators.
//!
//! # Obstacles (OpenSteer `include/OpenSteer/Obstacle.h`, `src/Obstacle.cpp`)
//!
//! - [`Obstacle::Sphere`]: centre and radius. `seen_from` `outside` is a solid ball, `inside`
//!   a container (an agent outside it steers straight back to its centre), `both` a thin shell.
//! - [`Obstacle::Box`]: centre, size (width, height, depth along its side, up and forward
//!   axes; axis-aligned x, y, z unless `forward`/`up` are given), avoided through its six faces
//!   (OpenSteer's `BoxObstacle`); the hint points away from the box's centre (towards it from
//!   inside).
//! - [`Obstacle::Rectangle`]: a flat rectangle (width × height in the plane, facing `normal`).
//! - [`Obstacle::Plane`]: an infinite plane through `point` with `normal`; `outside` keeps
//!   agents on the normal's side (a floor with normal +y), `inside` on the other side.
//!
//! For the flat shapes the hint is OpenSteer's `opposingNormal + radial` (the normal on the
//! agent's side plus the direction from the shape's centre to the crossing point). Agents have
//! a body radius of 0.5 (OpenSteer's boids): spheres are grown by it and rectangles widened by
//! it. See [`super::avoid`] for the steering and [`super::predator`] for the predators.
//!
//! # Presets and starts
//!
//! [`Scene::opensteer`] gives the boids demo's worlds (F4 in OpenSteerDemo), scaled to the
//! world radius; [`Scene::add_predators`] places predators on a circle; [`Scene::start_state`]
//! draws a start whose agents keep clear of the solids.
//!
//! # Collisions
//!
//! [`Scene::collisions`] counts the agents inside a solid: inside a sphere or box seen from
//! `outside`, outside a sphere or box seen from `inside`, behind a plane (on the side it is not
//! seen from). Shells (`both`) and rectangles have no inside and count nothing. The body radius
//! is not counted: an agent whose centre touches a surface has not collided.

use serde::{Deserialize, Serialize};

#[path = "scene_compile.rs"]
mod compile;
#[path = "scene_measure.rs"]
mod measure;
#[path = "scene_presets.rs"]
mod presets;

pub(crate) use compile::Compiled;
pub use measure::outline;
pub use presets::PRESETS;

/// Which side of an obstacle agents are kept on (OpenSteer's `seenFrom`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SeenFrom {
    /// A solid: agents stay outside.
    #[default]
    Outside,
    /// A container: agents stay inside.
    Inside,
    /// A thin shell avoided from either side.
    Both,
}

/// One obstacle (coordinates in metres, world frame).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum Obstacle {
    Sphere {
        centre: [f32; 3],
        radius: f32,
        #[serde(default)]
        seen_from: SeenFrom,
    },
    Box {
        centre: [f32; 3],
        /// Width, height, depth along the side, up and forward axes.
        size: [f32; 3],
        /// Depth axis (default +z).
        #[serde(default)]
        forward: Option<[f32; 3]>,
        /// Height axis, made perpendicular to `forward` (default +y).
        #[serde(default)]
        up: Option<[f32; 3]>,
        #[serde(default)]
        seen_from: SeenFrom,
    },
    Rectangle {
        centre: [f32; 3],
        /// Width (along the side axis) and height (along `up`).
        size: [f32; 2],
        normal: [f32; 3],
        /// Height axis, made perpendicular to `normal` (default +y, or +z for a normal near y).
        #[serde(default)]
        up: Option<[f32; 3]>,
        #[serde(default = "both")]
        seen_from: SeenFrom,
    },
    Plane {
        point: [f32; 3],
        normal: [f32; 3],
        #[serde(default)]
        seen_from: SeenFrom,
    },
}

fn both() -> SeenFrom {
    SeenFrom::Both
}

/// A predator: where it starts and its limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Predator {
    pub start: [f32; 3],
    /// Unit heading at the start (normalised; default +x).
    #[serde(default = "plus_x")]
    pub heading: [f32; 3],
    /// Speed at the start (default 0.3 × max speed, as the boids').
    #[serde(default)]
    pub speed: Option<f32>,
    /// Default 12 (boids: 9).
    #[serde(default = "predator_speed")]
    pub max_speed: f32,
    /// Default 27 (the boids').
    #[serde(default = "predator_force")]
    pub max_force: f32,
    /// Longest prediction of the quarry's position, s (default 20, `MultiplePursuit.cpp`).
    #[serde(default = "predator_prediction")]
    pub max_prediction_s: f32,
}

fn plus_x() -> [f32; 3] {
    [1.0, 0.0, 0.0]
}
fn predator_speed() -> f32 {
    12.0
}
fn predator_force() -> f32 {
    27.0
}
fn predator_prediction() -> f32 {
    20.0
}

/// How boids evade predators.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Evasion {
    /// Predators nearer than this are evaded (m; default 20).
    #[serde(default = "evade_radius")]
    pub radius: f32,
    /// Weight of the unit evasion term added to the flocking force (default 30: above the
    /// flocking force's largest magnitude, 28, so that evasion dominates).
    #[serde(default = "evade_weight")]
    pub weight: f32,
    /// Longest prediction of a predator's position, s (default 1).
    #[serde(default = "one")]
    pub max_prediction_s: f32,
}

fn evade_radius() -> f32 {
    20.0
}
fn evade_weight() -> f32 {
    30.0
}
fn one() -> f32 {
    1.0
}

impl Default for Evasion {
    fn default() -> Self {
        Evasion {
            radius: evade_radius(),
            weight: evade_weight(),
            max_prediction_s: 1.0,
        }
    }
}

/// Obstacle avoidance settings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Avoidance {
    /// OpenSteer's `minTimeToCollision` for boids and predators, s (default 1).
    #[serde(default = "one")]
    pub min_time_to_collision_s: f32,
    /// The agents' body radius, m (default 0.5).
    #[serde(default = "half")]
    pub body_radius: f32,
}

fn half() -> f32 {
    0.5
}

impl Default for Avoidance {
    fn default() -> Self {
        Avoidance {
            min_time_to_collision_s: 1.0,
            body_radius: 0.5,
        }
    }
}

/// Obstacles, predators and their settings (see the module docs). The default scene is empty
/// and changes nothing.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scene {
    #[serde(default)]
    pub obstacles: Vec<Obstacle>,
    #[serde(default)]
    pub predators: Vec<Predator>,
    #[serde(default)]
    pub evasion: Evasion,
    #[serde(default)]
    pub avoidance: Avoidance,
}

/// A scene as the steps read it: obstacle records (boxes as six faces), predator limits and
/// constants, shared by both backends.
#[cfg(test)]
#[path = "scene_tests.rs"]
mod tests;
