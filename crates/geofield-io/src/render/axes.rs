//! The map frame drawn around every map panel: coordinate axes with ticks labelled in metres
//! (easting under the panel, northing to its left), and under the easting labels a scale bar
//! (left) and a north arrow (right). Nothing is drawn over the map itself.
//!
//! - Ticks: multiples of a step of 1, 2 or 5 times a power of ten metres, the smallest such step
//!   that puts at most [`MAX_MAP_TICKS`] ticks on the axis ([`nice_step_125`], [`map_ticks`]),
//!   fewer where the labels would come closer than [`MIN_LABEL_SPACE`] pixels ([`axis_ticks`]).
//! - Scale bar: the longest length of 1, 2 or 5 times a power of ten metres that takes at most a
//!   quarter of the panel width ([`scale_bar`]); drawn `metres / metres_per_pixel` pixels long
//!   (rounded), labelled with its length ("500 m", "2 km").
//! - North arrow: grid north, straight up, since rows run north to south (the rasters are
//!   north-up, with no rotation).

use geofield_core::GridSpec;

use super::layout::INK;
use super::sample::Resample;
use super::text::{Canvas, GLYPH_PX, text_width};

/// At most this many ticks per map axis.
pub(crate) const MAX_MAP_TICKS: usize = 5;
/// Tick mark length outside the panel, pixels.
const TICK_PX: usize = 4;
/// Gap between a tick mark and its label, pixels.
const LABEL_GAP: usize = 3;
/// Largest share of the panel width the scale bar may take.
const SCALE_BAR_SHARE: f64 = 0.25;
/// Height of the north arrow's shaft and head, pixels (the "N" comes above it).
pub(crate) const NORTH_ARROW_PX: usize = 18;
/// Height of the row under the easting labels that holds the scale bar, the axis title and
/// the north arrow.
const FOOT_PX: usize = GLYPH_PX + 4 + NORTH_ARROW_PX;

/// The smallest step of 1, 2 or 5 times a power of ten for which at most `max_ticks` multiples
/// lie in [lo, hi]; `None` for an empty, reversed or non-finite range or `max_ticks == 0`.
pub(crate) fn nice_step_125(lo: f64, hi: f64, max_ticks: usize) -> Option<f64> {
    let range = hi - lo;
    if !(range.is_finite() && range > 0.0 && lo.is_finite()) || max_ticks == 0 {
        return None;
    }
    // A step of at least range / max_ticks is needed; start a decade below it.
    let e = (range / max_ticks as f64).log10().floor() as i32 - 1;
    for k in e..e + 4 {
        for mult in [1.0, 2.0, 5.0] {
            let step = mult * 10f64.powi(k);
            if count_multiples(lo, hi, step) <= max_ticks {
                return Some(step);
            }
        }
    }
    None
}

/// Number of multiples of `step` in [lo, hi] (with a relative slack of 1e-9 steps).
fn count_multiples(lo: f64, hi: f64, step: f64) -> usize {
    let first = (lo / step - 1e-9).ceil();
    let last = (hi / step + 1e-9).floor();
    if last < first {
        0
    } else {
        (last - first) as usize + 1
    }
}

/// The tick values of a map axis from `lo` to `hi` metres (see [`nice_step_125`]) and their step.
pub(crate) fn map_ticks(lo: f64, hi: f64, max_ticks: usize) -> (f64, Vec<f64>) {
    let Some(step) = nice_step_125(lo, hi, max_ticks) else {
        return (1.0, Vec::new());
    };
    let first = (lo / step - 1e-9).ceil();
    let n = count_multiples(lo, hi, step);
    let ticks = (0..n)
        .map(|i| {
            let v = (first + i as f64) * step;
            if v.abs() < step * 1e-9 { 0.0 } else { v }
        })
        .collect();
    (step, ticks)
}

