//! The WEST pipeline's steps before the adjustment (paper Table 1, steps 1–7): stability
//! interpolation, vertical extrapolation, speed interpolation, speed zero, transparency.
//!
//! - Stations outside the horizontal extent are ignored (and reported).
//! - Step 1: each column takes the stability class of its nearest station (a class is
//!   categorical; it is not averaged).
//! - Step 2: a station's wind at height z above the ground of a cell: power law
//!   u_r (z/z_r)^p (p by the station's class), log law u_r ln(z/z0)/ln(z_r/z0), or uniform;
//!   z is clamped below at `min_height_agl_m` (and at 1.5 z0 for the log law), the direction is
//!   constant with height.
//! - Step 5: at every fluid cell centre, u and v are the 1/d² weighted means of the stations'
//!   extrapolated winds (d the horizontal distance, clamped below at half a cell), over the
//!   64 nearest stations within the radius of influence; a cell with none within the radius
//!   takes the nearest station's wind (CALMET's INTERP rules; WindNinja uses the same
//!   approach with power 1). Stations are found with [`crate::neighbors::knn`].
//! - Steps 6–7: a face between two fluid cells gets the mean of their winds, an open edge face
//!   its cell's; faces touching a solid cell or the ground get 0 (no first-guess flux through
//!   walls: the adjustment cannot remove it); w0 = 0.
//! - Cut cells ([`super::cut`]): each open x or y face takes the mean of its two columns'
//!   interpolated winds (one on open edges) at the face's own height above the true ground:
//!   the middle of the face's open part above the ground at the face's centre (the surface of
//!   `cut`), not a cell centre's height above a stair step. That is the fluid's velocity on the
//!   open part; the flux is aperture × area × u.

use rayon::prelude::*;

use super::IgnoredStation;
use super::cut::Surface;
use super::grid::WindGrid;
use super::ops::Coeffs;
use super::params::{Profile, Stability, Station, WindOptions};
use crate::GeofieldError;
use crate::neighbors::{IndexKind, KnnQuery, knn_cpu as knn};

/// Nearest stations considered per column.
pub const MAX_STATIONS_PER_CELL: usize = 64;

/// Per column: (profile, Σ w u, Σ w v) for each distinct station profile, and Σ w.
pub(super) type ColumnSums = (Vec<(usize, f64, f64)>, f64);

/// The first guess and what it was built from.
#[derive(Debug, Clone)]
pub struct FirstGuess {
    pub u: Vec<f64>,
    pub v: Vec<f64>,
    pub w: Vec<f64>,
    /// Class per column (row 0 north).
    pub stability: Vec<Stability>,
    /// The stations used, in input order.
    pub used: Vec<Station>,
    pub ignored: Vec<IgnoredStation>,
    /// The domain's stability class (most common among the used stations; ties to the more
    /// neutral-to-stable later letter).
    pub domain_class: Stability,
    /// The diurnal model's summary (heat flux, L, sun), when it ran.
    pub diurnal: Option<super::diurnal::DiurnalSummary>,
}

/// Roughness length (m) of the diurnal model's u* and L when the profile is not logarithmic
/// (short grass; WindNinja's grass class uses 0.01 m… 0.1 m: we take the rougher end).
pub const DIURNAL_ROUGHNESS_M: f64 = 0.1;

/// Station speeds at or above this are refused: a mass-consistent (incompressible) model holds
/// only at Mach numbers well below 1, and 340 m/s is the speed of sound near the ground.
pub const MAX_STATION_SPEED_M_PER_S: f64 = 340.0;

