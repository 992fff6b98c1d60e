//! The flock picture's text block and the GIF palette.

use super::*;

/// The title and caption lines in the top-left corner.
pub(super) struct TextBlock {
    pub(super) lines: Vec<(String, [u8; 3])>,
    pub(super) scale: usize,
    pub(super) margin: usize,
    pub(super) line_px: usize,
    /// Rows taken by the text (zero without text).
    pub(super) height: usize,
}

impl TextBlock {
    pub(super) fn new(w: usize, h: usize, title: Option<&str>, caption: &str) -> Self {
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
    pub(super) fn draw(&self, canvas: &mut Canvas) {
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
pub(super) struct Palette {
    /// 256 entries as r, g, b bytes.
    pub(super) rgb: Vec<u8>,
    pub(super) lut: Vec<u8>,
}

impl Palette {
    pub(super) fn new() -> Self {
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
    pub(super) fn index(&self, c: [u8; 3]) -> u8 {
        let i =
            (usize::from(c[0] >> 3) << 10) | (usize::from(c[1] >> 3) << 5) | usize::from(c[2] >> 3);
        self.lut.get(i).copied().unwrap_or(0)
    }
}
