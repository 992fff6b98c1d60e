//! A map of the wind at one height above the ground: speed in colour over hillshaded terrain,
//! arrows for the direction, stations marked and labelled with their ids, in the map frame of
//! [`super::render_png`] (axes in metres, scale bar, north arrow). A small grid is enlarged to
//! about 600 pixels across so that the map, not the margins, fills the image.
//!
//! - Hillshade: Horn's (1981) slopes on the display grid, sun from the north-west (azimuth
//!   315°) at 45° altitude, as GIS tools draw it: shade = cos Z cos S + sin Z sin S cos(A − φ)
//!   with zenith Z, slope S, sun azimuth A and aspect φ. The speed colour is multiplied by
//!   0.4 + 0.6 shade / cos Z (clamped to [0.4, 1.25]), so flat ground shows the colour map's
//!   own colour, sunlit slopes lighter and slopes in the shade darker.
//! - Arrows: on a regular lattice of display pixels, pointing where the wind blows to, their
//!   length proportional to the speed (the largest speed fills most of a lattice cell). The
//!   direction at an arrow is the block mean of the (u, v) vectors it covers.
//! - Large grids are reduced by block means like [`super::render_png`].

use std::path::Path;

use geofield_core::GridSpec;

use super::axes::{BOTTOM_ROOM, MapGeometry, draw_map_frame, left_room};
use super::chart::line;
use super::colormap::Colormap;
use super::layout::{
    BACKGROUND, GAP, INK, MARGIN, MAX_LABEL_CHARS, MIN_BAR_HEIGHT, TITLE_SCALE, bar_block_width,
    draw_bar, draw_markers, draw_title, title_height,
};
use super::sample::{Resample, ValueScale, block_mean};
use super::text::{Canvas, GLYPH_PX, fit_text, text_width};
use super::{Scale, write_png};
use crate::IoError;

/// What to draw: values per cell of `grid`, `rows * cols`, row 0 north.
#[derive(Debug, Clone, PartialEq)]
pub struct WindMap<'a> {
    pub title: String,
    pub grid: GridSpec,
    /// Ground elevation (m), for the hillshade.
    pub terrain_m: &'a [f64],
    /// Horizontal wind speed (m s-1).
    pub speed_m_per_s: &'a [f64],
    /// Meteorological direction: where the wind comes from, degrees clockwise from north.
    pub direction_deg: &'a [f64],
    /// Points (x, y) in world metres to mark, e.g. the stations.
    pub markers: Vec<(f64, f64)>,
    /// A label written beside each marker (e.g. the station id); same length as `markers`, or
    /// empty for none.
    pub marker_labels: Vec<String>,
    pub colormap: Colormap,
    /// Upper bound on map pixels.
    pub max_pixels: usize,
}

const ARROW: [u8; 3] = [15, 15, 15];
const MISSING: [u8; 3] = [211, 211, 211];
/// A small grid is enlarged to about this many pixels on its longer side, so that the arrows,
/// station labels and map frame have room.
const WIND_MIN_PANEL_PX: usize = 600;
/// Units of the speed colour bar.
const SPEED_UNITS: &str = "speed (m s-1)";
/// Arrow lattice spacing in display pixels.
const ARROW_SPACING_PX: usize = 28;
const SUN_AZIMUTH_DEG: f64 = 315.0;
const SUN_ALTITUDE_DEG: f64 = 45.0;