/// Split stations into used and ignored; an error when none is usable.
pub fn usable_stations(
    grid: &WindGrid,
    stations: &[Station],
) -> Result<(Vec<Station>, Vec<IgnoredStation>), GeofieldError> {
    let ext = grid.plan.extent();
    let mut used = Vec::new();
    let mut ignored = Vec::new();
    for s in stations {
        let bad_number = !(s.x_m.is_finite()
            && s.y_m.is_finite()
            && s.speed_m_per_s.is_finite()
            && s.direction_deg.is_finite()
            && s.height_agl_m.is_finite());
        if bad_number || s.speed_m_per_s < 0.0 || s.height_agl_m <= 0.0 {
            return Err(GeofieldError::Invalid(format!(
                "station {:?}: x, y, height, speed and direction must be numbers, the speed ≥ 0 \
                 and the height > 0 (got x {}, y {}, height {}, speed {}, direction {})",
                s.id, s.x_m, s.y_m, s.height_agl_m, s.speed_m_per_s, s.direction_deg
            )));
        }
        if s.speed_m_per_s >= MAX_STATION_SPEED_M_PER_S {
            return Err(GeofieldError::InvalidParameter {
                name: format!("speed_m_per_s of station {:?}", s.id),
                value: crate::error::shown(s.speed_m_per_s),
                expected: format!(
                    "a wind speed below {MAX_STATION_SPEED_M_PER_S} m/s: the model treats air as \
                     incompressible, which holds far below the speed of sound"
                ),
            });
        }
        if ext.contains(s.x_m, s.y_m) {
            used.push(s.clone());
        } else {
            ignored.push(IgnoredStation {
                id: s.id.clone(),
                reason: format!(
                    "outside the domain: ({:.1}, {:.1}) is not in x {:.1}..{:.1}, y {:.1}..{:.1}",
                    s.x_m, s.y_m, ext.x_min_m, ext.x_max_m, ext.y_min_m, ext.y_max_m
                ),
            });
        }
    }
    if used.is_empty() {
        return Err(GeofieldError::Invalid(format!(
            "no usable station: {} given, {} outside the domain (x {:.1}..{:.1}, y {:.1}..{:.1})",
            stations.len(),
            ignored.len(),
            ext.x_min_m,
            ext.x_max_m,
            ext.y_min_m,
            ext.y_max_m
        )));
    }
    Ok((used, ignored))
}

/// Profile factor: the station's wind at height `z_m` above ground over its wind at `z_ref_m`.
/// The log law measures heights from the displacement plane, z − `displacement_m`, clamped
/// below at max(`min_m`, 1.5 z0). `inv_l_per_m` = 1/L corrects the log law for stability
/// ([`super::diurnal::log_shape`]); 0 is neutral.
pub fn profile_factor(
    profile: Profile,
    class: Stability,
    z_m: f64,
    z_ref_m: f64,
    min_m: f64,
    displacement_m: f64,
    inv_l_per_m: f64,
) -> f64 {
    match profile {
        Profile::Uniform => 1.0,
        Profile::Power => (z_m.max(min_m) / z_ref_m).powf(class.power_exponent()),
        Profile::Log { roughness_m } => {
            let floor = min_m.max(1.5 * roughness_m);
            let shape = |z: f64| {
                super::diurnal::log_shape((z - displacement_m).max(floor), roughness_m, inv_l_per_m)
            };
            shape(z_m) / shape(z_ref_m)
        }
    }
}

