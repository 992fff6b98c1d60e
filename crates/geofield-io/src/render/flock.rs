//! Point-cloud pictures of a 3-D flock: one frame per call, to PNG or to an animated GIF.
//!
//! The camera sits outside the world ball (radius R, centred at the origin) at 2.6 R from the
//! centre, turned by a yaw about the vertical axis y and a pitch above the horizontal, and looks
//! at the centre. The field of view is chosen so that the ball's silhouette fills the picture
//! below the text lines with a small margin; the silhouette is drawn as a faint ring over a
//! barely lighter disc so that the bounds of the world stay visible.
//!
//! Each agent is a short comet from `p - 0.8 s f` to its position `p` (heading `f`, `s` a
//! fixed fraction of R), brightest at the head, so that its length on screen shrinks with
//! distance and shows how the heading lies against the view. Hue gives the heading's azimuth in
//! the horizontal plane x-z (a colour wheel, so a group moving together shares one colour;
//! headings near vertical fade towards white), brightness gives depth (near bright, far dim).
//! Contributions add up in a floating-point buffer which is then tone-mapped with
//! `1 - exp(-x)`: dense clusters saturate instead of one agent overwriting another, and the
//! result does not depend on the order of the agents beyond rounding. With many agents per
//! pixel the comets get shorter (down to 3 pixels) and the per-agent intensity lower, so that a
//! uniform cloud stays mid-grey rather than white and dense groups keep their shape.
//!
//! Cost is O(N + pixels) with no per-agent allocation. Agents with a non-finite coordinate,
//! behind the camera or off the picture are skipped.

use std::borrow::Cow;
use std::path::Path;

use super::text::{Canvas, GLYPH_PX, fit_text};
use super::write_rgb_png;
use crate::IoError;
use crate::atomic::write_atomic;

/// Sizes are clamped to at most this many pixels across and down.
const MAX_SIDE: u32 = 16_384;
/// Background colour.
const BACKGROUND: [u8; 3] = [6, 8, 14];
/// Linear-light additions (before tone mapping) for the inside of the world disc and its ring.
const DISC_FILL: [f32; 3] = [0.012, 0.016, 0.026];
const RING: [f32; 3] = [0.16, 0.20, 0.30];
/// Text colours.
const TITLE_INK: [u8; 3] = [235, 235, 235];
const CAPTION_INK: [u8; 3] = [196, 202, 214];
const SHADOW: [u8; 3] = [0, 0, 0];
/// Camera distance from the centre, in world radii.
const CAMERA_DISTANCE: f32 = 2.6;
/// Silhouette radius as a fraction of half the free picture side (the rest is margin).
const FILL_FRACTION: f32 = 0.94;
/// Agent size `s` in world radii while agents are few; the comet is `0.8 s` long.
const AGENT_SIZE: f32 = 0.03;
const COMET_LENGTH: f32 = 0.8;
/// Longest comet drawn, in pixel steps (an agent very near the camera).
const MAX_COMET_STEPS: usize = 64;
/// Intensity of a comet's head before tone mapping (a lone near agent then shows at ~80 %).
const HEAD_INTENSITY: f32 = 1.6;
/// Share of the head intensity at the comet's tail, and on the head's four neighbours.
const TAIL_SHARE: f32 = 0.15;
const ARM_SHARE: f32 = 0.3;
/// Agents whose size `s` is at least this many pixels get the four neighbour pixels lit too.
const ARMS_FROM_PX: f32 = 5.0;
/// Smallest agent size `s` in pixels (at the centre's depth) when agents are crowded.
const MIN_CROWDED_PX: f32 = 3.0;
/// Brightness of an agent at the far side of the ball relative to one at the near side.
const FAR_BRIGHTNESS: f32 = 0.3;
/// Mean tone-mapped load (per pixel of the world disc) aimed at when agents are many.
const TARGET_LOAD: f32 = 0.8;

/// Camera and picture for [`render_flock`].
#[derive(Debug, Clone, PartialEq)]
pub struct FlockView {
    /// Picture width in pixels (clamped to 1..=16384).
    pub width: u32,
    /// Picture height in pixels (clamped to 1..=16384).
    pub height: u32,
    /// Radius R of the world ball, centred at the origin; not finite and positive means 1.
    pub world_radius: f32,
    /// Camera turn about the vertical axis y, degrees; 0 looks along -z (from +z).
    pub yaw_deg: f32,
    /// Camera elevation above the horizontal plane, degrees, clamped to [-89, 89].
    pub pitch_deg: f32,
    /// Line drawn above the caption, if any.
    pub title: Option<String>,
}

