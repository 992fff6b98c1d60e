//! geofield's file formats.
//!
//! - [`csv_input`]: CSV tables with a header row, streamed record by record, with errors that
//!   name file, line and column.
//! - [`atomic`]: outputs written to a temporary file and renamed into place when complete.
//! - [`raster_out`]: rasters to Cloud-Optimized GeoTIFF (`.tif`, [`geotiff`]), ESRI ASCII grid
//!   (`.asc`, with a `.prj` sidecar when the CRS is known) or NumPy (`.npy`) by extension; [`npy`] also reads and writes plain arrays, and [`npz`] archives of named arrays
//!   ([`write_npz`], as `numpy.savez`).
//! - [`raster_in`]: rasters from GeoTIFF or ESRI ASCII grid by extension ([`read_raster`]),
//!   with their georeferencing, band names and nodata.
//! - [`render`]: PNG maps for people to look at (panels per band or a colour blend of bands,
//!   with optional point markers), vertical cross-sections of layered models
//!   ([`write_section_png`]), and point-cloud pictures of a 3-D flock ([`render_flock`]) as PNG
//!   or animated GIF.
//! - [`crs`]: coordinate reference systems by EPSG code: WKT and CF grid-mapping attributes.
//! - [`vtk`]: 3-D fields as VTK XML image data (`.vti`, zlib-compressed) for ParaView
//!   ([`write_vti`]).
//! - [`netcdf`]: dimensions, attributes and variables as NetCDF-3 (`.nc`) for xarray and ncview
//!   ([`write_netcdf`]); [`netcdf_in`] reads NetCDF-3 inputs with CF unpacking ([`NcReader`]).
//!
//! Conventions follow DESIGN.md "Data conventions": world coordinates in metres, row 0 of a grid
//! is its north edge, rasters are band-major `(band, row, col)`.

pub mod ascii_grid;
pub mod ascii_grid_in;
pub mod atomic;
pub mod crs;
pub mod csv_input;
mod error;
pub mod geotiff;
pub mod geotiff_in;
pub mod netcdf;
pub mod netcdf_in;
pub mod npy;
pub mod npz;
pub mod npz_in;
pub mod project;
pub mod raster_in;
pub mod raster_out;
pub mod render;
pub mod vtk;

pub use atomic::write_atomic;
pub use csv_input::{CsvChunks, CsvRecord, CsvRow, CsvTable};
pub use error::{IoError, QUOTE_MAX_CHARS, shorten};
pub use netcdf::{NcAttr, NcData, NcFile, NcVar, write_netcdf};
pub use netcdf_in::{NcReader, NcVarInfo};
pub use npy::{NpyArray, NpyData, read_npy, write_npy_f32, write_npy_f64, write_npy_i64};
pub use npz::{NpzArray, NpzData, write_npz};
pub use npz_in::read_npz;
pub use raster_in::read_raster;
pub use raster_out::{RasterFormat, RasterMeta, write_raster};
pub use render::{
    Colormap, FlockFrame, FlockOverlay, FlockView, Layout, RenderOptions, Scale, Section,
    SectionWell, WindMap, XyChart, render_flock, render_flock_scene, render_png, write_frame_png,
    write_gif, write_section_png, write_wind_png, write_xy_chart_png,
};
pub use vtk::{VtkArray, VtkImage, write_vti};
