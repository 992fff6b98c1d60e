//! `geofield synth ...`: synthetic inputs.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use clap::{Args, Subcommand, ValueEnum};
use geofield::dispersal::Stand;
use geofield::synth::{self, DbhModel, Pattern, StationSpec, TerrainKind, TerrainSpec};
use geofield::wind::{Stability, Station};
use geofield_core::{Raster, RasterData};

use crate::ctx::{Ctx, Global};
use crate::outputs::{Kind, Outputs};
use crate::{inputs, output};

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
    Terrain(TerrainArgs),
}

#[derive(Clone, Copy, ValueEnum)]
pub enum TerrainKindArg {
    /// b + H exp(-r^2 / 2 sigma^2) around the centre.
    GaussianHill,
    /// Witch of Agnesi b + H L^2 / (dx^2 + L^2), crest running north-south.
    Ridge,
    /// b + H (1 - exp(-dx^2 / 2 sigma^2)), axis running north-south.
    Valley,
    Flat,
}

#[derive(Args)]
pub struct TerrainArgs {
    #[arg(long, value_enum)]
    pub kind: TerrainKindArg,
    /// DEM to write: .tif (GeoTIFF) or .asc (ESRI ASCII grid), elevations in metres.
    #[arg(long)]
    pub out: PathBuf,
    /// Stations CSV to write (id,x_m,y_m,height_agl_m,speed_m_per_s,direction_deg,stability).
    #[arg(long)]
    pub stations: Option<PathBuf>,
    #[arg(long, default_value_t = 64)]
    pub cols: usize,
    #[arg(long, default_value_t = 64)]
    pub rows: usize,
    #[arg(long, default_value_t = 30.0)]
    pub cell_size_m: f64,
    /// Height of the hill or ridge, depth of the valley (m).
    #[arg(long, default_value_t = 150.0)]
    pub height_m: f64,
    /// Elevation of the plain (m).
    #[arg(long, default_value_t = 100.0, allow_negative_numbers = true)]
    pub base_m: f64,
    /// sigma (hill, valley) or L (ridge) in metres; default an eighth (ridge: a tenth) of the
    /// domain.
    #[arg(long)]
    pub width_m: Option<f64>,
    /// West edge of the grid (m) [default: 0; with a UTM --crs, the grid is centred on the
    /// zone's central meridian, easting 500000].
    #[arg(long, allow_negative_numbers = true)]
    pub x_min_m: Option<f64>,
    /// South edge of the grid (m) [default: 0; with a UTM --crs, northing 5000000].
    #[arg(long, allow_negative_numbers = true)]
    pub y_min_m: Option<f64>,
    /// Number of stations: the first upwind of the centre with exactly the given wind, the
    /// others at random with +-10 % speed and +-10 degrees direction.
    #[arg(long, default_value_t = 1)]
    pub station_count: usize,
    #[arg(long, default_value_t = 5.0)]
    pub speed_m_per_s: f64,
    /// Where the wind comes from, degrees clockwise from north.
    #[arg(long, default_value_t = 270.0)]
    pub direction_deg: f64,
    /// Anemometer height above the ground (m).
    #[arg(long, default_value_t = 10.0)]
    pub station_height_agl_m: f64,
    /// Stability class (A-F) written for every station; empty when not given.
    #[arg(long)]
    pub stability: Option<String>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
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
            ctx.refuse_unused(&[Global::Crs])?;
            forest(a)
        }
        SynthCommand::Wells(a) => {
            ctx.refuse_unused(&[Global::Crs])?;
            wells(a)
        }
        SynthCommand::Terrain(a) => terrain(a, ctx),
    }
}

/// Whether `epsg` is a UTM zone (WGS 84, ETRS89 or NAD83 variants), whose valid eastings centre
/// on 500000 m.
fn is_utm(epsg: u16) -> bool {
    matches!(epsg, 32601..=32660 | 32701..=32760 | 25828..=25838 | 26901..=26923 | 3154..=3160)
}

