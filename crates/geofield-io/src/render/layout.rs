//! Placing panels, titles, the colour bar and the legend on the canvas.

use super::RenderOptions;
use super::axes::{BOTTOM_ROOM, MapGeometry, draw_map_frame, left_room};
use super::colormap::blend_hue;
use super::sample::{Resample, ValueScale};
use super::text::{Canvas, GLYPH_PX, fit_text, text_width};

pub(super) const MARGIN: usize = 16;
pub(super) const GAP: usize = 16;
pub(super) const BACKGROUND: [u8; 3] = [255, 255, 255];
pub(super) const INK: [u8; 3] = [30, 30, 30];
const FRAME: [u8; 3] = [150, 150, 150];
/// Colour of NaN / nodata cells.
pub(crate) const MISSING: [u8; 3] = [211, 211, 211];
const BAR_WIDTH: usize = 18;
pub(super) const MIN_BAR_HEIGHT: usize = 120;
pub(super) const TITLE_SCALE: usize = 2;
/// Longest title or label drawn, in characters, before it is shortened.
pub(super) const MAX_LABEL_CHARS: usize = 60;
/// Narrowest column given to a panel, so that its band name stays readable.
const MIN_COLUMN_PX: usize = 64;
/// Darkest end of the grey bar that shows the total in a blend.
const BLEND_BAR_DARK: [u8; 3] = [40, 40, 40];
/// Fill of a marker dot (see [`RenderOptions::markers`]).
pub const MARKER_FILL: [u8; 3] = [255, 255, 255];
/// Outline of a marker dot: dark, so that the white dot shows on light colours too.
pub const MARKER_OUTLINE: [u8; 3] = [20, 20, 20];
/// Squared pixel distances from a marker's centre pixel: up to the first the dot is filled, up
/// to the second outlined (a dot 7 px across, radius about 3 px, with a 1 px outline).
const MARKER_FILL_R2: i64 = 5;
const MARKER_OUTER_R2: i64 = 12;

/// Height of the title block (zero without a title).
pub(super) fn title_height(title: &str) -> usize {
    if title.is_empty() {
        0
    } else {
        GLYPH_PX * TITLE_SCALE + 12
    }
}

/// Draw the title centred at the top.
pub(super) fn draw_title(canvas: &mut Canvas, title: &str) {
    let title = fit_text(title, TITLE_SCALE, MAX_LABEL_CHARS * GLYPH_PX * TITLE_SCALE);
    let x = canvas.width.saturating_sub(text_width(&title, TITLE_SCALE)) / 2;
    canvas.text(x as i64, MARGIN as i64, &title, TITLE_SCALE, INK);
}

/// Draw one display grid as a `plan.panel_px()` panel at (x, y), each cell `zoom` pixels wide.
fn draw_grid(
    canvas: &mut Canvas,
    x: usize,
    y: usize,
    plan: &Resample,
    colour: impl Fn(usize) -> [u8; 3],
) {
    let (pw, ph) = plan.panel_px();
    let zoom = plan.zoom.max(1);
    for py in 0..ph {
        let row = py / zoom;
        for px in 0..pw {
            let rgb = colour(row * plan.cols + px / zoom);
            canvas.set((x + px) as i64, (y + py) as i64, rgb);
        }
    }
    canvas.outline_rect(x as i64, y as i64, pw, ph, FRAME);
}

/// Draw marker dots at `markers` (continuous panel pixel positions, see
/// `Resample::panel_position`) on the `plan.panel_px()` panel at (x, y), clipped to the panel.
pub(super) fn draw_markers(
    canvas: &mut Canvas,
    x: usize,
    y: usize,
    plan: &Resample,
    markers: &[(f64, f64)],
) {
    let (pw, ph) = plan.panel_px();
    let (pw, ph) = (pw as i64, ph as i64);
    if pw == 0 || ph == 0 {
        return;
    }
    for &(mx, my) in markers {
        // The pixel that holds the point; a point on the east or south edge belongs to the
        // last pixel.
        let cx = (mx.floor() as i64).clamp(0, pw - 1);
        let cy = (my.floor() as i64).clamp(0, ph - 1);
        for dy in -3..=3i64 {
            for dx in -3..=3i64 {
                let r2 = dx * dx + dy * dy;
                let (px, py) = (cx + dx, cy + dy);
                if r2 > MARKER_OUTER_R2 || px < 0 || py < 0 || px >= pw || py >= ph {
                    continue;
                }
                let rgb = if r2 <= MARKER_FILL_R2 {
                    MARKER_FILL
                } else {
                    MARKER_OUTLINE
                };
                canvas.set(x as i64 + px, y as i64 + py, rgb);
            }
        }
    }
}

