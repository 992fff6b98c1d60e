//! A small x-y chart (points, a curve, axes with ticks), e.g. an empirical variogram with its
//! fitted model. Axes start at 0; each point can carry a label (the variogram's pair counts).

use std::path::Path;

use super::sample::{multiples, tick_step};
use super::text::{Canvas, GLYPH_PX, text_width};
use crate::IoError;

/// What to draw.
#[derive(Debug, Clone, Default)]
pub struct XyChart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// (x, y) markers; non-finite ones are skipped.
    pub points: Vec<(f64, f64)>,
    /// A label drawn above each point (same length as `points`, or empty).
    pub point_labels: Vec<String>,
    /// A polyline (e.g. the fitted model), drawn under the points.
    pub curve: Vec<(f64, f64)>,
    /// A second line of text under the title (e.g. the fitted parameters).
    pub subtitle: String,
}

const W: usize = 760;
const H: usize = 500;
const LEFT: usize = 78;
const RIGHT: usize = 24;
const TOP: usize = 56;
const BOTTOM: usize = 52;
const INK: [u8; 3] = [30, 30, 30];
const GRID: [u8; 3] = [225, 225, 225];
const POINT: [u8; 3] = [200, 60, 40];
const CURVE: [u8; 3] = [40, 90, 190];

/// A tick label for `v` on a grid of `step`.
pub(crate) fn fmt_tick(v: f64, step: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    if step >= 1.0 && v.abs() < 1e7 {
        return format!("{v:.0}");
    }
    if v.abs() >= 1e-3 && v.abs() < 1e7 {
        let digits = (-step.log10().floor()).clamp(0.0, 6.0) as usize;
        return format!("{v:.digits$}");
    }
    format!("{v:.1e}")
}

/// A line from (x0, y0) to (x1, y1), two pixels thick (the second pixel below).
pub(crate) fn line(c: &mut Canvas, (x0, y0): (f64, f64), (x1, y1): (f64, f64), rgb: [u8; 3]) {
    let n = (x1 - x0)
        .abs()
        .max((y1 - y0).abs())
        .ceil()
        .clamp(1.0, 4000.0) as usize;
    for i in 0..=n {
        let t = i as f64 / n as f64;
        let (x, y) = (x0 + t * (x1 - x0), y0 + t * (y1 - y0));
        c.set(x.round() as i64, y.round() as i64, rgb);
        c.set(x.round() as i64, y.round() as i64 + 1, rgb);
    }
}

