//! Tests of the diurnal model ([`super`]): ψ functions against their integral definition,
//! the stability-corrected log law's neutral limit, the heat flux's sign by day and by night,
//! and the slope flow's direction on a cone and its absence on flat ground.

#![allow(clippy::unwrap_used)]

use super::*;
use crate::wind::grid::{Levels, WindGrid};
use crate::wind::{Profile, Station, WindOptions};
use geofield_core::GridSpec;

/// ψm(ζ) = ∫₀^ζ (1 − φm(s)) / s ds (the definition; Paulson 1970), by composite Simpson with
/// `n` intervals. Unstable φm = (1 − 16 s)^(−¼) (Businger–Dyer); stable φm of van Ulden &
/// Holtslag (1985), 1 + 4.93 s e^(−0.29 s) (the derivative of their ψm). The integrand is
/// smooth on the interval (its limit at 0 is −4 unstable, −4.93 stable).
fn psi_by_integral(zeta: f64, n: usize) -> f64 {
    let g = |s: f64| {
        if s == 0.0 {
            if zeta < 0.0 { -4.0 } else { -17.0 * 0.29 }
        } else if s < 0.0 {
            (1.0 - (1.0 - 16.0 * s).powf(-0.25)) / s
        } else {
            -17.0 * 0.29 * (-0.29 * s).exp()
        }
    };
    let h = zeta / n as f64;
    let mut sum = g(0.0) + g(zeta);
    for i in 1..n {
        sum += if i % 2 == 1 { 4.0 } else { 2.0 } * g(i as f64 * h);
    }
    sum * h / 3.0
}

#[test]
fn psi_m_zero_at_neutral() {
    assert_eq!(psi_m(0.0), 0.0);
    assert_eq!(psi_m(-0.0), 0.0);
}

/// Paulson's closed form equals the integral of 1 − φm over ln ζ. Simpson's error is
/// (ζ/180) h⁴ max|g⁗|; with h = |ζ|/2000 ≤ 1e-3 and |g⁗| < 1e6 on [−2, 0] (g is analytic,
/// its nearest singularity at s = 1/16 > 0) it is below 1e-8.
#[test]
fn psi_m_unstable_is_paulson_integral() {
    for zeta in [-0.01, -0.1, -0.5, -1.0, -2.0] {
        let closed = psi_m(zeta);
        let integral = psi_by_integral(zeta, 2000);
        assert!(
            (closed - integral).abs() < 1e-8,
            "ζ {zeta}: closed {closed}, integral {integral}"
        );
        // Unstable: ψm > 0 (the profile is flatter than the log law).
        assert!(closed > 0.0);
    }
    // Paulson's value at ζ = −1 by hand: x = 17^¼.
    let x = 17f64.powf(0.25);
    let hand = 2.0 * ((1.0 + x) / 2.0).ln() + ((1.0 + x * x) / 2.0).ln() - 2.0 * x.atan()
        + std::f64::consts::FRAC_PI_2;
    assert!((psi_m(-1.0) - hand).abs() < 1e-12);
    assert!((hand - 1.1158).abs() < 1e-3, "{hand}");
}

/// Stable side: −17 (1 − e^(−0.29 ζ)), which is −4.93 ζ (Businger–Dyer's −5 ζ to 1.4 %) to first
/// order with a remainder of at most 17 (0.29 ζ)² / 2 (1 − e^(−x) ≥ x − x²/2), and bounded
/// by −17 for strong stability (where −5 ζ would stop all turbulence).
#[test]
fn psi_m_stable_limits() {
    for zeta in [1e-4, 1e-3, 0.01, 0.1, 0.5] {
        let p = psi_m(zeta);
        let bound = 17.0 * (0.29 * zeta).powi(2) / 2.0 + 1e-15;
        assert!((p + 4.93 * zeta).abs() <= bound, "ζ {zeta}: ψ {p}");
        assert!(
            (p / (-5.0 * zeta) - 1.0).abs() < 0.014 + 0.29 * zeta,
            "ζ {zeta}"
        );
        assert!((p - psi_by_integral(zeta, 2000)).abs() < 1e-10);
    }
    assert!((psi_m(100.0) + 17.0).abs() < 17.0 * (-29f64).exp() + 1e-12);
    // Monotone: stronger stability, more negative ψm.
    assert!(psi_m(2.0) < psi_m(1.0) && psi_m(1.0) < psi_m(0.1));
}

