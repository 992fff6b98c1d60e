//! The diurnal inputs of `geofield.wind` (`diurnal=dict(...)`) as the library's
//! [`gw::diurnal::Diurnal`].

use geofield::wind as gw;
use geofield_core::GridSpec;
use pyo3::prelude::*;

use crate::errors;

/// The diurnal inputs (see `geofield.wind`'s docstring): (year, month, day, hour, minute,
/// utc_offset, time_zone, air_temp_c, cloud_cover_pct, lat, lon, slope_flows).
pub(crate) type DiurnalArg = (
    i32,
    u32,
    u32,
    u32,
    u32,
    Option<f64>,
    Option<String>,
    Option<f64>,
    Option<f64>,
    Option<f64>,
    Option<f64>,
    bool,
);

/// The library's diurnal inputs of `d`, the place from the DEM's CRS (the centre of `plan`)
/// unless `lat`/`lon` are given. With `gridded` (a weather model's first guess) an air
/// temperature or cloud cover not given is NaN, for the grid to fill
/// (`diurnal::weather_from_grid`).
pub(crate) fn diurnal_inputs(
    d: DiurnalArg,
    gridded: bool,
    plan: &GridSpec,
    crs: Option<u16>,
) -> PyResult<gw::diurnal::Diurnal> {
    let (year, month, day, hour, minute, offset, zone, air_temp, cloud, lat, lon, sf) = d;
    let given = |v: Option<f64>, name: &str, what: &str| match v {
        Some(v) => Ok(v),
        None if gridded => Ok(f64::NAN),
        None => Err(errors::arg(
            "diurnal",
            format!("needs {name} ({what}), or a gridded wind (init_grid) that has it"),
        )),
    };
    let air_temp_c = given(air_temp, "air_temp", "°C near the ground")?;
    let cloud_cover_pct = given(cloud, "cloud_cover", "%, 0-100")?;
    let offset = match (offset, zone) {
        (Some(_), Some(_)) => {
            return Err(errors::arg(
                "diurnal",
                "give utc_offset or time_zone, not both",
            ));
        }
        (Some(h), None) => h,
        (None, Some(z)) => gw::io::TimeZone::parse(&z)
            .ok_or_else(|| {
                errors::arg(
                    "diurnal.time_zone",
                    format!(
                        "{z:?} is neither a time zone of the IANA database (e.g. \
                         \"America/Denver\") nor a fixed UTC offset (e.g. \"UTC-7\", \"-06:00\")"
                    ),
                )
            })?
            .offset_at(year, month, day, hour, minute)
            .map_err(|e| errors::arg("diurnal.time_zone", e))?,
        (None, None) => {
            return Err(errors::arg(
                "diurnal",
                "needs utc_offset (hours, local time minus UTC) or time_zone",
            ));
        }
    };
    let time_utc = gw::solar::UtcTime::from_local(year, month, day, hour, minute, offset)
        .ok_or_else(|| {
            errors::arg(
                "diurnal",
                format!(
                    "{year:04}-{month:02}-{day:02} {hour:02}:{minute:02} at UTC{offset:+} is not \
                     a date and time (hours 0-23, offset within 14 h)"
                ),
            )
        })?;
    let (lat_deg, lon_deg) = match (lat, lon, crs) {
        (Some(la), Some(lo), _) => (la, lo),
        (None, None, Some(code)) => {
            let (lo, la) = gw::io::centre_lonlat(plan, code)
                .map_err(|e| errors::arg("diurnal", format!("{e}; give lat and lon")))?;
            (la, lo)
        }
        (None, None, None) => {
            return Err(errors::arg(
                "diurnal",
                "needs lat and lon (degrees) for the sun: the DEM has no CRS to take them from",
            ));
        }
        _ => return Err(errors::arg("diurnal", "give both lat and lon")),
    };
    Ok(gw::diurnal::Diurnal {
        time_utc,
        air_temp_c,
        cloud_cover_pct,
        lat_deg,
        lon_deg,
        slope_flows: sf,
    })
}
