//! WindNinja's configuration file (`.cfg`, the `key = value` file that `WindNinja_cli` reads):
//! the keys of its diurnal and stability inputs ([`read_ninja_cfg`]), and the two helpers every
//! front end needs to turn them into [`crate::wind::diurnal::Diurnal`]: the time zone of a text
//! ([`TimeZone`]: a fixed UTC offset, [`parse_utc_offset`], or a named zone of the IANA
//! database) and the latitude and longitude of the DEM's centre from its CRS ([`centre_lonlat`]).
//!
//! # Keys read (WindNinja's names)
//!
//! | key | value |
//! | --- | --- |
//! | `diurnal_winds` | true/false: slope flows in the first guess |
//! | `non_neutral_stability` | true/false: the log profile corrected for stability |
//! | `uni_air_temp`, `air_temp_units` | air temperature; units `C`, `F` or `K` (default `C`) |
//! | `uni_cloud_cover`, `cloud_cover_units` | cloud cover; `percent` (default) or `fraction` |
//! | `year`, `month`, `day`, `hour`, `minute` | the local date and clock time |
//! | `time_zone` | a named zone (`America/Denver`, as WindNinja's own list; daylight saving time at the date) or a fixed offset: `UTC-7`, `GMT+5:30`, `-07:00`, `+0530`, `Etc/GMT+7` (= UTC−7), `UTC` |
//!
//! Lines are `key = value` (also `key value`), `#` starts a comment, keys are matched in any
//! case; other keys (WindNinja's many others) are left for the caller, which lists them. Named
//! zones come from the IANA time-zone database built into geofield (the `chrono-tz` crate):
//! their offset at the file's date, so `America/Denver` in July is UTC−6. Every bad value is an
//! [`InputError::Field`] naming the file, the line and the key.

use std::path::Path;

use geofield_core::GridSpec;
use geofield_io::project::{ProjectError, unproject_to_lonlat};

use crate::input_error::{InputError, quote};
use crate::wind::solar::UtcTime;

/// A value and the line it was read from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AtLine<T> {
    pub value: T,
    pub line: u64,
}

/// The diurnal inputs of a WindNinja `.cfg` (every key optional), in SI units.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NinjaCfg {
    pub diurnal_winds: Option<bool>,
    pub non_neutral_stability: Option<bool>,
    /// °C.
    pub air_temp_c: Option<AtLine<f64>>,
    /// %.
    pub cloud_cover_pct: Option<AtLine<f64>>,
    pub year: Option<AtLine<i32>>,
    pub month: Option<AtLine<u32>>,
    pub day: Option<AtLine<u32>>,
    pub hour: Option<AtLine<u32>>,
    pub minute: Option<AtLine<u32>>,
    /// The `time_zone` key.
    pub time_zone: Option<AtLine<TimeZone>>,
    /// The other keys, in file order (not diurnal inputs).
    pub other_keys: Vec<String>,
}

impl NinjaCfg {
    /// The UTC time of the file's date and time, when all of `year` … `minute` and `time_zone`
    /// are given; an error naming the file and the `day` line for a date that does not exist.
    pub fn utc_time(&self, path: &Path) -> Result<Option<UtcTime>, InputError> {
        let (Some(y), Some(mo), Some(d), Some(h), Some(mi), Some(z)) = (
            self.year,
            self.month,
            self.day,
            self.hour,
            self.minute,
            self.time_zone,
        ) else {
            return Ok(None);
        };
        let field = |line: u64, key: &str, reason: String| InputError::Field {
            path: path.to_path_buf(),
            line,
            field: format!("key {key:?}"),
            reason,
        };
        let not_a_date = || {
            field(
                d.line,
                "day",
                format!(
                    "{:04}-{:02}-{:02} is not a date",
                    y.value, mo.value, d.value
                ),
            )
        };
        if chrono::NaiveDate::from_ymd_opt(y.value, mo.value, d.value).is_none() {
            return Err(not_a_date());
        }
        let offset = z
            .value
            .offset_at(y.value, mo.value, d.value, h.value, mi.value)
            .map_err(|reason| field(z.line, "time_zone", reason))?;
        UtcTime::from_local(y.value, mo.value, d.value, h.value, mi.value, offset)
            .map(Some)
            .ok_or_else(not_a_date)
    }
}