/// |ψm'(ζ)| ≤ 4.93 on both sides near 0 (unstable: 1 − φm ≤ 4|ζ| since (1 + a)^(−¼) ≥ 1 − a/4;
/// stable: 4.93 e^(−0.29ζ)), so |log_shape − ln(z/z0)| ≤ 4.93 |1/L| (z − z0), linearly in 1/L.
#[test]
fn log_shape_reduces_to_neutral_log_law() {
    let (z0, z): (f64, f64) = (0.1, 10.0);
    let neutral = (z / z0).ln();
    assert_eq!(log_shape(z, z0, 0.0), neutral);
    for inv_l in [1e-2, 1e-4, 1e-6, 1e-8] {
        for s in [1.0, -1.0] {
            let d = log_shape(z, z0, s * inv_l) - neutral;
            assert!(
                d.abs() <= 4.93 * inv_l * (z - z0) * (1.0 + 1e-9),
                "1/L {inv_l}: {d}"
            );
            // Stable: more shear (larger shape); unstable: less.
            assert!(d * s > 0.0, "1/L {}: {d}", s * inv_l);
        }
    }
}

/// Above the reference height (z > z_ref > e z0) a stable layer (L > 0) gives a larger
/// profile factor than the neutral log law, an unstable one a smaller (Stull 1988 §9.7).
#[test]
fn profile_factor_orders_by_stability() {
    use crate::wind::Stability;
    use crate::wind::init::profile_factor;
    let p = Profile::Log { roughness_m: 0.1 };
    let f = |inv_l| profile_factor(p, Stability::D, 50.0, 10.0, 0.0, 0.0, inv_l);
    let (stable, neutral, unstable) = (f(1.0 / 50.0), f(0.0), f(-1.0 / 50.0));
    assert!((neutral - (500f64).ln() / (100f64).ln()).abs() < 1e-12);
    assert!(
        stable > neutral && neutral > unstable,
        "{stable} {neutral} {unstable}"
    );
}

const T_C: f64 = 20.0;

fn diurnal(hour_utc: f64, cloud_pct: f64) -> Diurnal {
    Diurnal {
        time_utc: UtcTime {
            year: 2024,
            month: 6,
            day: 21,
            hour: hour_utc,
        },
        air_temp_c: T_C,
        cloud_cover_pct: cloud_pct,
        lat_deg: 40.0,
        lon_deg: 0.0,
        slope_flows: true,
    }
}
const NOON_UTC: f64 = 12.0;
const MIDNIGHT_UTC: f64 = 0.0;

const N: usize = 41;
const DX: f64 = 25.0;
const CONE_H: f64 = 200.0;
const CONE_R: f64 = 350.0;

/// A cone of height 200 m and radius 350 m (slope 30°) on a plain at 100 m, apex at the
/// centre of a 41 × 41 plan of 25 m cells.
fn cone() -> Vec<f64> {
    let c = (N / 2) as f64;
    let mut t = Vec::with_capacity(N * N);
    for r in 0..N {
        for col in 0..N {
            let d = DX * (r as f64 - c).hypot(col as f64 - c);
            t.push(100.0 + CONE_H * (1.0 - d / CONE_R).max(0.0));
        }
    }
    t
}

