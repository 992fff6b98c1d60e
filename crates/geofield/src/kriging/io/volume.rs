//! 3-D kriging files: the samples CSV (x, y, z, value), points CSV, and the outputs: a CF-1.8
//! NetCDF (dimensions z, y, x; read by xarray, ParaView and GDAL), VTK image data (`.vti`,
//! one cell per node, for ParaView) and, for points, a CSV.
//!
//! ```text
//! dimensions: z, y, x, nv = 2
//! double x(x), y(y), z(z)        node coordinates (m), with bounds halfway between nodes
//! int    crs                     CF grid mapping (when the EPSG code is known)
//! double <name>(z, y, x)         the prediction; _FillValue NaN (nodes without neighbours)
//! double <name>_variance(z, y, x)   the kriging variance (units squared), when computed
//! ```

use std::path::Path;

use geofield_io::{IoError, NcAttr, NcData, NcFile, NcVar};

use crate::cf_nc::{attrs, text};
use crate::input_error::InputError;
use crate::kriging::volume::{Axes3, Kriged3, Samples3};

/// The samples of `path`: coordinate columns `x`, `y`, `z` (finite) and the value column; a row
/// whose value cell is empty or `NA` is skipped (returned: the count skipped). Errors name the
/// file, line and column.
pub fn read_samples3(path: &Path, cols: [&str; 4]) -> Result<(Samples3, usize), InputError> {
    let mut t = geofield_io::CsvTable::read(path)?;
    let c: Vec<usize> = cols.iter().map(|n| t.column(n)).collect::<Result<_, _>>()?;
    let mut s = Samples3 {
        xs: vec![],
        ys: vec![],
        zs: vec![],
        values: vec![],
    };
    let mut skipped = 0;
    let mut rec = geofield_io::CsvRecord::default();
    while t.next_record(&mut rec)? {
        let row = t.row(&rec);
        let text = row.str(c[3])?;
        if text.is_empty() || text.eq_ignore_ascii_case("na") {
            skipped += 1;
            continue;
        }
        s.xs.push(row.finite_f64(c[0])?);
        s.ys.push(row.finite_f64(c[1])?);
        s.zs.push(row.finite_f64(c[2])?);
        s.values.push(row.finite_f64(c[3])?);
    }
    if s.is_empty() {
        return Err(InputError::Invalid {
            path: path.to_path_buf(),
            reason: format!("no sample with a value in column {}", cols[3]),
        });
    }
    Ok((s, skipped))
}

/// Points of `path` (columns `x`, `y`, `z`, finite).
#[allow(clippy::type_complexity)]
pub fn read_points3(
    path: &Path,
    cols: [&str; 3],
) -> Result<(Vec<f64>, Vec<f64>, Vec<f64>), InputError> {
    let mut t = geofield_io::CsvTable::read(path)?;
    let c: Vec<usize> = cols.iter().map(|n| t.column(n)).collect::<Result<_, _>>()?;
    let (mut xs, mut ys, mut zs) = (vec![], vec![], vec![]);
    let mut rec = geofield_io::CsvRecord::default();
    while t.next_record(&mut rec)? {
        let row = t.row(&rec);
        xs.push(row.finite_f64(c[0])?);
        ys.push(row.finite_f64(c[1])?);
        zs.push(row.finite_f64(c[2])?);
    }
    if xs.is_empty() {
        return Err(InputError::Invalid {
            path: path.to_path_buf(),
            reason: "no points (only a header?)".into(),
        });
    }
    Ok((xs, ys, zs))
}

/// Bounds of each node halfway to its neighbours (half a step beyond the end nodes), as
/// (lower, upper) pairs in the axis' direction.
fn bounds(a: &[f64]) -> Vec<f64> {
    let n = a.len();
    let half = |i: usize| 0.5 * (a[i + 1] - a[i]);
    (0..n)
        .flat_map(|i| {
            let lo = if i > 0 {
                a[i] - half(i - 1)
            } else if n > 1 {
                a[0] - half(0)
            } else {
                a[0] - 0.5
            };
            let hi = if i + 1 < n {
                a[i] + half(i)
            } else if n > 1 {
                a[i] + half(n - 2)
            } else {
                a[0] + 0.5
            };
            [lo, hi]
        })
        .collect()
}

/// What the files say about the variable.
pub struct VolumeMeta<'a> {
    /// The variable (a valid NetCDF name is made of it).
    pub name: &'a str,
    pub units: &'a str,
    pub crs_epsg: Option<u16>,
    /// Global attributes (history, the variogram, ...).
    pub provenance: &'a [(String, String)],
}

