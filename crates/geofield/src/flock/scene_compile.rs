//! A [`Scene`]'s validation and its compilation into the obstacle records both backends read
//! (boxes as OpenSteer's six faces, frames orthonormalised in f64 and rounded once to f32).

use super::super::predator::Limits;
use super::{Obstacle, Scene, SeenFrom};
use crate::GeofieldError;
use geofield_cuda::flock::{
    FlockObstacle, FlockSceneConstants, OBSTACLE_BOX_FACE, OBSTACLE_PLANE, OBSTACLE_RECTANGLE,
    OBSTACLE_SPHERE, SEEN_FROM_BOTH, SEEN_FROM_INSIDE, SEEN_FROM_OUTSIDE,
};
#[derive(Debug, Clone, Default)]
pub(crate) struct Compiled {
    pub obstacles: Vec<FlockObstacle>,
    pub limits: Vec<Limits>,
    pub constants: FlockSceneConstants,
}

fn bad(name: String, value: impl std::fmt::Debug, expected: &str) -> GeofieldError {
    GeofieldError::InvalidParameter {
        name,
        value: format!("{value:?}"),
        expected: expected.into(),
    }
}

pub(super) fn f64v(a: [f32; 3]) -> [f64; 3] {
    a.map(f64::from)
}
pub(super) fn dot64(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}
pub(super) fn cross64(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}
pub(super) fn unit64(a: [f64; 3]) -> [f64; 3] {
    let l = dot64(a, a).sqrt();
    a.map(|v| v / l)
}
pub(super) fn f32v(a: [f64; 3]) -> [f32; 3] {
    a.map(|v| v as f32)
}

/// An orthonormal frame (side, up, forward) from a forward axis and an optional up hint
/// (default +y, or +z when forward is within ~25° of y). Errors name `what`.`axis` (the
/// forward axis) or `what`.up.
pub(super) fn frame(
    what: &str,
    axis: &str,
    forward: [f32; 3],
    up: Option<[f32; 3]>,
) -> Result<[[f64; 3]; 3], GeofieldError> {
    let f = f64v(forward);
    let ff = dot64(f, f);
    if ff.is_nan() || ff <= 0.0 {
        return Err(bad(format!("{what}.{axis}"), forward, "a non-zero vector"));
    }
    let f = unit64(f);
    let hint = match up {
        Some(u) => f64v(u),
        None if f[1].abs() < 0.9 => [0.0, 1.0, 0.0],
        None => [0.0, 0.0, 1.0],
    };
    let along = dot64(hint, f);
    let u = [
        hint[0] - along * f[0],
        hint[1] - along * f[1],
        hint[2] - along * f[2],
    ];
    let uu = dot64(u, u);
    if uu.is_nan() || uu <= 1e-12 * dot64(hint, hint).max(1e-300) {
        return Err(bad(
            format!("{what}.up"),
            up,
            &format!("a vector not parallel to {axis}"),
        ));
    }
    let u = unit64(u);
    // side = up × forward: +x for up +y and forward +z.
    let s = cross64(u, f);
    Ok([s, u, f])
}

fn check_point(name: String, p: [f32; 3]) -> Result<(), GeofieldError> {
    if p.iter().all(|v| v.is_finite()) {
        Ok(())
    } else {
        Err(bad(name, p, "finite coordinates"))
    }
}

fn check_positive(name: String, v: f32) -> Result<(), GeofieldError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(bad(name, v, "a finite number > 0"))
    }
}

fn seen(s: SeenFrom) -> u32 {
    match s {
        SeenFrom::Outside => SEEN_FROM_OUTSIDE,
        SeenFrom::Inside => SEEN_FROM_INSIDE,
        SeenFrom::Both => SEEN_FROM_BOTH,
    }
}

impl Scene {
    /// True when the scene has neither obstacles nor predators.
    pub fn is_empty(&self) -> bool {
        self.obstacles.is_empty() && self.predators.is_empty()
    }

    /// Check every value; errors name the field (`obstacles[1].box.size`).
    pub fn validate(&self) -> Result<(), GeofieldError> {
        self.compile().map(|_| ())
    }

