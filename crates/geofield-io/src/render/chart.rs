//! A small x-y chart (points, a curve, axes with ticks), e.g. an empirical variogram with its
//! fitted model. Axes start at 0; each point can carry a label (the variogram's pair counts).
//!
//! [`write_xy_chart_png`] draws the chart's one series of points (red squares) and its curve
//! (a blue line). [`write_xy_chart_series_png`] draws, besides those, any number of
//! [`ChartSeries`], each with a label, a colour, a solid or dashed line (or none) and markers on
//! or off, and a legend of the labelled series in a top corner of the plot (drawn by
//! `chart_series`).

use std::path::Path;

use super::chart_series::{ChartSeries, LegendPlace, Rect, draw_legend, draw_series};
use super::sample::{multiples, tick_step};
use super::text::{Canvas, GLYPH_PX, text_width};
use crate::IoError;

/// What to draw: titles, axis labels and one series (`points`, with `point_labels`, and a
/// `curve`). More series go to [`write_xy_chart_series_png`].
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
const BACKGROUND: [u8; 3] = [255, 255, 255];
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
    write_xy_chart_series_png(path, chart, &[])
}

/// Draws the chart with `series` as an RGB PNG at `path` (written atomically): the chart's own
/// `points` and `curve` as [`write_xy_chart_png`] does, the series' lines over the curve and
/// their markers over the lines, the chart's points on top, and a legend of the series with a
/// non-empty label in the top-left or top-right corner of the plot, whichever covers fewer drawn
/// pixels. The axes span all of them. With no series this draws exactly what
/// [`write_xy_chart_png`] draws.
///
/// ```
/// use geofield_io::render::{ChartSeries, LineStyle, blend_hue, write_xy_chart_series_png};
/// use geofield_io::XyChart;
///
/// let chart = XyChart { title: "two series".into(), x_label: "x".into(), ..XyChart::default() };
/// let rising: Vec<(f64, f64)> = (0..10).map(|i| (f64::from(i), f64::from(i))).collect();
/// let series = vec![
///     ChartSeries::new("rising", blend_hue(0), rising.clone()),
///     ChartSeries {
///         line: LineStyle::Dashed,
///         ..ChartSeries::new("half", blend_hue(1), rising.iter().map(|p| (p.0, p.1 / 2.0)).collect())
///     },
/// ];
/// let dir = tempfile::tempdir()?;
/// write_xy_chart_series_png(&dir.path().join("c.png"), &chart, &series)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_xy_chart_series_png(
    path: &Path,
    chart: &XyChart,
    series: &[ChartSeries],
) -> Result<(), IoError> {
    let (c, _) = draw_chart(chart, series);
    super::write_png(path, &c)
}