/// Dot product of the flow at cell i with the direction (east, north) to the apex.
fn toward_apex(dc: &DiurnalColumns, i: usize) -> f64 {
    let c = (N / 2) as f64;
    let (r, col) = ((i / N) as f64, (i % N) as f64);
    // Row 0 is north: the apex is north of the cell when r > c.
    dc.u_m_per_s[i] * (c - col) + dc.v_m_per_s[i] * (r - c)
}

/// Noon, clear sky: the heat flux on flat ground is Holtslag–van Ulden's by hand,
/// K↓ = 990 cos Z − 30, H = ½ · 0.85 · (0.75 K↓ + 5.31e-13 T⁶ − σT⁴) / 1.12 > 0, the sun at
/// zenith |φ − δ| = 40° − 23.44° (summer solstice, solar noon ≈ 12:02 UTC at 0° E: the
/// hour angle 0.4° moves Z by < 0.01°), and the layer unstable (L < 0).
#[test]
fn heat_flux_positive_at_noon_negative_at_night() {
    let flat = vec![100.0; N * N];
    let t_k = T_C + 273.15;
    let longwave = 5.31e-13 * t_k.powi(6) - 5.67e-8 * t_k.powi(4);
    let day = columns(
        &diurnal(NOON_UTC, 0.0),
        &ColumnWeather::default(),
        &flat,
        N,
        N,
        DX,
        3.0,
        10.0,
        0.1,
    )
    .summary;
    assert!(
        (day.sun_zenith_deg - (40.0 - 23.44)).abs() < 0.05,
        "{}",
        day.sun_zenith_deg
    );
    let k = 990.0 * day.sun_zenith_deg.to_radians().cos() - 30.0;
    let h_day = 0.5 * 0.85 * (0.75 * k + longwave) / 1.12;
    assert!(h_day > 0.0);
    assert!((day.heat_flux_mean_w_per_m2 - h_day).abs() < 1e-9 * h_day);
    assert!(day.obukhov_length_m < 0.0);
    assert_eq!(day.shaded_cells, 0);

    // Midnight: no sun, all cells "shaded", H = ½ · 0.85 · (longwave + 60 N) / 1.12 < 0 for
    // any cloud cover at 20 °C (the longwave balance is −81 W/m², clouds add at most 60).
    for cloud in [0.0, 50.0, 100.0] {
        let night = columns(
            &diurnal(MIDNIGHT_UTC, cloud),
            &ColumnWeather::default(),
            &flat,
            N,
            N,
            DX,
            3.0,
            10.0,
            0.1,
        );
        let s = night.summary;
        assert!(s.sun_zenith_deg > 90.0);
        let h = 0.5 * 0.85 * (longwave + 0.6 * cloud) / 1.12;
        assert!(h < 0.0 && s.heat_flux_mean_w_per_m2 <= 0.0, "{cloud}: {h}");
        assert!((s.heat_flux_mean_w_per_m2 - h).abs() < 1e-9 * h.abs());
        assert!(s.obukhov_length_m > 0.0);
        assert!(night.inv_l_per_m.iter().all(|&x| x > 0.0));
        assert_eq!(s.shaded_cells, N * N);
    }
}

/// Flat ground: no slope, no slope flow, by day and by night.
#[test]
fn no_slope_flow_on_flat_ground() {
    let flat = vec![250.0; N * N];
    for hour in [NOON_UTC, MIDNIGHT_UTC, 6.0, 18.0] {
        let dc = columns(
            &diurnal(hour, 0.0),
            &ColumnWeather::default(),
            &flat,
            N,
            N,
            DX,
            3.0,
            10.0,
            0.1,
        );
        assert!(dc.u_m_per_s.iter().chain(&dc.v_m_per_s).all(|&x| x == 0.0));
        assert_eq!(dc.summary.max_slope_flow_m_per_s, 0.0);
    }
}