/// One rendered picture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlockFrame {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// 8-bit RGB, row-major, top row first: `width * height * 3` bytes.
    pub rgb: Vec<u8>,
}

/// Draw agents at positions `pos` with unit headings `fwd` (same length; extra entries of the
/// longer slice are ignored) as seen through `view`, with `caption` (e.g. "step 120  N=10240
/// polarisation 0.83") in the top-left corner under the title. Never fails: agents that cannot
/// be drawn are skipped, and a heading that is not finite and non-zero draws a dot.
pub fn render_flock(
    pos: &[[f32; 3]],
    fwd: &[[f32; 3]],
    view: &FlockView,
    caption: &str,
) -> FlockFrame {
    let width = view.width.clamp(1, MAX_SIDE);
    let height = view.height.clamp(1, MAX_SIDE);
    let (w, h) = (width as usize, height as usize);
    let text = TextBlock::new(w, h, view.title.as_deref(), caption);
    let cam = Camera::new(view, w, h, text.height);

    let mut acc = vec![0.0f32; w * h * 3];
    draw_world(&mut acc, w, h, &cam);
    let n = pos.len().min(fwd.len());
    let style = cam.style(n);
    for (p, f) in pos.iter().zip(fwd) {
        draw_agent(&mut acc, w, h, &cam, *p, *f, style);
    }

    let mut canvas = Canvas::new(w, h, BACKGROUND);
    for (out, light) in canvas.pixels.chunks_exact_mut(3).zip(acc.chunks_exact(3)) {
        for ((o, &bg), &x) in out.iter_mut().zip(&BACKGROUND).zip(light) {
            *o = tone(bg, x);
        }
    }
    text.draw(&mut canvas);
    FlockFrame {
        width,
        height,
        rgb: canvas.pixels,
    }
}

/// Write `frame` as an 8-bit RGB PNG at `path`, atomically.
pub fn write_frame_png(path: &Path, frame: &FlockFrame) -> Result<(), IoError> {
    let (w, h) = check_frame(path, frame, None)?;
    write_rgb_png(path, w, h, &frame.rgb)
}

/// Write `frames` as an animated GIF at `path` that loops forever, each frame shown for
/// `delay_cs` hundredths of a second, atomically. All frames must have the same size (at most
/// 65535 pixels across and down). Colours are reduced to one fixed 256-colour palette (a 6x7x6
/// colour cube with levels spaced closer in the dark, plus the background and ring colours), so
/// colours do not flicker between frames.
pub fn write_gif(path: &Path, frames: &[FlockFrame], delay_cs: u16) -> Result<(), IoError> {
    let invalid = |reason: String| IoError::InvalidOutput {
        path: path.to_path_buf(),
        reason,
    };
    let Some(first) = frames.first() else {
        return Err(invalid("there are no frames to write to the GIF".into()));
    };
    for (i, f) in frames.iter().enumerate() {
        if (f.width, f.height) != (first.width, first.height) {
            return Err(invalid(format!(
                "frame {i} is {} x {} pixels but frame 0 is {} x {}; all frames of a GIF must \
                 have the same size",
                f.width, f.height, first.width, first.height
            )));
        }
        check_frame(path, f, Some(i))?;
    }
    let (Ok(gw), Ok(gh)) = (u16::try_from(first.width), u16::try_from(first.height)) else {
        return Err(invalid(format!(
            "GIF frames can be at most 65535 pixels across and down, not {} x {}",
            first.width, first.height
        )));
    };
    let palette = Palette::new();
    let mut indices = vec![0u8; usize::from(gw) * usize::from(gh)];
    write_atomic(path, |w| {
        let mut encoder = gif::Encoder::new(w, gw, gh, &palette.rgb).map_err(gif_io)?;
        encoder.set_repeat(gif::Repeat::Infinite).map_err(gif_io)?;
        for f in frames {
            for (ix, px) in indices.iter_mut().zip(f.rgb.chunks_exact(3)) {
                *ix = palette.index([px[0], px[1], px[2]]);
            }
            let frame = gif::Frame {
                width: gw,
                height: gh,
                delay: delay_cs,
                buffer: Cow::Borrowed(&indices),
                ..gif::Frame::default()
            };
            encoder.write_frame(&frame).map_err(gif_io)?;
        }
        encoder.into_inner().map_err(gif_io).map(|_| ())
    })
}