fn nc_name(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    match s.chars().next() {
        None => "value".into(),
        Some(c) if c.is_ascii_digit() => format!("v_{s}"),
        _ if ["x", "y", "z", "crs", "nv", "x_bnds", "y_bnds", "z_bnds"].contains(&s.as_str()) => {
            format!("{s}_kriged")
        }
        _ => s,
    }
}

/// Write a grid result as CF NetCDF (layout in the module docs), atomically.
pub fn write_volume_nc(
    path: &Path,
    axes: &Axes3,
    k: &Kriged3,
    meta: &VolumeMeta,
) -> Result<(), IoError> {
    let (xb, yb, zb) = (bounds(&axes.x), bounds(&axes.y), bounds(&axes.z));
    let axis = |name: &str, std: &str, long: &str, ax: &str| {
        let mut a = attrs(&[
            ("standard_name", text(std)),
            ("long_name", text(long)),
            ("units", text("m")),
            ("axis", text(ax)),
            ("bounds", text(&format!("{name}_bnds"))),
        ]);
        if name == "z" {
            a.push(("positive".into(), text("up")));
        }
        a
    };
    let mut vars: Vec<NcVar> = vec![];
    for (name, d, b, std, long, ax) in [
        (
            "x",
            &axes.x,
            &xb,
            "projection_x_coordinate",
            "x of nodes (east)",
            "X",
        ),
        (
            "y",
            &axes.y,
            &yb,
            "projection_y_coordinate",
            "y of nodes (north)",
            "Y",
        ),
        ("z", &axes.z, &zb, "height", "z of nodes (elevation)", "Z"),
    ] {
        vars.push(NcVar {
            name: name.into(),
            dims: vec![name.into()],
            data: NcData::F64(d),
            attrs: axis(name, std, long, ax),
        });
        vars.push(NcVar {
            name: format!("{name}_bnds"),
            dims: vec![name.into(), "nv".into()],
            data: NcData::F64(b),
            attrs: attrs(&[("units", text("m"))]),
        });
    }
    let grid_mapping = meta.crs_epsg.and_then(geofield_io::crs::cf_grid_mapping);
    if let Some(gm) = &grid_mapping {
        vars.push(NcVar {
            name: "crs".into(),
            dims: vec![],
            data: NcData::I32(&[0]),
            attrs: gm.clone(),
        });
    }
    let name = nc_name(meta.name);
    let field = |long: String, units: String| {
        let mut a = attrs(&[
            ("long_name", text(&long)),
            ("units", text(&units)),
            ("_FillValue", NcAttr::F64(vec![f64::NAN])),
        ]);
        if grid_mapping.is_some() {
            a.push(("grid_mapping".into(), text("crs")));
        }
        a
    };
    let dims3 = vec!["z".to_string(), "y".to_string(), "x".to_string()];
    vars.push(NcVar {
        name: name.clone(),
        dims: dims3.clone(),
        data: NcData::F64(&k.values),
        attrs: field(format!("{}: kriged", meta.name), meta.units.to_string()),
    });
    if let Some(v) = &k.variance {
        vars.push(NcVar {
            name: format!("{name}_variance"),
            dims: dims3,
            data: NcData::F64(v),
            attrs: field(
                format!("{}: kriging variance", meta.name),
                squared(meta.units),
            ),
        });
    }
    let mut global = attrs(&[
        ("Conventions", text("CF-1.8")),
        ("title", text(&format!("3-D kriging of {}", meta.name))),
        (
            "source",
            text(&format!("geofield {}", env!("CARGO_PKG_VERSION"))),
        ),
        ("comment", text(&k.evaluated)),
    ]);
    if let Some(e) = meta.crs_epsg {
        global.push(("crs".into(), text(&format!("EPSG:{e}"))));
    }
    for (key, v) in meta.provenance {
        match global.iter_mut().find(|(g, _)| g == key) {
            Some(slot) => slot.1 = text(v),
            None => global.push((key.clone(), text(v))),
        }
    }
    let file = NcFile {
        dims: vec![
            ("z".into(), axes.z.len()),
            ("y".into(), axes.y.len()),
            ("x".into(), axes.x.len()),
            ("nv".into(), 2),
        ],
        global_attrs: global,
        vars,
    };
    geofield_io::write_netcdf(path, &file)
}

