//! The densities of a [`DensityStack`] as a CF-1.8 NetCDF file (classic format, read by
//! xarray, GDAL/QGIS and ncview):
//!
//! ```text
//! dimensions: time = years pushed, species, y, x, nv = 2
//! int    time(time)           simulation year; long_name, units = "1" (a count, not a date)
//! int    species(species)     0 .. n-1; flag_values / flag_meanings = the species names
//! double x(x), y(y)           cell centres, projection_x/y_coordinate, m, with x_bnds, y_bnds
//! int    crs                  CF grid mapping (when the EPSG code is known)
//! float  seed_density(time, species, y, x)      m-2
//! float  seedling_density(time, species, y, x)  m-2
//! ```
//!
//! `y` increases from south to north (row 0 of the data is the southernmost row of blocks), as
//! the wind field's NetCDF: the usual order in CF files, which GDAL, QGIS and xarray all
//! georeference. The centres are evenly spaced at k c (GDAL needs a regular axis); the bounds
//! of a partial edge block stop at the run grid's edge. `time` is a plain integer coordinate
//! (`units = "1"`, no reference date): xarray keeps it as integers and warns about nothing, which
//! a CF time unit such as "years since 0001-01-01" would not give without cftime. NetCDF-3 has
//! no strings and geofield-io's encoder has no character variables, so the species names are
//! the `flag_meanings` of the `species` coordinate (blanks replaced by `_`) and, verbatim, its
//! `species_names` attribute (one per line).

use std::path::Path;

use geofield_io::{IoError, NcAttr, NcData, NcFile, NcVar};

use super::density::DensityStack;
use crate::cf_nc::{attrs, text, xy_coordinates};

/// A text attribute.
/// Owned attributes from a list.
/// A density field on (time, species, y, x) in m-2.
fn field<'a>(name: &str, data: &'a [f32], long: &str, mapped: bool) -> NcVar<'a> {
    let mut list = attrs(&[
        ("long_name", text(long)),
        ("units", text("m-2")),
        ("cell_methods", text("area: mean")),
    ]);
    if mapped {
        list.push(("grid_mapping".into(), text("crs")));
    }
    NcVar {
        name: name.into(),
        dims: vec!["time".into(), "species".into(), "y".into(), "x".into()],
        data: NcData::F32(data),
        attrs: list,
    }
}

/// Set `key` to `value` in `list`, replacing an earlier value.
fn set(list: &mut Vec<(String, NcAttr)>, key: &str, value: NcAttr) {
    match list.iter_mut().find(|(k, _)| k == key) {
        Some(slot) => slot.1 = value,
        None => list.push((key.to_string(), value)),
    }
}

