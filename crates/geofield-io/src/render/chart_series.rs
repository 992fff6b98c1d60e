//! Several labelled series in one x-y chart ([`super::write_xy_chart_series_png`]): each a
//! polyline (solid, dashed or none) in its own colour, optionally with square markers, and a
//! legend box listing each labelled series' line sample and label. The legend goes in the top-left
//! or top-right corner of the plot, whichever covers fewer drawn data pixels (top-right on a tie).

use super::chart::line;
use super::text::{Canvas, GLYPH_PX, fit_text, text_width};

/// How the points of a [`ChartSeries`] are joined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LineStyle {
    /// A continuous line.
    #[default]
    Solid,
    /// Dashes of [`DASH_ON_PX`] pixels with gaps of [`DASH_OFF_PX`], the pattern carried on
    /// across the points.
    Dashed,
    /// Not joined (markers only, if on).
    NoLine,
}

/// Length of a dash of [`LineStyle::Dashed`], in pixels along the line.
pub const DASH_ON_PX: f64 = 8.0;
/// Length of the gap between dashes of [`LineStyle::Dashed`], in pixels.
pub const DASH_OFF_PX: f64 = 5.0;
/// Side of a series marker (a filled square), in pixels.
pub const SERIES_MARKER_PX: usize = 5;

/// One series of an x-y chart.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChartSeries {
    /// The name in the legend; an empty label leaves the series out of the legend.
    pub label: String,
    /// Colour of the line and the markers (e.g. [`super::blend_hue`] of the series' index).
    pub colour: [u8; 3],
    /// (x, y) in data units, joined in this order; a non-finite point breaks the line and has
    /// no marker.
    pub points: Vec<(f64, f64)>,
    /// How the points are joined.
    pub line: LineStyle,
    /// Whether each point gets a marker (a filled square of [`SERIES_MARKER_PX`] pixels).
    pub markers: bool,
}

impl ChartSeries {
    /// A labelled series drawn as a solid line with markers.
    pub fn new(label: impl Into<String>, colour: [u8; 3], points: Vec<(f64, f64)>) -> Self {
        Self {
            label: label.into(),
            colour,
            points,
            line: LineStyle::Solid,
            markers: true,
        }
    }
}

/// A polyline through `pts` (pixel coordinates, all finite), two pixels thick as
/// [`line`] draws it; dashed lines carry their dash pattern across the vertices.
fn polyline(c: &mut Canvas, pts: &[(f64, f64)], rgb: [u8; 3], style: LineStyle) {
    match style {
        LineStyle::NoLine => {}
        LineStyle::Solid => {
            for w in pts.windows(2) {
                line(c, w[0], w[1], rgb);
            }
        }
        LineStyle::Dashed => {
            let period = DASH_ON_PX + DASH_OFF_PX;
            let mut travelled = 0.0;
            for w in pts.windows(2) {
                let ((x0, y0), (x1, y1)) = (w[0], w[1]);
                let (dx, dy) = (x1 - x0, y1 - y0);
                let len = dx.hypot(dy);
                let n = dx.abs().max(dy.abs()).ceil().clamp(1.0, 4000.0) as usize;
                for i in 0..=n {
                    let t = i as f64 / n as f64;
                    if (travelled + t * len) % period >= DASH_ON_PX {
                        continue;
                    }
                    let (x, y) = ((x0 + t * dx).round() as i64, (y0 + t * dy).round() as i64);
                    c.set(x, y, rgb);
                    c.set(x, y + 1, rgb);
                }
                travelled += len;
            }
        }
    }
}

/// A series marker centred at (x, y).
fn marker(c: &mut Canvas, x: i64, y: i64, rgb: [u8; 3]) {
    let half = (SERIES_MARKER_PX / 2) as i64;
    c.fill_rect(x - half, y - half, SERIES_MARKER_PX, SERIES_MARKER_PX, rgb);
}

/// Draw the lines of all `series`, then their markers (so that no line hides a marker);
/// `to_px` maps data to pixel coordinates.
pub(crate) fn draw_series(
    c: &mut Canvas,
    series: &[ChartSeries],
    to_px: impl Fn((f64, f64)) -> (f64, f64),
) {
    let finite = |p: &(f64, f64)| p.0.is_finite() && p.1.is_finite();
    for s in series {
        for run in s.points.split(|p| !finite(p)) {
            let px: Vec<(f64, f64)> = run.iter().map(|&p| to_px(p)).collect();
            polyline(c, &px, s.colour, s.line);
        }
    }
    for s in series.iter().filter(|s| s.markers) {
        for &p in s.points.iter().filter(|p| finite(p)) {
            let (x, y) = to_px(p);
            marker(c, x.round() as i64, y.round() as i64, s.colour);
        }
    }
}

