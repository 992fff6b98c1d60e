//! Outputs of `geofield krige` besides the rasters: the printed summary, the cross-validation
//! CSV, maps with the wells, the voxel model and the stratigraphic section.

use std::path::Path;

use anyhow::{Context, Result, bail};
use geofield::kriging::{self, SampleSet};
use geofield_core::{GridSpec, Raster};

use crate::cmd_krige::CvSummary;
use crate::inputs;

#[allow(clippy::too_many_arguments)]
pub(crate) fn print_summary(
    grid: &GridSpec,
    be: &geofield::Backend,
    pred: &kriging::Prediction,
    set: &SampleSet,
    seconds_factor: f64,
    seconds_grid: f64,
    crossings: Option<&[usize]>,
    cv: &[CvSummary],
) {
    println!(
        "{} samples from {}; grid {} x {} = {} nodes of {} m; backend {} ({}), {}",
        set.len(),
        set.source.as_deref().unwrap_or("input"),
        grid.cols,
        grid.rows,
        grid.n_cells(),
        grid.cell_size_m,
        be.label(),
        be.device_name(),
        pred.evaluated
    );
    println!(
        "systems factored in {seconds_factor:.3} s, grid evaluated in {seconds_grid:.3} s ({:.3e} nodes/s)",
        (grid.n_cells() * pred.groups.len()) as f64 / seconds_grid.max(1e-9)
    );
    println!(
        "{:<16} {:>8} {:>8} {:>12} {:>12} {:>12} {:>10}",
        "surface", "samples", "missing", "min", "max", "nodes NaN", "clipped"
    );
    for (h, s) in set.surfaces.iter().enumerate() {
        let g = pred.groups.iter().find(|g| g.surfaces.contains(&s.name));
        let v = &pred.values[h];
        let (lo, hi) = v
            .iter()
            .filter(|x| x.is_finite())
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
                (a.min(x), b.max(x))
            });
        println!(
            "{:<16} {:>8} {:>8} {:>12.4} {:>12.4} {:>12} {:>10}",
            s.name,
            g.map_or(0, |g| g.samples),
            g.map_or(0, |g| g.missing),
            lo,
            hi,
            v.iter().filter(|x| x.is_nan()).count(),
            crossings.map_or("-".to_string(), |c| c[h].to_string())
        );
    }
    if !cv.is_empty() {
        println!(
            "{:<16} {:>12} {:>12} {:>12} {:>12}",
            "cross-valid.", "RMSE", "mean err", "mean z", "mean z^2"
        );
        for c in cv {
            println!(
                "{:<16} {:>12.4e} {:>12.4e} {:>12.4} {:>12.4}",
                c.surface,
                c.rmse,
                c.mean_error,
                c.mean_standardised_error,
                c.mean_square_standardised_error
            );
        }
    }
}

/// One row per (surface, location): the leave-one-out prediction and its error.
pub(crate) fn write_cv(path: &Path, set: &SampleSet, cv: &[kriging::SurfaceCv]) -> Result<()> {
    let mut text =
        String::from("surface,line,x,y,value,prediction,error,variance,standardised_error\n");
    for c in cv {
        let h = set
            .surfaces
            .iter()
            .position(|s| s.name == c.surface)
            .unwrap_or(0);
        for (j, &i) in c.locations.iter().enumerate() {
            let e = c.error[j];
            let value = set.surfaces[h].values[i];
            let line = set.lines.get(i).copied().unwrap_or(i as u64);
            text.push_str(&format!(
                "{},{},{},{},{},{},{},{},{}\n",
                c.surface,
                line,
                set.xs[i],
                set.ys[i],
                value,
                value - e,
                e,
                c.variance[j],
                e / c.variance[j].sqrt()
            ));
        }
    }
    geofield_io::write_atomic(path, |w| w.write_all(text.as_bytes()))?;
    Ok(())
}

pub(crate) fn write_map(
    path: &Path,
    est: &Raster,
    title: &str,
    units: &str,
    set: &SampleSet,
    colormap: &str,
) -> Result<()> {
    let opts = geofield_io::RenderOptions {
        title: title.to_string(),
        units: units.to_string(),
        colormap: geofield_io::Colormap::from_name(colormap)
            .unwrap_or(geofield_io::Colormap::Viridis),
        scale: geofield_io::Scale::Linear,
        layout: geofield_io::Layout::Panels,
        max_pixels: 4_000_000,
        markers: set.xs.iter().copied().zip(set.ys.iter().copied()).collect(),
    };
    geofield_io::render_png(path, est, &opts)?;
    Ok(())
}