/// Build the first guess (steps 1–7) on `grid` with face coefficients `coeffs`.
pub fn first_guess(
    grid: &WindGrid,
    coeffs: &Coeffs,
    stations: &[Station],
    opts: &WindOptions,
) -> Result<FirstGuess, GeofieldError> {
    if let Profile::Log { roughness_m } = opts.profile
        && !(roughness_m.is_finite() && roughness_m > 0.0)
    {
        return Err(GeofieldError::Invalid(format!(
            "the log profile needs a positive roughness length, got {roughness_m} m"
        )));
    }
    let src = match &opts.init_grid {
        Some(g) if !stations.is_empty() => {
            return Err(GeofieldError::Invalid(format!(
                "give stations or a gridded wind ({}), not both",
                g.source
            )));
        }
        Some(g) => super::gridded::sources(grid, g, opts)?,
        None => station_columns(grid, stations, opts)?,
    };
    let Sources {
        columns,
        profiles,
        stability,
        used,
        ignored,
        domain_class,
        mean_speed_m_per_s,
        mean_height_m,
    } = src;
    let (rows, cols) = (grid.rows(), grid.cols());
    let weather = match &opts.init_grid {
        Some(g) if opts.diurnal.is_some() => super::gridded::weather_columns(&grid.plan, g)?,
        _ => Default::default(),
    };
    let diurnal = opts.diurnal.as_ref().map(|d| {
        let z0 = match opts.profile {
            Profile::Log { roughness_m } => roughness_m,
            _ => DIURNAL_ROUGHNESS_M,
        };
        super::diurnal::columns(
            d,
            &weather,
            &grid.terrain_m,
            rows,
            cols,
            grid.dx_m(),
            mean_speed_m_per_s,
            mean_height_m,
            z0,
        )
    });
    let inv_l = |c: usize| match &diurnal {
        Some(dc) if opts.non_neutral => dc.inv_l_per_m[c],
        _ => 0.0,
    };
    let plane = rows * cols;
    let (mut u, mut v, w) = if grid.cut.is_some() {
        cut_faces(grid, coeffs, &columns, &profiles, opts, &inv_l)
    } else {
        let mut uc = vec![0.0; grid.n_cells()];
        let mut vc = vec![0.0; grid.n_cells()];
        uc.par_chunks_mut(plane)
            .zip(vc.par_chunks_mut(plane))
            .enumerate()
            .for_each(|(k, (up, vp))| {
                let zc = grid.z_centre_m(k);
                for c in 0..plane {
                    if (k as u32) < grid.ground_k[c] {
                        continue;
                    }
                    let z_agl = zc - grid.terrain_m[c];
                    let (sums, sw) = &columns[c];
                    let (mut su, mut sv) = (0.0, 0.0);
                    for &(p, wu, wv) in sums {
                        let (class, z_ref) = profiles[p];
                        let f = profile_factor(
                            opts.profile,
                            class,
                            z_agl,
                            z_ref,
                            opts.min_height_agl_m,
                            opts.displacement_m,
                            inv_l(c),
                        );
                        su += f * wu;
                        sv += f * wv;
                    }
                    up[c] = su / sw;
                    vp[c] = sv / sw;
                }
            });

        // Faces: mean of the two fluid cells, one-sided on open edges, 0 on closed faces.
        let mut u = vec![0.0; grid.n_u()];
        let mut v = vec![0.0; grid.n_v()];
        let w = vec![0.0; grid.n_w()];
        u.par_chunks_mut(cols + 1)
            .enumerate()
            .for_each(|(kr, line)| {
                let (k, row) = (kr / rows, kr % rows);
                let base = (k * rows + row) * cols;
                for (i, f) in line.iter_mut().enumerate() {
                    if coeffs.cu[kr * (cols + 1) + i] == 0.0 {
                        continue;
                    }
                    *f = match (i > 0, i < cols) {
                        (true, true) => 0.5 * (uc[base + i - 1] + uc[base + i]),
                        (false, _) => uc[base + i],
                        (true, false) => uc[base + i - 1],
                    };
                }
            });
        v.par_chunks_mut(cols).enumerate().for_each(|(kr, line)| {
            let (k, r) = (kr / (rows + 1), kr % (rows + 1));
            for (col, f) in line.iter_mut().enumerate() {
                if coeffs.cv[kr * cols + col] == 0.0 {
                    continue;
                }
                let north = (r > 0).then(|| vc[(k * rows + r - 1) * cols + col]);
                let south = (r < rows).then(|| vc[(k * rows + r) * cols + col]);
                *f = match (north, south) {
                    (Some(a), Some(b)) => 0.5 * (a + b),
                    (Some(a), None) | (None, Some(a)) => a,
                    (None, None) => 0.0,
                };
            }
        });
        (u, v, w)
    };

    if let Some(dc) = &diurnal
        && opts.diurnal.as_ref().is_some_and(|d| d.slope_flows)
    {
        add_slope_flow(grid, coeffs, dc, &mut u, &mut v);
    }
    Ok(FirstGuess {
        u,
        v,
        w,
        stability,
        used,
        ignored,
        domain_class,
        diurnal: diurnal.map(|d| d.summary),
    })
}

