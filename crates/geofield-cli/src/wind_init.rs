//! `geofield wind --init-grid`: the flags of the weather-model initialisation and the reading
//! of its file by [`geofield::wind::io::read_init_grid`].

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use geofield::wind;

/// The flags of a gridded first guess.
#[derive(clap::Args, Debug, Clone)]
pub struct InitGridArgs {
    /// Weather-model initialisation (instead of --stations): a NetCDF-3 file (classic or 64-bit
    /// offset; NetCDF-4 is refused with the nccopy command that converts it) of the wind at one
    /// height above the ground on a grid: longitude/latitude (ERA5, GFS, NAM), the DEM's CRS,
    /// or another CRS (--init-crs or the file's grid mapping). The wind is interpolated
    /// bilinearly to every DEM column, turned from the grid's north to the DEM's, and extended
    /// up each column by the profile, as one station standing in every column. Variables,
    /// time, height and CRS are found from the CF attributes (or --init-u/--init-v,
    /// --init-time, --init-height-m, --init-crs).
    #[arg(long, conflicts_with_all = ["stations", "speed", "direction", "directions"])]
    pub init_grid: Option<PathBuf>,
    /// The eastward (or grid x) wind variable of --init-grid (default: by standard_name, or
    /// u10, U10, uas, ugrd10m, u, U).
    #[arg(long, requires = "init_grid")]
    pub init_u: Option<String>,
    /// The northward (or grid y) wind variable of --init-grid (default: as --init-u).
    #[arg(long, requires = "init_grid")]
    pub init_v: Option<String>,
    /// The time of --init-grid: an index (0 = first) or a UTC date YYYY-MM-DDTHH:MM[:SS]
    /// (matched to the CF time coordinate). Default: the first time (a note when there are
    /// several).
    #[arg(long, requires = "init_grid")]
    pub init_time: Option<String>,
    /// Height above the ground of the wind of --init-grid (m; above the vegetation with
    /// --vegetation, as WindNinja). Default: the file's `height` coordinate, or 10 m for
    /// variables named for 10 m (u10, ugrd10m, ...).
    #[arg(long, requires = "init_grid")]
    pub init_height_m: Option<f64>,
    /// The CRS of --init-grid's x/y (EPSG:CODE; EPSG:4326 for longitude/latitude). Default:
    /// longitude/latitude axes, else the file's grid mapping, else the DEM's CRS.
    #[arg(long, requires = "init_grid")]
    pub init_crs: Option<String>,
    /// The air temperature variable of --init-grid for --diurnal / --non-neutral-stability
    /// (K, degC or degF by its units; default: by standard_name air_temperature, or t2m, T2,
    /// tas, tmp2m, TMP_2maboveground). Per DEM column, unless --air-temp gives one value.
    #[arg(long, requires = "init_grid")]
    pub init_temp: Option<String>,
    /// The cloud cover variable of --init-grid (a fraction or %, by its units; default: by
    /// standard_name cloud_area_fraction, or tcc, clt, tcdcclm, TCDC_entireatmosphere). Per
    /// DEM column, unless --cloud-cover gives one value.
    #[arg(long, requires = "init_grid")]
    pub init_cloud: Option<String>,
    /// Whether --init-grid's u and v point east and north (`earth`) or along a curvilinear
    /// grid's axes (`grid`). Default: the variables' standard_name (eastward_wind / x_wind);
    /// WRF's output (U10/V10 with its MAP_PROJ) is `grid`.
    #[arg(long, requires = "init_grid", value_enum)]
    pub init_wind_axes: Option<WindAxes>,
}

/// The directions of a curvilinear grid's u and v.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum WindAxes {
    /// East and north.
    Earth,
    /// Along the grid's x and y (WRF's U10/V10).
    Grid,
}

/// The library's parameter names in `text` as the flags that set them.
pub(crate) fn flag_names(text: &str) -> String {
    text.replace("air_temp_c", "--air-temp")
        .replace("cloud_cover_pct", "--cloud-cover")
}

/// The gridded wind of `--init-grid` with the flags that choose what to read.
pub(crate) fn read(
    a: &InitGridArgs,
    dem_epsg: Option<u16>,
    weather: bool,
) -> Result<wind::io::InitGridRead> {
    let path = a.init_grid.as_deref().unwrap_or(std::path::Path::new(""));
    if let Some(h) = a.init_height_m
        && !(h.is_finite() && h > 0.0)
    {
        bail!("--init-height-m must be a positive number of metres, got {h}");
    }
    if !weather && (a.init_temp.is_some() || a.init_cloud.is_some()) {
        bail!(
            "--init-temp and --init-cloud feed the diurnal model: add --diurnal or \
             --non-neutral-stability"
        );
    }
    let time = a
        .init_time
        .as_deref()
        .map(|t| match t.trim().parse::<usize>() {
            Ok(i) => wind::io::TimeSel::Index(i),
            Err(_) => wind::io::TimeSel::At(t.trim().to_string()),
        });
    let crs_epsg = crate::ctx::parse_crs(a.init_crs.as_deref()).map_err(|_| {
        anyhow::anyhow!(
            "--init-crs {:?}: expected EPSG:CODE (EPSG:4326 for longitude/latitude)",
            a.init_crs.as_deref().unwrap_or("")
        )
    })?;
    let req = wind::io::InitGridRequest {
        u_var: a.init_u.clone(),
        v_var: a.init_v.clone(),
        height_agl_m: a.init_height_m,
        time,
        crs_epsg,
        dem_epsg,
        weather,
        temp_var: a.init_temp.clone(),
        cloud_var: a.init_cloud.clone(),
        grid_relative: a.init_wind_axes.map(|w| w == WindAxes::Grid),
    };
    wind::io::read_init_grid(path, &req)
        .map_err(anyhow::Error::from)
        .context("reading the gridded wind (--init-grid)")
}
