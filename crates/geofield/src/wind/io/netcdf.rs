//! The 3-D wind field as CF-1.8 NetCDF (layout in [`crate::wind::io`]).

use std::path::Path;

use geofield_io::{IoError, NcAttr, NcData, NcFile, NcVar};

use super::FieldMeta;
use super::write::south_up;
use crate::cf_nc::{attrs, text, xy_coordinates};
use crate::wind::{CellFields, Stability, WindField};

/// Fill value of the NetCDF fields in solid cells.
pub const NC_FILL: f32 = -9999.0;

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

/// The cell-centred field `cells` ([`crate::wind::cell_centred`]) as CF-1.8 NetCDF, with the
/// terrain, the stability classes and the 2-D speed and direction of `meta` (layout in
/// [`crate::wind::io`]).
pub fn write_nc(
    path: &Path,
    field: &WindField,
    cells: &CellFields,
    meta: &FieldMeta,
) -> Result<(), IoError> {
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
    let mut vars: Vec<NcVar> = xy_coordinates(&x, &x_bnds, &y, &y_bnds).into();
    vars.extend([
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
    ]);
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
                    text("direction the wind comes from, clockwise from the grid's north (+y), at the output height above ground"),
                ),
                (
                    "comment",
                    text("on the grid's north, as WindNinja's outputs (true north differs by the meridian convergence of the CRS)"),
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
    geofield_io::write_netcdf(path, &file)
}
