//! Projecting longitude/latitude onto a projected CRS given by its EPSG code, for inputs such
//! as WindNinja's station files whose rows may be in geographic coordinates.
//!
//! The projection is done by the pure-Rust `proj4rs` crate (a port of PROJ.4's forward and
//! inverse projections: transverse Mercator and so every UTM zone, Lambert conformal conic,
//! Albers, stereographic, …) from the PROJ.4 definition of the code in the `crs-definitions`
//! crate (the EPSG registry's codes up to 65535). No system library and no network are used.
//!
//! Datums of the geographic input ([`Datum`]):
//! - WGS 84: as given;
//! - NAD83: the same as WGS 84 (PROJ's default, `towgs84=0,0,0`; the two differ by about 1–2 m
//!   in the contiguous US, below the accuracy of a station's position);
//! - NAD27 (Clarke 1866 ellipsoid): shifted to WGS 84 by the 3-parameter mean transformation
//!   for the contiguous US, ΔX = −8, ΔY = 160, ΔZ = 176 m (EPSG transformation 1173, stated
//!   accuracy about 10 m), instead of the NADCON grids, which are not shipped. A target CRS on
//!   the NAD27 datum gets the same parameters, so NAD27 → NAD27 / UTM is the plain projection.
//!
//! Accuracy: the projections are those of PROJ.4; checked against Snyder's worked example
//! (USGS PP 1395, transverse Mercator on Clarke 1866: 627 106.5 E, 4 484 124.4 N for
//! 40°30′ N, 73°30′ W in UTM zone 18) to 0.1 m in the tests.

use proj4rs::Proj;

/// The geodetic datum of longitude/latitude coordinates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Datum {
    /// WGS 84 (EPSG:4326).
    Wgs84,
    /// North American Datum 1983 (EPSG:4269), taken as WGS 84.
    Nad83,
    /// North American Datum 1927 (EPSG:4267), shifted by the mean CONUS parameters.
    Nad27,
}

impl Datum {
    /// The datum named by `s` (any case): "WGS84", "WGS 84", "NAD83", "NAD27".
    pub fn parse(s: &str) -> Option<Self> {
        match s
            .trim()
            .to_ascii_uppercase()
            .replace([' ', '_', '-'], "")
            .as_str()
        {
            "WGS84" => Some(Datum::Wgs84),
            "NAD83" => Some(Datum::Nad83),
            "NAD27" => Some(Datum::Nad27),
            _ => None,
        }
    }

    /// The PROJ.4 definition of longitude/latitude on this datum.
    fn proj4(self) -> String {
        match self {
            Datum::Wgs84 => "+proj=longlat +datum=WGS84 +no_defs".into(),
            Datum::Nad83 => format!("+proj=longlat {NAD83} +no_defs"),
            Datum::Nad27 => format!("+proj=longlat {NAD27} +no_defs"),
        }
    }
}

/// NAD27 as a 3-parameter shift (see the module docs), Clarke 1866 by its inverse flattening
/// (see [`MINOR_AXIS_ELLIPSOIDS`]).
const NAD27: &str = "+a=6378206.4 +rf=294.978698213898 +towgs84=-8,160,176,0,0,0,0";

/// PROJ ellipsoids defined by their semi-minor axis b: (name, a, b). `proj4rs` 0.1 derives the
/// flattening of such an ellipsoid as (a − b)/b instead of (a − b)/a, which moves a UTM
/// northing on Clarke 1866 by ~80 m; the definitions are rewritten as `+a= +rf=` with
/// rf = a/(a − b) before they are handed to it.
const MINOR_AXIS_ELLIPSOIDS: [(&str, f64, f64); 6] = [
    ("clrk66", 6_378_206.4, 6_356_583.8),
    ("mod_airy", 6_377_340.189, 6_356_034.446),
    ("new_intl", 6_378_157.5, 6_356_772.2),
    ("plessis", 6_376_523.0, 6_355_863.0),
    ("SEasia", 6_378_155.0, 6_356_773.320_5),
    ("walbeck", 6_376_896.0, 6_355_834.846_7),
];

