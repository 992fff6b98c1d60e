//! Outputs of `geofield krige`: the files planned and written (the library writes the
//! kriging's own files, [`geofield::kriging::io`]), the printed summary and the --json summary.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use geofield::kriging::io::{write_cv, write_map, write_section, write_voxels};
use geofield::kriging::{
    Band, CvSummary, GroupReport, KrigeOptions, KrigeParams, Kriged, SampleSet, SurfaceFit,
    Variogram,
};
use geofield::{Backend, BackendSelection};
use geofield_io::Colormap;

use crate::cmd_krige::KrigeArgs;
use crate::ctx::Ctx;
use crate::output;
use crate::outputs::{Kind, Outputs};

#[derive(serde::Serialize)]
pub(crate) struct Summary {
    command: &'static str,
    version: &'static str,
    samples: String,
    sample_rows: usize,
    surfaces: Vec<String>,
    cols: usize,
    rows: usize,
    cell_size_m: f64,
    backend: String,
    device: String,
    backend_fallback_reason: Option<String>,
    evaluated: String,
    /// MPI ranks that evaluated the grid (1 without mpiexec).
    ranks: usize,
    options: KrigeOptions,
    variograms: Vec<Variogram>,
    fits: Vec<SurfaceFit>,
    groups: Vec<GroupReport>,
    crossings_clipped: Option<Vec<usize>>,
    cross_validation: Vec<CvSummary>,
    seconds_factor: f64,
    seconds_grid: f64,
    /// Reading the samples, fitting, opening the backend (and under mpiexec, every rank
    /// agreeing to start).
    seconds_prepare: f64,
    /// The kriging call: systems, grid, and under mpiexec gathering the ranks' rows.
    seconds_kriging: f64,
    seconds_total: f64,
    outputs: Vec<String>,
}

/// Every output path checked before anything is computed.
pub(crate) fn plan(a: &KrigeArgs, ctx: &Ctx) -> Result<Outputs> {
    let mut outs = Outputs::new();
    outs.input("--samples", &a.samples);
    if let Some(d) = &a.drift_raster {
        outs.input("--drift-raster", d);
    }
    let nc = a
        .out
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("nc"));
    let out_kind = if a.simulate.is_some() && nc {
        Kind::File
    } else {
        Kind::Raster
    };
    outs.plan("--out", &a.out, out_kind)?;
    outs.plan_opt("--variance", a.variance.as_deref(), Kind::Raster)?;
    for (flag, p) in [
        ("--png", &a.png),
        ("--sd-png", &a.sd_png),
        ("--cv", &a.cv),
        ("--model-vti", &a.model_vti),
        ("--section-png", &a.section_png),
    ] {
        outs.plan_opt(flag, p.as_deref(), Kind::File)?;
    }
    outs.plan_opt("--json", ctx.json(), Kind::File)?;
    Ok(outs)
}

/// Writes (stages) every output asked for; returns the paths and the cross-validation summary.
pub(crate) fn write_outputs(
    a: &KrigeArgs,
    outs: &mut Outputs,
    k: &Kriged,
    set: &SampleSet,
    params: &KrigeParams,
    crs: (Option<u16>, geofield_io::geotiff::Compression),
) -> Result<(Vec<PathBuf>, Vec<CvSummary>)> {
    let units = a.units.clone().unwrap_or_else(|| {
        if a.strata {
            "m"
        } else if a.indicator.is_some() {
            "1"
        } else {
            "unknown"
        }
        .to_string()
    });
    let var_units = if units.chars().all(|c| c.is_ascii_alphabetic()) {
        format!("{units}2")
    } else {
        format!("({units})2")
    };
    let method = provenance(a, &params.variograms);
    // Local kriging leaves NaN where a node has no sample within --radius.
    let local = a.neighbors.is_some();
    let est = k.to_raster(Band::Prediction)?;
    let what = if a.indicator.is_some() {
        "probability of not exceeding the threshold (indicator kriging)"
    } else {
        "kriging prediction"
    };
    let mut written = outs.write(&a.out, |p| {
        output::write_raster_with(p, &est, &units, what, crs, &method, local)
    })?;
    if let Some(p) = &a.variance {
        let r = k.to_raster(Band::Variance)?;
        written.extend(outs.write(p, |s| {
            output::write_raster_with(s, &r, &var_units, "kriging variance", crs, &method, local)
        })?);
    }
    let mut cv_summary = vec![];
    if let Some(p) = &a.cv {
        let cv = k.cross_validate(set)?;
        written.push(outs.write_one(p, |s| Ok(write_cv(s, set, &cv)?))?);
        cv_summary = cv.iter().map(|c| c.summary()).collect();
    }
    if let Some(p) = &a.png {
        let cmap = Colormap::from_name(&a.colormap).unwrap_or(Colormap::Viridis);
        written.push(outs.write_one(p, |s| {
            Ok(write_map(s, &est, &k.title(), &units, set, cmap)?)
        })?);
    }
    if let Some(p) = &a.sd_png {
        let r = k.to_raster(Band::StandardDeviation)?;
        let title = "kriging standard deviation (wells marked)";
        written.push(outs.write_one(p, |s| {
            Ok(write_map(s, &r, title, &units, set, Colormap::Magma)?)
        })?);
    }
    if let (Some(p), Some(dz)) = (&a.model_vti, a.dz_m) {
        let m = k.voxels(dz).context("--model-vti")?;
        let what = format!("voxel model of {} surfaces", k.surfaces().len());
        written.push(outs.write_one(p, |s| {
            write_voxels(s, k, &m, crs.0, &output::history()).context(what)
        })?);
    }
    if let Some(p) = &a.section_png {
        written.push(outs.write_one(p, |s| Ok(write_section(s, k, set, a.section_row)?))?);
    }
    Ok((written, cv_summary))
}