/// A time zone: a fixed offset from UTC, or a named zone of the IANA database (`America/Denver`)
/// whose offset depends on the date (daylight saving time).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TimeZone {
    /// Hours east of Greenwich.
    Fixed(f64),
    Named(chrono_tz::Tz),
}

impl TimeZone {
    /// `text` as a fixed offset ([`parse_utc_offset`]) or as the name of a zone of the IANA
    /// database, in any case (`America/Denver`, `europe/paris`); `None` for neither.
    pub fn parse(text: &str) -> Option<TimeZone> {
        if let Some(h) = parse_utc_offset(text) {
            return Some(TimeZone::Fixed(h));
        }
        chrono_tz::Tz::from_str_insensitive(text.trim())
            .ok()
            .map(TimeZone::Named)
    }

    /// Hours east of Greenwich at the local date and clock time. In a named zone, a clock time
    /// of the hour skipped when daylight saving time starts does not exist (an error); in the
    /// hour lived twice when it ends, the first (daylight saving) offset is taken.
    pub fn offset_at(
        &self,
        year: i32,
        month: u32,
        day: u32,
        hour: u32,
        minute: u32,
    ) -> Result<f64, String> {
        use chrono::{Offset, TimeZone as _};
        let tz = match self {
            TimeZone::Fixed(h) => return Ok(*h),
            TimeZone::Named(tz) => tz,
        };
        let local = chrono::NaiveDate::from_ymd_opt(year, month, day)
            .ok_or_else(|| format!("{year:04}-{month:02}-{day:02} is not a date"))?
            .and_hms_opt(hour, minute, 0)
            .ok_or_else(|| format!("{hour:02}:{minute:02} is not a clock time"))?;
        match tz.offset_from_local_datetime(&local) {
            chrono::LocalResult::Single(o) | chrono::LocalResult::Ambiguous(o, _) => {
                Ok(o.fix().local_minus_utc() as f64 / 3600.0)
            }
            chrono::LocalResult::None => Err(format!(
                "{} does not exist in {}: the clocks skip that hour (daylight saving time \
                 starts); give a time outside it",
                local.format("%Y-%m-%d %H:%M"),
                tz.name()
            )),
        }
    }
}

impl std::fmt::Display for TimeZone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TimeZone::Fixed(h) => write!(f, "UTC{h:+}"),
            TimeZone::Named(tz) => f.write_str(tz.name()),
        }
    }
}

/// A fixed UTC offset (hours east) from `text`: `UTC`, `GMT`, `Z`, `UTC-7`, `UTC+05:30`,
/// `GMT+5.5`, `-07:00`, `+0530`, `-7`, or POSIX's `Etc/GMT+7` (whose sign is inverted: UTC−7).
/// `None` for anything else (named zones) or beyond ±14 h.
pub fn parse_utc_offset(text: &str) -> Option<f64> {
    let t = text.trim();
    let upper = t.to_ascii_uppercase();
    let (rest, sign_flip) = if let Some(r) = upper.strip_prefix("ETC/GMT") {
        (r.to_string(), -1.0)
    } else if let Some(r) = upper
        .strip_prefix("UTC")
        .or_else(|| upper.strip_prefix("GMT"))
    {
        (r.to_string(), 1.0)
    } else if upper == "Z" {
        (String::new(), 1.0)
    } else {
        (upper.clone(), 1.0)
    };
    let rest = rest.trim();
    if rest.is_empty() {
        return (upper != rest).then_some(0.0);
    }
    let (sign, body) = match rest.as_bytes()[0] {
        b'+' => (1.0, &rest[1..]),
        b'-' => (-1.0, &rest[1..]),
        _ => (1.0, rest),
    };
    if body.is_empty()
        || !body
            .bytes()
            .all(|b| b.is_ascii_digit() || b == b':' || b == b'.')
    {
        return None;
    }
    let hours = if let Some((h, m)) = body.split_once(':') {
        let (h, m): (u32, u32) = (h.parse().ok()?, m.parse().ok()?);
        if m > 59 {
            return None;
        }
        h as f64 + m as f64 / 60.0
    } else if body.len() == 4 && !body.contains('.') {
        let (h, m): (u32, u32) = (body[..2].parse().ok()?, body[2..].parse().ok()?);
        if m > 59 {
            return None;
        }
        h as f64 + m as f64 / 60.0
    } else {
        body.parse::<f64>().ok()?
    };
    let off = sign_flip * sign * hours;
    (off.is_finite() && off.abs() <= 14.0).then_some(off)
}

