//! An RGB canvas with clipped drawing, and text in the 8x8 bitmap font of `font8x8`.

use font8x8::{BASIC_FONTS, LATIN_FONTS, UnicodeFonts};

/// Glyph cell size of the font, in pixels at scale 1: a line of text at scale `s` is
/// `GLYPH_PX * s` pixels high and each character as wide.
pub const GLYPH_PX: usize = 8;

/// An 8-bit RGB image, row-major from the top.
pub(crate) struct Canvas {
    pub(crate) width: usize,
    pub(crate) height: usize,
    pub(crate) pixels: Vec<u8>,
}

impl Canvas {
    /// A canvas filled with `background`.
    pub(crate) fn new(width: usize, height: usize, background: [u8; 3]) -> Self {
        let mut pixels = Vec::with_capacity(width * height * 3);
        for _ in 0..width * height {
            pixels.extend_from_slice(&background);
        }
        Self {
            width,
            height,
            pixels,
        }
    }

    /// Set one pixel; coordinates outside the canvas are ignored.
    pub(crate) fn set(&mut self, x: i64, y: i64, rgb: [u8; 3]) {
        if x < 0 || y < 0 || x as usize >= self.width || y as usize >= self.height {
            return;
        }
        let i = (y as usize * self.width + x as usize) * 3;
        if let Some(p) = self.pixels.get_mut(i..i + 3) {
            p.copy_from_slice(&rgb);
        }
    }

    /// The colour of one pixel (black outside the canvas).
    #[cfg(test)]
    pub(crate) fn get(&self, x: usize, y: usize) -> [u8; 3] {
        let i = (y * self.width + x) * 3;
        match self.pixels.get(i..i + 3) {
            Some(p) if x < self.width => [p[0], p[1], p[2]],
            _ => [0, 0, 0],
        }
    }

    /// Fill the rectangle with top-left (x, y), clipped to the canvas.
    pub(crate) fn fill_rect(&mut self, x: i64, y: i64, w: usize, h: usize, rgb: [u8; 3]) {
        for yy in y..y + h as i64 {
            for xx in x..x + w as i64 {
                self.set(xx, yy, rgb);
            }
        }
    }

    /// Outline the rectangle with top-left (x, y) with a 1-pixel line.
    pub(crate) fn outline_rect(&mut self, x: i64, y: i64, w: usize, h: usize, rgb: [u8; 3]) {
        let (w, h) = (w as i64, h as i64);
        for xx in x - 1..=x + w {
            self.set(xx, y - 1, rgb);
            self.set(xx, y + h, rgb);
        }
        for yy in y - 1..=y + h {
            self.set(x - 1, yy, rgb);
            self.set(x + w, yy, rgb);
        }
    }

    /// Draw `text` with its top-left corner at (x, y), each font pixel `scale` x `scale`.
    /// Characters missing from the font are drawn as `?`.
    pub(crate) fn text(&mut self, x: i64, y: i64, text: &str, scale: usize, rgb: [u8; 3]) {
        text_pixels(x, y, text, scale, |px, py| self.set(px, py, rgb));
    }

    /// Draw `text` at scale 1 turned a quarter turn anticlockwise, reading upwards, its first
    /// character's bottom-left corner at (x, y) (the tops of the glyphs face left).
    pub(crate) fn text_up(&mut self, x: i64, y: i64, text: &str, rgb: [u8; 3]) {
        for (k, c) in text.chars().enumerate() {
            let glyph = glyph(c);
            for (gy, bits) in glyph.iter().enumerate() {
                for gx in 0..GLYPH_PX {
                    if bits & (1 << gx) != 0 {
                        self.set(x + gy as i64, y - (k * GLYPH_PX + gx) as i64, rgb);
                    }
                }
            }
        }
    }
}

