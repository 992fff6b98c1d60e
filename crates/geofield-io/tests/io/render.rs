use std::path::Path;

use geofield_core::{Raster, RasterData};
use geofield_io::render::{
    Colormap, Layout, MARKER_FILL, MARKER_OUTLINE, RenderOptions, Scale, blend_hue, render_png,
    render_png_with_nodata,
};

use crate::{grid, raster_f32, raster_f64};

const MISSING: [u8; 3] = [211, 211, 211];

/// Decode an 8-bit RGB PNG: (width, height, pixels).
fn decode(p: &Path) -> (u32, u32, Vec<[u8; 3]>) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(p).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgb);
    assert_eq!(info.bit_depth, png::BitDepth::Eight);
    let px = buf[..info.buffer_size()]
        .chunks(3)
        .map(|c| [c[0], c[1], c[2]])
        .collect();
    (info.width, info.height, px)
}

fn count(px: &[[u8; 3]], rgb: [u8; 3]) -> usize {
    px.iter().filter(|&&p| p == rgb).count()
}

#[test]
fn four_band_panels_share_one_scale() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("panels.png");
    // 50 x 40 cells, enlarged 4x to 200 x 160 per panel. Band 3 holds the overall maximum and
    // band 0 the minimum; one NaN cell.
    let r = raster_f32(
        grid(50, 40, 1.0, 0.0, 40.0),
        &["Fagus", "Abies", "Picea", "Quercus"],
        |b, r, c| {
            if (b, r, c) == (1, 5, 5) {
                f32::NAN
            } else {
                (b * 100 + c) as f32 * 1e-3
            }
        },
    );
    let opts = RenderOptions {
        title: "Seed density".into(),
        units: "seeds/m^2".into(),
        ..Default::default()
    };
    render_png(&p, &r, &opts).unwrap();
    let (w, h, px) = decode(&p);
    // Two columns and two rows of 200 x 160 panels plus titles and the colour bar.
    assert!((2 * 200 + 40..900).contains(&w), "{w}");
    assert!((2 * 160 + 40..700).contains(&h), "{h}");
    let lowest = Colormap::Viridis.rgb(0.0);
    let highest = Colormap::Viridis.rgb(1.0);
    // Column 0 of band 0 (4 x 4 px per cell, 40 rows) is the minimum; column 49 of band 3 the
    // maximum: 160 x 4 pixels each, plus the ends of the colour bar.
    assert!(count(&px, lowest) >= 640, "{}", count(&px, lowest));
    assert!(count(&px, highest) >= 640, "{}", count(&px, highest));
    // The NaN cell: 4 x 4 light grey pixels.
    assert_eq!(count(&px, MISSING), 16);
}

#[test]
fn one_by_one_zero_raster_is_enlarged() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("one.png");
    let r = raster_f64(grid(1, 1, 1.0, 0.0, 1.0), &["zero"], |_, _, _| 0.0);
    render_png(&p, &r, &RenderOptions::default()).unwrap();
    let (w, h, px) = decode(&p);
    assert!(w >= 200 && h >= 200, "{w} x {h}");
    assert!(count(&px, Colormap::Viridis.rgb(0.0)) >= 200 * 200);
    // Log scale of all zeros falls back to a linear scale rather than dividing by zero.
    let log = RenderOptions {
        scale: Scale::Log {
            floor_fraction: 1e-4,
        },
        colormap: Colormap::Magma,
        ..Default::default()
    };
    render_png(&p, &r, &log).unwrap();
    let (_, _, px) = decode(&p);
    assert!(count(&px, Colormap::Magma.rgb(0.0)) >= 200 * 200);
}

#[test]
fn large_raster_is_reduced_to_the_pixel_budget() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("large.png");
    let r = raster_f32(grid(3000, 2000, 1.0, 0.0, 2000.0), &["ramp"], |_, r, _| {
        r as f32
    });
    render_png(&p, &r, &RenderOptions::default()).unwrap();
    let (w, h, _) = decode(&p);
    assert!(
        (1000..1300).contains(&w),
        "about 1000 px of map plus the bar: {w}"
    );
    assert!(h < 800, "{h}");
    let small = RenderOptions {
        max_pixels: 60_000,
        ..Default::default()
    };
    render_png(&p, &r, &small).unwrap();
    let (w, h, _) = decode(&p);
    assert!(w < 500 && h < 400, "{w} x {h}");
}

