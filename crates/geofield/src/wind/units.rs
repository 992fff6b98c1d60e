//! WindNinja-style inputs: units of speed and length, vegetation presets, and the
//! domain-average wind (one speed and direction at one height over the whole domain).
//!
//! Vegetation presets are WindNinja's uniform surface classes (firelab/windninja:
//! `src/ninja/ninja.cpp`, `ninja::set_uniVegetation`): roughness length z0, vegetation height h
//! and displacement height d in metres:
//!
//! | class | z0 | h | d |
//! | --- | --- | --- | --- |
//! | grass | 0.01 | 0 | 0 |
//! | brush | 0.43 | 2.3 | 1.8 |
//! | trees | 1.0 | 15.4 | 12.0 |
//!
//! WindNinja's log profile (`src/ninja/windProfile.cpp`) is u(z) = U ln((z − d)/z0) /
//! ln((H + h − d)/z0) with z above the ground and the input height H above the **top of the
//! vegetation**; its output heights are above the vegetation too. geofield keeps heights above
//! the ground in the library ([`crate::wind::Profile::Log`] with
//! [`crate::wind::WindOptions::displacement_m`]) and the front ends add h to the input, station
//! and output heights when a vegetation class is chosen ([`Vegetation::canopy_height_m`]).

use std::str::FromStr;

use geofield_core::GridSpec;

use super::params::Station;

/// Units of a wind speed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum SpeedUnit {
    /// Metres per second.
    Mps,
    /// Kilometres per hour.
    Kph,
    /// Statute miles per hour.
    Mph,
    /// Knots (international nautical miles per hour).
    Kts,
}

impl SpeedUnit {
    /// Metres per second in one unit (exact by definition: 1 mi = 1609.344 m, 1 nmi = 1852 m).
    pub fn m_per_s(self) -> f64 {
        match self {
            SpeedUnit::Mps => 1.0,
            SpeedUnit::Kph => 1000.0 / 3600.0,
            SpeedUnit::Mph => 1609.344 / 3600.0,
            SpeedUnit::Kts => 1852.0 / 3600.0,
        }
    }
    /// The unit's name in WindNinja's files: "mps", "kph", "mph", "kts".
    pub fn name(self) -> &'static str {
        match self {
            SpeedUnit::Mps => "mps",
            SpeedUnit::Kph => "kph",
            SpeedUnit::Mph => "mph",
            SpeedUnit::Kts => "kts",
        }
    }
}

impl FromStr for SpeedUnit {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "mps" | "m/s" => Ok(SpeedUnit::Mps),
            "kph" | "km/h" => Ok(SpeedUnit::Kph),
            "mph" => Ok(SpeedUnit::Mph),
            "kts" | "knots" | "kt" => Ok(SpeedUnit::Kts),
            _ => Err(format!(
                "unknown speed unit {s:?}: expected mps, kph, mph or kts"
            )),
        }
    }
}

/// Units of a length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum LengthUnit {
    Meters,
    /// International foot, 0.3048 m.
    Feet,
    /// Statute mile, 1609.344 m.
    Miles,
    Kilometers,
}

impl LengthUnit {
    /// Metres in one unit.
    pub fn metres(self) -> f64 {
        match self {
            LengthUnit::Meters => 1.0,
            LengthUnit::Feet => 0.3048,
            LengthUnit::Miles => 1609.344,
            LengthUnit::Kilometers => 1000.0,
        }
    }
}

impl FromStr for LengthUnit {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "meters" | "metres" | "meter" | "metre" | "m" => Ok(LengthUnit::Meters),
            "feet" | "foot" | "ft" => Ok(LengthUnit::Feet),
            "miles" | "mile" | "mi" => Ok(LengthUnit::Miles),
            "km" | "kilometers" | "kilometres" => Ok(LengthUnit::Kilometers),
            _ => Err(format!(
                "unknown length unit {s:?}: expected meters, feet, miles or km"
            )),
        }
    }
}

/// WindNinja's uniform vegetation classes (values in the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Vegetation {
    Grass,
    Brush,
    Trees,
}

impl Vegetation {
    /// Roughness length z0 (m).
    pub fn roughness_m(self) -> f64 {
        match self {
            Vegetation::Grass => 0.01,
            Vegetation::Brush => 0.43,
            Vegetation::Trees => 1.0,
        }
    }
    /// Displacement height d (m).
    pub fn displacement_m(self) -> f64 {
        match self {
            Vegetation::Grass => 0.0,
            Vegetation::Brush => 1.8,
            Vegetation::Trees => 12.0,
        }
    }
    /// Vegetation height h (m): WindNinja's input and output heights are above it.
    pub fn canopy_height_m(self) -> f64 {
        match self {
            Vegetation::Grass => 0.0,
            Vegetation::Brush => 2.3,
            Vegetation::Trees => 15.4,
        }
    }
}

impl FromStr for Vegetation {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "grass" | "g" => Ok(Vegetation::Grass),
            "brush" | "b" => Ok(Vegetation::Brush),
            "trees" | "t" => Ok(Vegetation::Trees),
            _ => Err(format!(
                "unknown vegetation {s:?}: expected grass, brush or trees"
            )),
        }
    }
}

/// The id of the station [`domain_average`] builds.
pub const DOMAIN_AVERAGE_ID: &str = "domain-average";

/// WindNinja's domain-average initialisation as one station: `speed_m_per_s` from
/// `direction_deg` (where the wind comes from, clockwise from north) at `height_agl_m` above the
/// ground, at the centre of `plan`. With a single station every column takes its wind (the
/// inverse-distance weights of one station are 1, and without a radius of influence, or beyond
/// it, the nearest station is used), extrapolated by the run's profile from that height above
/// each column's own ground: a uniform wind at that height above ground everywhere.
pub fn domain_average(
    plan: &GridSpec,
    speed_m_per_s: f64,
    direction_deg: f64,
    height_agl_m: f64,
) -> Station {
    let ext = plan.extent();
    Station {
        id: DOMAIN_AVERAGE_ID.into(),
        x_m: 0.5 * (ext.x_min_m + ext.x_max_m),
        y_m: 0.5 * (ext.y_min_m + ext.y_max_m),
        height_agl_m,
        speed_m_per_s,
        direction_deg,
        stability: None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn units_convert_by_their_definitions() {
        // 1 kt = 1852 m/h, 1 mph = 1609.344 m/h, 36 kph = 10 m/s.
        assert!((36.0 * "kph".parse::<SpeedUnit>().unwrap().m_per_s() - 10.0).abs() < 1e-12);
        assert!((3600.0 * SpeedUnit::Mph.m_per_s() - 1609.344).abs() < 1e-9);
        assert!((3600.0 * SpeedUnit::Kts.m_per_s() - 1852.0).abs() < 1e-9);
        assert_eq!("Feet".parse::<LengthUnit>().unwrap().metres(), 0.3048);
        assert_eq!("km".parse::<LengthUnit>().unwrap().metres(), 1000.0);
        assert!("furlong".parse::<LengthUnit>().is_err() && "kmh".parse::<SpeedUnit>().is_err());
        assert_eq!("T".parse::<Vegetation>().unwrap(), Vegetation::Trees);
        assert!("moss".parse::<Vegetation>().is_err());
    }
}
