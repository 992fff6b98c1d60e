//! Writing the kriging capability's files (feature `io`): the cross-validation CSV, maps with
//! the samples marked, the stratigraphic section, the voxel model and the variogram chart.

use std::path::Path;

use geofield_core::Raster;
use geofield_io::{Colormap, IoError};

use crate::kriging::strata::VoxelModel;
use crate::kriging::{Fit, Kriged, LagBin, SampleSet, SurfaceCv};

/// The cross-validation CSV: one row per (surface, location) with the leave-one-out prediction
/// and its error (`surface,line,x,y,value,prediction,error,variance,standardised_error`).
pub fn write_cv(path: &Path, samples: &SampleSet, cv: &[SurfaceCv]) -> Result<(), IoError> {
    let mut text =
        String::from("surface,line,x,y,value,prediction,error,variance,standardised_error\n");
    for c in cv {
        let h = samples
            .surfaces
            .iter()
            .position(|s| s.name == c.surface)
            .unwrap_or(0);
        for (j, &i) in c.locations.iter().enumerate() {
            let e = c.error[j];
            let value = samples.surfaces[h].values[i];
            let line = samples.lines.get(i).copied().unwrap_or(i as u64);
            text.push_str(&format!(
                "{},{},{},{},{},{},{},{},{}\n",
                c.surface,
                line,
                samples.xs[i],
                samples.ys[i],
                value,
                value - e,
                e,
                c.variance[j],
                e / c.variance[j].sqrt()
            ));
        }
    }
    geofield_io::write_atomic(path, |w| w.write_all(text.as_bytes()))
}

/// A PNG map of every band of `raster` (one panel each) with the samples marked.
pub fn write_map(
    path: &Path,
    raster: &Raster,
    title: &str,
    units: &str,
    samples: &SampleSet,
    colormap: Colormap,
) -> Result<(), IoError> {
    let opts = geofield_io::RenderOptions {
        title: title.to_string(),
        units: units.to_string(),
        colormap,
        scale: geofield_io::Scale::Linear,
        layout: geofield_io::Layout::Panels,
        max_pixels: 4_000_000,
        markers: samples
            .xs
            .iter()
            .copied()
            .zip(samples.ys.iter().copied())
            .collect(),
    };
    geofield_io::render_png(path, raster, &opts)
}

/// The voxel model `model` of the surfaces of `kriged` (see [`Kriged::voxels`]) as VTK image
/// data of layer indices (0 above the top surface, i under surface i − 1, H below the bottom
/// one), x east, y north, z up; `history` and the CRS (`crs_epsg`, with its WKT where known)
/// go into the field data.
pub fn write_voxels(
    path: &Path,
    kriged: &Kriged,
    model: &VoxelModel,
    crs_epsg: Option<u16>,
    history: &str,
) -> Result<(), IoError> {
    let m = model;
    let grid = kriged.grid().ok_or_else(|| IoError::InvalidOutput {
        path: path.to_path_buf(),
        reason: "a voxel model needs a grid target".into(),
    })?;
    // VTK's y index grows northwards: flip the rows.
    let (rows, cols) = (m.rows, m.cols);
    let mut layer = Vec::with_capacity(m.layers.len());
    for k in 0..m.nz {
        for j in 0..rows {
            let r = rows - 1 - j;
            let start = (k * rows + r) * cols;
            layer.extend_from_slice(&m.layers[start..start + cols]);
        }
    }
    let mut fields = vec![
        ("history".to_string(), history.to_string()),
        (
            "layer".to_string(),
            format!(
                "0 above {}; i under surface i-1",
                kriged.surfaces().first().map_or("", |s| s)
            ),
        ),
    ];
    if let Some(e) = crs_epsg {
        fields.push(("crs".to_string(), format!("EPSG:{e}")));
        if let Some(wkt) = geofield_io::crs::epsg_wkt(e) {
            fields.push(("crs_wkt".to_string(), wkt.to_string()));
        }
    }
    let image = geofield_io::VtkImage {
        origin: [grid.x_min_m, grid.y_min_m(), m.z_bottom_m],
        spacing: [grid.cell_size_m, grid.cell_size_m, m.dz_m],
        cells: [cols, rows, m.nz],
        cell_data: vec![("layer".to_string(), geofield_io::VtkArray::U8(&layer))],
        point_data: vec![],
        field_data: fields,
    };
    geofield_io::write_vti(path, &image)
}

/// A vertical section of the surfaces of `kriged` (a grid target) along grid row `row`
/// (default the middle one), coloured by layer, with the samples within two cells (or 10 % of
/// the grid's height) of the row, each labelled with its distance from the section line.
pub fn write_section(
    path: &Path,
    kriged: &Kriged,
    samples: &SampleSet,
    row: Option<usize>,
) -> Result<(), IoError> {
    let invalid = |reason: String| IoError::InvalidOutput {
        path: path.to_path_buf(),
        reason,
    };
    let grid = kriged
        .grid()
        .ok_or_else(|| invalid("a section needs a grid target".into()))?;
    let r = row.unwrap_or(grid.rows / 2);
    if r >= grid.rows {
        return Err(invalid(format!(
            "section row {r} is outside the grid (0..{})",
            grid.rows
        )));
    }
    let cols = grid.cols;
    let (_, y) = grid.cell_centre(r, 0);
    let near = (2.0 * grid.cell_size_m).max(0.1 * grid.height_m());
    let wells = (0..samples.len())
        .filter(|&i| (samples.ys[i] - y).abs() <= near)
        .map(|i| geofield_io::SectionWell {
            name: samples
                .labels
                .get(i)
                .cloned()
                .unwrap_or_else(|| samples.describe(i)),
            along_m: samples.xs[i] - grid.x_min_m,
            offset_m: (samples.ys[i] - y).abs(),
        })
        .collect();
    let s = geofield_io::Section {
        title: format!("section along row {r} (y = {y:.0} m)"),
        x_label: format!("distance east of x = {} (m)", grid.x_min_m),
        y_label: "elevation (m)".into(),
        distance_m: (0..cols)
            .map(|c| (c as f64 + 0.5) * grid.cell_size_m)
            .collect(),
        surfaces: kriged
            .prediction
            .values
            .iter()
            .map(|v| v[r * cols..(r + 1) * cols].to_vec())
            .collect(),
        names: kriged.surfaces().to_vec(),
        wells,
    };
    geofield_io::write_section_png(path, &s)
}

/// A PNG chart of the empirical variogram `bins` of `variable` (labelled with their pair
/// counts) and, when given, the fitted model.
pub fn write_variogram_png(
    path: &Path,
    variable: &str,
    bins: &[LagBin],
    fit: Option<&Fit>,
) -> Result<(), IoError> {
    let hmax = bins.last().map_or(1.0, |b| b.hi);
    let chart = geofield_io::XyChart {
        title: format!("variogram of {variable}"),
        subtitle: fit.map_or("empirical (labels: pair counts)".into(), |f| {
            f.variogram.to_string()
        }),
        x_label: "distance (m)".into(),
        y_label: "semivariance".into(),
        points: bins.iter().map(|b| (b.distance, b.gamma)).collect(),
        point_labels: bins.iter().map(|b| b.pairs.to_string()).collect(),
        curve: fit.map_or(vec![], |f| {
            (0..=200)
                .map(|i| {
                    let h = hmax * f64::from(i) / 200.0;
                    (h, f.variogram.gamma(h))
                })
                .collect()
        }),
    };
    geofield_io::write_xy_chart_png(path, &chart)
}