/// A rectangle in pixels: top-left (x, y), width, height.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rect {
    pub(crate) x: i64,
    pub(crate) y: i64,
    pub(crate) w: usize,
    pub(crate) h: usize,
}

/// Where the legend was drawn: its box and the box of its labels' text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LegendPlace {
    pub(crate) frame: Rect,
    pub(crate) labels: Rect,
}

/// Gap between the legend box and the plot frame, and inside the box.
const LEGEND_MARGIN: usize = 8;
const LEGEND_PAD: usize = 6;
/// Length of a line sample, and the gap between it and the label.
const SAMPLE_PX: usize = 28;
const SAMPLE_GAP: usize = 6;
/// Height of one legend row.
const ROW_PX: usize = 14;
const LEGEND_EDGE: [u8; 3] = [120, 120, 120];

/// Draw a legend of the labelled `series` inside `plot`, in whichever top corner covers fewer
/// pixels other than `background` and `grid` (top-right on a tie). Labels are shortened to fit
/// 45 % of the plot's width; when there are more rows than fit the plot's height, the last row
/// says how many were left out. Returns where it went; None when no series has a label or the
/// plot is too small for one row.
pub(crate) fn draw_legend(
    c: &mut Canvas,
    series: &[ChartSeries],
    plot: Rect,
    background: [u8; 3],
    grid: [u8; 3],
    ink: [u8; 3],
) -> Option<LegendPlace> {
    let labelled: Vec<&ChartSeries> = series.iter().filter(|s| !s.label.is_empty()).collect();
    let fixed = 2 * LEGEND_PAD + SAMPLE_PX + SAMPLE_GAP;
    let max_text = (plot.w * 45 / 100).saturating_sub(fixed);
    let max_rows = plot.h.saturating_sub(2 * LEGEND_MARGIN + 2 * LEGEND_PAD) / ROW_PX;
    if labelled.is_empty() || max_rows == 0 || max_text < 4 * GLYPH_PX {
        return None;
    }
    // Rows: (series or None for the "+k more" row, text).
    let mut rows: Vec<(Option<&ChartSeries>, String)> = labelled
        .iter()
        .map(|s| (Some(*s), fit_text(&s.label, 1, max_text)))
        .collect();
    if rows.len() > max_rows {
        let shown = max_rows - 1;
        let more = format!("+{} more", rows.len() - shown);
        rows.truncate(shown);
        rows.push((None, fit_text(&more, 1, max_text)));
    }
    let text_w = rows.iter().map(|r| text_width(&r.1, 1)).max().unwrap_or(0);
    let (w, h) = (fixed + text_w, 2 * LEGEND_PAD + rows.len() * ROW_PX);
    let y = plot.y + LEGEND_MARGIN as i64;
    let left = Rect {
        x: plot.x + LEGEND_MARGIN as i64,
        y,
        w,
        h,
    };
    let right = Rect {
        x: plot.x + plot.w as i64 - (LEGEND_MARGIN + w) as i64,
        y,
        w,
        h,
    };
    let covered = |r: Rect| {
        let mut n = 0usize;
        for yy in r.y..r.y + r.h as i64 {
            for xx in r.x..r.x + r.w as i64 {
                if xx < 0 || yy < 0 || xx as usize >= c.width || yy as usize >= c.height {
                    continue;
                }
                let i = (yy as usize * c.width + xx as usize) * 3;
                if c.pixels
                    .get(i..i + 3)
                    .is_some_and(|p| p != background && p != grid)
                {
                    n += 1;
                }
            }
        }
        n
    };
    let frame = if covered(left) < covered(right) {
        left
    } else {
        right
    };
    c.fill_rect(frame.x, frame.y, frame.w, frame.h, background);
    c.outline_rect(frame.x, frame.y, frame.w, frame.h, LEGEND_EDGE);
    let x0 = frame.x + LEGEND_PAD as i64;
    let tx = x0 + (SAMPLE_PX + SAMPLE_GAP) as i64;
    for (k, (s, text)) in rows.iter().enumerate() {
        let top = frame.y + (LEGEND_PAD + k * ROW_PX) as i64;
        let mid = top + (ROW_PX / 2) as i64 - 1;
        if let Some(s) = s {
            let ends = [
                (x0 as f64, mid as f64),
                ((x0 + SAMPLE_PX as i64) as f64, mid as f64),
            ];
            polyline(c, &ends, s.colour, s.line);
            if s.markers {
                marker(c, x0 + (SAMPLE_PX / 2) as i64, mid, s.colour);
            }
        }
        c.text(tx, top + ((ROW_PX - GLYPH_PX) / 2) as i64, text, 1, ink);
    }
    let labels = Rect {
        x: tx,
        y: frame.y + LEGEND_PAD as i64,
        w: text_w,
        h: rows.len() * ROW_PX,
    };
    Some(LegendPlace { frame, labels })
}
