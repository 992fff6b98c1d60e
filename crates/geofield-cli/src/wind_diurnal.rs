//! `geofield wind`'s diurnal inputs, after WindNinja's: `--diurnal` (slope flows in the first
//! guess), `--non-neutral-stability` (the log profile corrected for the surface heat flux), the
//! date, local time and UTC offset, air temperature, cloud cover and the place, from the flags
//! or WindNinja's `.cfg` keys (`--ninja-cfg`; a flag wins over the file). The library does the
//! model ([`geofield::wind::diurnal`]).

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;
use geofield::wind::diurnal::Diurnal;
use geofield::wind::io::{NinjaCfg, TimeZone, centre_lonlat, read_ninja_cfg};
use geofield::wind::solar::UtcTime;
use geofield_core::GridSpec;

#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Diurnal winds and stability (WindNinja)")]
pub struct DiurnalArgs {
    /// WindNinja's diurnal winds: upslope flows by day, downslope by night, from the sun on
    /// each slope and the surface heat flux (Forthofer et al. 2014), added to the first guess.
    /// Needs --date, --time, --utc-offset (or --time-zone), --air-temp, --cloud-cover, and the
    /// place (--lat/--lon, or the centre of a DEM with a CRS).
    #[arg(long)]
    pub diurnal: bool,
    /// WindNinja's non-neutral stability: the log profile corrected by Monin-Obukhov
    /// similarity (Paulson 1970 unstable, van Ulden & Holtslag 1985 stable) with L from the
    /// surface heat flux of each column. Needs the diurnal inputs (with or without
    /// --diurnal); sets --profile log when no profile is given.
    #[arg(long)]
    pub non_neutral_stability: bool,
    /// Local date of the run, YYYY-MM-DD.
    #[arg(long)]
    pub date: Option<String>,
    /// Local clock time, HH:MM (24 h).
    #[arg(long)]
    pub time: Option<String>,
    /// Local time minus UTC in hours (-7 for MST, 5.5 for IST).
    #[arg(long, allow_negative_numbers = true, conflicts_with = "time_zone")]
    pub utc_offset: Option<f64>,
    /// The time zone: a named zone of the IANA database (America/Denver: its offset at the
    /// date, daylight saving time included) or a fixed offset (UTC-7, -06:00, +0530, Etc/GMT+7).
    #[arg(long, allow_hyphen_values = true)]
    pub time_zone: Option<String>,
    /// Air temperature near the ground (degrees C).
    #[arg(long, allow_negative_numbers = true)]
    pub air_temp: Option<f64>,
    /// Cloud cover (%, 0-100).
    #[arg(long)]
    pub cloud_cover: Option<f64>,
    /// Latitude of the domain (degrees north; default: the DEM centre's, from its CRS).
    #[arg(long, allow_negative_numbers = true, requires = "lon")]
    pub lat: Option<f64>,
    /// Longitude of the domain (degrees east; default: the DEM centre's, from its CRS).
    #[arg(long, allow_negative_numbers = true, requires = "lat")]
    pub lon: Option<f64>,
    /// A WindNinja configuration file (.cfg): its diurnal_winds, non_neutral_stability,
    /// uni_air_temp, air_temp_units, uni_cloud_cover, cloud_cover_units, year, month, day,
    /// hour, minute and time_zone (a fixed offset) are read; its other keys are listed and
    /// ignored. Flags override the file.
    #[arg(long)]
    pub ninja_cfg: Option<PathBuf>,
}

