//! From raster cells to display pixels: the resampling plan, block means, the value-to-colour
//! scale and its tick labels.

use geofield_core::GridSpec;

use super::Scale;

/// Longest side, in display pixels, a panel is shrunk to (block means over source cells).
pub(crate) const TARGET_PANEL_PX: usize = 1000;
/// Longest side a small raster is enlarged to (nearest neighbour), when the budget allows.
pub(crate) const MIN_PANEL_PX: usize = 200;
/// Floor fraction used when the one given is not in (0, 1).
const DEFAULT_FLOOR_FRACTION: f64 = 1e-4;

/// How a band's cells become a panel's pixels: each display cell is the mean of `block` x
/// `block` source cells (1 = no reduction) and is drawn as `zoom` x `zoom` pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Resample {
    pub(crate) block: usize,
    pub(crate) zoom: usize,
    /// Display cells across and down.
    pub(crate) cols: usize,
    pub(crate) rows: usize,
}

impl Resample {
    /// Plan for a `rows` x `cols` raster drawn as `panels` panels whose pixels together must not
    /// exceed `max_pixels` (at least one pixel per panel is always kept).
    pub(crate) fn plan(rows: usize, cols: usize, panels: usize, max_pixels: usize) -> Self {
        Self::plan_at_least(rows, cols, panels, max_pixels, MIN_PANEL_PX)
    }

    /// As [`Resample::plan`], enlarging a small raster to about `min_px` pixels on its longer
    /// side instead of [`MIN_PANEL_PX`].
    pub(crate) fn plan_at_least(
        rows: usize,
        cols: usize,
        panels: usize,
        max_pixels: usize,
        min_px: usize,
    ) -> Self {
        let (rows, cols, panels) = (rows.max(1), cols.max(1), panels.max(1));
        let budget = max_pixels.max(panels) as f64;
        let area = |k: usize| (rows.div_ceil(k) * cols.div_ceil(k) * panels) as f64;
        let by_side = rows.max(cols).div_ceil(TARGET_PANEL_PX);
        let by_budget = ((rows as f64 * cols as f64 * panels as f64) / budget)
            .sqrt()
            .ceil();
        let mut block = by_side.max(by_budget as usize).max(1);
        while area(block) > budget && block < rows.max(cols) {
            block += 1;
        }
        let (drows, dcols) = (rows.div_ceil(block), cols.div_ceil(block));
        let mut zoom = 1;
        if block == 1 {
            zoom = min_px.div_ceil(drows.max(dcols)).max(1);
            while zoom > 1 && area(1) * (zoom * zoom) as f64 > budget {
                zoom -= 1;
            }
        }
        Self {
            block,
            zoom,
            cols: dcols,
            rows: drows,
        }
    }

    /// Panel size in pixels (width, height).
    pub(crate) fn panel_px(&self) -> (usize, usize) {
        (self.cols * self.zoom, self.rows * self.zoom)
    }

    /// Where the world point (`x_m`, `y_m`) falls on a panel of a raster on `grid` drawn with
    /// this plan: continuous panel pixel coordinates (x right, y down, from the panel's top-left
    /// corner), or `None` when the point is not finite or outside the grid's closed extent.
    ///
    /// A point at fractional source column `c = (x - x_min) / cell` lies in display column
    /// `c / block`, which is drawn `zoom` pixels wide, so its pixel x is `c / block * zoom`
    /// (likewise for rows, counted down from the north edge). A cell centre thus lands in the
    /// middle of its display cell's pixels.
    pub(crate) fn panel_position(&self, grid: &GridSpec, x_m: f64, y_m: f64) -> Option<(f64, f64)> {
        let cell = grid.cell_size_m;
        if !(x_m.is_finite() && y_m.is_finite() && cell.is_finite() && cell > 0.0) {
            return None;
        }
        let col = (x_m - grid.x_min_m) / cell;
        let row = (grid.y_max_m - y_m) / cell;
        let inside = |v: f64, n: usize| v >= 0.0 && v <= n as f64;
        if !(inside(col, grid.cols) && inside(row, grid.rows)) {
            return None;
        }
        let scale = self.zoom.max(1) as f64 / self.block.max(1) as f64;
        Some((col * scale, row * scale))
    }
}