/// The voxel model of layer indices (0 above the top surface, i under surface i − 1, H below
/// the bottom one) as VTK image data, x east, y north, z up.
pub(crate) fn write_voxels(
    path: &Path,
    values: &[Vec<f64>],
    grid: &GridSpec,
    dz: f64,
    names: &[String],
    crs_epsg: Option<u16>,
) -> Result<()> {
    let max_voxels = inputs::available_memory_bytes()
        .map_or(1 << 31, |m| (m / 4) as usize)
        .min(1 << 32);
    let m = kriging::strata::voxelise(values, grid.rows, grid.cols, dz, max_voxels)
        .context("--model-vti")?;
    // VTK's y index grows northwards: flip the rows.
    let (rows, cols) = (grid.rows, grid.cols);
    let mut layer = Vec::with_capacity(m.layers.len());
    for k in 0..m.nz {
        for j in 0..rows {
            let r = rows - 1 - j;
            let start = (k * rows + r) * cols;
            layer.extend_from_slice(&m.layers[start..start + cols]);
        }
    }
    let image = geofield_io::VtkImage {
        origin: [grid.x_min_m, grid.y_min_m(), m.z_bottom_m],
        spacing: [grid.cell_size_m, grid.cell_size_m, m.dz_m],
        cells: [cols, rows, m.nz],
        cell_data: vec![("layer".to_string(), geofield_io::VtkArray::U8(&layer))],
        point_data: vec![],
        field_data: {
            let mut f = vec![
                ("history".to_string(), crate::output::history()),
                (
                    "layer".to_string(),
                    format!(
                        "0 above {}; i under surface i-1",
                        names.first().map_or("", |s| s)
                    ),
                ),
            ];
            if let Some(e) = crs_epsg {
                f.push(("crs".to_string(), format!("EPSG:{e}")));
                if let Some(wkt) = geofield_io::crs::epsg_wkt(e) {
                    f.push(("crs_wkt".to_string(), wkt.to_string()));
                }
            }
            f
        },
    };
    geofield_io::write_vti(path, &image)
        .with_context(|| format!("voxel model of {} surfaces", names.len()))?;
    Ok(())
}

/// A vertical section along grid row `row` (default the middle one), coloured by layer, with the
/// wells within two cells (or 10 % of the grid's height) of the row, each labelled with its
/// distance from the section line.
pub(crate) fn write_section(
    path: &Path,
    values: &[Vec<f64>],
    grid: &GridSpec,
    row: Option<usize>,
    names: &[String],
    set: &SampleSet,
) -> Result<()> {
    let r = row.unwrap_or(grid.rows / 2);
    if r >= grid.rows {
        bail!("--section-row {r} is outside the grid (0..{})", grid.rows);
    }
    let cols = grid.cols;
    let (_, y) = grid.cell_centre(r, 0);
    let near = (2.0 * grid.cell_size_m).max(0.1 * grid.height_m());
    let wells = (0..set.len())
        .filter(|&i| (set.ys[i] - y).abs() <= near)
        .map(|i| {
            let label = set
                .labels
                .get(i)
                .cloned()
                .unwrap_or_else(|| set.describe(i));
            geofield_io::SectionWell {
                name: label,
                along_m: set.xs[i] - grid.x_min_m,
                offset_m: (set.ys[i] - y).abs(),
            }
        })
        .collect();
    let s = geofield_io::Section {
        title: format!("section along row {r} (y = {y:.0} m)"),
        x_label: format!("distance east of x = {} (m)", grid.x_min_m),
        y_label: "elevation (m)".into(),
        distance_m: (0..cols)
            .map(|c| (c as f64 + 0.5) * grid.cell_size_m)
            .collect(),
        surfaces: values
            .iter()
            .map(|v| v[r * cols..(r + 1) * cols].to_vec())
            .collect(),
        names: names.to_vec(),
        wells,
    };
    geofield_io::write_section_png(path, &s)?;
    Ok(())
}