/// The ticks of an axis `len_px` pixels long from `lo` to `hi` metres whose labels are
/// `extent(label)` pixels long along the axis: the most ticks, up to [`MAX_MAP_TICKS`], whose
/// spacing leaves at least [`MIN_LABEL_SPACE`] pixels between neighbouring labels (at least two
/// ticks where the range holds any). Returns the step and (value, label) pairs.
pub(crate) fn axis_ticks(
    lo: f64,
    hi: f64,
    len_px: usize,
    extent: impl Fn(&str) -> usize,
) -> (f64, Vec<(f64, String)>) {
    let px_per_m = len_px as f64 / (hi - lo);
    let mut best = (1.0, Vec::new());
    for n in (2..=MAX_MAP_TICKS).rev() {
        let (step, ticks) = map_ticks(lo, hi, n);
        let labelled: Vec<(f64, String)> =
            ticks.iter().map(|&v| (v, format_metres(v, step))).collect();
        let widest = labelled.iter().map(|(_, l)| extent(l)).max().unwrap_or(0);
        let fits = step * px_per_m >= (widest + MIN_LABEL_SPACE) as f64;
        best = (step, labelled);
        if fits {
            break;
        }
    }
    best
}

/// Least gap between neighbouring tick labels, pixels.
pub(crate) const MIN_LABEL_SPACE: usize = 12;

/// A map tick label in metres: integers for steps of 1 m or more, else the decimals the step
/// needs.
pub(crate) fn format_metres(v: f64, step: f64) -> String {
    if step >= 1.0 {
        format!("{v:.0}")
    } else {
        let decimals = (-step.log10().floor()).clamp(0.0, 9.0) as usize;
        format!("{v:.decimals$}")
    }
}

/// The scale bar for a panel `panel_px` pixels wide at `metres_per_px`: (length in metres, in
/// pixels), the longest 1, 2 or 5 times a power of ten metres within [`SCALE_BAR_SHARE`] of the
/// width; `None` when not even a few pixels are available.
pub(crate) fn scale_bar(metres_per_px: f64, panel_px: usize) -> Option<(f64, usize)> {
    let max_m = SCALE_BAR_SHARE * panel_px as f64 * metres_per_px;
    if !(max_m.is_finite() && max_m > 0.0 && metres_per_px > 0.0) {
        return None;
    }
    let k = max_m.log10().floor() as i32;
    let base = 10f64.powi(k);
    let metres = [5.0, 2.0, 1.0]
        .into_iter()
        .map(|m| m * base)
        .find(|&m| m <= max_m * (1.0 + 1e-12))?;
    let px = (metres / metres_per_px).round() as usize;
    (px >= 4).then_some((metres, px))
}

/// "500 m", "2 km", "0.5 m".
pub(crate) fn format_length(metres: f64) -> String {
    if metres >= 1000.0 {
        let km = metres / 1000.0;
        let decimals = usize::from((km - km.round()).abs() > 1e-9);
        format!("{km:.decimals$} km")
    } else if metres >= 1.0 {
        format!("{metres:.0} m")
    } else {
        let decimals = (-metres.log10().floor()).clamp(0.0, 9.0) as usize;
        format!("{metres:.decimals$} m")
    }
}

/// Where the world extent of a panel lies: metres per pixel and the world coordinates of the
/// panel's west and north edges.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct MapGeometry {
    pub(crate) x_min_m: f64,
    pub(crate) y_max_m: f64,
    pub(crate) metres_per_px: f64,
}

impl MapGeometry {
    /// The geometry of panels drawn by `plan` from a raster on `grid`.
    pub(crate) fn new(grid: &GridSpec, plan: &Resample) -> Self {
        Self {
            x_min_m: grid.x_min_m,
            y_max_m: grid.y_max_m,
            metres_per_px: grid.cell_size_m * plan.block.max(1) as f64 / plan.zoom.max(1) as f64,
        }
    }

    /// The northing tick labels of a panel `ph` pixels high (for the room they need).
    pub(crate) fn northing_labels(&self, ph: usize) -> Vec<String> {
        let y_lo = self.y_max_m - ph as f64 * self.metres_per_px;
        let (_, ticks) = axis_ticks(y_lo, self.y_max_m, ph, |_| GLYPH_PX);
        ticks.into_iter().map(|(_, l)| l).collect()
    }
}

