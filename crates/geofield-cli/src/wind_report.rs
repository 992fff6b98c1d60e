//! The report of `geofield wind` (printed, and as JSON with `--json`), and its 2-D outputs:
//! speed and direction rasters at a height above ground, and the map.

use std::path::{Path, PathBuf};

use anyhow::Result;
use geofield::wind::{IgnoredStation, SolveReport, Station, WindField, WindOptions};
use geofield::{Backend, BackendSelection};
use geofield_core::{Raster, RasterData};
use geofield_io::{Colormap, RasterMeta, WindMap};

use crate::cmd_wind::WindArgs;
use crate::outputs::Outputs;
use crate::wind_in::Dem;

/// Everything `--json` writes.
#[derive(serde::Serialize)]
pub(crate) struct Summary {
    command: &'static str,
    version: &'static str,
    dem: String,
    dem_cell_size_m: f64,
    dem_block_factor: usize,
    dem_nodata_filled: usize,
    stations_file: String,
    cols: usize,
    rows: usize,
    nz: usize,
    cell_size_m: f64,
    z_faces_m: Vec<f64>,
    cells: usize,
    fluid_cells: usize,
    stations_given: usize,
    stations_used: usize,
    ignored_stations: Vec<IgnoredStation>,
    options: WindOptions,
    report: SolveReport,
    height_agl_m: f64,
    backend: String,
    device: String,
    backend_fallback_reason: Option<String>,
    seconds_read: f64,
    seconds_compute: f64,
    seconds_write: f64,
    seconds_total: f64,
    outputs: Vec<String>,
}

impl Summary {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        a: &WindArgs,
        field: &WindField,
        stations: &[Station],
        opts: &WindOptions,
        sel: &BackendSelection,
        dem: &Dem,
        [seconds_read, seconds_compute, seconds_write, seconds_total]: [f64; 4],
        outputs: Vec<String>,
    ) -> Self {
        let g = &field.grid;
        Self {
            command: "wind",
            version: env!("CARGO_PKG_VERSION"),
            dem: a.dem.display().to_string(),
            dem_cell_size_m: dem.dem_cell_size_m,
            dem_block_factor: dem.factor,
            dem_nodata_filled: dem.filled,
            stations_file: a.stations.display().to_string(),
            cols: g.cols(),
            rows: g.rows(),
            nz: g.nz,
            cell_size_m: g.dx_m(),
            z_faces_m: g.z_faces_m.clone(),
            cells: g.n_cells(),
            fluid_cells: g.n_fluid(),
            stations_given: stations.len(),
            stations_used: stations.len() - field.ignored_stations.len(),
            ignored_stations: field.ignored_stations.clone(),
            options: opts.clone(),
            report: field.report.clone(),
            height_agl_m: a.height_agl_m,
            backend: sel.backend.label(),
            device: sel.backend.device_name(),
            backend_fallback_reason: sel.fallback_reason.clone(),
            seconds_read,
            seconds_compute,
            seconds_write,
            seconds_total,
            outputs,
        }
    }
}

/// The short report on stdout.
pub(crate) fn print_summary(
    field: &WindField,
    stations: &[Station],
    be: &Backend,
    seconds_read: f64,
    seconds_compute: f64,
) {
    let g = &field.grid;
    let r = &field.report;
    println!(
        "grid {} x {} x {} = {} cells of {} m ({:.1}..{:.1} m), {} fluid",
        g.cols(),
        g.rows(),
        g.nz,
        g.n_cells(),
        g.dx_m(),
        g.z_faces_m[0],
        g.top_m(),
        g.n_fluid()
    );
    println!(
        "stations: {} used, {} ignored",
        stations.len() - field.ignored_stations.len(),
        field.ignored_stations.len()
    );
    for s in &field.ignored_stations {
        println!("  ignored {}: {}", s.id, s.reason);
    }
    println!(
        "method {}{}, alpha {}, {} iterations: max|div u0| {:.3e} s-1, max|div u| {:.3e} s-1 \
         (threshold {:.3e}), {}",
        r.method,
        r.omega
            .map(|w| format!(" (omega {w:.4})"))
            .unwrap_or_default(),
        r.alpha,
        r.iterations,
        r.max_div0_per_s,
        r.max_div_per_s,
        r.threshold_per_s,
        if r.converged {
            "converged"
        } else {
            "NOT converged"
        }
    );
    if let Some(dw) = r.removal_max_dw_m_per_s {
        println!("divergence removal changed w by up to {dw:.3e} m/s");
    }
    println!(
        "backend {} ({}); read {seconds_read:.3} s, solve {:.3} s, whole computation {seconds_compute:.3} s",
        be.label(),
        be.device_name(),
        r.solve_seconds
    );
    let steps: Vec<String> = r
        .step_seconds
        .iter()
        .map(|(name, s)| format!("{name} {s:.3}"))
        .collect();
    println!("steps (s): {}", steps.join(", "));
}

