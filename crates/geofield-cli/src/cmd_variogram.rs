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
    /// power:EXPONENT, linear (practical-range convention; see the README); nested structures
    /// joined by `+` (spherical+exponential).
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
    /// Variogram map (gstat `map = TRUE`, GSLIB varmap): γ over separation vectors (dx, dy) in
    /// square cells of this width, to see anisotropy. Written with --map and/or --map-png.
    #[arg(long)]
    pub map_width: Option<f64>,
    /// The map's largest separation along x and y [default: --max-lag, else a third of the
    /// samples' bounding-box diagonal].
    #[arg(long, requires = "map_width")]
    pub map_cutoff: Option<f64>,
    /// The map as a raster (.tif, .npy, .asc): bands gamma and pairs, coordinates are the
    /// separations in metres (cell centres at multiples of the width; no CRS).
    #[arg(long, requires = "map_width")]
    pub map: Option<PathBuf>,
    /// The map as a picture (north up: +dy at the top).
    #[arg(long, requires = "map_width")]
    pub map_png: Option<PathBuf>,
}

#[derive(serde::Serialize)]
struct Report<'a> {
    samples: String,
    values: &'a str,
    estimator: Estimator,
    bins: &'a [kriging::LagBin],
    fit: Option<&'a kriging::Fit>,
    map: Option<&'a kriging::VariogramMap>,
}

/// A third of the samples' bounding-box diagonal (the bins' default largest lag).
fn third_diagonal(xs: &[f64], ys: &[f64]) -> f64 {
    let (x0, x1) = xs
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
            (a.min(v), b.max(v))
        });
    let (y0, y1) = ys
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
            (a.min(v), b.max(v))
        });
    (x1 - x0).hypot(y1 - y0) / 3.0
}

pub fn run(a: &VariogramArgs, ctx: &Ctx) -> Result<()> {
    ctx.refuse_unused(&[Global::Backend, Global::Crs, Global::Compress])?;
    let mut outs = Outputs::new();
    outs.input("--samples", &a.samples);
    outs.plan_opt("--png", a.png.as_deref(), Kind::File)?;
    outs.plan_opt("--json", ctx.json(), Kind::File)?;
    outs.plan_opt("--map", a.map.as_deref(), Kind::File)?;
    outs.plan_opt("--map-png", a.map_png.as_deref(), Kind::File)?;
    if a.map_width.is_some() && a.map.is_none() && a.map_png.is_none() {
        bail!("--map-width makes a variogram map: write it with --map FILE and/or --map-png FILE");
    }
    let model = a
        .model
        .as_deref()
        .map(|m| Model::parse_nested(m).with_context(|| format!("--model {m}")))
        .transpose()?;
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
        .map(|m| kriging::fit_models(&m, &bins, !a.no_nugget))
        .transpose()?;
    if let Some(f) = &fitted {
        println!("fit: {} (weighted RSS {:.4e})", f.variogram, f.wrss);
        for w in f.warnings(&bins) {
            eprintln!("warning: {w}");
        }
    }
    let map = match a.map_width {
        Some(w) => {
            let cutoff = a
                .map_cutoff
                .or(a.max_lag)
                .unwrap_or_else(|| third_diagonal(xs, ys));
            let m = kriging::variogram_map(xs, ys, vs, cutoff, w, estimator)
                .with_context(|| format!("--map-width {w} --map-cutoff {cutoff}"))?;
            println!(
                "variogram map: {} x {} cells of {} m out to ±{} m",
                m.side(),
                m.side(),
                w,
                m.lags as f64 * w
            );
            Some(m)
        }
        None => None,
    };
    let mut written = Vec::new();
    if let Some(m) = &map {
        let raster = m.to_raster()?;
        if let Some(p) = &a.map {
            let meta = geofield_io::RasterMeta {
                description: Some(format!(
                    "variogram map of {} from {} ({estimator:?}); x, y are separations in metres",
                    a.values,
                    a.samples.display()
                )),
                nodata: Some(f64::NAN),
                ..Default::default()
            };
            written.extend(outs.write(p, |t| Ok(geofield_io::write_raster(t, &raster, &meta)?))?);
        }
        if let Some(p) = &a.map_png {
            let gamma = geofield_core::Raster::new(
                raster.grid,
                vec!["gamma".into()],
                geofield_core::RasterData::F64(m.gamma.clone()),
            )?;
            let opts = geofield_io::RenderOptions {
                title: format!("variogram map of {} (dx east, dy north, m)", a.values),
                units: "semivariance".into(),
                ..Default::default()
            };
            written.push(outs.write_one(p, |t| Ok(geofield_io::render_png(t, &gamma, &opts)?))?);
        }
    }
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
            map: map.as_ref(),
        };
        written.push(outs.write_json(p, &r)?);
    }
    outs.commit()?;
    if !written.is_empty() {
        println!("wrote {}", crate::output::joined(&written));
    }
    Ok(())
}
