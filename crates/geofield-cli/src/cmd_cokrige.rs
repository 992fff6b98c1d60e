//! `geofield cokrige`: ordinary or simple cokriging of a primary variable from its samples and
//! those of secondary variables (heterotopic: a row may lack some), with a linear model of
//! coregionalisation fitted as gstat's `fit.lmc`. The cokriging, the fit and the files are the
//! library's ([`geofield::kriging::cokriging`]).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use geofield::kriging::cokriging::{
    CoKind, CoParams, cokrige_on, cross_bins, fit::pair_order, fit_lmc, shapes,
};
use geofield::kriging::{Model, Target, fit_models, io::read_samples};
use geofield_core::{GridSpec, Raster, RasterData};

use crate::ctx::Ctx;
use crate::outputs::{Kind as OutKind, Outputs};
use crate::{inputs, krige_in};

#[derive(Clone, Copy, ValueEnum, PartialEq, Debug)]
pub enum CoKindArg {
    Ordinary,
    Simple,
}

#[derive(Args, Debug)]
pub struct CokrigeArgs {
    /// Samples: CSV with a header row; leave a cell empty (or NA) where a variable was not
    /// measured.
    #[arg(long)]
    pub samples: PathBuf,
    #[arg(long, default_value = "x")]
    pub x: String,
    #[arg(long, default_value = "y")]
    pub y: String,
    /// Value columns, comma-separated: the primary (the one predicted) first, then the
    /// secondaries.
    #[arg(long, value_delimiter = ',', required = true)]
    pub values: Vec<String>,
    /// The structures of the coregionalisation (bounded models joined by `+`, e.g.
    /// spherical+exponential); their sills are fitted for every pair of variables.
    #[arg(long)]
    pub model: String,
    /// Practical range of each structure, metres; default: fitted to the primary's variogram.
    #[arg(long, value_delimiter = ',')]
    pub range: Vec<f64>,
    /// Fit no nugget (the nugget matrix is zero).
    #[arg(long)]
    pub no_nugget: bool,
    /// Lag bins of the direct and cross variograms.
    #[arg(long, default_value_t = 15)]
    pub lags: usize,
    /// Largest separation binned (default a third of the samples' bounding-box diagonal).
    #[arg(long)]
    pub max_lag: Option<f64>,
    #[arg(long, value_enum, default_value = "ordinary")]
    pub kind: CoKindArg,
    /// Simple cokriging: the known mean of each variable, comma-separated.
    #[arg(long, value_delimiter = ',', allow_negative_numbers = true)]
    pub mean: Vec<f64>,
    /// Geometric anisotropy AZIMUTH_DEG,RATIO (as `geofield krige`).
    #[arg(long, allow_hyphen_values = true)]
    pub anisotropy: Option<String>,
    /// Output extent XMIN,YMIN,XMAX,YMAX in metres.
    #[arg(long, allow_hyphen_values = true)]
    pub extent: String,
    #[arg(long, allow_negative_numbers = true)]
    pub cell_size_m: f64,
    /// The cokriged primary: .tif, .asc or .npy.
    #[arg(long)]
    pub out: PathBuf,
    /// Its cokriging variance, in the same formats.
    #[arg(long)]
    pub variance: Option<PathBuf>,
    /// Units of the primary's values.
    #[arg(long)]
    pub units: Option<String>,
}

#[derive(serde::Serialize)]
struct Summary {
    command: &'static str,
    version: &'static str,
    samples: String,
    variables: Vec<String>,
    samples_per_variable: Vec<usize>,
    lmc: geofield::kriging::cokriging::Lmc,
    kind: &'static str,
    seconds: f64,
    outputs: Vec<String>,
}

