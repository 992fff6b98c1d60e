//! Inputs of `geofield krige`: the flags checked together, the options and the grid target
//! ([`params`]), and the variograms given or fitted; errors name the flag, file and line.

use anyhow::{Context, Result, anyhow, bail};
use clap::ValueEnum;
use geofield::GeofieldError;
use geofield::kriging::{
    self, Anisotropy, Block, Discretisation, Drift, Kind, KrigeOptions, KrigeParams, LagSpec,
    MergeRule, Model, Neighbourhood, NuggetMode, Precision, SampleSet, SurfaceFit, Target,
    Variogram,
};
use geofield_core::{Extent, GridSpec};

use crate::cmd_krige::KrigeArgs;

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
    /// 1 and the --drift-raster variable (kriging with external drift, gstat `z ~ dem`).
    External,
    /// 1, x, y and the --drift-raster variable.
    LinearExternal,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Debug)]
pub enum PrecisionArg {
    /// f64 on the CPU; on the GPU f32 for global kriging, f64 for local kriging.
    Auto,
    F32,
    F64,
}

/// Lag bins of a variogram fit when --lags is not given.
const DEFAULT_LAGS: usize = 15;

/// The flags that only make sense together.
pub(crate) fn check_flags(a: &KrigeArgs) -> Result<()> {
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
    if let Some(n) = a.simulate
        && !(1..=geofield::kriging::simulate::MAX_REALISATIONS).contains(&n)
    {
        bail!(
            "--simulate {n}: draw 1 to {} realisations",
            geofield::kriging::simulate::MAX_REALISATIONS
        );
    }
    if let Some(m) = a.modes
        && !(1..=geofield::kriging::simulate::MAX_MODES).contains(&m)
    {
        bail!(
            "--modes {m}: 1 to {} modes per structure",
            geofield::kriging::simulate::MAX_MODES
        );
    }
    if a.png.is_none() && a.colormap != "viridis" {
        bail!("--colormap styles --png: give --png");
    }
    Ok(())
}

/// The parameters but the variograms: the options, the grid of `extent` (refused if its bands
/// would not fit in memory), the variance, crossings; and --section-row checked on the grid.
pub(crate) fn params(a: &KrigeArgs, gpu: bool, extent: Extent) -> Result<KrigeParams> {
    let options = options(a, gpu)?;
    let grid = GridSpec::from_extent(extent, a.cell_size_m)
        .context("the output grid of --extent at cell size --cell-size-m")?;
    let mut params = KrigeParams {
        variograms: vec![],
        options,
        target: Target::Grid(grid),
        variance: a.variance.is_some() || a.sd_png.is_some(),
        resolve_crossings: a.strata,
        external_drift: None,
    };
    match (params.options.kind.is_external(), &a.drift_raster) {
        (true, Some(p)) => params.external_drift = Some(std::sync::Arc::new(drift_raster(p)?)),
        (true, None) => bail!("--drift external needs --drift-raster (e.g. a DEM)"),
        (false, Some(_)) => {
            bail!("--drift-raster is the variable of --drift external|linear-external: give one")
        }
        (false, None) => {}
    }
    params.check_memory(a.values.len()).context(
        "the output grid would not fit in this machine's available memory (MemAvailable)",
    )?;
    if let Some(r) = a.section_row
        && r >= grid.rows
    {
        bail!(
            "--section-row {r} is outside the grid: rows 0 (north) to {}",
            grid.rows - 1
        );
    }
    Ok(params)
}

/// The first band of `path` as an external drift variable (nodata cells missing).
fn drift_raster(path: &std::path::Path) -> Result<kriging::ExternalDrift> {
    // Nodata cells come back as NaN.
    let (r, _) = geofield_io::read_raster(path)
        .with_context(|| format!("--drift-raster {}", path.display()))?;
    let v = r.band_f64(0);
    Ok(kriging::ExternalDrift::new(
        r.grid,
        v,
        &path.display().to_string(),
    )?)
}