/// Render the map to a PNG at `path` (written atomically).
pub fn write_wind_png(path: &Path, map: &WindMap) -> Result<(), IoError> {
    let (rows, cols) = (map.grid.rows, map.grid.cols);
    let n = rows * cols;
    if n == 0
        || map.terrain_m.len() != n
        || map.speed_m_per_s.len() != n
        || map.direction_deg.len() != n
    {
        return Err(IoError::InvalidOutput {
            path: path.to_path_buf(),
            reason: format!(
                "a {cols} x {rows} wind map needs {n} values per layer, got terrain {}, speed {}, \
                 direction {}",
                map.terrain_m.len(),
                map.speed_m_per_s.len(),
                map.direction_deg.len()
            ),
        });
    }
    let plan = Resample::plan_at_least(rows, cols, 1, map.max_pixels.max(1), WIND_MIN_PANEL_PX);
    let (mut u, mut v) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for (&s, &d) in map.speed_m_per_s.iter().zip(map.direction_deg) {
        let t = d.to_radians();
        u.push(-s * t.sin());
        v.push(-s * t.cos());
    }
    let speed = block_mean(map.speed_m_per_s, cols, plan.block, None);
    let terrain = block_mean(map.terrain_m, cols, plan.block, None);
    let (u, v) = (
        block_mean(&u, cols, plan.block, None),
        block_mean(&v, cols, plan.block, None),
    );
    let cell = map.grid.cell_size_m * plan.block as f64;
    let shade = hillshade(&terrain, plan.cols, plan.rows, cell);
    // The colours span the speeds present (not from 0), so speed-ups and sheltering show.
    let scale = ValueScale::fit(speed.iter().copied(), Scale::Linear);
    let max_speed = speed
        .iter()
        .copied()
        .filter(|s| s.is_finite())
        .fold(0.0, f64::max);

    let (pw, ph) = plan.panel_px();
    let geo = MapGeometry::new(&map.grid, &plan);
    let left = left_room(&geo, ph);
    let ticks = scale.ticks();
    let bar_w = bar_block_width(&ticks).max(text_width(SPEED_UNITS, 1));
    let title_h = title_height(&map.title);
    let note = fit_text(
        &format!("arrows: where the wind blows to; longest = {max_speed:.2} m s-1"),
        1,
        left + pw + 2 * GAP + bar_w,
    );
    let width = (2 * MARGIN + left + pw + 2 * GAP + bar_w)
        .max(2 * MARGIN + text_width(&map.title, TITLE_SCALE).min(MAX_LABEL_CHARS * 16));
    let height =
        2 * MARGIN + title_h + (ph + BOTTOM_ROOM).max(GLYPH_PX + 8 + MIN_BAR_HEIGHT) + GLYPH_PX + 8;
    let mut canvas = Canvas::new(width, height, BACKGROUND);
    draw_title(&mut canvas, &map.title);
    let (x0, y0) = (MARGIN + left, MARGIN + title_h);
    let zoom = plan.zoom.max(1);
    let cos_z = (90.0 - SUN_ALTITUDE_DEG).to_radians().cos();
    for py in 0..ph {
        for px in 0..pw {
            let k = (py / zoom) * plan.cols + px / zoom;
            let s = speed.get(k).copied().unwrap_or(f64::NAN);
            let rgb = if s.is_finite() {
                let base = map.colormap.rgb(scale.unit(s));
                let f = shade
                    .get(k)
                    .map_or(1.0, |h| (0.4 + 0.6 * h / cos_z).clamp(0.4, 1.25));
                base.map(|c| (c as f64 * f).round().clamp(0.0, 255.0) as u8)
            } else {
                MISSING
            };
            canvas.set((x0 + px) as i64, (y0 + py) as i64, rgb);
        }
    }
    draw_arrows(&mut canvas, (x0, y0), &plan, &u, &v, max_speed);
    let placed: Vec<(Option<(f64, f64)>, &str)> = map
        .markers
        .iter()
        .enumerate()
        .map(|(i, &(x, y))| {
            let label = map.marker_labels.get(i).map_or("", String::as_str);
            (plan.panel_position(&map.grid, x, y), label)
        })
        .collect();
    let markers: Vec<(f64, f64)> = placed.iter().filter_map(|(p, _)| *p).collect();
    draw_markers(&mut canvas, x0, y0, &plan, &markers);
    for (p, label) in &placed {
        if let (Some((mx, my)), false) = (p, label.is_empty()) {
            draw_marker_label(&mut canvas, (x0, y0), (pw, ph), (*mx, *my), label);
        }
    }
    canvas.outline_rect(x0 as i64, y0 as i64, pw, ph, [150, 150, 150]);
    draw_map_frame(&mut canvas, (x0, y0), (pw, ph), &geo);
    canvas.text(
        MARGIN as i64,
        (y0 + ph + BOTTOM_ROOM + 6) as i64,
        &note,
        1,
        INK,
    );
    let bar_x = x0 + pw + 2 * GAP;
    canvas.text(bar_x as i64, y0 as i64, SPEED_UNITS, 1, INK);
    let bar_h = ph.saturating_sub(GLYPH_PX + 8).max(MIN_BAR_HEIGHT);
    draw_bar(&mut canvas, bar_x, y0 + GLYPH_PX + 8, bar_h, &ticks, |t| {
        map.colormap.rgb(t)
    });
    write_png(path, &canvas)
}

/// Write `label` on a white box to the right of the marker at panel position `(mx, my)` (left of
/// it near the east edge), inside the `pw` x `ph` panel at (x0, y0).
fn draw_marker_label(
    canvas: &mut Canvas,
    (x0, y0): (usize, usize),
    (pw, ph): (usize, usize),
    (mx, my): (f64, f64),
    label: &str,
) {
    let label = fit_text(label, 1, MAX_MARKER_LABEL_CHARS * GLYPH_PX);
    let w = text_width(&label, 1) + 4;
    let h = GLYPH_PX + 4;
    let (mx, my) = (mx.floor() as i64, my.floor() as i64);
    let right = mx + 6;
    let lx = if right + w as i64 <= pw as i64 {
        right
    } else {
        mx - 6 - w as i64
    };
    let ly = (my - (h / 2) as i64).clamp(0, (ph.saturating_sub(h)) as i64);
    let (bx, by) = (x0 as i64 + lx, y0 as i64 + ly);
    canvas.fill_rect(bx, by, w, h, BACKGROUND);
    canvas.text(bx + 2, by + 2, &label, 1, INK);
}