/// The cone by day: every slope flow points toward the apex (upslope, H > 0 on every slope
/// under a high sun), every cell well inside the cone's flank has one, and its speed is
/// Forthofer's (H g Δh / (0.4 ρ cp T))^⅓ ≤ that of the largest H and Δh = the cone's height.
/// By night every flow points away from the apex (downslope drainage).
#[test]
fn cone_upslope_by_day_downslope_by_night() {
    let t = cone();
    let c = (N / 2) as f64;
    let flank = |i: usize| {
        let d = DX * ((i / N) as f64 - c).hypot((i % N) as f64 - c);
        d > 2.0 * DX && d < CONE_R - 2.0 * DX
    };
    let n_flank = (0..N * N).filter(|&i| flank(i)).count();
    assert!(n_flank > 300, "{n_flank}");
    for (hour, up) in [(NOON_UTC, 1.0), (MIDNIGHT_UTC, -1.0)] {
        let dc = columns(
            &diurnal(hour, 0.0),
            &ColumnWeather::default(),
            &t,
            N,
            N,
            DX,
            3.0,
            10.0,
            0.1,
        );
        for i in 0..N * N {
            let dot = up * toward_apex(&dc, i);
            let speed = dc.u_m_per_s[i].hypot(dc.v_m_per_s[i]);
            // Pointing along the fall line: cos of the angle to the apex direction ≥ 0.99
            // (central differences on the cone's grid give the exact radial gradient except
            // next to the apex and the foot, which `flank` leaves out).
            let dist = ((i / N) as f64 - c).hypot((i % N) as f64 - c);
            assert!(dot >= 0.0, "hour {hour}, cell {i}: dot {dot}");
            if flank(i) {
                assert!(speed > 0.0, "hour {hour}, cell {i}: no flow");
                assert!(dot / (speed * dist) > 0.99, "hour {hour}, cell {i}");
                assert!(dc.depth_m[i] > 0.0);
            }
        }
        let s = dc.summary;
        assert!(
            s.max_slope_flow_m_per_s > 0.1 && s.max_slope_flow_m_per_s < 10.0,
            "{s:?}"
        );
    }
    let day = columns(
        &diurnal(NOON_UTC, 0.0),
        &ColumnWeather::default(),
        &t,
        N,
        N,
        DX,
        3.0,
        10.0,
        0.1,
    );
    let t_k = T_C + 273.15;
    let h_max = 0.5 * 0.85 * (0.75 * 960.0 + 5.31e-13 * t_k.powi(6) - 5.67e-8 * t_k.powi(4)) / 1.12;
    let bound = (h_max * GRAVITY * CONE_H / (0.4 * air_density(t_k) * CP * t_k)).cbrt();
    assert!(day.summary.max_slope_flow_m_per_s <= bound, "{bound}");
}

/// Through the first guess (stair-step grid, one calm station): the diurnal run minus the plain
/// run is the slope flow, so on the lowest fluid faces west of the apex it blows east (toward
/// the apex) by day and west by night, and nothing changes on the plain away from the cone.
#[test]
fn first_guess_adds_the_slope_flow() {
    let plan = GridSpec {
        x_min_m: 0.0,
        y_max_m: N as f64 * DX,
        cell_size_m: DX,
        cols: N,
        rows: N,
    };
    let grid = WindGrid::new(plan, cone(), &Levels::Uniform { nz: 30, dz_m: 10.0 })
        .unwrap()
        .with_stair_steps();
    let opts = WindOptions::default();
    let coeffs = crate::wind::ops::Coeffs::new(&grid, 1.0, opts.top);
    let st = Station {
        id: "a".into(),
        x_m: 50.0,
        y_m: 50.0,
        height_agl_m: 10.0,
        speed_m_per_s: 1.0,
        direction_deg: 0.0,
        stability: None,
    };
    let plain =
        crate::wind::init::first_guess(&grid, &coeffs, std::slice::from_ref(&st), &opts).unwrap();
    let c = N / 2;
    let row = c; // the row through the apex: the flow there is along x
    for (hour, up) in [(NOON_UTC, 1.0), (MIDNIGHT_UTC, -1.0)] {
        let o = WindOptions {
            diurnal: Some(diurnal(hour, 0.0)),
            ..opts.clone()
        };
        let g =
            crate::wind::init::first_guess(&grid, &coeffs, std::slice::from_ref(&st), &o).unwrap();
        assert!(g.diurnal.is_some());
        let mut moved = 0;
        for i in 1..c - 1 {
            // Lowest open u face between columns i − 1 and i (both on the west flank or plain).
            let k = grid.ground_k[row * N + i - 1].max(grid.ground_k[row * N + i]) as usize;
            let f = (k * N + row) * (N + 1) + i;
            let du = g.u[f] - plain.u[f];
            assert!(up * du >= 0.0, "hour {hour}, face {i}: Δu {du}");
            moved += usize::from(up * du > 0.05);
            // Far from the cone (plain cells on both sides), nothing is added.
            if DX * (c - i) as f64 > CONE_R + 2.0 * DX {
                assert_eq!(du, 0.0);
            }
        }
        assert!(moved >= 8, "hour {hour}: {moved} faces moved");
    }
}