/// A vertical bar with `ticks` (position in [0, 1], label) to its right; `colour(t)` for t from
/// 0 (bottom) to 1 (top).
pub(super) fn draw_bar(
    canvas: &mut Canvas,
    x: usize,
    y: usize,
    height: usize,
    ticks: &[(f64, String)],
    colour: impl Fn(f64) -> [u8; 3],
) {
    let span = height.saturating_sub(1).max(1) as f64;
    for dy in 0..height {
        let rgb = colour(1.0 - dy as f64 / span);
        canvas.fill_rect(x as i64, (y + dy) as i64, BAR_WIDTH, 1, rgb);
    }
    canvas.outline_rect(x as i64, y as i64, BAR_WIDTH, height, FRAME);
    for (t, label) in ticks {
        let ty = (y as f64 + (1.0 - t) * span).round() as i64;
        let tx = (x + BAR_WIDTH) as i64;
        canvas.fill_rect(tx, ty, 5, 1, INK);
        canvas.text(tx + 8, ty - (GLYPH_PX as i64) / 2, label, 1, INK);
    }
}

/// Width needed by a bar and its tick labels.
pub(super) fn bar_block_width(ticks: &[(f64, String)]) -> usize {
    let labels = ticks
        .iter()
        .map(|(_, l)| text_width(l, 1))
        .max()
        .unwrap_or(0);
    BAR_WIDTH + 8 + labels
}

/// Where [`draw_panels`] and [`draw_blend`] put things (for tests): the top-left pixel of each
/// map panel and each colour bar's (x, y, height).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Placed {
    pub(crate) panels: Vec<(usize, usize)>,
    pub(crate) bars: Vec<(usize, usize, usize)>,
}

/// The colour scale of each panel: one shared by all, or one per panel (see
/// [`choose_scales`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PanelScales {
    Shared(ValueScale),
    PerPanel(Vec<ValueScale>),
}

impl PanelScales {
    /// The scale of panel `i`.
    fn of(&self, i: usize) -> ValueScale {
        match self {
            PanelScales::Shared(s) => *s,
            PanelScales::PerPanel(v) => v
                .get(i)
                .copied()
                .unwrap_or(ValueScale::Linear { lo: 0.0, hi: 1.0 }),
        }
    }
}

/// Panels whose largest magnitudes differ by more than this factor get a colour scale each.
pub(crate) const PER_PANEL_RATIO: f64 = 10.0;

/// One shared scale when the bands' largest finite magnitudes (among those above zero) lie
/// within a factor [`PER_PANEL_RATIO`] of each other, else one scale per panel, so that a band
/// with small values is not drawn all in the bottom colour.
pub(crate) fn choose_scales(grids: &[Vec<f64>], scale: super::Scale) -> PanelScales {
    let peaks: Vec<f64> = grids
        .iter()
        .map(|g| {
            g.iter()
                .filter(|v| v.is_finite())
                .fold(0.0f64, |m, v| m.max(v.abs()))
        })
        .filter(|&p| p > 0.0)
        .collect();
    let hi = peaks.iter().copied().fold(0.0f64, f64::max);
    let lo = peaks.iter().copied().fold(f64::INFINITY, f64::min);
    if grids.len() > 1 && hi > PER_PANEL_RATIO * lo {
        PanelScales::PerPanel(
            grids
                .iter()
                .map(|g| ValueScale::fit(g.iter().copied(), scale))
                .collect(),
        )
    } else {
        PanelScales::Shared(ValueScale::fit(grids.iter().flatten().copied(), scale))
    }
}

/// Width of a colour bar block: the bar, its tick labels and the units above it.
fn bar_width(scale: &ValueScale, units: &str) -> usize {
    bar_block_width(&scale.ticks()).max(text_width(units, 1))
}

