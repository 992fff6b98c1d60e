//! The stand seen from above, one frame a year, as an animated GIF.
//!
//! The plot fills the frame, [`LONG_SIDE_PX`] pixels along its longer side, north up. Each
//! species has a colour (geofield-io's [`BLEND_HUES`], repeating after ten species): an adult
//! is a disc of radius [`CROWN_M_PER_DBH_CM`] × DBH (a display convention, not a crown
//! allometry; at least 1.5 pixels) with a darker rim, drawn largest first so that smaller
//! crowns stay visible; a sapling is a 2 × 2 pixel dot and a seedling one pixel, drawn over the
//! adults. The year is written in the top-left corner (digits of a 3 × 5 pixel font, drawn three
//! times larger: geofield-io's text renderer is internal to it). A frame is kept as one palette
//! index per pixel, a third of the RGB size.
//!
//! Memory is bounded: at most [`MAX_FRAMES`] frames are kept. When a run has more years, every
//! second frame is dropped and from then on only every second year is drawn (then every
//! fourth, ...), so a long run still spans its whole length. Writing expands the frames to RGB
//! for geofield-io's [`write_gif`] (which reduces them to its fixed 256-colour palette), at
//! most [`MAX_FRAMES`] × 600 × 600 × 3 bytes (216 MB).
//!
//! [`BLEND_HUES`]: geofield_io::render::BLEND_HUES
//! [`write_gif`]: geofield_io::write_gif

use std::path::Path;

use geofield_core::GridSpec;
use geofield_io::render::BLEND_HUES;
use geofield_io::{FlockFrame, IoError};

use crate::forest::params::{ForestParams, Stage};
use crate::forest::simulate::Year;

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

/// Digits 0-9 in a 3 × 5 font, one row a byte, the left pixel the 4s bit.
const DIGITS: [[u8; 5]; 10] = [
    [7, 5, 5, 5, 7],
    [2, 6, 2, 2, 7],
    [7, 1, 7, 4, 7],
    [7, 1, 7, 1, 7],
    [5, 5, 7, 1, 1],
    [7, 4, 7, 1, 7],
    [7, 4, 7, 5, 7],
    [7, 1, 1, 1, 1],
    [7, 5, 7, 5, 7],
    [7, 5, 7, 1, 7],
];
/// Font pixels are drawn as squares of this side.
const FONT_SCALE: usize = 3;

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
    ///     frames.push(&Year { year: y, species: vec![], seeds: &[], trees: &trees,
    ///         methods: vec![] }, &params);
    /// }
    /// assert_eq!(frames.years(), &[0, 1, 2]);
    /// let dir = tempfile::tempdir()?;
    /// frames.write_gif(&dir.path().join("stand.gif"))?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn push(&mut self, year: &Year, params: &ForestParams) {
        let i = self.pushed;
        self.pushed += 1;
        if !i.is_multiple_of(self.stride) {
            return;
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
                return;
            }
        }
        self.frames.push(self.draw(year, params));
        self.years.push(year.year);
    }

    /// One frame of palette indices.
    fn draw(&self, year: &Year, params: &ForestParams) -> Vec<u8> {
        let (w, h) = (self.width, self.height);
        let mut px = vec![BACKGROUND; w * h];
        let t = year.trees;
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
        self.label(&mut px, year.year);
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

    /// The year in the top-left corner, dark digits on a light box.
    fn label(&self, px: &mut [u8], year: u32) {
        let digits: Vec<usize> = year
            .to_string()
            .bytes()
            .map(|b| usize::from(b - b'0'))
            .collect();
        let (pad, glyph_w) = (FONT_SCALE, 4 * FONT_SCALE);
        let box_w = 2 * pad + digits.len() * glyph_w - FONT_SCALE;
        let box_h = 2 * pad + 5 * FONT_SCALE;
        let origin = 4i64;
        for y in 0..box_h as i64 {
            for x in 0..box_w as i64 {
                self.set(px, origin + x, origin + y, LABEL_BOX);
            }
        }
        for (k, &d) in digits.iter().enumerate() {
            let gx = origin + (pad + k * glyph_w) as i64;
            for (row, bits) in DIGITS[d % 10].iter().enumerate() {
                for col in 0..3 {
                    if bits & (4 >> col) == 0 {
                        continue;
                    }
                    for sy in 0..FONT_SCALE {
                        for sx in 0..FONT_SCALE {
                            let x = gx + (col * FONT_SCALE + sx) as i64;
                            let y = origin + (pad + row * FONT_SCALE + sy) as i64;
                            self.set(px, x, y, INK);
                        }
                    }
                }
            }
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
