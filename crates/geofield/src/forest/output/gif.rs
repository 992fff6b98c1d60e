//! The stand seen from above, one frame a year, as an animated GIF.
//!
//! The plot fills the frame, [`LONG_SIDE_PX`] pixels along its longer side, north up. Each
//! species has a colour (geofield-io's [`BLEND_HUES`], repeating after ten species): an adult
//! is a disc of radius [`CROWN_M_PER_DBH_CM`] × DBH (a display convention, not a crown
//! allometry; at least 1.5 pixels) with a darker rim, drawn largest first so that smaller
//! crowns stay visible; a sapling is a 2 × 2 pixel dot and a seedling one pixel, drawn over the
//! adults. The year ("year 12") is written in the top-left corner and a legend (each species'
//! colour swatch and name; names longer than [`LEGEND_NAME_CHARS`] characters shortened) sits
//! in the top-right corner, both dark text on a light box in geofield-io's 8 × 8 font
//! ([`text_pixels`]); the legend is left out of a frame too small for it beside the year, and
//! when it has more species than rows fit, its last row says how many more. A frame is kept as
//! one palette index per pixel, a third of the RGB size.
//!
//! Memory is bounded: at most [`MAX_FRAMES`] frames are kept. When a run has more years, every
//! second frame is dropped and from then on only every second year is drawn (then every
//! fourth, ...), so a long run still spans its whole length. Writing expands the frames to RGB
//! for geofield-io's [`write_gif`] (which reduces them to its fixed 256-colour palette), at
//! most [`MAX_FRAMES`] × 600 × 600 × 3 bytes (216 MB).
//!
//! [`BLEND_HUES`]: geofield_io::render::BLEND_HUES
//! [`text_pixels`]: geofield_io::render::text_pixels
//! [`write_gif`]: geofield_io::write_gif

use std::path::Path;

use geofield_core::GridSpec;
use geofield_io::render::{BLEND_HUES, GLYPH_PX, text_pixels, text_width};
use geofield_io::{FlockFrame, IoError};

use crate::GeofieldError;
use crate::forest::params::{ForestParams, Stage};
use crate::forest::simulate::Year;
use crate::forest::trees::Trees;

/// Pixels along the plot's longer side.
pub const LONG_SIDE_PX: f64 = 600.0;
/// Frames kept at most.
pub const MAX_FRAMES: usize = 200;
/// Disc radius of an adult in metres per cm of DBH.
pub const CROWN_M_PER_DBH_CM: f64 = 0.1;
/// Time each frame is shown, in hundredths of a second.
const DELAY_CS: u16 = 20;
/// Smallest disc radius in pixels.
const MIN_RADIUS_PX: f64 = 1.5;

/// Palette indices: background, the label's box, ink, then per hue (fill, rim).
const BACKGROUND: u8 = 0;
const LABEL_BOX: u8 = 1;
const INK: u8 = 2;
const FIRST_HUE: u8 = 3;

/// The RGB of each palette index.
fn palette() -> Vec<[u8; 3]> {
    let mut p = vec![[255, 255, 255], [235, 235, 235], [0, 0, 0]];
    for h in BLEND_HUES {
        p.push(h);
        p.push(h.map(|c| (f32::from(c) * 0.55) as u8));
    }
    p
}

/// Font scale of the year label (8 × 8 pixels a character at scale 1).
const YEAR_SCALE: usize = 2;
/// Longest species name in the legend, in characters.
pub const LEGEND_NAME_CHARS: usize = 24;
/// Gap between a box and the frame's edge, and between the boxes.
const MARGIN: i64 = 4;
/// Padding inside a box.
const PAD: usize = 4;
/// Height of a legend row, and the side of its colour swatch.
const ROW_PX: usize = 14;
const SWATCH_PX: usize = 10;

/// Yearly top views of the stand for an animated GIF (see the module docs).
#[derive(Debug, Clone)]
pub struct StandFrames {
    x_min_m: f64,
    y_max_m: f64,
    px_per_m: f64,
    width: usize,
    height: usize,
    n_species: usize,
    /// Every `stride`-th pushed year is drawn.
    stride: u64,
    pushed: u64,
    frames: Vec<Vec<u8>>,
    years: Vec<u32>,
}

