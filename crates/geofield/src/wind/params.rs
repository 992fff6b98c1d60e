//! Wind-field parameters, with their defaults and units.

use std::str::FromStr;

use crate::GeofieldError;

/// Pasquill–Gifford stability class, A (very unstable) to F (stable).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub enum Stability {
    A,
    B,
    C,
    D,
    E,
    F,
}

impl Stability {
    pub const ALL: [Stability; 6] = [
        Stability::A,
        Stability::B,
        Stability::C,
        Stability::D,
        Stability::E,
        Stability::F,
    ];
    /// 0 for A … 5 for F.
    pub fn index(self) -> u8 {
        self as u8
    }
    pub fn from_index(i: u8) -> Option<Self> {
        Self::ALL.get(i as usize).copied()
    }
    pub fn letter(self) -> char {
        (b'A' + self as u8) as char
    }
    /// Power-law exponent of the wind profile, rural ISC defaults (CALPUFF `PLX0`):
    /// A 0.07, B 0.07, C 0.10, D 0.15, E 0.35, F 0.55.
    pub fn power_exponent(self) -> f64 {
        match self {
            Stability::A | Stability::B => 0.07,
            Stability::C => 0.10,
            Stability::D => 0.15,
            Stability::E => 0.35,
            Stability::F => 0.55,
        }
    }
    /// Sherman's modulus ratio α = α_h/α_v by class (WindNinja's table for A, B, C, D, E, F:
    /// 5, 3.5, 2, 1, 0.5, 0.2). α > 1 lets the vertical wind adjust more (flow over hills).
    pub fn alpha(self) -> f64 {
        match self {
            Stability::A => 5.0,
            Stability::B => 3.5,
            Stability::C => 2.0,
            Stability::D => 1.0,
            Stability::E => 0.5,
            Stability::F => 0.2,
        }
    }
}

impl FromStr for Stability {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_uppercase().as_str() {
            "A" => Ok(Self::A),
            "B" => Ok(Self::B),
            "C" => Ok(Self::C),
            "D" => Ok(Self::D),
            "E" => Ok(Self::E),
            "F" => Ok(Self::F),
            _ => Err(format!(
                "unknown stability class {s:?}: expected one of A, B, C, D, E, F"
            )),
        }
    }
}

/// Which mass-consistent adjustment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Model {
    /// Sherman's (1978) variational adjustment in the potential form, with α, solved to a tolerance.
    Sherman,
    /// The paper's WEST divergence minimisation: red-black velocity-form sweeps with ω = 1.25,
    /// a fixed number of sweeps or until the tolerance, then divergence removal.
    West,
}

/// How Sherman's Poisson problem is solved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Solver {
    /// Geometric multigrid V-cycles (z-line smoother, horizontal semicoarsening).
    Multigrid,
    /// Conjugate gradients preconditioned by one multigrid V-cycle.
    MgCg,
    /// Red-black SOR with the optimal ω (or `--omega`).
    Sor,
}

/// Vertical extrapolation of station winds.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub enum Profile {
    /// u(z) = u_r (z/z_r)^p with p by stability class ([`Stability::power_exponent`]).
    Power,
    /// u(z) = u_r ln((z − d)/z0) / ln((z_r − d)/z0) with roughness length z0 (m) and the
    /// displacement height d = [`WindOptions::displacement_m`] (0 unless a vegetation class sets
    /// it), z above the ground.
    Log { roughness_m: f64 },
    /// The station's wind at every height (for tests).
    Uniform,
}

/// How the ground meets the grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Terrain {
    /// Cells whose centre is below the ground are solid, the others whole (WEST's model).
    Stairs,
    /// The ground as a surface through the DEM, cells and faces cut by it
    /// ([`super::cut`]): fractional volumes and face apertures.
    Cut,
}

/// Top boundary of the domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Top {
    /// Flow-through (φ = 0 above the top), the default.
    Open,
    /// A rigid lid: no flux through the top faces.
    Lid,
}

