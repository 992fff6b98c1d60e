//! Diurnal slope flows and non-neutral stability for the first guess, after WindNinja's
//! diurnal model (Forthofer, Shannon & Butler 2009, "Simulating diurnally driven slope winds
//! with WindNinja", 8th Symp. Fire and Forest Meteorology; Forthofer, Butler & Wagenbrenner
//! 2014, Int. J. Wildland Fire 23:969–981). Written from the cited equations.
//!
//! Per column (cell of the DEM), on the CPU before the solve, so every backend gets the same
//! first guess:
//!
//! 1. Slope β and aspect (downslope azimuth) by central differences of the terrain.
//! 2. Sun position and shortwave K↓ on the slope, terrain shading ([`super::solar`]).
//! 3. Net radiation and sensible heat flux (Holtslag & van Ulden 1983, eqs. 8, 11 and the
//!    Bowen-ratio split), T the air temperature (K), N the cloud fraction, σ = 5.67e-8:
//!    `Q* = ((1 − albedo) K↓ + c1 T⁶ − σ T⁴ + c2 N) / (1 + c3)`, c1 = 5.31e-13, c2 = 60, c3 = 0.12;
//!    `H = B/(1 + B) · (1 − cg) Q*` (W/m²), with albedo 0.25, Bowen ratio B = 1, ground heat
//!    fraction cg = 0.15 (WindNinja's grass defaults).
//! 4. Friction velocity and Monin–Obukhov length by fixed-point iteration (CALMET's procedure):
//!    `u* = κ U / (ln(z/z0) − ψm(z/L) + ψm(z0/L))`, `L = −ρ cp T u*³ / (κ g H)`, κ = 0.4, from the
//!    mean station speed U at its mean height z (floored at 1.788 m/s as WindNinja does, so
//!    that calm nights do not give u* → 0). ρ = 101325/(287.05 T) kg/m³, cp = 1005 J/(kg K).
//!    ψm: unstable (L < 0) Paulson (1970) `2 ln((1+x)/2) + ln((1+x²)/2) − 2 atan x + π/2`,
//!    x = (1 − 16 z/L)^¼; stable (L > 0) van Ulden & Holtslag (1985) `−17 (1 − e^{−0.29 z/L})`,
//!    which is Businger–Dyer's −5 z/L to first order (17 · 0.29 = 4.93).
//! 5. Slope flow speed S (m/s) along the fall line (Forthofer et al. 2009, after Mahrt 1982):
//!    by day (H > 0, upslope) `S = (H g Δh / ((Cd + E) ρ cp T))^⅓` with Cd = E = 0.2, Δh the
//!    height above the valley bottom reached by walking down the fall line (steps of 1.5 cells,
//!    bilinear terrain, stop when the terrain stops falling or at the edge); by night (H < 0,
//!    downslope) `S = (−H g x sin α / (ρ cp T (Cd + E)))^⅓ (1 − e^{−x/Le})^⅓`, Cd = 1e-4,
//!    E = 0.01, x the distance (3-D) up to the ridge top, sin α = min(Δh/x, local slope sine),
//!    Le = 0.05 Δh/(Cd + E). Zero on flat ground (β = 0).
//! 6. The flow fills a layer of depth 0.05 Δh above the ground (WindNinja's flow-thickness
//!    ratio); here also at least the lowest fluid cell of the column, because a layer thinner
//!    than the first cell would never be seen by the grid. Its horizontal part S cos β is added
//!    to u0, v0 of the faces in the layer (uphill by day, downhill by night); w0 stays 0 (the
//!    solver makes w).
//!
//! Front ends: `geofield wind --diurnal` / `--non-neutral-stability` (and WindNinja's `.cfg`
//! keys, [`super::io::read_ninja_cfg`]), Python `geofield.wind(diurnal=..., ...)`.
//!
//! # References
//!
//! - Forthofer, J. M., Butler, B. W., Wagenbrenner, N. S. (2014). A comparison of three
//!   approaches for simulating fine-scale surface winds in support of wildland fire
//!   management. Part I. Model formulation and comparison against measurements. Int. J.
//!   Wildland Fire 23, 969–981. doi:10.1071/WF12089 (WindNinja's diurnal and stability options).
//! - Forthofer, J. M., Shannon, K. S., Butler, B. W. (2009). Simulating diurnally driven slope
//!   winds with WindNinja. 8th Symposium on Fire and Forest Meteorology, Kalispell, MT.
//! - Holtslag, A. A. M., van Ulden, A. P. (1983). A simple scheme for daytime estimates of the
//!   surface fluxes from routine weather data. J. Climate Appl. Meteor. 22, 517–529.
//!   `doi:10.1175/1520-0450(1983)022<0517:ASSFDE>2.0.CO;2`
//! - Mahrt, L. (1982). Momentum balance of gravity flows. J. Atmos. Sci. 39, 2701–2711.
//!   `doi:10.1175/1520-0469(1982)039<2701:MBOGF>2.0.CO;2`
//! - Paulson, C. A. (1970). The mathematical representation of wind speed and temperature
//!   profiles in the unstable atmospheric surface layer. J. Appl. Meteor. 9, 857–861.
//!   `doi:10.1175/1520-0450(1970)009<0857:TMROWS>2.0.CO;2`
//! - van Ulden, A. P., Holtslag, A. A. M. (1985). Estimation of atmospheric boundary layer
//!   parameters for diffusion applications. J. Climate Appl. Meteor. 24, 1196–1207.
//!   `doi:10.1175/1520-0450(1985)024<1196:EOABLP>2.0.CO;2`

