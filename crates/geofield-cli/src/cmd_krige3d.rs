//! `geofield krige3d`: 3-D kriging of (x, y, z, value) samples (boreholes, soundings, probes)
//! onto a 3-D grid (NetCDF, VTK image data or CSV) or at points (CSV), with the kriging variance
//! and a 3-D anisotropy (gstat's `anis = c(p, q, r, s, t)`). The kriging and its files are the
//! library's ([`geofield::kriging::volume`], [`geofield::kriging::io`]).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Args;
use geofield::GeofieldError;
use geofield::kriging::io::{
    VolumeMeta, read_points3, read_samples3, write_points3_csv, write_volume_nc, write_volume_vti,
};
use geofield::kriging::volume::{
    Anisotropy3, Axes3, Krige3Params, Samples3, Target3, drift_residuals3, empirical3, krige3d,
};
use geofield::kriging::{Drift, Kind, Model, NuggetMode, Variogram, fit_models};

use crate::ctx::{Ctx, Global};
use crate::krige_in::KindArg;
use crate::outputs::{Kind as OutKind, Outputs};

#[derive(Args, Debug)]
pub struct Krige3dArgs {
    /// Samples: CSV with a header row; rows with an empty or NA value are skipped.
    #[arg(long)]
    pub samples: PathBuf,
    /// Column of x (metres, east).
    #[arg(long, default_value = "x")]
    pub x: String,
    /// Column of y (metres, north).
    #[arg(long, default_value = "y")]
    pub y: String,
    /// Column of z (metres, up: elevation; negate depths).
    #[arg(long, default_value = "z")]
    pub z: String,
    /// The value column.
    #[arg(long)]
    pub value: String,
    /// Variogram model (as `geofield krige`; nested joined by `+`).
    #[arg(long)]
    pub model: Option<String>,
    /// Partial sill(s), one per structure.
    #[arg(long, value_delimiter = ',')]
    pub sill: Vec<f64>,
    /// Practical range(s) along the major axis, metres.
    #[arg(long, value_delimiter = ',')]
    pub range: Vec<f64>,
    #[arg(long, default_value_t = 0.0)]
    pub nugget: f64,
    /// Fit this model to the samples' 3-D empirical variogram (anisotropy-corrected distances;
    /// with --kind universal, of the residuals from a least-squares linear drift).
    #[arg(long, conflicts_with = "model")]
    pub fit: Option<String>,
    /// With --fit: lag bins [default: 15].
    #[arg(long, requires = "fit")]
    pub lags: Option<usize>,
    /// With --fit: the largest separation binned (default a third of the samples' diagonal).
    #[arg(long, requires = "fit")]
    pub max_lag: Option<f64>,
    #[arg(long, value_enum, default_value = "ordinary")]
    pub kind: KindArg,
    /// Known mean of simple kriging.
    #[arg(long, allow_negative_numbers = true)]
    pub mean: Option<f64>,
    /// 3-D anisotropy AZIMUTH,DIP,RAKE,RATIO1,RATIO2 (gstat's `anis`, GSLIB's convention): the
    /// major axis' azimuth (degrees clockwise from north) and dip (degrees up from horizontal),
    /// the rotation of the minor axes about it, and the two minor ranges over the major range.
    #[arg(long, allow_hyphen_values = true)]
    pub anisotropy: Option<String>,
    /// Local kriging from the K nearest samples (1..=64); default global.
    #[arg(long)]
    pub neighbors: Option<usize>,
    /// With --neighbors: only samples within this (anisotropy-corrected) distance; nodes
    /// without enough are left empty (NaN).
    #[arg(long, requires = "neighbors")]
    pub radius: Option<f64>,
    /// Grid: XMIN,YMIN,ZMIN,XMAX,YMAX,ZMAX in metres (a whole number of cells each way; nodes
    /// at the cell centres).
    #[arg(
        long,
        allow_hyphen_values = true,
        conflicts_with = "points",
        requires = "cell_size_m"
    )]
    pub extent: Option<String>,
    /// Horizontal cell size, metres.
    #[arg(long)]
    pub cell_size_m: Option<f64>,
    /// Vertical cell size, metres (default the horizontal one).
    #[arg(long)]
    pub dz_m: Option<f64>,
    /// Points to krige at instead of a grid: CSV with the --x, --y, --z columns.
    #[arg(long)]
    pub points: Option<PathBuf>,
    /// Output: .nc (CF NetCDF, grid), .vti (VTK image data for ParaView, grid) or .csv.
    #[arg(long)]
    pub out: PathBuf,
    /// Skip the kriging variance.
    #[arg(long)]
    pub no_variance: bool,
    /// The nugget is measurement error (smoothed at the samples).
    #[arg(long)]
    pub nugget_error: bool,
    /// Units of the values.
    #[arg(long, default_value = "unknown")]
    pub units: String,
}