/// What the first guess is built from, per column: the weighted wind sums by profile.
pub(super) struct Sources {
    pub(super) columns: Vec<ColumnSums>,
    /// (class, reference height) of each profile.
    pub(super) profiles: Vec<(Stability, f64)>,
    pub(super) stability: Vec<Stability>,
    pub(super) used: Vec<Station>,
    pub(super) ignored: Vec<IgnoredStation>,
    pub(super) domain_class: Stability,
    /// The mean input speed and height, for the diurnal model's u* and L.
    pub(super) mean_speed_m_per_s: f64,
    pub(super) mean_height_m: f64,
}

/// Steps 1 and 5 from the stations: the nearest station's class, and per column the 1/d²
/// weighted sums over the nearest stations (module docs).
fn station_columns(
    grid: &WindGrid,
    stations: &[Station],
    opts: &WindOptions,
) -> Result<Sources, GeofieldError> {
    let (used, ignored) = usable_stations(grid, stations)?;
    let (rows, cols) = (grid.rows(), grid.cols());
    let class_of = |s: &Station| s.stability.unwrap_or(opts.default_stability);
    let n = used.len() as f64;
    let mean_speed_m_per_s = used.iter().map(|s| s.speed_m_per_s).sum::<f64>() / n;
    let mean_height_m = used.iter().map(|s| s.height_agl_m).sum::<f64>() / n;

    // Nearest stations of every column centre.
    let pts: Vec<f64> = used.iter().flat_map(|s| [s.x_m, s.y_m]).collect();
    let mut queries = Vec::with_capacity(2 * rows * cols);
    for row in 0..rows {
        for col in 0..cols {
            let (x, y) = grid.plan.cell_centre(row, col);
            queries.extend([x, y]);
        }
    }
    let k = used.len().min(MAX_STATIONS_PER_CELL);
    let nb = knn(
        &pts,
        Some(&queries),
        2,
        &KnnQuery {
            k,
            radius: None,
            exclude_self: false,
        },
        IndexKind::Auto,
    )?;

    let stability: Vec<Stability> = (0..rows * cols)
        .map(|c| class_of(&used[nb.row(c).0[0] as usize]))
        .collect();

    let r_min2 = (0.5 * grid.dx_m()).powi(2);
    let radius2 = opts.radius_m.map(|r| r * r);
    let uv: Vec<(f64, f64)> = match opts.true_north_epsg {
        None => used.iter().map(Station::uv).collect(),
        Some(epsg) => used
            .iter()
            .map(|s| super::gridded::true_to_grid(s.uv(), s.x_m, s.y_m, epsg))
            .collect::<Result<_, _>>()?,
    };
    let plane = rows * cols;
    // Stations sharing a profile (class and anemometer height) share the profile factor, so
    // each column keeps the weighted sums of u and v per profile and a cell evaluates one
    // factor per distinct profile (usually one or two), not one per station.
    let mut profiles: Vec<(Stability, f64)> = Vec::new();
    let profile_of: Vec<usize> = used
        .iter()
        .map(|s| {
            let key = (class_of(s), s.height_agl_m);
            match profiles.iter().position(|p| *p == key) {
                Some(i) => i,
                None => {
                    profiles.push(key);
                    profiles.len() - 1
                }
            }
        })
        .collect();
    let columns: Vec<ColumnSums> = (0..plane)
        .into_par_iter()
        .map(|c| {
            let (idx, d2) = nb.row(c);
            let mut sums: Vec<(usize, f64, f64)> = Vec::new();
            let mut sw = 0.0;
            let mut add = |j: usize, wt: f64| {
                let p = profile_of[j];
                match sums.iter_mut().find(|s| s.0 == p) {
                    Some(s) => {
                        s.1 += wt * uv[j].0;
                        s.2 += wt * uv[j].1;
                    }
                    None => sums.push((p, wt * uv[j].0, wt * uv[j].1)),
                }
                sw += wt;
            };
            let mut any = false;
            for (&j, &d) in idx.iter().zip(d2) {
                if j < 0 || radius2.is_some_and(|r2| d > r2) {
                    continue;
                }
                add(j as usize, 1.0 / d.max(r_min2));
                any = true;
            }
            if !any {
                add(idx[0] as usize, 1.0);
            }
            (sums, sw)
        })
        .collect();
    // The domain's class: the most common among the used stations (ties to the later letter).
    let mut counts = [0usize; 6];
    for s in &used {
        counts[class_of(s).index() as usize] += 1;
    }
    let mut best = 0usize;
    for (i, &c) in counts.iter().enumerate() {
        if c >= counts[best] && c > 0 {
            best = i;
        }
    }
    let domain_class = Stability::from_index(best as u8).unwrap_or(Stability::D);
    Ok(Sources {
        columns,
        profiles,
        stability,
        used,
        ignored,
        domain_class,
        mean_speed_m_per_s,
        mean_height_m,
    })
}