/// Options of the whole pipeline.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct WindOptions {
    pub model: Model,
    pub solver: Solver,
    /// Relative divergence tolerance: stop when max|div u| ≤ tolerance × max|div u0| over fluid
    /// cells (or ≤ `abs_tolerance_per_s`). Default 1e-6.
    pub tolerance: f64,
    /// Absolute floor of the stop test (s⁻¹). Default 0.
    pub abs_tolerance_per_s: f64,
    /// Iteration cap (sweeps, V-cycles or CG iterations). For `Model::West` with
    /// `fixed_iterations`, exactly this many sweeps. Default 2000.
    pub max_iterations: usize,
    /// WEST: run exactly `max_iterations` sweeps, as the paper, instead of stopping at the tolerance.
    pub fixed_iterations: bool,
    /// Over-relaxation factor: WEST default 1.25; SOR default the optimal ω of the grid.
    pub omega: Option<f64>,
    pub profile: Profile,
    /// Displacement height d of the log profile (m, ≥ 0; below the canopy top the flow sees
    /// a ground raised by d). Default 0; only with [`Profile::Log`].
    pub displacement_m: f64,
    /// α = α_h/α_v; default from the stability class ([`Stability::alpha`]).
    pub alpha: Option<f64>,
    /// Class for stations without one. Default D.
    pub default_stability: Stability,
    /// Radius of influence of a station (m): beyond it a station does not count, and a cell
    /// with no station within the radius takes the nearest one. Default: unlimited.
    pub radius_m: Option<f64>,
    /// Smallest height above ground used in profiles (m); lower heights are clamped. Default 1.
    pub min_height_agl_m: f64,
    pub top: Top,
    /// Terrain representation; `None`: cut cells for Sherman, stair steps for WEST (the paper's
    /// model, which takes no other).
    pub terrain: Option<Terrain>,
    /// WEST: integrate continuity up each column after the minimisation (the paper's divergence
    /// removal). Default true for WEST; ignored for Sherman.
    pub divergence_removal: bool,
    /// Check the stop test every this many sweeps (SOR, WEST). Default 10.
    pub check_every: usize,
    /// Diurnal slope flows and surface heat flux ([`super::diurnal`]); `None` (default): none.
    pub diurnal: Option<super::diurnal::Diurnal>,
    /// Non-neutral stability (WindNinja `non_neutral_stability`): the log profile corrected by
    /// the Monin–Obukhov ψ functions, L per column from the diurnal heat flux. Needs
    /// `diurnal` and [`Profile::Log`]. Default false.
    pub non_neutral: bool,
    /// A gridded wind to start from instead of stations ([`super::gridded`]); the stations
    /// given with it must be none. Default `None`.
    #[serde(skip)]
    pub init_grid: Option<std::sync::Arc<super::gridded::InitGrid>>,
    /// The DEM's CRS (EPSG code) when the stations' directions are meteorological, from true
    /// north (WindNinja's rule): each station's wind is turned to the grid's north at the
    /// station, by the meridian convergence there ([`super::gridded::grid_north_bearing`]),
    /// so that a wind from 270° true reads 271.4° on a UTM grid 2° west of its central
    /// meridian at 45° N, as in WindNinja's outputs. `None` (default): the directions are on
    /// the grid's north already. Needs the `io` feature (projections).
    pub true_north_epsg: Option<u16>,
}

impl Default for WindOptions {
    fn default() -> Self {
        Self {
            model: Model::Sherman,
            solver: Solver::Multigrid,
            tolerance: 1e-6,
            abs_tolerance_per_s: 0.0,
            max_iterations: 2000,
            fixed_iterations: false,
            omega: None,
            profile: Profile::Power,
            displacement_m: 0.0,
            alpha: None,
            default_stability: Stability::D,
            radius_m: None,
            min_height_agl_m: 1.0,
            top: Top::Open,
            terrain: None,
            divergence_removal: true,
            check_every: 10,
            diurnal: None,
            non_neutral: false,
            init_grid: None,
            true_north_epsg: None,
        }
    }
}

/// One weather station's observation.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Station {
    pub id: String,
    pub x_m: f64,
    pub y_m: f64,
    /// Height of the anemometer above the ground (m), > 0.
    pub height_agl_m: f64,
    /// Wind speed (m/s), ≥ 0.
    pub speed_m_per_s: f64,
    /// Meteorological direction: where the wind comes from, degrees clockwise from north.
    pub direction_deg: f64,
    pub stability: Option<Stability>,
}

impl Station {
    /// (u east, v north) of the observation: u = −S sin θ, v = −S cos θ.
    pub fn uv(&self) -> (f64, f64) {
        let t = self.direction_deg.to_radians();
        (-self.speed_m_per_s * t.sin(), -self.speed_m_per_s * t.cos())
    }
}

/// Speed and meteorological direction (degrees from north the wind blows from, in [0, 360))
/// of a horizontal wind (u east, v north). Calm air has direction 0.
pub fn speed_direction(u: f64, v: f64) -> (f64, f64) {
    let s = u.hypot(v);
    if s == 0.0 {
        return (0.0, 0.0);
    }
    let d = (-u).atan2(-v).to_degrees();
    (s, if d < 0.0 { d + 360.0 } else { d }.rem_euclid(360.0))
}

/// [`check_options`] before a gridded first guess is read: a diurnal air temperature or cloud
/// cover still to come from the grid (NaN until [`super::diurnal::weather_from_grid`]) is left
/// to the check at the solve, the grid's values having been range-checked by its reader.
pub fn check_options_before_grid(opts: &WindOptions) -> Result<(), GeofieldError> {
    let mut o = opts.clone();
    if let Some(d) = o.diurnal.as_mut() {
        if d.air_temp_c.is_nan() {
            d.air_temp_c = 15.0;
        }
        if d.cloud_cover_pct.is_nan() {
            d.cloud_cover_pct = 0.0;
        }
    }
    check_options(&o)
}