/// Write `stack` as CF-1.8 NetCDF (layout in the module docs), atomically. `crs_epsg` adds a
/// `crs` grid-mapping variable; each `provenance` pair becomes a global attribute (keys must be
/// valid NetCDF names; `title`, `source` or `history` replace the defaults). Without a
/// `history` pair, one is made from `created` and `command_line` when both are given. Refuses
/// an empty stack and one with a refused year ([`DensityStack::problem`]).
///
/// ```
/// use geofield::forest::output::{DensityStack, write_density_nc};
/// use geofield::forest::params::{ForestParams, ForestSpecies};
/// use geofield::forest::simulate::Year;
/// use geofield::forest::trees::Trees;
/// use geofield_core::{Extent, GridSpec};
///
/// let grid = GridSpec::from_extent(Extent::new(0.0, 0.0, 6.0, 4.0)?, 2.0)?;
/// let params = ForestParams {
///     species: geofield::synth::sbs_species().into_iter().take(1)
///         .map(ForestSpecies::with_defaults).collect(),
///     max_gap_density: 0, gap_cell_m: 8.0, torus: false,
/// };
/// let mut stack = DensityStack::new(&grid, 1, vec!["ABLA".into()], 1)?;
/// let trees = Trees::default();
/// stack.push(&Year::new(0, vec![Default::default()], vec![], &[], &trees), &params)?;
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("density.nc");
/// write_density_nc(&path, &stack, Some(32610), &[("method".into(), "exact".into())])?;
/// assert_eq!(&std::fs::read(&path)?[..4], b"CDF\x01");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_density_nc(
    path: &Path,
    stack: &DensityStack,
    crs_epsg: Option<u16>,
    provenance: &[(String, String)],
) -> Result<(), IoError> {
    let invalid = |reason: String| IoError::InvalidOutput {
        path: path.to_path_buf(),
        reason,
    };
    if let Some(p) = &stack.problem {
        return Err(invalid(format!("the densities are incomplete: {p}")));
    }
    if stack.years.is_empty() {
        return Err(invalid("no year of densities to write".into()));
    }
    let (x, x_bnds) = stack.x_axis();
    let (y, y_bnds) = stack.y_axis();
    let n_sp = stack.species.len();
    let species_idx: Vec<i32> = (0..n_sp)
        .map(|s| i32::try_from(s).unwrap_or(i32::MAX))
        .collect();
    let meanings: Vec<String> = stack
        .species
        .iter()
        .map(|s| {
            let t: String = s
                .chars()
                .map(|c| if c.is_whitespace() { '_' } else { c })
                .collect();
            if t.is_empty() { "_".into() } else { t }
        })
        .collect();
    let grid_mapping = crs_epsg.and_then(geofield_io::crs::cf_grid_mapping);
    let mapped = grid_mapping.is_some();
    let mut global = attrs(&[
        ("Conventions", text("CF-1.8")),
        (
            "title",
            text("forest simulation: seed and seedling densities"),
        ),
        (
            "source",
            text(&format!("geofield {}", env!("CARGO_PKG_VERSION"))),
        ),
        (
            "comment",
            text(&format!(
                "cells of {k} x {k} run cells of {c} m; blocks at the east and south edges \
                 cover only the run cells there; y increases from south to north; year 0 is \
                 the initial stand (no seeds dispersed)",
                k = stack.k,
                c = stack.run.cell_size_m
            )),
        ),
        ("run_cell_size_m", NcAttr::F64(vec![stack.run.cell_size_m])),
        (
            "density_block_cells",
            NcAttr::I32(vec![i32::try_from(stack.k).unwrap_or(i32::MAX)]),
        ),
    ]);
    if let Some(e) = crs_epsg {
        global.push(("crs".into(), text(&format!("EPSG:{e}"))));
    }
    let given = |key: &str| provenance.iter().find(|(k, _)| k == key).map(|(_, v)| v);
    if given("history").is_none()
        && let (Some(created), Some(cmd)) = (given("created"), given("command_line"))
    {
        set(&mut global, "history", text(&format!("{created} {cmd}")));
    }
    for (k, v) in provenance {
        set(&mut global, k, text(v));
    }
    let mut vars = vec![
        NcVar {
            name: "time".into(),
            dims: vec!["time".into()],
            data: NcData::I32(&stack.years),
            attrs: attrs(&[
                ("long_name", text("simulation year (0: the initial stand)")),
                ("units", text("1")),
            ]),
        },
        NcVar {
            name: "species".into(),
            dims: vec!["species".into()],
            data: NcData::I32(&species_idx),
            attrs: attrs(&[
                ("long_name", text("species index")),
                ("flag_values", NcAttr::I32(species_idx.clone())),
                ("flag_meanings", text(&meanings.join(" "))),
                ("species_names", text(&stack.species.join("\n"))),
            ]),
        },
    ];
    vars.extend(xy_coordinates(&x, &x_bnds, &y, &y_bnds));
    if let Some(gm) = &grid_mapping {
        vars.push(NcVar {
            name: "crs".into(),
            dims: vec![],
            data: NcData::I32(&[0]),
            attrs: gm.clone(),
        });
    }
    vars.push(field(
        "seed_density",
        &stack.seed,
        "seeds landed per unit area during the year",
        mapped,
    ));
    vars.push(field(
        "seedling_density",
        &stack.seedling,
        "seedlings standing per unit area at the end of the year",
        mapped,
    ));
    let file = NcFile {
        dims: vec![
            ("time".into(), stack.years.len()),
            ("species".into(), n_sp),
            ("y".into(), stack.rows),
            ("x".into(), stack.cols),
            ("nv".into(), 2),
        ],
        global_attrs: global,
        vars,
    };
    geofield_io::write_netcdf(path, &file)
}