/// The first guess's x and y faces with cut cells (see the module docs); w0 = 0.
fn cut_faces(
    grid: &WindGrid,
    coeffs: &Coeffs,
    columns: &[ColumnSums],
    profiles: &[(Stability, f64)],
    opts: &WindOptions,
    inv_l: &(dyn Fn(usize) -> f64 + Sync),
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (rows, cols) = (grid.rows(), grid.cols());
    let surface = Surface {
        terrain: &grid.terrain_m,
        rows,
        cols,
    };
    // Height above the ground `h` of the middle of the open part of layer k.
    let agl = |k: usize, h: f64| {
        let (zb, zt) = (grid.z_faces_m[k], grid.z_faces_m[k + 1]);
        0.5 * (zb.max(h) + zt) - h
    };
    // The profile factors at height z above the ground, once per face for both columns.
    let factors = |z: f64, il: f64, out: &mut [f64]| {
        for (f, &(class, z_ref)) in out.iter_mut().zip(profiles) {
            *f = profile_factor(
                opts.profile,
                class,
                z,
                z_ref,
                opts.min_height_agl_m,
                opts.displacement_m,
                il,
            );
        }
    };
    // Column c's interpolated wind with the factors `f` of its face's height.
    let column_uv = |c: usize, f: &[f64]| {
        let (sums, sw) = &columns[c];
        let (mut su, mut sv) = (0.0, 0.0);
        for &(p, wu, wv) in sums {
            su += f[p] * wu;
            sv += f[p] * wv;
        }
        (su / sw, sv / sw)
    };
    let mut u = vec![0.0; grid.n_u()];
    let mut v = vec![0.0; grid.n_v()];
    u.par_chunks_mut(cols + 1)
        .enumerate()
        .for_each(|(kr, line)| {
            let (k, row) = (kr / rows, kr % rows);
            let mut fac = vec![0.0; profiles.len()];
            for (i, f) in line.iter_mut().enumerate() {
                if coeffs.cu[kr * (cols + 1) + i] == 0.0 {
                    continue;
                }
                let c = row * cols + i;
                let il = match (i > 0, i < cols) {
                    (true, true) => 0.5 * (inv_l(c - 1) + inv_l(c)),
                    (false, _) => inv_l(c),
                    (true, false) => inv_l(c - 1),
                };
                factors(agl(k, surface.x_mid(row, i)), il, &mut fac);
                *f = match (i > 0, i < cols) {
                    (true, true) => 0.5 * (column_uv(c - 1, &fac).0 + column_uv(c, &fac).0),
                    (false, _) => column_uv(c, &fac).0,
                    (true, false) => column_uv(c - 1, &fac).0,
                };
            }
        });
    v.par_chunks_mut(cols).enumerate().for_each(|(kr, line)| {
        let (k, r) = (kr / (rows + 1), kr % (rows + 1));
        let mut fac = vec![0.0; profiles.len()];
        for (col, f) in line.iter_mut().enumerate() {
            if coeffs.cv[kr * cols + col] == 0.0 {
                continue;
            }
            let il = match (r > 0, r < rows) {
                (true, true) => 0.5 * (inv_l((r - 1) * cols + col) + inv_l(r * cols + col)),
                (true, false) => inv_l((r - 1) * cols + col),
                _ => inv_l(r * cols + col),
            };
            factors(agl(k, surface.y_mid(r, col)), il, &mut fac);
            let north = (r > 0).then(|| column_uv((r - 1) * cols + col, &fac).1);
            let south = (r < rows).then(|| column_uv(r * cols + col, &fac).1);
            *f = match (north, south) {
                (Some(a), Some(b)) => 0.5 * (a + b),
                (Some(a), None) | (None, Some(a)) => a,
                (None, None) => 0.0,
            };
        }
    });
    (u, v, vec![0.0; grid.n_w()])
}

