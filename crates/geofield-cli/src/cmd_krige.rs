//! `geofield krige`: interpolate one or many surfaces from scattered samples onto a grid, with
//! the kriging variance, cross-validation and, for stratigraphy, a voxel model and a section.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use geofield::kriging::{self, KrigeOptions, Neighbourhood, Precision, Variogram};
use geofield_core::{Raster, RasterData};

use crate::ctx::Ctx;
use crate::krige_in::{FitReport, options, read_samples, variograms};
use crate::krige_out::{print_summary, write_cv, write_map, write_section, write_voxels};
use crate::outputs::{Kind, Outputs};
use crate::{inputs, output, progress};

#[derive(Clone, Copy, ValueEnum, PartialEq, Debug)]
pub enum KindArg {
    Ordinary,
    Simple,
    Universal,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Debug)]
pub enum DriftArg {
    Linear,
    Quadratic,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Debug)]
pub enum PrecisionArg {
    /// f64 on the CPU; on the GPU f32 for global kriging, f64 for local kriging.
    Auto,
    F32,
    F64,
}

#[derive(Args, Debug)]
pub struct KrigeArgs {
    /// Samples: CSV with a header row. Leave a value cell empty (or NA) where a well does not
    /// reach that surface.
    #[arg(long)]
    pub samples: PathBuf,
    /// Column of the x coordinate (metres, east).
    #[arg(long, default_value = "x")]
    pub x: String,
    /// Column of the y coordinate (metres, north).
    #[arg(long, default_value = "y")]
    pub y: String,
    /// Value columns, comma separated: one output band per column, in this order.
    #[arg(long, value_delimiter = ',', required = true)]
    pub values: Vec<String>,
    /// Variogram model: exponential, gaussian, spherical, cubic, stable:ALPHA, matern:NU,
    /// power:EXPONENT, linear (practical-range convention; see `geofield variogram`).
    #[arg(long)]
    pub model: Option<String>,
    /// Partial sill (power: scale; linear: slope).
    #[arg(long)]
    pub sill: Option<f64>,
    /// Practical range in metres (where an exponential or Gaussian reaches 95 % of the sill).
    #[arg(long)]
    pub range: Option<f64>,
    /// Nugget.
    #[arg(long, default_value_t = 0.0)]
    pub nugget: f64,
    /// Fit this model to each value column's empirical variogram instead of --model.
    #[arg(long, conflicts_with = "model")]
    pub fit: Option<String>,
    /// With --fit: one model fitted to the pooled variogram of all columns, so that the
    /// surfaces share one kriging system (the paper's case).
    #[arg(long, requires = "fit")]
    pub fit_pooled: bool,
    /// With --fit: the number of lag bins of the empirical variogram [default: 15].
    #[arg(long)]
    pub lags: Option<usize>,
    /// With --fit: the largest separation binned, in metres (default: a third of the samples'
    /// bounding-box diagonal).
    #[arg(long)]
    pub max_lag: Option<f64>,
    /// Output extent XMIN,YMIN,XMAX,YMAX in metres (a whole number of cells each way).
    #[arg(long, allow_hyphen_values = true)]
    pub extent: String,
    /// Cell size in metres.
    #[arg(long, allow_negative_numbers = true)]
    pub cell_size_m: f64,
    /// Predictions: .tif (GeoTIFF, one band per value column), .asc (one file per column) or
    /// .npy (surfaces, rows, cols).
    #[arg(long)]
    pub out: PathBuf,
    /// Kriging variances, in the same formats.
    #[arg(long)]
    pub variance: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "ordinary")]
    pub kind: KindArg,
    /// Known mean for simple kriging.
    #[arg(long, allow_negative_numbers = true)]
    pub mean: Option<f64>,
    /// Drift of universal kriging (implies --kind universal).
    #[arg(long, value_enum)]
    pub drift: Option<DriftArg>,
    /// Local kriging: the K nearest samples (1..=64) per node; default global.
    #[arg(long)]
    pub neighbors: Option<usize>,
    /// With --neighbors: only samples within this distance (metres; anisotropy-corrected).
    #[arg(long, requires = "neighbors")]
    pub radius: Option<f64>,
    /// Geometric anisotropy AZIMUTH_DEG,RATIO: direction of the longest range, clockwise from
    /// north, and the ratio of the shortest to the longest range (0 < ratio <= 1).
    #[arg(long, allow_hyphen_values = true)]
    pub anisotropy: Option<String>,
    /// Treat the nugget as measurement error (smoothed at the samples) instead of honouring the
    /// data exactly.
    #[arg(long)]
    pub nugget_error: bool,
    /// Samples closer than this (metres) are one location (default: identical up to rounding).
    #[arg(long)]
    pub merge_distance_m: Option<f64>,
    /// Values at one location may differ by this much to be averaged (default: a tenth of the
    /// column's standard deviation); beyond it, an error names them.
    #[arg(long)]
    pub merge_tolerance: Option<f64>,
    /// Leave-one-out cross-validation: one row per sample and surface.
    #[arg(long)]
    pub cv: Option<PathBuf>,
    /// Arithmetic of the grid evaluation on the GPU (the systems are always solved in f64) and
    /// the type of .npy/.tif output. The CPU always evaluates in f64 (f32 then only rounds the
    /// output).
    #[arg(long, value_enum, default_value = "auto")]
    pub precision: PrecisionArg,
    /// Map of the predictions with the samples marked.
    #[arg(long)]
    pub png: Option<PathBuf>,
    /// Map of the kriging standard deviation (the square root of the variance; implies
    /// computing the variance) with the samples marked.
    #[arg(long)]
    pub sd_png: Option<PathBuf>,
    /// Colour map of --png.
    #[arg(long, default_value = "viridis", value_parser = crate::output::COLORMAPS)]
    pub colormap: String,
    /// The value columns are stratum surfaces (elevations), top to bottom: crossings are
    /// resolved by clipping each surface to the one above.
    #[arg(long)]
    pub strata: bool,
    /// With --strata: a voxel model of layer indices for ParaView (needs --dz-m).
    #[arg(long, requires = "strata")]
    pub model_vti: Option<PathBuf>,
    /// With --model-vti: the voxel height in metres.
    #[arg(long, requires = "model_vti")]
    pub dz_m: Option<f64>,
    /// With --strata: a vertical cross-section coloured by layer (along --section-row).
    #[arg(long, requires = "strata")]
    pub section_png: Option<PathBuf>,
    /// With --section-png: the grid row of the section, 0 = north (default: the middle row).
    #[arg(long, requires = "section_png")]
    pub section_row: Option<usize>,
    /// Units of the sample values, written on every prediction band (the variance gets their
    /// square); default "m" with --strata, else "unknown".
    #[arg(long)]
    pub units: Option<String>,
}