/// The variograms into `params`: the one given, or fitted per column (or pooled); the fits.
pub(crate) fn variograms(
    a: &KrigeArgs,
    set: &SampleSet,
    params: &mut KrigeParams,
) -> Result<Vec<SurfaceFit>> {
    if let Some(m) = &a.model {
        let models = Model::parse_nested(m).with_context(|| format!("--model {m}"))?;
        if a.sill.is_empty() {
            bail!("--model {m} needs --sill (one partial sill per structure, comma-separated)");
        }
        let bounded = models.iter().filter(|m| m.is_bounded()).count();
        if a.range.is_empty() && bounded > 0 {
            bail!("--model {m} needs --range (the practical range in metres, one per structure)");
        }
        let v = Variogram::nested(&models, &a.sill, &a.range, a.nugget)
            .with_context(|| format!("--model {m} --sill --range --nugget"))?;
        params.variograms = vec![v];
        return Ok(vec![]);
    }
    let Some(m) = &a.fit else {
        bail!("give a variogram (--model M --sill C --range A [--nugget N]) or --fit M");
    };
    let spec = LagSpec {
        lags: a.lags.unwrap_or(DEFAULT_LAGS),
        max_lag: a.max_lag,
        direction: None,
    };
    let models = Model::parse_nested(m).with_context(|| format!("--fit {m}"))?;
    // With a drift, the variogram of the residuals from its least-squares fit (gstat's
    // `variogram(z ~ drift)`): the trend would otherwise inflate the sill and range.
    let kind = params.options.kind;
    let fits = if matches!(kind, Kind::Universal { .. }) {
        let r = kriging::drift_residuals(set, kind, params.external_drift.as_deref())
            .context("--fit: the residuals of the drift")?;
        println!(
            "fitting the variograms of the residuals from a least-squares fit of the drift \
             ({} kriging; gstat's variogram(z ~ drift))",
            kind.name()
        );
        kriging::fit_surfaces(&r, &models, &spec, a.fit_pooled)?
    } else {
        kriging::fit_surfaces(set, &models, &spec, a.fit_pooled)?
    };
    params.variograms = fits.iter().map(|f| f.variogram.clone()).collect();
    Ok(fits)
}

/// A kriging error as the command says it: global kriging too large for memory with the flags
/// to use instead; any other error in the context of the samples file.
pub(crate) fn krige_error(e: GeofieldError, a: &KrigeArgs) -> anyhow::Error {
    match e {
        GeofieldError::KrigingTooLarge {
            samples,
            need_bytes,
            available_bytes,
        } => anyhow!(
            "global kriging of {} samples needs about {:.1} GB for the covariance matrix and                  its factor, more than this machine's {:.1} GB available: use local kriging                  (--neighbors 32 [--radius R])",
            samples,
            need_bytes as f64 / 1e9,
            available_bytes as f64 / 1e9
        ),
        e => {
            anyhow::Error::new(e).context(format!("kriging the samples of {}", a.samples.display()))
        }
    }
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
                Some(DriftArg::External) => Drift::External,
                Some(DriftArg::LinearExternal) => Drift::LinearExternal,
                _ => Drift::Linear,
            },
        },
    };
    if a.mean.is_some() && !matches!(kind, Kind::Simple { .. }) {
        bail!("--mean is for --kind simple");
    }
    let anisotropy = parse_anisotropy(a.anisotropy.as_deref())?;
    let neighbourhood = match a.neighbors {
        None => Neighbourhood::Global,
        Some(k) => Neighbourhood::Local {
            k,
            radius: a.radius,
        },
    };
    let block = match a.block.as_slice() {
        [] => {
            if a.block_discretisation != "gauss" {
                bail!("--block-discretisation sets how --block is discretised: give --block");
            }
            None
        }
        [sx, sy @ ..] => {
            let rule = a.block_discretisation.trim().to_ascii_lowercase();
            let discretisation = if rule == "gauss" {
                Discretisation::Gauss
            } else {
                Discretisation::Regular {
                    n: rule.parse().map_err(|_| {
                        anyhow!(
                            "--block-discretisation {:?}: `gauss` or a number of points a side",
                            a.block_discretisation
                        )
                    })?,
                }
            };
            Some(Block {
                size_x_m: *sx,
                size_y_m: *sy.first().unwrap_or(sx),
                discretisation,
            })
        }
    };
    if block.is_some() && a.simulate.is_some() {
        bail!("--block with --simulate: simulation draws point values (average the realisations)");
    }
    let precision = match a.precision {
        PrecisionArg::F32 => Precision::F32,
        PrecisionArg::F64 => Precision::F64,
        // Local systems in f32 lose the drift's digits on near-collinear neighbour sets, and f64
        // costs little there (the solve, not the bandwidth, dominates).
        PrecisionArg::Auto if gpu && neighbourhood == Neighbourhood::Global && block.is_none() => {
            Precision::F32
        }
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
        block,
    };
    o.validate()?;
    Ok(o)
}

/// `--anisotropy AZIMUTH_DEG,RATIO` (gstat's 2-D convention).
pub(crate) fn parse_anisotropy(s: Option<&str>) -> Result<Option<Anisotropy>> {
    let Some(s) = s else { return Ok(None) };
    let p: Vec<&str> = s.split(',').map(str::trim).collect();
    let nums: Option<Vec<f64>> = p.iter().map(|t| t.parse::<f64>().ok()).collect();
    match nums.as_deref() {
        Some([az, ratio]) => Ok(Some(Anisotropy {
            azimuth_deg: *az,
            ratio: *ratio,
        })),
        _ => bail!("--anisotropy must be AZIMUTH_DEG,RATIO (e.g. 45,0.5), got {s:?}"),
    }
}