/// Check the options on their own (before any input is read): every field in its domain, and
/// no option that the chosen model and solver would ignore. [`super::compute_deferred`] calls it too.
pub fn check_options(opts: &WindOptions) -> Result<(), GeofieldError> {
    let bad = |name: &str, value: f64, expected: &str| {
        Err(GeofieldError::InvalidParameter {
            name: name.into(),
            value: crate::error::shown(value),
            expected: expected.into(),
        })
    };
    if !(opts.tolerance.is_finite() && opts.tolerance > 0.0 && opts.tolerance < 1.0) {
        return bad("tolerance", opts.tolerance, "a number in (0, 1)");
    }
    if !(opts.abs_tolerance_per_s.is_finite() && opts.abs_tolerance_per_s >= 0.0) {
        return bad(
            "abs_tolerance_per_s",
            opts.abs_tolerance_per_s,
            "a rate ≥ 0 s⁻¹",
        );
    }
    if opts.max_iterations == 0 {
        return bad("max_iterations", 0.0, "at least 1");
    }
    if let Some(w) = opts.omega {
        if !(w.is_finite() && w > 0.0 && w < 2.0) {
            return bad("omega", w, "a relaxation factor in (0, 2)");
        }
        if opts.model == Model::Sherman && opts.solver != Solver::Sor {
            return bad(
                "omega",
                w,
                "no value with the multigrid and MG-CG solvers (omega is the relaxation factor \
                 of SOR and WEST)",
            );
        }
    }
    if opts.model == Model::West && opts.terrain == Some(Terrain::Cut) {
        return Err(GeofieldError::InvalidParameter {
            name: "terrain".into(),
            value: "cut".into(),
            expected: "stairs or none with the WEST model (the paper's stair-step terrain)".into(),
        });
    }
    if let Some(a) = opts.alpha
        && !(a.is_finite() && a > 0.0)
    {
        return bad("alpha", a, "a positive number");
    }
    if !(opts.min_height_agl_m.is_finite() && opts.min_height_agl_m > 0.0) {
        return bad(
            "min_height_agl_m",
            opts.min_height_agl_m,
            "a positive height in metres",
        );
    }
    if let Some(r) = opts.radius_m
        && !(r.is_finite() && r > 0.0)
    {
        return bad("radius_m", r, "a positive distance in metres");
    }
    if let Profile::Log { roughness_m } = opts.profile
        && !(roughness_m.is_finite() && roughness_m > 0.0)
    {
        return bad("roughness_m", roughness_m, "a positive length in metres");
    }
    if !(opts.displacement_m.is_finite() && opts.displacement_m >= 0.0) {
        return bad(
            "displacement_m",
            opts.displacement_m,
            "a length ≥ 0 in metres",
        );
    }
    if opts.displacement_m > 0.0 && !matches!(opts.profile, Profile::Log { .. }) {
        return bad(
            "displacement_m",
            opts.displacement_m,
            "0 unless the profile is logarithmic",
        );
    }
    if let Some(d) = &opts.diurnal {
        super::diurnal::check(d)?;
    }
    if opts.non_neutral {
        let expected = if opts.diurnal.is_none() {
            "false without the diurnal inputs (date, time, air temperature, cloud cover): the \
             Monin–Obukhov length comes from the surface heat flux"
        } else if !matches!(opts.profile, Profile::Log { .. }) {
            "false unless the profile is logarithmic (the stability correction is of the log law)"
        } else {
            ""
        };
        if !expected.is_empty() {
            return Err(GeofieldError::InvalidParameter {
                name: "non_neutral".into(),
                value: "true".into(),
                expected: expected.into(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directions_round_trip() {
        for (dir, u, v) in [
            (0.0, 0.0, -1.0),  // from the north blows south
            (90.0, -1.0, 0.0), // from the east blows west
            (180.0, 0.0, 1.0), // from the south blows north
            (270.0, 1.0, 0.0), // from the west blows east
        ] {
            let s = Station {
                id: "s".into(),
                x_m: 0.0,
                y_m: 0.0,
                height_agl_m: 10.0,
                speed_m_per_s: 1.0,
                direction_deg: dir,
                stability: None,
            };
            let (su, sv) = s.uv();
            assert!((su - u).abs() < 1e-12 && (sv - v).abs() < 1e-12, "{dir}");
            let (sp, d) = speed_direction(su, sv);
            assert!((sp - 1.0).abs() < 1e-12);
            assert!(
                (d - dir).abs() < 1e-9 || (d - dir).abs() > 359.999,
                "{dir} -> {d}"
            );
        }
        assert_eq!(speed_direction(0.0, 0.0), (0.0, 0.0));
    }

    #[test]
    fn classes_parse() {
        assert_eq!("d".parse::<Stability>().unwrap(), Stability::D);
        assert!("G".parse::<Stability>().is_err());
        assert_eq!(Stability::from_index(5), Some(Stability::F));
        assert_eq!(Stability::E.letter(), 'E');
    }
}