/// Longest marker label drawn, in characters.
const MAX_MARKER_LABEL_CHARS: usize = 16;

/// Horn's hillshade of a `rows` x `cols` grid (row 0 north) of `cell_m` cells, in [0, 1]; edge
/// cells use their nearest neighbours inside the grid. NaN elevations count as flat.
fn hillshade(z: &[f64], cols: usize, rows: usize, cell_m: f64) -> Vec<f64> {
    let at = |r: i64, c: i64| -> f64 {
        let r = r.clamp(0, rows as i64 - 1) as usize;
        let c = c.clamp(0, cols as i64 - 1) as usize;
        z.get(r * cols + c)
            .copied()
            .filter(|h| h.is_finite())
            .unwrap_or(0.0)
    };
    let zenith = (90.0 - SUN_ALTITUDE_DEG).to_radians();
    // Math angle of the sun (counter-clockwise from east).
    let sun = (360.0 - SUN_AZIMUTH_DEG + 90.0)
        .rem_euclid(360.0)
        .to_radians();
    let mut out = Vec::with_capacity(rows * cols);
    for r in 0..rows as i64 {
        for c in 0..cols as i64 {
            let (a, b, cc) = (at(r - 1, c - 1), at(r - 1, c), at(r - 1, c + 1));
            let (d, f) = (at(r, c - 1), at(r, c + 1));
            let (g, h, i) = (at(r + 1, c - 1), at(r + 1, c), at(r + 1, c + 1));
            // dz/dx towards the east; dz/dy towards the south (rows grow southwards).
            let dzdx = ((cc + 2.0 * f + i) - (a + 2.0 * d + g)) / (8.0 * cell_m);
            let dzdy = ((g + 2.0 * h + i) - (a + 2.0 * b + cc)) / (8.0 * cell_m);
            let slope = dzdx.hypot(dzdy).atan();
            let aspect = dzdy.atan2(-dzdx);
            let s = zenith.cos() * slope.cos() + zenith.sin() * slope.sin() * (sun - aspect).cos();
            out.push(s.max(0.0));
        }
    }
    out
}

/// Arrows on a lattice of display pixels, from the block-mean (u, v) under each lattice point.
fn draw_arrows(
    canvas: &mut Canvas,
    (x0, y0): (usize, usize),
    plan: &Resample,
    u: &[f64],
    v: &[f64],
    max_speed: f64,
) {
    if max_speed <= 0.0 || !max_speed.is_finite() {
        return;
    }
    let (pw, ph) = plan.panel_px();
    let zoom = plan.zoom.max(1);
    let step = ARROW_SPACING_PX.min(pw.max(ph).max(8) / 2).max(8);
    let full = 0.85 * step as f64;
    let mut py = step / 2;
    while py < ph {
        let mut px = step / 2;
        while px < pw {
            let k = (py / zoom) * plan.cols + px / zoom;
            let (Some(&du), Some(&dv)) = (u.get(k), v.get(k)) else {
                px += step;
                continue;
            };
            let s = du.hypot(dv);
            if s.is_finite() && s > 0.0 {
                let len = (full * s / max_speed).max(4.0);
                // Screen y grows southwards: the arrow goes (u, -v).
                let (ex, ey) = (du / s, -dv / s);
                let (cx, cy) = ((x0 + px) as f64, (y0 + py) as f64);
                let tail = (cx - 0.5 * len * ex, cy - 0.5 * len * ey);
                let tip = (cx + 0.5 * len * ex, cy + 0.5 * len * ey);
                line(canvas, tail, tip, ARROW);
                let head = (0.35 * len).clamp(3.0, 7.0);
                for turn in [150f64, -150.0] {
                    let (sn, cs) = turn.to_radians().sin_cos();
                    let (hx, hy) = (ex * cs - ey * sn, ex * sn + ey * cs);
                    line(canvas, tip, (tip.0 + head * hx, tip.1 + head * hy), ARROW);
                }
            }
            px += step;
        }
        py += step;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn hillshade_lights_north_west_slopes() {
        // A plane rising to the east faces west, towards the north-west sun: lighter than flat
        // ground; one rising to the west faces east: darker.
        let (cols, rows) = (5, 5);
        let rising_east: Vec<f64> = (0..25).map(|i| (i % cols) as f64 * 10.0).collect();
        let rising_west: Vec<f64> = (0..25).map(|i| (4 - i % cols) as f64 * 10.0).collect();
        let flat = vec![7.0; 25];
        let (e, w, f) = (
            hillshade(&rising_east, cols, rows, 10.0),
            hillshade(&rising_west, cols, rows, 10.0),
            hillshade(&flat, cols, rows, 10.0),
        );
        assert!((f[12] - 45f64.to_radians().cos()).abs() < 1e-12);
        assert!(
            e[12] > f[12] && w[12] < f[12],
            "{} {} {}",
            e[12],
            f[12],
            w[12]
        );
    }
}