/// "fitted ..." per fit, its warnings on stderr.
pub(crate) fn print_fits(fits: &[SurfaceFit]) {
    for f in fits {
        println!(
            "fitted {}: {} (weighted RSS {:.4e})",
            f.surfaces.join(", "),
            f.variogram,
            f.wrss
        );
        for w in &f.warnings {
            eprintln!("warning: {}: {w}", f.surfaces.join(", "));
        }
    }
}

/// The summary on stdout: the grid, the timings, per surface its range and NaN nodes, the
/// cross-validation statistics.
pub(crate) fn print_summary(
    k: &Kriged,
    be: &Backend,
    set: &SampleSet,
    cv: &[CvSummary],
    ranks: usize,
) {
    let pred = &k.prediction;
    let Some(grid) = k.grid() else { return };
    let (seconds_factor, seconds_grid) = (k.seconds_factor, k.seconds_grid);
    let crossings = k.crossings_clipped.as_deref();
    println!(
        "{} samples from {}; grid {} x {} = {} nodes of {} m; backend {} ({}), {}{}",
        set.len(),
        set.source.as_deref().unwrap_or("input"),
        grid.cols,
        grid.rows,
        grid.n_cells(),
        grid.cell_size_m,
        be.label(),
        be.device_name(),
        pred.evaluated,
        if ranks > 1 {
            format!("; rows split over {ranks} MPI ranks")
        } else {
            String::new()
        }
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

/// The --json summary.
#[allow(clippy::too_many_arguments)]
pub(crate) fn summary(
    a: &KrigeArgs,
    sel: &BackendSelection,
    k: &Kriged,
    set: &SampleSet,
    params: &KrigeParams,
    (fits, cv): (Vec<SurfaceFit>, Vec<CvSummary>),
    [start, kriging, kriged]: [Instant; 3],
    written: &[PathBuf],
    ranks: usize,
) -> Summary {
    let (cols, rows, cell_size_m) = k
        .grid()
        .map_or((0, 0, 0.0), |g| (g.cols, g.rows, g.cell_size_m));
    Summary {
        command: "krige",
        version: env!("CARGO_PKG_VERSION"),
        samples: a.samples.display().to_string(),
        sample_rows: set.len(),
        surfaces: k.surfaces().to_vec(),
        cols,
        rows,
        cell_size_m,
        backend: sel.backend.label(),
        device: sel.backend.device_name(),
        backend_fallback_reason: sel.fallback_reason.clone(),
        evaluated: k.prediction.evaluated.clone(),
        ranks,
        options: params.options,
        variograms: params.variograms.clone(),
        fits,
        groups: k.groups().to_vec(),
        crossings_clipped: k.crossings_clipped.clone(),
        cross_validation: cv,
        seconds_factor: k.seconds_factor,
        seconds_grid: k.seconds_grid,
        seconds_prepare: (kriging - start).as_secs_f64(),
        seconds_kriging: (kriged - kriging).as_secs_f64(),
        seconds_total: start.elapsed().as_secs_f64(),
        outputs: written.iter().map(|p| p.display().to_string()).collect(),
    }
}

/// The method and its parameters, for the outputs' provenance.
pub(crate) fn provenance(a: &KrigeArgs, vgs: &[Variogram]) -> Vec<(&'static str, String)> {
    let mut m = vec![
        ("method", format!("{:?} kriging", a.kind).to_lowercase()),
        (
            "variograms",
            vgs.iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join("; "),
        ),
        ("samples", a.samples.display().to_string()),
        ("value_columns", a.values.join(",")),
    ];
    if let Some(k) = a.neighbors {
        m.push(("neighbors", k.to_string()));
    }
    if let Some(r) = a.radius {
        m.push(("radius_m", r.to_string()));
    }
    if let Some(an) = &a.anisotropy {
        m.push(("anisotropy", an.clone()));
    }
    if let Some(d) = a.drift {
        m.push(("drift", format!("{d:?}").to_lowercase()));
    }
    if let Some(mean) = a.mean {
        m.push(("mean", mean.to_string()));
    }
    m
}
