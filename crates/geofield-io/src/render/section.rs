//! A vertical cross-section of a layered model, as in a stratigraphy figure.
//!
//! A [`Section`] holds H surfaces (e.g. kriged stratum tops along one grid row), ordered top to
//! bottom, each sampled at the same increasing distances along the section. Between two sampled
//! distances a surface is interpolated linearly; a NaN value leaves a gap: a segment is drawn
//! and filled only where both of its ends are known.
//!
//! Layer i, between surface i and surface i + 1, is filled with [`layer_colour`]`(i)` wherever
//! surface i lies above surface i + 1 (where they meet or cross the layer has pinched out and
//! nothing is filled), and named "`<name i> – <name i+1>`" in the legend. Surfaces are drawn as
//! dark lines over the fill, wells as thin dashed vertical lines labelled above the plot with
//! their name and their distance from the section line ("35 m off").
//!
//! Scale: the distance range fills the plot width, which fixes the horizontal scale
//! `s_x = width_px / (d_max - d_min)` in pixels per metre. The vertical scale is
//! `s_z = VE * s_x`, where the vertical exaggeration VE is the largest of 1, 2, 2.5 or 5 times a
//! power of ten for which the surfaces' elevation range `Δz` takes at most 85 % of the plot
//! height: `VE <= 0.85 * height_px / (Δz * s_x)`. The layers thus fill between about 40 % and
//! 85 % of the plot height whatever the aspect of the section, and the subtitle states the
//! exaggeration ("vertical exaggeration 20x"). Flat surfaces (`Δz = 0`) are drawn at VE = 1.

use std::path::Path;

use super::chart::{fmt_tick, line};
use super::colormap::blend_hue;
use super::sample::{multiples, tick_step};
use super::text::{Canvas, GLYPH_PX, fit_text, text_width};
use crate::IoError;

/// A vertical cross-section through a layered model.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Section {
    /// Title at the top of the image.
    pub title: String,
    /// Horizontal axis label, e.g. "distance along row 45 (m)".
    pub x_label: String,
    /// Vertical axis label, e.g. "elevation (m)".
    pub y_label: String,
    /// Distance along the section of each column, in metres, finite and strictly increasing.
    pub distance_m: Vec<f64>,
    /// H surfaces ordered top to bottom, each with one elevation (m) per column; NaN marks a
    /// missing value, which is not drawn.
    pub surfaces: Vec<Vec<f64>>,
    /// The H surface names (a missing name is shown as "surface `<i + 1>`").
    pub names: Vec<String>,
    /// Wells near the section. Wells outside the distance range are not drawn.
    pub wells: Vec<SectionWell>,
}

/// A well drawn on a [`Section`]: where it projects onto the section, and how far from the
/// section line it lies.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SectionWell {
    /// Label, e.g. the well's id.
    pub name: String,
    /// Distance along the section of the well's projection onto it (m).
    pub along_m: f64,
    /// Distance of the well from the section line (m, >= 0), stated under its label
    /// ("35 m off"); NaN leaves it unstated.
    pub offset_m: f64,
}

/// Plot area size in pixels.
const PLOT_W: usize = 640;
const PLOT_H: usize = 380;
/// Room left of the plot (tick labels), above it (title, subtitle, axis label, well labels)
/// and below it (tick labels, axis label).
const LEFT: usize = 84;
const TOP: usize = 118;
/// Height of one tier of well labels (name and offset lines); two tiers above the plot.
const WELL_TIER_PX: usize = 24;
const BOTTOM: usize = 56;
const RIGHT: usize = 16;
/// Between the plot and the legend.
const GAP: usize = 24;
const SWATCH: usize = 14;
const LEGEND_ROW: usize = 20;
/// Largest share of the plot height the surfaces may take.
const DATA_FILL: f64 = 0.85;
/// Bound on the vertical exaggeration (nearly flat surfaces).
const MAX_EXAGGERATION: f64 = 1e6;
/// Longest legend or well label, in characters.
const MAX_LABEL_CHARS: usize = 40;
const MAX_WELL_LABEL_CHARS: usize = 16;
/// Dash length of a well line, in pixels.
const DASH_PX: usize = 5;
const BACKGROUND: [u8; 3] = [255, 255, 255];
const INK: [u8; 3] = [30, 30, 30];
const SURFACE_LINE: [u8; 3] = [40, 40, 40];
const WELL_LINE: [u8; 3] = [90, 90, 90];