impl StandFrames {
    /// Frames of the plot of `run_grid` for `n_species` species.
    ///
    /// ```
    /// use geofield::forest::output::StandFrames;
    /// use geofield_core::{Extent, GridSpec};
    ///
    /// let grid = GridSpec::from_extent(Extent::new(0.0, 0.0, 300.0, 150.0)?, 1.0)?;
    /// let frames = StandFrames::new(&grid, 4);
    /// assert_eq!(frames.size_px(), (600, 300));
    /// assert!(frames.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(run_grid: &GridSpec, n_species: usize) -> Self {
        let (w_m, h_m) = (run_grid.width_m(), run_grid.height_m());
        let long = w_m.max(h_m);
        let px_per_m = if long.is_finite() && long > 0.0 {
            LONG_SIDE_PX / long
        } else {
            1.0
        };
        let side = |m: f64| ((m * px_per_m).round() as usize).clamp(1, LONG_SIDE_PX as usize);
        StandFrames {
            x_min_m: run_grid.x_min_m,
            y_max_m: run_grid.y_max_m,
            px_per_m,
            width: side(w_m),
            height: side(h_m),
            n_species,
            stride: 1,
            pushed: 0,
            frames: Vec::new(),
            years: Vec::new(),
        }
    }

    /// Frame size in pixels as (width, height).
    pub fn size_px(&self) -> (usize, usize) {
        (self.width, self.height)
    }

    /// Number of frames kept.
    pub fn len(&self) -> usize {
        self.frames.len()
    }

    /// True when no frame is kept.
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// The years of the frames kept, in order.
    pub fn years(&self) -> &[u32] {
        &self.years
    }

    /// Draw the trees of `year` (stages from `params`) as the next frame; see the module docs
    /// for which years are kept in a long run. Trees of a species index beyond the parameters'
    /// are skipped.
    ///
    /// ```
    /// use geofield::forest::output::StandFrames;
    /// use geofield::forest::params::{ForestParams, ForestSpecies};
    /// use geofield::forest::simulate::Year;
    /// use geofield::forest::trees::Trees;
    /// use geofield_core::{Extent, GridSpec};
    ///
    /// let grid = GridSpec::from_extent(Extent::new(0.0, 0.0, 60.0, 40.0)?, 1.0)?;
    /// let params = ForestParams {
    ///     species: geofield::synth::sbs_species().into_iter()
    ///         .map(ForestSpecies::with_defaults).collect(),
    ///     max_gap_density: 0, gap_cell_m: 8.0, torus: true,
    /// };
    /// let trees = Trees { x_m: vec![30.0], y_m: vec![20.0], dbh_cm: vec![40.0],
    ///     species: vec![1], id: vec![0] };
    /// let mut frames = StandFrames::new(&grid, 4);
    /// for y in 0..3 {
    ///     frames.push(&Year::new(y, vec![], vec![], &[], &trees), &params)?;
    /// }
    /// assert_eq!(frames.years(), &[0, 1, 2]);
    /// let dir = tempfile::tempdir()?;
    /// frames.write_gif(&dir.path().join("stand.gif"))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn push(&mut self, year: &Year, params: &ForestParams) -> Result<(), GeofieldError> {
        let i = self.pushed;
        self.pushed += 1;
        if !i.is_multiple_of(self.stride) {
            return Ok(());
        }
        if self.frames.len() >= MAX_FRAMES {
            // Keep the frames of every second drawn year, and draw every second year from now.
            let mut k = 0;
            self.frames.retain(|_| {
                k += 1;
                k % 2 == 1
            });
            let mut k = 0;
            self.years.retain(|_| {
                k += 1;
                k % 2 == 1
            });
            self.stride *= 2;
            if !i.is_multiple_of(self.stride) {
                return Ok(());
            }
        }
        let frame = self.draw(year.year, year.trees()?, params);
        self.frames.push(frame);
        self.years.push(year.year);
        Ok(())
    }

    /// One frame of palette indices.
    fn draw(&self, year: u32, t: &Trees, params: &ForestParams) -> Vec<u8> {
        let (w, h) = (self.width, self.height);
        let mut px = vec![BACKGROUND; w * h];
        let hue = |s: usize| FIRST_HUE + 2 * (s % BLEND_HUES.len()) as u8;
        let at = |i: usize| {
            (
                (t.x_m[i] - self.x_min_m) * self.px_per_m,
                (self.y_max_m - t.y_m[i]) * self.px_per_m,
            )
        };
        let stage = |i: usize| {
            params
                .species
                .get(t.species[i] as usize)
                .map(|sp| sp.stage(t.dbh_cm[i]))
        };
        let mut adults: Vec<usize> = (0..t.len())
            .filter(|&i| stage(i) == Some(Stage::Adult) && t.dbh_cm[i].is_finite())
            .collect();
        adults.sort_by(|&a, &b| t.dbh_cm[b].total_cmp(&t.dbh_cm[a]));
        for i in adults {
            let (cx, cy) = at(i);
            let r = (CROWN_M_PER_DBH_CM * t.dbh_cm[i] * self.px_per_m).max(MIN_RADIUS_PX);
            let fill = hue(t.species[i] as usize);
            self.disc(&mut px, cx, cy, r, fill, fill + 1);
        }
        for i in 0..t.len() {
            let dot = match stage(i) {
                Some(Stage::Sapling) => 2,
                Some(Stage::Seedling) => 1,
                _ => continue,
            };
            let (x, y) = at(i);
            let (x0, y0) = (x.floor() as i64, y.floor() as i64);
            let c = hue(t.species[i] as usize);
            for dy in 0..dot {
                for dx in 0..dot {
                    self.set(&mut px, x0 + dx - dot / 2, y0 + dy - dot / 2, c);
                }
            }
        }
        let left = self.label(&mut px, year);
        self.legend(&mut px, params, left);
        px
    }

    /// Set pixel (x, y) to `c` when it is in the frame.
    #[inline]
    fn set(&self, px: &mut [u8], x: i64, y: i64, c: u8) {
        if x >= 0 && y >= 0 && (x as usize) < self.width && (y as usize) < self.height {
            px[y as usize * self.width + x as usize] = c;
        }
    }

    /// A disc of radius `r` pixels centred at (cx, cy), its outer pixel ring in `rim`.
    fn disc(&self, px: &mut [u8], cx: f64, cy: f64, r: f64, fill: u8, rim: u8) {
        let lim = |v: f64, n: usize| v.clamp(0.0, n as f64) as i64;
        let (x0, x1) = (lim(cx - r - 1.0, self.width), lim(cx + r + 1.0, self.width));
        let (y0, y1) = (
            lim(cy - r - 1.0, self.height),
            lim(cy + r + 1.0, self.height),
        );
        let inner = (r - 1.0).max(0.0);
        for y in y0..y1 {
            for x in x0..x1 {
                let (dx, dy) = (x as f64 + 0.5 - cx, y as f64 + 0.5 - cy);
                let d2 = dx * dx + dy * dy;
                if d2 <= r * r {
                    let c = if d2 > inner * inner { rim } else { fill };
                    self.set(px, x, y, c);
                }
            }
        }
    }

    /// Fill the rectangle with top-left (x, y) with `c`, clipped to the frame.
    fn fill(&self, px: &mut [u8], x: i64, y: i64, w: usize, h: usize, c: u8) {
        for yy in y..y + h as i64 {
            for xx in x..x + w as i64 {
                self.set(px, xx, yy, c);
            }
        }
    }

    /// `text` in ink with its top-left corner at (x, y).
    fn text(&self, px: &mut [u8], x: i64, y: i64, text: &str, scale: usize) {
        text_pixels(x, y, text, scale, |xx, yy| self.set(px, xx, yy, INK));
    }

    /// The year in the top-left corner, dark text on a light box; returns the box's right edge.
    fn label(&self, px: &mut [u8], year: u32) -> i64 {
        let text = format!("year {year}");
        let w = text_width(&text, YEAR_SCALE) + 2 * PAD;
        let h = GLYPH_PX * YEAR_SCALE + 2 * PAD;
        self.fill(px, MARGIN, MARGIN, w, h, LABEL_BOX);
        self.text(
            px,
            MARGIN + PAD as i64,
            MARGIN + PAD as i64,
            &text,
            YEAR_SCALE,
        );
        MARGIN + w as i64
    }

    /// The species legend in the top-right corner, right of `left` (see the module docs).
    fn legend(&self, px: &mut [u8], params: &ForestParams, left: i64) {
        let short = |name: &str| {
            if name.chars().count() <= LEGEND_NAME_CHARS {
                name.to_string()
            } else {
                name.chars().take(LEGEND_NAME_CHARS - 2).collect::<String>() + ".."
            }
        };
        let mut rows: Vec<(Option<usize>, String)> = params
            .species
            .iter()
            .enumerate()
            .map(|(s, sp)| (Some(s), short(sp.name())))
            .collect();
        let max_rows = self.height.saturating_sub(2 * MARGIN as usize + 2 * PAD) / ROW_PX;
        if rows.is_empty() || max_rows == 0 {
            return;
        }
        if rows.len() > max_rows {
            let more = rows.len() - (max_rows - 1);
            rows.truncate(max_rows - 1);
            rows.push((None, format!("+{more} more")));
        }
        let text_w = rows.iter().map(|r| text_width(&r.1, 1)).max().unwrap_or(0);
        let w = 2 * PAD + SWATCH_PX + PAD + text_w;
        let h = 2 * PAD + rows.len() * ROW_PX;
        let x0 = self.width as i64 - MARGIN - w as i64;
        if x0 < left + MARGIN {
            return;
        }
        self.fill(px, x0, MARGIN, w, h, LABEL_BOX);
        for (k, (s, name)) in rows.iter().enumerate() {
            let top = MARGIN + (PAD + k * ROW_PX) as i64;
            let swatch_y = top + ((ROW_PX - SWATCH_PX) / 2) as i64;
            if let Some(s) = s {
                let fill = FIRST_HUE + 2 * (s % BLEND_HUES.len()) as u8;
                let sx = x0 + PAD as i64;
                self.fill(px, sx, swatch_y, SWATCH_PX, SWATCH_PX, fill + 1);
                self.fill(px, sx + 1, swatch_y + 1, SWATCH_PX - 2, SWATCH_PX - 2, fill);
            }
            let tx = x0 + (PAD + SWATCH_PX + PAD) as i64;
            self.text(px, tx, top + ((ROW_PX - GLYPH_PX) / 2) as i64, name, 1);
        }
    }

    /// Write the frames as a looping animated GIF (five frames a second), atomically; refuses
    /// when no frame was pushed.
    ///
    /// ```
    /// use geofield::forest::output::StandFrames;
    /// use geofield_core::{Extent, GridSpec};
    ///
    /// let grid = GridSpec::from_extent(Extent::new(0.0, 0.0, 60.0, 40.0)?, 1.0)?;
    /// let dir = tempfile::tempdir()?;
    /// assert!(StandFrames::new(&grid, 4).write_gif(&dir.path().join("none.gif")).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write_gif(&self, path: &Path) -> Result<(), IoError> {
        let pal = palette();
        let (Ok(width), Ok(height)) = (u32::try_from(self.width), u32::try_from(self.height))
        else {
            return Err(IoError::InvalidOutput {
                path: path.to_path_buf(),
                reason: format!("frames of {} x {} pixels", self.width, self.height),
            });
        };
        let frames: Vec<FlockFrame> = self
            .frames
            .iter()
            .map(|f| FlockFrame {
                width,
                height,
                rgb: f
                    .iter()
                    .flat_map(|&i| pal.get(usize::from(i)).copied().unwrap_or([0, 0, 0]))
                    .collect(),
            })
            .collect();
        geofield_io::write_gif(path, &frames, DELAY_CS)
    }

    /// The number of species the frames were made for.
    pub fn n_species(&self) -> usize {
        self.n_species
    }
}

#[cfg(test)]
#[path = "gif_tests.rs"]
mod tests;