fn numbers(flag: &str, s: &str, n: usize, what: &str) -> Result<Vec<f64>> {
    let v: Vec<f64> = s
        .split(',')
        .map(|p| {
            p.trim()
                .parse::<f64>()
                .map_err(|_| anyhow::anyhow!("{flag}: {p:?} is not a number (in {s:?})"))
        })
        .collect::<Result<_>>()?;
    if v.len() != n || v.iter().any(|x| !x.is_finite()) {
        bail!("{flag} must be {what} ({n} finite numbers), got {s:?}");
    }
    Ok(v)
}

/// Cells along one axis: (hi − lo) / step, a whole number (to 1e-9).
fn cells(axis: &str, lo: f64, hi: f64, step: f64) -> Result<usize> {
    if !(step.is_finite() && step > 0.0) {
        bail!("the {axis} cell size {step} must be a finite number > 0");
    }
    if hi <= lo {
        bail!("--extent: the {axis} maximum {hi} is not above the minimum {lo}");
    }
    let n = (hi - lo) / step;
    if (n - n.round()).abs() > 1e-9 * n.max(1.0) || n.round() < 1.0 {
        bail!(
            "--extent: the {axis} span {} is not a whole number of {step} m cells",
            hi - lo
        );
    }
    if n > 1e7 {
        bail!("--extent: {n:.0} cells along {axis} is too many");
    }
    Ok(n.round() as usize)
}

fn target(a: &Krige3dArgs) -> Result<Target3> {
    if let Some(p) = &a.points {
        let (xs, ys, zs) = read_points3(p, [&a.x, &a.y, &a.z])?;
        return Ok(Target3::Points { xs, ys, zs });
    }
    let (Some(e), Some(h)) = (&a.extent, a.cell_size_m) else {
        bail!("give the grid (--extent XMIN,YMIN,ZMIN,XMAX,YMAX,ZMAX --cell-size-m D) or --points");
    };
    let v = numbers("--extent", e, 6, "XMIN,YMIN,ZMIN,XMAX,YMAX,ZMAX")?;
    let dz = a.dz_m.unwrap_or(h);
    let (nx, ny, nz) = (
        cells("x", v[0], v[3], h)?,
        cells("y", v[1], v[4], h)?,
        cells("z", v[2], v[5], dz)?,
    );
    let nodes = nx as u128 * ny as u128 * nz as u128;
    geofield_core::check_memory(|| format!("--extent: {nx} x {ny} x {nz} nodes"), nodes * 16)?;
    Ok(Target3::Grid(Axes3 {
        x: Axes3::centres(v[0], h, nx),
        y: Axes3::centres(v[1], h, ny),
        z: Axes3::centres(v[2], dz, nz),
    }))
}

fn variogram(a: &Krige3dArgs, s: &Samples3, anis: &Anisotropy3, kind: Kind) -> Result<Variogram> {
    if let Some(m) = &a.model {
        let models = Model::parse_nested(m).with_context(|| format!("--model {m}"))?;
        if a.sill.is_empty() {
            bail!("--model {m} needs --sill (one partial sill per structure)");
        }
        if a.range.is_empty() && models.iter().any(|m| m.is_bounded()) {
            bail!("--model {m} needs --range (the practical range in metres, one per structure)");
        }
        return Variogram::nested(&models, &a.sill, &a.range, a.nugget)
            .with_context(|| format!("--model {m} --sill --range --nugget"));
    }
    let Some(m) = &a.fit else {
        bail!("give a variogram (--model M --sill C --range A [--nugget N]) or --fit M");
    };
    let models = Model::parse_nested(m).with_context(|| format!("--fit {m}"))?;
    let fitted_on = if matches!(kind, Kind::Universal { .. }) {
        println!(
            "fitting the variogram of the residuals from a least-squares linear drift (1, x, y, z)"
        );
        drift_residuals3(s).context("--fit")?
    } else {
        s.clone()
    };
    let bins = empirical3(&fitted_on, anis, a.lags.unwrap_or(15), a.max_lag).context("--fit")?;
    let fit = fit_models(&models, &bins, true).context("--fit")?;
    println!(
        "fitted {}: {} (weighted RSS {:.4e})",
        a.value, fit.variogram, fit.wrss
    );
    Ok(fit.variogram)
}

#[derive(serde::Serialize)]
struct Summary {
    command: &'static str,
    version: &'static str,
    samples: String,
    sample_count: usize,
    locations: usize,
    skipped_rows: usize,
    nodes: usize,
    missing: usize,
    variogram: String,
    kind: &'static str,
    evaluated: String,
    backend: String,
    seconds_kriging: f64,
    seconds_total: f64,
    outputs: Vec<String>,
}