use super::solar::{self, SunPosition, UtcTime};
use crate::GeofieldError;

/// Von Kármán's constant.
pub const KARMAN: f64 = 0.4;
/// Gravity (m/s²).
pub const GRAVITY: f64 = 9.81;
/// Specific heat of air at constant pressure (J/(kg K)).
pub const CP: f64 = 1005.0;
/// WindNinja's floor on the input speed for u* (4 mph in m/s).
pub const MIN_SPEED_M_PER_S: f64 = 1.788;

/// Inputs of the diurnal model. Defaults of the surface: albedo 0.25, Bowen ratio 1, ground
/// heat fraction 0.15.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Diurnal {
    /// Date and time of the simulation, UTC (local time minus the UTC offset).
    pub time_utc: UtcTime,
    /// Air temperature near the ground (°C), in (−90, 60).
    pub air_temp_c: f64,
    /// Cloud cover (%), 0–100.
    pub cloud_cover_pct: f64,
    /// Latitude of the domain centre (°, north positive).
    pub lat_deg: f64,
    /// Longitude of the domain centre (°, east positive).
    pub lon_deg: f64,
    /// Add the slope flows to the first guess (WindNinja `diurnal_winds`). Default true.
    pub slope_flows: bool,
}

/// Air temperature and cloud cover per column (row 0 north) from a weather model's grid
/// ([`super::gridded::weather_columns`]); `None`: [`Diurnal`]'s uniform value.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ColumnWeather {
    /// °C.
    pub air_temp_c: Option<Vec<f64>>,
    /// %.
    pub cloud_cover_pct: Option<Vec<f64>>,
}