#[test]
fn blend_gives_each_band_its_hue() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("blend.png");
    // Band 0 fills the left half, band 1 the right half (2.0, with 1.0 on the bottom row), band 2
    // is everywhere zero, and one cell is missing in every band.
    let r = raster_f32(
        grid(40, 20, 1.0, 0.0, 20.0),
        &["left", "right", "none"],
        |b, r, c| {
            let v = if r == 19 { 1.0 } else { 2.0 };
            if (r, c) == (0, 0) {
                f32::NAN
            } else if (b == 0 && c < 20) || (b == 1 && c >= 20) {
                v
            } else {
                0.0
            }
        },
    );
    let opts = RenderOptions {
        layout: Layout::Blend,
        title: "Species".into(),
        ..Default::default()
    };
    render_png(&p, &r, &opts).unwrap();
    let (_, _, px) = decode(&p);
    // 20 x 19 cells per half at 5 x 5 px per cell have the largest total: the pure hue (minus
    // the NaN cell). The bottom row is at half strength, halfway between white and the hue.
    // The legend adds a 14 x 14 swatch of each hue.
    assert_eq!(count(&px, blend_hue(0)), 20 * 19 * 25 - 25 + 14 * 14);
    assert_eq!(count(&px, blend_hue(1)), 20 * 19 * 25 + 14 * 14);
    let half = blend_hue(1).map(|c| ((255.0 + c as f64) / 2.0).round() as u8);
    assert_eq!(count(&px, half), 20 * 25);
    assert_eq!(count(&px, MISSING), 25);
}

#[test]
fn nodata_cells_are_drawn_grey() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("nd.png");
    let r = raster_f64(grid(10, 10, 1.0, 0.0, 10.0), &["v"], |_, r, c| {
        if r < 2 { -9999.0 } else { c as f64 }
    });
    render_png_with_nodata(&p, &r, &RenderOptions::default(), Some(-9999.0)).unwrap();
    let (_, _, px) = decode(&p);
    // Two rows of ten cells at 20 x 20 px each.
    assert_eq!(count(&px, MISSING), 2 * 10 * 20 * 20);
    // Without the nodata value the -9999 cells set the bottom of the scale instead.
    render_png(&p, &r, &RenderOptions::default()).unwrap();
    let (_, _, px) = decode(&p);
    assert_eq!(count(&px, MISSING), 0);
}

#[test]
fn constant_bands_and_zero_bands_raster() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("c.png");
    let r = raster_f32(grid(7, 3, 1.0, 0.0, 3.0), &["a", "b", "c"], |_, _, _| 5.0);
    render_png(
        &p,
        &r,
        &RenderOptions {
            scale: Scale::Log {
                floor_fraction: 0.0,
            },
            ..Default::default()
        },
    )
    .unwrap();
    let (w, h, px) = decode(&p);
    assert!(w > 0 && h > 0);
    assert!(count(&px, Colormap::Viridis.rgb(1.0)) >= 3 * 7 * 3 * 28 * 28 / 2);
    let none = Raster {
        grid: grid(1, 1, 1.0, 0.0, 1.0),
        band_names: vec![],
        data: RasterData::F64(vec![]),
    };
    let e = render_png(&p, &none, &RenderOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("no bands"), "{e}");
}

/// World centre of cell (row, col) of a grid with 5 m cells and its north-west corner at
/// (1000, 2000).
fn centre(row: usize, col: usize) -> (f64, f64) {
    (
        1000.0 + (col as f64 + 0.5) * 5.0,
        2000.0 - (row as f64 + 0.5) * 5.0,
    )
}

/// Pixels that differ between two images of the same size, as (x, y).
fn changed(w: u32, a: &[[u8; 3]], b: &[[u8; 3]]) -> Vec<(usize, usize)> {
    assert_eq!(a.len(), b.len());
    let w = w as usize;
    (0..a.len())
        .filter(|&i| a[i] != b[i])
        .map(|i| (i % w, i / w))
        .collect()
}

/// Render `r` with and without `markers`: (width, plain pixels, marked pixels).
fn render_twice(
    r: &geofield_core::Raster,
    opts: &RenderOptions,
    markers: Vec<(f64, f64)>,
) -> (u32, Vec<[u8; 3]>, Vec<[u8; 3]>) {
    let dir = tempfile::tempdir().unwrap();
    let (p, q) = (dir.path().join("plain.png"), dir.path().join("marked.png"));
    render_png(&p, r, opts).unwrap();
    let marked = RenderOptions {
        markers,
        ..opts.clone()
    };
    render_png(&q, r, &marked).unwrap();
    let (w, h, a) = decode(&p);
    let (w2, h2, b) = decode(&q);
    assert_eq!((w, h), (w2, h2), "markers do not change the image size");
    (w, a, b)
}

/// Pixels of a marker dot 7 px across (radius about 3 px): 21 filled, 16 on the outline.
const DOT_FILL_PX: usize = 21;
const DOT_PX: usize = 37;

