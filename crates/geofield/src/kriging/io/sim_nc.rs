//! Conditional-simulation realisations as a CF-1.8 NetCDF file (classic format, read by xarray,
//! GDAL/QGIS and ncview):
//!
//! ```text
//! dimensions: realization = N, y, x, nv = 2
//! int    realization(realization)   1 .. N
//! double x(x), y(y)                 cell centres, projection_x/y_coordinate, m, with bounds
//! int    crs                        CF grid mapping (when the EPSG code is known)
//! float|double <name>(realization, y, x)   the variable's units; _FillValue NaN
//! ```
//!
//! `<name>` is the simulated variable (the samples' column, made a valid NetCDF name). `y`
//! increases from south to north, as the other NetCDF outputs; `realization` is CF's name for
//! an ensemble member dimension (`standard_name = "realization"`).

use std::path::Path;

use geofield_io::{IoError, NcAttr, NcData, NcFile, NcVar};

use crate::cf_nc::{attrs, text, xy_coordinates};
use crate::kriging::Simulated;

/// `name` made a valid NetCDF variable name: letters, digits and `_` kept, others `_`, a
/// leading digit prefixed with `z_`; empty → `z`; a name the file already uses gets `_sim`.
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
        None => "z".into(),
        Some(c) if c.is_ascii_digit() => format!("z_{s}"),
        // Not one of the file's other names (a coordinate named like a dimension).
        _ if ["x", "y", "realization", "crs", "nv", "x_bnds", "y_bnds"].contains(&s.as_str()) => {
            format!("{s}_sim")
        }
        _ => s,
    }
}

/// Write the realisations of `sim` (a grid target) as CF NetCDF (layout in the module docs),
/// atomically. `variable` names the simulated variable, `units` its units; `provenance` pairs
/// become global attributes.
pub fn write_simulations_nc(
    path: &Path,
    sim: &Simulated,
    variable: &str,
    units: &str,
    crs_epsg: Option<u16>,
    provenance: &[(String, String)],
) -> Result<(), IoError> {
    let invalid = |reason: String| IoError::InvalidOutput {
        path: path.to_path_buf(),
        reason,
    };
    let grid = sim
        .grid
        .ok_or_else(|| invalid("the realisations are at points, not on a grid".into()))?;
    let (rows, cols, d) = (grid.rows, grid.cols, grid.cell_size_m);
    let x: Vec<f64> = (0..cols)
        .map(|i| grid.x_min_m + (i as f64 + 0.5) * d)
        .collect();
    let x_bnds: Vec<f64> = (0..cols)
        .flat_map(|i| {
            [
                grid.x_min_m + i as f64 * d,
                grid.x_min_m + (i + 1) as f64 * d,
            ]
        })
        .collect();
    // South to north: output row j is grid row rows − 1 − j.
    let y: Vec<f64> = (0..rows)
        .map(|j| grid.y_max_m - ((rows - 1 - j) as f64 + 0.5) * d)
        .collect();
    let y_bnds: Vec<f64> = (0..rows)
        .flat_map(|j| {
            let k = (rows - 1 - j) as f64;
            [grid.y_max_m - (k + 1.0) * d, grid.y_max_m - k * d]
        })
        .collect();
    let flipped = sim.values.chunks(rows * cols).flat_map(|v| {
        (0..rows)
            .rev()
            .flat_map(move |r| v[r * cols..(r + 1) * cols].iter().copied())
    });
    let (f32s, f64s): (Vec<f32>, Vec<f64>) = match sim.precision {
        crate::kriging::Precision::F32 => (flipped.map(|v| v as f32).collect(), vec![]),
        crate::kriging::Precision::F64 => (vec![], flipped.collect()),
    };
    let (data, fill) = if f64s.is_empty() {
        (NcData::F32(&f32s), NcAttr::F32(vec![f32::NAN]))
    } else {
        (NcData::F64(&f64s), NcAttr::F64(vec![f64::NAN]))
    };
    let members: Vec<i32> = (1..=sim.len())
        .map(|i| i32::try_from(i).unwrap_or(i32::MAX))
        .collect();
    let grid_mapping = crs_epsg.and_then(geofield_io::crs::cf_grid_mapping);
    let p = &sim.params;
    let mut global = attrs(&[
        ("Conventions", text("CF-1.8")),
        (
            "title",
            text(&format!(
                "conditional simulation of {variable}: {} realisations",
                members.len()
            )),
        ),
        (
            "source",
            text(&format!("geofield {}", env!("CARGO_PKG_VERSION"))),
        ),
        (
            "comment",
            text(&format!(
                "conditioning by kriging of the residuals of unconditional fields (randomisation \
                 method, {} modes per structure, seed {}); y increases from south to north",
                p.modes, p.seed
            )),
        ),
    ]);
    if let Some(e) = crs_epsg {
        global.push(("crs".into(), text(&format!("EPSG:{e}"))));
    }
    for (k, v) in provenance {
        match global.iter_mut().find(|(g, _)| g == k) {
            Some(slot) => slot.1 = text(v),
            None => global.push((k.clone(), text(v))),
        }
    }
    let mut vars = vec![NcVar {
        name: "realization".into(),
        dims: vec!["realization".into()],
        data: NcData::I32(&members),
        attrs: attrs(&[
            ("standard_name", text("realization")),
            ("long_name", text("realisation number")),
            ("units", text("1")),
        ]),
    }];
    vars.extend(xy_coordinates(&x, &x_bnds, &y, &y_bnds));
    let mut field = attrs(&[
        (
            "long_name",
            text(&format!("{variable}: conditional simulation")),
        ),
        ("units", text(units)),
        ("_FillValue", fill),
    ]);
    if let Some(gm) = &grid_mapping {
        vars.push(NcVar {
            name: "crs".into(),
            dims: vec![],
            data: NcData::I32(&[0]),
            attrs: gm.clone(),
        });
        field.push(("grid_mapping".into(), text("crs")));
    }
    vars.push(NcVar {
        name: nc_name(variable),
        dims: vec!["realization".into(), "y".into(), "x".into()],
        data,
        attrs: field,
    });
    let file = NcFile {
        dims: vec![
            ("realization".into(), members.len()),
            ("y".into(), rows),
            ("x".into(), cols),
            ("nv".into(), 2),
        ],
        global_attrs: global,
        vars,
    };
    geofield_io::write_netcdf(path, &file)
}