/// Settles where the air temperature and the cloud cover come from when the first guess is a
/// weather model's grid `g`: a value of `d` that is NaN (not given) is taken from the grid
/// (`d` then holds the grid's mean, for the checks and the report; the columns use the grid's
/// own values); a value given keeps the model uniform and drops the grid's field. Returns a
/// note for each field dropped; an error when a value is neither given nor in the grid.
pub fn weather_from_grid(
    d: &mut Diurnal,
    g: &mut super::gridded::InitGrid,
) -> Result<Vec<String>, GeofieldError> {
    let mut notes = Vec::new();
    let source = g.source.clone();
    for (value, field, what, name) in [
        (
            &mut d.air_temp_c,
            &mut g.air_temp_c,
            "air temperature",
            "air_temp_c",
        ),
        (
            &mut d.cloud_cover_pct,
            &mut g.cloud_cover_pct,
            "cloud cover",
            "cloud_cover_pct",
        ),
    ] {
        match (value.is_nan(), field.as_ref()) {
            (true, Some(f)) => {
                let finite: Vec<f64> = f.iter().copied().filter(|v| v.is_finite()).collect();
                if finite.is_empty() {
                    return Err(GeofieldError::Invalid(format!(
                        "{source}: the {what} is missing everywhere"
                    )));
                }
                *value = finite.iter().sum::<f64>() / finite.len() as f64;
            }
            (true, None) => {
                return Err(GeofieldError::InvalidParameter {
                    name: name.into(),
                    value: "none".into(),
                    expected: format!(
                        "the diurnal model's {what}: give it, or a gridded wind that has it                          ({source} has none)"
                    ),
                });
            }
            (false, Some(_)) => {
                notes.push(format!(
                    "the {what} given is used everywhere; {source}'s is not"
                ));
                *field = None;
            }
            (false, None) => {}
        }
    }
    Ok(notes)
}

/// Per column results of the model, row 0 north.
#[derive(Debug, Clone)]
pub struct DiurnalColumns {
    /// Horizontal slope-flow components (m/s).
    pub u_m_per_s: Vec<f64>,
    pub v_m_per_s: Vec<f64>,
    /// Depth of the slope-flow layer above the ground (m).
    pub depth_m: Vec<f64>,
    /// 1/L (m⁻¹), 0 for neutral.
    pub inv_l_per_m: Vec<f64>,
    pub summary: DiurnalSummary,
}

/// What the diurnal model found, for the report.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct DiurnalSummary {
    pub sun_zenith_deg: f64,
    pub sun_azimuth_deg: f64,
    /// K↓ on flat unshaded ground (W/m²).
    pub shortwave_flat_w_per_m2: f64,
    /// Mean sensible heat flux over the columns (W/m², positive upward: daytime).
    pub heat_flux_mean_w_per_m2: f64,
    /// Monin–Obukhov length of the mean heat flux (m; ±1e6 ≈ neutral).
    pub obukhov_length_m: f64,
    /// Friction velocity of the mean heat flux (m/s).
    pub friction_velocity_m_per_s: f64,
    /// Largest slope-flow speed added (m/s).
    pub max_slope_flow_m_per_s: f64,
    /// Cells in the terrain's shadow (sun up) or all cells (night).
    pub shaded_cells: usize,
    /// The mean air temperature (°C) and cloud cover (%) over the columns, and whether each
    /// came per column from a weather model's grid.
    pub air_temp_mean_c: f64,
    pub cloud_cover_mean_pct: f64,
    pub air_temp_gridded: bool,
    pub cloud_cover_gridded: bool,
}

/// Check the inputs; errors name the field.
pub fn check(d: &Diurnal) -> Result<(), GeofieldError> {
    let bad = |name: &str, value: f64, expected: &str| {
        Err(GeofieldError::InvalidParameter {
            name: name.into(),
            value: crate::error::shown(value),
            expected: expected.into(),
        })
    };
    let t = &d.time_utc;
    if !(1..=12).contains(&t.month) || !(1..=solar::days_in_month(t.year, t.month)).contains(&t.day)
    {
        return Err(GeofieldError::InvalidParameter {
            name: "diurnal.time_utc".into(),
            value: format!("{}-{}-{}", t.year, t.month, t.day),
            expected: "a valid date".into(),
        });
    }
    if !(t.hour.is_finite() && (0.0..24.0).contains(&t.hour)) {
        return bad("diurnal.time_utc.hour", t.hour, "an hour in [0, 24)");
    }
    if !(d.air_temp_c.is_finite() && d.air_temp_c > -90.0 && d.air_temp_c < 60.0) {
        return bad(
            "air_temp_c",
            d.air_temp_c,
            "an air temperature in (−90, 60) °C",
        );
    }
    if !(d.cloud_cover_pct.is_finite() && (0.0..=100.0).contains(&d.cloud_cover_pct)) {
        return bad(
            "cloud_cover_pct",
            d.cloud_cover_pct,
            "a percentage in [0, 100]",
        );
    }
    if !(d.lat_deg.is_finite() && d.lat_deg.abs() <= 90.0) {
        return bad("lat_deg", d.lat_deg, "a latitude in [−90, 90]");
    }
    if !(d.lon_deg.is_finite() && d.lon_deg.abs() <= 180.0) {
        return bad("lon_deg", d.lon_deg, "a longitude in [−180, 180]");
    }
    Ok(())
}