/// The fill colour of layer `i` (between surfaces i and i + 1): the blend hues
/// ([`super::BLEND_HUES`], Okabe–Ito first) mixed half with white, so that the dark surface
/// lines and labels stay readable on them. Cycles past the end of the palette.
pub fn layer_colour(i: usize) -> [u8; 3] {
    blend_hue(i).map(|c| 255 - (255 - c) / 2)
}

/// Draw `section` as an RGB PNG at `path` (written atomically). An error when a surface's
/// length differs from `distance_m`'s or the distances are not finite and strictly increasing;
/// degenerate sections (no columns, one column, one surface, flat or all-missing surfaces)
/// draw an image.
pub fn write_section_png(path: &Path, section: &Section) -> Result<(), IoError> {
    check(path, section)?;
    let (canvas, _) = draw(section);
    super::write_png(path, &canvas)
}

/// Reject sections that cannot be drawn as described.
fn check(path: &Path, s: &Section) -> Result<(), IoError> {
    let invalid = |reason: String| IoError::InvalidOutput {
        path: path.to_path_buf(),
        reason,
    };
    let mut previous = f64::NEG_INFINITY;
    for (k, &d) in s.distance_m.iter().enumerate() {
        if !d.is_finite() {
            return Err(invalid(format!(
                "section distance_m[{k}] is {d}; distances must be finite"
            )));
        }
        if d <= previous {
            return Err(invalid(format!(
                "section distances must increase, but distance_m[{k}] = {d} follows {previous}"
            )));
        }
        previous = d;
    }
    for (i, surface) in s.surfaces.iter().enumerate() {
        if surface.len() != s.distance_m.len() {
            return Err(invalid(format!(
                "section surface {i} ({:?}) has {} values but distance_m has {}",
                surface_name(s, i),
                surface.len(),
                s.distance_m.len()
            )));
        }
    }
    Ok(())
}

fn surface_name(s: &Section, i: usize) -> String {
    s.names
        .get(i)
        .cloned()
        .unwrap_or_else(|| format!("surface {}", i + 1))
}

/// The plot area on the canvas and the world window it shows.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Frame {
    /// Top-left pixel of the plot area and its size in pixels.
    left: f64,
    top: f64,
    width: f64,
    height: f64,
    /// Distance (m) at the left and right edges.
    x0: f64,
    x1: f64,
    /// Elevation (m) at the bottom and top edges.
    z0: f64,
    z1: f64,
    /// Vertical over horizontal scale.
    exaggeration: f64,
}

impl Frame {
    /// Fit the window to the section's distances and finite elevations.
    fn fit(s: &Section) -> Self {
        let (width, height) = (PLOT_W as f64, PLOT_H as f64);
        let (x0, x1) = match (s.distance_m.first(), s.distance_m.last()) {
            (Some(&a), Some(&b)) if b > a => (a, b),
            (Some(&a), _) => (a - 0.5, a + 0.5),
            _ => (0.0, 1.0),
        };
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for &z in s.surfaces.iter().flatten().filter(|z| z.is_finite()) {
            lo = lo.min(z);
            hi = hi.max(z);
        }
        if lo > hi {
            (lo, hi) = (0.0, 0.0);
        }
        let scale_x = width / (x1 - x0);
        let range = hi - lo;
        let limit = DATA_FILL * height / (range * scale_x);
        let exaggeration = if range > 0.0 && limit.is_finite() && limit > 0.0 {
            nice_floor(limit.min(MAX_EXAGGERATION))
        } else {
            1.0
        };
        let mut span = height / (exaggeration * scale_x);
        if !(span.is_finite() && span > 0.0) {
            span = if range > 0.0 { range / DATA_FILL } else { 1.0 };
        }
        let mid = 0.5 * (lo + hi);
        Self {
            left: LEFT as f64,
            top: TOP as f64,
            width,
            height,
            x0,
            x1,
            z0: mid - 0.5 * span,
            z1: mid + 0.5 * span,
            exaggeration,
        }
    }

    /// Canvas x of distance `d` (continuous; pixel column `floor(x)`).
    fn px(&self, d: f64) -> f64 {
        self.left + (d - self.x0) / (self.x1 - self.x0) * self.width
    }