/// Room left of a panel for its northing labels and the vertical axis title.
pub(crate) fn left_room(geo: &MapGeometry, ph: usize) -> usize {
    let labels = geo
        .northing_labels(ph)
        .iter()
        .map(|l| text_width(l, 1))
        .max()
        .unwrap_or(0);
    TICK_PX + LABEL_GAP + labels + 4 + GLYPH_PX + 4
}

/// Room under a panel for its easting labels, the axis title, the scale bar and north arrow.
pub(crate) const BOTTOM_ROOM: usize = 1 + TICK_PX + LABEL_GAP + GLYPH_PX + 6 + FOOT_PX + 2;

/// Draw the axes, scale bar and north arrow of the `pw` x `ph` panel at (x, y).
pub(crate) fn draw_map_frame(
    canvas: &mut Canvas,
    (x, y): (usize, usize),
    (pw, ph): (usize, usize),
    geo: &MapGeometry,
) {
    let (xi, yi) = (x as i64, y as i64);
    let mpp = geo.metres_per_px;
    if !(mpp.is_finite() && mpp > 0.0) || pw == 0 || ph == 0 {
        return;
    }
    // Easting ticks under the panel.
    let x_hi = geo.x_min_m + pw as f64 * mpp;
    let (_, ticks) = axis_ticks(geo.x_min_m, x_hi, pw, |l| text_width(l, 1));
    let label_y = yi + ph as i64 + (TICK_PX + LABEL_GAP) as i64 + 1;
    for (v, label) in ticks {
        let px = xi + (((v - geo.x_min_m) / mpp).floor() as i64).clamp(0, pw as i64 - 1);
        canvas.fill_rect(px, yi + ph as i64 + 1, 1, TICK_PX, INK);
        canvas.text(
            px - (text_width(&label, 1) / 2) as i64,
            label_y,
            &label,
            1,
            INK,
        );
    }
    let foot_y = label_y + GLYPH_PX as i64 + 6;
    // The axis title, centred between the scale bar and the north arrow: shortened, or left
    // out, where the panel is too narrow for it.
    let bar = scale_bar(mpp, pw);
    let west = bar.map_or(0, |(m, len)| len.max(text_width(&format_length(m), 1))) + 6;
    let east = pw.saturating_sub(GLYPH_PX + 6);
    let title = ["easting (m)", "E (m)"].into_iter().find(|t| {
        let x0 = pw.saturating_sub(text_width(t, 1)) / 2;
        x0 >= west && x0 + text_width(t, 1) <= east
    });
    if let Some(title) = title {
        let x0 = pw.saturating_sub(text_width(title, 1)) / 2;
        canvas.text(xi + x0 as i64, foot_y + 6, title, 1, INK);
    }
    // Northing ticks left of the panel.
    let y_lo = geo.y_max_m - ph as f64 * mpp;
    let (_, ticks) = axis_ticks(y_lo, geo.y_max_m, ph, |_| GLYPH_PX);
    let mut widest = 0;
    for (v, label) in ticks {
        let py = yi + (((geo.y_max_m - v) / mpp).floor() as i64).clamp(0, ph as i64 - 1);
        canvas.fill_rect(xi - 1 - TICK_PX as i64, py, TICK_PX, 1, INK);
        let w = text_width(&label, 1);
        widest = widest.max(w);
        canvas.text(
            xi - (1 + TICK_PX + LABEL_GAP + w) as i64,
            py - (GLYPH_PX / 2) as i64,
            &label,
            1,
            INK,
        );
    }
    // Shortened where the panel is not as tall as the title.
    let title = if text_width("northing (m)", 1) <= ph {
        "northing (m)"
    } else {
        "N (m)"
    };
    let tx = xi - (1 + TICK_PX + LABEL_GAP + widest + 4 + GLYPH_PX) as i64;
    let ty = yi + ((ph + text_width(title, 1)) / 2) as i64;
    canvas.text_up(tx, ty, title, INK);

    // Scale bar under the easting labels, at the panel's west edge: its length label above a
    // bar with end stops.
    if let Some((metres, len)) = bar {
        canvas.text(xi, foot_y, &format_length(metres), 1, INK);
        let bar_y = foot_y + GLYPH_PX as i64 + 6;
        canvas.fill_rect(xi, bar_y, len, 3, INK);
        canvas.fill_rect(xi, bar_y - 3, 1, 7, INK);
        canvas.fill_rect(xi + len as i64 - 1, bar_y - 3, 1, 7, INK);
    }
    // North arrow under the easting labels, at the panel's east edge: "N" over an arrow
    // pointing up.
    let cx = xi + pw as i64 - 1 - GLYPH_PX as i64 / 2;
    canvas.text(cx - GLYPH_PX as i64 / 2 + 1, foot_y, "N", 1, INK);
    let tip = foot_y + GLYPH_PX as i64 + 3;
    canvas.fill_rect(cx, tip, 1, NORTH_ARROW_PX, INK);
    // A solid head, rows widening downwards from the tip.
    for k in 0..7i64 {
        canvas.fill_rect(cx - k / 2, tip + k, (k / 2 * 2 + 1) as usize, 1, INK);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_one_two_five() {
        // 0..1000 m: 200 gives 6 ticks, 500 gives 3 (0, 500, 1000).
        assert_eq!(nice_step_125(0.0, 1000.0, 5), Some(500.0));
        // 0..1000 m with up to 6 ticks: 200 (0, 200, ..., 1000).
        assert_eq!(nice_step_125(0.0, 1000.0, 6), Some(200.0));
        // 512000..516000: step 1000 gives 5 ticks.
        assert_eq!(nice_step_125(512_000.0, 516_000.0, 5), Some(1000.0));
        // 0..7.3 m: 2 gives 0, 2, 4, 6.
        assert_eq!(nice_step_125(0.0, 7.3, 5), Some(2.0));
        assert_eq!(nice_step_125(1.0, 1.0, 5), None);
        assert_eq!(nice_step_125(0.0, f64::NAN, 5), None);
        let (step, t) = map_ticks(-150.0, 260.0, 5);
        assert_eq!(step, 100.0);
        assert_eq!(t, vec![-100.0, 0.0, 100.0, 200.0]);
        assert_eq!(format_metres(512_000.0, 1000.0), "512000");
        // 400 m over 200 px with 6-digit labels (48 px): 100 m steps (50 px apart) would leave
        // 2 px between labels, 200 m (100 px) leaves 52: 500000, 500200, 500400.
        let (step, t) = axis_ticks(500_000.0, 500_400.0, 200, |l| text_width(l, 1));
        assert_eq!(step, 200.0);
        assert_eq!(t.len(), 3);
        assert_eq!(t[1].1, "500200");
        // Short labels keep the five ticks.
        let (step, t) = axis_ticks(0.0, 400.0, 200, |l| text_width(l, 1));
        assert_eq!((step, t.len()), (100.0, 5));
        assert_eq!(format_metres(0.5, 0.5), "0.5");
    }

    #[test]
    fn scale_bar_is_a_nice_length_within_a_quarter() {
        // 1000 px at 2 m/px: at most 500 m -> 500 m, 250 px.
        assert_eq!(scale_bar(2.0, 1000), Some((500.0, 250)));
        // 400 px at 25 m/px: at most 2500 m -> 2000 m, 80 px.
        assert_eq!(scale_bar(25.0, 400), Some((2000.0, 80)));
        assert_eq!(scale_bar(0.0, 400), None);
        assert_eq!(format_length(2000.0), "2 km");
        assert_eq!(format_length(1500.0), "1.5 km");
        assert_eq!(format_length(500.0), "500 m");
        assert_eq!(format_length(0.2), "0.2 m");
    }
}