#[derive(serde::Serialize)]
pub(crate) struct CvSummary {
    pub(crate) surface: String,
    pub(crate) samples: usize,
    pub(crate) rmse: f64,
    pub(crate) mean_error: f64,
    pub(crate) mean_standardised_error: f64,
    pub(crate) mean_square_standardised_error: f64,
}

#[derive(serde::Serialize)]
struct Summary {
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
    options: KrigeOptions,
    variograms: Vec<Variogram>,
    fits: Vec<FitReport>,
    groups: Vec<kriging::GroupReport>,
    crossings_clipped: Option<Vec<usize>>,
    cross_validation: Vec<CvSummary>,
    seconds_factor: f64,
    seconds_grid: f64,
    seconds_total: f64,
    outputs: Vec<String>,
}

pub fn run(a: &KrigeArgs, ctx: &Ctx) -> Result<()> {
    let start = Instant::now();
    let crs = ctx.crs_epsg()?;
    if a.model_vti.is_some() && a.dz_m.is_none() {
        bail!("--model-vti needs --dz-m (the voxel height in metres)");
    }
    if let Some(dz) = a.dz_m
        && !(dz.is_finite() && dz > 0.0)
    {
        bail!("--dz-m {dz}: the voxel height must be a positive number of metres");
    }
    if a.fit.is_none() {
        for (given, flag) in [
            (a.lags.is_some(), "--lags"),
            (a.max_lag.is_some(), "--max-lag"),
        ] {
            if given {
                bail!("{flag} sets the bins of the variogram fit: give --fit MODEL");
            }
        }
    }
    if a.png.is_none() && a.colormap != "viridis" {
        bail!("--colormap styles --png: give --png");
    }
    let mut outs = Outputs::new();
    outs.input("--samples", &a.samples);
    outs.plan("--out", &a.out, Kind::Raster)?;
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
    let extent = inputs::parse_extent(&a.extent)?;
    let h = a.values.len();
    let sel = ctx.open_backend()?;
    let be = sel.backend.clone();
    let opts = options(a, be.is_cuda())?;
    let out_bytes = if opts.precision == Precision::F32 {
        4
    } else {
        8
    };
    let want_variance = a.variance.is_some() || a.sd_png.is_some();
    let bands = h * if want_variance { 2 } else { 1 };
    let grid = inputs::grid_for(&extent, a.cell_size_m, bands, out_bytes)?;
    if let Some(r) = a.section_row
        && r >= grid.rows
    {
        bail!(
            "--section-row {r} is outside the grid: rows 0 (north) to {}",
            grid.rows - 1
        );
    }
    let set = read_samples(&a.samples, &a.x, &a.y, &a.values)?;
    let (vgs, fits) = variograms(a, &set)?;
    for f in &fits {
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
    // Global kriging holds C and its factor (2 n² f64, 3 n² while factoring): refuse up front
    // what would not fit rather than abort on allocation.
    if opts.neighbourhood == Neighbourhood::Global
        && let Some(avail) = inputs::available_memory_bytes()
    {
        let n = set.len() as u128;
        let need = 3 * n * n * 8;
        if need > u128::from(avail) {
            bail!(
                "global kriging of {} samples needs about {:.1} GB for the covariance matrix and                  its factor, more than this machine's {:.1} GB available: use local kriging                  (--neighbors 32 [--radius R])",
                set.len(),
                need as f64 / 1e9,
                avail as f64 / 1e9
            );
        }
    }
    let t0 = Instant::now();
    let (groups, reports) = kriging::build(&set, &vgs, &opts)
        .with_context(|| format!("kriging the samples of {}", a.samples.display()))?;
    let seconds_factor = t0.elapsed().as_secs_f64();
    for r in &reports {
        for m in &r.merged {
            eprintln!(
                "warning: {} samples at one location were merged (values averaged): {}",
                m.len(),
                m.join(", ")
            );
        }
    }
    let pb = progress::bar(1000, ctx.quiet(), "kriging");
    let t1 = Instant::now();
    let progress = |f: f64| pb.set_position((f * 1000.0) as u64);
    let mut pred = kriging::krige_grid_with(
        &be,
        &set,
        &groups,
        reports.clone(),
        &opts,
        &grid,
        want_variance,
        Some(&progress),
    )?;
    let seconds_grid = t1.elapsed().as_secs_f64();
    pb.finish_and_clear();
    pred.check_finite(&set, &opts)
        .with_context(|| format!("kriging the samples of {}", a.samples.display()))?;
    let crossings = a
        .strata
        .then(|| kriging::strata::resolve_crossings(&mut pred.values));

    let names: Vec<String> = set.surfaces.iter().map(|s| s.name.clone()).collect();
    let to_raster = |bands: &[Vec<f64>], names: Vec<String>| -> Result<Raster> {
        let data = match opts.precision {
            Precision::F64 => RasterData::F64(bands.iter().flatten().copied().collect()),
            Precision::F32 => RasterData::F32(bands.iter().flatten().map(|&v| v as f32).collect()),
        };
        Ok(Raster::new(grid, names, data)?)
    };
    let est = to_raster(&pred.values, names.clone())?;
    let units = a
        .units
        .clone()
        .unwrap_or_else(|| if a.strata { "m" } else { "unknown" }.to_string());
    let var_units = if units.chars().all(|c| c.is_ascii_alphabetic()) {
        format!("{units}2")
    } else {
        format!("({units})2")
    };
    let method = provenance(a, &vgs);
    // Local kriging leaves NaN where a node has no sample within --radius.
    let local = a.neighbors.is_some();
    let mut written = outs.write(&a.out, |p| {
        output::write_raster_with(p, &est, &units, "kriging prediction", crs, &method, local)
    })?;
    if let (Some(p), Some(v)) = (&a.variance, &pred.variance) {
        let r = to_raster(v, names.clone())?;
        written.extend(outs.write(p, |s| {
            output::write_raster_with(s, &r, &var_units, "kriging variance", crs, &method, local)
        })?);
    }
    let mut cv_summary = vec![];
    if let Some(p) = &a.cv {
        let cv = kriging::cross_validate(&set, &groups)?;
        written.push(outs.write_one(p, |s| write_cv(s, &set, &cv))?);
        for c in &cv {
            cv_summary.push(CvSummary {
                surface: c.surface.clone(),
                samples: c.error.len(),
                rmse: c.rmse,
                mean_error: c.mean_error,
                mean_standardised_error: c.mean_standardised,
                mean_square_standardised_error: c.mean_square_standardised,
            });
        }
    }
    if let Some(p) = &a.png {
        let title = format!(
            "{} kriging, {} ({})",
            opts.kind.name(),
            match opts.neighbourhood {
                Neighbourhood::Global => "global".to_string(),
                Neighbourhood::Local { k, .. } => format!("{k} nearest"),
            },
            pred.evaluated
        );
        written.push(outs.write_one(p, |s| write_map(s, &est, &title, &units, &set, &a.colormap))?);
    }
    if let (Some(p), Some(v)) = (&a.sd_png, &pred.variance) {
        let sd: Vec<Vec<f64>> = v
            .iter()
            .map(|b| b.iter().map(|x| x.sqrt()).collect())
            .collect();
        let r = to_raster(&sd, names.clone())?;
        written.push(outs.write_one(p, |s| {
            write_map(
                s,
                &r,
                "kriging standard deviation (wells marked)",
                &units,
                &set,
                "magma",
            )
        })?);
    }
    if let (Some(p), Some(dz)) = (&a.model_vti, a.dz_m) {
        written.push(outs.write_one(p, |s| write_voxels(s, &pred.values, &grid, dz, &names, crs))?);
    }
    if let Some(p) = &a.section_png {
        written.push(outs.write_one(p, |s| {
            write_section(s, &pred.values, &grid, a.section_row, &names, &set)
        })?);
    }
    print_summary(
        &grid,
        &be,
        &pred,
        &set,
        seconds_factor,
        seconds_grid,
        crossings.as_deref(),
        &cv_summary,
    );
    if let Some(p) = ctx.json() {
        let s = Summary {
            command: "krige",
            version: env!("CARGO_PKG_VERSION"),
            samples: a.samples.display().to_string(),
            sample_rows: set.len(),
            surfaces: names,
            cols: grid.cols,
            rows: grid.rows,
            cell_size_m: grid.cell_size_m,
            backend: be.label(),
            device: be.device_name(),
            backend_fallback_reason: sel.fallback_reason.clone(),
            evaluated: pred.evaluated.clone(),
            options: opts,
            variograms: vgs,
            fits,
            groups: pred.groups.clone(),
            crossings_clipped: crossings,
            cross_validation: cv_summary,
            seconds_factor,
            seconds_grid,
            seconds_total: start.elapsed().as_secs_f64(),
            outputs: written.iter().map(|p| p.display().to_string()).collect(),
        };
        written.push(outs.write_json(p, &s)?);
    }
    outs.commit()?;
    println!("wrote {}", output::joined(&written));
    Ok(())
}

/// The method and its parameters, for the outputs' provenance.
fn provenance(a: &KrigeArgs, vgs: &[geofield::kriging::Variogram]) -> Vec<(&'static str, String)> {
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