    /// The obstacle records and predator limits (validating the scene).
    pub(crate) fn compile(&self) -> Result<Compiled, GeofieldError> {
        let mut out = Compiled::default();
        for (i, o) in self.obstacles.iter().enumerate() {
            let at = |kind: &str| format!("obstacles[{i}].{kind}");
            match *o {
                Obstacle::Sphere {
                    centre,
                    radius,
                    seen_from,
                } => {
                    check_point(format!("{}.centre", at("sphere")), centre)?;
                    check_positive(format!("{}.radius", at("sphere")), radius)?;
                    out.obstacles.push(FlockObstacle {
                        kind: OBSTACLE_SPHERE,
                        seen_from: seen(seen_from),
                        radius,
                        centre,
                        ..Default::default()
                    });
                }
                Obstacle::Plane {
                    point,
                    normal,
                    seen_from,
                } => {
                    check_point(format!("{}.point", at("plane")), point)?;
                    check_point(format!("{}.normal", at("plane")), normal)?;
                    let [s, u, n] = frame(&at("plane"), "normal", normal, None)?;
                    out.obstacles.push(FlockObstacle {
                        kind: OBSTACLE_PLANE,
                        seen_from: seen(seen_from),
                        centre: point,
                        side: f32v(s),
                        up: f32v(u),
                        normal: f32v(n),
                        ..Default::default()
                    });
                }
                Obstacle::Rectangle {
                    centre,
                    size,
                    normal,
                    up,
                    seen_from,
                } => {
                    let w = at("rectangle");
                    check_point(format!("{w}.centre"), centre)?;
                    check_point(format!("{w}.normal"), normal)?;
                    for (k, v) in size.iter().enumerate() {
                        check_positive(format!("{w}.size[{k}]"), *v)?;
                    }
                    if let Some(u) = up {
                        check_point(format!("{w}.up"), u)?;
                    }
                    let [s, u, n] = frame(&w, "normal", normal, up)?;
                    out.obstacles.push(FlockObstacle {
                        kind: OBSTACLE_RECTANGLE,
                        seen_from: seen(seen_from),
                        half_w: size[0] * 0.5,
                        half_h: size[1] * 0.5,
                        centre,
                        side: f32v(s),
                        up: f32v(u),
                        normal: f32v(n),
                        ..Default::default()
                    });
                }
                Obstacle::Box {
                    centre,
                    size,
                    forward,
                    up,
                    seen_from,
                } => {
                    let w = at("box");
                    check_point(format!("{w}.centre"), centre)?;
                    for (k, v) in size.iter().enumerate() {
                        check_positive(format!("{w}.size[{k}]"), *v)?;
                    }
                    for (name, v) in [("forward", forward), ("up", up)] {
                        if let Some(v) = v {
                            check_point(format!("{w}.{name}"), v)?;
                        }
                    }
                    let [s, u, f] = frame(&w, "forward", forward.unwrap_or([0.0, 0.0, 1.0]), up)?;
                    out.obstacles
                        .extend(box_faces(centre, size, [s, u, f], seen(seen_from)));
                }
            }
        }
        let ev = &self.evasion;
        check_positive("evasion.radius".into(), ev.radius)?;
        if !(ev.weight.is_finite() && ev.weight >= 0.0) {
            return Err(bad(
                "evasion.weight".into(),
                ev.weight,
                "a finite number >= 0",
            ));
        }
        if !(ev.max_prediction_s.is_finite() && ev.max_prediction_s >= 0.0) {
            return Err(bad(
                "evasion.max_prediction_s".into(),
                ev.max_prediction_s,
                "a finite number >= 0",
            ));
        }
        let av = &self.avoidance;
        check_positive(
            "avoidance.min_time_to_collision_s".into(),
            av.min_time_to_collision_s,
        )?;
        if !(av.body_radius.is_finite() && av.body_radius >= 0.0) {
            return Err(bad(
                "avoidance.body_radius".into(),
                av.body_radius,
                "a finite number >= 0",
            ));
        }
        for (i, p) in self.predators.iter().enumerate() {
            let at = |f: &str| format!("predators[{i}].{f}");
            check_point(at("start"), p.start)?;
            check_point(at("heading"), p.heading)?;
            let h = f64v(p.heading);
            let hh = dot64(h, h);
            if hh.is_nan() || hh <= 0.0 {
                return Err(bad(at("heading"), p.heading, "a non-zero vector"));
            }
            check_positive(at("max_speed"), p.max_speed)?;
            check_positive(at("max_force"), p.max_force)?;
            if !(p.max_prediction_s.is_finite() && p.max_prediction_s >= 0.0) {
                return Err(bad(
                    at("max_prediction_s"),
                    p.max_prediction_s,
                    "a finite number >= 0",
                ));
            }
            if let Some(s) = p.speed
                && !(s.is_finite() && (0.0..=p.max_speed).contains(&s))
            {
                return Err(bad(at("speed"), s, "a number from 0 to max_speed"));
            }
            out.limits.push(Limits {
                max_speed: p.max_speed,
                max_force: p.max_force,
                max_prediction: p.max_prediction_s,
            });
        }
        out.constants = FlockSceneConstants {
            body_radius: av.body_radius,
            avoid_time: av.min_time_to_collision_s,
            evade_r2: ev.radius * ev.radius,
            evade_weight: ev.weight,
            evade_time: ev.max_prediction_s,
        };
        Ok(out)
    }
}

/// OpenSteer's six `RectangleObstacle` faces of a box (front, back, two sides, top, bottom),
/// each facing outwards, with the box centre as their origin.
fn box_faces(
    c: [f32; 3],
    size: [f32; 3],
    axes: [[f64; 3]; 3],
    seen_from: u32,
) -> Vec<FlockObstacle> {
    let [s, u, f] = axes;
    let (w, h, d) = (f64::from(size[0]), f64::from(size[1]), f64::from(size[2]));
    let neg = |a: [f64; 3]| a.map(|v| -v);
    let at = |axis: [f64; 3], off: f64| {
        f32v([
            f64::from(c[0]) + axis[0] * off,
            f64::from(c[1]) + axis[1] * off,
            f64::from(c[2]) + axis[2] * off,
        ])
    };
    // (width, height, side, up, normal, centre) per face, as BoxObstacle builds them.
    let faces = [
        (w, h, s, u, f, at(f, d / 2.0)),
        (w, h, neg(s), u, neg(f), at(f, -d / 2.0)),
        (d, h, neg(f), u, s, at(s, w / 2.0)),
        (d, h, f, u, neg(s), at(s, -w / 2.0)),
        (w, d, s, neg(f), u, at(u, h / 2.0)),
        (w, d, neg(s), neg(f), neg(u), at(u, -h / 2.0)),
    ];
    faces
        .into_iter()
        .map(|(fw, fh, fs, fu, fnrm, centre)| FlockObstacle {
            kind: OBSTACLE_BOX_FACE,
            seen_from,
            radius: 0.0,
            half_w: (fw / 2.0) as f32,
            half_h: (fh / 2.0) as f32,
            centre,
            side: f32v(fs),
            up: f32v(fu),
            normal: f32v(fnrm),
            origin: c,
        })
        .collect()
}
