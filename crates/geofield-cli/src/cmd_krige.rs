//! `geofield krige`: interpolate one or many surfaces from scattered samples onto a grid, with
//! the kriging variance, cross-validation and, for stratigraphy, a voxel model and a section.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use geofield::kriging::{self, KrigeOptions, Neighbourhood, Precision, Variogram};
use geofield::{BackendChoice, backend};
use geofield_core::{Raster, RasterData};

use crate::krige_in::{FitReport, options, read_samples, variograms};
use crate::krige_out::{print_summary, write_cv, write_map, write_section, write_voxels};
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
    /// With --fit: lag bins and the largest lag (metres).
    #[arg(long, default_value_t = 15)]
    pub lags: usize,
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
    /// auto | cpu | cuda | cuda:N (env GEOFIELD_BACKEND).
    #[arg(long, env = "GEOFIELD_BACKEND", default_value = "auto")]
    pub backend: String,
    /// Map of the predictions with the samples marked.
    #[arg(long)]
    pub png: Option<PathBuf>,
    /// Map of the kriging standard deviation (the square root of the variance; implies
    /// computing the variance) with the samples marked.
    #[arg(long)]
    pub sd_png: Option<PathBuf>,
    /// PNG colour map: viridis, magma or cividis.
    #[arg(long, default_value = "viridis")]
    pub colormap: String,
    /// The value columns are stratum surfaces (elevations), top to bottom: crossings are
    /// resolved by clipping each surface to the one above.
    #[arg(long)]
    pub strata: bool,
    /// With --strata: a voxel model of layer indices for ParaView (needs --dz-m).
    #[arg(long, requires = "strata")]
    pub model_vti: Option<PathBuf>,
    /// Voxel height in metres.
    #[arg(long)]
    pub dz_m: Option<f64>,
    /// With --strata: a vertical cross-section coloured by layer (along --section-row).
    #[arg(long, requires = "strata")]
    pub section_png: Option<PathBuf>,
    /// Grid row of the section (default: the middle row).
    #[arg(long)]
    pub section_row: Option<usize>,
    /// CRS of the coordinates as EPSG:CODE, written into GeoTIFFs (and .prj beside .asc).
    #[arg(long)]
    pub crs: Option<String>,
    /// Units of the sample values, written on every prediction band (the variance gets their
    /// square); default "m" with --strata, else "unknown".
    #[arg(long)]
    pub units: Option<String>,
    /// Summary as JSON.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
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

pub fn run(a: &KrigeArgs) -> Result<()> {
    let start = Instant::now();
    let crs = crate::cmd_disperse::parse_crs(&a.crs)?;
    if a.model_vti.is_some() && a.dz_m.is_none() {
        bail!("--model-vti needs --dz-m (the voxel height in metres)");
    }
    let extent = inputs::parse_extent(&a.extent)?;
    let h = a.values.len();
    let choice: BackendChoice = a.backend.parse().map_err(anyhow::Error::msg)?;
    let sel = backend::select(choice)?;
    if let Some(r) = &sel.fallback_reason {
        eprintln!("note: using the CPU backend: {r}");
    }
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
    output::preflight(&a.out, true)?;
    if let Some(p) = &a.variance {
        output::preflight(p, true)?;
    }
    for p in [
        &a.png,
        &a.sd_png,
        &a.cv,
        &a.json,
        &a.model_vti,
        &a.section_png,
    ]
    .into_iter()
    .flatten()
    {
        output::preflight(p, false)?;
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
    let pb = progress::bar(1000, a.quiet, "kriging");
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
    let mut outputs: Vec<String> = output::write_raster_with(
        &a.out,
        &est,
        &units,
        "kriging prediction",
        crs,
        &method,
        local,
    )?
    .iter()
    .map(|p| p.display().to_string())
    .collect();
    if let (Some(p), Some(v)) = (&a.variance, &pred.variance) {
        let r = to_raster(v, names.clone())?;
        outputs.extend(
            output::write_raster_with(p, &r, &var_units, "kriging variance", crs, &method, local)?
                .iter()
                .map(|p| p.display().to_string()),
        );
    }
    let mut cv_summary = vec![];
    if let Some(p) = &a.cv {
        let cv = kriging::cross_validate(&set, &groups)?;
        write_cv(p, &set, &cv)?;
        outputs.push(p.display().to_string());
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
        write_map(p, &est, &title, &set, &a.colormap)?;
        outputs.push(p.display().to_string());
    }
    if let (Some(p), Some(v)) = (&a.sd_png, &pred.variance) {
        let sd: Vec<Vec<f64>> = v
            .iter()
            .map(|b| b.iter().map(|x| x.sqrt()).collect())
            .collect();
        let r = to_raster(&sd, names.clone())?;
        write_map(
            p,
            &r,
            "kriging standard deviation (wells marked)",
            &set,
            "magma",
        )?;
        outputs.push(p.display().to_string());
    }
    if let Some(p) = &a.model_vti {
        let dz = a.dz_m.unwrap_or(1.0);
        write_voxels(p, &pred.values, &grid, dz, &names, crs)?;
        outputs.push(p.display().to_string());
    }
    if let Some(p) = &a.section_png {
        write_section(p, &pred.values, &grid, a.section_row, &names, &set)?;
        outputs.push(p.display().to_string());
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
    if let Some(p) = &a.json {
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
            outputs: outputs.clone(),
        };
        output::write_json(p, &s)?;
        outputs.push(p.display().to_string());
    }
    println!("wrote {}", outputs.join(", "));
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