    /// Canvas y of elevation `z` (continuous; pixel row `floor(y)`).
    fn py(&self, z: f64) -> f64 {
        self.top + (self.z1 - z) / (self.z1 - self.z0) * self.height
    }

    /// Distance at the centre of plot pixel column `i`.
    fn distance_at(&self, i: usize) -> f64 {
        self.x0 + (i as f64 + 0.5) / self.width * (self.x1 - self.x0)
    }

    /// Elevation at the centre of plot pixel row `j`.
    fn elevation_at(&self, j: usize) -> f64 {
        self.z1 - (j as f64 + 0.5) / self.height * (self.z1 - self.z0)
    }
}

/// The largest of 1, 2, 2.5 or 5 times a power of ten that is at most `v` (> 0, finite).
fn nice_floor(v: f64) -> f64 {
    let k = v.log10().floor() as i32;
    let base = 10f64.powi(k);
    for m in [5.0, 2.5, 2.0, 1.0] {
        // The slack keeps exact nice values (20 computed as 19.999...) from dropping a step.
        if m * base <= v * (1.0 + 1e-12) {
            return m * base;
        }
    }
    0.5 * base
}

/// "20", "2.5", "0.05": the exaggeration with the digits a nice number needs.
fn format_exaggeration(v: f64) -> String {
    let k = v.log10().floor() as i32;
    let mantissa = v / 10f64.powi(k);
    let extra = i32::from((mantissa - mantissa.round()).abs() > 1e-6);
    let decimals = (extra - k).max(0) as usize;
    format!("{v:.decimals$}")
}

/// "35 m off", "1.2 km off", "0.5 m off": a well's distance from the section line.
fn format_offset(m: f64) -> String {
    let m = m.abs();
    if m >= 1000.0 {
        format!("{:.1} km off", m / 1000.0)
    } else if m >= 10.0 || m == 0.0 {
        format!("{m:.0} m off")
    } else {
        format!("{m:.1} m off")
    }
}

/// `values` (one per distance) at distance `d`, linear between columns; NaN where either
/// neighbouring column is missing.
fn interpolate(distance: &[f64], values: &[f64], d: f64) -> f64 {
    let n = distance.len().min(values.len());
    if n == 0 {
        return f64::NAN;
    }
    if n == 1 {
        return values[0];
    }
    let upper = distance[..n].partition_point(|&x| x <= d).clamp(1, n - 1);
    let (da, db) = (distance[upper - 1], distance[upper]);
    let (va, vb) = (values[upper - 1], values[upper]);
    let t = ((d - da) / (db - da)).clamp(0.0, 1.0);
    // At a column itself its own value counts, whatever its neighbour holds.
    if t == 0.0 {
        va
    } else if t == 1.0 {
        vb
    } else {
        va + t * (vb - va)
    }
}

