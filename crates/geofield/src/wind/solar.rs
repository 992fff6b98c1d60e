//! Sun position and incoming shortwave radiation for the diurnal slope flows ([`super::diurnal`]).
//!
//! **Sun position**: the low-precision solar coordinates of Meeus (1998, *Astronomical
//! Algorithms*, 2nd ed., ch. 25, as in NOAA's Solar Calculator spreadsheet), with t the Julian
//! centuries since J2000.0 (UT; ΔT ≈ 1 min is neglected, 0.0007° of solar longitude):
//!
//! ```text
//! L0 = 280.46646 + 36000.76983 t + 0.0003032 t²        geometric mean longitude (°)
//! M  = 357.52911 + 35999.05029 t − 0.0001537 t²        mean anomaly (°)
//! e  = 0.016708634 − 0.000042037 t − 0.0000001267 t²   orbit eccentricity
//! C  = (1.914602 − 0.004817 t − 0.000014 t²) sin M + (0.019993 − 0.000101 t) sin 2M + 0.000289 sin 3M
//! Ω  = 125.04 − 1934.136 t;   λ = L0 + C − 0.00569 − 0.00478 sin Ω   (apparent longitude)
//! ε  = 23°26′21.448″ − 46.815″ t − 0.00059″ t² + 0.001813″ t³ + 0.00256° cos Ω
//! δ  = asin(sin ε sin λ)                                  declination
//! E  = 4·deg(y sin 2L0 − 2e sin M + 4ey sin M cos 2L0 − ½y² sin 4L0 − 1.25e² sin 2M), y = tan²(ε/2)
//! hour angle H = (UTC minutes + E + 4·lon)/4 − 180°
//! cos Z = sin φ sin δ + cos φ cos δ cos H;  azimuth A = atan2(sin H, cos H sin φ − tan δ cos φ) + 180°
//! ```
//!
//! Geometric (no refraction, no parallax); Meeus gives 0.01° for the sun's coordinates.
//!
//! **Shortwave radiation** (W/m²) on a surface whose normal makes the angle i with the sun
//! (Holtslag & van Ulden 1983, J. Clim. Appl. Meteor. 22:517–529, eq. 3, also used by
//! WindNinja's diurnal model, Forthofer et al. 2009):
//!
//! ```text
//! K↓ = max(0, (a1 cos i + a2)(1 + b1 N^b2)),  a1 = 990, a2 = −30, b1 = −0.75, b2 = 3.4
//! cos i = cos Z cos β + sin Z sin β cos(A − aspect)      (β slope, aspect the downslope azimuth)
//! ```
//!
//! N is the cloud cover fraction (0–1). A shaded cell has cos i = 0.

/// Date and time in UTC.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct UtcTime {
    pub year: i32,
    /// 1–12.
    pub month: u32,
    /// 1–31.
    pub day: u32,
    /// Hours since midnight UTC, fractional (0 ≤ h < 24).
    pub hour: f64,
}

/// Where the sun is, seen from (lat, lon).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct SunPosition {
    /// Zenith angle (°, 0 overhead, > 90 below the horizon).
    pub zenith_deg: f64,
    /// Azimuth (°, clockwise from north, 180 south).
    pub azimuth_deg: f64,
}

impl SunPosition {
    /// Elevation above the horizon (°).
    pub fn elevation_deg(&self) -> f64 {
        90.0 - self.zenith_deg
    }
}

/// Days in `month` (1–12) of the Gregorian `year`; 0 for a month out of range.
pub fn days_in_month(year: i32, month: u32) -> u32 {
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => 0,
    }
}

