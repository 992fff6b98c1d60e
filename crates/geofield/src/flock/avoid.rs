//! OpenSteer's obstacle avoidance for one agent, in f32 with a pinned operation order
//! (`src/Obstacle.cpp`: `steerToAvoidObstacles`, `firstPathIntersectionWithObstacleGroup`,
//! `PathIntersection::steerToAvoidIfNeeded` and each shape's `findIntersectionWithVehiclePath`).
//!
//! Every function is mirrored operation for operation by `kernels/flock_scene.cu` (round to
//! nearest, no FMA), so both backends steer the same bits. The obstacle records
//! ([`FlockObstacle`]) are built once on the host by [`super::Scene`].
//!
//! geofield departs from OpenSteer where OpenSteer lets an agent into an obstacle: (1) a hint
//! parallel to the heading (a head-on approach) turns towards [`any_perpendicular`] instead of
//! not at all; (2) seen from inside, a sphere shrinks by the body radius (OpenSteer grows it
//! there too, so bodies poke out of containers), and an agent already within that margin of
//! the wall steers back at once (distance 0), as one outside does in OpenSteer; (3) flat
//! surfaces move towards the agent by the body radius, as spheres grow by it, and an agent
//! within that margin avoids at once (OpenSteer: no margin, so grazing agents cross planes);
//! (4) an infinite plane's hint is its normal alone (OpenSteer adds the direction from the
//! plane's reference point to the crossing, a "towards the edge" term a plane has no use for).
//!
//! The agent's path is the ray p + t·f (t ≥ 0, f its unit heading). Each obstacle gives at most
//! one [`Hit`]: the distance t of the first point where the path meets it, the surface point
//! and OpenSteer's steering hint. The nearest hit over all records (the first one on equal
//! distances) is avoided when its distance is below `avoid_time` × speed: the steering force is
//! the hint's component perpendicular to f, scaled to the maximum force.

use super::steer::{V3, add, dot, length, scale, sub, unit};
use geofield_cuda::flock::{
    FlockObstacle, OBSTACLE_BOX_FACE, OBSTACLE_PLANE, OBSTACLE_RECTANGLE, OBSTACLE_SPHERE,
    SEEN_FROM_INSIDE, SEEN_FROM_OUTSIDE,
};

/// Where an agent's path meets an obstacle.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    /// Distance along the path to the surface (0 when already inside a solid sphere, or outside
    /// a container sphere).
    pub distance: f32,
    /// OpenSteer's `steerHint`: the direction the agent should turn towards.
    pub hint: V3,
    /// The point of the surface the path reaches.
    pub surface: V3,
    /// The agent is on the outer side of the surface (outside a sphere, on the normal's side
    /// of a plane or face).
    pub outside: bool,
}

#[inline]
fn neg(a: V3) -> V3 {
    [-a[0], -a[1], -a[2]]
}

/// A sphere (`SphereObstacle::findIntersectionWithVehiclePath`): the path against the sphere
/// grown by the body radius (shrunk by it for an agent inside a container or shell).
pub(crate) fn sphere_hit(o: &FlockObstacle, body: f32, p: V3, f: V3) -> Option<Hit> {
    // The centre relative to the agent, and its coordinate along the path.
    let lc = sub(o.centre, p);
    let dl = length(lc);
    let outside = dl > o.radius;
    if outside && o.seen_from == SEEN_FROM_INSIDE {
        // Outside a container: steer back towards its centre at once.
        return Some(Hit {
            distance: 0.0,
            hint: unit(lc),
            surface: p,
            outside,
        });
    }
    // The surface the agent's centre must not cross: grown by the body radius seen from
    // outside (OpenSteer), shrunk by it seen from inside (OpenSteer grows it there too, which
    // lets the body poke out of a container by twice its radius).
    let r = if o.seen_from == SEEN_FROM_OUTSIDE || (o.seen_from != SEEN_FROM_INSIDE && outside) {
        o.radius + body
    } else {
        o.radius - body
    };
    if !outside && o.seen_from != SEEN_FROM_OUTSIDE && dl > r {
        // Inside a container but within a body radius of its wall: steer back at once.
        return Some(Hit {
            distance: 0.0,
            hint: unit(lc),
            surface: p,
            outside,
        });
    }
    let t = dot(lc, f);
    let disc = t * t - (dot(lc, lc) - r * r);
    if disc < 0.0 {
        return None;
    }
    let s = disc.sqrt();
    let far = t + s;
    let near = t - s;
    if far < 0.0 && near < 0.0 {
        return None;
    }
    let distance = if far > 0.0 && near > 0.0 {
        if near < far { near } else { far }
    } else if o.seen_from == SEEN_FROM_OUTSIDE {
        // Inside a solid obstacle.
        0.0
    } else if far > 0.0 {
        far
    } else {
        near
    };
    let surface = add(p, scale(f, distance));
    let normal = unit(sub(surface, o.centre));
    let hint = match o.seen_from {
        SEEN_FROM_OUTSIDE => normal,
        SEEN_FROM_INSIDE => neg(normal),
        _ if outside => normal,
        _ => neg(normal),
    };
    Some(Hit {
        distance,
        hint,
        surface,
        outside,
    })
}