fn terrain(a: &TerrainArgs, ctx: &Ctx) -> Result<()> {
    let crs = ctx.crs_epsg()?;
    let width_m = a.cols as f64 * a.cell_size_m;
    let (x_min_m, y_min_m) = match (a.x_min_m, a.y_min_m, crs) {
        (x, y, Some(code)) if is_utm(code) => (
            x.unwrap_or((500_000.0 - 0.5 * width_m).round()),
            y.unwrap_or(5_000_000.0),
        ),
        (None, None, Some(code)) => {
            eprintln!(
                "warning: the DEM's south-west corner is (0, 0) in EPSG:{code}; give --x-min-m \
                 and --y-min-m to place it where that CRS is valid"
            );
            (0.0, 0.0)
        }
        (x, y, _) => (x.unwrap_or(0.0), y.unwrap_or(0.0)),
    };
    let stability: Option<Stability> = match &a.stability {
        Some(s) => Some(s.parse().map_err(anyhow::Error::msg)?),
        None => None,
    };
    if !matches!(
        geofield_io::RasterFormat::from_path(&a.out)?,
        geofield_io::RasterFormat::GeoTiff | geofield_io::RasterFormat::AsciiGrid
    ) {
        bail!(
            "--out {}: write the DEM as .tif or .asc (an .npy has no georeferencing)",
            a.out.display()
        );
    }
    let mut outs = Outputs::new();
    outs.plan("--out", &a.out, Kind::Raster)?;
    outs.plan_opt("--stations", a.stations.as_deref(), Kind::File)?;
    if a.cols.saturating_mul(a.rows) > 400_000_000 {
        bail!("--cols x --rows is more than this tool writes (400 million cells)");
    }
    let spec = TerrainSpec {
        kind: match a.kind {
            TerrainKindArg::GaussianHill => TerrainKind::GaussianHill,
            TerrainKindArg::Ridge => TerrainKind::Ridge,
            TerrainKindArg::Valley => TerrainKind::Valley,
            TerrainKindArg::Flat => TerrainKind::Flat,
        },
        cols: a.cols,
        rows: a.rows,
        cell_size_m: a.cell_size_m,
        x_min_m,
        y_min_m,
        base_m: a.base_m,
        height_m: a.height_m,
        width_m: a.width_m,
    };
    let (grid, z) = synth::terrain(&spec)?;
    let stations = match &a.stations {
        Some(_) => synth::stations(
            &grid,
            &StationSpec {
                count: a.station_count,
                speed_m_per_s: a.speed_m_per_s,
                direction_deg: a.direction_deg,
                height_agl_m: a.station_height_agl_m,
                stability,
                seed: a.seed,
            },
        )?,
        None => vec![],
    };
    let raster = Raster::new(
        grid,
        vec!["elevation".into()],
        RasterData::F32(z.iter().map(|&v| v as f32).collect()),
    )?;
    let kind = a
        .kind
        .to_possible_value()
        .map_or_else(|| "?".to_string(), |v| v.get_name().to_string());
    let description = format!("synthetic terrain ({kind})");
    outs.write(&a.out, |p| {
        output::write_raster(p, &raster, "m", &description, crs)
    })?;
    if let Some(p) = &a.stations {
        outs.write_one(p, |s| write_stations_csv(s, &stations))?;
    }
    outs.commit()?;
    println!(
        "wrote a {} x {} DEM of {} m cells ({kind}, {:.1}..{:.1} m) to {}{}",
        grid.cols,
        grid.rows,
        grid.cell_size_m,
        z.iter().copied().fold(f64::INFINITY, f64::min),
        z.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        a.out.display(),
        a.stations
            .as_ref()
            .map(|p| {
                let n = stations.len();
                let plural = if n == 1 { "" } else { "s" };
                format!(" and {n} station{plural} to {}", p.display())
            })
            .unwrap_or_default()
    );
    Ok(())
}

/// Write stations as CSV (the columns `geofield wind --stations` reads), atomically.
pub fn write_stations_csv(path: &Path, stations: &[Station]) -> Result<()> {
    geofield_io::write_atomic(path, |w| {
        let mut b = std::io::BufWriter::new(w);
        writeln!(
            b,
            "id,x_m,y_m,height_agl_m,speed_m_per_s,direction_deg,stability"
        )?;
        for s in stations {
            writeln!(
                b,
                "{},{:.3},{:.3},{},{:.4},{:.3},{}",
                s.id,
                s.x_m,
                s.y_m,
                s.height_agl_m,
                s.speed_m_per_s,
                s.direction_deg,
                s.stability
                    .map(|c| c.letter().to_string())
                    .unwrap_or_default()
            )?;
        }
        b.flush()
    })?;
    Ok(())
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
    outs.write_one(&a.out, |p| write_wells_csv(p, &xs, &ys, &z))?;
    outs.commit()?;
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
    let names: Vec<&str> = species.iter().map(|s| s.name.as_str()).collect();
    outs.write_one(&a.out, |p| write_stand_csv(p, &stand, &names))?;
    if let Some(p) = &a.species_out {
        let text = inputs::species_toml(&species);
        outs.write_one(p, |s| {
            Ok(geofield_io::write_atomic(s, |w| {
                w.write_all(text.as_bytes())
            })?)
        })?;
    }
    outs.commit()?;
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
