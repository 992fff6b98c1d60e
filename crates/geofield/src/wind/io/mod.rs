//! The wind model's files (feature `io`): its inputs, the DEM and the stations CSV
//! ([`read_dem`], [`read_stations`]), and its outputs, the 3-D field as `.npz`, `.nc` or `.vti`
//! ([`write_field`]), a weather model's gridded wind from NetCDF ([`read_init_grid`]), the speed and direction rasters at a height above ground
//! ([`write_raster`]) and the map ([`write_map`]). [`check_memory`] refuses a grid whose solve
//! and outputs would not fit before anything is allocated.
//!
//! Layouts of the 3-D field:
//! - `.npz`: the solver's own arrays: `u` (nz, rows, cols+1), `v` (nz, rows+1, cols), `w`
//!   (nz+1, rows, cols) face velocities in m/s (f32; row 0 north, v positive north, face r of v
//!   the north edge of row r, k = 0 bottom), `solid` (nz, rows, cols) u8, `z_faces_m` (nz+1),
//!   `terrain_m` (rows, cols), `stability` (rows, cols) u8, the 0-d `x_min_m`, `y_max_m`,
//!   `cell_size_m`, and the 0-d i32 `crs_epsg` when the CRS is known (from the DEM). With cut
//!   cells also `theta` (nz, rows, cols), `ax`, `ay`, `az` (shaped as `u`, `v`, `w`): the open
//!   fractions of the cells and faces (f32); the flux through a face is its aperture × area ×
//!   its velocity (the fluid's, on the open part).
//! - `.nc` (CF-1.8, read with its georeferencing by GDAL, QGIS and xarray): cell-centred `u`,
//!   `v`, `w`, `speed` on (z, y, x) with `y` increasing (south to north, the order ncview draws
//!   the right way up; xarray plots by coordinate values either way), `_FillValue` −9999 in
//!   solid cells; coordinates x, y (cell centres, bounds in `x_bnds`, `y_bnds`) and z (layer
//!   centre elevations, bounds in `z_bnds`); `terrain` and `stability_class` on (y, x); the
//!   2-D `wind_speed` and `wind_from_direction` (y, x) at the output height above ground (the
//!   same values as the speed and direction rasters; the scalar coordinate `height` holds the
//!   height). When the CRS is known, the grid-mapping variable `crs` holds its CF parameters,
//!   `crs_wkt` and `spatial_ref` ([`geofield_io::crs::cf_grid_mapping`]) and every field has
//!   `grid_mapping = "crs"`. Global `history` holds the caller's history line
//!   ([`FieldMeta::history`]).
//! - `.vti`: the same cells, x east, y north, z up (uniform layers only): `wind` (u, v, w),
//!   `speed` and `solid` (1 below ground). Solid cells are **zero in every field**: a NaN
//!   vector stops ParaView's stream tracer with an error or spreads NaN through its
//!   interpolation, while zero makes tracers stall at the ground (where the no-flux wall is) and
//!   keeps contours and glyphs working; hide the ground with a Threshold on `solid` = 0.
//!   FieldData holds `crs` (EPSG:CODE), `crs_wkt`, the units of each array, the method and
//!   `history`.
//!
//! Stability classes have one coding in every format: 0 = A, 1 = B, … 5 = F (npz `stability`
//! u8, NetCDF `stability_class` with `flag_values` 0..5 and `flag_meanings` "A B C D E F").
//!
//! WindNinja's station CSV, output names and mast points: see [`read_station_file`],
//! [`ninja_output_stem`], [`read_points`] and [`write_points`].
//!
//! Every writer writes its file atomically (a temporary file renamed into place).

mod cf_time;
mod init_curvilinear;
mod init_grid;
mod init_weather;
mod netcdf;
mod ninja;
mod ninja_cfg;
mod read;
mod write;

/// The error for column `col` of the CSV record at `line` of `path` (`headers` the table's
/// header row): the one form of a bad field in the wind readers.
pub(crate) fn field_error(
    path: &std::path::Path,
    line: u64,
    headers: &[String],
    col: usize,
    reason: String,
) -> crate::InputError {
    crate::InputError::Field {
        path: path.to_path_buf(),
        line,
        field: format!("column \"{}\"", headers[col]),
        reason,
    }
}

pub use init_grid::{InitGridRead, InitGridRequest, TimeSel, read_init_grid, source_crs};
pub use netcdf::{NC_FILL, write_nc};
pub use ninja::{
    POINT_COLUMNS, Point, StationFile, is_windninja_header, ninja_output_stem, read_points,
    read_station_file, sample_points, write_points,
};
pub use ninja_cfg::{AtLine, NinjaCfg, TimeZone, centre_lonlat, parse_utc_offset, read_ninja_cfg};
pub use read::{
    Dem, DemError, STATION_COLUMNS, fill_nodata, geographic_reason, read_dem, read_stations,
};
pub use write::{
    FieldFormat, FieldMeta, OUTPUT_BYTES_PER_CELL, SurfaceRaster, WriteError, check_memory,
    write_field, write_map, write_npz, write_raster, write_surface, write_vti,
};