/// A plane, rectangle or box face (`PlaneObstacle::findIntersectionWithVehiclePath`, with
/// `RectangleObstacle::xyPointInsideShape` for the bounded ones), moved towards the agent by
/// the body radius.
pub(crate) fn planar_hit(o: &FlockObstacle, body: f32, p: V3, f: V3) -> Option<Hit> {
    let d = sub(p, o.centre);
    let (lx, ly, lz) = (dot(d, o.side), dot(d, o.up), dot(d, o.normal));
    let outside = lz > 0.0;
    let (dx, dy, dz) = (dot(f, o.side), dot(f, o.up), dot(f, o.normal));
    // Parallel to the plane, heading away from it, or on a side it is not seen from.
    if dz == 0.0 || (lz > 0.0 && dz > 0.0) || (lz < 0.0 && dz < 0.0) {
        return None;
    }
    if (o.seen_from == SEEN_FROM_OUTSIDE && lz < 0.0)
        || (o.seen_from == SEEN_FROM_INSIDE && lz > 0.0)
    {
        return None;
    }
    // The surface the agent's centre must not cross: the plane moved towards the agent by the
    // body radius (0 when the agent is already within it).
    let reach = lz.abs() - body;
    let lz = if reach > 0.0 {
        if lz > 0.0 { reach } else { -reach }
    } else {
        0.0
    };
    let ix = lx - dx * lz / dz;
    let iy = ly - dy * lz / dz;
    if o.kind != OBSTACLE_PLANE {
        let w = body + o.half_w;
        let h = body + o.half_h;
        if ix > w || ix < -w || iy > h || iy < -h {
            return None;
        }
    }
    let radial_local = unit([ix, iy, 0.0]);
    let radial = add(scale(o.side, radial_local[0]), scale(o.up, radial_local[1]));
    let sign = if outside { 1.0 } else { -1.0 };
    let opposing = scale(o.normal, sign);
    let distance = length([lx - ix, ly - iy, lz]);
    let surface = add(o.centre, add(scale(o.side, ix), scale(o.up, iy)));
    let hint = if o.kind == OBSTACLE_BOX_FACE {
        // BoxObstacle: away from the box's centre, towards it from inside.
        let away = unit(sub(surface, o.origin));
        if outside { away } else { neg(away) }
    } else if o.kind == OBSTACLE_PLANE {
        // An infinite plane has no edge to steer towards.
        opposing
    } else {
        add(opposing, radial)
    };
    Some(Hit {
        distance,
        hint,
        surface,
        outside,
    })
}

/// The path against one record.
pub(crate) fn hit(o: &FlockObstacle, body: f32, p: V3, f: V3) -> Option<Hit> {
    match o.kind {
        OBSTACLE_SPHERE => sphere_hit(o, body, p, f),
        OBSTACLE_RECTANGLE | OBSTACLE_PLANE | OBSTACLE_BOX_FACE => planar_hit(o, body, p, f),
        _ => None,
    }
}

/// The nearest hit over the records in order (a later one replaces it only when strictly
/// nearer: `firstPathIntersectionWithObstacleGroup`).
pub fn nearest_hit(obstacles: &[FlockObstacle], body: f32, p: V3, f: V3) -> Option<Hit> {
    let mut best: Option<Hit> = None;
    for o in obstacles {
        if let Some(h) = hit(o, body, p, f) {
            let nearer = match &best {
                None => true,
                Some(b) => h.distance < b.distance,
            };
            if nearer {
                best = Some(h);
            }
        }
    }
    best
}

/// A unit vector perpendicular to the unit vector `f`: f × e, e the axis along which f has
/// its smallest magnitude (x on ties, then y), normalised.
pub(crate) fn any_perpendicular(f: V3) -> V3 {
    let (ax, ay, az) = (f[0].abs(), f[1].abs(), f[2].abs());
    let c = if ax <= ay && ax <= az {
        // f × x = (0, f.z, −f.y)
        [0.0, f[2], -f[1]]
    } else if ay <= az {
        // f × y = (−f.z, 0, f.x)
        [-f[2], 0.0, f[0]]
    } else {
        // f × z = (f.y, −f.x, 0)
        [f[1], -f[0], 0.0]
    };
    unit(c)
}

/// `steerToAvoidObstacles(minTimeToCollision = avoid_time)`: zero unless the nearest hit is
/// nearer than `avoid_time · speed`; then the hint's part perpendicular to the heading,
/// normalised, times `max_force`. geofield's one addition: a hint parallel to the heading (a
/// head-on approach, where OpenSteer's perpendicular part is zero and the agent would fly into
/// the obstacle) turns towards [`any_perpendicular`] of the heading instead.
pub fn steer_to_avoid(
    obstacles: &[FlockObstacle],
    body: f32,
    avoid_time: f32,
    max_force: f32,
    p: V3,
    f: V3,
    speed: f32,
) -> V3 {
    let Some(h) = nearest_hit(obstacles, body, p, f) else {
        return [0.0; 3];
    };
    // Not nearer than avoid_time · speed (a NaN is not nearer either).
    if h.distance.partial_cmp(&(avoid_time * speed)) != Some(std::cmp::Ordering::Less) {
        return [0.0; 3];
    }
    let lateral = sub(h.hint, scale(f, dot(h.hint, f)));
    let mut u = unit(lateral);
    if u == [0.0; 3] {
        u = any_perpendicular(f);
    }
    scale(u, max_force)
}