/// Calls `plot(x, y)` for every pixel of `text` drawn in the 8x8 font with its top-left corner
/// at (x, y), each font pixel a `scale` x `scale` square (scale 0 is 1): the pixels that the
/// renderers' text sets, for drawing text into any buffer (e.g. the palette indices of a GIF
/// frame). Coordinates may fall outside the buffer: `plot` clips. Characters missing from the
/// font are drawn as `?`.
///
/// ```
/// use geofield_io::render::{GLYPH_PX, text_pixels, text_width};
///
/// let (w, h) = (text_width("1984", 2), GLYPH_PX * 2);
/// let mut buf = vec![0u8; w * h];
/// text_pixels(0, 0, "1984", 2, |x, y| {
///     if x >= 0 && y >= 0 && (x as usize) < w && (y as usize) < h {
///         buf[y as usize * w + x as usize] = 1;
///     }
/// });
/// assert!(buf.iter().filter(|&&v| v == 1).count() > 50);
/// ```
pub fn text_pixels(x: i64, y: i64, text: &str, scale: usize, mut plot: impl FnMut(i64, i64)) {
    let s = scale.max(1) as i64;
    for (k, c) in text.chars().enumerate() {
        let glyph = glyph(c);
        let x0 = x + (k * GLYPH_PX) as i64 * s;
        for (gy, bits) in glyph.iter().enumerate() {
            for gx in 0..GLYPH_PX {
                // font8x8: bit 0 of each row byte is the leftmost pixel.
                if bits & (1 << gx) != 0 {
                    let px = x0 + gx as i64 * s;
                    let py = y + gy as i64 * s;
                    for yy in py..py + s {
                        for xx in px..px + s {
                            plot(xx, yy);
                        }
                    }
                }
            }
        }
    }
}

/// Width in pixels of `text` drawn at `scale` (scale 0 is 1).
pub fn text_width(text: &str, scale: usize) -> usize {
    text.chars().count() * GLYPH_PX * scale.max(1)
}

/// The bitmap of `c`, or of `?` when the font has no glyph for it. Dashes and the minus sign
/// (U+2010 to U+2015, U+2212), which the font lacks, are drawn as `-`.
fn glyph(c: char) -> [u8; 8] {
    let c = match c {
        '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
        c => c,
    };
    BASIC_FONTS
        .get(c)
        .or_else(|| LATIN_FONTS.get(c))
        .or_else(|| BASIC_FONTS.get('?'))
        .unwrap_or([0; 8])
}

/// `text` shortened with a trailing `..` so that it fits in `max_px` at `scale`.
pub(crate) fn fit_text(text: &str, scale: usize, max_px: usize) -> String {
    let max_chars = max_px / (GLYPH_PX * scale.max(1));
    if text.chars().count() <= max_chars {
        return text.to_string();
    }
    let keep = max_chars.saturating_sub(2);
    let mut out: String = text.chars().take(keep).collect();
    if max_chars >= 2 {
        out.push_str("..");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_glyph_pixels_and_clips() {
        let mut c = Canvas::new(20, 10, [255, 255, 255]);
        c.text(0, 0, "I", 1, [0, 0, 0]);
        let dark = (0..10).flat_map(|y| (0..8).map(move |x| (x, y)));
        let n = dark.filter(|&(x, y)| c.get(x, y) == [0, 0, 0]).count();
        assert!(n > 5, "glyph drew {n} pixels");
        // Off-canvas drawing is ignored rather than panicking.
        c.text(-50, -50, "hello", 2, [0, 0, 0]);
        c.text(15, 5, "wide text", 3, [0, 0, 0]);
        assert_eq!(text_width("abc", 2), 48);
        assert_eq!(fit_text("abcdefgh", 1, 48), "abcd..");
        assert_eq!(fit_text("abc", 1, 48), "abc");
        // Dashes the font lacks are hyphens, not question marks.
        assert_eq!(glyph('\u{2013}'), glyph('-'));
        assert_ne!(glyph('\u{2013}'), glyph('?'));
    }

    #[test]
    fn dash_text_draws_a_hyphen() {
        let draw = |s: &str| {
            let mut c = Canvas::new(8, 8, [255, 255, 255]);
            c.text(0, 0, s, 1, [0, 0, 0]);
            c.pixels
        };
        assert_eq!(draw("\u{2013}"), draw("-"));
    }
}
