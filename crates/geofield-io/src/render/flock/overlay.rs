//! What a flock picture shows besides the agents: obstacle outlines (world-space segments) and
//! predators (markers in a colour no heading takes).

use super::draw::{Camera, V3, add};

/// Linear-light colour of obstacle outlines (a cool grey) and their intensity per pixel.
const OUTLINE: V3 = [0.55, 0.62, 0.75];
const OUTLINE_INTENSITY: f32 = 0.6;
/// Predators: a saturated red disc with a white core, `MARKER_PX` pixels in radius.
const PREDATOR: V3 = [1.0, 0.0, 0.0];
const PREDATOR_INTENSITY: f32 = 6.0;
const MARKER_PX: f32 = 4.0;
/// Longest outline segment drawn, in pixel steps (a segment through the camera is clipped).
const MAX_SEGMENT_STEPS: usize = 8192;

/// Obstacles and predators to draw over a flock ([`super::render_flock_scene`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FlockOverlay {
    /// Line segments in world coordinates (obstacle outlines).
    pub segments: Vec<(V3, V3)>,
    /// Predator positions in world coordinates.
    pub predators: Vec<V3>,
}

/// Draw each segment as a one-pixel line between its projected ends (segments with an end
/// behind the camera are skipped).
pub(super) fn draw_segments(acc: &mut [f32], w: usize, h: usize, cam: &Camera, segs: &[(V3, V3)]) {
    for (a, b) in segs {
        let (Some((ax, ay, _)), Some((bx, by, _))) = (cam.project(*a), cam.project(*b)) else {
            continue;
        };
        let (dx, dy) = (bx - ax, by - ay);
        let len = dx.abs().max(dy.abs());
        if !len.is_finite() {
            continue;
        }
        let steps = (len.ceil() as usize).clamp(1, MAX_SEGMENT_STEPS);
        for s in 0..=steps {
            let t = s as f32 / steps as f32;
            add(
                acc,
                w,
                h,
                ax + t * dx,
                ay + t * dy,
                OUTLINE,
                OUTLINE_INTENSITY,
            );
        }
    }
}

/// Draw each predator as a red disc with a bright core.
pub(super) fn draw_predators(acc: &mut [f32], w: usize, h: usize, cam: &Camera, preds: &[V3]) {
    let r = MARKER_PX;
    for p in preds {
        let Some((x, y, _)) = cam.project(*p) else {
            continue;
        };
        let n = r.ceil() as i32;
        for j in -n..=n {
            for i in -n..=n {
                let d2 = (i * i + j * j) as f32;
                if d2 <= r * r {
                    let core = if d2 <= 1.0 { 0.5 } else { 0.0 };
                    add(
                        acc,
                        w,
                        h,
                        x + i as f32,
                        y + j as f32,
                        PREDATOR,
                        PREDATOR_INTENSITY,
                    );
                    add(acc, w, h, x + i as f32, y + j as f32, [1.0; 3], core);
                }
            }
        }
    }
}