/// Draw the section; returns the canvas and the plot frame (for tests).
fn draw(s: &Section) -> (Canvas, Frame) {
    let frame = Frame::fit(s);
    let n_surfaces = s.surfaces.len();
    let legend: Vec<String> = (0..n_surfaces.saturating_sub(1))
        .map(|i| {
            let label = format!("{} \u{2013} {}", surface_name(s, i), surface_name(s, i + 1));
            fit_text(&label, 1, MAX_LABEL_CHARS * GLYPH_PX)
        })
        .collect();
    let legend_w = legend
        .iter()
        .map(|l| SWATCH + 6 + text_width(l, 1))
        .max()
        .unwrap_or(0);
    let title = fit_text(&s.title, 2, (PLOT_W + legend_w).max(PLOT_W));
    let width = (LEFT + PLOT_W + GAP + legend_w + RIGHT).max(LEFT + text_width(&title, 2) + RIGHT);
    let height = (TOP + PLOT_H + BOTTOM).max(TOP + legend.len() * LEGEND_ROW + RIGHT);
    let mut canvas = Canvas::new(width, height, BACKGROUND);

    // Layers: each plot pixel takes the colour of the first layer whose top is at or above and
    // whose bottom is below its centre.
    for i in 0..PLOT_W {
        let d = frame.distance_at(i);
        let z: Vec<f64> = s
            .surfaces
            .iter()
            .map(|surface| interpolate(&s.distance_m, surface, d))
            .collect();
        for j in 0..PLOT_H {
            let zc = frame.elevation_at(j);
            // NaN ends make both comparisons false: gaps stay unfilled.
            let layer = z.windows(2).position(|w| zc <= w[0] && zc > w[1]);
            if let Some(k) = layer {
                canvas.set((LEFT + i) as i64, (TOP + j) as i64, layer_colour(k));
            }
        }
    }
    // Surfaces over the fill.
    for surface in &s.surfaces {
        let columns = s.distance_m.iter().zip(surface);
        if let ([d], [z]) = (s.distance_m.as_slice(), surface.as_slice()) {
            if z.is_finite() {
                let y = frame.py(*z);
                line(
                    &mut canvas,
                    (frame.px(d - 0.5), y),
                    (frame.px(d + 0.5), y),
                    SURFACE_LINE,
                );
            }
            continue;
        }
        let points: Vec<(f64, f64)> = columns.map(|(&d, &z)| (d, z)).collect();
        for w in points.windows(2) {
            let ((da, za), (db, zb)) = (w[0], w[1]);
            if za.is_finite() && zb.is_finite() {
                let a = (frame.px(da), frame.py(za));
                let b = (frame.px(db), frame.py(zb));
                line(&mut canvas, a, b, SURFACE_LINE);
            }
        }
    }
    // Wells: dashed lines with their labels above the plot.
    // Labels go in the lower tier unless they would overlap the previous label there, then in
    // the upper one (then back to the lower one, whatever the overlap).
    let mut wells: Vec<&SectionWell> = s
        .wells
        .iter()
        .filter(|w| w.along_m.is_finite() && w.along_m >= frame.x0 && w.along_m <= frame.x1)
        .collect();
    wells.sort_by(|a, b| a.along_m.total_cmp(&b.along_m));
    let mut tier_right = [i64::MIN; 2];
    for well in wells {
        let x =
            (frame.px(well.along_m).floor() as i64).clamp(LEFT as i64, (LEFT + PLOT_W - 1) as i64);
        for j in (0..PLOT_H).filter(|j| (j / DASH_PX).is_multiple_of(2)) {
            canvas.set(x, (TOP + j) as i64, WELL_LINE);
        }
        let label = fit_text(&well.name, 1, MAX_WELL_LABEL_CHARS * GLYPH_PX);
        let off = if well.offset_m.is_finite() {
            format_offset(well.offset_m)
        } else {
            String::new()
        };
        let half = (text_width(&label, 1).max(text_width(&off, 1)) / 2) as i64;
        let tier = tier_right
            .iter()
            .position(|&right| right + 6 <= x - half)
            .unwrap_or(0);
        tier_right[tier] = x + half;
        let base = (TOP - WELL_TIER_PX * (tier + 1)) as i64;
        let lx = x - (text_width(&label, 1) / 2) as i64;
        canvas.text(lx, base, &label, 1, INK);
        let ox = x - (text_width(&off, 1) / 2) as i64;
        canvas.text(ox, base + 12, &off, 1, WELL_LINE);
    }
    canvas.outline_rect(LEFT as i64, TOP as i64, PLOT_W, PLOT_H, INK);

    // Axes.
    let step = tick_step(frame.x0, frame.x1);
    for v in multiples(frame.x0, frame.x1, step) {
        let x = frame.px(v).floor() as i64;
        canvas.fill_rect(x, (TOP + PLOT_H) as i64, 1, 5, INK);
        let label = fmt_tick(v, step);
        let lx = x - (text_width(&label, 1) / 2) as i64;
        canvas.text(lx, (TOP + PLOT_H + 9) as i64, &label, 1, INK);
    }
    let step = tick_step(frame.z0, frame.z1);
    for v in multiples(frame.z0, frame.z1, step) {
        let y = frame.py(v).floor() as i64;
        canvas.fill_rect(LEFT as i64 - 6, y, 5, 1, INK);
        let label = fmt_tick(v, step);
        let lx = LEFT as i64 - 10 - text_width(&label, 1) as i64;
        canvas.text(lx, y - (GLYPH_PX / 2) as i64, &label, 1, INK);
    }
    let x_label = fit_text(&s.x_label, 1, PLOT_W);
    let lx = LEFT + PLOT_W.saturating_sub(text_width(&x_label, 1)) / 2;
    canvas.text(lx as i64, (TOP + PLOT_H + 30) as i64, &x_label, 1, INK);
    let y_label = fit_text(&s.y_label, 1, width.saturating_sub(16));
    canvas.text(8, 54, &y_label, 1, INK);

    // Title, subtitle, legend.
    canvas.text(LEFT as i64, 10, &title, 2, INK);
    let mut subtitle = format!(
        "vertical exaggeration {}x",
        format_exaggeration(frame.exaggeration)
    );
    if s.wells.iter().any(|w| w.offset_m.is_finite()) {
        subtitle.push_str("; wells: name and distance off the section");
    }
    canvas.text(LEFT as i64, 10 + 2 * GLYPH_PX as i64 + 8, &subtitle, 1, INK);
    let legend_x = (LEFT + PLOT_W + GAP) as i64;
    for (k, label) in legend.iter().enumerate() {
        let y = (TOP + k * LEGEND_ROW) as i64;
        canvas.fill_rect(legend_x, y, SWATCH, SWATCH, layer_colour(k));
        canvas.outline_rect(legend_x, y, SWATCH, SWATCH, INK);
        canvas.text(legend_x + (SWATCH + 6) as i64, y + 3, label, 1, INK);
    }
    (canvas, frame)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three surfaces over 1 km: a gently dipping top at about 100 m, a flat surface at 80 m
    /// and a base at 20 m; two wells.
    fn three_layers() -> Section {
        let distance_m: Vec<f64> = (0..11).map(|k| f64::from(k) * 100.0).collect();
        Section {
            title: "Section".into(),
            x_label: "distance along row 45 (m)".into(),
            y_label: "elevation (m)".into(),
            surfaces: vec![
                distance_m.iter().map(|d| 105.0 - d * 0.01).collect(),
                vec![80.0; 11],
                vec![20.0; 11],
            ],
            distance_m,
            names: vec!["top".into(), "middle".into(), "base".into()],
            wells: vec![
                SectionWell {
                    name: "W1".into(),
                    along_m: 250.0,
                    offset_m: 35.0,
                },
                SectionWell {
                    name: "far".into(),
                    along_m: 2000.0,
                    offset_m: 0.0,
                },
            ],
        }
    }

    /// The canvas pixel holding (distance, elevation).
    fn pixel(c: &Canvas, f: &Frame, d: f64, z: f64) -> [u8; 3] {
        c.get(f.px(d).floor() as usize, f.py(z).floor() as usize)
    }

    #[test]
    fn layers_are_filled_with_their_colours() {
        let s = three_layers();
        let (c, f) = draw(&s);
        for d in [50.0, 500.0, 950.0] {
            let top = 105.0 - d * 0.01;
            assert_eq!(pixel(&c, &f, d, (top + 80.0) / 2.0), layer_colour(0), "{d}");
            assert_eq!(pixel(&c, &f, d, 50.0), layer_colour(1), "{d}");
            assert_eq!(pixel(&c, &f, d, top + 8.0), BACKGROUND, "{d}");
            assert_eq!(pixel(&c, &f, d, 12.0), BACKGROUND, "{d}");
        }
        // The surfaces are dark lines (drawn at the rounded position).
        let (x, y) = (f.px(500.0).round() as usize, f.py(80.0).round() as usize);
        assert_eq!(c.get(x, y), SURFACE_LINE);
        // The well at 250 m is a dashed line; the one beyond the section is not drawn.
        let x = f.px(250.0).floor() as usize;
        let on = (0..PLOT_H)
            .filter(|j| c.get(x, TOP + j) == WELL_LINE)
            .count();
        assert!((PLOT_H / 3..PLOT_H * 2 / 3).contains(&on), "{on}");
        assert_ne!(layer_colour(0), layer_colour(1));
    }

    #[test]
    fn wells_state_their_distance_from_the_section() {
        assert_eq!(format_offset(35.2), "35 m off");
        assert_eq!(format_offset(-4.25), "4.2 m off");
        assert_eq!(format_offset(1530.0), "1.5 km off");
        let s = three_layers();
        let (c, f) = draw(&s);
        let x = f.px(250.0).floor() as i64;
        // The offset line ("35 m off", 8 characters, centred on the well) is written in the
        // well colour in the row above the plot; the name ("W1") in ink above it.
        let half = (8 * GLYPH_PX / 2) as i64;
        let in_row = |top: usize, rgb: [u8; 3]| {
            (top..top + GLYPH_PX)
                .flat_map(|y| (x - half..x + half).map(move |x| (x as usize, y)))
                .filter(|&(x, y)| c.get(x, y) == rgb)
                .count()
        };
        assert!(in_row(TOP - 12, WELL_LINE) > 20, "offset text");
        assert!(in_row(TOP - 24, INK) > 8, "name");
        // Without a known offset, only the name.
        let mut s = three_layers();
        s.wells[0].offset_m = f64::NAN;
        let (c2, _) = draw(&s);
        let offset_px = (TOP - 12..TOP - 4)
            .flat_map(|y| (x - half..x + half).map(move |x| (x as usize, y)))
            .filter(|&(x, y)| c2.get(x, y) == WELL_LINE)
            .count();
        assert_eq!(offset_px, 0);
        // A second well 10 m further on would overlap W1's label: its label goes a tier up.
        let mut s = three_layers();
        s.wells[1] = SectionWell {
            name: "W2".into(),
            along_m: 260.0,
            offset_m: 5.0,
        };
        let (c3, _) = draw(&s);
        let ink_in = |top: usize, x: i64| {
            (top..top + GLYPH_PX)
                .flat_map(|y| (x - 8..x + 8).map(move |x| (x as usize, y)))
                .filter(|&(x, y)| c3.get(x, y) == INK)
                .count()
        };
        let x2 = f.px(260.0).floor() as i64;
        assert!(ink_in(TOP - 24, x) > 8, "W1 in the lower tier");
        assert!(ink_in(TOP - 48, x2) > 8, "W2 in the upper tier");
        assert_eq!(ink_in(TOP - 48, x - 30), 0);
    }

    #[test]
    fn exaggeration_is_a_nice_number_that_fits_the_layers() {
        let s = three_layers();
        let f = Frame::fit(&s);
        // 1000 m over 640 px, 85 m of relief in at most 0.85 * 380 px: VE <= 5.94.
        assert_eq!(f.exaggeration, 5.0);
        let scale_x = f.width / (f.x1 - f.x0);
        let scale_z = f.height / (f.z1 - f.z0);
        assert!((scale_z / scale_x - f.exaggeration).abs() < 1e-9);
        let share = 85.0 * scale_z / f.height;
        assert!((0.4..=DATA_FILL).contains(&share), "{share}");
        // Thin layers over a long section get a large exaggeration.
        let long = Section {
            distance_m: vec![0.0, 50_000.0],
            surfaces: vec![vec![10.0, 12.0], vec![0.0, 1.0]],
            ..Default::default()
        };
        // 50 km over 640 px, 12 m of relief: VE <= 2102.
        assert_eq!(Frame::fit(&long).exaggeration, 2000.0);
        assert_eq!(format_exaggeration(200.0), "200");
        assert_eq!(format_exaggeration(2.5), "2.5");
        assert_eq!(format_exaggeration(0.25), "0.25");
        assert_eq!(format_exaggeration(0.5), "0.5");
        assert_eq!(nice_floor(19.999999999999996), 20.0);
        assert_eq!(nice_floor(4.9), 2.5);
        assert!((nice_floor(0.09) - 0.05).abs() < 1e-15);
    }

    #[test]
    fn gaps_leave_layers_unfilled() {
        let mut s = three_layers();
        s.surfaces[1][5] = f64::NAN;
        let (c, f) = draw(&s);
        // Around 500 m the middle surface is missing: neither layer touching it is filled.
        for d in [450.0, 500.0, 550.0] {
            assert_eq!(pixel(&c, &f, d, 90.0), BACKGROUND, "{d}");
            assert_eq!(pixel(&c, &f, d, 50.0), BACKGROUND, "{d}");
        }
        // Beyond the neighbouring columns the layers are back.
        assert_eq!(pixel(&c, &f, 350.0, 50.0), layer_colour(1));
        assert_eq!(pixel(&c, &f, 650.0, 90.0), layer_colour(0));
    }

    #[test]
    fn interpolation_between_columns() {
        let d = [0.0, 10.0, 30.0];
        let v = [1.0, 2.0, f64::NAN];
        assert_eq!(interpolate(&d, &v, 5.0), 1.5);
        assert_eq!(interpolate(&d, &v, 0.0), 1.0);
        assert_eq!(interpolate(&d, &v, 10.0), 2.0);
        assert!(interpolate(&d, &v, 20.0).is_nan());
        assert_eq!(interpolate(&[3.0], &[7.0], 100.0), 7.0);
        assert!(interpolate(&[], &[], 0.0).is_nan());
    }
}