/// ψm, the stability correction of the log wind profile at ζ = z/L (see the module docs).
pub fn psi_m(zeta: f64) -> f64 {
    if zeta >= 0.0 {
        -17.0 * (1.0 - (-0.29 * zeta).exp())
    } else {
        let x = (1.0 - 16.0 * zeta).powf(0.25);
        2.0 * ((1.0 + x) / 2.0).ln() + ((1.0 + x * x) / 2.0).ln() - 2.0 * x.atan()
            + std::f64::consts::FRAC_PI_2
    }
}

/// The stability-corrected log law's shape: ln(z/z0) − ψm(z/L) + ψm(z0/L), `inv_l` = 1/L.
pub fn log_shape(z_m: f64, z0_m: f64, inv_l: f64) -> f64 {
    (z_m / z0_m).ln() - psi_m(z_m * inv_l) + psi_m(z0_m * inv_l)
}

/// Air density (kg/m³) at sea-level pressure and `t_k`.
pub fn air_density(t_k: f64) -> f64 {
    101_325.0 / (287.05 * t_k)
}

/// Sensible heat flux (W/m²) from K↓, the air temperature (K) and cloud fraction.
pub fn heat_flux(shortwave: f64, t_k: f64, cloud: f64) -> f64 {
    const ALBEDO: f64 = 0.25;
    const BOWEN: f64 = 1.0;
    const CG: f64 = 0.15;
    let q_star = ((1.0 - ALBEDO) * shortwave + 5.31e-13 * t_k.powi(6) - 5.67e-8 * t_k.powi(4)
        + 60.0 * cloud)
        / 1.12;
    BOWEN / (1.0 + BOWEN) * (1.0 - CG) * q_star
}

/// (u*, 1/L) for heat flux `h` (W/m²), speed `speed` at height `z_m`, roughness `z0_m`, air at
/// `t_k`. Fixed-point iteration to 1e-6 relative change of u* (at most 200 steps).
pub fn obukhov(h: f64, speed: f64, z_m: f64, z0_m: f64, t_k: f64) -> (f64, f64) {
    let speed = speed.max(MIN_SPEED_M_PER_S);
    let z = z_m.max(1.5 * z0_m);
    let mut u_star = KARMAN * speed / log_shape(z, z0_m, 0.0);
    if h == 0.0 {
        return (u_star, 0.0);
    }
    let rho_cp_t = air_density(t_k) * CP * t_k;
    let mut inv_l = 0.0;
    for _ in 0..200 {
        inv_l = -(KARMAN * GRAVITY * h) / (rho_cp_t * u_star.powi(3));
        let next = KARMAN * speed / log_shape(z, z0_m, inv_l).max(1e-3);
        let done = (1.0 - next / u_star).abs() < 1e-6;
        // Damped update: the stable branch can oscillate.
        u_star = 0.5 * (u_star + next);
        if done {
            break;
        }
    }
    (u_star, inv_l)
}

