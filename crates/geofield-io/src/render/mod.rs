//! PNG maps of rasters for people to look at.
//!
//! Two layouts:
//!
//! - [`Layout::Panels`]: one panel per band in a near-square grid (2 x 2 for four bands), each
//!   titled with its band name; the title on top. The panels share one colour scale, shown by a
//!   single colour bar with tick labels and the units, unless the bands' largest magnitudes differ
//!   by more than a factor of 10 (`PER_PANEL_RATIO`): then each panel gets its own scale and its
//!   own colour bar (with the units) beside it, so that a band of small values is not drawn all
//!   in the bottom colour.
//! - [`Layout::Blend`]: one map in which each band has a hue (as in a paper figure where each
//!   species gets a colour). A pixel's hue is the mix of the band hues weighted by each band's
//!   value normalised by that band's maximum, so every band shows up wherever it dominates;
//!   its strength (from white to the full hue) is the total of all bands on the chosen scale.
//!   A legend gives the band hues and a grey bar the scale of the total.
//!
//! Every map panel (here and in [`write_wind_png`]) has a frame drawn around it, never over it:
//! easting ticks under it and northing ticks left of it, labelled in metres at multiples of 1, 2
//! or 5 times a power of ten (at most five per axis), axis titles "easting (m)" and
//! "northing (m)", and under the easting labels a scale bar of a round length (1, 2 or 5 times a
//! power of ten metres, at most a quarter of the panel width) and a north arrow (rasters are
//! north-up).
//!
//! Large rasters are reduced for display by block means over square blocks of cells so that a
//! panel is at most about 1000 pixels across and all panels together stay within
//! [`RenderOptions::max_pixels`]; small rasters are enlarged (nearest neighbour) to about 200
//! pixels. NaN, infinite and nodata cells are drawn light grey. Degenerate data (all zero,
//! constant, a single cell) renders with a sensible scale rather than failing.
//!
//! [`RenderOptions::markers`] puts small dots (white with a dark outline, [`MARKER_FILL`] and
//! [`MARKER_OUTLINE`], so that they show on any colour map) at world points on every panel, e.g.
//! the sample locations under a kriged surface.
//!
//! [`write_section_png`] draws a vertical cross-section of a layered model (stratigraphy), with
//! the wells near it and their distance from it.
//!
//! [`write_wind_png`] draws the wind at one height: speed over hillshaded terrain, arrows,
//! stations with their ids.
//!
//! Units are written as the caller spells them (the CLI uses one spelling throughout, e.g.
//! "seeds m-2 yr-1", "m s-1", "m"). Text uses the 8x8 bitmap font of `font8x8` (public domain,
//! from a crate); the image is written as 8-bit RGB PNG.
//!
//! [`render_flock`] draws a 3-D point cloud of agents (a boids flock) in perspective; its frames
//! go to PNG ([`write_frame_png`]) or to a looping animated GIF ([`write_gif`]).

mod axes;
mod chart;
mod chart_series;
mod colormap;
mod flock;
mod layout;
#[cfg(test)]
mod map_tests;
mod sample;
mod section;
mod text;
mod wind;

use std::path::Path;

use geofield_core::{Raster, RasterData};

pub use chart::{XyChart, write_xy_chart_png, write_xy_chart_series_png};
pub use chart_series::{ChartSeries, DASH_OFF_PX, DASH_ON_PX, LineStyle, SERIES_MARKER_PX};
pub use colormap::{BLEND_HUES, Colormap, blend_hue};
pub use flock::{
    FlockFrame, FlockOverlay, FlockView, render_flock, render_flock_scene, write_frame_png,
    write_gif,
};
pub use layout::{MARKER_FILL, MARKER_OUTLINE};
pub use section::{Section, SectionWell, layer_colour, write_section_png};
pub use text::{GLYPH_PX, text_pixels, text_width};
pub use wind::{WindMap, write_wind_png};

use crate::IoError;
use crate::atomic::write_atomic;
use crate::raster_out::check_shape;
use axes::MapGeometry;
use sample::{Resample, block_mean};

/// Default bound on the number of map pixels (all panels together).
pub const DEFAULT_MAX_PIXELS: usize = 4_000_000;

/// How values map to colours.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Scale {
    /// Linear from the smallest to the largest value shown.
    #[default]
    Linear,
    /// Logarithmic from `floor_fraction` times the largest value (e.g. 1e-4) up to the largest;
    /// values at or below the floor, zero included, get the bottom colour.
    Log {
        /// The floor as a fraction of the largest value, in (0, 1); anything else means 1e-4.
        floor_fraction: f64,
    },
}

