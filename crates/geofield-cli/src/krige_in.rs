//! Inputs of `geofield krige`: the samples CSV (read by [`geofield::kriging::io`]), the
//! variograms (given or fitted) and the options, each checked with errors that name the flag,
//! file and line.

use anyhow::{Context, Result, bail};
use geofield::kriging::{
    self, Anisotropy, Drift, Estimator, Kind, KrigeOptions, LagSpec, MergeRule, Model,
    Neighbourhood, NuggetMode, Precision, SampleSet, Variogram,
};

use crate::cmd_krige::{DriftArg, KindArg, KrigeArgs, PrecisionArg};

pub use geofield::kriging::io::read_samples;

#[derive(serde::Serialize)]
pub(crate) struct FitReport {
    pub(crate) surfaces: Vec<String>,
    pub(crate) variogram: Variogram,
    pub(crate) wrss: f64,
    pub(crate) warnings: Vec<String>,
}

/// Lag bins of a variogram fit when --lags is not given.
const DEFAULT_LAGS: usize = 15;

/// The variograms: the one given, or fitted per column (or pooled).
pub(crate) fn variograms(
    a: &KrigeArgs,
    set: &SampleSet,
) -> Result<(Vec<Variogram>, Vec<FitReport>)> {
    if let Some(m) = &a.model {
        let model = Model::parse(m)?;
        let sill = a
            .sill
            .with_context(|| format!("--model {m} needs --sill"))?;
        let range = match a.range {
            Some(r) => r,
            None if !model.is_bounded() => 1.0,
            None => bail!("--model {m} needs --range (the practical range in metres)"),
        };
        return Ok((vec![Variogram::new(model, sill, range, a.nugget)?], vec![]));
    }
    let Some(m) = &a.fit else {
        bail!("give a variogram (--model M --sill C --range A [--nugget N]) or --fit M");
    };
    let model = Model::parse(m)?;
    let spec = LagSpec {
        lags: a.lags.unwrap_or(DEFAULT_LAGS),
        max_lag: a.max_lag,
        direction: None,
    };
    let all_bins = kriging::surface_bins(set, &spec, Estimator::Matheron)?;
    if a.fit_pooled {
        let pooled = kriging::pool(&all_bins);
        let f = kriging::fit(model, &pooled, true).context("pooled variogram fit")?;
        let rep = FitReport {
            surfaces: set.surfaces.iter().map(|s| s.name.clone()).collect(),
            variogram: f.variogram.clone(),
            wrss: f.wrss,
            warnings: f.warnings(&pooled),
        };
        return Ok((vec![f.variogram], vec![rep]));
    }
    let mut out = vec![];
    let mut reps = vec![];
    for (s, bins) in set.surfaces.iter().zip(&all_bins) {
        let f = kriging::fit(model, bins, true)
            .with_context(|| format!("variogram fit of {}", s.name))?;
        reps.push(FitReport {
            surfaces: vec![s.name.clone()],
            variogram: f.variogram.clone(),
            wrss: f.wrss,
            warnings: f.warnings(bins),
        });
        out.push(f.variogram);
    }
    Ok((out, reps))
}

pub(crate) fn options(a: &KrigeArgs, gpu: bool) -> Result<KrigeOptions> {
    let kind = match a.kind {
        KindArg::Simple => {
            if a.drift.is_some() {
                bail!("--drift is for universal kriging, not --kind simple");
            }
            Kind::Simple {
                mean: a
                    .mean
                    .context("--kind simple needs --mean (the known mean)")?,
            }
        }
        KindArg::Ordinary if a.drift.is_none() => Kind::Ordinary,
        // A drift implies universal kriging.
        KindArg::Ordinary | KindArg::Universal => Kind::Universal {
            drift: match a.drift {
                Some(DriftArg::Quadratic) => Drift::Quadratic,
                _ => Drift::Linear,
            },
        },
    };
    if a.mean.is_some() && !matches!(kind, Kind::Simple { .. }) {
        bail!("--mean is for --kind simple");
    }
    let anisotropy = match &a.anisotropy {
        None => None,
        Some(s) => {
            let p: Vec<&str> = s.split(',').map(str::trim).collect();
            let nums: Option<Vec<f64>> = p.iter().map(|t| t.parse::<f64>().ok()).collect();
            match nums.as_deref() {
                Some([az, ratio]) => Some(Anisotropy {
                    azimuth_deg: *az,
                    ratio: *ratio,
                }),
                _ => bail!("--anisotropy must be AZIMUTH_DEG,RATIO (e.g. 45,0.5), got {s:?}"),
            }
        }
    };
    let neighbourhood = match a.neighbors {
        None => Neighbourhood::Global,
        Some(k) => Neighbourhood::Local {
            k,
            radius: a.radius,
        },
    };
    let precision = match a.precision {
        PrecisionArg::F32 => Precision::F32,
        PrecisionArg::F64 => Precision::F64,
        // Local systems in f32 lose the drift's digits on near-collinear neighbour sets, and f64
        // costs little there (the solve, not the bandwidth, dominates).
        PrecisionArg::Auto if gpu && neighbourhood == Neighbourhood::Global => Precision::F32,
        PrecisionArg::Auto => Precision::F64,
    };
    let o = KrigeOptions {
        kind,
        anisotropy,
        neighbourhood,
        nugget: if a.nugget_error {
            NuggetMode::MeasurementError
        } else {
            NuggetMode::Exact
        },
        precision,
        merge: MergeRule {
            distance_m: a.merge_distance_m,
            tolerance: a.merge_tolerance,
        },
    };
    o.validate()?;
    Ok(o)
}