/// The diurnal model's inputs of the flags (and `--ninja-cfg`), with the place still to be
/// set by [`locate`] when `--lat/--lon` are not given; `None` when neither `--diurnal` nor
/// `--non-neutral-stability` asks for them. Returns (inputs, non-neutral, place given). With
/// `gridded` (a weather model's first guess), the air temperature and cloud cover may come
/// from the grid: a value not given is NaN until [`geofield::wind::diurnal::weather_from_grid`].
pub(crate) fn inputs(a: &DiurnalArgs, gridded: bool) -> Result<(Option<Diurnal>, bool, bool)> {
    let cfg = match &a.ninja_cfg {
        Some(p) => {
            let c =
                read_ninja_cfg(p).context("reading the WindNinja configuration (--ninja-cfg)")?;
            if !c.other_keys.is_empty() {
                eprintln!(
                    "note: {}: only the diurnal keys are read; ignored: {}",
                    p.display(),
                    c.other_keys.join(", ")
                );
            }
            Some((p.clone(), c))
        }
        None => None,
    };
    let c = cfg.as_ref().map(|(_, c)| c.clone()).unwrap_or_default();
    let slope_flows = a.diurnal || c.diurnal_winds == Some(true);
    let non_neutral = a.non_neutral_stability || c.non_neutral_stability == Some(true);
    if !(slope_flows || non_neutral) {
        for (given, name) in [
            (a.date.is_some(), "--date"),
            (a.time.is_some(), "--time"),
            (a.utc_offset.is_some(), "--utc-offset"),
            (a.time_zone.is_some(), "--time-zone"),
            (a.air_temp.is_some(), "--air-temp"),
            (a.cloud_cover.is_some(), "--cloud-cover"),
            (a.lat.is_some(), "--lat"),
        ] {
            if given {
                bail!("{name} is a diurnal input: add --diurnal or --non-neutral-stability");
            }
        }
        return Ok((None, false, false));
    }
    let why = if slope_flows {
        "--diurnal"
    } else {
        "--non-neutral-stability"
    };
    let time_utc = time_utc(a, &c, cfg.as_ref().map(|(p, _)| p.as_path()), why)?;
    let air_temp_c = match (a.air_temp, c.air_temp_c) {
        (Some(t), _) => t,
        (None, Some(t)) => t.value,
        (None, None) if gridded => f64::NAN,
        (None, None) => bail!("{why} needs --air-temp (degrees C near the ground)"),
    };
    if !(air_temp_c.is_nan() || air_temp_c > -90.0 && air_temp_c < 60.0) {
        bail!("--air-temp must be in (-90, 60) degrees C, got {air_temp_c}");
    }
    let cloud_cover_pct = match (a.cloud_cover, c.cloud_cover_pct) {
        (Some(n), _) => n,
        (None, Some(n)) => n.value,
        (None, None) if gridded => f64::NAN,
        (None, None) => bail!("{why} needs --cloud-cover (%, 0-100)"),
    };
    if !(cloud_cover_pct.is_nan() || (0.0..=100.0).contains(&cloud_cover_pct)) {
        bail!("--cloud-cover must be a percentage in [0, 100], got {cloud_cover_pct}");
    }
    let placed = a.lat.is_some();
    let (lat_deg, lon_deg) = (a.lat.unwrap_or(0.0), a.lon.unwrap_or(0.0));
    if !(lat_deg.is_finite() && lat_deg.abs() <= 90.0) {
        bail!("--lat must be in [-90, 90] degrees, got {lat_deg}");
    }
    if !(lon_deg.is_finite() && lon_deg.abs() <= 180.0) {
        bail!("--lon must be in [-180, 180] degrees, got {lon_deg}");
    }
    let d = Diurnal {
        time_utc,
        air_temp_c,
        cloud_cover_pct,
        lat_deg,
        lon_deg,
        slope_flows,
    };
    Ok((Some(d), non_neutral, placed))
}