/// The frame's size as `usize`, after checking that it is not empty and that `rgb` holds
/// exactly its pixels. `index` names the frame in a sequence.
fn check_frame(
    path: &Path,
    frame: &FlockFrame,
    index: Option<usize>,
) -> Result<(usize, usize), IoError> {
    let name = index.map_or_else(|| "the frame".to_string(), |i| format!("frame {i}"));
    let (w, h) = (frame.width as usize, frame.height as usize);
    let reason = if w == 0 || h == 0 {
        format!("{name} is empty ({w} x {h} pixels)")
    } else if w.checked_mul(h).and_then(|n| n.checked_mul(3)) != Some(frame.rgb.len()) {
        format!(
            "{name} is {w} x {h} pixels but holds {} bytes of RGB; expected {}",
            frame.rgb.len(),
            w.saturating_mul(h).saturating_mul(3)
        )
    } else {
        return Ok((w, h));
    };
    Err(IoError::InvalidOutput {
        path: path.to_path_buf(),
        reason,
    })
}

/// A GIF encoder error as an I/O error (keeping an underlying I/O error as it is).
fn gif_io(e: gif::EncodingError) -> std::io::Error {
    match e {
        gif::EncodingError::Io(e) => e,
        other => std::io::Error::other(other),
    }
}

/// Background channel `bg` plus the tone-mapped light `x`.
fn tone(bg: u8, x: f32) -> u8 {
    let bg = f32::from(bg);
    let t = if x > 0.0 { 1.0 - (-x).exp() } else { 0.0 };
    (bg + (255.0 - bg) * t).round().clamp(0.0, 255.0) as u8
}

type V3 = [f32; 3];

fn dot(a: V3, b: V3) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// Perspective camera looking at the origin, with the picture's projection centre and focal
/// length in pixels.
struct Camera {
    right: V3,
    up: V3,
    /// Unit vector from the centre to the camera.
    back: V3,
    /// Distance from the camera to the centre.
    dist: f32,
    radius: f32,
    focal: f32,
    cx: f32,
    cy: f32,
    /// Silhouette radius of the world ball, pixels.
    disc: f32,
    /// Nearest depth drawn.
    near: f32,
}