/// Draws the chart as an RGB PNG at `path` (written atomically).
pub fn write_xy_chart_png(path: &Path, chart: &XyChart) -> Result<(), IoError> {
    let mut c = Canvas::new(W, H, [255, 255, 255]);
    let finite = |p: &&(f64, f64)| p.0.is_finite() && p.1.is_finite();
    let all: Vec<(f64, f64)> = chart
        .points
        .iter()
        .chain(&chart.curve)
        .filter(finite)
        .copied()
        .collect();
    let xmax = all.iter().map(|p| p.0).fold(0.0f64, f64::max);
    let ymax = all.iter().map(|p| p.1).fold(0.0f64, f64::max);
    let xmax = if xmax > 0.0 { xmax * 1.04 } else { 1.0 };
    let ymax = if ymax > 0.0 { ymax * 1.1 } else { 1.0 };
    let (pw, ph) = ((W - LEFT - RIGHT) as f64, (H - TOP - BOTTOM) as f64);
    let px = |x: f64| LEFT as f64 + x / xmax * pw;
    let py = |y: f64| (H - BOTTOM) as f64 - y / ymax * ph;
    // Grid and ticks.
    let xs = tick_step(0.0, xmax);
    for v in multiples(0.0, xmax, xs) {
        let x = px(v);
        line(&mut c, (x, TOP as f64), (x, (H - BOTTOM) as f64), GRID);
        let s = fmt_tick(v, xs);
        c.text(
            x as i64 - (text_width(&s, 1) / 2) as i64,
            (H - BOTTOM + 8) as i64,
            &s,
            1,
            INK,
        );
    }
    let ys = tick_step(0.0, ymax);
    for v in multiples(0.0, ymax, ys) {
        let y = py(v);
        line(&mut c, (LEFT as f64, y), ((W - RIGHT) as f64, y), GRID);
        let s = fmt_tick(v, ys);
        c.text(
            LEFT as i64 - 8 - text_width(&s, 1) as i64,
            y as i64 - 4,
            &s,
            1,
            INK,
        );
    }
    c.outline_rect(
        LEFT as i64,
        TOP as i64,
        W - LEFT - RIGHT,
        H - TOP - BOTTOM,
        INK,
    );
    // Curve, then points with their labels.
    let curve: Vec<(f64, f64)> = chart.curve.iter().filter(finite).copied().collect();
    for w in curve.windows(2) {
        line(
            &mut c,
            (px(w[0].0), py(w[0].1)),
            (px(w[1].0), py(w[1].1)),
            CURVE,
        );
    }
    for (i, p) in chart.points.iter().enumerate() {
        if !(p.0.is_finite() && p.1.is_finite()) {
            continue;
        }
        let (x, y) = (px(p.0) as i64, py(p.1) as i64);
        c.fill_rect(x - 3, y - 3, 7, 7, POINT);
        if let Some(l) = chart.point_labels.get(i) {
            c.text(
                x - (text_width(l, 1) / 2) as i64,
                y - 16,
                l,
                1,
                [110, 110, 110],
            );
        }
    }
    // Title, subtitle and axis labels.
    c.text(LEFT as i64, 10, &chart.title, 2, INK);
    c.text(
        LEFT as i64,
        10 + 2 * GLYPH_PX as i64 + 6,
        &chart.subtitle,
        1,
        INK,
    );
    let xl = &chart.x_label;
    c.text(
        (LEFT as f64 + pw / 2.0) as i64 - (text_width(xl, 1) / 2) as i64,
        (H - 18) as i64,
        xl,
        1,
        INK,
    );
    c.text(8, TOP as i64 - 14, &chart.y_label, 1, INK);
    super::write_png(path, &c)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn draws_points_curve_and_labels() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.png");
        let chart = XyChart {
            title: "variogram".into(),
            x_label: "distance".into(),
            y_label: "gamma".into(),
            points: vec![(10.0, 0.5), (20.0, 0.8), (30.0, f64::NAN), (40.0, 1.0)],
            point_labels: vec!["12".into(), "30".into(), "0".into(), "41".into()],
            curve: (0..50)
                .map(|i| (f64::from(i), 1.0 - (-f64::from(i) / 10.0).exp()))
                .collect(),
            subtitle: "exponential sill 1 range 30".into(),
        };
        write_xy_chart_png(&p, &chart).unwrap();
        let bytes = std::fs::read(&p).unwrap();
        assert_eq!(&bytes[1..4], b"PNG");
        // Degenerate data still renders.
        let empty = XyChart::default();
        write_xy_chart_png(&dir.path().join("e.png"), &empty).unwrap();
        assert_eq!(fmt_tick(0.25, 0.05), "0.25");
        assert_eq!(fmt_tick(200.0, 50.0), "200");
    }
}

#[cfg(test)]
mod tmp_baseline {
    #![allow(clippy::unwrap_used)]
    use super::*;
    #[test]
    fn tmp_write_baseline() {
        let chart = XyChart {
            title: "variogram".into(),
            x_label: "distance".into(),
            y_label: "gamma".into(),
            points: vec![(10.0, 0.5), (20.0, 0.8), (30.0, f64::NAN), (40.0, 1.0)],
            point_labels: vec!["12".into(), "30".into(), "0".into(), "41".into()],
            curve: (0..50)
                .map(|i| (f64::from(i), 1.0 - (-f64::from(i) / 10.0).exp()))
                .collect(),
            subtitle: "exponential sill 1 range 30".into(),
        };
        let out = std::env::var("XY_BASELINE").unwrap();
        write_xy_chart_png(std::path::Path::new(&out), &chart).unwrap();
    }
}
