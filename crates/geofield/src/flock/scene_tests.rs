//! Ray–obstacle distances against analytic values, the avoidance force, and scene validation.
//!
//! Tolerances: every distance is a handful of f32 operations on coordinates of magnitude ≤ M
//! (M = 64 here), each rounding by at most ε = 2^-24 relative. A plain distance is good to
//! ~8 ε M. A sphere's t − √(t² − (|c|² − r²)) loses digits when the discriminant D is small:
//! its error is about ε M² / √D on top, which the sphere tests add.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::super::avoid::{any_perpendicular, hit, nearest_hit, steer_to_avoid};
use super::super::steer::{dot, length, unit};
use super::*;
use crate::GeofieldError;

const EPS: f64 = f32::EPSILON as f64 / 2.0;
const M: f64 = 64.0;

fn plain_tol() -> f64 {
    8.0 * EPS * M
}

fn records(o: Obstacle) -> Vec<geofield_cuda::flock::FlockObstacle> {
    Scene {
        obstacles: vec![o],
        ..Scene::default()
    }
    .compile()
    .unwrap()
    .obstacles
}

fn sphere(r: f32, seen_from: SeenFrom) -> Vec<geofield_cuda::flock::FlockObstacle> {
    records(Obstacle::Sphere {
        centre: [1.0, 2.0, 3.0],
        radius: r,
        seen_from,
    })
}

#[test]
fn ray_sphere_distance_is_analytic() {
    let body = 0.5f32;
    let obs = sphere(5.0, SeenFrom::Outside);
    let c = [1.0f64, 2.0, 3.0];
    // Off-axis by b: distance = along − √((r + body)² − b²).
    for b in [0.0f64, 1.0, 3.0, 5.0, 5.4] {
        let p = [c[0] - 20.0, c[1] + b, c[2]];
        let pf = p.map(|v| v as f32);
        let h = nearest_hit(&obs, body, pf, [1.0, 0.0, 0.0]).expect("hits");
        let r = 5.5f64;
        let disc = r * r - b * b;
        let want = 20.0 - disc.sqrt();
        let tol = plain_tol() + 4.0 * EPS * M * M / disc.sqrt();
        assert!(
            (f64::from(h.distance) - want).abs() <= tol,
            "b={b}: {} vs {want} (tol {tol})",
            h.distance
        );
        // Solid sphere: the hint is the outward normal at the surface point.
        let n = unit(super::super::steer::sub(h.surface, [1.0, 2.0, 3.0]));
        assert!(length(super::super::steer::sub(h.hint, n)) < 1e-5);
        assert!(h.outside);
    }
    // Missing it (b > r + body), and the sphere behind the agent.
    assert!(nearest_hit(&obs, body, [-19.0, 7.6, 3.0], [1.0, 0.0, 0.0]).is_none());
    assert!(nearest_hit(&obs, body, [-19.0, 2.0, 3.0], [-1.0, 0.0, 0.0]).is_none());
    // Inside a solid sphere: distance 0.
    let h = nearest_hit(&obs, body, [2.0, 2.0, 3.0], [0.0, 1.0, 0.0]).unwrap();
    assert_eq!(h.distance, 0.0);
}

#[test]
fn ray_sphere_from_inside_and_both() {
    let body = 0.5f32;
    // A container of radius 30 at (1, 2, 3): from its centre + (10, 0, 0) heading +x, the wall
    // (shrunk by the body radius) is 29.5 − 10 = 19.5 ahead; the hint points back inwards.
    let obs = sphere(30.0, SeenFrom::Inside);
    let h = nearest_hit(&obs, body, [11.0, 2.0, 3.0], [1.0, 0.0, 0.0]).unwrap();
    assert!((f64::from(h.distance) - 19.5).abs() <= plain_tol() + 4.0 * EPS * M * M / 29.5);
    assert!(h.hint[0] < -0.999);
    // Outside the container: distance 0 and the hint points at its centre.
    let h = nearest_hit(&obs, body, [1.0, 42.0, 3.0], [1.0, 0.0, 0.0]).unwrap();
    assert_eq!(h.distance, 0.0);
    assert!(h.hint[1] < -0.999 && h.outside);
    // Within a body radius of the wall, inside: distance 0, hint to the centre.
    let h = nearest_hit(&obs, body, [30.7, 2.0, 3.0], [0.0, 1.0, 0.0]).unwrap();
    assert_eq!(h.distance, 0.0);
    assert!(h.hint[0] < -0.999 && !h.outside);
    // A shell seen from both sides: from inside, the far wall ahead, hint inwards.
    let obs = sphere(30.0, SeenFrom::Both);
    let h = nearest_hit(&obs, body, [11.0, 2.0, 3.0], [1.0, 0.0, 0.0]).unwrap();
    assert!((f64::from(h.distance) - 19.5).abs() <= plain_tol() + 4.0 * EPS * M * M / 29.5);
    assert!(h.hint[0] < -0.999);
    // The same shell from outside, 50 from its centre: grown to 30.5, 19.5 ahead.
    let h = nearest_hit(&obs, body, [-49.0, 2.0, 3.0], [1.0, 0.0, 0.0]).unwrap();
    assert!((f64::from(h.distance) - 19.5).abs() <= plain_tol() + 4.0 * EPS * M * M / 30.5);
    assert!(h.hint[0] < -0.999 && h.outside);
}

