//! The flock picture's geometry and light: camera, comets, world outline, heading colours.

use super::*;

pub(super) type V3 = [f32; 3];

pub(super) fn dot(a: V3, b: V3) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// Perspective camera looking at the origin, with the picture's projection centre and focal
/// length in pixels.
pub(super) struct Camera {
    pub(super) right: V3,
    pub(super) up: V3,
    /// Unit vector from the centre to the camera.
    pub(super) back: V3,
    /// Distance from the camera to the centre.
    pub(super) dist: f32,
    pub(super) radius: f32,
    pub(super) focal: f32,
    pub(super) cx: f32,
    pub(super) cy: f32,
    /// Silhouette radius of the world ball, pixels.
    pub(super) disc: f32,
    /// Nearest depth drawn.
    pub(super) near: f32,
}

impl Camera {
    /// The camera of `view` for a `w` x `h` picture whose top `header` rows hold text.
    pub(super) fn new(view: &FlockView, w: usize, h: usize, header: usize) -> Self {
        let radius = if view.world_radius.is_finite() && view.world_radius > 0.0 {
            view.world_radius
        } else {
            1.0
        };
        let finite_or_zero = |x: f32| if x.is_finite() { x } else { 0.0 };
        let yaw = finite_or_zero(view.yaw_deg).to_radians();
        let pitch = finite_or_zero(view.pitch_deg)
            .clamp(-89.0, 89.0)
            .to_radians();
        let (sy, cyaw) = yaw.sin_cos();
        let (sp, cp) = pitch.sin_cos();
        let back = [cp * sy, sp, cp * cyaw];
        // right = normalise(y x back); up = back x right.
        let right = [cyaw, 0.0, -sy];
        let up = [
            back[1] * right[2] - back[2] * right[1],
            back[2] * right[0] - back[0] * right[2],
            back[0] * right[1] - back[1] * right[0],
        ];
        let dist = CAMERA_DISTANCE * radius;
        // Keep the disc below the text unless that would leave it less than half the picture.
        let header = if h.saturating_sub(header) * 2 >= h {
            header
        } else {
            0
        };
        let free_h = (h - header) as f32;
        let disc = 0.5 * FILL_FRACTION * (w as f32).min(free_h);
        // The silhouette of a ball of radius R at distance D has half-angle asin(R / D).
        let tan_half = radius / (dist * dist - radius * radius).sqrt();
        Self {
            right,
            up,
            back,
            dist,
            radius,
            focal: disc / tan_half,
            cx: w as f32 * 0.5,
            cy: header as f32 + free_h * 0.5,
            disc,
            near: 0.05 * dist,
        }
    }

    /// Screen position and depth of `p`, or `None` when it is not finite or too near.
    pub(super) fn project(&self, p: V3) -> Option<(f32, f32, f32)> {
        let z = self.dist - dot(p, self.back);
        if !z.is_finite() || z < self.near {
            return None;
        }
        let s = self.focal / z;
        let x = self.cx + s * dot(p, self.right);
        let y = self.cy - s * dot(p, self.up);
        (x.is_finite() && y.is_finite()).then_some((x, y, z))
    }

    /// Agent size and intensity for `n` agents. While the agents are few, the size is
    /// [`AGENT_SIZE`] R and the gain 1. When their comets would cover the world disc many times
    /// over, the size shrinks (down to [`MIN_CROWDED_PX`] pixels at the centre's depth, which
    /// keeps dense structure sharp and the cost per agent low) and the gain drops so that the
    /// mean load stays near [`TARGET_LOAD`].
    pub(super) fn style(&self, n: usize) -> Style {
        let px_per_unit = self.focal / self.dist;
        let natural = AGENT_SIZE * self.radius;
        let disc_area = std::f32::consts::PI * self.disc * self.disc;
        let load = |size: f32| n as f32 * footprint(size * px_per_unit) / (TARGET_LOAD * disc_area);
        let crowding = load(natural);
        if crowding.is_nan() || crowding <= 1.0 {
            return Style {
                size: natural,
                gain: 1.0,
            };
        }
        let size = (natural / crowding.sqrt())
            .max(MIN_CROWDED_PX / px_per_unit)
            .min(natural);
        Style {
            size,
            gain: (1.0 / load(size)).min(1.0),
        }
    }
}

/// Agent size (world units) and intensity factor for one frame.
#[derive(Clone, Copy)]
pub(super) struct Style {
    pub(super) size: f32,
    pub(super) gain: f32,
}

/// About how much light one agent of `size_px` pixels (at the centre's depth) adds in all:
/// a hue's mean channel weight is about 0.6, a comet's ramp averages ~0.45 of its head.
pub(super) fn footprint(size_px: f32) -> f32 {
    let arms = if size_px >= ARMS_FROM_PX {
        4.0 * ARM_SHARE
    } else {
        0.0
    };
    0.6 * HEAD_INTENSITY * (1.0 + arms + 0.45 * COMET_LENGTH * size_px)
}

