//! `geofield synth terrain`: a DEM of synthetic terrain and weather stations for `geofield wind`.

use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::{Args, ValueEnum};
use geofield::synth::{self, StationSpec, TerrainKind, TerrainSpec};
use geofield::wind::Stability;

use crate::ctx::Ctx;
use crate::output;
use crate::outputs::{Kind, Outputs};

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

/// Write the DEM (and the stations) of the flags.
pub fn run(a: &TerrainArgs, ctx: &Ctx) -> Result<()> {
    let crs = ctx.crs_epsg()?;
    let compression = ctx.compression()?;
    let width_m = a.cols as f64 * a.cell_size_m;
    let ((x_min_m, y_min_m), unplaced) = synth::terrain_origin(a.x_min_m, a.y_min_m, crs, width_m);
    if let (true, Some(code)) = (unplaced, crs) {
        eprintln!(
            "warning: the DEM's south-west corner is (0, 0) in EPSG:{code}; give --x-min-m \
             and --y-min-m to place it where that CRS is valid"
        );
    }
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
    let kind = match a.kind {
        TerrainKindArg::GaussianHill => TerrainKind::GaussianHill,
        TerrainKindArg::Ridge => TerrainKind::Ridge,
        TerrainKindArg::Valley => TerrainKind::Valley,
        TerrainKindArg::Flat => TerrainKind::Flat,
    };
    let spec = TerrainSpec {
        kind,
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
    let station_spec = StationSpec {
        count: a.station_count,
        speed_m_per_s: a.speed_m_per_s,
        direction_deg: a.direction_deg,
        height_agl_m: a.station_height_agl_m,
        stability,
        seed: a.seed,
    };
    let stations = match &a.stations {
        Some(_) => synth::stations(&grid, &station_spec)?,
        None => vec![],
    };
    let dem = synth::dem_raster(grid, &z)?;
    let provenance = output::provenance(&[]);
    outs.write(&a.out, |p| {
        let w = synth::io::write_dem(p, &dem, kind, crs, &provenance, compression)?;
        output::warn_if_no_crs(p, crs, "declare one with --crs EPSG:CODE");
        Ok(w)
    })?;
    if let Some(p) = &a.stations {
        outs.write_one(p, |s| Ok(synth::io::write_stations(s, &stations)?))?;
    }
    outs.commit()?;
    let (lo, hi) = z
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        });
    let stations_note = match &a.stations {
        Some(p) => {
            let n = stations.len();
            let plural = if n == 1 { "" } else { "s" };
            format!(" and {n} station{plural} to {}", p.display())
        }
        None => String::new(),
    };
    println!(
        "wrote a {} x {} DEM of {} m cells ({}, {lo:.1}..{hi:.1} m) to {}{stations_note}",
        grid.cols,
        grid.rows,
        grid.cell_size_m,
        kind.name(),
        a.out.display(),
    );
    Ok(())
}