pub fn run(a: &CokrigeArgs, ctx: &Ctx) -> Result<()> {
    let start = Instant::now();
    let crs = ctx.crs_epsg()?;
    if a.values.len() < 2 {
        bail!("--values needs the primary and at least one secondary variable");
    }
    let mut outs = Outputs::new();
    outs.input("--samples", &a.samples);
    outs.plan("--out", &a.out, OutKind::Raster)?;
    outs.plan_opt("--variance", a.variance.as_deref(), OutKind::Raster)?;
    outs.plan_opt("--json", ctx.json(), OutKind::File)?;
    let extent = inputs::parse_extent(&a.extent)?;
    let grid = GridSpec::from_extent(extent, a.cell_size_m).context("--extent/--cell-size-m")?;
    grid.check_memory(2, 8, geofield_core::memory::memory_limit_bytes())
        .context("--extent/--cell-size-m")?;
    let anisotropy = krige_in::parse_anisotropy(a.anisotropy.as_deref())?;
    let kind = match a.kind {
        CoKindArg::Ordinary if a.mean.is_empty() => CoKind::Ordinary,
        CoKindArg::Ordinary => bail!("--mean is for --kind simple"),
        CoKindArg::Simple if a.mean.len() == a.values.len() => CoKind::Simple {
            means: a.mean.clone(),
        },
        CoKindArg::Simple => bail!(
            "--kind simple needs --mean with one mean per value column ({})",
            a.values.len()
        ),
    };
    let models = Model::parse_nested(&a.model).with_context(|| format!("--model {}", a.model))?;
    let set = read_samples(&a.samples, &a.x, &a.y, &a.values)?;
    let k = a.values.len();
    let bins = cross_bins(&set, anisotropy, a.lags, a.max_lag).context("the variograms")?;
    let ranges = if a.range.is_empty() {
        let f = fit_models(&models, &bins[0], !a.no_nugget)
            .with_context(|| format!("fitting the ranges to the variogram of {}", a.values[0]))?;
        let r: Vec<f64> = f.variogram.structures.iter().map(|s| s.range).collect();
        println!(
            "ranges fitted to the variogram of {}: {}",
            a.values[0],
            r.iter()
                .map(|v| format!("{v:.1}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        r
    } else {
        a.range.clone()
    };
    let st = shapes(&models, &ranges).context("--model/--range")?;
    let lmc = fit_lmc(&bins, k, &st, !a.no_nugget).context("fitting the coregionalisation")?;
    for (p, q) in pair_order(k) {
        println!(
            "  {} x {}: {}",
            a.values[p],
            a.values[q],
            lmc.describe(p, q)
        );
    }
    let params = CoParams {
        lmc: lmc.clone(),
        kind: kind.clone(),
        anisotropy,
        variance: a.variance.is_some(),
        target: Target::Grid(grid),
    };
    let sel = ctx.open_backend()?;
    let co = cokrige_on(&sel.backend, &set, &params)
        .with_context(|| format!("cokriging {} of {}", a.values[0], a.samples.display()))?;
    println!(
        "{} cokriging of {} from {} (samples per variable: {:?}); grid {} x {} ({}): {:.3} s",
        match kind {
            CoKind::Ordinary => "ordinary",
            CoKind::Simple { .. } => "simple",
        },
        a.values[0],
        a.values[1..].join(", "),
        co.samples,
        grid.rows,
        grid.cols,
        co.evaluated,
        co.seconds
    );
    let units = a.units.clone().unwrap_or_else(|| "unknown".into());
    let place = (crs, ctx.compression()?);
    let lmc_json = serde_json::to_string(&lmc).unwrap_or_default();
    let method = [
        (
            "method",
            "cokriging (linear model of coregionalisation)".to_string(),
        ),
        ("lmc", lmc_json),
    ];
    let write = |p: &std::path::Path, v: &[f64], band: String, what: &str, u: &str| {
        let r = Raster::new(grid, vec![band], RasterData::F64(v.to_vec()))
            .context("the output raster")?;
        let desc = format!("{what} of {} (cokriging)", a.values[0]);
        crate::output::write_raster_with(p, &r, u, &desc, place, &method, false)
    };
    let mut written = outs.write(&a.out, |p| {
        write(p, &co.values, a.values[0].clone(), "prediction", &units)
    })?;
    if let (Some(path), Some(v)) = (&a.variance, &co.variance) {
        let sq = if units == "unknown" {
            units.clone()
        } else {
            format!("({units})2")
        };
        written.extend(outs.write(path, |p| {
            write(p, v, format!("{}_variance", a.values[0]), "variance", &sq)
        })?);
    }
    if let Some(p) = ctx.json() {
        let s = Summary {
            command: "cokrige",
            version: env!("CARGO_PKG_VERSION"),
            samples: a.samples.display().to_string(),
            variables: a.values.clone(),
            samples_per_variable: co.samples.clone(),
            lmc,
            kind: match kind {
                CoKind::Ordinary => "ordinary",
                CoKind::Simple { .. } => "simple",
            },
            seconds: start.elapsed().as_secs_f64(),
            outputs: written.iter().map(|p| p.display().to_string()).collect(),
        };
        written.push(outs.write_json(p, &s)?);
    }
    outs.commit()?;
    println!("wrote {}", crate::output::joined(&written));
    Ok(())
}
