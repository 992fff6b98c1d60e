//! Writing a solved wind field: the 3-D field as `.npz` or `.vti` (`.nc` in
//! [`super::netcdf`]), the speed and direction rasters at a height above ground, the map; the
//! memory check of a field that is to be solved and written.

use std::path::{Path, PathBuf};

use geofield_core::{Raster, RasterData};
use geofield_io::geotiff::Compression;
use geofield_io::{Colormap, IoError, NpzArray, NpzData, RasterMeta, VtkArray, VtkImage, WindMap};

use crate::GeofieldError;
use crate::wind::{Station, Surface, WindField, WindGrid};

/// Errors of the writers that sample the field before writing it.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The file cannot be written (see [`geofield_io::IoError`]).
    #[error(transparent)]
    File(#[from] IoError),
    /// The field does not fit its grid, or cannot be sampled for output.
    #[error(transparent)]
    Field(#[from] GeofieldError),
}

impl From<geofield_core::CoreError> for WriteError {
    fn from(e: geofield_core::CoreError) -> Self {
        WriteError::Field(e.into())
    }
}

/// Format of the 3-D field, by extension.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum FieldFormat {
    /// `.npz`: the face velocities as solved.
    Npz,
    /// `.nc`: CF NetCDF, cell-centred.
    Nc,
    /// `.vti`: VTK image data, cell-centred (uniform layers only).
    Vti,
}

impl FieldFormat {
    /// The format of `path` by its extension (any case), or `None` for another extension.
    pub fn from_path(path: &Path) -> Option<Self> {
        let ext = path.extension().map(|e| e.to_string_lossy().to_lowercase());
        match ext.as_deref() {
            Some("npz") => Some(FieldFormat::Npz),
            Some("nc") => Some(FieldFormat::Nc),
            Some("vti") => Some(FieldFormat::Vti),
            _ => None,
        }
    }
}

/// What the files record beside the field: the CRS (from the DEM), the run's history line and
/// provenance, and the 2-D speed and direction at `height_agl_m` (row 0 north, see
/// [`crate::wind::at_height_agl`]).
#[derive(Debug, Clone)]
pub struct FieldMeta<'a> {
    /// EPSG code of the grid's coordinate reference system, when known.
    pub crs_epsg: Option<u16>,
    /// The CF `history` line (NetCDF global attribute, VTK field data): when and how the field
    /// was made.
    pub history: String,
    /// Provenance items of the caller (version, command line, time) that the rasters record
    /// before the method's own (method, height, alpha, iterations, divergence).
    pub provenance: Vec<(String, String)>,
    /// Height above ground of `speed` and `direction` (m).
    pub height_agl_m: f64,
    /// How GeoTIFF rasters are compressed.
    pub compression: Compression,
    /// Horizontal wind speed at `height_agl_m` per column (m/s).
    pub speed: &'a [f64],
    /// Direction the wind comes from at `height_agl_m` per column (degrees clockwise from
    /// north).
    pub direction: &'a [f64],
}

/// Bytes per cell that writing the field needs besides the solver's
/// ([`WindGrid::BYTES_PER_CELL`]): cell-centred fields (4 × f64), f32 copies for the outputs
/// (faces and cells).
pub const OUTPUT_BYTES_PER_CELL: usize = 4 * 8 + 8 * 4;

/// Refuse, before anything is allocated, a grid of `cols x rows x nz` cells whose solve and
/// outputs ([`OUTPUT_BYTES_PER_CELL`]) would need more than the available memory (see
/// [`WindGrid::check_memory`]).
pub fn check_memory(cols: usize, rows: usize, nz: usize) -> Result<(), geofield_core::CoreError> {
    WindGrid::check_memory(cols, rows, nz, OUTPUT_BYTES_PER_CELL)
}

/// Cell order (k, row, col) with row 0 north → (k, j, i) with j = 0 south, as NetCDF with an
/// increasing y and VTK image data want; `f` maps a cell index to the value.
pub(super) fn south_up<T>(rows: usize, cols: usize, nz: usize, f: impl Fn(usize) -> T) -> Vec<T> {
    let mut out = Vec::with_capacity(nz * rows * cols);
    for k in 0..nz {
        for j in 0..rows {
            let row = rows - 1 - j;
            for col in 0..cols {
                out.push(f((k * rows + row) * cols + col));
            }
        }
    }
    out
}

/// The 3-D field in `format` (see the module docs of [`crate::wind::io`] for each layout).
pub fn write_field(
    path: &Path,
    format: FieldFormat,
    field: &WindField,
    meta: &FieldMeta,
) -> Result<(), WriteError> {
    match format {
        FieldFormat::Npz => write_npz(path, field, meta.crs_epsg)?,
        FieldFormat::Nc => super::write_nc(path, field, &crate::wind::cell_centred(field)?, meta)?,
        FieldFormat::Vti => write_vti(path, field, &crate::wind::cell_centred(field)?, meta)?,
    }
    Ok(())
}