/// (longitude, latitude) in degrees (WGS 84) of the centre of `plan` in the projected CRS
/// EPSG:`crs_epsg`, for the sun's position.
pub fn centre_lonlat(plan: &GridSpec, crs_epsg: u16) -> Result<(f64, f64), ProjectError> {
    let x = plan.x_min_m + 0.5 * plan.width_m();
    let y = plan.y_max_m - 0.5 * plan.height_m();
    unproject_to_lonlat(x, y, crs_epsg)
}

/// Read the diurnal keys of a WindNinja `.cfg` (see the module docs).
pub fn read_ninja_cfg(path: &Path) -> Result<NinjaCfg, InputError> {
    let text = std::fs::read_to_string(path).map_err(|source| geofield_io::IoError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let mut cfg = NinjaCfg::default();
    let mut temp: Option<(f64, u64)> = None;
    let mut temp_units: Option<(String, u64)> = None;
    let mut cloud: Option<(f64, u64)> = None;
    let mut cloud_units: Option<(String, u64)> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = i as u64 + 1;
        let body = raw.split('#').next().unwrap_or("").trim();
        if body.is_empty() {
            continue;
        }
        let (key, value) = match body.split_once('=') {
            Some((k, v)) => (k.trim(), v.trim()),
            None => body.split_once(char::is_whitespace).unwrap_or((body, "")),
        };
        let (key, value) = (
            key.trim().to_ascii_lowercase(),
            value.trim().trim_matches('"'),
        );
        let bad = |reason: String| InputError::Field {
            path: path.to_path_buf(),
            line,
            field: format!("key \"{key}\""),
            reason,
        };
        let number = || -> Result<f64, InputError> {
            value
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| bad(format!("{} is not a number", quote(value))))
        };
        let whole = |lo: u32, hi: u32| -> Result<AtLine<u32>, InputError> {
            match value.parse::<u32>() {
                Ok(v) if (lo..=hi).contains(&v) => Ok(AtLine { value: v, line }),
                _ => Err(bad(format!(
                    "{} is not a whole number in {lo}..{hi}",
                    quote(value)
                ))),
            }
        };
        let flag = || -> Result<bool, InputError> {
            match value.to_ascii_lowercase().as_str() {
                "true" | "1" | "yes" | "on" => Ok(true),
                "false" | "0" | "no" | "off" => Ok(false),
                _ => Err(bad(format!("{} is not true or false", quote(value)))),
            }
        };
        match key.as_str() {
            "diurnal_winds" => cfg.diurnal_winds = Some(flag()?),
            "non_neutral_stability" => cfg.non_neutral_stability = Some(flag()?),
            "uni_air_temp" => temp = Some((number()?, line)),
            "air_temp_units" => temp_units = Some((value.to_ascii_uppercase(), line)),
            "uni_cloud_cover" => cloud = Some((number()?, line)),
            "cloud_cover_units" => cloud_units = Some((value.to_ascii_lowercase(), line)),
            "year" => match value.parse::<i32>() {
                Ok(y) if (1..=9999).contains(&y) => cfg.year = Some(AtLine { value: y, line }),
                _ => return Err(bad(format!("{} is not a year in 1..9999", quote(value)))),
            },
            "month" => cfg.month = Some(whole(1, 12)?),
            "day" => cfg.day = Some(whole(1, 31)?),
            "hour" => cfg.hour = Some(whole(0, 23)?),
            "minute" => cfg.minute = Some(whole(0, 59)?),
            "time_zone" => {
                let zone = TimeZone::parse(value).ok_or_else(|| {
                    bad(format!(
                        "{} is neither a time zone of the IANA database (e.g. America/Denver) \
                         nor a fixed UTC offset (e.g. UTC-7, -06:00, Etc/GMT+7)",
                        quote(value)
                    ))
                })?;
                cfg.time_zone = Some(AtLine { value: zone, line });
            }
            _ => cfg.other_keys.push(key.clone()),
        }
    }
    let field = |line: u64, key: &str, reason: String| InputError::Field {
        path: path.to_path_buf(),
        line,
        field: format!("key \"{key}\""),
        reason,
    };
    if let Some((t, line)) = temp {
        let (units, uline) = temp_units.clone().unwrap_or(("C".into(), line));
        let c = match units.as_str() {
            "C" => t,
            "F" => (t - 32.0) * 5.0 / 9.0,
            "K" => t - 273.15,
            _ => {
                return Err(field(
                    uline,
                    "air_temp_units",
                    format!("{} is not C, F or K", quote(&units)),
                ));
            }
        };
        if !(c > -90.0 && c < 60.0) {
            return Err(field(
                line,
                "uni_air_temp",
                format!("{t} {units} is not an air temperature in (-90, 60) °C"),
            ));
        }
        cfg.air_temp_c = Some(AtLine { value: c, line });
    }
    if let Some((n, line)) = cloud {
        let (units, uline) = cloud_units.clone().unwrap_or(("percent".into(), line));
        let pct = match units.as_str() {
            "percent" | "%" => n,
            "fraction" => 100.0 * n,
            _ => {
                return Err(field(
                    uline,
                    "cloud_cover_units",
                    format!("{} is not percent or fraction", quote(&units)),
                ));
            }
        };
        if !(0.0..=100.0).contains(&pct) {
            return Err(field(
                line,
                "uni_cloud_cover",
                format!("{n} {units} is not a cloud cover in 0..100 %"),
            ));
        }
        cfg.cloud_cover_pct = Some(AtLine { value: pct, line });
    }
    Ok(cfg)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn utc_offsets() {
        for (t, h) in [
            ("UTC", 0.0),
            ("Z", 0.0),
            ("GMT", 0.0),
            ("UTC-7", -7.0),
            ("utc+05:30", 5.5),
            ("GMT+5.5", 5.5),
            ("-07:00", -7.0),
            ("+0530", 5.5),
            ("-6", -6.0),
            ("Etc/GMT+7", -7.0),
            ("Etc/GMT-10", 10.0),
        ] {
            assert_eq!(parse_utc_offset(t), Some(h), "{t}");
        }
        for t in [
            "America/Denver",
            "",
            "UTC+15",
            "+07:75",
            "MST",
            "auto-detect",
        ] {
            assert_eq!(parse_utc_offset(t), None, "{t}");
        }
    }

    /// Named zones at dates on both sides of their daylight saving changes (the US rule since
    /// 2007: from the second Sunday of March, 02:00, to the first Sunday of November, 02:00;
    /// South Australia: from the first Sunday of October to the first Sunday of April).
    #[test]
    fn named_time_zones() {
        let at = |z: &str, y, mo, d, h, mi| TimeZone::parse(z).unwrap().offset_at(y, mo, d, h, mi);
        assert_eq!(at("America/Denver", 2024, 6, 21, 13, 30), Ok(-6.0));
        assert_eq!(at("america/denver", 2024, 1, 15, 13, 30), Ok(-7.0));
        assert_eq!(at("America/Phoenix", 2024, 6, 21, 13, 30), Ok(-7.0));
        assert_eq!(at("Asia/Kolkata", 2024, 6, 21, 9, 0), Ok(5.5));
        assert_eq!(at("Australia/Adelaide", 2024, 1, 10, 12, 0), Ok(10.5));
        assert_eq!(at("Australia/Adelaide", 2024, 7, 10, 12, 0), Ok(9.5));
        assert_eq!(at("UTC-7", 2024, 6, 21, 13, 30), Ok(-7.0));
        // 2024-03-10 02:30 does not exist in Denver; 2024-11-03 01:30 happens twice (the
        // first, daylight time, is taken).
        let e = at("America/Denver", 2024, 3, 10, 2, 30).unwrap_err();
        assert!(e.contains("does not exist"), "{e}");
        assert_eq!(at("America/Denver", 2024, 3, 10, 3, 30), Ok(-6.0));
        assert_eq!(at("America/Denver", 2024, 11, 3, 1, 30), Ok(-6.0));
        assert_eq!(at("America/Denver", 2024, 11, 3, 2, 30), Ok(-7.0));
        assert!(at("America/Denver", 2023, 2, 29, 12, 0).is_err());
        assert_eq!(TimeZone::parse("Mars/Olympus_Mons"), None);
        assert_eq!(
            TimeZone::parse("America/Denver").unwrap().to_string(),
            "America/Denver"
        );
    }

    fn write(name: &str, text: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("geofield-ninja-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    /// A WindNinja diurnal block read and converted (68 °F = 20 °C, 0.25 = 25 %), the local
    /// time turned into UTC, other keys listed; bad values name the file, line and key.
    #[test]
    fn reads_windninja_keys() {
        let p = write(
            "good.cfg",
            "# WindNinja\nnum_threads = 4\ninitialization_method = domainAverageInitialization\n\
             diurnal_winds = true\nnon_neutral_stability = false\nuni_air_temp = 68\n\
             air_temp_units = F\nuni_cloud_cover = 0.25\ncloud_cover_units = fraction\n\
             year = 2024\nmonth = 6\nday = 21\nhour = 13 # local\nminute = 30\n\
             time_zone = UTC-7\n",
        );
        let c = read_ninja_cfg(&p).unwrap();
        assert_eq!(c.diurnal_winds, Some(true));
        assert_eq!(c.non_neutral_stability, Some(false));
        assert!((c.air_temp_c.unwrap().value - 20.0).abs() < 1e-12);
        assert!((c.cloud_cover_pct.unwrap().value - 25.0).abs() < 1e-12);
        assert_eq!(c.other_keys, ["num_threads", "initialization_method"]);
        let t = c.utc_time(&p).unwrap().unwrap();
        assert_eq!((t.year, t.month, t.day), (2024, 6, 21));
        assert!((t.hour - 20.5).abs() < 1e-12);

        for (text, line, key) in [
            ("diurnal_winds = maybe\n", 1, "diurnal_winds"),
            ("\nmonth = 13\n", 2, "month"),
            (
                "uni_air_temp = 20\nair_temp_units = X\n",
                2,
                "air_temp_units",
            ),
            ("uni_air_temp = 200\n", 1, "uni_air_temp"),
            ("uni_cloud_cover = 120\n", 1, "uni_cloud_cover"),
            ("time_zone = Mars/Olympus_Mons\n", 1, "time_zone"),
            ("hour = noon\n", 1, "hour"),
        ] {
            let p = write("bad.cfg", text);
            let e = read_ninja_cfg(&p).unwrap_err().to_string();
            let want = format!("{}:{line}: key \"{key}\"", p.display());
            assert!(e.starts_with(&want), "{e} (want {want})");
        }
        let p = write(
            "date.cfg",
            "year = 2023\nmonth = 2\nday = 29\nhour = 1\nminute = 0\ntime_zone = UTC\n",
        );
        let c = read_ninja_cfg(&p).unwrap();
        let e = c.utc_time(&p).unwrap_err().to_string();
        assert!(e.contains(":3: key \"day\""), "{e}");
        // WindNinja's own example: a named zone, daylight time in June (13:30 MDT = 19:30 UTC).
        let p = write(
            "named.cfg",
            "year = 2024\nmonth = 6\nday = 21\nhour = 13\nminute = 30\n\
             time_zone = America/Denver\n",
        );
        let t = read_ninja_cfg(&p).unwrap().utc_time(&p).unwrap().unwrap();
        assert!((t.hour - 19.5).abs() < 1e-12, "{}", t.hour);
        let p = write(
            "gap.cfg",
            "year = 2024\nmonth = 3\nday = 10\nhour = 2\nminute = 30\n\
             time_zone = America/Denver\n",
        );
        let e = read_ninja_cfg(&p)
            .unwrap()
            .utc_time(&p)
            .unwrap_err()
            .to_string();
        assert!(e.contains(":6: key \"time_zone\""), "{e}");
    }

    /// The centre of a 1 km square in UTM 11N around 500 000 E (the central meridian −117°),
    /// 5 194 000 N is on the meridian, near 46.9° N.
    #[test]
    fn centre_of_a_utm_plan() {
        let plan = GridSpec {
            x_min_m: 499_500.0,
            y_max_m: 5_194_500.0,
            cell_size_m: 10.0,
            cols: 100,
            rows: 100,
        };
        let (lon, lat) = centre_lonlat(&plan, 32611).unwrap();
        assert!((lon + 117.0).abs() < 1e-9, "{lon}");
        assert!((lat - 46.9).abs() < 0.05, "{lat}");
    }
}