#[test]
fn ray_plane_distance_is_analytic() {
    let obs = records(Obstacle::Plane {
        point: [0.0, -5.0, 0.0],
        normal: [0.0, 2.0, 0.0],
        seen_from: SeenFrom::Outside,
    });
    // Straight down from height 15 above the plane (14.5 above the surface moved up by the
    // body radius), and obliquely at 45° and 60°.
    for (deg, want) in [(0.0f64, 14.5f64), (45.0, 14.5 * 2f64.sqrt()), (60.0, 29.0)] {
        let a = deg.to_radians();
        let f = [a.sin() as f32, -a.cos() as f32, 0.0];
        let h = nearest_hit(&obs, 0.5, [3.0, 10.0, -2.0], f).expect("hits");
        assert!(
            (f64::from(h.distance) - want).abs() <= 2.0 * plain_tol(),
            "{deg}°: {} vs {want}",
            h.distance
        );
        assert!((f64::from(h.surface[1]) + 5.0).abs() <= plain_tol());
        // An infinite plane's hint is its normal.
        assert_eq!(h.hint, [0.0, 1.0, 0.0]);
    }
    // Heading away, parallel, or below a plane seen from outside: no hit.
    assert!(nearest_hit(&obs, 0.5, [3.0, 10.0, -2.0], [0.0, 1.0, 0.0]).is_none());
    assert!(nearest_hit(&obs, 0.5, [3.0, 10.0, -2.0], [1.0, 0.0, 0.0]).is_none());
    assert!(nearest_hit(&obs, 0.5, [3.0, -10.0, -2.0], [0.0, 1.0, 0.0]).is_none());
}

#[test]
fn ray_box_distance_is_analytic() {
    let body = 0.5f32;
    let obs = records(Obstacle::Box {
        centre: [0.0, 0.0, 0.0],
        size: [10.0, 4.0, 6.0],
        forward: None,
        up: None,
        seen_from: SeenFrom::Outside,
    });
    assert_eq!(obs.len(), 6);
    // Along x towards the face x = −5 (moved out to −5.5 by the body radius): distance 14.5
    // while |z| ≤ 3 + body, |y| ≤ 2 + body.
    for (z, hits) in [(0.0f32, true), (3.4, true), (3.6, false)] {
        let h = nearest_hit(&obs, body, [-20.0, 1.0, z], [1.0, 0.0, 0.0]);
        assert_eq!(h.is_some(), hits, "z = {z}");
        if let Some(h) = h {
            assert!((f64::from(h.distance) - 14.5).abs() <= plain_tol());
            // BoxObstacle's hint: away from the box centre.
            let want = unit([-5.0, 1.0, z]);
            assert!(length(super::super::steer::sub(h.hint, want)) < 1e-5);
        }
    }
    // A box turned 45° about y: its depth axis along (1, 0, 1)/√2, so the face at +depth/2 is
    // 3 (+ 0.5) from the centre along that axis; a ray from the centre + 20·axis heading back
    // hits it after 16.5.
    let s = std::f32::consts::FRAC_1_SQRT_2;
    let obs = records(Obstacle::Box {
        centre: [1.0, 1.0, 1.0],
        size: [10.0, 4.0, 6.0],
        forward: Some([1.0, 0.0, 1.0]),
        up: None,
        seen_from: SeenFrom::Outside,
    });
    let p = [1.0 + 20.0 * s, 1.0, 1.0 + 20.0 * s];
    let h = nearest_hit(&obs, body, p, [-s, 0.0, -s]).unwrap();
    assert!((f64::from(h.distance) - 16.5).abs() <= 2.0 * plain_tol());
    // A container box: from inside heading +x, the wall at x = 5 (4.5 for the body) is 3.5 ahead.
    let obs = records(Obstacle::Box {
        centre: [0.0, 0.0, 0.0],
        size: [10.0, 4.0, 6.0],
        forward: None,
        up: None,
        seen_from: SeenFrom::Inside,
    });
    let h = nearest_hit(&obs, body, [1.0, 0.0, 0.0], [1.0, 0.0, 0.0]).unwrap();
    assert!((f64::from(h.distance) - 3.5).abs() <= plain_tol());
    assert!(h.hint[0] < 0.0 && !h.outside);
}