impl UtcTime {
    /// The UTC time of a local date and clock time `hour`:`minute` at a fixed offset
    /// `utc_offset_h` hours east of Greenwich (−7 for MST): UTC = local − offset, the date
    /// carried across day, month and year ends. `None` for a date that does not exist, an hour
    /// outside 0–23, a minute outside 0–59 or an offset outside ±14 h.
    pub fn from_local(
        year: i32,
        month: u32,
        day: u32,
        hour: u32,
        minute: u32,
        utc_offset_h: f64,
    ) -> Option<UtcTime> {
        if !(1..=12).contains(&month)
            || day < 1
            || day > days_in_month(year, month)
            || hour > 23
            || minute > 59
            || !(utc_offset_h.is_finite() && utc_offset_h.abs() <= 14.0)
        {
            return None;
        }
        let (mut y, mut m, mut d) = (year, month, day);
        let mut h = hour as f64 + minute as f64 / 60.0 - utc_offset_h;
        if h < 0.0 {
            h += 24.0;
            if d > 1 {
                d -= 1;
            } else {
                (y, m) = if m > 1 { (y, m - 1) } else { (y - 1, 12) };
                d = days_in_month(y, m);
            }
        } else if h >= 24.0 {
            h -= 24.0;
            if d < days_in_month(y, m) {
                d += 1;
            } else {
                (y, m, d) = if m < 12 { (y, m + 1, 1) } else { (y + 1, 1, 1) };
            }
        }
        Some(UtcTime {
            year: y,
            month: m,
            day: d,
            hour: h,
        })
    }
}

/// Julian day (fractional) of a Gregorian date and UTC time (Meeus ch. 7).
pub fn julian_day(t: &UtcTime) -> f64 {
    let (mut y, mut m) = (t.year as f64, t.month as f64);
    if t.month <= 2 {
        y -= 1.0;
        m += 12.0;
    }
    let a = (y / 100.0).floor();
    let b = 2.0 - a + (a / 4.0).floor();
    (365.25 * (y + 4716.0)).floor()
        + (30.6001 * (m + 1.0)).floor()
        + t.day as f64
        + t.hour / 24.0
        + b
        - 1524.5
}

/// The sun's position at `t` from latitude `lat_deg` (north positive) and longitude
/// `lon_deg` (east positive), by the equations of the module docs.
pub fn sun_position(t: &UtcTime, lat_deg: f64, lon_deg: f64) -> SunPosition {
    let d = |x: f64| x.to_radians();
    let jc = (julian_day(t) - 2_451_545.0) / 36_525.0;
    let l0 = (280.46646 + jc * (36_000.769_83 + 0.0003032 * jc)).rem_euclid(360.0);
    let m = 357.52911 + jc * (35_999.050_29 - 0.0001537 * jc);
    let e = 0.016708634 - jc * (0.000042037 + 0.0000001267 * jc);
    let c = d(m).sin() * (1.914602 - jc * (0.004817 + 0.000014 * jc))
        + d(2.0 * m).sin() * (0.019993 - 0.000101 * jc)
        + d(3.0 * m).sin() * 0.000289;
    let omega = 125.04 - 1934.136 * jc;
    let lambda = l0 + c - 0.00569 - 0.00478 * d(omega).sin();
    let eps0 =
        23.0 + (26.0 + (21.448 - jc * (46.815 + jc * (0.00059 - jc * 0.001813))) / 60.0) / 60.0;
    let eps = eps0 + 0.00256 * d(omega).cos();
    let decl = (d(eps).sin() * d(lambda).sin()).asin();
    let y = (d(eps) / 2.0).tan().powi(2);
    let (l0r, mr) = (d(l0), d(m));
    let eot_min = 4.0
        * (y * (2.0 * l0r).sin() - 2.0 * e * mr.sin() + 4.0 * e * y * mr.sin() * (2.0 * l0r).cos()
            - 0.5 * y * y * (4.0 * l0r).sin()
            - 1.25 * e * e * (2.0 * mr).sin())
        .to_degrees();
    let true_solar_min = (t.hour * 60.0 + eot_min + 4.0 * lon_deg).rem_euclid(1440.0);
    let ha = d(true_solar_min / 4.0 - 180.0);
    let lat = d(lat_deg);
    let cos_z = (lat.sin() * decl.sin() + lat.cos() * decl.cos() * ha.cos()).clamp(-1.0, 1.0);
    let az = ha
        .sin()
        .atan2(ha.cos() * lat.sin() - decl.tan() * lat.cos())
        .to_degrees()
        + 180.0;
    SunPosition {
        zenith_deg: cos_z.acos().to_degrees(),
        azimuth_deg: az.rem_euclid(360.0),
    }
}