/// UTC of the local date and time of the flags, else of the `.cfg`.
fn time_utc(
    a: &DiurnalArgs,
    c: &NinjaCfg,
    cfg: Option<&std::path::Path>,
    why: &str,
) -> Result<UtcTime> {
    let zone = match (a.utc_offset, &a.time_zone, c.time_zone) {
        (Some(h), _, _) => {
            if !(h.is_finite() && h.abs() <= 14.0) {
                bail!("--utc-offset must be in [-14, 14] hours, got {h}");
            }
            Some(TimeZone::Fixed(h))
        }
        (None, Some(z), _) => Some(TimeZone::parse(z).with_context(|| {
            format!(
                "--time-zone {z:?}: neither a time zone of the IANA database (e.g. \
                 America/Denver) nor a fixed UTC offset (e.g. UTC-7, -06:00, +0530, Etc/GMT+7)"
            )
        })?),
        (None, None, Some(z)) => Some(z.value),
        (None, None, None) => None,
    };
    let no_flags =
        a.date.is_none() && a.time.is_none() && a.utc_offset.is_none() && a.time_zone.is_none();
    if no_flags
        && let Some(p) = cfg
        && let Some(t) = c.utc_time(p)?
    {
        return Ok(t);
    }
    let Some(date) = &a.date else {
        bail!("{why} needs --date YYYY-MM-DD (the local date)");
    };
    let Some(time) = &a.time else {
        bail!("{why} needs --time HH:MM (the local clock time)");
    };
    let Some(zone) = zone else {
        bail!("{why} needs --utc-offset H (local time minus UTC, e.g. -7) or --time-zone");
    };
    let parts: Vec<&str> = date.trim().split('-').collect();
    let (y, mo, d) = match parts[..] {
        [y, m, d] => (y.parse::<i32>(), m.parse::<u32>(), d.parse::<u32>()),
        _ => bail!("--date {date:?}: expected YYYY-MM-DD, e.g. 2024-06-21"),
    };
    let (Ok(y), Ok(mo), Ok(d)) = (y, mo, d) else {
        bail!("--date {date:?}: expected YYYY-MM-DD, e.g. 2024-06-21");
    };
    let (h, mi) = match time.trim().split_once(':') {
        Some((h, m)) => (h.parse::<u32>(), m.parse::<u32>()),
        None => bail!("--time {time:?}: expected HH:MM, e.g. 13:30"),
    };
    let (Ok(h), Ok(mi)) = (h, mi) else {
        bail!("--time {time:?}: expected HH:MM, e.g. 13:30");
    };
    if h > 23 || mi > 59 {
        bail!("--time {time:?}: hours 0-23 and minutes 0-59");
    }
    let offset = zone
        .offset_at(y, mo, d, h, mi)
        .map_err(|e| anyhow::anyhow!("--date {date:?} --time {time:?} in {zone}: {e}"))?;
    UtcTime::from_local(y, mo, d, h, mi, offset)
        .with_context(|| format!("--date {date:?}: not a date"))
}

/// Set the place of `d` from the DEM's CRS (the centre of `plan`) unless `--lat/--lon` gave it.
pub(crate) fn locate(
    d: &mut Diurnal,
    placed: bool,
    plan: &GridSpec,
    crs_epsg: Option<u16>,
    dem: &std::path::Path,
) -> Result<()> {
    if placed {
        return Ok(());
    }
    let Some(code) = crs_epsg else {
        bail!(
            "the diurnal model needs the domain's latitude and longitude for the sun: give --lat \
             and --lon (degrees), or a DEM with a CRS ({} declares none; or --crs EPSG:CODE)",
            dem.display()
        );
    };
    let (lon, lat) = centre_lonlat(plan, code).with_context(|| {
        format!(
            "the latitude and longitude of the centre of {} (EPSG:{code}); give --lat and --lon",
            dem.display()
        )
    })?;
    d.lat_deg = lat;
    d.lon_deg = lon;
    Ok(())
}

/// The diurnal lines of the printed report.
pub(crate) fn print(d: &Diurnal, s: &geofield::wind::diurnal::DiurnalSummary, non_neutral: bool) {
    let t = &d.time_utc;
    let minutes = (t.hour * 60.0).round() as u32;
    let (h, m) = (minutes / 60, minutes % 60);
    let grid = |gridded: bool, mean: f64, given: f64, unit: &str| match gridded {
        true => format!("{mean:.1} {unit} (the grid's per column, mean)"),
        false => format!("{given} {unit}"),
    };
    println!(
        "diurnal: {:04}-{:02}-{:02} {:02}:{:02} UTC at {:.4} N {:.4} E, air {}, cloud {}; \
         sun zenith {:.2} deg azimuth {:.2} deg, shortwave (flat) {:.1} W m-2, {} cells shaded",
        t.year,
        t.month,
        t.day,
        h,
        m,
        d.lat_deg,
        d.lon_deg,
        grid(s.air_temp_gridded, s.air_temp_mean_c, d.air_temp_c, "C"),
        grid(
            s.cloud_cover_gridded,
            s.cloud_cover_mean_pct,
            d.cloud_cover_pct,
            "%"
        ),
        s.sun_zenith_deg,
        s.sun_azimuth_deg,
        s.shortwave_flat_w_per_m2,
        s.shaded_cells
    );
    println!(
        "diurnal: heat flux (mean) {:.1} W m-2, Obukhov length {:.1} m, u* {:.3} m/s, slope \
         flows {}{}",
        s.heat_flux_mean_w_per_m2,
        s.obukhov_length_m,
        s.friction_velocity_m_per_s,
        if d.slope_flows {
            format!("up to {:.2} m/s", s.max_slope_flow_m_per_s)
        } else {
            "off".into()
        },
        if non_neutral {
            ", non-neutral stability"
        } else {
            ", neutral profile"
        }
    );
}