#[test]
fn rectangle_bounds_grow_by_the_body_radius() {
    let obs = records(Obstacle::Rectangle {
        centre: [0.0, 0.0, 10.0],
        size: [8.0, 2.0],
        normal: [0.0, 0.0, -1.0],
        up: None,
        seen_from: SeenFrom::Both,
    });
    let f = [0.0, 0.0, 1.0];
    let h = hit(&obs[0], 0.5, [4.4, 0.0, 0.0], f).unwrap();
    assert!((f64::from(h.distance) - 9.5).abs() <= plain_tol());
    // Within the body radius of it: distance 0.
    assert_eq!(hit(&obs[0], 0.5, [0.0, 0.0, 9.7], f).unwrap().distance, 0.0);
    assert!(hit(&obs[0], 0.5, [4.6, 0.0, 0.0], f).is_none());
    assert!(hit(&obs[0], 0.5, [0.0, 1.4, 0.0], f).is_some());
    assert!(hit(&obs[0], 0.5, [0.0, 1.6, 0.0], f).is_none());
    // Seen from both sides: also from behind.
    assert!(hit(&obs[0], 0.5, [0.0, 0.0, 20.0], [0.0, 0.0, -1.0]).is_some());
}

#[test]
fn avoidance_is_lateral_at_max_force_and_only_when_near() {
    let obs = sphere(5.0, SeenFrom::Outside);
    let f = [1.0f32, 0.0, 0.0];
    // 14.5 ahead: avoided at speed 15 (1 s look-ahead), not at speed 14.
    let near = steer_to_avoid(&obs, 0.5, 1.0, 27.0, [-19.0, 3.0, 3.0], f, 15.0);
    let far = steer_to_avoid(&obs, 0.5, 1.0, 27.0, [-19.0, 3.0, 3.0], f, 10.0);
    assert_eq!(far, [0.0; 3]);
    assert!((length(near) - 27.0).abs() < 1e-4);
    assert!(dot(near, f).abs() < 1e-5);
    assert!(
        near[1] > 26.9,
        "turns away from the centre (+y side): {near:?}"
    );
    // Head-on: OpenSteer's lateral part is zero; geofield turns along any_perpendicular.
    let head_on = steer_to_avoid(&obs, 0.5, 1.0, 27.0, [-19.0, 2.0, 3.0], f, 30.0);
    let perp = any_perpendicular(f);
    assert_eq!(head_on, [perp[0] * 27.0, perp[1] * 27.0, perp[2] * 27.0]);
    assert!(dot(perp, f).abs() < 1e-6 && (length(perp) - 1.0).abs() < 1e-6);
}

#[test]
fn validation_names_the_field() {
    let check = |s: Scene, field: &str| match s.validate() {
        Err(GeofieldError::InvalidParameter { name, .. }) => assert_eq!(name, field),
        other => panic!("{field}: {other:?}"),
    };
    let sph = |r: f32| Obstacle::Sphere {
        centre: [0.0; 3],
        radius: r,
        seen_from: SeenFrom::Outside,
    };
    check(
        Scene {
            obstacles: vec![sph(1.0), sph(-1.0)],
            ..Scene::default()
        },
        "obstacles[1].sphere.radius",
    );
    check(
        Scene {
            obstacles: vec![Obstacle::Box {
                centre: [0.0; 3],
                size: [1.0, 0.0, 1.0],
                forward: None,
                up: None,
                seen_from: SeenFrom::Outside,
            }],
            ..Scene::default()
        },
        "obstacles[0].box.size[1]",
    );
    check(
        Scene {
            obstacles: vec![Obstacle::Plane {
                point: [0.0; 3],
                normal: [0.0; 3],
                seen_from: SeenFrom::Outside,
            }],
            ..Scene::default()
        },
        "obstacles[0].plane.normal",
    );
    let json = r#"{"predators":[{"start":[0,0,0],"max_speed":-2}]}"#;
    let s: Scene = serde_json::from_str(json).unwrap();
    check(s, "predators[0].max_speed");
    // The documented example parses, with defaults filled in.
    let json = r#"{"obstacles":[{"sphere":{"centre":[0,0,0],"radius":25}},
        {"box":{"centre":[40,0,0],"size":[10,20,10],"seen_from":"outside"}},
        {"plane":{"point":[0,-40,0],"normal":[0,1,0]}}],
        "predators":[{"start":[30,0,0]}]}"#;
    let s: Scene = serde_json::from_str(json).unwrap();
    assert!(s.validate().is_ok());
    assert_eq!(s.predators[0].max_speed, 12.0);
    assert_eq!(s.evasion.weight, 30.0);
    assert_eq!(s.compile().unwrap().obstacles.len(), 1 + 6 + 1);
}