/// The solver's face velocities and grid as `.npz` (layout in [`crate::wind::io`]).
pub fn write_npz(path: &Path, field: &WindField, crs_epsg: Option<u16>) -> Result<(), IoError> {
    let g = &field.grid;
    let (nz, rows, cols) = (g.nz, g.rows(), g.cols());
    let f32s = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<f32>>();
    let (u, v, w) = (f32s(&field.u), f32s(&field.v), f32s(&field.w));
    let solid = g.solid_mask();
    let stability: Vec<u8> = field.stability.iter().map(|s| s.index()).collect();
    let (x0, y1, cell) = ([g.plan.x_min_m], [g.plan.y_max_m], [g.plan.cell_size_m]);
    let epsg = crs_epsg.map(|c| [i32::from(c)]);
    let mut arrays = vec![
        ("u", NpzArray::new(&[nz, rows, cols + 1], NpzData::F32(&u))),
        ("v", NpzArray::new(&[nz, rows + 1, cols], NpzData::F32(&v))),
        ("w", NpzArray::new(&[nz + 1, rows, cols], NpzData::F32(&w))),
        (
            "solid",
            NpzArray::new(&[nz, rows, cols], NpzData::U8(&solid)),
        ),
        (
            "z_faces_m",
            NpzArray::new(&[nz + 1], NpzData::F64(&g.z_faces_m)),
        ),
        (
            "terrain_m",
            NpzArray::new(&[rows, cols], NpzData::F64(&g.terrain_m)),
        ),
        (
            "stability",
            NpzArray::new(&[rows, cols], NpzData::U8(&stability)),
        ),
        ("x_min_m", NpzArray::new(&[], NpzData::F64(&x0))),
        ("y_max_m", NpzArray::new(&[], NpzData::F64(&y1))),
        ("cell_size_m", NpzArray::new(&[], NpzData::F64(&cell))),
    ];
    if let Some(e) = &epsg {
        arrays.push(("crs_epsg", NpzArray::new(&[], NpzData::I32(e))));
    }
    let fractions = g
        .cut
        .as_ref()
        .map(|c| (f32s(&c.theta), f32s(&c.ax), f32s(&c.ay), f32s(&c.az)));
    if let Some((theta, ax, ay, az)) = &fractions {
        arrays.extend([
            (
                "theta",
                NpzArray::new(&[nz, rows, cols], NpzData::F32(theta)),
            ),
            ("ax", NpzArray::new(&[nz, rows, cols + 1], NpzData::F32(ax))),
            ("ay", NpzArray::new(&[nz, rows + 1, cols], NpzData::F32(ay))),
            ("az", NpzArray::new(&[nz + 1, rows, cols], NpzData::F32(az))),
        ]);
    }
    geofield_io::write_npz(path, &arrays)
}

/// The cell-centred field `cells` ([`crate::wind::cell_centred`]) as VTK image data (layout in
/// [`crate::wind::io`]); an error for stretched layers, which image data cannot hold.
pub fn write_vti(
    path: &Path,
    field: &WindField,
    cells: &crate::wind::CellFields,
    meta: &FieldMeta,
) -> Result<(), IoError> {
    let g = &field.grid;
    if !g.uniform_layers() {
        return Err(IoError::InvalidOutput {
            path: path.to_path_buf(),
            reason: "VTK image data needs uniform layers; write .nc or .npz for stretched \
                     layers"
                .into(),
        });
    }
    let (nz, rows, cols) = (g.nz, g.rows(), g.cols());
    // Solid cells are zero in every field (see the module docs).
    let zero = |x: f64| if x.is_finite() { x as f32 } else { 0.0 };
    let wind: Vec<f32> = south_up(rows, cols, nz, |i| {
        [zero(cells.u[i]), zero(cells.v[i]), zero(cells.w[i])]
    })
    .into_iter()
    .flatten()
    .collect();
    let speed = south_up(rows, cols, nz, |i| zero(cells.speed[i]));
    let solid_mask = g.solid_mask();
    let solid = south_up(rows, cols, nz, |i| solid_mask[i]);
    let mut field_data: Vec<(String, String)> = vec![
        ("units_wind".into(), "m s-1".into()),
        ("units_speed".into(), "m s-1".into()),
        (
            "solid".into(),
            "1 below ground; wind and speed are 0 there".into(),
        ),
        ("method".into(), field.report.method.clone()),
        ("history".into(), meta.history.clone()),
    ];
    if let Some(e) = meta.crs_epsg {
        field_data.push(("crs".into(), format!("EPSG:{e}")));
        if let Some(wkt) = geofield_io::crs::epsg_wkt(e) {
            field_data.push(("crs_wkt".into(), wkt.into()));
        }
    }
    let image = VtkImage {
        origin: [g.plan.x_min_m, g.plan.y_min_m(), g.z_faces_m[0]],
        spacing: [g.plan.cell_size_m, g.plan.cell_size_m, g.dz_m(0)],
        cells: [cols, rows, nz],
        cell_data: vec![
            ("wind".into(), VtkArray::F32x3(&wind)),
            ("speed".into(), VtkArray::F32(&speed)),
            ("solid".into(), VtkArray::U8(&solid)),
        ],
        point_data: vec![],
        field_data,
    };
    geofield_io::write_vti(path, &image)
}

