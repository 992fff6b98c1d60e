//! `geofield krige`: interpolate one or many surfaces from scattered samples onto a grid, with
//! the kriging variance, cross-validation and, for stratigraphy, a voxel model and a section.
//! The kriging, its checks and its files are the library's ([`geofield::kriging`]); this file
//! parses the arguments and runs the steps; [`crate::krige_in`] turns the arguments into
//! parameters, [`crate::krige_out`] writes and prints the results.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use geofield::BackendSelection;
use geofield::kriging::{self, KrigeParams, SampleSet, SurfaceFit, io::read_samples};

use crate::ctx::Ctx;
use crate::krige_in::{DriftArg, KindArg, PrecisionArg};
use crate::outputs::Outputs;
use crate::{inputs, krige_in, krige_out, krige_sim, output, progress};

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
    /// power:EXPONENT, linear (practical-range convention; see `geofield variogram`); nested
    /// structures joined by `+` (spherical+exponential, gstat's `vgm(..., add.to=)`).
    #[arg(long)]
    pub model: Option<String>,
    /// Partial sill (power: scale; linear: slope); one per structure, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub sill: Vec<f64>,
    /// Practical range in metres (where an exponential or Gaussian reaches 95 % of the sill);
    /// one per structure, comma-separated (power and linear take none).
    #[arg(long, value_delimiter = ',')]
    pub range: Vec<f64>,
    /// Nugget.
    #[arg(long, default_value_t = 0.0)]
    pub nugget: f64,
    /// Fit this model (nested: joined by `+`) to each value column's empirical variogram
    /// instead of --model.
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
    /// The external drift variable of --drift external|linear-external: a raster (.tif, .asc),
    /// first band, sampled bilinearly between cell centres at the
    /// samples and the nodes (PyKrige's rule); it must cover them all.
    #[arg(long)]
    pub drift_raster: Option<PathBuf>,
    /// Block kriging (gstat `block=`): each cell's value is the mean over a block of SX[,SY]
    /// metres centred on it (e.g. the cell size), with the block variance. Evaluated on the CPU.
    #[arg(long, value_delimiter = ',', num_args = 1..=2)]
    pub block: Vec<f64>,
    /// With --block: `gauss` (4 x 4 Gauss-Legendre points, gstat's default) or N (N x N regular points,
    /// gstat `nblockdiscr`).
    #[arg(long, default_value = "gauss")]
    pub block_discretisation: String,
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
    /// Conditional Gaussian simulation: draw N realisations that honour the samples and
    /// reproduce the variogram, instead of the kriging prediction. --out receives them: a
    /// GeoTIFF band, an .asc file or a .npy slice per realisation, or a NetCDF (.nc) with a
    /// `realization` dimension. Exponential, gaussian, spherical, cubic, matern and stable
    /// structures.
    #[arg(long, value_name = "N", conflicts_with_all = ["variance", "cv", "sd_png", "strata"])]
    pub simulate: Option<usize>,
    /// Indicator kriging: thresholds T1,T2,... (increasing) of the one value column; --out gets
    /// P(value <= T) per threshold (each indicator kriged with the variogram given or fitted
    /// per threshold), corrected by --order-correction.
    #[arg(long, value_delimiter = ',', allow_negative_numbers = true, conflicts_with_all = ["simulate", "strata"])]
    pub indicator: Option<Vec<f64>>,
    /// How indicator estimates become a distribution function at each node: `cdf` (clip to
    /// [0, 1], then GSLIB's upward/downward average: non-decreasing), `clip` or `none`.
    #[arg(long, requires = "indicator", default_value = "cdf")]
    pub order_correction: String,
    /// Seed of the simulation (the same seed, the same realisations on any backend).
    #[arg(long, requires = "simulate")]
    pub seed: Option<u64>,
    /// Modes per variogram structure of the unconditional fields (GSTools' mode_no).
    #[arg(long, requires = "simulate")]
    pub modes: Option<usize>,
}

/// What every rank has before the kriging: the backend, the samples, the parameters with their
/// fitted variograms, and (on rank 0, which writes) the staged outputs.
struct Prepared {
    sel: BackendSelection,
    set: SampleSet,
    params: KrigeParams,
    fits: Vec<SurfaceFit>,
    outs: Option<Outputs>,
    crs: Option<u16>,
}