/// Slope (rad) and aspect (downslope azimuth, rad clockwise from north) of column (r, c),
/// and the unit uphill vector (east, north).
fn slope_aspect(
    t: &[f64],
    rows: usize,
    cols: usize,
    dx: f64,
    r: usize,
    c: usize,
) -> (f64, f64, f64, f64) {
    let at = |r: usize, c: usize| t[r * cols + c];
    let (c0, c1) = (c.saturating_sub(1), (c + 1).min(cols - 1));
    let (r0, r1) = (r.saturating_sub(1), (r + 1).min(rows - 1));
    let dhdx = if c1 > c0 {
        (at(r, c1) - at(r, c0)) / ((c1 - c0) as f64 * dx)
    } else {
        0.0
    };
    // Row 0 is north: north is r − 1.
    let dhdy = if r1 > r0 {
        (at(r0, c) - at(r1, c)) / ((r1 - r0) as f64 * dx)
    } else {
        0.0
    };
    let g = dhdx.hypot(dhdy);
    if g == 0.0 {
        return (0.0, 0.0, 0.0, 0.0);
    }
    let aspect = (-dhdx).atan2(-dhdy).rem_euclid(std::f64::consts::TAU);
    (g.atan(), aspect, dhdx / g, dhdy / g)
}

/// Bilinear terrain at fractional (row, col); None outside.
fn terrain_at(t: &[f64], rows: usize, cols: usize, r: f64, c: f64) -> Option<f64> {
    if !(r >= 0.0 && c >= 0.0 && r <= (rows - 1) as f64 && c <= (cols - 1) as f64) {
        return None;
    }
    let (r0, c0) = (r.floor() as usize, c.floor() as usize);
    let (r1, c1) = ((r0 + 1).min(rows - 1), (c0 + 1).min(cols - 1));
    let (fr, fc) = (r - r0 as f64, c - c0 as f64);
    let at = |r: usize, c: usize| t[r * cols + c];
    Some(
        (1.0 - fr) * ((1.0 - fc) * at(r0, c0) + fc * at(r0, c1))
            + fr * ((1.0 - fc) * at(r1, c0) + fc * at(r1, c1)),
    )
}

/// Walk from (r, c) along the unit direction (east, north) while the terrain keeps rising
/// (`uphill`) or falling; (height change, 3-D distance) to where it stops.
#[allow(clippy::too_many_arguments)]
fn walk(
    t: &[f64],
    rows: usize,
    cols: usize,
    dx: f64,
    r: usize,
    c: usize,
    dir: (f64, f64),
    uphill: bool,
) -> (f64, f64) {
    const STEP: f64 = 1.5;
    let h0 = t[r * cols + c];
    let (mut last, mut n) = (h0, 0usize);
    while n < 4 * (rows + cols) {
        let (rr, cc) = (
            r as f64 - dir.1 * STEP * (n + 1) as f64,
            c as f64 + dir.0 * STEP * (n + 1) as f64,
        );
        let Some(h) = terrain_at(t, rows, cols, rr, cc) else {
            break;
        };
        if (uphill && h <= last) || (!uphill && h >= last) {
            break;
        }
        last = h;
        n += 1;
    }
    let horiz = STEP * n as f64 * dx;
    let dh = (last - h0).abs();
    (dh, horiz.hypot(dh))
}

/// A per-column field of `n` values (else none) and its mean (else `uniform`).
fn per_column(f: &Option<Vec<f64>>, n: usize, uniform: f64) -> (Option<&[f64]>, f64) {
    let f = f.as_deref().filter(|f| f.len() == n);
    let mean = f.map_or(uniform, |f| f.iter().sum::<f64>() / n.max(1) as f64);
    (f, mean)
}