impl Camera {
    /// The camera of `view` for a `w` x `h` picture whose top `header` rows hold text.
    fn new(view: &FlockView, w: usize, h: usize, header: usize) -> Self {
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
    fn project(&self, p: V3) -> Option<(f32, f32, f32)> {
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
    fn style(&self, n: usize) -> Style {
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
struct Style {
    size: f32,
    gain: f32,
}

/// About how much light one agent of `size_px` pixels (at the centre's depth) adds in all:
/// a hue's mean channel weight is about 0.6, a comet's ramp averages ~0.45 of its head.
fn footprint(size_px: f32) -> f32 {
    let arms = if size_px >= ARMS_FROM_PX {
        4.0 * ARM_SHARE
    } else {
        0.0
    };
    0.6 * HEAD_INTENSITY * (1.0 + arms + 0.45 * COMET_LENGTH * size_px)
}

/// Add `c * k` to the pixel containing (x, y), if it is on the picture.
fn add(acc: &mut [f32], w: usize, h: usize, x: f32, y: f32, c: V3, k: f32) {
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
fn draw_world(acc: &mut [f32], w: usize, h: usize, cam: &Camera) {
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
fn draw_agent(acc: &mut [f32], w: usize, h: usize, cam: &Camera, p: V3, f: V3, style: Style) {
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
fn heading_hue(f: V3) -> V3 {
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
fn hsv(hue: f32, sat: f32) -> V3 {
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

/// The title and caption lines in the top-left corner.
struct TextBlock {
    lines: Vec<(String, [u8; 3])>,
    scale: usize,
    margin: usize,
    line_px: usize,
    /// Rows taken by the text (zero without text).
    height: usize,
}

impl TextBlock {
    fn new(w: usize, h: usize, title: Option<&str>, caption: &str) -> Self {
        let scale = (w.min(h) / 700).clamp(1, 4);
        let margin = 4 * scale;
        let line_px = (GLYPH_PX + 3) * scale;
        let room = w.saturating_sub(2 * margin);
        let lines: Vec<(String, [u8; 3])> =
            [(title.unwrap_or(""), TITLE_INK), (caption, CAPTION_INK)]
                .into_iter()
                .filter(|(t, _)| !t.is_empty())
                .map(|(t, ink)| (fit_text(t, scale, room), ink))
                .collect();
        let height = if lines.is_empty() {
            0
        } else {
            margin + lines.len() * line_px
        };
        Self {
            lines,
            scale,
            margin,
            line_px,
            height,
        }
    }

    /// Draw the lines with a one-pixel shadow so they read over agents too.
    fn draw(&self, canvas: &mut Canvas) {
        let x = self.margin as i64;
        for (i, (line, ink)) in self.lines.iter().enumerate() {
            let y = (self.margin + i * self.line_px) as i64;
            let s = self.scale as i64;
            canvas.text(x + s, y + s, line, self.scale, SHADOW);
            canvas.text(x, y, line, self.scale, *ink);
        }
    }
}

/// The fixed GIF palette and a lookup from 5-bit-per-channel colours to its nearest entry.
struct Palette {
    /// 256 entries as r, g, b bytes.
    rgb: Vec<u8>,
    lut: Vec<u8>,
}

impl Palette {
    fn new() -> Self {
        // Levels spaced as (i / (n - 1))^1.4 put more of them in the dark, where most of a
        // flock picture lies.
        let levels = |n: usize| -> Vec<u8> {
            (0..n)
                .map(|i| (255.0 * (i as f32 / (n - 1) as f32).powf(1.4)).round() as u8)
                .collect()
        };
        let (l6, l7) = (levels(6), levels(7));
        let mut entries: Vec<[u8; 3]> = Vec::with_capacity(256);
        for &r in &l6 {
            for &g in &l7 {
                for &b in &l6 {
                    entries.push([r, g, b]);
                }
            }
        }
        let lit = |c: V3| -> [u8; 3] { std::array::from_fn(|k| tone(BACKGROUND[k], c[k])) };
        let fill_ring: V3 = std::array::from_fn(|k| DISC_FILL[k] + RING[k]);
        entries.extend([BACKGROUND, lit(DISC_FILL), lit(fill_ring), CAPTION_INK]);
        let mut lut = vec![0u8; 1 << 15];
        for (i, slot) in lut.iter_mut().enumerate() {
            let c = [(i >> 10) & 31, (i >> 5) & 31, i & 31].map(|v| (v * 8 + 4) as i32);
            let mut best = (i32::MAX, 0u8);
            for (j, e) in entries.iter().enumerate() {
                let d = |k: usize| c[k] - i32::from(e[k]);
                let dist = 2 * d(0) * d(0) + 4 * d(1) * d(1) + 3 * d(2) * d(2);
                if dist < best.0 {
                    best = (dist, j as u8);
                }
            }
            *slot = best.1;
        }
        Self {
            rgb: entries.iter().flatten().copied().collect(),
            lut,
        }
    }

    /// Palette index of the colour `c`.
    fn index(&self, c: [u8; 3]) -> u8 {
        let i =
            (usize::from(c[0] >> 3) << 10) | (usize::from(c[1] >> 3) << 5) | usize::from(c[2] >> 3);
        self.lut.get(i).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(w: u32, h: u32) -> FlockView {
        FlockView {
            width: w,
            height: h,
            world_radius: 30.0,
            yaw_deg: 30.0,
            pitch_deg: 20.0,
            title: None,
        }
    }

    fn px(f: &FlockFrame, x: usize, y: usize) -> [u8; 3] {
        let i = (y * f.width as usize + x) * 3;
        [f.rgb[i], f.rgb[i + 1], f.rgb[i + 2]]
    }

    /// Pixels clearly brighter than the background (any channel more than 90 above it): agents
    /// and text, not the faint world ring.
    fn lit(f: &FlockFrame, x0: usize, x1: usize, y0: usize, y1: usize) -> usize {
        let mut n = 0;
        for y in y0..y1 {
            for x in x0..x1 {
                let p = px(f, x, y);
                if (0..3).any(|k| p[k] > BACKGROUND[k] + 90) {
                    n += 1;
                }
            }
        }
        n
    }

    #[test]
    fn frame_has_the_right_size() {
        let f = render_flock(&[], &[], &view(123, 77), "");
        assert_eq!((f.width, f.height), (123, 77));
        assert_eq!(f.rgb.len(), 123 * 77 * 3);
        // Sizes are clamped, never zero.
        let f = render_flock(&[], &[], &view(0, 5), "x");
        assert_eq!((f.width, f.height, f.rgb.len()), (1, 5, 15));
    }

    #[test]
    fn one_agent_at_the_centre_lights_the_centre_only() {
        let v = view(200, 200);
        let empty = render_flock(&[], &[], &v, "");
        assert_eq!(lit(&empty, 80, 120, 80, 120), 0);
        let f = render_flock(&[[0.0; 3]], &[[1.0, 0.0, 0.0]], &v, "step 1  N=1");
        assert!(
            lit(&f, 90, 110, 90, 110) >= 1,
            "agent not drawn at the centre"
        );
        // Everything lit outside the centre is the caption or the world ring (faint).
        for (x0, y0) in [(0, 0), (180, 0), (0, 180), (180, 180)] {
            let corner = lit(&f, x0, x0 + 20, y0, y0 + 20);
            if (x0, y0) == (0, 0) {
                assert!(corner > 0, "caption missing");
            } else {
                assert_eq!(corner, 0, "corner at ({x0}, {y0}) is lit");
                assert_eq!(px(&f, x0 + 10, y0 + 10), BACKGROUND);
            }
        }
        // Outside the caption rows and the centre, nothing is bright.
        let header = TextBlock::new(200, 200, None, "step 1  N=1").height;
        let centre = lit(&f, 90, 110, 90, 110);
        assert_eq!(lit(&f, 0, 200, header, 200), centre);
        // The ring of the world (its top a few rows down) is faint but visible.
        let ring = (0..20).map(|y| px(&empty, 100, y)[2]).max().unwrap();
        assert!(ring > BACKGROUND[2] + 30, "no ring: {ring}");
        assert_eq!(lit(&empty, 0, 200, 0, 200), 0, "the ring is not faint");
    }

    #[test]
    fn off_view_and_nan_agents_do_not_panic() {
        // Camera at (0, 0, 78) looking along -z.
        let v = FlockView {
            title: Some("a title".into()),
            yaw_deg: 0.0,
            pitch_deg: 0.0,
            ..view(64, 48)
        };
        let pos = [
            [f32::NAN, 0.0, 0.0],
            [0.0, f32::INFINITY, 0.0],
            [1e30, 1e30, 1e30],
            [0.0, 0.0, 78.0],  // at the camera
            [0.0, 0.0, 500.0], // behind it
            [-1e6, 0.0, 0.0],
            [5.0, 5.0, 5.0],
        ];
        let fwd = [
            [1.0, 0.0, 0.0],
            [0.0, 1.0, 0.0],
            [f32::NAN; 3],
            [0.0; 3],
            [0.0, 0.0, 1.0],
            [1.0, 0.0, 0.0],
            [f32::INFINITY, 0.0, 0.0],
        ];
        let f = render_flock(
            &pos,
            &fwd,
            &v,
            "caption that is far too long for the picture",
        );
        assert_eq!(f.rgb.len(), 64 * 48 * 3);
        // Mismatched lengths and odd views are fine too.
        let odd = FlockView {
            world_radius: f32::NAN,
            yaw_deg: f32::INFINITY,
            pitch_deg: 90.0,
            ..view(16, 16)
        };
        render_flock(&pos, &fwd[..2], &odd, "");
    }

    #[test]
    fn order_of_agents_hardly_matters() {
        let v = view(96, 96);
        let pos: Vec<V3> = (0..500)
            .map(|i| {
                let t = i as f32 * 0.37;
                [
                    10.0 * t.sin(),
                    8.0 * (1.3 * t).cos(),
                    12.0 * (0.7 * t).sin(),
                ]
            })
            .collect();
        let fwd: Vec<V3> = pos
            .iter()
            .map(|p| {
                let l = dot(*p, *p).sqrt().max(1e-3);
                [p[0] / l, p[1] / l, p[2] / l]
            })
            .collect();
        let a = render_flock(&pos, &fwd, &v, "");
        let (rp, rf): (Vec<V3>, Vec<V3>) =
            pos.iter().zip(&fwd).rev().map(|(p, f)| (*p, *f)).unzip();
        let b = render_flock(&rp, &rf, &v, "");
        let worst = a.rgb.iter().zip(&b.rgb).map(|(x, y)| x.abs_diff(*y)).max();
        assert!(worst <= Some(1), "order changed a pixel by {worst:?}");
    }

    #[test]
    fn crowds_do_not_burn_out() {
        // 40,000 agents spread through the ball on a 64 x 64 picture: ~30 per pixel.
        let n = 40_000;
        let pos: Vec<V3> = (0..n)
            .map(|i| {
                let t = i as f32;
                let r = 28.0 * (t / n as f32).cbrt();
                let (a, b) = (t * 2.399_963, (1.0 - 2.0 * (t + 0.5) / n as f32).acos());
                [r * b.sin() * a.cos(), r * b.cos(), r * b.sin() * a.sin()]
            })
            .collect();
        let fwd = vec![[0.0, 0.0, 1.0]; n];
        let f = render_flock(&pos, &fwd, &view(64, 64), "");
        let c = px(&f, 32, 32);
        assert!(c.iter().any(|&v| v > 60), "centre too dark: {c:?}");
        assert!(c.iter().all(|&v| v < 235), "centre burnt out: {c:?}");
    }

    #[test]
    fn gif_round_trip_and_errors() {
        let dir = tempfile::tempdir().unwrap();
        let v = view(40, 30);
        let frames: Vec<FlockFrame> = (0..3)
            .map(|i| {
                let p = [i as f32, 0.0, 0.0];
                render_flock(&[p], &[[0.0, 0.0, 1.0]], &v, &format!("step {i}"))
            })
            .collect();
        let path = dir.path().join("flock.gif");
        write_gif(&path, &frames, 4).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert!(bytes.starts_with(b"GIF89a"));
        let mut opts = gif::DecodeOptions::new();
        opts.set_color_output(gif::ColorOutput::RGBA);
        let mut dec = opts.read_info(bytes.as_slice()).unwrap();
        assert_eq!(dec.repeat(), gif::Repeat::Infinite);
        let mut n = 0;
        while let Some(f) = dec.read_next_frame().unwrap() {
            assert_eq!((f.width, f.height, f.delay), (40, 30, 4));
            assert_eq!(f.buffer.len(), 40 * 30 * 4);
            // The background comes back exactly.
            assert_eq!(&f.buffer[4 * (29 * 40 + 39)..][..3], &BACKGROUND);
            n += 1;
        }
        assert_eq!(n, 3);

        // Mismatched sizes: an error naming the file, and no file.
        let bad = dir.path().join("bad.gif");
        let mut mixed = frames.clone();
        mixed.push(render_flock(&[], &[], &view(41, 30), ""));
        let err = write_gif(&bad, &mixed, 4).unwrap_err().to_string();
        assert!(
            err.contains("bad.gif") && err.contains("same size"),
            "{err}"
        );
        assert!(!bad.exists());
        let err = write_gif(&bad, &[], 4).unwrap_err().to_string();
        assert!(err.contains("no frames"), "{err}");
        let mut short = frames[0].clone();
        short.rgb.pop();
        assert!(write_gif(&bad, &[short.clone()], 4).is_err());
        assert!(write_frame_png(&bad, &short).is_err());
        assert!(!bad.exists());
        let leftovers = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(leftovers, 1, "temporary files left behind");
    }

    #[test]
    fn png_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let f = render_flock(&[[0.0; 3]], &[[0.0, 1.0, 0.0]], &view(50, 40), "hi");
        let path = dir.path().join("f.png");
        write_frame_png(&path, &f).unwrap();
        let dec = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&path).unwrap()));
        let mut r = dec.read_info().unwrap();
        let mut buf = vec![0; r.output_buffer_size().unwrap()];
        let info = r.next_frame(&mut buf).unwrap();
        assert_eq!((info.width, info.height), (50, 40));
        assert_eq!(&buf[..info.buffer_size()], f.rgb.as_slice());
    }
}
