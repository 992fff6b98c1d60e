//! Pixel tests of the map frame (axes, scale bar, north arrow) and the colour bars.
#![allow(clippy::unwrap_used)]

use geofield_core::{GridSpec, Raster, RasterData};

use super::axes::{NORTH_ARROW_PX, map_ticks, scale_bar};
use super::layout::{INK, PER_PANEL_RATIO, PanelScales, choose_scales};
use super::text::{Canvas, GLYPH_PX};
use super::{Colormap, Layout, RenderOptions, Scale, draw_raster};

/// `cols` x `rows` cells of `cell` metres with the north-west corner at (x_min, y_max); band
/// `b` holds `f(b, row, col)`.
fn raster(
    (cols, rows, cell, x_min, y_max): (usize, usize, f64, f64, f64),
    bands: usize,
    f: impl Fn(usize, usize, usize) -> f64,
) -> Raster {
    let mut data = Vec::with_capacity(bands * rows * cols);
    for b in 0..bands {
        for r in 0..rows {
            for c in 0..cols {
                data.push(f(b, r, c));
            }
        }
    }
    Raster {
        grid: GridSpec {
            x_min_m: x_min,
            y_max_m: y_max,
            cell_size_m: cell,
            cols,
            rows,
        },
        band_names: (0..bands).map(|b| format!("band {b}")).collect(),
        data: RasterData::F64(data),
    }
}

/// Rows below a panel's bottom edge (the pixel row `y + ph`): tick marks start 1 px down,
/// labels `1 + 4 + 3` px down, the foot row (scale bar label, "N") 8 + 6 px under the labels.
const TICK_TOP: usize = 1;
const FOOT: usize = 1 + 4 + 3 + GLYPH_PX + 6;

fn is_ink(c: &Canvas, x: usize, y: usize) -> bool {
    c.get(x, y) == INK
}

/// 100 x 80 cells of 10 m at (500 000, 6 000 000): enlarged 2x, a 200 x 160 px panel at 5 m per
/// pixel, covering eastings 500 000..501 000 and northings 5 999 200..6 000 000.
fn utm_map() -> Raster {
    raster((100, 80, 10.0, 500_000.0, 6_000_000.0), 1, |_, r, c| {
        (r + c) as f64
    })
}

#[test]
fn easting_and_northing_ticks_sit_at_their_metres() {
    // Hand-computed: 1000 m of easting with at most 5 ticks takes a 500 m step (200 m would
    // give 6): 500 000, 500 500, 501 000 at pixels 0, 100, 200 (the last clamped to 199).
    let (step, ticks) = map_ticks(500_000.0, 501_000.0, 5);
    assert_eq!(step, 500.0);
    assert_eq!(ticks, vec![500_000.0, 500_500.0, 501_000.0]);
    // 800 m of northing: 200 m step, 5 ticks from 5 999 200 to 6 000 000.
    let (step, ticks) = map_ticks(5_999_200.0, 6_000_000.0, 5);
    assert_eq!(step, 200.0);
    assert_eq!(ticks.len(), 5);

    let (c, placed) = draw_raster(&utm_map(), &RenderOptions::default(), None);
    let (x, y) = placed.panels[0];
    let (pw, ph) = (200, 160);
    let tick_row = y + ph + TICK_TOP + 1;
    let marks: Vec<usize> = (0..pw).filter(|&i| is_ink(&c, x + i, tick_row)).collect();
    assert_eq!(marks, vec![0, 100, 199]);
    // Northing ticks every 200 m = 40 px down from the top (6 000 000 at row 0); the bottom
    // one (5 999 200, row 160) is clamped to the last row.
    let tick_col = x - 3;
    let marks: Vec<usize> = (0..ph).filter(|&j| is_ink(&c, tick_col, y + j)).collect();
    assert_eq!(marks, vec![0, 40, 80, 120, 159]);
    // A label under each easting tick: ink in the label row around the tick.
    let label_row = y + ph + 1 + 4 + 3;
    for tx in [0usize, 100] {
        let inked = (0..GLYPH_PX)
            .flat_map(|dy| (0..24).map(move |dx| (dx, dy)))
            .any(|(dx, dy)| is_ink(&c, x + tx + dx, label_row + dy));
        assert!(inked, "no label at tick {tx}");
    }
}

#[test]
fn scale_bar_length_is_its_metres_over_metres_per_pixel() {
    // 200 px at 5 m/px: at most a quarter of 1000 m, so 200 m, 40 px.
    assert_eq!(scale_bar(5.0, 200), Some((200.0, 40)));
    let (c, placed) = draw_raster(&utm_map(), &RenderOptions::default(), None);
    let (x, y) = placed.panels[0];
    // The bar's middle row: under the foot row's length label.
    let bar_row = y + 160 + FOOT + GLYPH_PX + 6 + 1;
    let run = (0..200).take_while(|&i| is_ink(&c, x + i, bar_row)).count();
    assert_eq!(run, 40);
    assert!(!is_ink(&c, x + 40, bar_row));
}