#[test]
fn markers_sit_on_their_cells() {
    // 10 x 8 cells of 5 m enlarged 20x: 200 x 160 px. Every cell has its own value; cell (0, 0)
    // holds the minimum, so the only pixels of the bottom colour outside the colour bar are its
    // 20 x 20, and the first of them in reading order is the panel's top-left corner.
    let r = raster_f64(grid(10, 8, 5.0, 1000.0, 2000.0), &["v"], |_, r, c| {
        (r * 10 + c) as f64
    });
    let (x, y) = centre(3, 7);
    let outside = [(999.0, 1990.0), (1020.0, 2000.5), (1051.0, 1990.0)];
    let mut markers = vec![(x, y)];
    markers.extend(outside);
    let (w, a, b) = render_twice(&r, &RenderOptions::default(), markers);
    let w = w as usize;
    let lowest = Colormap::Viridis.rgb(0.0);
    let first = a.iter().position(|&p| p == lowest).unwrap();
    let (ox, oy) = (first % w, first / w);
    // The marked cell spans pixels 140..160 across and 60..80 down; its centre is (150, 70).
    let (cx, cy) = (ox + 150, oy + 70);
    let at = |x: usize, y: usize| b[y * w + x];
    assert_eq!(at(cx, cy), MARKER_FILL);
    assert_eq!(at(cx + 1, cy + 1), MARKER_FILL);
    assert_eq!(at(cx + 3, cy), MARKER_OUTLINE);
    assert_eq!(at(cx, cy - 3), MARKER_OUTLINE);
    // Nothing else changed: one dot, no trace of the markers outside the extent.
    let diff = changed(w as u32, &a, &b);
    assert_eq!(diff.len(), DOT_PX, "{diff:?}");
    assert!(
        diff.iter()
            .all(|&(x, y)| x.abs_diff(cx) <= 3 && y.abs_diff(cy) <= 3),
        "{diff:?}"
    );
    // Outside the dot, the marked cell keeps its colour.
    assert_eq!(at(cx + 6, cy), a[cy * w + cx + 6]);
    assert_ne!(a[cy * w + cx], MARKER_FILL);
}

#[test]
fn markers_follow_block_reduction_on_every_panel() {
    // 60 x 40 cells, 2 bands, at most 1200 map pixels: blocks of 2 x 2 cells, 30 x 20 px per
    // panel. Source cell (21, 33) is display cell (10, 16).
    let r = raster_f32(grid(60, 40, 5.0, 1000.0, 2000.0), &["a", "b"], |b, r, c| {
        (b * 10_000 + r * 60 + c) as f32
    });
    let opts = RenderOptions {
        max_pixels: 1200,
        ..Default::default()
    };
    let (x, y) = centre(21, 33);
    let (w, a, b) = render_twice(&r, &opts, vec![(x, y)]);
    let w = w as usize;
    let first = a
        .iter()
        .position(|&p| p == Colormap::Viridis.rgb(0.0))
        .unwrap();
    let (ox, oy) = (first % w, first / w);
    let filled: Vec<(usize, usize)> = changed(w as u32, &a, &b)
        .into_iter()
        .filter(|&(x, y)| b[y * w + x] == MARKER_FILL)
        .collect();
    // One dot on each panel, at the same place on both.
    assert_eq!(filled.len(), 2 * DOT_FILL_PX, "{filled:?}");
    let mid = filled.iter().map(|p| p.0).sum::<usize>() / filled.len();
    let (left, right): (Vec<_>, Vec<_>) = filled.iter().partition(|p| p.0 < mid);
    assert_eq!(left.len(), DOT_FILL_PX);
    let centroid = |v: &[&(usize, usize)]| {
        let n = v.len();
        (
            v.iter().map(|p| p.0).sum::<usize>() / n,
            v.iter().map(|p| p.1).sum::<usize>() / n,
        )
    };
    let (l, r) = (centroid(&left), centroid(&right));
    assert_eq!(l, (ox + 16, oy + 10));
    assert_eq!(l.1, r.1);
    assert!(r.0 > l.0 + 30, "{l:?} {r:?}");
}