/// Add the diurnal slope flow of each column ([`super::diurnal`], step 6) to the open x and y
/// faces of its layer: a face takes the mean of its two columns' contributions (each zero
/// above its column's layer), one column on the domain edge. A column's layer is the cells
/// whose centre is less than `depth_m` above its ground, and always its lowest fluid cell.
fn add_slope_flow(
    grid: &WindGrid,
    coeffs: &Coeffs,
    dc: &super::diurnal::DiurnalColumns,
    u: &mut [f64],
    v: &mut [f64],
) {
    let (rows, cols) = (grid.rows(), grid.cols());
    let inside = |k: usize, c: usize| {
        k >= grid.ground_k[c] as usize
            && (k == grid.ground_k[c] as usize
                || grid.z_centre_m(k) - grid.terrain_m[c] < dc.depth_m[c])
    };
    let part = |k: usize, c: usize, comp: &[f64]| if inside(k, c) { comp[c] } else { 0.0 };
    u.par_chunks_mut(cols + 1)
        .enumerate()
        .for_each(|(kr, line)| {
            let (k, row) = (kr / rows, kr % rows);
            for (i, f) in line.iter_mut().enumerate() {
                if coeffs.cu[kr * (cols + 1) + i] == 0.0 {
                    continue;
                }
                let c = row * cols + i;
                *f += match (i > 0, i < cols) {
                    (true, true) => {
                        0.5 * (part(k, c - 1, &dc.u_m_per_s) + part(k, c, &dc.u_m_per_s))
                    }
                    (false, _) => part(k, c, &dc.u_m_per_s),
                    (true, false) => part(k, c - 1, &dc.u_m_per_s),
                };
            }
        });
    v.par_chunks_mut(cols).enumerate().for_each(|(kr, line)| {
        let (k, r) = (kr / (rows + 1), kr % (rows + 1));
        for (col, f) in line.iter_mut().enumerate() {
            if coeffs.cv[kr * cols + col] == 0.0 {
                continue;
            }
            let north = (r > 0).then(|| part(k, (r - 1) * cols + col, &dc.v_m_per_s));
            let south = (r < rows).then(|| part(k, r * cols + col, &dc.v_m_per_s));
            *f += match (north, south) {
                (Some(a), Some(b)) => 0.5 * (a + b),
                (Some(a), None) | (None, Some(a)) => a,
                (None, None) => 0.0,
            };
        }
    });
}