fn squared(units: &str) -> String {
    match units {
        "" | "1" | "unknown" => units.to_string(),
        u if u.contains(' ') => format!("({u})2"),
        u => format!("{u}2"),
    }
}

/// Write a grid result as VTK image data: one cell per node (the node at the cell's centre),
/// cell arrays `<name>` and `<name>_variance`; needs equally spaced axes (any direction: the
/// image is written with increasing x, y, z).
pub fn write_volume_vti(
    path: &Path,
    axes: &Axes3,
    k: &Kriged3,
    meta: &VolumeMeta,
) -> Result<(), IoError> {
    let invalid = |reason: String| IoError::InvalidOutput {
        path: path.to_path_buf(),
        reason,
    };
    let mut origin = [0.0; 3];
    let mut spacing = [0.0; 3];
    let mut flip = [false; 3];
    for (a, (name, ax)) in [("x", &axes.x), ("y", &axes.y), ("z", &axes.z)]
        .iter()
        .enumerate()
    {
        let (start, step) = Axes3::uniform(ax).ok_or_else(|| {
            invalid(format!(
                "VTK image data needs equally spaced nodes; the {name} axis is not (write NetCDF)"
            ))
        })?;
        // One node: a cell as wide as the smallest spacing of the other axes (else 1 m).
        let step = if ax.len() == 1 {
            [&axes.x, &axes.y, &axes.z]
                .iter()
                .filter(|v| v.len() > 1)
                .filter_map(|v| Axes3::uniform(v).map(|s| s.1.abs()))
                .reduce(f64::min)
                .unwrap_or(1.0)
        } else {
            step
        };
        flip[a] = step < 0.0;
        let lo = if flip[a] { ax[ax.len() - 1] } else { start };
        spacing[a] = step.abs();
        origin[a] = lo - 0.5 * step.abs();
    }
    let (nx, ny, nz) = (axes.x.len(), axes.y.len(), axes.z.len());
    let reorder = |v: &[f64]| -> Vec<f64> {
        let mut out = Vec::with_capacity(v.len());
        for kk in 0..nz {
            let k = if flip[2] { nz - 1 - kk } else { kk };
            for jj in 0..ny {
                let j = if flip[1] { ny - 1 - jj } else { jj };
                for ii in 0..nx {
                    let i = if flip[0] { nx - 1 - ii } else { ii };
                    out.push(v[(k * ny + j) * nx + i]);
                }
            }
        }
        out
    };
    let vals = reorder(&k.values);
    let var = k.variance.as_deref().map(reorder);
    let name = nc_name(meta.name);
    let mut cell_data = vec![(name.clone(), geofield_io::VtkArray::F64(&vals))];
    if let Some(v) = &var {
        cell_data.push((format!("{name}_variance"), geofield_io::VtkArray::F64(v)));
    }
    let mut fields = vec![("units".to_string(), meta.units.to_string())];
    if let Some(e) = meta.crs_epsg {
        fields.push(("crs".to_string(), format!("EPSG:{e}")));
        if let Some(wkt) = geofield_io::crs::epsg_wkt(e) {
            fields.push(("crs_wkt".to_string(), wkt.to_string()));
        }
    }
    for (key, v) in meta.provenance {
        fields.push((key.clone(), v.clone()));
    }
    let image = geofield_io::VtkImage {
        origin,
        spacing,
        cells: [nx, ny, nz],
        cell_data,
        point_data: vec![],
        field_data: fields,
    };
    geofield_io::write_vti(path, &image)
}

/// Write point results as CSV: x, y, z, the value and (when computed) its variance; missing
/// values empty.
pub fn write_points3_csv(
    path: &Path,
    pts: (&[f64], &[f64], &[f64]),
    k: &Kriged3,
    name: &str,
) -> Result<(), IoError> {
    let num = |v: f64| {
        if v.is_nan() {
            String::new()
        } else {
            format!("{v}")
        }
    };
    geofield_io::write_atomic(path, |w| {
        write!(w, "x,y,z,{name}")?;
        if k.variance.is_some() {
            write!(w, ",{name}_variance")?;
        }
        writeln!(w)?;
        for t in 0..k.values.len() {
            write!(
                w,
                "{},{},{},{}",
                pts.0[t],
                pts.1[t],
                pts.2[t],
                num(k.values[t])
            )?;
            if let Some(v) = &k.variance {
                write!(w, ",{}", num(v[t]))?;
            }
            writeln!(w)?;
        }
        Ok(())
    })
}