#[test]
fn markers_on_the_blend_map_are_clipped_to_it() {
    let r = raster_f64(grid(10, 8, 5.0, 1000.0, 2000.0), &["v"], |_, r, c| {
        (r * 10 + c + 1) as f64
    });
    let opts = RenderOptions {
        layout: Layout::Blend,
        ..Default::default()
    };
    // One marker at a cell centre, one on the east edge of the extent (half its dot is cut).
    let (x, y) = centre(3, 7);
    let (_, edge_y) = centre(0, 0);
    let (w, a, b) = render_twice(&r, &opts, vec![(x, y), (1050.0, edge_y)]);
    let w = w as usize;
    // The largest cell, (7, 9) in the bottom-right corner, has the pure hue; its last pixel is
    // the map's bottom-right pixel (the legend swatch of that hue is higher up).
    let last = a.iter().rposition(|&p| p == blend_hue(0)).unwrap();
    let (ox, oy) = (last % w - 199, last / w - 159);
    assert_eq!(b[(oy + 70) * w + ox + 150], MARKER_FILL);
    assert_eq!(b[(oy + 10) * w + ox + 199], MARKER_FILL);
    let diff = changed(w as u32, &a, &b);
    // The edge dot keeps the 22 of its 37 pixels that lie on the map.
    assert_eq!(diff.len(), DOT_PX + 22, "{diff:?}");
    assert!(diff.iter().all(|&(x, _)| x < ox + 200), "{diff:?}");
}

#[test]
fn wind_map_shows_speed_arrows_and_stations() {
    use geofield_io::{WindMap, write_wind_png};
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("wind.png");
    let (cols, rows) = (40, 30);
    let g = grid(cols, rows, 10.0, 0.0, 300.0);
    let terrain: Vec<f64> = (0..cols * rows)
        .map(|i| {
            let (r, c) = ((i / cols) as f64 - 15.0, (i % cols) as f64 - 20.0);
            100.0 + 50.0 * (-(r * r + c * c) / 50.0).exp()
        })
        .collect();
    let speed: Vec<f64> = (0..cols * rows)
        .map(|i| 3.0 + (i % cols) as f64 * 0.1)
        .collect();
    let direction = vec![270.0; cols * rows];
    let map = WindMap {
        title: "wind at 10 m".into(),
        grid: g,
        terrain_m: &terrain,
        speed_m_per_s: &speed,
        direction_deg: &direction,
        markers: vec![(55.0, 155.0), (1e6, 0.0)],
        marker_labels: vec!["S1".into(), "far".into()],
        colormap: Colormap::Viridis,
        max_pixels: 4_000_000,
    };
    write_wind_png(&p, &map).unwrap();
    let (w, h, px) = decode(&p);
    // 40 x 30 cells enlarged 15x (to about 600 px across): a 600 x 450 map plus the title,
    // axes, bar and note.
    assert!(w >= 600 && h >= 450, "{w} x {h}");
    // The map fills the canvas: coloured (non-white) pixels are more than half the image.
    let coloured = px.iter().filter(|&&p| p != [255, 255, 255]).count();
    assert!(coloured * 2 > (w * h) as usize, "{coloured} of {w} x {h}");
    assert!(count(&px, [15, 15, 15]) > 50, "arrows drawn");
    assert!(count(&px, MARKER_FILL) > 10 && count(&px, MARKER_OUTLINE) > 10);
    // The station's id is written beside it: without labels only the label pixels change,
    // all right of the marker (at 5.5 cells = 82.5 px into the map) and within a label's
    // height of its row (12.5 cells = 187.5 px down).
    let q = dir.path().join("nolabels.png");
    let unlabelled = WindMap {
        marker_labels: Vec::new(),
        ..map.clone()
    };
    write_wind_png(&q, &unlabelled).unwrap();
    let (_, _, plain) = decode(&q);
    let w = w as usize;
    let diff: Vec<(usize, usize)> = (0..px.len())
        .filter(|&i| px[i] != plain[i])
        .map(|i| (i % w, i / w))
        .collect();
    assert!(diff.len() > 20, "{}", diff.len());
    let (x_min, x_max) = (
        diff.iter().map(|d| d.0).min().unwrap(),
        diff.iter().map(|d| d.0).max().unwrap(),
    );
    let (y_min, y_max) = (
        diff.iter().map(|d| d.1).min().unwrap(),
        diff.iter().map(|d| d.1).max().unwrap(),
    );
    // "S1" on a box 2 glyphs + 4 px wide and 12 px high.
    assert_eq!(x_max - x_min + 1, 20, "{diff:?}");
    assert_eq!(y_max - y_min + 1, 12, "{diff:?}");
    // Wrong lengths: an error naming the file, and no file.
    let bad = WindMap {
        speed_m_per_s: &speed[1..],
        ..map.clone()
    };
    let q = dir.path().join("bad.png");
    let e = write_wind_png(&q, &bad).unwrap_err().to_string();
    assert!(e.contains("bad.png") && e.contains("speed"), "{e}");
    assert!(!q.exists());
    // Calm air everywhere draws no arrows and does not fail.
    let calm = vec![0.0; cols * rows];
    let still = WindMap {
        speed_m_per_s: &calm,
        ..map
    };
    write_wind_png(&p, &still).unwrap();
    let (_, _, px) = decode(&p);
    assert_eq!(count(&px, [15, 15, 15]), 0);
}
