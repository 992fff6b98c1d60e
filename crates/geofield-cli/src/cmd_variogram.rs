//! `geofield variogram`: the empirical variogram of a sampled variable, and a fitted model.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use geofield::kriging::{self, Estimator, LagSpec, Model};
use geofield_io::{CsvTable, XyChart};

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
    ctx.refuse_unused(&[Global::Backend, Global::Crs])?;
    let mut outs = Outputs::new();
    outs.input("--samples", &a.samples);
    outs.plan_opt("--png", a.png.as_deref(), Kind::File)?;
    outs.plan_opt("--json", ctx.json(), Kind::File)?;
    let model = a.model.as_deref().map(Model::parse).transpose()?;
    let mut t = CsvTable::read(&a.samples)?;
    let (cx, cy, cv) = (t.column(&a.x)?, t.column(&a.y)?, t.column(&a.values)?);
    let (mut xs, mut ys, mut vs) = (vec![], vec![], vec![]);
    let mut rec = geofield_io::CsvRecord::default();
    while t.next_record(&mut rec)? {
        let row = t.row(&rec);
        xs.push(row.finite_f64(cx)?);
        ys.push(row.finite_f64(cy)?);
        vs.push(row.finite_f64(cv)?);
    }
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
    let bins = kriging::empirical(&xs, &ys, &vs, &spec, estimator)
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
        let hmax = bins.last().map_or(1.0, |b| b.hi);
        let chart = XyChart {
            title: format!("variogram of {}", a.values),
            subtitle: fitted
                .as_ref()
                .map_or("empirical (labels: pair counts)".into(), |f| {
                    f.variogram.to_string()
                }),
            x_label: "distance (m)".into(),
            y_label: "semivariance".into(),
            points: bins.iter().map(|b| (b.distance, b.gamma)).collect(),
            point_labels: bins.iter().map(|b| b.pairs.to_string()).collect(),
            curve: fitted.as_ref().map_or(vec![], |f| {
                (0..=200)
                    .map(|i| {
                        let h = hmax * f64::from(i) / 200.0;
                        (h, f.variogram.gamma(h))
                    })
                    .collect()
            }),
        };
        written.push(outs.write_one(p, |s| Ok(geofield_io::write_xy_chart_png(s, &chart)?))?);
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