/// Block means of one band (`rows` x `cols`, row-major) over `block` x `block` cells, ignoring
/// NaN, infinite and `nodata` cells; a display cell with no valid source cell is NaN.
pub(crate) fn block_mean<T: Copy + Into<f64>>(
    values: &[T],
    cols: usize,
    block: usize,
    nodata: Option<f64>,
) -> Vec<f64> {
    let (cols, block) = (cols.max(1), block.max(1));
    let dcols = cols.div_ceil(block);
    let mut out = Vec::with_capacity(values.len().div_ceil(cols * block) * dcols);
    let mut sum = vec![0.0f64; dcols];
    let mut count = vec![0u32; dcols];
    for rows in values.chunks(cols * block) {
        sum.fill(0.0);
        count.fill(0);
        for row in rows.chunks(cols) {
            let acc = sum.iter_mut().zip(count.iter_mut());
            for ((s, c), cells) in acc.zip(row.chunks(block)) {
                for &v in cells {
                    let v: f64 = v.into();
                    if v.is_finite() && Some(v) != nodata {
                        *s += v;
                        *c += 1;
                    }
                }
            }
        }
        out.extend(
            sum.iter()
                .zip(&count)
                .map(|(&s, &c)| if c > 0 { s / c as f64 } else { f64::NAN }),
        );
    }
    out
}

/// The mapping from values to [0, 1] (colour-map position), fitted to the data.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum ValueScale {
    Linear {
        lo: f64,
        hi: f64,
    },
    /// Values at or below `floor` map to 0, `hi` to 1, logarithmically between.
    Log {
        floor: f64,
        hi: f64,
    },
}

