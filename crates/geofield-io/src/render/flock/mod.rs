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

mod draw;
mod frame;
mod overlay;
#[cfg(test)]
mod tests;

use draw::*;
use frame::*;
pub use overlay::FlockOverlay;

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
    render_flock_scene(pos, fwd, view, caption, &FlockOverlay::default())
}

/// [`render_flock`] with obstacle outlines drawn under the agents and predators drawn over
/// them as red discs (`overlay`).
pub fn render_flock_scene(
    pos: &[[f32; 3]],
    fwd: &[[f32; 3]],
    view: &FlockView,
    caption: &str,
    overlay: &FlockOverlay,
) -> FlockFrame {
    let width = view.width.clamp(1, MAX_SIDE);
    let height = view.height.clamp(1, MAX_SIDE);
    let (w, h) = (width as usize, height as usize);
    let text = TextBlock::new(w, h, view.title.as_deref(), caption);
    let cam = Camera::new(view, w, h, text.height);

    let mut acc = vec![0.0f32; w * h * 3];
    draw_world(&mut acc, w, h, &cam);
    overlay::draw_segments(&mut acc, w, h, &cam, &overlay.segments);
    let n = pos.len().min(fwd.len());
    let style = cam.style(n);
    for (p, f) in pos.iter().zip(fwd) {
        draw_agent(&mut acc, w, h, &cam, *p, *f, style);
    }
    overlay::draw_predators(&mut acc, w, h, &cam, &overlay.predators);

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
