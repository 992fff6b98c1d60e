//! `geofield synth ...`: synthetic inputs.

use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::{Args, Subcommand, ValueEnum};
use geofield::dispersal;
use geofield::synth::{self, DbhModel, Pattern};

use crate::ctx::{Ctx, Global};
use crate::outputs::{Kind, Outputs};
use crate::{inputs, synth_terrain};

#[derive(Subcommand)]
pub enum SynthCommand {
    /// A stand of the 4-species SBS-like set (subalpine fir, trembling aspen, lodgepole pine,
    /// hybrid spruce) with realistic DBH, and its species file.
    Forest(ForestArgs),
    /// Wells through a layered subsurface: one elevation column per stratum surface (top to
    /// bottom, s01, s02, ...), empty where a well stops short; for `geofield krige --strata`.
    Wells(WellsArgs),
    /// A DEM of a Gaussian hill, a ridge, a valley or flat ground, and weather stations, for
    /// `geofield wind`.
    Terrain(synth_terrain::TerrainArgs),
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

pub fn run(c: &SynthCommand, ctx: &Ctx) -> Result<()> {
    ctx.refuse_unused(&[Global::Backend, Global::Json])?;
    match c {
        SynthCommand::Forest(a) => {
            ctx.refuse_unused(&[Global::Crs, Global::Compress])?;
            forest(a)
        }
        SynthCommand::Wells(a) => {
            ctx.refuse_unused(&[Global::Crs, Global::Compress])?;
            wells(a)
        }
        SynthCommand::Terrain(a) => synth_terrain::run(a, ctx),
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
    let mut outs = Outputs::new();
    outs.plan("--out", &a.out, Kind::File)?;
    let strata = synth::Strata::new(&extent, a.surfaces, a.seed);
    let (xs, ys, z) = strata.wells(a.wells, a.seed, a.partial);
    outs.write_one(&a.out, |p| Ok(synth::io::write_wells(p, &xs, &ys, &z)?))?;
    outs.commit()?;
    println!(
        "wrote {} wells through {} surfaces to {}",
        a.wells,
        a.surfaces,
        a.out.display()
    );
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
    let mut outs = Outputs::new();
    outs.plan("--out", &a.out, Kind::File)?;
    outs.plan_opt("--species-out", a.species_out.as_deref(), Kind::File)?;
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
    outs.write_one(&a.out, |p| {
        Ok(dispersal::io::write_stand(p, &stand, &species)?)
    })?;
    if let Some(p) = &a.species_out {
        outs.write_one(p, |s| Ok(dispersal::io::write_species(s, &species)?))?;
    }
    outs.commit()?;
    let species_note = match &a.species_out {
        Some(p) => format!(" and species to {}", p.display()),
        None => String::new(),
    };
    println!(
        "wrote {} stems to {}{species_note}",
        stand.len(),
        a.out.display()
    );
    Ok(())
}
