//! Outputs of `geofield wind`: the 3-D field as `.npz`, `.nc` or `.vti`, the speed and
//! direction rasters at a height above ground, the map. Every file is staged next to its
//! target and renamed into place only when all of them were written (`outputs::Outputs`), so a failed
//! run leaves no output at all.
//!
//! Layouts:
//! - `.npz`: the solver's own arrays: `u` (nz, rows, cols+1), `v` (nz, rows+1, cols), `w`
//!   (nz+1, rows, cols) face velocities in m/s (f32; row 0 north, v positive north, face r of v
//!   the north edge of row r, k = 0 bottom), `solid` (nz, rows, cols) u8, `z_faces_m` (nz+1),
//!   `terrain_m` (rows, cols), `stability` (rows, cols) u8, the 0-d `x_min_m`, `y_max_m`,
//!   `cell_size_m`, and the 0-d i32 `crs_epsg` when the CRS is known (from the DEM).
//! - `.nc` (CF-1.8, read with its georeferencing by GDAL, QGIS and xarray): cell-centred `u`,
//!   `v`, `w`, `speed` on (z, y, x) with `y` increasing (south to north, the order ncview draws
//!   the right way up; xarray plots by coordinate values either way), `_FillValue` −9999 in
//!   solid cells; coordinates x, y (cell centres, bounds in `x_bnds`, `y_bnds`) and z (layer
//!   centre elevations, bounds in `z_bnds`); `terrain` and `stability_class` on (y, x); the
//!   2-D `wind_speed` and `wind_from_direction` (y, x) at the output height above ground (the
//!   same values as `--speed-out` / `--direction-out`; the scalar coordinate `height` holds the
//!   height). When the CRS is known, the grid-mapping variable `crs` holds its CF parameters,
//!   `crs_wkt` and `spatial_ref` ([`geofield_io::crs::cf_grid_mapping`]) and every field has
//!   `grid_mapping = "crs"`. Global `history` holds the time and command line of the run.
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

use std::path::Path;

use anyhow::Result;
use geofield::wind::sample::CellFields;
use geofield::wind::{Stability, WindField};
use geofield_io::{NcAttr, NcData, NcFile, NcVar, NpzArray, NpzData, VtkArray, VtkImage};

/// Fill value of the NetCDF fields in solid cells.
pub(crate) const NC_FILL: f32 = -9999.0;

/// Cell order (k, row, col) with row 0 north → (k, j, i) with j = 0 south, as NetCDF with an
/// increasing y and VTK image data want; `f` maps a cell index to the value.
fn south_up<T>(rows: usize, cols: usize, nz: usize, f: impl Fn(usize) -> T) -> Vec<T> {
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

pub(crate) fn write_npz(path: &Path, field: &WindField, crs_epsg: Option<u16>) -> Result<()> {
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
    geofield_io::write_npz(path, &arrays)?;
    Ok(())
}

fn text(s: &str) -> NcAttr {
    NcAttr::Text(s.to_string())
}

fn attrs(list: &[(&str, NcAttr)]) -> Vec<(String, NcAttr)> {
    list.iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

/// What the NetCDF and VTK files record beside the 3-D field: the CRS (from the DEM), the
/// run's history line, and the 2-D speed and direction at `height_agl_m` (row 0 north).
pub(crate) struct FieldMeta<'a> {
    pub crs_epsg: Option<u16>,
    pub history: String,
    pub height_agl_m: f64,
    pub speed: &'a [f64],
    pub direction: &'a [f64],
}

/// A cell-centred field on (z, y, x) with CF attributes.
fn field_var<'a>(
    name: &str,
    data: &'a [f32],
    standard: &str,
    long: &str,
    mapped: bool,
) -> NcVar<'a> {
    let mut list = attrs(&[
        ("standard_name", text(standard)),
        ("long_name", text(long)),
        ("units", text("m s-1")),
        ("_FillValue", NcAttr::F32(vec![NC_FILL])),
    ]);
    if mapped {
        list.push(("grid_mapping".into(), text("crs")));
    }
    NcVar {
        name: name.into(),
        dims: vec!["z".into(), "y".into(), "x".into()],
        data: NcData::F32(data),
        attrs: list,
    }
}

