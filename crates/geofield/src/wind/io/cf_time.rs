//! CF time coordinates (`UNITS since DATE`, Gregorian calendars) for the gridded readers:
//! matching a UTC date to a time index and showing a time value as a date.

use crate::wind::solar::{UtcTime, julian_day};

/// The index of the time `at` among `values` (CF `units`, `calendar`), to the second.
pub(super) fn match_time(
    at: &str,
    values: &[f64],
    units: &str,
    calendar: &str,
) -> Result<usize, String> {
    let (seconds, origin) = cf_time_axis(units, calendar)?;
    let want = parse_utc(at)
        .ok_or_else(|| format!("--init-time {at:?}: expected an index or YYYY-MM-DDTHH:MM[:SS]"))?;
    let target_s = (want - origin) * 86400.0;
    let best = values
        .iter()
        .enumerate()
        .filter(|(_, v)| v.is_finite())
        .min_by(|a, b| {
            ((a.1 * seconds) - target_s)
                .abs()
                .total_cmp(&((b.1 * seconds) - target_s).abs())
        })
        .ok_or_else(|| "the time coordinate has no value".to_string())?;
    if ((best.1 * seconds) - target_s).abs() > 0.5 {
        let first = values.first().copied().unwrap_or(f64::NAN);
        let last = values.last().copied().unwrap_or(f64::NAN);
        return Err(format!(
            "no time equals {at} UTC; the file has {} times from {first} to {last} {units}, the \
             nearest index {} ({} {units})",
            values.len(),
            best.0,
            best.1
        ));
    }
    Ok(best.0)
}

/// The seconds per unit and the Julian day of the origin of CF time `units` ("UNIT since
/// DATE") in a Gregorian `calendar`, or why not.
fn cf_time_axis(units: &str, calendar: &str) -> Result<(f64, f64), String> {
    let cal = calendar.trim().to_ascii_lowercase();
    if !matches!(
        cal.as_str(),
        "" | "standard" | "gregorian" | "proleptic_gregorian"
    ) {
        return Err(format!(
            "calendar {calendar:?} is not Gregorian: choose the time by index (--init-time N)"
        ));
    }
    let (unit, since) = units
        .split_once(" since ")
        .ok_or_else(|| format!("time units {units:?} are not `UNITS since DATE`"))?;
    let seconds = match unit.trim().to_ascii_lowercase().as_str() {
        "seconds" | "second" | "secs" | "sec" | "s" => 1.0,
        "minutes" | "minute" | "mins" | "min" => 60.0,
        "hours" | "hour" | "hrs" | "hr" | "h" => 3600.0,
        "days" | "day" | "d" => 86400.0,
        other => {
            return Err(format!(
                "time unit {other:?} is not seconds, minutes, hours or days"
            ));
        }
    };
    let origin = parse_utc(since).ok_or_else(|| format!("cannot read the date in {units:?}"))?;
    Ok((seconds, origin))
}

/// The CF time `value` (`units`, Gregorian `calendar`) as `YYYY-MM-DDTHH:MM:SSZ`, or `None`.
pub(super) fn format_time(value: f64, units: &str, calendar: &str) -> Option<String> {
    let (seconds, origin) = cf_time_axis(units, calendar).ok()?;
    let jd = origin + value * seconds / 86400.0;
    if !jd.is_finite() || jd < 0.0 {
        return None;
    }
    // Meeus ch. 7, Julian day to Gregorian date; the time of day rounded to the second.
    let total_s = ((jd + 0.5) * 86400.0).round();
    let z = (total_s / 86400.0).floor();
    let sec_of_day = total_s - z * 86400.0;
    let alpha = ((z - 1_867_216.25) / 36_524.25).floor();
    let a = z + 1.0 + alpha - (alpha / 4.0).floor();
    let b = a + 1524.0;
    let c = ((b - 122.1) / 365.25).floor();
    let d = (365.25 * c).floor();
    let e = ((b - d) / 30.6001).floor();
    let day = b - d - (30.6001 * e).floor();
    let month = if e < 14.0 { e - 1.0 } else { e - 13.0 };
    let year = if month > 2.0 { c - 4716.0 } else { c - 4715.0 };
    let (h, m, sec) = (
        (sec_of_day / 3600.0).floor(),
        ((sec_of_day % 3600.0) / 60.0).floor(),
        sec_of_day % 60.0,
    );
    Some(format!(
        "{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{sec:02}Z"
    ))
}

/// Julian day of `YYYY-MM-DD[T| ]HH:MM[:SS[.f]]` (or a date alone), with an optional trailing
/// `Z`, `UTC` or `+00:00`.
pub(super) fn parse_utc(s: &str) -> Option<f64> {
    let s = s.trim();
    let s = s
        .strip_suffix("UTC")
        .or_else(|| s.strip_suffix('Z'))
        .or_else(|| s.strip_suffix("+00:00"))
        .or_else(|| s.strip_suffix("+0000"))
        .unwrap_or(s)
        .trim();
    let (date, time) = match s.split_once(['T', ' ']) {
        Some((d, t)) => (d, t.trim()),
        None => (s, "00:00:00"),
    };
    let mut d = date.split('-');
    let year: i32 = d.next()?.parse().ok()?;
    let month: u32 = d.next()?.parse().ok()?;
    let day: u32 = d.next()?.parse().ok()?;
    let mut t = time.split(':');
    let hour: u32 = t.next()?.parse().ok()?;
    let minute: u32 = t.next().unwrap_or("0").parse().ok()?;
    let second: f64 = t.next().unwrap_or("0").parse().ok()?;
    if !(0.0..60.0).contains(&second) {
        return None;
    }
    let ut = UtcTime::from_local(year, month, day, hour, minute, 0.0)?;
    Some(julian_day(&ut) + second / 86400.0)
}
