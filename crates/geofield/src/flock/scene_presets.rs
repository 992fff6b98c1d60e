//! OpenSteer's boids worlds (`plugins/Boids.cpp`, `initObstacles` / `updateObstacles`, the F4
//! key) as ready scenes, scaled from OpenSteer's world radius 50 to the flock's, and evenly
//! placed predators.

use super::{Obstacle, Predator, Scene, SeenFrom};
use crate::GeofieldError;

/// The preset names [`Scene::opensteer`] knows, in OpenSteer's F4 order.
pub const PRESETS: &[&str] = &[
    "none",
    "inside-sphere",
    "outside-sphere",
    "outside-spheres",
    "outside-spheres-no-big",
    "rectangle",
    "rectangle-no-big",
    "outside-box",
    "inside-box",
];

impl Scene {
    /// One of OpenSteer's boids obstacle sets ([`PRESETS`]) in a world of radius `world_radius`
    /// (OpenSteer's sizes × `world_radius` / 50): the big container sphere of the world's radius,
    /// a solid sphere of half that radius at the centre, six solid spheres of 0.33 R at ±R/2 on
    /// the axes, a 50 × 80 rectangle seen from both sides, a 50 × 80 × 20 box, the last two
    /// tilted 45° about z. OpenSteer's `rectangle` case falls through and adds the rectangle
    /// twice; here it is added once.
    ///
    /// ```
    /// use geofield::flock::Scene;
    /// let s = Scene::opensteer("outside-spheres", 50.0)?;
    /// assert_eq!(s.obstacles.len(), 7);
    /// assert!(Scene::opensteer("cube", 50.0).is_err());
    /// # Ok::<(), geofield::GeofieldError>(())
    /// ```
    pub fn opensteer(name: &str, world_radius: f32) -> Result<Scene, GeofieldError> {
        let r = world_radius;
        let k = r / 50.0;
        let sphere = |centre: [f32; 3], radius: f32, seen_from: SeenFrom| Obstacle::Sphere {
            centre,
            radius,
            seen_from,
        };
        let big = sphere([0.0; 3], r, SeenFrom::Inside);
        let (p, m) = (0.5 * r, -0.5 * r);
        let six: Vec<Obstacle> = [
            [p, 0.0, 0.0],
            [m, 0.0, 0.0],
            [0.0, p, 0.0],
            [0.0, m, 0.0],
            [0.0, 0.0, p],
            [0.0, 0.0, m],
        ]
        .into_iter()
        .map(|c| sphere(c, 0.33 * r, SeenFrom::Outside))
        .collect();
        // OpenSteer's tilt: forward (1, 1, 0)/√2, up (−1, 1, 0)/√2.
        let rect = Obstacle::Rectangle {
            centre: [0.0; 3],
            size: [50.0 * k, 80.0 * k],
            normal: [1.0, 1.0, 0.0],
            up: Some([-1.0, 1.0, 0.0]),
            seen_from: SeenFrom::Both,
        };
        let bx = |seen_from| Obstacle::Box {
            centre: [0.0; 3],
            size: [50.0 * k, 80.0 * k, 20.0 * k],
            forward: Some([1.0, 1.0, 0.0]),
            up: Some([-1.0, 1.0, 0.0]),
            seen_from,
        };
        let obstacles = match name {
            "none" => vec![],
            "inside-sphere" => vec![big],
            "outside-sphere" => vec![big, sphere([0.0; 3], 0.5 * r, SeenFrom::Outside)],
            "outside-spheres" => std::iter::once(big).chain(six).collect(),
            "outside-spheres-no-big" => six,
            "rectangle" => vec![big, rect],
            "rectangle-no-big" => vec![rect],
            "outside-box" => vec![big, bx(SeenFrom::Outside)],
            "inside-box" => vec![bx(SeenFrom::Inside)],
            _ => {
                return Err(GeofieldError::InvalidParameter {
                    name: "scene".into(),
                    value: format!("opensteer:{name}"),
                    expected: format!("one of opensteer:{}", PRESETS.join(", opensteer:")),
                });
            }
        };
        let scene = Scene {
            obstacles,
            ..Scene::default()
        };
        scene.validate()?;
        Ok(scene)
    }

    /// Add `n` predators with the default limits, evenly spaced on a horizontal circle of
    /// radius 0.8 `world_radius` around the centre (in the x-z plane), heading for the centre.
    pub fn add_predators(&mut self, n: usize, world_radius: f32) {
        for i in 0..n {
            let a = std::f64::consts::TAU * i as f64 / n as f64;
            let (s, c) = a.sin_cos();
            let d = 0.8 * f64::from(world_radius);
            self.predators.push(Predator {
                start: [(d * c) as f32, 0.0, (d * s) as f32],
                heading: [-c as f32, 0.0, -s as f32],
                speed: None,
                max_speed: 12.0,
                max_force: 27.0,
                max_prediction_s: 20.0,
            });
        }
    }
}