/// A one-band f32 raster of `values` on the field's plan.
fn raster(field: &WindField, name: &str, values: &[f64]) -> Result<Raster> {
    Ok(Raster::new(
        field.grid.plan,
        vec![name.to_string()],
        RasterData::F32(values.iter().map(|&v| v as f32).collect()),
    )?)
}

/// `--speed-out` and `--direction-out`, with the DEM's CRS and units, like WindNinja's grids.
pub(crate) fn write_rasters(
    staging: &mut Outputs,
    a: &WindArgs,
    field: &WindField,
    speed: &[f64],
    direction: &[f64],
    crs_epsg: Option<u16>,
) -> Result<Vec<PathBuf>> {
    let h = a.height_agl_m;
    let mut out = Vec::new();
    for (path, name, values, units, what) in [
        (&a.speed_out, "wind_speed", speed, "m s-1", "wind speed"),
        (
            &a.direction_out,
            "wind_from_direction",
            direction,
            "degree",
            "wind direction (from, clockwise from north)",
        ),
    ] {
        let Some(path) = path else { continue };
        let r = raster(field, name, values)?;
        let meta = RasterMeta {
            crs_epsg,
            nodata: None,
            units: Some(units.to_string()),
            description: Some(format!(
                "{what} at {h} m above ground ({})",
                field.report.method
            )),
            provenance: crate::output::provenance(&[
                ("method", field.report.method.clone()),
                ("height_agl_m", h.to_string()),
                ("alpha", field.report.alpha.to_string()),
                ("iterations", field.report.iterations.to_string()),
                (
                    "max_divergence_per_s",
                    field.report.max_div_per_s.to_string(),
                ),
            ]),
        };
        out.extend(staging.write(path, |p| Ok(geofield_io::write_raster(p, &r, &meta)?))?);
        crate::output::warn_if_no_crs(
            path,
            crs_epsg,
            "the DEM declares none (assign one, e.g. gdal_edit.py -a_srs EPSG:CODE)",
        );
    }
    Ok(out)
}

/// The map of the wind at `height_m` above ground, with the stations used.
pub(crate) fn write_map(
    path: &Path,
    field: &WindField,
    stations: &[Station],
    speed: &[f64],
    direction: &[f64],
    height_m: f64,
) -> Result<()> {
    let ext = field.grid.plan.extent();
    let inside: Vec<&Station> = stations
        .iter()
        .filter(|s| ext.contains(s.x_m, s.y_m))
        .collect();
    let map = WindMap {
        title: format!("wind {height_m} m above ground ({})", field.report.method),
        grid: field.grid.plan,
        terrain_m: &field.grid.terrain_m,
        speed_m_per_s: speed,
        direction_deg: direction,
        markers: inside.iter().map(|s| (s.x_m, s.y_m)).collect(),
        marker_labels: inside.iter().map(|s| s.id.clone()).collect(),
        colormap: Colormap::Viridis,
        max_pixels: 4_000_000,
    };
    geofield_io::write_wind_png(path, &map)?;
    Ok(())
}