/// Gridded air temperature and cloud cover (a weather model's): the same values in every
/// column give the uniform run bit for bit; on flat ground a column's heat flux depends on its
/// own inputs only, so clear sky in the west and overcast in the east give the two uniform
/// runs' fluxes weighted by their shares, and the summary says what came from the grid.
#[test]
fn gridded_weather_per_column() {
    let flat = vec![100.0; N * N];
    let run = |d: &Diurnal, w: &ColumnWeather| columns(d, w, &flat, N, N, DX, 3.0, 10.0, 0.1);
    let d0 = diurnal(NOON_UTC, 0.0);
    let uniform = run(&d0, &ColumnWeather::default());
    let same = run(
        &d0,
        &ColumnWeather {
            air_temp_c: Some(vec![d0.air_temp_c; N * N]),
            cloud_cover_pct: Some(vec![0.0; N * N]),
        },
    );
    assert_eq!(uniform.inv_l_per_m, same.inv_l_per_m);
    assert_eq!(
        uniform.summary.heat_flux_mean_w_per_m2,
        same.summary.heat_flux_mean_w_per_m2
    );
    assert!(same.summary.air_temp_gridded && same.summary.cloud_cover_gridded);
    assert!(!uniform.summary.air_temp_gridded && !uniform.summary.cloud_cover_gridded);
    let overcast = run(&diurnal(NOON_UTC, 100.0), &ColumnWeather::default());
    let half: Vec<f64> = (0..N * N)
        .map(|i| if i % N < N / 2 { 0.0 } else { 100.0 })
        .collect();
    let mixed = run(
        &d0,
        &ColumnWeather {
            air_temp_c: None,
            cloud_cover_pct: Some(half),
        },
    );
    let (h0, h1) = (
        uniform.summary.heat_flux_mean_w_per_m2,
        overcast.summary.heat_flux_mean_w_per_m2,
    );
    let hm = mixed.summary.heat_flux_mean_w_per_m2;
    assert!(h1 < h0, "overcast {h1} vs clear {h0}");
    // The overcast share of the columns (N odd: N/2 clear columns in each row).
    let f = (N - N / 2) as f64 / N as f64;
    let want = (1.0 - f) * h0 + f * h1;
    assert!((hm - want).abs() <= 1e-12 * h0.abs(), "{hm} vs {want}");
    assert!((mixed.summary.cloud_cover_mean_pct - 100.0 * f).abs() < 1e-12);
    assert!(!mixed.summary.air_temp_gridded && mixed.summary.cloud_cover_gridded);
    // A column's 1/L is the uniform run's of its own sky.
    assert_eq!(mixed.inv_l_per_m[0], uniform.inv_l_per_m[0]);
    assert_eq!(mixed.inv_l_per_m[N - 1], overcast.inv_l_per_m[N - 1]);
}
