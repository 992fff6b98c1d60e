//! The demo's kriging part: wells through synthetic strata, a pooled variogram, the kriged
//! surfaces with their variance, a voxel model and a section.

use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use geofield::Backend;
use geofield::kriging::{
    self, Estimator, KrigeParams, LagBin, LagSpec, Model, SampleSet, Surface, Target, Variogram,
};
use geofield::synth;
use geofield_core::{Extent, GridSpec, Raster, RasterData};

use super::{DEMO_CRS, Step};
use crate::output;

/// Kriging: 11 stratum surfaces over 1 km x 1.8 km (UTM-like coordinates) from 25 wells, some
/// stopping short; a pooled variogram fit, global ordinary kriging of all surfaces with the
/// variance, leave-one-out cross-validation, the error against the true surfaces, crossings
/// resolved, a voxel model and a section.
pub(super) fn run(out_dir: &Path, be: &Backend, steps: &mut Vec<Step>) -> Result<()> {
    let t = Instant::now();
    let extent = Extent::new(500_000.0, 6_100_000.0, 501_000.0, 6_101_800.0)?;
    let h = 11;
    let strata = synth::Strata::new(&extent, h, 3);
    let (xs, ys, z) = strata.wells(25, 3, 0.3);
    synth::io::write_wells(&out_dir.join("wells.csv"), &xs, &ys, &z)?;
    let names = synth::surface_names(h);
    let set = SampleSet {
        xs: xs.clone(),
        ys: ys.clone(),
        surfaces: names
            .iter()
            .zip(&z)
            .map(|(n, v)| Surface {
                name: n.clone(),
                values: v.clone(),
            })
            .collect(),
        source: Some("wells.csv".into()),
        lines: (2..).take(xs.len()).collect(),
        labels: (1..=xs.len()).map(|i| format!("w{i:03}")).collect(),
    };
    // Pooled empirical variogram of all surfaces, exponential fit.
    let spec = LagSpec {
        lags: 10,
        max_lag: Some(900.0),
        direction: None,
    };
    let pooled = kriging::pool(&kriging::surface_bins(&set, &spec, Estimator::Matheron)?);
    let fit = kriging::fit(Model::Exponential, &pooled, true)?;
    write_variogram_chart(&out_dir.join("variogram.png"), &pooled, &fit.variogram)?;
    steps.push(Step::since(
        "synth wells + variogram",
        t,
        format!("25 wells x 11 surfaces -> wells.csv; fit {}", fit.variogram),
    ));

    let t = Instant::now();
    let grid = GridSpec::from_extent(extent, 10.0)?;
    let params = KrigeParams {
        variance: true,
        resolve_crossings: true,
        ..KrigeParams::new(fit.variogram.clone(), Target::Grid(grid))
    };
    let k = kriging::krige(be, &set, &params)?;
    let pred = &k.prediction;
    let clipped: usize = k.crossings_clipped.iter().flatten().sum();
    let cv = k.cross_validate(&set)?;
    let rmse_truth = strata.rmse(&grid, &pred.values);
    let rmse_cv = cv.iter().map(|c| c.rmse).sum::<f64>() / cv.len().max(1) as f64;
    steps.push(Step::since(
        "krige 11 surfaces",
        t,
        format!(
            "{} nodes x 11 surfaces, {} systems ({}); RMSE vs truth {rmse_truth:.2} m, LOO RMSE {rmse_cv:.2} m; {clipped} crossings clipped",
            grid.n_cells(),
            pred.groups.len(),
            pred.evaluated
        ),
    ));
    let t = Instant::now();
    let data: Vec<f32> = pred.values.iter().flatten().map(|&v| v as f32).collect();
    let est = Raster::new(grid, names.clone(), RasterData::F32(data))?;
    let (tif, what) = (out_dir.join("strata.tif"), "kriged stratum surfaces");
    output::write_raster(&tif, &est, "m", what, Some(DEMO_CRS))?;
    if let Some(var) = &pred.variance {
        let data: Vec<f32> = var.iter().flatten().map(|&v| v as f32).collect();
        let r = Raster::new(grid, names.clone(), RasterData::F32(data))?;
        let tif = out_dir.join("strata_variance.tif");
        output::write_raster(&tif, &r, "m2", "kriging variance", Some(DEMO_CRS))?;
    }
    kriging::io::write_map(
        &out_dir.join("strata.png"),
        &est,
        "kriged stratum surfaces (elevation; wells marked)",
        "m",
        &set,
        geofield_io::Colormap::Viridis,
    )?;
    let mut written = vec![
        "strata.tif",
        "strata_variance.tif",
        "strata.png",
        "variogram.png",
    ];
    let vti = out_dir.join("strata.vti");
    if let Ok(m) = k.voxels(2.0)
        && kriging::io::write_voxels(&vti, &k, &m, Some(DEMO_CRS), &output::history()).is_ok()
    {
        written.push("strata.vti");
    }
    if kriging::io::write_section(&out_dir.join("section.png"), &k, &set, None).is_ok() {
        written.push("section.png");
    }
    steps.push(Step::since("write kriging outputs", t, written.join(", ")));
    Ok(())
}

/// The pooled empirical variogram with its fitted curve out to 900 m, as a PNG chart.
fn write_variogram_chart(path: &Path, pooled: &[LagBin], variogram: &Variogram) -> Result<()> {
    let chart = geofield_io::XyChart {
        title: "pooled variogram of 11 stratum surfaces".into(),
        subtitle: variogram.to_string(),
        x_label: "distance (m)".into(),
        y_label: "semivariance (m2)".into(),
        points: pooled.iter().map(|b| (b.distance, b.gamma)).collect(),
        point_labels: pooled.iter().map(|b| b.pairs.to_string()).collect(),
        curve: (0..=200)
            .map(|i| {
                let d = 900.0 * f64::from(i) / 200.0;
                (d, variogram.gamma(d))
            })
            .collect(),
    };
    geofield_io::write_xy_chart_png(path, &chart)?;
    Ok(())
}