/// A coordinate variable.
fn coord<'a>(name: &str, data: &'a [f64], list: &[(&str, NcAttr)]) -> NcVar<'a> {
    NcVar {
        name: name.into(),
        dims: vec![name.to_string()],
        data: NcData::F64(data),
        attrs: attrs(list),
    }
}

/// Bounds `[lo, hi]` of cells centred at `centres`, `cell` wide.
fn bounds(centres: &[f64], cell: f64) -> Vec<f64> {
    centres
        .iter()
        .flat_map(|&c| [c - 0.5 * cell, c + 0.5 * cell])
        .collect()
}

pub(crate) fn write_nc(
    path: &Path,
    field: &WindField,
    cells: &CellFields,
    meta: &FieldMeta,
) -> Result<()> {
    let g = &field.grid;
    let (nz, rows, cols) = (g.nz, g.rows(), g.cols());
    let p = &g.plan;
    let x: Vec<f64> = (0..cols).map(|c| p.cell_centre(0, c).0).collect();
    let y: Vec<f64> = (0..rows)
        .map(|j| p.cell_centre(rows - 1 - j, 0).1)
        .collect();
    let (x_bnds, y_bnds) = (bounds(&x, p.cell_size_m), bounds(&y, p.cell_size_m));
    let z: Vec<f64> = (0..nz).map(|k| g.z_centre_m(k)).collect();
    let z_bnds: Vec<f64> = (0..nz)
        .flat_map(|k| [g.z_faces_m[k], g.z_faces_m[k + 1]])
        .collect();
    let to_f32 = |x: f64| if x.is_finite() { x as f32 } else { NC_FILL };
    let flip = |v: &[f64]| south_up(rows, cols, nz, |i| to_f32(v[i]));
    let (u, v, w, s) = (
        flip(&cells.u),
        flip(&cells.v),
        flip(&cells.w),
        flip(&cells.speed),
    );
    let plane = |v: &[f64]| {
        south_up(rows, cols, 1, |i| {
            to_f32(v.get(i).copied().unwrap_or(f64::NAN))
        })
    };
    let (speed_2d, direction_2d) = (plane(meta.speed), plane(meta.direction));
    let terrain = south_up(rows, cols, 1, |i| g.terrain_m[i] as f32);
    let classes = south_up(rows, cols, 1, |i| {
        i32::from(field.stability.get(i).map_or(Stability::D, |s| *s).index())
    });
    let height = [meta.height_agl_m];
    let grid_mapping = meta.crs_epsg.and_then(geofield_io::crs::cf_grid_mapping);
    let mapped = grid_mapping.is_some();
    let with_mapping = |mut list: Vec<(String, NcAttr)>| {
        if mapped {
            list.push(("grid_mapping".into(), text("crs")));
        }
        list
    };
    let r = &field.report;
    let mut global = attrs(&[
        ("Conventions", text("CF-1.8")),
        ("title", text("mass-consistent wind field")),
        (
            "source",
            text(&format!("geofield {}", env!("CARGO_PKG_VERSION"))),
        ),
        ("history", text(&meta.history)),
        ("method", text(&r.method)),
        ("alpha", NcAttr::F64(vec![r.alpha])),
        (
            "iterations",
            NcAttr::I32(vec![i32::try_from(r.iterations).unwrap_or(i32::MAX)]),
        ),
        ("max_divergence_per_s", NcAttr::F64(vec![r.max_div_per_s])),
        (
            "converged",
            text(if r.converged { "true" } else { "false" }),
        ),
        (
            "comment",
            text(
                "cell-centred averages of the staggered face velocities; y increases from south to north; stability classes 0 = A ... 5 = F",
            ),
        ),
    ]);
    if let Some(e) = meta.crs_epsg {
        global.push(("crs".into(), text(&format!("EPSG:{e}"))));
    }
    let mut vars = vec![
        coord(
            "x",
            &x,
            &[
                ("standard_name", text("projection_x_coordinate")),
                ("long_name", text("x of cell centres (east)")),
                ("units", text("m")),
                ("axis", text("X")),
                ("bounds", text("x_bnds")),
            ],
        ),
        NcVar {
            name: "x_bnds".into(),
            dims: vec!["x".into(), "nv".into()],
            data: NcData::F64(&x_bnds),
            attrs: attrs(&[("units", text("m"))]),
        },
        coord(
            "y",
            &y,
            &[
                ("standard_name", text("projection_y_coordinate")),
                ("long_name", text("y of cell centres (north)")),
                ("units", text("m")),
                ("axis", text("Y")),
                ("bounds", text("y_bnds")),
            ],
        ),
        NcVar {
            name: "y_bnds".into(),
            dims: vec!["y".into(), "nv".into()],
            data: NcData::F64(&y_bnds),
            attrs: attrs(&[("units", text("m"))]),
        },
        coord(
            "z",
            &z,
            &[
                ("standard_name", text("altitude")),
                ("long_name", text("elevation of layer centres")),
                ("units", text("m")),
                ("positive", text("up")),
                ("axis", text("Z")),
                ("bounds", text("z_bnds")),
            ],
        ),
        NcVar {
            name: "z_bnds".into(),
            dims: vec!["z".into(), "nv".into()],
            data: NcData::F64(&z_bnds),
            attrs: attrs(&[("units", text("m"))]),
        },
        NcVar {
            name: "height".into(),
            dims: vec![],
            data: NcData::F64(&height),
            attrs: attrs(&[
                ("standard_name", text("height")),
                (
                    "long_name",
                    text("height above ground of wind_speed and wind_from_direction"),
                ),
                ("units", text("m")),
                ("positive", text("up")),
            ]),
        },
    ];
    if let Some(gm) = &grid_mapping {
        vars.push(NcVar {
            name: "crs".into(),
            dims: vec![],
            data: NcData::I32(&[0]),
            attrs: gm.clone(),
        });
    }
    vars.extend([
        NcVar {
            name: "terrain".into(),
            dims: vec!["y".into(), "x".into()],
            data: NcData::F32(&terrain),
            attrs: with_mapping(attrs(&[
                ("standard_name", text("surface_altitude")),
                ("long_name", text("ground elevation")),
                ("units", text("m")),
            ])),
        },
        NcVar {
            name: "stability_class".into(),
            dims: vec!["y".into(), "x".into()],
            data: NcData::I32(&classes),
            attrs: with_mapping(attrs(&[
                ("long_name", text("Pasquill-Gifford stability class")),
                ("flag_values", NcAttr::I32(vec![0, 1, 2, 3, 4, 5])),
                ("flag_meanings", text("A B C D E F")),
            ])),
        },
        NcVar {
            name: "wind_speed".into(),
            dims: vec!["y".into(), "x".into()],
            data: NcData::F32(&speed_2d),
            attrs: with_mapping(attrs(&[
                ("standard_name", text("wind_speed")),
                ("long_name", text("horizontal wind speed at the output height above ground")),
                ("units", text("m s-1")),
                ("coordinates", text("height")),
                ("_FillValue", NcAttr::F32(vec![NC_FILL])),
            ])),
        },
        NcVar {
            name: "wind_from_direction".into(),
            dims: vec!["y".into(), "x".into()],
            data: NcData::F32(&direction_2d),
            attrs: with_mapping(attrs(&[
                ("standard_name", text("wind_from_direction")),
                (
                    "long_name",
                    text("direction the wind comes from, clockwise from north, at the output height above ground"),
                ),
                ("units", text("degree")),
                ("coordinates", text("height")),
                ("_FillValue", NcAttr::F32(vec![NC_FILL])),
            ])),
        },
        field_var("u", &u, "eastward_wind", "eastward wind", mapped),
        field_var("v", &v, "northward_wind", "northward wind", mapped),
        field_var("w", &w, "upward_air_velocity", "upward air velocity", mapped),
        field_var("speed", &s, "wind_speed", "horizontal wind speed", mapped),
    ]);
    let file = NcFile {
        dims: vec![
            ("z".into(), nz),
            ("y".into(), rows),
            ("x".into(), cols),
            ("nv".into(), 2),
        ],
        global_attrs: global,
        vars,
    };
    geofield_io::write_netcdf(path, &file)?;
    Ok(())
}

pub(crate) fn write_vti(
    path: &Path,
    field: &WindField,
    cells: &CellFields,
    meta: &FieldMeta,
) -> Result<()> {
    let g = &field.grid;
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
    geofield_io::write_vti(path, &image)?;
    Ok(())
}