/// Run steps 1–6 of the module docs on `terrain_m` (rows × cols, square cells `dx_m`), with
/// the stations' mean speed `speed` at mean height `z_m` and roughness `z0_m`; the air
/// temperature and cloud cover of each column from `weather` where it has them, else `d`'s.
#[allow(clippy::too_many_arguments)]
pub fn columns(
    d: &Diurnal,
    weather: &ColumnWeather,
    terrain_m: &[f64],
    rows: usize,
    cols: usize,
    dx_m: f64,
    speed: f64,
    z_m: f64,
    z0_m: f64,
) -> DiurnalColumns {
    let sun: SunPosition = solar::sun_position(&d.time_utc, d.lat_deg, d.lon_deg);
    let n = rows * cols;
    let (temps, t_mean_c) = per_column(&weather.air_temp_c, n, d.air_temp_c);
    let (clouds, cloud_mean_pct) = per_column(&weather.cloud_cover_pct, n, d.cloud_cover_pct);
    // Column i's cloud fraction, air temperature (K) and ρ c_p T.
    let cloud_at = |i: usize| clouds.map_or(d.cloud_cover_pct, |c| c[i]) / 100.0;
    let t_k_at = |i: usize| temps.map_or(d.air_temp_c, |t| t[i]) + 273.15;
    let t_k = t_mean_c + 273.15;
    let cloud = cloud_mean_pct / 100.0;
    let shaded = solar::shade(terrain_m, rows, cols, dx_m, &sun);
    let mut out = DiurnalColumns {
        u_m_per_s: vec![0.0; n],
        v_m_per_s: vec![0.0; n],
        depth_m: vec![0.0; n],
        inv_l_per_m: vec![0.0; n],
        summary: DiurnalSummary {
            sun_zenith_deg: sun.zenith_deg,
            sun_azimuth_deg: sun.azimuth_deg,
            shortwave_flat_w_per_m2: solar::shortwave_w_per_m2(
                sun.zenith_deg.to_radians().cos(),
                cloud,
            ),
            shaded_cells: shaded.iter().filter(|&&s| s).count(),
            air_temp_mean_c: t_mean_c,
            cloud_cover_mean_pct: cloud_mean_pct,
            air_temp_gridded: temps.is_some(),
            cloud_cover_gridded: clouds.is_some(),
            ..Default::default()
        },
    };
    let mut h_sum = 0.0;
    for r in 0..rows {
        for c in 0..cols {
            let i = r * cols + c;
            let (beta, aspect, ex, ny) = slope_aspect(terrain_m, rows, cols, dx_m, r, c);
            let cos_i = if shaded[i] {
                0.0
            } else {
                solar::cos_incidence(&sun, beta, aspect)
            };
            let (cloud, t_k) = (cloud_at(i), t_k_at(i));
            let rho_cp_t = air_density(t_k) * CP * t_k;
            let h = heat_flux(solar::shortwave_w_per_m2(cos_i, cloud), t_k, cloud);
            h_sum += h;
            out.inv_l_per_m[i] = obukhov(h, speed, z_m, z0_m, t_k).1;
            if !d.slope_flows || beta == 0.0 || h == 0.0 {
                continue;
            }
            let s = if h > 0.0 {
                let (dh, _) = walk(terrain_m, rows, cols, dx_m, r, c, (-ex, -ny), false);
                out.depth_m[i] = 0.05 * dh;
                (h * GRAVITY * dh / (0.4 * rho_cp_t)).cbrt()
            } else {
                let (dh, x) = walk(terrain_m, rows, cols, dx_m, r, c, (ex, ny), true);
                out.depth_m[i] = 0.05 * dh;
                if x <= dx_m / 1000.0 {
                    0.0
                } else {
                    let (cd, e) = (1e-4, 0.01);
                    let sin_a = (dh / x).min(beta.sin());
                    let le = 0.05 * dh / (cd + e);
                    (-h * GRAVITY * x * sin_a / (rho_cp_t * (cd + e))).cbrt()
                        * (1.0 - (-x / le).exp()).cbrt()
                }
            };
            let sign = if h > 0.0 { 1.0 } else { -1.0 };
            let horiz = s * beta.cos();
            out.u_m_per_s[i] = sign * horiz * ex;
            out.v_m_per_s[i] = sign * horiz * ny;
            out.summary.max_slope_flow_m_per_s = out.summary.max_slope_flow_m_per_s.max(s);
        }
    }
    let h_mean = h_sum / n.max(1) as f64;
    let (u_star, inv_l) = obukhov(h_mean, speed, z_m, z0_m, t_k);
    out.summary.heat_flux_mean_w_per_m2 = h_mean;
    out.summary.friction_velocity_m_per_s = u_star;
    out.summary.obukhov_length_m = if inv_l == 0.0 {
        1e6
    } else {
        (1.0 / inv_l).clamp(-1e6, 1e6)
    };
    out
}

#[cfg(test)]
#[path = "diurnal_tests.rs"]
mod tests;
