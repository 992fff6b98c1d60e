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
    }
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