/// cos of the incidence angle of the sun on a surface of slope `slope_rad` whose downslope
/// direction is `aspect_rad` (clockwise from north); ≤ 0 when the surface faces away.
pub fn cos_incidence(sun: &SunPosition, slope_rad: f64, aspect_rad: f64) -> f64 {
    let z = sun.zenith_deg.to_radians();
    let a = sun.azimuth_deg.to_radians();
    z.cos() * slope_rad.cos() + z.sin() * slope_rad.sin() * (a - aspect_rad).cos()
}

/// Holtslag & van Ulden (1983) incoming shortwave radiation (W/m², ≥ 0) for `cos_i` (the
/// sine of the sun's elevation on flat ground; 0 when shaded) and cloud cover `cloud` (0–1).
pub fn shortwave_w_per_m2(cos_i: f64, cloud: f64) -> f64 {
    const A1: f64 = 990.0;
    const A2: f64 = -30.0;
    const B1: f64 = -0.75;
    const B2: f64 = 3.4;
    ((A1 * cos_i.max(0.0) + A2) * (1.0 + B1 * cloud.powf(B2))).max(0.0)
}

/// Whether each cell of `terrain_m` (rows × cols, row 0 north, square cells of `dx_m`) is in the
/// shadow of the terrain: marching from the cell centre toward the sun in steps of one cell,
/// the cell is shaded when some terrain sample (nearest cell) rises above the sun's ray. All
/// cells are shaded when the sun is below the horizon. O(cells × steps to the edge).
pub fn shade(
    terrain_m: &[f64],
    rows: usize,
    cols: usize,
    dx_m: f64,
    sun: &SunPosition,
) -> Vec<bool> {
    let elev = sun.elevation_deg().to_radians();
    if elev <= 0.0 {
        return vec![true; rows * cols];
    }
    let tan_e = elev.tan();
    let az = sun.azimuth_deg.to_radians();
    // Unit step toward the sun in (col, row) space: east +col, north −row.
    let (sc, sr) = (az.sin(), -az.cos());
    let steps = (rows + cols) * 2;
    (0..rows * cols)
        .map(|c| {
            let (r0, c0) = ((c / cols) as f64, (c % cols) as f64);
            let h0 = terrain_m[c];
            for s in 1..=steps {
                let (rr, cc) = (r0 + sr * s as f64, c0 + sc * s as f64);
                let (ri, ci) = (rr.round(), cc.round());
                if ri < 0.0 || ci < 0.0 || ri >= rows as f64 || ci >= cols as f64 {
                    return false;
                }
                let h = terrain_m[ri as usize * cols + ci as usize];
                if h > h0 + s as f64 * dx_m * tan_e {
                    return true;
                }
            }
            false
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// NREL SPA paper (Reda & Andreas 2004/2008, NREL/TP-560-34302, table A5.1): 2003-10-17
    /// 12:30:30 local time at −7 h (19:30:30 UTC), lat 39.742476°, lon −105.1786° → topocentric
    /// zenith 50.11162°, azimuth 194.34024°. Our geometric position differs by atmospheric
    /// refraction (SPA's at 820 mbar, 11 °C: 0.0166° · (820/1010)(283/284)/tan(39.9°) ≈ 0.016°),
    /// the sun's parallax (8.8″ sin Z ≈ 0.002°) and Meeus's low-precision series (≤ 0.01°):
    /// tolerance 0.03° on the zenith. The azimuth is not affected by refraction; 0.03° too.
    #[test]
    fn spa_reference_example() {
        let t = UtcTime {
            year: 2003,
            month: 10,
            day: 17,
            hour: 19.0 + 30.0 / 60.0 + 30.0 / 3600.0,
        };
        let p = sun_position(&t, 39.742476, -105.1786);
        assert!(
            (p.zenith_deg - 50.11162).abs() < 0.03,
            "zenith {}",
            p.zenith_deg
        );
        assert!(
            (p.azimuth_deg - 194.34024).abs() < 0.03,
            "azimuth {}",
            p.azimuth_deg
        );
    }

    /// Local to UTC across the year's end and a leap day; impossible dates refused.
    #[test]
    fn local_time_to_utc() {
        let t = UtcTime::from_local(2024, 12, 31, 20, 30, -7.0).unwrap();
        assert_eq!((t.year, t.month, t.day), (2025, 1, 1));
        assert!((t.hour - 3.5).abs() < 1e-12);
        let t = UtcTime::from_local(2024, 3, 1, 2, 0, 5.5).unwrap();
        assert_eq!((t.year, t.month, t.day), (2024, 2, 29));
        assert!((t.hour - 20.5).abs() < 1e-12);
        // The same instant gives the same Julian day whatever the offset.
        let a = UtcTime::from_local(2023, 7, 4, 12, 0, 0.0).unwrap();
        let b = UtcTime::from_local(2023, 7, 4, 5, 0, -7.0).unwrap();
        assert_eq!(julian_day(&a), julian_day(&b));
        assert!(UtcTime::from_local(2023, 2, 29, 12, 0, 0.0).is_none());
        assert!(UtcTime::from_local(2023, 4, 31, 12, 0, 0.0).is_none());
        assert!(UtcTime::from_local(2023, 4, 30, 24, 0, 0.0).is_none());
        assert!(UtcTime::from_local(2023, 4, 30, 12, 0, 15.0).is_none());
    }

    /// Meeus example 7.a: 1957 October 4.81 → JD 2436116.31.
    #[test]
    fn julian_day_meeus() {
        let t = UtcTime {
            year: 1957,
            month: 10,
            day: 4,
            hour: 0.81 * 24.0,
        };
        assert!((julian_day(&t) - 2_436_116.31).abs() < 1e-6);
    }

    /// Flat ground: the formula by hand, 990 sin(e) − 30 under a clear sky, scaled by
    /// 1 − 0.75 N^3.4 under clouds; 0 at night or when shaded.
    #[test]
    fn flat_shortwave_clear_sky() {
        let sin_e = 0.5_f64;
        assert!((shortwave_w_per_m2(sin_e, 0.0) - (990.0 * 0.5 - 30.0)).abs() < 1e-9);
        let f = 1.0 - 0.75 * 0.5_f64.powf(3.4);
        assert!((shortwave_w_per_m2(sin_e, 0.5) - 465.0 * f).abs() < 1e-9);
        assert_eq!(shortwave_w_per_m2(0.0, 0.0), 0.0);
        assert_eq!(shortwave_w_per_m2(-0.3, 0.0), 0.0);
        // Flat surface: cos i is cos Z whatever the aspect.
        let sun = SunPosition {
            zenith_deg: 60.0,
            azimuth_deg: 123.0,
        };
        assert!((cos_incidence(&sun, 0.0, 1.0) - 0.5).abs() < 1e-12);
        // A 30° slope facing the sun, sun at zenith 60°: normal 30° from the sun.
        let facing = cos_incidence(&sun, 30f64.to_radians(), 123f64.to_radians());
        assert!((facing - 30f64.to_radians().cos()).abs() < 1e-12);
    }

    /// A wall east of a low plain shades the plain under a low morning sun in the east,
    /// never the wall's top, and nothing at noon with the sun overhead.
    #[test]
    fn shade_of_a_wall() {
        let (rows, cols) = (3, 10);
        let mut t = vec![0.0; rows * cols];
        for r in 0..rows {
            t[r * cols + 9] = 100.0;
        }
        let low_east = SunPosition {
            zenith_deg: 80.0,
            azimuth_deg: 90.0,
        };
        let s = shade(&t, rows, cols, 10.0, &low_east);
        // Cell 0 is 90 m from the wall: the ray is at 90 tan(10°) = 15.9 m < 100 m.
        assert!(s[cols]);
        assert!(!s[cols + 9]);
        let noon = SunPosition {
            zenith_deg: 0.0,
            azimuth_deg: 180.0,
        };
        assert!(shade(&t, rows, cols, 10.0, &noon).iter().all(|&x| !x));
        let night = SunPosition {
            zenith_deg: 100.0,
            azimuth_deg: 0.0,
        };
        assert!(shade(&t, rows, cols, 10.0, &night).iter().all(|&x| x));
    }
}