/// The canvas of [`write_xy_chart_series_png`] and where the legend went.
fn draw_chart(chart: &XyChart, series: &[ChartSeries]) -> (Canvas, Option<LegendPlace>) {
    let mut c = Canvas::new(W, H, BACKGROUND);
    let finite = |p: &&(f64, f64)| p.0.is_finite() && p.1.is_finite();
    let all: Vec<(f64, f64)> = chart
        .points
        .iter()
        .chain(&chart.curve)
        .chain(series.iter().flat_map(|s| &s.points))
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
    // Curve, series, then points with their labels.
    let curve: Vec<(f64, f64)> = chart.curve.iter().filter(finite).copied().collect();
    for w in curve.windows(2) {
        line(
            &mut c,
            (px(w[0].0), py(w[0].1)),
            (px(w[1].0), py(w[1].1)),
            CURVE,
        );
    }
    draw_series(&mut c, series, |(x, y)| (px(x), py(y)));
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
    let plot = Rect {
        x: LEFT as i64,
        y: TOP as i64,
        w: W - LEFT - RIGHT,
        h: H - TOP - BOTTOM,
    };
    let legend = draw_legend(&mut c, series, plot, BACKGROUND, GRID, INK);
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
    (c, legend)
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

    /// Decode an RGB PNG to its pixels.
    fn decode(path: &Path) -> (usize, usize, Vec<u8>) {
        let dec = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
        let mut reader = dec.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        assert_eq!(info.color_type, png::ColorType::Rgb);
        buf.truncate(info.buffer_size());
        (info.width as usize, info.height as usize, buf)
    }

    #[test]
    fn draws_two_series_with_a_legend_where_the_data_is_not() {
        use super::super::chart_series::LineStyle;
        use super::super::colormap::blend_hue;
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (blend_hue(0), blend_hue(1));
        let chart = XyChart {
            title: "two series".into(),
            x_label: "year".into(),
            y_label: "count".into(),
            subtitle: "mean of 3 replicates".into(),
            ..XyChart::default()
        };
        // Rising series leave the top-left corner empty, falling ones the top-right.
        let make = |rising: bool| {
            let y = |i: u32| {
                if rising {
                    f64::from(i)
                } else {
                    f64::from(20 - i)
                }
            };
            vec![
                ChartSeries::new("fir", a, (0..=20).map(|i| (f64::from(i), y(i))).collect()),
                ChartSeries {
                    line: LineStyle::Dashed,
                    ..ChartSeries::new(
                        "fir (multires)",
                        b,
                        (0..=20).map(|i| (f64::from(i), 0.6 * y(i))).collect(),
                    )
                },
            ]
        };
        for (rising, left) in [(true, true), (false, false)] {
            let series = make(rising);
            let (canvas, legend) = draw_chart(&chart, &series);
            let legend = legend.unwrap();
            let on_left = legend.frame.x < (W / 2) as i64;
            assert_eq!(on_left, left, "rising {rising}: legend at {legend:?}");
            let p = dir.path().join(format!("two-{rising}.png"));
            write_xy_chart_series_png(&p, &chart, &series).unwrap();
            let (w, h, px) = decode(&p);
            assert_eq!((w, h, &px), (W, H, &canvas.pixels));
            let count = |rgb: [u8; 3]| px.chunks(3).filter(|p| *p == rgb).count();
            assert!(count(a) > 200, "{}", count(a));
            assert!(count(b) > 100, "{}", count(b));
            // The labels' text is drawn in ink inside the legend box.
            let r = legend.labels;
            assert!(r.w >= text_width("fir (multires)", 1) && r.h >= 2 * GLYPH_PX);
            let mut ink = 0;
            for y in r.y..r.y + r.h as i64 {
                for x in r.x..r.x + r.w as i64 {
                    if canvas.get(x as usize, y as usize) == INK {
                        ink += 1;
                    }
                }
            }
            assert!(ink > 60, "{ink} ink pixels in the legend labels");
            // The legend's line samples are in the series' colours.
            let f = legend.frame;
            let inside = |rgb: [u8; 3]| {
                (f.y..f.y + f.h as i64)
                    .flat_map(|y| (f.x..f.x + f.w as i64).map(move |x| (x, y)))
                    .filter(|&(x, y)| canvas.get(x as usize, y as usize) == rgb)
                    .count()
            };
            assert!(inside(a) > 20 && inside(b) > 10);
        }
        // A dashed line has gaps: fewer pixels of its colour than a solid one of the same path.
        let solid = vec![ChartSeries::new("", a, vec![(0.0, 1.0), (10.0, 1.0)])];
        let dashed = vec![ChartSeries {
            line: LineStyle::Dashed,
            markers: false,
            ..solid[0].clone()
        }];
        let n = |s: &[ChartSeries]| {
            let (c, legend) = draw_chart(&XyChart::default(), s);
            assert!(legend.is_none(), "no labels, no legend");
            c.pixels.chunks(3).filter(|p| *p == a).count()
        };
        let (ns, nd) = (n(&solid), n(&dashed));
        assert!(nd < ns * 3 / 4 && nd > ns / 3, "solid {ns}, dashed {nd}");
        // Non-finite points break the line; many series shorten the legend.
        let many: Vec<ChartSeries> = (0..60)
            .map(|i| {
                let pts = vec![(0.0, f64::from(i)), (f64::NAN, 1.0), (5.0, f64::from(i))];
                ChartSeries::new(
                    format!("series number {i} with a long name"),
                    blend_hue(i as usize),
                    pts,
                )
            })
            .collect();
        let (_, legend) = draw_chart(&chart, &many);
        let legend = legend.unwrap();
        assert!(legend.frame.y + legend.frame.h as i64 <= (H - BOTTOM) as i64);
        assert!(legend.frame.w <= (W - LEFT - RIGHT) / 2);
    }

    #[test]
    fn no_series_draws_the_single_series_chart() {
        let chart = XyChart {
            title: "t".into(),
            points: vec![(1.0, 2.0), (3.0, 1.0)],
            curve: vec![(0.0, 0.0), (4.0, 2.5)],
            ..XyChart::default()
        };
        let (c, legend) = draw_chart(&chart, &[]);
        assert!(legend.is_none());
        let count = |rgb: [u8; 3]| c.pixels.chunks(3).filter(|p| *p == rgb).count();
        assert!(count(POINT) >= 2 * 49 - 10 && count(CURVE) > 100);
    }
}