/// Add `c * k` to the pixel containing (x, y), if it is on the picture.
pub(super) fn add(acc: &mut [f32], w: usize, h: usize, x: f32, y: f32, c: V3, k: f32) {
    if x.is_nan() || y.is_nan() || x < 0.0 || y < 0.0 {
        return;
    }
    let (xi, yi) = (x as usize, y as usize);
    if xi >= w || yi >= h {
        return;
    }
    let i = (yi * w + xi) * 3;
    if let Some(p) = acc.get_mut(i..i + 3) {
        p[0] += c[0] * k;
        p[1] += c[1] * k;
        p[2] += c[2] * k;
    }
}

/// The faint disc and anti-aliased ring of the world ball's silhouette.
pub(super) fn draw_world(acc: &mut [f32], w: usize, h: usize, cam: &Camera) {
    let r = cam.disc;
    let y0 = (cam.cy - r - 2.0).floor().max(0.0) as usize;
    let y1 = ((cam.cy + r + 2.0).ceil().max(0.0) as usize).min(h);
    let x0 = (cam.cx - r - 2.0).floor().max(0.0) as usize;
    let x1 = ((cam.cx + r + 2.0).ceil().max(0.0) as usize).min(w);
    for y in y0..y1 {
        let dy = y as f32 + 0.5 - cam.cy;
        for x in x0..x1 {
            let dx = x as f32 + 0.5 - cam.cx;
            let d = (dx * dx + dy * dy).sqrt();
            let (px, py) = (x as f32, y as f32);
            if d < r {
                add(acc, w, h, px, py, DISC_FILL, 1.0);
            }
            let ring = 1.0 - (d - r).abs();
            if ring > 0.0 {
                add(acc, w, h, px, py, RING, ring);
            }
        }
    }
}

/// Draw one agent's comet.
pub(super) fn draw_agent(
    acc: &mut [f32],
    w: usize,
    h: usize,
    cam: &Camera,
    p: V3,
    f: V3,
    style: Style,
) {
    let Some((hx, hy, z)) = cam.project(p) else {
        return;
    };
    let margin = MAX_COMET_STEPS as f32 + 2.0;
    if hx < -margin || hy < -margin || hx > w as f32 + margin || hy > h as f32 + margin {
        return;
    }
    let size = style.size;
    let depth = ((z - (cam.dist - cam.radius)) / (2.0 * cam.radius)).clamp(0.0, 1.0);
    let k = HEAD_INTENSITY * style.gain * (1.0 - (1.0 - FAR_BRIGHTNESS) * depth);
    let heading_ok = f.iter().all(|v| v.is_finite()) && dot(f, f) > 1e-12;
    let colour = if heading_ok { heading_hue(f) } else { [1.0; 3] };
    let tail = if heading_ok {
        let l = COMET_LENGTH * size / dot(f, f).sqrt();
        cam.project([p[0] - l * f[0], p[1] - l * f[1], p[2] - l * f[2]])
    } else {
        None
    };
    match tail {
        Some((tx, ty, _)) => {
            let (dx, dy) = (hx - tx, hy - ty);
            let steps = (dx.abs().max(dy.abs()).ceil() as usize).clamp(1, MAX_COMET_STEPS);
            for s in 0..steps {
                let t = s as f32 / steps as f32;
                let share = TAIL_SHARE + (1.0 - TAIL_SHARE) * t * t;
                add(acc, w, h, tx + t * dx, ty + t * dy, colour, k * share);
            }
            add(acc, w, h, hx, hy, colour, k);
        }
        None => add(acc, w, h, hx, hy, colour, k),
    }
    if cam.focal * size / z >= ARMS_FROM_PX {
        let a = k * ARM_SHARE;
        add(acc, w, h, hx - 1.0, hy, colour, a);
        add(acc, w, h, hx + 1.0, hy, colour, a);
        add(acc, w, h, hx, hy - 1.0, colour, a);
        add(acc, w, h, hx, hy + 1.0, colour, a);
    }
}

/// Colour of a heading: hue from its azimuth in the x-z plane, saturation from how horizontal
/// it is (straight up or down is white).
pub(super) fn heading_hue(f: V3) -> V3 {
    let horizontal = (f[0] * f[0] + f[2] * f[2]).sqrt();
    let len = (horizontal * horizontal + f[1] * f[1]).sqrt();
    let sat = if len > 0.0 {
        0.2 + 0.8 * (horizontal / len)
    } else {
        0.0
    };
    let turn = f[2].atan2(f[0]) / std::f32::consts::TAU;
    hsv(turn - turn.floor(), sat.clamp(0.0, 1.0))
}

/// HSV to RGB at full value; `hue` in [0, 1).
pub(super) fn hsv(hue: f32, sat: f32) -> V3 {
    let h6 = hue * 6.0;
    let sector = h6.floor();
    let frac = h6 - sector;
    let p = 1.0 - sat;
    let q = 1.0 - sat * frac;
    let t = 1.0 - sat * (1.0 - frac);
    match sector as i32 {
        0 => [1.0, t, p],
        1 => [q, 1.0, p],
        2 => [p, 1.0, t],
        3 => [p, q, 1.0],
        4 => [t, p, 1.0],
        _ => [1.0, p, q],
    }
}
