//! `geofield variogram`: the empirical variogram of a sampled variable, and a fitted model.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use geofield::kriging::io::{read_variable, write_variogram_png};
use geofield::kriging::{self, Estimator, LagSpec, Model};

use crate::ctx::{Ctx, Global};
use crate::outputs::{Kind, Outputs};

#[derive(Clone, Copy, ValueEnum)]
pub enum EstimatorArg {
    Matheron,
    Cressie,
}

#[derive(Args)]
pub struct VariogramArgs {
    /// Samples: CSV with a header.
    #[arg(long)]
    pub samples: PathBuf,
    /// Column of the x coordinate.
    #[arg(long, default_value = "x")]
    pub x: String,
    /// Column of the y coordinate.
    #[arg(long, default_value = "y")]
    pub y: String,
    /// Column of the variable.
    #[arg(long)]
    pub values: String,
    /// Fit this model: exponential, gaussian, spherical, cubic, stable:ALPHA, matern:NU,
    /// power:EXPONENT, linear (practical-range convention; see the README).
    #[arg(long)]
    pub model: Option<String>,
    /// Fit without a nugget.
    #[arg(long)]
    pub no_nugget: bool,
    #[arg(long, value_enum, default_value = "matheron")]
    pub estimator: EstimatorArg,
    /// Number of lag bins, of equal width from 0 to the largest lag.
    #[arg(long, default_value_t = 15)]
    pub lags: usize,
    /// Largest separation binned, in the coordinates' units (default: a third of the samples'
    /// bounding-box diagonal).
    #[arg(long)]
    pub max_lag: Option<f64>,
    /// Directional variogram: AZIMUTH,TOLERANCE in degrees (azimuth clockwise from north).
    #[arg(long, value_delimiter = ',')]
    pub direction: Option<Vec<f64>>,
    /// Chart of the bins (labelled with their pair counts) and the fitted model. (The bins and
    /// the fit as JSON: the global --json.)
    #[arg(long)]
    pub png: Option<PathBuf>,
}

#[derive(serde::Serialize)]
struct Report<'a> {
    samples: String,
    values: &'a str,
    estimator: Estimator,
    bins: &'a [kriging::LagBin],
    fit: Option<&'a kriging::Fit>,
}

pub fn run(a: &VariogramArgs, ctx: &Ctx) -> Result<()> {
    ctx.refuse_unused(&[Global::Backend, Global::Crs, Global::Compress])?;
    let mut outs = Outputs::new();
    outs.input("--samples", &a.samples);
    outs.plan_opt("--png", a.png.as_deref(), Kind::File)?;
    outs.plan_opt("--json", ctx.json(), Kind::File)?;
    let model = a.model.as_deref().map(Model::parse).transpose()?;
    let set = read_variable(&a.samples, &a.x, &a.y, &a.values)?;
    let (xs, ys, vs) = (&set.xs, &set.ys, &set.surfaces[0].values);
    let direction = match a.direction.as_deref() {
        None => None,
        Some([az, tol]) => Some((*az, *tol)),
        Some(_) => bail!("--direction takes AZIMUTH,TOLERANCE"),
    };
    let spec = LagSpec {
        lags: a.lags,
        max_lag: a.max_lag,
        direction,
    };
    let estimator = match a.estimator {
        EstimatorArg::Matheron => Estimator::Matheron,
        EstimatorArg::Cressie => Estimator::CressieHawkins,
    };
    let bins = kriging::empirical(xs, ys, vs, &spec, estimator)
        .with_context(|| format!("{}: column {}", a.samples.display(), a.values))?;
    println!(
        "{} samples of {} from {}; {} bins{}",
        xs.len(),
        a.values,
        a.samples.display(),
        bins.len(),
        direction.map_or(String::new(), |(az, t)| format!(", azimuth {az}° ± {t}°"))
    );
    println!(
        "{:>12} {:>12} {:>10} {:>14}",
        "from", "to", "pairs", "gamma"
    );
    for b in &bins {
        println!(
            "{:>12.4} {:>12.4} {:>10} {:>14.6}",
            b.lo, b.hi, b.pairs, b.gamma
        );
    }
    let fitted = model
        .map(|m| kriging::fit(m, &bins, !a.no_nugget))
        .transpose()?;
    if let Some(f) = &fitted {
        println!("fit: {} (weighted RSS {:.4e})", f.variogram, f.wrss);
        for w in f.warnings(&bins) {
            eprintln!("warning: {w}");
        }
    }
    let mut written = Vec::new();
    if let Some(p) = &a.png {
        let f = fitted.as_ref();
        written.push(outs.write_one(p, |s| Ok(write_variogram_png(s, &a.values, &bins, f)?))?);
    }
    if let Some(p) = ctx.json() {
        let r = Report {
            samples: a.samples.display().to_string(),
            values: &a.values,
            estimator,
            bins: &bins,
            fit: fitted.as_ref(),
        };
        written.push(outs.write_json(p, &r)?);
    }
    outs.commit()?;
    if !written.is_empty() {
        println!("wrote {}", crate::output::joined(&written));
    }
    Ok(())
}