fn prepare(a: &KrigeArgs, ctx: &Ctx, root: bool) -> Result<Prepared> {
    let crs = ctx.crs_epsg()?;
    krige_in::check_flags(a)?;
    if a.simulate.is_some() && ctx.rank_count() > 1 {
        anyhow::bail!("--simulate runs in one process: start it without mpiexec");
    }
    let outs = root.then(|| krige_out::plan(a, ctx)).transpose()?;
    let extent = inputs::parse_extent(&a.extent)?;
    let sel = ctx.open_backend()?;
    let mut params = krige_in::params(a, sel.backend.is_cuda(), extent)?;
    let mut set = read_samples(&a.samples, &a.x, &a.y, &a.values)?;
    if let Some(t) = &a.indicator {
        kriging::OrderCorrection::parse(&a.order_correction)?;
        set = kriging::indicator_set(&set, t).context("--indicator")?;
    }
    let fits = krige_in::variograms(a, &set, &mut params)?;
    Ok(Prepared {
        sel,
        set,
        params,
        fits,
        outs,
        crs,
    })
}

pub fn run(a: &KrigeArgs, ctx: &Ctx) -> Result<()> {
    let start = Instant::now();
    #[cfg(feature = "mpi")]
    let ranks = ctx.split();
    #[cfg(feature = "mpi")]
    let rank = ranks.map_or(0, |r| r.rank());
    #[cfg(not(feature = "mpi"))]
    let rank = 0;
    // Under mpiexec every rank reads the samples and fits the variograms (the same bits on
    // every rank); rank 0 also checks and stages the outputs. Any rank failing here ends the
    // job before the work.
    let prepared = prepare(a, ctx, rank == 0);
    #[cfg(feature = "mpi")]
    let prepared = match ranks {
        Some(r) => {
            // GEOFIELD_MPI_FAIL=R: rank R fails here (how the tests check a rank's failure).
            let inject = std::env::var("GEOFIELD_MPI_FAIL").ok();
            let prepared = match inject.and_then(|f| f.parse::<usize>().ok()) == Some(rank) {
                true => Err(anyhow::anyhow!(
                    "injected failure before the work (GEOFIELD_MPI_FAIL)"
                )),
                false => prepared,
            };
            r.start(prepared.as_ref().map(|_| ()).map_err(|e| format!("{e:#}")))?;
            prepared
        }
        None => prepared,
    };
    let Prepared {
        sel,
        set,
        params,
        fits,
        outs,
        crs,
    } = prepared?;
    let be = &sel.backend;
    if rank == 0 {
        krige_out::print_fits(&fits);
    }
    if let Some(n) = a.simulate {
        let Some(outs) = outs else { return Ok(()) };
        let job = krige_sim::Job {
            sel: &sel,
            set: &set,
            params: &params,
            fits,
            crs,
            start,
        };
        return krige_sim::run(a, ctx, n, job, outs);
    }
    let pb = progress::bar(1000, ctx.quiet(), "kriging");
    // Ctrl-C ends the process (the staged outputs are not renamed): no token is cancelled, but
    // for GEOFIELD_MPI_FAIL=eval under mpiexec, where the last rank stops as it starts its
    // share (how the tests check a rank failing while the others compute).
    let never = geofield::Cancel::new();
    let kriging = Instant::now();
    let fail_eval = ctx.rank_count() > 1
        && rank + 1 == ctx.rank_count()
        && std::env::var("GEOFIELD_MPI_FAIL").as_deref() == Ok("eval");
    let progress = |f: f64| {
        if fail_eval {
            never.cancel();
        }
        pb.set_position((f * 1000.0) as u64)
    };
    #[cfg(feature = "mpi")]
    let kriged = match ranks {
        // Each rank evaluates a band of rows; rank 0 gets the whole prediction.
        Some(r) => kriging::krige_split(be, &set, &params, r, &progress, &never),
        None => kriging::krige_with_progress(be, &set, &params, &progress, &never).map(Some),
    };
    #[cfg(not(feature = "mpi"))]
    let kriged = kriging::krige_with_progress(be, &set, &params, &progress, &never).map(Some);
    pb.finish_and_clear();
    let kriged_at = Instant::now();
    let (Some(mut k), Some(mut outs)) = (kriged.map_err(|e| krige_in::krige_error(e, a))?, outs)
    else {
        return Ok(());
    };
    if a.indicator.is_some() {
        kriging::OrderCorrection::parse(&a.order_correction)?.apply(&mut k.prediction.values);
    }
    for w in k.warnings() {
        eprintln!("warning: {w}");
    }
    // Under mpiexec the other ranks are done: rank 0 writes with every core of its node.
    let compression = ctx.compression()?;
    let (mut written, cv) = ctx.with_all_cores(|| {
        krige_out::write_outputs(a, &mut outs, &k, &set, &params, (crs, compression))
    })?;
    krige_out::print_summary(&k, be, &set, &cv, ctx.rank_count());
    if let Some(p) = ctx.json() {
        let s = krige_out::summary(
            a,
            &sel,
            &k,
            &set,
            &params,
            (fits, cv),
            [start, kriging, kriged_at],
            &written,
            ctx.rank_count(),
        );
        written.push(outs.write_json(p, &s)?);
    }
    outs.commit()?;
    println!("wrote {}", output::joined(&written));
    Ok(())
}
