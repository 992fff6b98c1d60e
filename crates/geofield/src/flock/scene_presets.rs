//! OpenSteer's boids worlds (`plugins/Boids.cpp`, `initObstacles` / `updateObstacles`, the F4
//! key) as ready scenes, scaled from OpenSteer's world radius 50 to the flock's, and evenly
//! placed predators.

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

use super::super::{FlockState, Start};
use super::{Obstacle, Predator, Scene, SeenFrom};
use crate::GeofieldError;

/// Tries per agent to find it a free spot, in the start ball then in the world ball.
const PLACE_TRIES: usize = 256;

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

    /// [`FlockState::new`] with every agent that would start inside a solid obstacle (see
    /// [`Scene::collisions`]) moved to a free spot: drawn again, uniform in the start's ball,
    /// then in the world ball, from a generator seeded by `seed` (reproducible). Agents for
    /// which no free spot turns up (a world all solid) stay where they were.
    ///
    /// ```
    /// use geofield::flock::{Scene, Start};
    /// let scene = Scene::opensteer("outside-sphere", 50.0)?; // a solid ball of radius 25
    /// let s = scene.start_state(500, Start::Dense, 50.0, 1)?;  // OpenSteer's ball of radius 20
    /// assert_eq!(scene.collisions(&s), 0);
    /// # Ok::<(), geofield::GeofieldError>(())
    /// ```
    pub fn start_state(
        &self,
        n: usize,
        start: Start,
        world_radius: f32,
        seed: u64,
    ) -> Result<FlockState, GeofieldError> {
        let mut s = FlockState::new(n, start, world_radius, seed)?;
        if self.obstacles.is_empty() {
            return Ok(s);
        }
        let ball = match start {
            Start::Dense => 20.0f32.min(world_radius),
            Start::Uniform => world_radius,
        };
        let mut rng = Pcg64::seed_from_u64(seed ^ 0x5CE4_E5EE_D000_0001);
        let blocked = |p: [f32; 3]| self.inside_solid(p.map(f64::from));
        for p in s.pos.iter_mut() {
            if !blocked(*p) {
                continue;
            }
            for t in 0..2 * PLACE_TRIES {
                let r = if t < PLACE_TRIES { ball } else { world_radius };
                let v: [f32; 3] = std::array::from_fn(|_| rng.random::<f32>() * 2.0 - 1.0);
                if v[0] * v[0] + v[1] * v[1] + v[2] * v[2] > 1.0 {
                    continue;
                }
                let q = v.map(|c| c * r);
                if !blocked(q) {
                    *p = q;
                    break;
                }
            }
        }
        Ok(s)
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