/// One panel per band in a near-square grid, each with its map frame (axes in metres, scale
/// bar, north arrow); one colour bar for a shared scale, else one beside each panel; `markers`
/// (panel pixel positions) drawn on every panel.
pub(crate) fn draw_panels(
    grids: &[Vec<f64>],
    names: &[String],
    plan: &Resample,
    geo: &MapGeometry,
    scales: &PanelScales,
    opts: &RenderOptions,
    markers: &[(f64, f64)],
) -> (Canvas, Placed) {
    let mut placed = Placed::default();
    let n = grids.len().max(1);
    let grid_cols = (n as f64).sqrt().ceil().max(1.0) as usize;
    let grid_rows = n.div_ceil(grid_cols);
    let (pw, ph) = plan.panel_px();
    let left = left_room(geo, ph);
    let column_w = pw.max(MIN_COLUMN_PX);
    // Band names large when they all fit their column, small otherwise.
    let fits = |scale: usize| names.iter().all(|n| text_width(n, scale) <= column_w);
    let label_scale = if fits(2) { 2 } else { 1 };
    let label_h = GLYPH_PX * label_scale + 6;
    let units = fit_text(&opts.units, 1, MAX_LABEL_CHARS * GLYPH_PX);
    let units_h = if units.is_empty() { 0 } else { GLYPH_PX + 8 };
    let per_panel = matches!(scales, PanelScales::PerPanel(_));
    // Per panel: the bar beside each panel, units above it, as tall as the panel.
    let panel_bar_w = if per_panel {
        (0..grids.len())
            .map(|i| bar_width(&scales.of(i), &units))
            .max()
            .unwrap_or(0)
    } else {
        0
    };
    let body_h = if per_panel {
        ph.max(units_h + MIN_BAR_HEIGHT)
    } else {
        ph
    };
    let cell_w = left + column_w + if per_panel { GAP + panel_bar_w } else { 0 };
    let cell_h = label_h + body_h + BOTTOM_ROOM;
    let grid_w = grid_cols * cell_w + (grid_cols - 1) * GAP;
    let grid_h = grid_rows * cell_h + (grid_rows - 1) * GAP;

    let shared_bar_w = if per_panel {
        0
    } else {
        bar_width(&scales.of(0), &units)
    };
    let bar_h = grid_h
        .saturating_sub(units_h + label_h + BOTTOM_ROOM)
        .max(MIN_BAR_HEIGHT);
    let title_h = title_height(&opts.title);
    let content_h = if per_panel {
        grid_h
    } else {
        grid_h.max(label_h + units_h + bar_h)
    };
    let side = if per_panel { 0 } else { 2 * GAP + shared_bar_w };
    let width = (2 * MARGIN + grid_w + side)
        .max(2 * MARGIN + text_width(&opts.title, TITLE_SCALE).min(MAX_LABEL_CHARS * 16));
    let height = 2 * MARGIN + title_h + content_h;
    let mut canvas = Canvas::new(width, height, BACKGROUND);
    draw_title(&mut canvas, &opts.title);

    let top = MARGIN + title_h;
    for (i, grid) in grids.iter().enumerate() {
        let cx = MARGIN + (i % grid_cols) * (cell_w + GAP);
        let x = cx + left;
        let y = top + (i / grid_cols) * (cell_h + GAP);
        let name = names.get(i).map_or("", String::as_str);
        let name = fit_text(name, label_scale, column_w);
        canvas.text(x as i64, y as i64, &name, label_scale, INK);
        let scale = scales.of(i);
        draw_grid(&mut canvas, x, y + label_h, plan, |k| match grid.get(k) {
            Some(v) if !v.is_nan() => opts.colormap.rgb(scale.unit(*v)),
            _ => MISSING,
        });
        draw_markers(&mut canvas, x, y + label_h, plan, markers);
        draw_map_frame(&mut canvas, (x, y + label_h), (pw, ph), geo);
        placed.panels.push((x, y + label_h));
        if per_panel {
            let bx = x + column_w + GAP;
            canvas.text(bx as i64, (y + label_h) as i64, &units, 1, INK);
            let by = y + label_h + units_h;
            let h = body_h.saturating_sub(units_h);
            placed.bars.push((bx, by, h));
            draw_bar(&mut canvas, bx, by, h, &scale.ticks(), |t| {
                opts.colormap.rgb(t)
            });
        }
    }

    if !per_panel {
        let bar_x = MARGIN + grid_w + 2 * GAP;
        canvas.text(bar_x as i64, (top + label_h) as i64, &units, 1, INK);
        let bar_y = top + label_h + units_h;
        draw_bar(
            &mut canvas,
            bar_x,
            bar_y,
            bar_h,
            &scales.of(0).ticks(),
            |t| opts.colormap.rgb(t),
        );
        placed.bars.push((bar_x, bar_y, bar_h));
    }
    (canvas, placed)
}

