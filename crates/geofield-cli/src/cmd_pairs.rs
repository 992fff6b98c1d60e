//! `geofield pairs`: Ripley's K and Besag's L of a point pattern (a stem map) in its plot, with
//! spatstat's edge corrections; CSV and an L(r) chart.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use geofield::neighbors::envelope::{Summary as Fun, csr_envelope};
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
    /// A pointwise envelope under complete spatial randomness (spatstat's `envelope`): this many
    /// Poisson patterns of the same intensity in the window; CSV (r, obs, theo, lo, hi, mean).
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
            Some(
                csr_envelope(
                    &be, &xy, &window, &radii, correction, summary, nsim, a.nrank, a.seed,
                )
                .with_context(|| format!("the CSR envelope of {}", a.points.display()))?,
            )
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
    if let (Some(p), Some(e)) = (&a.envelope, &env) {
        let out: Vec<usize> = (0..e.r.len())
            .filter(|&i| e.obs[i] < e.lo[i] || e.obs[i] > e.hi[i])
            .collect();
        println!(
            "CSR envelope of {} ({}, {} simulations, rank {}: pointwise level {:.3}): the \
             observed curve leaves it at {} of {} radii{}",
            e.summary.name(),
            e.correction.name(),
            e.nsim,
            e.nrank,
            e.alpha(),
            out.len(),
            e.r.len(),
            out.first()
                .map_or(String::new(), |&i| format!(" (first at r = {})", e.r[i]))
        );
        written.push(outs.write_one(p, |s| Ok(write_envelope_csv(s, e)?))?);
    }
    if let Some(p) = &a.png {
        let title = format!(
            "L(r) of {}",
            a.points
                .file_name()
                .map_or_else(String::new, |f| f.to_string_lossy().into_owned())
        );
        written.push(outs.write_one(p, |s| Ok(write_l_png(s, &k, &title, env.as_ref())?))?);
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
            outputs: written.iter().map(|p| p.display().to_string()).collect(),
        };
        written.push(outs.write_json(p, &summary)?);
    }
    outs.commit()?;
    println!("wrote {}", crate::output::joined(&written));
    Ok(())
}
