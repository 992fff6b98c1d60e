//! `geofield pairs`: Ripley's K and Besag's L of a point pattern (a stem map) in its plot, with
//! spatstat's edge corrections; CSV and an L(r) chart.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use geofield::neighbors::envelope::{Summary as Fun, simulate_curves};
use geofield::neighbors::global::{Reference, Statistic};
use geofield::neighbors::io::{
    Points as Coords, read_points, write_envelope_csv, write_g_csv, write_k_csv, write_l_png,
};
use geofield::neighbors::pcf::{self, Divisor};
use geofield::neighbors::ripley::{self, Correction, Window};

use crate::ctx::{Ctx, Global};
use crate::outputs::{Kind, Outputs};

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CorrectionArg {
    /// No correction (spatstat `un`): biased low where circles leave the plot.
    None,
    /// Reduced sample (spatstat `border`): only points at least r inside are centres.
    Border,
    /// Ohser's translation correction (spatstat `trans`).
    Translate,
    /// Ripley's isotropic correction (spatstat `iso`).
    Isotropic,
    /// All four.
    All,
}

#[derive(Args)]
pub struct PairsArgs {
    /// Points: CSV with x,y columns (a stem map: other columns are ignored, and so is z) or
    /// .npy of shape (n, 2) or (n, 3).
    #[arg(long)]
    pub points: PathBuf,
    /// The plot (observation window) XMIN,YMIN,XMAX,YMAX in the points' units. Default: the
    /// points' bounding box, which is smaller than the plot and biases K upwards: give the plot.
    #[arg(long)]
    pub window: Option<String>,
    /// Radii, comma-separated, non-decreasing, >= 0. Default: spatstat's, 513 from 0 to
    /// --r-max.
    #[arg(long, value_delimiter = ',', conflicts_with = "r_max")]
    pub radii: Option<Vec<f64>>,
    /// The largest of the default radii. Default: spatstat's rule, min(shorter side / 4,
    /// sqrt(1000 / (pi * intensity))).
    #[arg(long)]
    pub r_max: Option<f64>,
    /// Edge corrections, comma-separated.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "border,translate,isotropic"
    )]
    pub correction: Vec<CorrectionArg>,
    /// K(r) and L(r) per correction, CSV (r, theo, un/border/trans/iso, L_...).
    #[arg(long)]
    pub out: PathBuf,
    /// Chart of L(r) against r with the random pattern's L = r, PNG.
    #[arg(long)]
    pub png: Option<PathBuf>,
    /// Also the pair-correlation function g(r) (spatstat's `pcf`), CSV (r, theo, un/trans/iso),
    /// for the corrections asked for but border (translate and isotropic when only border is).
    #[arg(long)]
    pub pcf: Option<PathBuf>,
    /// g's Epanechnikov kernel standard deviation (spatstat's `bw`; half-width sqrt(5) bw).
    /// Default: spatstat's, half-width 0.15 / sqrt(intensity).
    #[arg(long, requires = "pcf")]
    pub bw: Option<f64>,
    /// g's divisor: r (spatstat's default) or d (each pair by its distance).
    #[arg(long, value_enum, default_value = "r", requires = "pcf")]
    pub divisor: DivisorArg,
    /// An envelope under complete spatial randomness (spatstat's `envelope`): --nsim Poisson
    /// patterns of the same intensity in the window; CSV (r, obs, theo, lo, hi, mean, and the
    /// band's centre for --envelope-global). Pointwise unless --envelope-global.
    #[arg(long, value_name = "PATH", requires = "nsim")]
    pub envelope: Option<PathBuf>,
    /// Simulations of --envelope (spatstat's default 99: level 2 nrank / (nsim + 1) = 0.02).
    #[arg(long, requires = "envelope")]
    pub nsim: Option<usize>,
    /// The envelope's rank: the nrank-th smallest and largest simulated values.
    #[arg(long, default_value_t = 1, requires = "envelope")]
    pub nrank: usize,
    /// The envelope's function: L (drawn on --png), K or g.
    #[arg(long, value_enum, default_value = "l", requires = "envelope")]
    pub envelope_of: EnvelopeOf,
    /// The envelope's correction (default: the first of --correction).
    #[arg(long, value_enum, requires = "envelope")]
    pub envelope_correction: Option<CorrectionArg>,
    /// Seed of the simulations.
    #[arg(long, default_value_t = 0, requires = "envelope")]
    pub seed: u64,
    /// A global envelope (spatstat's `global = TRUE`): the band centre +- the nrank-th largest
    /// of the simulations' maximum absolute deviations from the centre over
    /// --envelope-interval, constant width; a curve leaving it anywhere there rejects
    /// randomness at level nrank / (nsim + 1).
    #[arg(long, requires = "envelope")]
    pub envelope_global: bool,
    /// The interval RMIN,RMAX of r of the global envelope and the tests (spatstat's `ginterval`
    /// and `rinterval`), within the radii. Default: every radius.
    #[arg(long, value_name = "RMIN,RMAX", requires = "envelope")]
    pub envelope_interval: Option<String>,
    /// The deviations' reference (spatstat's `use.theory`): theory (its default for CSR: pi
    /// r^2, r, 1) or mean (a global envelope's centre from --nsim further simulations; the
    /// tests' leave-one-out mean of the simulated and observed curves).
    #[arg(long, value_enum, default_value = "theory", requires = "envelope")]
    pub envelope_reference: ReferenceArg,
    /// Monte Carlo tests of randomness on the same simulations, comma-separated: mad (maximum
    /// absolute deviation, spatstat's `mad.test`) and dclf (integrated squared deviation,
    /// `dclf.test`); printed with their p-values and written to --json.
    #[arg(long, value_enum, value_delimiter = ',', requires = "envelope")]
    pub envelope_test: Vec<TestArg>,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ReferenceArg {
    Theory,
    Mean,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TestArg {
    Mad,
    Dclf,
}

#[derive(serde::Serialize)]
struct EnvelopeJson {
    function: &'static str,
    correction: &'static str,
    kind: &'static str,
    nsim: usize,
    nrank: usize,
    alpha: f64,
    seed: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    interval: Option<(f64, f64)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reference: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    width: Option<f64>,
    /// Radii where the observed curve leaves the band.
    outside: usize,
}

#[derive(serde::Serialize)]
struct TestJson {
    test: &'static str,
    statistic: f64,
    p_value: f64,
    rank: usize,
    ties: usize,
    nsim: usize,
    reference: &'static str,
    interval: (f64, f64),
}

fn parse_interval(s: &str) -> Result<(f64, f64)> {
    let v: Vec<f64> = s
        .split(',')
        .map(|p| {
            p.trim()
                .parse::<f64>()
                .with_context(|| format!("--envelope-interval: {p:?} is not a number"))
        })
        .collect::<Result<_>>()?;
    match v[..] {
        [a, b] => Ok((a, b)),
        _ => bail!("--envelope-interval must be RMIN,RMAX (two numbers), got {s:?}"),
    }
}

#[derive(Clone, Copy, ValueEnum)]
pub enum EnvelopeOf {
    K,
    L,
    G,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum DivisorArg {
    R,
    D,
}

#[derive(serde::Serialize)]
struct Summary {
    command: &'static str,
    version: &'static str,
    points: String,
    point_count: usize,
    window: [f64; 4],
    window_from: &'static str,
    intensity: f64,
    radii: usize,
    r_max: f64,
    corrections: Vec<&'static str>,
    backend: String,
    device: String,
    seconds: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    envelope: Option<EnvelopeJson>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tests: Vec<TestJson>,
    outputs: Vec<String>,
}

fn parse_window(s: &str) -> Result<Window> {
    let v: Vec<f64> = s
        .split(',')
        .map(|p| {
            p.trim()
                .parse::<f64>()
                .with_context(|| format!("--window: {p:?} is not a number (in {s:?})"))
        })
        .collect::<Result<_>>()?;
    if v.len() != 4 {
        bail!("--window must be XMIN,YMIN,XMAX,YMAX (four numbers), got {s:?}");
    }
    let w = Window {
        x0: v[0],
        y0: v[1],
        x1: v[2],
        y1: v[3],
    };
    w.validate().context("--window")?;
    Ok(w)
}

pub fn run(a: &PairsArgs, ctx: &Ctx) -> Result<()> {
    ctx.refuse_unused(&[Global::Crs, Global::Compress])?;
    let mut outs = Outputs::new();
    outs.input("--points", &a.points);
    outs.plan("--out", &a.out, Kind::File)?;
    outs.plan_opt("--png", a.png.as_deref(), Kind::File)?;
    outs.plan_opt("--pcf", a.pcf.as_deref(), Kind::File)?;
    outs.plan_opt("--envelope", a.envelope.as_deref(), Kind::File)?;
    outs.plan_opt("--json", ctx.json(), Kind::File)?;
    let mut window = a.window.as_deref().map(parse_window).transpose()?;
    let interval = a
        .envelope_interval
        .as_deref()
        .map(parse_interval)
        .transpose()?;
    if let Some(r) = a.r_max
        && !(r.is_finite() && r > 0.0)
    {
        bail!("--r-max = {r}: expected a finite number > 0");
    }
    let pts = read_points(&a.points)?;
    // K is planar: keep x and y.
    let xy: Vec<f64> = match &pts {
        Coords::F64(v, d) => v.chunks_exact(*d).flat_map(|c| [c[0], c[1]]).collect(),
        Coords::F32(v, d) => v
            .chunks_exact(*d)
            .flat_map(|c| [f64::from(c[0]), f64::from(c[1])])
            .collect(),
    };
    let n = xy.len() / 2;
    if n < 2 {
        bail!(
            "{}: K needs at least 2 points, found {n}",
            a.points.display()
        );
    }
    let window_from = if window.is_some() {
        "--window"
    } else {
        "bounding box"
    };
    if window.is_none() {
        window = Window::around(&xy);
    }
    let Some(window) = window else {
        bail!(
            "{}: the points span no area (all on one line); give the plot with --window",
            a.points.display()
        );
    };
    let radii = match (&a.radii, a.r_max) {
        (Some(r), _) => r.clone(),
        (None, Some(rmax)) => (0..ripley::DEFAULT_RADII)
            .map(|i| rmax * i as f64 / (ripley::DEFAULT_RADII - 1) as f64)
            .collect(),
        (None, None) => ripley::default_radii(n, &window),
    };
    let mut corrections: Vec<Correction> = Vec::new();
    for c in &a.correction {
        let add: &[Correction] = match c {
            CorrectionArg::None => &[Correction::None],
            CorrectionArg::Border => &[Correction::Border],
            CorrectionArg::Translate => &[Correction::Translate],
            CorrectionArg::Isotropic => &[Correction::Isotropic],
            CorrectionArg::All => &[
                Correction::None,
                Correction::Border,
                Correction::Translate,
                Correction::Isotropic,
            ],
        };
        for c in add {
            if !corrections.contains(c) {
                corrections.push(*c);
            }
        }
    }
    if window_from == "bounding box" && !ctx.quiet() {
        eprintln!(
            "note: no --window: the plot is taken as the points' bounding box [{}, {}] x [{}, {}]",
            window.x0, window.x1, window.y0, window.y1
        );
    }
    let be = ctx.open_backend()?.backend;
    let start = Instant::now();
    let k = ripley::ripley_k(&be, &xy, &window, &radii, &corrections)
        .with_context(|| format!("Ripley's K of {}", a.points.display()))?;
    let g = match &a.pcf {
        Some(_) => {
            let mut gc: Vec<Correction> = corrections
                .iter()
                .copied()
                .filter(|c| *c != Correction::Border)
                .collect();
            if gc.is_empty() {
                gc = vec![Correction::Translate, Correction::Isotropic];
            }
            let div = match a.divisor {
                DivisorArg::R => Divisor::R,
                DivisorArg::D => Divisor::D,
            };
            Some(
                pcf::pair_correlation(&xy, &window, &radii, &gc, a.bw, div)
                    .with_context(|| format!("g(r) of {}", a.points.display()))?,
            )
        }
        None => None,
    };
    let env = match (&a.envelope, a.nsim) {
        (Some(_), Some(nsim)) => {
            let correction = match a.envelope_correction {
                None => corrections[0],
                Some(CorrectionArg::None) => Correction::None,
                Some(CorrectionArg::Border) => Correction::Border,
                Some(CorrectionArg::Translate) => Correction::Translate,
                Some(CorrectionArg::Isotropic | CorrectionArg::All) => Correction::Isotropic,
            };
            let summary = match a.envelope_of {
                EnvelopeOf::K => Fun::K,
                EnvelopeOf::L => Fun::L,
                EnvelopeOf::G => Fun::G {
                    bw: a.bw,
                    divisor: match a.divisor {
                        DivisorArg::R => Divisor::R,
                        DivisorArg::D => Divisor::D,
                    },
                },
            };
            let reference = match a.envelope_reference {
                ReferenceArg::Theory => Reference::Theory,
                ReferenceArg::Mean => Reference::Mean,
            };
            let count = if a.envelope_global {
                reference.simulations(nsim)
            } else {
                nsim
            };
            let what = || format!("the CSR envelope of {}", a.points.display());
            let curves = simulate_curves(
                &be, &xy, &window, &radii, correction, summary, count, a.seed,
            )
            .with_context(what)?;
            let e = if a.envelope_global {
                curves.global(nsim, a.nrank, interval, reference)
            } else {
                curves.pointwise(nsim, a.nrank)
            }
            .with_context(what)?;
            let mut tests = Vec::new();
            for t in &a.envelope_test {
                let statistic = match t {
                    TestArg::Mad => Statistic::Mad,
                    TestArg::Dclf => Statistic::Dclf,
                };
                if tests
                    .iter()
                    .any(|x: &geofield::neighbors::global::DeviationTest| x.statistic == statistic)
                {
                    continue;
                }
                tests.push(
                    curves
                        .deviation_test(statistic, nsim, interval, reference)
                        .with_context(|| {
                            format!("the {} test of {}", statistic.name(), a.points.display())
                        })?,
                );
            }
            Some((e, tests))
        }
        _ => None,
    };
    let secs = start.elapsed().as_secs_f64();
    let r_max = radii.last().copied().unwrap_or(0.0);
    println!(
        "K(r) of {n} points in [{}, {}] x [{}, {}] at {} radii up to {r_max} on {}: {:.3} s",
        window.x0,
        window.x1,
        window.y0,
        window.y1,
        radii.len(),
        be.label(),
        secs
    );
    for (c, v) in k.columns() {
        let last = v.iter().rposition(|x| x.is_finite());
        if let Some(i) = last {
            let l = ripley::l_of(&v[i..=i])[0];
            println!(
                "  {:>6}: L({}) = {:.4} (random: {:.4})",
                c.name(),
                k.r[i],
                l,
                k.r[i]
            );
        }
    }
    if let Some(g) = &g {
        println!(
            "g(r) with an Epanechnikov kernel of half-width {:.4} (bw {:.4}):",
            g.half_width, g.bw
        );
        for (c, v) in g.columns() {
            if let Some((i, m)) = v
                .iter()
                .enumerate()
                .filter(|(_, x)| x.is_finite())
                .max_by(|a, b| a.1.total_cmp(b.1))
            {
                println!("  {:>6}: largest g = {m:.3} at r = {}", c.name(), g.r[i]);
            }
        }
    }
    let mut written = vec![outs.write_one(&a.out, |s| Ok(write_k_csv(s, &k)?))?];
    if let (Some(p), Some(g)) = (&a.pcf, &g) {
        written.push(outs.write_one(p, |s| Ok(write_g_csv(s, g)?))?);
    }
    let mut env_json = None;
    let mut tests_json = Vec::new();
    if let (Some(p), Some((e, tests))) = (&a.envelope, &env) {
        let out: Vec<usize> = (0..e.r.len())
            .filter(|&i| e.obs[i] < e.lo[i] || e.obs[i] > e.hi[i])
            .collect();
        let kind = match &e.global {
            Some(g) => format!(
                "global over r in [{}, {}] about the {}, width {:.4}, level {:.3}",
                g.interval.0,
                g.interval.1,
                g.reference.name(),
                g.width,
                e.alpha()
            ),
            None => format!("pointwise level {:.3}", e.alpha()),
        };
        println!(
            "CSR envelope of {} ({}, {} simulations, rank {}: {kind}): the observed curve \
             leaves it at {} of {} radii{}",
            e.summary.name(),
            e.correction.name(),
            e.nsim,
            e.nrank,
            out.len(),
            e.r.len(),
            out.first()
                .map_or(String::new(), |&i| format!(" (first at r = {})", e.r[i]))
        );
        for t in tests {
            println!(
                "  {} test of {} (reference {}, r in [{}, {}]): statistic {:.6e}, p = {:.4} \
                 (rank {} of {}{})",
                t.statistic.name().to_uppercase(),
                e.summary.name(),
                t.reference.name(),
                t.interval.0,
                t.interval.1,
                t.observed,
                t.p_value,
                t.rank,
                t.nsim + 1,
                if t.ties > 0 {
                    format!(", {} ties counted against the pattern", t.ties)
                } else {
                    String::new()
                }
            );
            tests_json.push(TestJson {
                test: t.statistic.name(),
                statistic: t.observed,
                p_value: t.p_value,
                rank: t.rank,
                ties: t.ties,
                nsim: t.nsim,
                reference: t.reference.name(),
                interval: t.interval,
            });
        }
        env_json = Some(EnvelopeJson {
            function: e.summary.name(),
            correction: e.correction.name(),
            kind: if e.global.is_some() {
                "global"
            } else {
                "pointwise"
            },
            nsim: e.nsim,
            nrank: e.nrank,
            alpha: e.alpha(),
            seed: a.seed,
            interval: e.global.as_ref().map(|g| g.interval),
            reference: e.global.as_ref().map(|g| g.reference.name()),
            width: e.global.as_ref().map(|g| g.width),
            outside: out.len(),
        });
        written.push(outs.write_one(p, |s| Ok(write_envelope_csv(s, e)?))?);
    }
    if let Some(p) = &a.png {
        let title = format!(
            "L(r) of {}",
            a.points
                .file_name()
                .map_or_else(String::new, |f| f.to_string_lossy().into_owned())
        );
        written.push(outs.write_one(p, |s| {
            Ok(write_l_png(s, &k, &title, env.as_ref().map(|(e, _)| e))?)
        })?);
    }
    if let Some(p) = ctx.json() {
        let summary = Summary {
            command: "pairs",
            version: env!("CARGO_PKG_VERSION"),
            points: a.points.display().to_string(),
            point_count: n,
            window: [window.x0, window.y0, window.x1, window.y1],
            window_from,
            intensity: n as f64 / window.area(),
            radii: radii.len(),
            r_max,
            corrections: corrections.iter().map(|c| c.name()).collect(),
            backend: be.label(),
            device: be.device_name(),
            seconds: secs,
            envelope: env_json,
            tests: tests_json,
            outputs: written.iter().map(|p| p.display().to_string()).collect(),
        };
        written.push(outs.write_json(p, &summary)?);
    }
    outs.commit()?;
    println!("wrote {}", crate::output::joined(&written));
    Ok(())
}