/// All bands in one map: hue from the band mix, strength from the total; legend and grey bar;
/// `markers` (panel pixel positions) drawn on the map.
pub(crate) fn draw_blend(
    grids: &[Vec<f64>],
    names: &[String],
    plan: &Resample,
    geo: &MapGeometry,
    opts: &RenderOptions,
    markers: &[(f64, f64)],
) -> (Canvas, Placed) {
    let n_px = plan.rows * plan.cols;
    // Each band's largest value, to normalise its weight in the hue mix.
    let band_max: Vec<f64> = grids
        .iter()
        .map(|g| {
            g.iter()
                .copied()
                .filter(|v| v.is_finite())
                .fold(0.0, f64::max)
        })
        .collect();
    // Total per display cell over the bands (negative values count as zero); NaN where every
    // band is missing.
    let totals: Vec<f64> = (0..n_px)
        .map(|k| {
            let mut valid = false;
            let mut sum = 0.0;
            for g in grids {
                if let Some(&v) = g.get(k).filter(|v| v.is_finite()) {
                    valid = true;
                    sum += v.max(0.0);
                }
            }
            if valid { sum } else { f64::NAN }
        })
        .collect();
    // Strength starts at zero (white), not at the smallest total.
    let scale = ValueScale::fit(totals.iter().copied().chain([0.0]), opts.scale);
    let colour = |k: usize| -> [u8; 3] {
        let total = totals.get(k).copied().unwrap_or(f64::NAN);
        if total.is_nan() {
            return MISSING;
        }
        let mut mix = [0.0f64; 3];
        let mut weight = 0.0;
        for (b, g) in grids.iter().enumerate() {
            let v = g
                .get(k)
                .copied()
                .filter(|v| v.is_finite())
                .unwrap_or(0.0)
                .max(0.0);
            let m = band_max.get(b).copied().unwrap_or(0.0);
            if v > 0.0 && m > 0.0 {
                let w = v / m;
                let hue = blend_hue(b);
                for (acc, h) in mix.iter_mut().zip(hue) {
                    *acc += w * h as f64;
                }
                weight += w;
            }
        }
        if weight <= 0.0 {
            return BACKGROUND;
        }
        let strength = scale.unit(total);
        let px = |c: usize| {
            let hue = mix[c] / weight;
            (BACKGROUND[c] as f64 * (1.0 - strength) + hue * strength).round() as u8
        };
        [px(0), px(1), px(2)]
    };

    let (pw, ph) = plan.panel_px();
    let ticks = scale.ticks();
    let legend: Vec<String> = names
        .iter()
        .map(|s| fit_text(s, 1, 30 * GLYPH_PX))
        .collect();
    let legend_w = 14 + 6 + legend.iter().map(|s| text_width(s, 1)).max().unwrap_or(0);
    let total_label = if opts.units.is_empty() {
        "total".to_string()
    } else {
        fit_text(
            &format!("total ({})", opts.units),
            1,
            MAX_LABEL_CHARS * GLYPH_PX,
        )
    };
    let side_w = legend_w
        .max(bar_block_width(&ticks))
        .max(text_width(&total_label, 1));
    let legend_h = legend.len() * 18;
    let side_h = legend_h + 12 + GLYPH_PX + 8 + MIN_BAR_HEIGHT;
    let title_h = title_height(&opts.title);
    let left = left_room(geo, ph);
    let width = (2 * MARGIN + left + pw + 2 * GAP + side_w)
        .max(2 * MARGIN + text_width(&opts.title, TITLE_SCALE).min(MAX_LABEL_CHARS * 16));
    let height = 2 * MARGIN + title_h + (ph + BOTTOM_ROOM).max(side_h);
    let mut canvas = Canvas::new(width, height, BACKGROUND);
    draw_title(&mut canvas, &opts.title);

    let top = MARGIN + title_h;
    let map_x = MARGIN + left;
    draw_grid(&mut canvas, map_x, top, plan, colour);
    draw_markers(&mut canvas, map_x, top, plan, markers);
    draw_map_frame(&mut canvas, (map_x, top), (pw, ph), geo);
    let side_x = map_x + pw + 2 * GAP;
    for (b, name) in legend.iter().enumerate() {
        let y = top + b * 18;
        canvas.fill_rect(side_x as i64, y as i64, 14, 14, blend_hue(b));
        canvas.text((side_x + 20) as i64, (y + 3) as i64, name, 1, INK);
    }
    let label_y = top + legend_h + 12;
    canvas.text(side_x as i64, label_y as i64, &total_label, 1, INK);
    let bar_h = ph
        .saturating_sub(legend_h + 12 + GLYPH_PX + 8)
        .max(MIN_BAR_HEIGHT);
    let grey = |t: f64| {
        let c = |i: usize| {
            let (w, d) = (BACKGROUND[i] as f64, BLEND_BAR_DARK[i] as f64);
            (w + (d - w) * t.clamp(0.0, 1.0)).round() as u8
        };
        [c(0), c(1), c(2)]
    };
    let bar_y = label_y + GLYPH_PX + 8;
    draw_bar(&mut canvas, side_x, bar_y, bar_h, &ticks, grey);
    let placed = Placed {
        panels: vec![(map_x, top)],
        bars: vec![(side_x, bar_y, bar_h)],
    };
    (canvas, placed)
}