/// Arrangement of the bands in the image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    /// One panel per band, shared colour scale, one colour bar.
    #[default]
    Panels,
    /// All bands in one map, one hue per band.
    Blend,
}

/// What to draw and how.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderOptions {
    /// Title at the top of the image (may be empty).
    pub title: String,
    /// Units of the values, shown with the colour bar (may be empty).
    pub units: String,
    /// Colour map for [`Layout::Panels`].
    pub colormap: Colormap,
    /// Value scale.
    pub scale: Scale,
    /// Panels or blend.
    pub layout: Layout,
    /// Upper bound on map pixels, all panels together (titles and colour bar come on top).
    pub max_pixels: usize,
    /// Points (x, y) in world metres marked with a dot on every map panel, at the pixel that
    /// shows them after any display reduction or enlargement; points outside the raster's
    /// extent are skipped. Empty by default.
    pub markers: Vec<(f64, f64)>,
}

impl Default for RenderOptions {
    fn default() -> Self {
        Self {
            title: String::new(),
            units: String::new(),
            colormap: Colormap::default(),
            scale: Scale::default(),
            layout: Layout::default(),
            max_pixels: DEFAULT_MAX_PIXELS,
            markers: Vec::new(),
        }
    }
}

/// Render `raster` to a PNG at `path` (written atomically). NaN and infinite cells are drawn as
/// missing.
pub fn render_png(path: &Path, raster: &Raster, opts: &RenderOptions) -> Result<(), IoError> {
    render_png_with_nodata(path, raster, opts, None)
}

/// As [`render_png`], also drawing cells equal to `nodata` as missing.
pub fn render_png_with_nodata(
    path: &Path,
    raster: &Raster,
    opts: &RenderOptions,
    nodata: Option<f64>,
) -> Result<(), IoError> {
    check_shape(path, raster)?;
    let (canvas, _) = draw_raster(raster, opts, nodata);
    write_png(path, &canvas)
}

/// Draw `raster` (of a checked shape) as [`render_png_with_nodata`] does; also returns where the
/// panels and colour bars were placed.
fn draw_raster(
    raster: &Raster,
    opts: &RenderOptions,
    nodata: Option<f64>,
) -> (text::Canvas, layout::Placed) {
    let (rows, cols) = (raster.grid.rows, raster.grid.cols);
    let panels = match opts.layout {
        Layout::Panels => raster.n_bands(),
        Layout::Blend => 1,
    };
    let plan = Resample::plan(rows, cols, panels, opts.max_pixels);
    let n_cells = rows * cols;
    let grids: Vec<Vec<f64>> = match &raster.data {
        RasterData::F32(v) => v
            .chunks(n_cells)
            .map(|b| block_mean(b, cols, plan.block, nodata))
            .collect(),
        RasterData::F64(v) => v
            .chunks(n_cells)
            .map(|b| block_mean(b, cols, plan.block, nodata))
            .collect(),
    };
    let markers: Vec<(f64, f64)> = opts
        .markers
        .iter()
        .filter_map(|&(x, y)| plan.panel_position(&raster.grid, x, y))
        .collect();
    let geo = MapGeometry::new(&raster.grid, &plan);
    match opts.layout {
        Layout::Panels => {
            let scales = layout::choose_scales(&grids, opts.scale);
            let names = &raster.band_names;
            layout::draw_panels(&grids, names, &plan, &geo, &scales, opts, &markers)
        }
        Layout::Blend => {
            layout::draw_blend(&grids, &raster.band_names, &plan, &geo, opts, &markers)
        }
    }
}

/// Encode the canvas as 8-bit RGB PNG.
fn write_png(path: &Path, canvas: &text::Canvas) -> Result<(), IoError> {
    write_rgb_png(path, canvas.width, canvas.height, &canvas.pixels)
}

/// Encode `pixels` (8-bit RGB, row-major from the top, `width * height * 3` bytes) as PNG at
/// `path`, written atomically.
pub(crate) fn write_rgb_png(
    path: &Path,
    width: usize,
    height: usize,
    pixels: &[u8],
) -> Result<(), IoError> {
    let too_large = || IoError::InvalidOutput {
        path: path.to_path_buf(),
        reason: format!("the image would be {width} x {height} pixels"),
    };
    let png_width = u32::try_from(width).map_err(|_| too_large())?;
    let png_height = u32::try_from(height).map_err(|_| too_large())?;
    write_atomic(path, |w| {
        let mut encoder = png::Encoder::new(w, png_width, png_height);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().map_err(std::io::Error::other)?;
        writer
            .write_image_data(pixels)
            .map_err(std::io::Error::other)?;
        writer.finish().map_err(std::io::Error::other)
    })
}