impl ValueScale {
    /// Fit to the finite values of `values`. Degenerate data (none, all equal, all zero) gets a
    /// usable range instead of a division by zero.
    pub(crate) fn fit(values: impl IntoIterator<Item = f64>, scale: Scale) -> Self {
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in values.into_iter().filter(|v| v.is_finite()) {
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if lo > hi {
            (lo, hi) = (0.0, 1.0);
        }
        if let Scale::Log { floor_fraction } = scale
            && hi > 0.0
        {
            let ok = floor_fraction.is_finite() && floor_fraction > 0.0 && floor_fraction < 1.0;
            let fraction = if ok {
                floor_fraction
            } else {
                DEFAULT_FLOOR_FRACTION
            };
            let floor = hi * fraction;
            if floor > 0.0 && floor < hi {
                return ValueScale::Log { floor, hi };
            }
        }
        if hi - lo <= f64::EPSILON * hi.abs().max(lo.abs()) || hi - lo <= f64::MIN_POSITIVE {
            // Constant data: 0 -> [0, 1]; c > 0 -> [0, 2c]; c < 0 -> [2c, 0].
            let c = lo;
            (lo, hi) = if c == 0.0 {
                (0.0, 1.0)
            } else {
                ((2.0 * c).min(0.0), (2.0 * c).max(0.0))
            };
        }
        ValueScale::Linear { lo, hi }
    }

    /// Position of `v` in [0, 1]; NaN stays NaN.
    pub(crate) fn unit(&self, v: f64) -> f64 {
        if v.is_nan() {
            return f64::NAN;
        }
        let t = match *self {
            ValueScale::Linear { lo, hi } => (v - lo) / (hi - lo),
            ValueScale::Log { floor, hi } => {
                if v <= floor {
                    0.0
                } else {
                    (v / floor).ln() / (hi / floor).ln()
                }
            }
        };
        t.clamp(0.0, 1.0)
    }

    /// Three to six ticks: (position in [0, 1], label).
    pub(crate) fn ticks(&self) -> Vec<(f64, String)> {
        match *self {
            ValueScale::Linear { lo, hi } => {
                let step = tick_step(lo, hi);
                let values = multiples(lo, hi, step);
                if values.len() < 2 {
                    return vec![(0.0, format_sig(lo)), (1.0, format_sig(hi))];
                }
                values
                    .into_iter()
                    .map(|v| (self.unit(v), format_tick(v, step)))
                    .collect()
            }
            ValueScale::Log { floor, hi } => {
                // The slack keeps exact decades (1e-4) from rounding out of the range.
                let k0 = (floor.log10() - 1e-9).ceil() as i32;
                let k1 = (hi.log10() + 1e-9).floor() as i32;
                let n = (k1 - k0 + 1).max(0) as usize;
                if n < 2 {
                    return vec![(0.0, format_sig(floor)), (1.0, format_sig(hi))];
                }
                let stride = n.div_ceil(5);
                (k0..=k1)
                    .rev()
                    .step_by(stride)
                    .map(|k| {
                        let v = 10f64.powi(k);
                        (self.unit(v), format_decade(k))
                    })
                    .collect()
            }
        }
    }
}

/// The smallest of 1, 2, 2.5 or 5 times a power of ten that puts at most five ticks in [lo, hi].
pub(crate) fn tick_step(lo: f64, hi: f64) -> f64 {
    let range = hi - lo;
    if !(range.is_finite() && range > 0.0) {
        return 1.0;
    }
    let e = range.log10().floor() as i32;
    for k in e - 2..=e + 1 {
        for mult in [1.0, 2.0, 2.5, 5.0] {
            let step = mult * 10f64.powi(k);
            if multiples(lo, hi, step).len() <= 5 {
                return step;
            }
        }
    }
    range
}

/// Multiples of `step` within [lo, hi] (with a little slack for rounding), at most 50.
pub(crate) fn multiples(lo: f64, hi: f64, step: f64) -> Vec<f64> {
    let first = (lo / step - 1e-9).ceil();
    (0..50)
        .map(|i| (first + i as f64) * step)
        .take_while(|&v| v <= hi + step * 1e-9)
        .map(|v| if v.abs() < step * 1e-9 { 0.0 } else { v })
        .collect()
}

/// A tick label for `v` on a grid of `step`: plain decimals (`0.012`, `250`) for moderate
/// magnitudes, otherwise exponent notation with the digits the step needs (`1.2e-5`).
pub(crate) fn format_tick(v: f64, step: f64) -> String {
    if v == 0.0 {
        return "0".to_string();
    }
    let step_exp = step.abs().log10().floor() as i32;
    let v_exp = v.abs().log10().floor() as i32;
    if (-4..6).contains(&v_exp) && step_exp >= -5 {
        // Enough decimals to show the step exactly (2.5 needs one more than 2 or 5).
        let decimals = (0..12)
            .find(|&d| {
                let x = step * 10f64.powi(d);
                (x - x.round()).abs() < 1e-6 * x
            })
            .unwrap_or(12) as usize;
        format!("{v:.decimals$}")
    } else {
        let digits = (v_exp - step_exp).clamp(0, 3) as usize;
        trim_exp(&format!("{v:.digits$e}"))
    }
}

/// Two significant digits, plain or in exponent notation.
pub(crate) fn format_sig(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let e = v.abs().log10().floor() as i32;
    if (-3..5).contains(&e) {
        let decimals = (1 - e).max(0) as usize;
        format!("{v:.decimals$}")
    } else {
        trim_exp(&format!("{v:.1e}"))
    }
}

/// Label for 10^k: `0.001`, `1`, `1000` or `1e-5`, `1e6`.
fn format_decade(k: i32) -> String {
    if (-3..5).contains(&k) {
        let decimals = (-k).max(0) as usize;
        format!("{:.decimals$}", 10f64.powi(k))
    } else {
        format!("1e{k}")
    }
}

/// `1.0e-5` -> `1e-5`, `1.20e3` -> `1.2e3`.
fn trim_exp(s: &str) -> String {
    match s.split_once('e') {
        Some((mantissa, exp)) if mantissa.contains('.') => {
            let m = mantissa.trim_end_matches('0').trim_end_matches('.');
            format!("{m}e{exp}")
        }
        _ => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_shrink_large_and_enlarge_small() {
        let p = Resample::plan(10240, 10240, 1, usize::MAX);
        assert!(p.panel_px().0 <= 1000 && p.panel_px().0 >= 900, "{p:?}");
        let p = Resample::plan(10240, 10240, 4, 1_000_000);
        assert!(p.cols * p.rows * 4 <= 1_000_000, "{p:?}");
        let p = Resample::plan(20, 30, 1, 4_000_000);
        assert_eq!((p.block, p.panel_px()), (1, (210, 140)));
        let p = Resample::plan(1, 1, 1, 4_000_000);
        assert_eq!(p.panel_px(), (200, 200));
        let p = Resample::plan(1, 1, 1, 0);
        assert_eq!(p.panel_px(), (1, 1));
    }

    #[test]
    fn world_points_land_on_their_display_cells() {
        let grid = GridSpec {
            x_min_m: 100.0,
            y_max_m: 500.0,
            cell_size_m: 2.0,
            cols: 30,
            rows: 20,
        };
        let centre = |row: usize, col: usize| {
            (
                100.0 + (col as f64 + 0.5) * 2.0,
                500.0 - (row as f64 + 0.5) * 2.0,
            )
        };
        // Enlarged 7x: cell (row 4, col 11) spans pixels 77..84 across and 28..35 down.
        let p = Resample::plan(20, 30, 1, 4_000_000);
        assert_eq!((p.block, p.zoom), (1, 7));
        let (x, y) = centre(4, 11);
        assert_eq!(p.panel_position(&grid, x, y), Some((80.5, 31.5)));
        // Reduced by blocks of 4: source cell (row 9, col 13) is in display cell (2, 3).
        let p = Resample {
            block: 4,
            zoom: 1,
            cols: 8,
            rows: 5,
        };
        let (x, y) = centre(9, 13);
        let (px, py) = p.panel_position(&grid, x, y).unwrap();
        assert_eq!((px.floor(), py.floor()), (3.0, 2.0));
        // Outside the extent (or not finite): no position. The closed edges are inside.
        assert_eq!(p.panel_position(&grid, 99.9, 480.0), None);
        assert_eq!(p.panel_position(&grid, 120.0, 500.1), None);
        assert_eq!(p.panel_position(&grid, 160.1, 480.0), None);
        assert_eq!(p.panel_position(&grid, 120.0, 459.9), None);
        assert_eq!(p.panel_position(&grid, f64::NAN, 480.0), None);
        assert_eq!(p.panel_position(&grid, 160.0, 460.0), Some((7.5, 5.0)));
    }

    #[test]
    fn block_means_skip_missing() {
        // 2 x 3 grid, block 2: display 1 x 2.
        let v = [1.0f32, 3.0, 5.0, f32::NAN, 2.0, -9999.0];
        let m = block_mean(&v, 3, 2, Some(-9999.0));
        assert_eq!(m.len(), 2);
        assert_eq!(m[0], 2.0);
        assert_eq!(m[1], 5.0);
        let m = block_mean(&[f64::NAN], 1, 1, None);
        assert!(m[0].is_nan());
    }

    #[test]
    fn scales_survive_degenerate_data() {
        assert_eq!(
            ValueScale::fit([0.0, 0.0], Scale::Linear),
            ValueScale::Linear { lo: 0.0, hi: 1.0 }
        );
        assert_eq!(
            ValueScale::fit([3.0], Scale::Linear),
            ValueScale::Linear { lo: 0.0, hi: 6.0 }
        );
        assert_eq!(
            ValueScale::fit([], Scale::Linear),
            ValueScale::Linear { lo: 0.0, hi: 1.0 }
        );
        let log = Scale::Log {
            floor_fraction: 1e-4,
        };
        assert_eq!(
            ValueScale::fit([0.0, 0.0], log),
            ValueScale::Linear { lo: 0.0, hi: 1.0 }
        );
        let s = ValueScale::fit([0.0, 0.5, 1.0], log);
        assert_eq!(s.unit(1.0), 1.0);
        assert_eq!(s.unit(0.0), 0.0);
        assert!((s.unit(0.01) - 0.5).abs() < 1e-12);
        for s in [
            ValueScale::fit([0.0], Scale::Linear),
            s,
            ValueScale::fit([1e-5, 3e-5], Scale::Linear),
        ] {
            let t = s.ticks();
            assert!((2..=6).contains(&t.len()), "{t:?}");
            assert!(t.iter().all(|(u, _)| (0.0..=1.0).contains(u)), "{t:?}");
        }
    }

    #[test]
    fn tick_labels_read_well() {
        let labels = |lo, hi| -> Vec<String> {
            ValueScale::Linear { lo, hi }
                .ticks()
                .into_iter()
                .map(|t| t.1)
                .collect()
        };
        assert_eq!(labels(0.0, 0.05), ["0", "0.02", "0.04"]);
        assert_eq!(labels(0.0, 0.06), ["0", "0.02", "0.04", "0.06"]);
        assert_eq!(labels(-1.0, 1.0), ["-1.0", "-0.5", "0", "0.5", "1.0"]);
        assert_eq!(
            labels(0.00058, 0.00068),
            ["0.000600", "0.000625", "0.000650", "0.000675"]
        );
        assert_eq!(labels(0.0, 1000.0), ["0", "250", "500", "750", "1000"]);
        assert_eq!(
            labels(1.0e-5, 1.6e-5),
            ["1e-5", "1.2e-5", "1.4e-5", "1.6e-5"]
        );
        let log: Vec<String> = ValueScale::Log {
            floor: 1e-4,
            hi: 1.0,
        }
        .ticks()
        .into_iter()
        .map(|t| t.1)
        .collect();
        assert_eq!(log, ["1", "0.1", "0.01", "0.001", "1e-4"]);
        assert_eq!(format_sig(0.0123), "0.012");
        assert_eq!(format_sig(1.2e-5), "1.2e-5");
    }
}