#[test]
fn north_arrow_points_up_at_the_east_edge() {
    let (c, placed) = draw_raster(&utm_map(), &RenderOptions::default(), None);
    let (x, y) = placed.panels[0];
    let cx = x + 200 - 1 - GLYPH_PX / 2;
    let tip = y + 160 + FOOT + GLYPH_PX + 3;
    // The head widens downwards from a one-pixel tip: the arrow points north (up).
    let width = |row: usize| (cx - 5..=cx + 5).filter(|&i| is_ink(&c, i, row)).count();
    assert_eq!(width(tip), 1);
    assert_eq!(width(tip + 6), 7);
    assert!(width(tip - 1) == 0, "nothing just above the tip");
    // The shaft runs down from the tip.
    assert!((tip..tip + NORTH_ARROW_PX).all(|j| is_ink(&c, cx, j)));
    // "N" above it.
    let n_ink = (tip - GLYPH_PX - 3..tip - 3)
        .flat_map(|j| (cx - 4..cx + 4).map(move |i| (i, j)))
        .filter(|&(i, j)| is_ink(&c, i, j))
        .count();
    assert!(n_ink > 8, "{n_ink}");
}

#[test]
fn colour_bar_ends_are_the_colour_map_ends() {
    for colormap in [Colormap::Viridis, Colormap::Magma, Colormap::Cividis] {
        let opts = RenderOptions {
            colormap,
            units: "m s-1".into(),
            ..Default::default()
        };
        let (c, placed) = draw_raster(&utm_map(), &opts, None);
        let &(bx, by, h) = placed.bars.first().unwrap();
        assert_eq!(c.get(bx + 5, by), colormap.rgb(1.0));
        assert_eq!(c.get(bx + 5, by + h - 1), colormap.rgb(0.0));
        // The units are written above the bar.
        let inked = (by - GLYPH_PX - 8..by)
            .flat_map(|j| (bx..bx + 40).map(move |i| (i, j)))
            .any(|(i, j)| is_ink(&c, i, j));
        assert!(inked, "no units label above the bar");
    }
}

#[test]
fn panels_with_very_different_maxima_get_their_own_scales() {
    // Band 0 peaks at 1, band 1 at 1e-3: a factor 1000 > PER_PANEL_RATIO.
    let r = raster((40, 30, 5.0, 0.0, 150.0), 2, |b, _, c| {
        let peak = if b == 0 { 1.0 } else { 1e-3 };
        peak * c as f64 / 39.0
    });
    let grids: Vec<Vec<f64>> = match &r.data {
        RasterData::F64(v) => v.chunks(40 * 30).map(<[f64]>::to_vec).collect(),
        RasterData::F32(v) => v
            .chunks(40 * 30)
            .map(|b| b.iter().map(|&x| f64::from(x)).collect())
            .collect(),
    };
    let scales = choose_scales(&grids, Scale::Linear);
    assert!(matches!(scales, PanelScales::PerPanel(ref s) if s.len() == 2));
    let (c, placed) = draw_raster(&r, &RenderOptions::default(), None);
    assert_eq!(placed.panels.len(), 2);
    assert_eq!(placed.bars.len(), 2, "one colour bar per panel");
    // On its own scale, the east column of each band has the top colour: 200 x 150 px panels
    // (5x enlarged), the last column 5 px wide.
    let top = Colormap::Viridis.rgb(1.0);
    for &(x, y) in &placed.panels {
        assert_eq!(c.get(x + 198, y + 75), top);
        assert_eq!(c.get(x + 1, y + 75), Colormap::Viridis.rgb(0.0));
    }
    // Maxima within the factor share one scale and one bar.
    let near = raster((40, 30, 5.0, 0.0, 150.0), 2, |b, _, c| {
        let peak = if b == 0 { 1.0 } else { 1.01 / PER_PANEL_RATIO };
        peak * c as f64 / 39.0
    });
    let (c, placed) = draw_raster(&near, &RenderOptions::default(), None);
    assert_eq!(placed.bars.len(), 1);
    let (x, y) = placed.panels[1];
    assert_ne!(c.get(x + 198, y + 75), top);
}

#[test]
fn blend_map_has_its_frame() {
    let opts = RenderOptions {
        layout: Layout::Blend,
        ..Default::default()
    };
    let (c, placed) = draw_raster(&utm_map(), &opts, None);
    let (x, y) = placed.panels[0];
    let tick_row = y + 160 + TICK_TOP + 1;
    let marks: Vec<usize> = (0..200).filter(|&i| is_ink(&c, x + i, tick_row)).collect();
    assert_eq!(marks, vec![0, 100, 199]);
}
