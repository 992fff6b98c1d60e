//! The near-surface air temperature and the cloud cover of a weather model's file, beside its
//! wind ([`super::read_init_grid`] with [`super::InitGridRequest::weather`]): what WindNinja's
//! weather-model initialisation feeds its diurnal model per cell.
//!
//! - **Which variable**: the one named (`--init-temp`, `--init-cloud`), else the first whose
//!   `standard_name` is `air_temperature` / `cloud_area_fraction`, else the first present of
//!   [`TEMP_NAMES`] / [`CLOUD_NAMES`] (ERA5's `t2m`/`tcc`, WRF's `T2`, CMIP's `tas`/`clt`, GFS
//!   and NAM through NetCDF: `tmp2m`, `TMP_2maboveground`, `tcdcclm`,
//!   `TCDC_entireatmosphere`). Only a variable on the wind's own dimensions is taken; a
//!   candidate on others is passed over with a note (a named one is an error).
//! - **Units** (the `units` attribute, required): temperatures in `K`, `degC` or `degF`
//!   (spellings as CF and UDUNITS write them) to °C; cloud cover as a fraction (`1`, `0-1`,
//!   `(0 - 1)`, `fraction`) or in `%` to %.
//! - **Range**: every finite value must be a plausible near-surface temperature, −90 to 60 °C,
//!   and a cloud cover in 0–100 % (to 1e-6); missing values (fill, NaN) are allowed where no
//!   DEM column needs them (the regridding says so otherwise).

use geofield_io::NcReader;

/// Temperature variables looked for by name, in this order.
pub const TEMP_NAMES: [&str; 7] = [
    "t2m",
    "T2",
    "tas",
    "tmp2m",
    "TMP_2maboveground",
    "air_temperature_2m",
    "t2",
];
/// Cloud cover variables looked for by name, in this order.
pub const CLOUD_NAMES: [&str; 6] = [
    "tcc",
    "clt",
    "tcdcclm",
    "TCDC_entireatmosphere",
    "TCDC_entireatmosphere_consideredasasinglelayer_",
    "cloud_cover",
];

/// What one weather variable is: its kind's words and how it is found.
pub(super) struct Kind {
    /// "air temperature" / "cloud cover".
    pub what: &'static str,
    /// The flag that names it.
    pub flag: &'static str,
    pub standard_name: &'static str,
    pub names: &'static [&'static str],
}

pub(super) const TEMP: Kind = Kind {
    what: "air temperature",
    flag: "--init-temp",
    standard_name: "air_temperature",
    names: &TEMP_NAMES,
};
pub(super) const CLOUD: Kind = Kind {
    what: "cloud cover",
    flag: "--init-cloud",
    standard_name: "cloud_area_fraction",
    names: &CLOUD_NAMES,
};

/// The variable of `kind` on the wind's dimensions `dims`: the one `named`, else by
/// standard name, else by name; `Ok(None)` when there is none (with a note for a candidate
/// on other dimensions).
pub(super) fn pick(
    nc: &NcReader,
    kind: &Kind,
    named: Option<&str>,
    dims: &[(String, usize)],
    notes: &mut Vec<String>,
) -> Result<Option<String>, String> {
    let on_dims = |n: &str| nc.var(n).is_some_and(|v| v.dims == dims);
    if let Some(n) = named {
        return match nc.var(n) {
            None => Err(format!(
                "{} {n:?}: no such variable; the file has {}",
                kind.flag,
                nc.var_names().join(", ")
            )),
            Some(v) if v.dims != dims => Err(format!(
                "{} {n:?}: its dimensions {:?} are not the wind's {dims:?}",
                kind.flag, v.dims
            )),
            Some(_) => Ok(Some(n.to_string())),
        };
    }
    let names = nc.var_names();
    let by_std = names.iter().filter(|n| {
        nc.attr_text(n, "standard_name")
            .is_some_and(|s| s.trim() == kind.standard_name)
    });
    let by_name = kind
        .names
        .iter()
        .map(|s| s.to_string())
        .filter(|n| nc.var(n).is_some());
    let candidates: Vec<String> = by_std.cloned().chain(by_name).collect();
    if let Some(n) = candidates.iter().find(|n| on_dims(n)) {
        return Ok(Some(n.clone()));
    }
    if let Some(n) = candidates.first() {
        notes.push(format!(
            "{n:?} looks like the {} but is not on the wind's dimensions {dims:?}: not used \
             (name another with {})",
            kind.what, kind.flag
        ));
    }
    Ok(None)
}

/// The conversion of a temperature in `units` to °C.
pub(super) fn temp_to_c(units: Option<&str>) -> Result<fn(f64) -> f64, String> {
    let u = units.map(|u| u.trim().to_string()).unwrap_or_default();
    match u.as_str() {
        "K" | "k" | "kelvin" | "Kelvin" | "degK" | "deg_K" | "degrees_K" => Ok(|v| v - 273.15),
        "degC" | "deg_C" | "degrees_C" | "degree_Celsius" | "degrees_Celsius" | "Celsius"
        | "celsius" | "C" | "°C" => Ok(|v| v),
        "degF" | "deg_F" | "degrees_F" | "degree_Fahrenheit" | "Fahrenheit" | "fahrenheit"
        | "F" | "°F" => Ok(|v| (v - 32.0) * 5.0 / 9.0),
        "" => Err("declares no units (K, degC or degF)".into()),
        other => Err(format!("has units {other:?}, not K, degC or degF")),
    }
}

/// The factor that turns a cloud cover in `units` into %.
pub(super) fn cloud_to_pct(units: Option<&str>) -> Result<f64, String> {
    let u = units.map(|u| u.trim().to_string()).unwrap_or_default();
    match u.as_str() {
        "1" | "0-1" | "(0 - 1)" | "(0-1)" | "fraction" | "Fraction" => Ok(100.0),
        "%" | "percent" | "Percent" => Ok(1.0),
        "" => Err("declares no units (1 for a fraction, or %)".into()),
        other => Err(format!("has units {other:?}, not 1 (a fraction) or %")),
    }
}

/// Checks the converted values of `kind` (module docs); a cloud cover a hair above 100 % or
/// below 0 (float rounding) is clipped.
pub(super) fn check(kind: &Kind, var: &str, values: &mut [f64]) -> Result<(), String> {
    let (lo, hi) = if kind.flag == TEMP.flag {
        (-90.0, 60.0)
    } else {
        (0.0, 100.0)
    };
    for v in values.iter_mut().filter(|v| v.is_finite()) {
        if kind.flag == CLOUD.flag && (-1e-6..=100.0 + 1e-6).contains(v) {
            *v = v.clamp(0.0, 100.0);
        }
        if !(lo..=hi).contains(v) {
            return Err(format!(
                "{var:?}: a {} of {v} {} is outside {lo}..{hi}",
                kind.what,
                if kind.flag == TEMP.flag { "°C" } else { "%" }
            ));
        }
    }
    Ok(())
}
