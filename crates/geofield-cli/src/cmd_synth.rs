//! `geofield synth ...`: synthetic inputs.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use clap::{Args, Subcommand, ValueEnum};
use geofield::dispersal::Stand;
use geofield::synth::{self, DbhModel, Pattern};

use crate::{inputs, output};

#[derive(Subcommand)]
pub enum SynthCommand {
    /// A stand of the 4-species SBS-like set (subalpine fir, trembling aspen, lodgepole pine,
    /// hybrid spruce) with realistic DBH, and its species file.
    Forest(ForestArgs),
    /// Wells through a layered subsurface: one elevation column per stratum surface (top to
    /// bottom, s01, s02, ...), empty where a well stops short; for `geofield krige --strata`.
    Wells(WellsArgs),
}

#[derive(Args)]
pub struct WellsArgs {
    /// Number of wells.
    #[arg(long, default_value_t = 10)]
    pub wells: usize,
    /// Number of stratum surfaces.
    #[arg(long, default_value_t = 11)]
    pub surfaces: usize,
    /// XMIN,YMIN,XMAX,YMAX in metres.
    #[arg(long, allow_hyphen_values = true)]
    pub extent: String,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Share of the wells that stop before the bottom surface.
    #[arg(long, default_value_t = 0.0)]
    pub partial: f64,
    /// CSV to write: id,x,y,s01,s02,...
    #[arg(long)]
    pub out: PathBuf,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum PatternArg {
    Uniform,
    Clustered,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum DbhArg {
    /// 5 cm + Weibull(2, 28 cm): a mixed stand, ~12 % below the 15 cm reproductive minimum.
    Realistic,
    /// Uniform 15-60 cm: every tree reproduces (the benchmark stands).
    Uniform,
}

#[derive(Args)]
pub struct ForestArgs {
    /// Number of stems.
    #[arg(long)]
    pub trees: usize,
    /// XMIN,YMIN,XMAX,YMAX in metres.
    #[arg(long, allow_hyphen_values = true)]
    pub extent: String,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long, value_enum, default_value = "uniform")]
    pub pattern: PatternArg,
    #[arg(long, value_enum, default_value = "realistic")]
    pub dbh: DbhArg,
    /// Stem map CSV to write (x_m,y_m,dbh_cm,species).
    #[arg(long)]
    pub out: PathBuf,
    /// Species file to write (TOML).
    #[arg(long)]
    pub species_out: Option<PathBuf>,
}

pub fn run(c: &SynthCommand) -> Result<()> {
    match c {
        SynthCommand::Forest(a) => forest(a),
        SynthCommand::Wells(a) => wells(a),
    }
}

fn wells(a: &WellsArgs) -> Result<()> {
    let extent = inputs::parse_extent(&a.extent)?;
    if a.wells == 0 || a.wells > 10_000_000 {
        bail!("--wells must be in 1..=10000000, got {}", a.wells);
    }
    if a.surfaces == 0 || a.surfaces > 99 {
        bail!("--surfaces must be in 1..=99, got {}", a.surfaces);
    }
    if !(0.0..=1.0).contains(&a.partial) {
        bail!("--partial must be in [0, 1], got {}", a.partial);
    }
    output::preflight(&a.out, false)?;
    let strata = synth::Strata::new(&extent, a.surfaces, a.seed);
    let (xs, ys, z) = strata.wells(a.wells, a.seed, a.partial);
    write_wells_csv(&a.out, &xs, &ys, &z)?;
    println!(
        "wrote {} wells through {} surfaces to {}",
        a.wells,
        a.surfaces,
        a.out.display()
    );
    Ok(())
}

/// Column names of the synthetic stratum surfaces.
pub fn surface_names(h: usize) -> Vec<String> {
    (1..=h).map(|i| format!("s{i:02}")).collect()
}

/// Write wells as CSV (id,x,y,s01,...; empty where missing), atomically.
pub fn write_wells_csv(path: &Path, xs: &[f64], ys: &[f64], z: &[Vec<f64>]) -> Result<()> {
    geofield_io::write_atomic(path, |w| {
        let mut b = std::io::BufWriter::new(w);
        writeln!(b, "id,x,y,{}", surface_names(z.len()).join(","))?;
        for i in 0..xs.len() {
            write!(b, "w{:03},{:.3},{:.3}", i + 1, xs[i], ys[i])?;
            for zh in z {
                if zh[i].is_nan() {
                    write!(b, ",")?;
                } else {
                    write!(b, ",{:.4}", zh[i])?;
                }
            }
            writeln!(b)?;
        }
        b.flush()
    })?;
    Ok(())
}

fn forest(a: &ForestArgs) -> Result<()> {
    let extent = inputs::parse_extent(&a.extent)?;
    if a.trees > 500_000_000 {
        bail!(
            "--trees {} is more than this tool writes (500 million)",
            a.trees
        );
    }
    output::preflight(&a.out, false)?;
    if let Some(p) = &a.species_out {
        output::preflight(p, false)?;
    }
    let pattern = match a.pattern {
        PatternArg::Uniform => Pattern::Uniform,
        PatternArg::Clustered => Pattern::Clustered,
    };
    let dbh = match a.dbh {
        DbhArg::Realistic => DbhModel::Realistic,
        DbhArg::Uniform => DbhModel::Uniform15to60,
    };
    let species = synth::sbs_species();
    let stand = synth::forest(a.trees, &extent, a.seed, pattern, dbh, &synth::SBS_SHARES);
    let names: Vec<&str> = species.iter().map(|s| s.name.as_str()).collect();
    write_stand_csv(&a.out, &stand, &names)?;
    if let Some(p) = &a.species_out {
        let text = inputs::species_toml(&species);
        geofield_io::write_atomic(p, |w| w.write_all(text.as_bytes()))?;
    }
    println!(
        "wrote {} stems to {}{}",
        stand.len(),
        a.out.display(),
        a.species_out
            .as_ref()
            .map(|p| format!(" and species to {}", p.display()))
            .unwrap_or_default()
    );
    Ok(())
}

/// Write a stand as CSV (x_m,y_m,dbh_cm,species), atomically.
pub fn write_stand_csv(path: &Path, stand: &Stand, names: &[&str]) -> Result<()> {
    geofield_io::write_atomic(path, |w| {
        let mut b = std::io::BufWriter::with_capacity(1 << 20, w);
        writeln!(b, "x_m,y_m,dbh_cm,species")?;
        for i in 0..stand.len() {
            let name = names
                .get(stand.species[i] as usize)
                .copied()
                .unwrap_or("unknown");
            writeln!(
                b,
                "{:.3},{:.3},{:.1},{}",
                stand.x_m[i], stand.y_m[i], stand.dbh_cm[i], name
            )?;
        }
        b.flush()
    })?;
    Ok(())
}