/// Which 2-D raster of the wind at a height above ground.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SurfaceRaster {
    /// Horizontal wind speed (m s-1), band `wind_speed`.
    Speed,
    /// Where the wind comes from, degrees clockwise from north, band `wind_from_direction`.
    Direction,
}

/// The speed or direction of `meta` as a one-band f32 raster (`.tif`, `.asc` or `.npy` by
/// extension, see [`geofield_io::write_raster`]) with the CRS, units, a description and the
/// provenance (the caller's items, then the method's), like WindNinja's grids. Returns the
/// files written.
pub fn write_raster(
    path: &Path,
    which: SurfaceRaster,
    field: &WindField,
    meta: &FieldMeta,
) -> Result<Vec<PathBuf>, WriteError> {
    let values = match which {
        SurfaceRaster::Speed => meta.speed,
        SurfaceRaster::Direction => meta.direction,
    };
    write_grid(path, which, &field.grid.plan, values, field, meta)
}

/// [`write_raster`] for a [`Surface`] on its own grid (WindNinja's output resolution, see
/// [`crate::wind::surface`]); `.asc` gets its `.prj` when the CRS is known. Returns the files
/// written.
pub fn write_surface(
    path: &Path,
    which: SurfaceRaster,
    surface: &Surface,
    field: &WindField,
    meta: &FieldMeta,
) -> Result<Vec<PathBuf>, WriteError> {
    let values = match which {
        SurfaceRaster::Speed => &surface.speed,
        SurfaceRaster::Direction => &surface.direction,
    };
    write_grid(path, which, &surface.plan, values, field, meta)
}

fn write_grid(
    path: &Path,
    which: SurfaceRaster,
    plan: &geofield_core::GridSpec,
    values: &[f64],
    field: &WindField,
    meta: &FieldMeta,
) -> Result<Vec<PathBuf>, WriteError> {
    let (name, units, what) = match which {
        SurfaceRaster::Speed => ("wind_speed", "m s-1", "wind speed"),
        SurfaceRaster::Direction => (
            "wind_from_direction",
            "degree",
            "wind direction (from, clockwise from north)",
        ),
    };
    let raster = Raster::new(
        *plan,
        vec![name.to_string()],
        RasterData::F32(values.iter().map(|&v| v as f32).collect()),
    )?;
    let r = &field.report;
    let h = meta.height_agl_m;
    let mut provenance = meta.provenance.clone();
    provenance.extend([
        ("method".to_string(), r.method.clone()),
        ("height_agl_m".to_string(), h.to_string()),
        ("alpha".to_string(), r.alpha.to_string()),
        ("iterations".to_string(), r.iterations.to_string()),
        (
            "max_divergence_per_s".to_string(),
            r.max_div_per_s.to_string(),
        ),
    ]);
    let raster_meta = RasterMeta {
        crs_epsg: meta.crs_epsg,
        nodata: None,
        units: Some(units.to_string()),
        description: Some(format!("{what} at {h} m above ground ({})", r.method)),
        provenance,
        compression: meta.compression,
    };
    Ok(geofield_io::write_raster(path, &raster, &raster_meta)?)
}

/// The map of the wind at `meta`'s height above ground: speed over hillshaded terrain, arrows,
/// and the stations inside the grid, labelled with their ids (see
/// [`geofield_io::write_wind_png`]).
pub fn write_map(
    path: &Path,
    field: &WindField,
    stations: &[Station],
    meta: &FieldMeta,
) -> Result<(), IoError> {
    let ext = field.grid.plan.extent();
    let inside: Vec<&Station> = stations
        .iter()
        .filter(|s| ext.contains(s.x_m, s.y_m))
        .collect();
    let map = WindMap {
        title: format!(
            "wind {} m above ground ({})",
            meta.height_agl_m, field.report.method
        ),
        grid: field.grid.plan,
        terrain_m: &field.grid.terrain_m,
        speed_m_per_s: meta.speed,
        direction_deg: meta.direction,
        markers: inside.iter().map(|s| (s.x_m, s.y_m)).collect(),
        marker_labels: inside.iter().map(|s| s.id.clone()).collect(),
        colormap: Colormap::Viridis,
        max_pixels: 4_000_000,
    };
    geofield_io::write_wind_png(path, &map)
}