pub fn run(a: &Krige3dArgs, ctx: &Ctx) -> Result<()> {
    let start = Instant::now();
    ctx.refuse_unused(&[Global::Compress])?;
    let crs = ctx.crs_epsg()?;
    let ext = a
        .out
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let is_grid = a.points.is_none();
    match (ext.as_deref(), is_grid) {
        (Some("nc" | "vti" | "csv"), true) | (Some("csv"), false) => {}
        (Some("nc" | "vti"), false) => bail!(
            "--out {}: points are written as CSV (.csv); .nc and .vti are for a grid",
            a.out.display()
        ),
        _ => bail!(
            "--out {}: expected .nc (NetCDF), .vti (VTK image data) or .csv",
            a.out.display()
        ),
    }
    let mut outs = Outputs::new();
    outs.input("--samples", &a.samples);
    if let Some(p) = &a.points {
        outs.input("--points", p);
    }
    outs.plan("--out", &a.out, OutKind::File)?;
    outs.plan_opt("--json", ctx.json(), OutKind::File)?;
    let kind = match a.kind {
        KindArg::Ordinary => Kind::Ordinary,
        KindArg::Simple => Kind::Simple {
            mean: a
                .mean
                .context("--kind simple needs --mean (the known mean)")?,
        },
        KindArg::Universal => Kind::Universal {
            drift: Drift::Linear,
        },
    };
    if a.mean.is_some() && !matches!(kind, Kind::Simple { .. }) {
        bail!("--mean is the known mean of --kind simple");
    }
    let anisotropy = match &a.anisotropy {
        None => Anisotropy3::isotropic(),
        Some(s) => {
            let v = numbers("--anisotropy", s, 5, "AZIMUTH,DIP,RAKE,RATIO1,RATIO2")?;
            Anisotropy3::gstat(v[0], v[1], v[2], v[3], v[4]).context("--anisotropy")?
        }
    };
    let target = target(a)?;
    let (samples, skipped) = read_samples3(&a.samples, [&a.x, &a.y, &a.z, &a.value])?;
    if skipped > 0 && !ctx.quiet() {
        eprintln!(
            "note: {skipped} row(s) of {} without a {} value skipped",
            a.samples.display(),
            a.value
        );
    }
    let vg = variogram(a, &samples, &anisotropy, kind)?;
    let params = Krige3Params {
        variogram: vg,
        kind,
        anisotropy,
        neighbors: a.neighbors,
        radius: a.radius,
        nugget: if a.nugget_error {
            NuggetMode::MeasurementError
        } else {
            NuggetMode::Exact
        },
        variance: !a.no_variance,
        target,
    };
    let sel = ctx.open_backend()?;
    let k = krige3d(&sel.backend, &samples, &params).map_err(|e| match e {
        GeofieldError::KrigingTooLarge { .. } => {
            anyhow::anyhow!("{e}; on the command line: --neighbors 32 [--radius R]")
        }
        e => {
            anyhow::Error::new(e).context(format!("kriging the samples of {}", a.samples.display()))
        }
    })?;
    let nodes = k.values.len();
    let finite: Vec<f64> = k.values.iter().copied().filter(|v| v.is_finite()).collect();
    let (lo, hi) = finite
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &v| {
            (l.min(v), h.max(v))
        });
    println!(
        "{} samples ({} locations) from {}; {} nodes; {} kriging, {}; {}: {:.3} s",
        samples.len(),
        k.locations,
        a.samples.display(),
        nodes,
        kind.name(),
        params.variogram,
        k.evaluated,
        k.seconds
    );
    println!("  {}: {lo:.6} .. {hi:.6}", a.value);
    if k.missing > 0 {
        eprintln!(
            "warning: {} of {nodes} nodes have fewer samples than the kriging needs within \
             --radius: written empty (NaN)",
            k.missing
        );
    }
    let provenance = vec![
        (
            "history".to_string(),
            std::env::args().collect::<Vec<_>>().join(" "),
        ),
        ("variogram".to_string(), params.variogram.to_string()),
        ("kriging".to_string(), kind.name().to_string()),
    ];
    let meta = VolumeMeta {
        name: &a.value,
        units: &a.units,
        crs_epsg: crs,
        provenance: &provenance,
    };
    let mut written = vec![outs.write_one(&a.out, |p| {
        match (&params.target, ext.as_deref()) {
            (Target3::Grid(ax), Some("nc")) => write_volume_nc(p, ax, &k, &meta)?,
            (Target3::Grid(ax), Some("vti")) => write_volume_vti(p, ax, &k, &meta)?,
            (t, _) => {
                let n = t.len();
                let (mut xs, mut ys, mut zs) = (vec![], vec![], vec![]);
                for i in 0..n {
                    let q = t.node(i);
                    xs.push(q[0]);
                    ys.push(q[1]);
                    zs.push(q[2]);
                }
                write_points3_csv(p, (&xs, &ys, &zs), &k, &a.value)?
            }
        }
        Ok(())
    })?];
    if let Some(p) = ctx.json() {
        let s = Summary {
            command: "krige3d",
            version: env!("CARGO_PKG_VERSION"),
            samples: a.samples.display().to_string(),
            sample_count: samples.len(),
            locations: k.locations,
            skipped_rows: skipped,
            nodes,
            missing: k.missing,
            variogram: params.variogram.to_string(),
            kind: kind.name(),
            evaluated: k.evaluated.clone(),
            backend: sel.backend.label(),
            seconds_kriging: k.seconds,
            seconds_total: start.elapsed().as_secs_f64(),
            outputs: written.iter().map(|p| p.display().to_string()).collect(),
        };
        written.push(outs.write_json(p, &s)?);
    }
    outs.commit()?;
    println!("wrote {}", crate::output::joined(&written));
    Ok(())
}