/// `def` with every `+ellps=NAME` of [`MINOR_AXIS_ELLIPSOIDS`] written as `+a= +rf=`.
fn by_inverse_flattening(def: &str) -> String {
    def.split_whitespace()
        .map(|tok| {
            let named = tok.strip_prefix("+ellps=");
            match MINOR_AXIS_ELLIPSOIDS.iter().find(|e| Some(e.0) == named) {
                Some(&(_, a, b)) => format!("+a={a} +rf={}", a / (a - b)),
                None => tok.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}
/// NAD83 as WGS 84's equal.
const NAD83: &str = "+ellps=GRS80 +towgs84=0,0,0,0,0,0,0";

/// Why a projection failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProjectError {
    /// The registry does not know the code.
    #[error("EPSG:{0} is not in the CRS registry")]
    UnknownCode(u16),
    /// The target is itself geographic (degrees), not a projection in metres.
    #[error("EPSG:{0} is geographic (degrees), not a projected CRS")]
    Geographic(u16),
    /// The target's unit is not the metre.
    #[error("EPSG:{0} is in {1}, not metres")]
    NotMetres(u16, String),
    /// The projection library refused the definition or the point.
    #[error("projecting ({lon_deg}, {lat_deg}) to EPSG:{code}: {reason}")]
    Failed {
        code: u16,
        lon_deg: f64,
        lat_deg: f64,
        reason: String,
    },
}

/// The target's PROJ.4 definition with datums that need grids replaced by their shifts.
fn target_proj4(code: u16) -> Result<String, ProjectError> {
    let def = crs_definitions::from_code(code).ok_or(ProjectError::UnknownCode(code))?;
    if def.wkt.starts_with("GEOGCS") {
        return Err(ProjectError::Geographic(code));
    }
    let def = by_inverse_flattening(
        &def.proj4
            .replace("+datum=NAD27", NAD27)
            .replace("+datum=NAD83", NAD83),
    );
    // The grid is in metres: a CRS in feet would give coordinates in feet.
    match def
        .split_whitespace()
        .find_map(|t| t.strip_prefix("+units="))
    {
        None | Some("m") => Ok(def),
        Some(u) => Err(ProjectError::NotMetres(code, u.to_string())),
    }
}

/// Projection from longitude/latitude on a datum to the CRS EPSG:`code`, built once for many
/// points ([`project_lonlat`] builds one per call).
pub struct Projection {
    src: Proj,
    dst: Proj,
    code: u16,
}

impl Projection {
    /// The projection of `datum` longitude/latitude onto EPSG:`code`; an error for an unknown
    /// or geographic target.
    pub fn new(datum: Datum, code: u16) -> Result<Self, ProjectError> {
        let fail = |reason: String| ProjectError::Failed {
            code,
            lon_deg: f64::NAN,
            lat_deg: f64::NAN,
            reason,
        };
        let dst = Proj::from_proj_string(&target_proj4(code)?).map_err(|e| fail(e.to_string()))?;
        let src = Proj::from_proj_string(&datum.proj4()).map_err(|e| fail(e.to_string()))?;
        Ok(Self { src, dst, code })
    }

    /// (x, y) in metres of (`lon_deg` east, `lat_deg` north); an error for a point outside
    /// the ranges or one the projection cannot map (non-finite result).
    pub fn xy(&self, lon_deg: f64, lat_deg: f64) -> Result<(f64, f64), ProjectError> {
        let fail = |reason: String| ProjectError::Failed {
            code: self.code,
            lon_deg,
            lat_deg,
            reason,
        };
        if !(lon_deg.is_finite()
            && lat_deg.is_finite()
            && (-180.0..=180.0).contains(&lon_deg)
            && (-90.0..=90.0).contains(&lat_deg))
        {
            return Err(fail(
                "longitude must be in [-180, 180] and latitude in [-90, 90] degrees".into(),
            ));
        }
        let mut p = (lon_deg.to_radians(), lat_deg.to_radians(), 0.0);
        proj4rs::transform::transform(&self.src, &self.dst, &mut p)
            .map_err(|e| fail(e.to_string()))?;
        if !(p.0.is_finite() && p.1.is_finite()) {
            return Err(fail("the projection gave no finite coordinate".into()));
        }
        Ok((p.0, p.1))
    }
}

/// (x, y) in metres of the CRS EPSG:`code` of the point (`lon_deg` east, `lat_deg` north) on
/// `datum`. An error for an unknown or geographic target, or a point the projection cannot
/// map (non-finite result).
pub fn project_lonlat(
    datum: Datum,
    lon_deg: f64,
    lat_deg: f64,
    code: u16,
) -> Result<(f64, f64), ProjectError> {
    Projection::new(datum, code)
        .map_err(|e| match e {
            ProjectError::Failed { code, reason, .. } => ProjectError::Failed {
                code,
                lon_deg,
                lat_deg,
                reason,
            },
            e => e,
        })?
        .xy(lon_deg, lat_deg)
}

/// The inverse projection of the CRS EPSG:`code` to WGS 84 longitude/latitude, built once for
/// many points ([`unproject_to_lonlat`] builds one per call).
pub struct Unprojection {
    src: Proj,
    dst: Proj,
    code: u16,
}

impl Unprojection {
    /// The inverse of EPSG:`code`; an error for an unknown or geographic code.
    pub fn new(code: u16) -> Result<Self, ProjectError> {
        let fail = |reason: String| ProjectError::Failed {
            code,
            lon_deg: f64::NAN,
            lat_deg: f64::NAN,
            reason: format!("(inverse) {reason}"),
        };
        let src = Proj::from_proj_string(&target_proj4(code)?).map_err(|e| fail(e.to_string()))?;
        let dst = Proj::from_proj_string(&Datum::Wgs84.proj4()).map_err(|e| fail(e.to_string()))?;
        Ok(Self { src, dst, code })
    }

    /// (longitude, latitude) in degrees of (`x_m`, `y_m`); an error for a point the inverse
    /// cannot map.
    pub fn lonlat(&self, x_m: f64, y_m: f64) -> Result<(f64, f64), ProjectError> {
        let fail = |reason: String| ProjectError::Failed {
            code: self.code,
            lon_deg: x_m,
            lat_deg: y_m,
            reason: format!("(inverse, x and y in metres) {reason}"),
        };
        let mut p = (x_m, y_m, 0.0);
        proj4rs::transform::transform(&self.src, &self.dst, &mut p)
            .map_err(|e| fail(e.to_string()))?;
        let (lon, lat) = (p.0.to_degrees(), p.1.to_degrees());
        if !(lon.is_finite() && lat.is_finite() && lat.abs() <= 90.0) {
            return Err(fail(
                "the inverse projection gave no finite coordinate".into(),
            ));
        }
        Ok(((lon + 180.0).rem_euclid(360.0) - 180.0, lat))
    }
}

/// (longitude, latitude) in degrees on WGS 84 of the point (`x_m`, `y_m`) of the projected
/// CRS EPSG:`code`: the inverse of [`project_lonlat`] (PROJ.4's inverse projection). An error
/// for an unknown or geographic code, or a point the inverse cannot map.
pub fn unproject_to_lonlat(x_m: f64, y_m: f64, code: u16) -> Result<(f64, f64), ProjectError> {
    Unprojection::new(code)?.lonlat(x_m, y_m)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The inverse gives back the point projected forward (UTM zone 11N, WGS 84), to 1e-7°
    /// (about 1 cm; PROJ.4's transverse Mercator series are good to well under a millimetre).
    #[test]
    fn unproject_inverts_project() {
        for (lon, lat) in [(-114.0, 46.9), (-117.5, 33.1), (-119.9, 60.0)] {
            let (x, y) = project_lonlat(Datum::Wgs84, lon, lat, 32611).unwrap();
            let (lo, la) = unproject_to_lonlat(x, y, 32611).unwrap();
            assert!(
                (lo - lon).abs() < 1e-7 && (la - lat).abs() < 1e-7,
                "{lo} {la}"
            );
        }
        assert!(matches!(
            unproject_to_lonlat(0.0, 0.0, 4326),
            Err(ProjectError::Geographic(4326))
        ));
    }

    #[test]
    fn snyder_transverse_mercator_example() {
        // Snyder (1987), Map Projections: A Working Manual, USGS PP 1395, pp. 269-270:
        // Clarke 1866, phi = 40.5 N, lambda = 73.5 W, UTM zone 18 (lambda0 = 75 W, k0 =
        // 0.9996): x = 127 106.5 m, y = 4 484 124.4 m. EPSG:26718 is NAD27 / UTM zone 18N;
        // from NAD27 the datum shift cancels. Printed to 0.1 m: tolerance 0.1 m.
        let (x, y) = project_lonlat(Datum::Nad27, -73.5, 40.5, 26718).unwrap();
        assert!(
            (x - 627_106.5).abs() < 0.1 && (y - 4_484_124.4).abs() < 0.1,
            "{x} {y}"
        );
    }

    #[test]
    fn wgs84_utm_published_point() {
        // The UTM article's example (CN Tower, 43°38'33.24"N 79°23'13.7"W = 17T 630084
        // 4833438): the input is rounded to 0.05" in longitude (0.05/3600 deg x 111.3 km x
        // cos 43.6 deg = 1.1 m) and 0.005" in latitude (0.15 m), the output to 1 m: 2 m.
        let lat = 43.0 + 38.0 / 60.0 + 33.24 / 3600.0;
        let lon = -(79.0 + 23.0 / 60.0 + 13.7 / 3600.0);
        let (x, y) = project_lonlat(Datum::Wgs84, lon, lat, 32617).unwrap();
        assert!(
            (x - 630_084.0).abs() < 2.0 && (y - 4_833_438.0).abs() < 2.0,
            "{x} {y}"
        );
        // NAD83 is taken as WGS 84.
        // NAD83 is taken as WGS 84 (GRS80 and WGS 84 differ by 0.1 mm in the semi-minor axis).
        let n = project_lonlat(Datum::Nad83, lon, lat, 32617).unwrap();
        assert!((n.0 - x).abs() < 1e-3 && (n.1 - y).abs() < 1e-3, "{n:?}");
    }

    #[test]
    fn nad27_is_shifted_and_bad_targets_are_refused() {
        // NAD27 to WGS 84 in Montana moves a point by ~70 m (the mean CONUS shift): the same
        // numbers as NAD27 and as WGS 84 must differ by tens of metres, not by nothing.
        let a = project_lonlat(Datum::Wgs84, -114.0, 46.9, 32611).unwrap();
        let b = project_lonlat(Datum::Nad27, -114.0, 46.9, 32611).unwrap();
        let d = (a.0 - b.0).hypot(a.1 - b.1);
        assert!((30.0..150.0).contains(&d), "{d}");
        assert_eq!(
            project_lonlat(Datum::Wgs84, -114.0, 46.9, 4326),
            Err(ProjectError::Geographic(4326))
        );
        assert!(matches!(
            project_lonlat(Datum::Wgs84, -114.0, 146.9, 32611),
            Err(ProjectError::Failed { .. })
        ));
        // NAD27 / Alabama East is in US survey feet.
        assert!(matches!(
            project_lonlat(Datum::Nad27, -86.0, 32.0, 26729),
            Err(ProjectError::NotMetres(26729, _))
        ));
        assert_eq!(Datum::parse(" wgs84"), Some(Datum::Wgs84));
        assert_eq!(Datum::parse("NAD 27"), Some(Datum::Nad27));
        assert_eq!(Datum::parse("ED50"), None);
    }
}
