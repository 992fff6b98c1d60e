//! Coordinate reference systems by EPSG code, for the writers that need more than the code.
//!
//! The definitions (OGC WKT 1, as GDAL writes it) come from the `crs-definitions` crate, which
//! holds the EPSG registry's projected and geographic systems with 16-bit codes. From them:
//!
//! - [`epsg_wkt`]: the WKT of a code, written as the `.prj` sidecar of ESRI ASCII grids and as
//!   `crs_wkt` / `spatial_ref` of NetCDF grid mappings (GDAL, QGIS and ArcGIS all read WKT 1 in a
//!   `.prj`);
//! - [`is_geographic`]: whether the code names a geographic (longitude/latitude) system, which
//!   decides the GeoTIFF model type;
//! - [`cf_grid_mapping`]: the attributes of a CF-1.8 grid-mapping variable (CF conventions,
//!   appendix F): `grid_mapping_name` and its parameters translated from the WKT's `PROJECTION`
//!   and `PARAMETER` items, the ellipsoid (`semi_major_axis`, `inverse_flattening`),
//!   `longitude_of_prime_meridian`, `crs_wkt` and `spatial_ref` (GDAL's name for the same WKT).
//!   Projections CF names and this module translates: transverse Mercator (every UTM zone),
//!   Lambert conformal conic (1 and 2 standard parallels), Albers equal area, Lambert azimuthal
//!   equal area, Mercator (1SP) and plain longitude/latitude. For other projections the
//!   variable carries only the WKT, which GDAL reads all the same.

use crate::NcAttr;

/// The OGC WKT 1 definition of EPSG `code`, when the registry knows it.
pub fn epsg_wkt(code: u16) -> Option<&'static str> {
    crs_definitions::from_code(code).map(|d| d.wkt)
}

/// The EPSG code a WKT names for the whole system: its last `AUTHORITY["EPSG","N"]` (WKT 1, as
/// GDAL writes) or `ID["EPSG",N]` (WKT 2), which closes the outermost element. `None` for WKT
/// without one (e.g. ESRI-flavoured WKT) or a code above 65535.
pub fn epsg_from_wkt(wkt: &str) -> Option<u16> {
    // The last AUTHORITY / ID element directly inside the outermost one (bracket depth 1,
    // outside quotes).
    let (mut depth, mut quoted, mut found) = (0usize, false, None);
    for (i, c) in wkt.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '[' | '(' if !quoted => {
                if depth == 1 {
                    let head = wkt[..i].trim_end();
                    let keyword = head
                        .strip_suffix("AUTHORITY")
                        .or_else(|| head.strip_suffix("ID"));
                    if keyword.is_some_and(|h| h.trim_end().ends_with(',')) {
                        found = Some(i + 1);
                    }
                }
                depth += 1;
            }
            ']' | ')' if !quoted => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    let body = &wkt[found?..];
    let body = &body[..body.find([']', ')'])?];
    let (auth, code) = body.split_once(',')?;
    if auth.trim().trim_matches('"') != "EPSG" {
        return None;
    }
    code.trim().trim_matches('"').parse().ok()
}

/// The EPSG code of a `.prj` sidecar at `path` ([`epsg_from_wkt`]); `None` when the file is
/// missing, larger than 64 KiB, not UTF-8 or names no code.
pub fn epsg_of_prj(path: &std::path::Path) -> Option<u16> {
    let len = std::fs::metadata(path).ok()?.len();
    if len > 1 << 16 {
        return None;
    }
    epsg_from_wkt(&std::fs::read_to_string(path).ok()?)
}

/// Whether EPSG `code` is a geographic (longitude/latitude) system; `None` for an unknown code.
pub fn is_geographic(code: u16) -> Option<bool> {
    epsg_wkt(code).map(|w| w.starts_with("GEOGCS"))
}

/// The attributes of a CF grid-mapping variable for EPSG `code` (see the module docs); `None`
/// for a code the registry does not know.
pub fn cf_grid_mapping(code: u16) -> Option<Vec<(String, NcAttr)>> {
    let wkt = epsg_wkt(code)?;
    let mut attrs: Vec<(String, NcAttr)> = Vec::new();
    let param = |name: &str| wkt_parameter(wkt, name);
    let projection = wkt_quoted_after(wkt, "PROJECTION[");
    let name: Option<&str> = if wkt.starts_with("GEOGCS") {
        Some("latitude_longitude")
    } else if let Some(p) = PROJECTIONS.iter().find(|p| Some(p.wkt) == projection) {
        if p.two_parallels {
            two_parallels(&mut attrs, wkt);
        }
        for (cf, wkt_name) in p.params {
            put(&mut attrs, cf, param(wkt_name));
        }
        Some(p.cf)
    } else {
        // Another projection: only `crs_wkt` and `spatial_ref` describe it.
        None
    };
    if name.is_some() && !wkt.starts_with("GEOGCS") {
        put(&mut attrs, "false_easting", param("false_easting"));
        put(&mut attrs, "false_northing", param("false_northing"));
    }
    if let Some((a, rf)) = wkt_spheroid(wkt) {
        attrs.push(("semi_major_axis".into(), NcAttr::F64(vec![a])));
        attrs.push(("inverse_flattening".into(), NcAttr::F64(vec![rf])));
    }
    if let Some(pm) = wkt_number_after_name(wkt, "PRIMEM[") {
        attrs.push(("longitude_of_prime_meridian".into(), NcAttr::F64(vec![pm])));
    }
    if let Some(n) = name {
        attrs.insert(0, ("grid_mapping_name".into(), NcAttr::Text(n.into())));
    }
    attrs.push(("crs_wkt".into(), NcAttr::Text(wkt.into())));
    attrs.push(("spatial_ref".into(), NcAttr::Text(wkt.into())));
    attrs.push(("epsg_code".into(), NcAttr::Text(format!("EPSG:{code}"))));
    Some(attrs)
}

/// One WKT1 projection and its CF grid mapping: CF's attribute names with the WKT parameters
/// that give them (CF conventions, appendix F), in the order written.
struct Projection {
    wkt: &'static str,
    cf: &'static str,
    /// `standard_parallel` = [standard_parallel_1, standard_parallel_2] first.
    two_parallels: bool,
    params: &'static [(&'static str, &'static str)],
}

const PROJECTIONS: [Projection; 6] = [
    Projection {
        wkt: "Transverse_Mercator",
        cf: "transverse_mercator",
        two_parallels: false,
        params: &[
            ("longitude_of_central_meridian", "central_meridian"),
            ("latitude_of_projection_origin", "latitude_of_origin"),
            ("scale_factor_at_central_meridian", "scale_factor"),
        ],
    },
    Projection {
        wkt: "Lambert_Conformal_Conic_1SP",
        cf: "lambert_conformal_conic",
        two_parallels: false,
        params: &[
            ("standard_parallel", "latitude_of_origin"),
            ("latitude_of_projection_origin", "latitude_of_origin"),
            ("longitude_of_central_meridian", "central_meridian"),
            ("scale_factor_at_projection_origin", "scale_factor"),
        ],
    },
    Projection {
        wkt: "Lambert_Conformal_Conic_2SP",
        cf: "lambert_conformal_conic",
        two_parallels: true,
        params: &[
            ("latitude_of_projection_origin", "latitude_of_origin"),
            ("longitude_of_central_meridian", "central_meridian"),
        ],
    },
    Projection {
        wkt: "Albers_Conic_Equal_Area",
        cf: "albers_conical_equal_area",
        two_parallels: true,
        params: &[
            ("latitude_of_projection_origin", "latitude_of_center"),
            ("longitude_of_central_meridian", "longitude_of_center"),
        ],
    },
    Projection {
        wkt: "Lambert_Azimuthal_Equal_Area",
        cf: "lambert_azimuthal_equal_area",
        two_parallels: false,
        params: &[
            ("latitude_of_projection_origin", "latitude_of_center"),
            ("longitude_of_projection_origin", "longitude_of_center"),
        ],
    },
    Projection {
        wkt: "Mercator_1SP",
        cf: "mercator",
        two_parallels: false,
        params: &[
            ("longitude_of_projection_origin", "central_meridian"),
            ("scale_factor_at_projection_origin", "scale_factor"),
        ],
    },
];

/// Push `k = v` as a one-value double attribute when `v` is known.
fn put(attrs: &mut Vec<(String, NcAttr)>, k: &str, v: Option<f64>) {
    if let Some(v) = v {
        attrs.push((k.to_string(), NcAttr::F64(vec![v])));
    }
}

/// `standard_parallel` = [standard_parallel_1, standard_parallel_2] when both are present.
fn two_parallels(attrs: &mut Vec<(String, NcAttr)>, wkt: &str) {
    if let (Some(a), Some(b)) = (
        wkt_parameter(wkt, "standard_parallel_1"),
        wkt_parameter(wkt, "standard_parallel_2"),
    ) {
        attrs.push(("standard_parallel".into(), NcAttr::F64(vec![a, b])));
    }
}

/// The value of `PARAMETER["name",value]`.
fn wkt_parameter(wkt: &str, name: &str) -> Option<f64> {
    let key = format!("PARAMETER[\"{name}\",");
    let at = wkt.find(&key)? + key.len();
    leading_number(&wkt[at..])
}

/// The first quoted string after `key`, e.g. the projection name after `PROJECTION[`.
fn wkt_quoted_after<'a>(wkt: &'a str, key: &str) -> Option<&'a str> {
    let rest = &wkt[wkt.find(key)? + key.len()..];
    let rest = rest.strip_prefix('"')?;
    rest.find('"').map(|end| &rest[..end])
}

/// The first number after `key["name",`, e.g. the prime meridian's longitude.
fn wkt_number_after_name(wkt: &str, key: &str) -> Option<f64> {
    let rest = &wkt[wkt.find(key)? + key.len()..];
    let rest = rest.strip_prefix('"')?;
    let rest = &rest[rest.find('"')? + 1..];
    leading_number(rest.strip_prefix(',')?)
}

/// The semi-major axis and inverse flattening of `SPHEROID["name",a,rf,...]`.
fn wkt_spheroid(wkt: &str) -> Option<(f64, f64)> {
    let a = wkt_number_after_name(wkt, "SPHEROID[")?;
    let rest = &wkt[wkt.find("SPHEROID[")?..];
    let rest = &rest[rest.find("\",")? + 2..];
    let rest = &rest[rest.find(',')? + 1..];
    Some((a, leading_number(rest)?))
}

fn leading_number(s: &str) -> Option<f64> {
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E')))
        .unwrap_or(s.len());
    s[..end].parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get<'a>(attrs: &'a [(String, NcAttr)], k: &str) -> Option<&'a NcAttr> {
        attrs.iter().find(|(n, _)| n == k).map(|(_, v)| v)
    }

    #[test]
    fn utm_zone_is_transverse_mercator_with_its_parameters() {
        let a = cf_grid_mapping(32633).unwrap();
        assert_eq!(
            get(&a, "grid_mapping_name"),
            Some(&NcAttr::Text("transverse_mercator".into()))
        );
        let f = |k| match get(&a, k) {
            Some(NcAttr::F64(v)) => v[0],
            other => panic!("{k}: {other:?}"),
        };
        // UTM zone 33: central meridian 6 * 33 - 183 = 15 degrees.
        assert_eq!(f("longitude_of_central_meridian"), 15.0);
        assert_eq!(f("scale_factor_at_central_meridian"), 0.9996);
        assert_eq!(f("false_easting"), 500_000.0);
        assert_eq!(f("false_northing"), 0.0);
        assert_eq!(f("latitude_of_projection_origin"), 0.0);
        assert_eq!(f("semi_major_axis"), 6_378_137.0);
        assert_eq!(f("inverse_flattening"), 298.257223563);
        assert_eq!(f("longitude_of_prime_meridian"), 0.0);
        // Southern zones have a false northing of 10 000 km.
        let s = cf_grid_mapping(32733).unwrap();
        assert_eq!(
            get(&s, "false_northing"),
            Some(&NcAttr::F64(vec![10_000_000.0]))
        );
        assert!(matches!(get(&a, "crs_wkt"), Some(NcAttr::Text(w)) if w.contains("UTM zone 33N")));
    }

    #[test]
    fn epsg_code_of_a_wkt() {
        assert_eq!(epsg_from_wkt(epsg_wkt(32633).unwrap()), Some(32633));
        assert_eq!(epsg_from_wkt(epsg_wkt(4326).unwrap()), Some(4326));
        assert_eq!(
            epsg_from_wkt("PROJCRS[\"x\",BASEGEOGCRS[\"y\"],\n    ID[\"EPSG\",25832]]\n"),
            Some(25832)
        );
        // ESRI WKT has no authority; an inner authority is not the system's.
        assert_eq!(
            epsg_from_wkt("PROJCS[\"WGS_1984_UTM_Zone_33N\",UNIT[\"Meter\",1.0]]"),
            None
        );
        assert_eq!(
            epsg_from_wkt(
                "PROJCS[\"x\",UNIT[\"metre\",1,AUTHORITY[\"EPSG\",\"9001\"]],AXIS[\"E\",EAST]]"
            ),
            None
        );
        assert_eq!(
            epsg_from_wkt("PROJCS[\"x\",UNIT[\"metre\",1,AUTHORITY[\"EPSG\",\"9001\"]]]"),
            None
        );
        assert_eq!(
            epsg_from_wkt("PROJCS[\"x\",AUTHORITY[\"EPSG\",\"999999\"]]"),
            None
        );
    }

    #[test]
    fn geographic_and_unknown_codes() {
        assert_eq!(is_geographic(4326), Some(true));
        assert_eq!(is_geographic(26910), Some(false));
        assert_eq!(epsg_wkt(1), None);
        assert!(cf_grid_mapping(1).is_none());
        let g = cf_grid_mapping(4326).unwrap();
        assert_eq!(
            get(&g, "grid_mapping_name"),
            Some(&NcAttr::Text("latitude_longitude".into()))
        );
        assert!(get(&g, "false_easting").is_none());
    }

    #[test]
    fn lambert_conformal_two_parallels() {
        // EPSG:2154, RGF93 / Lambert-93: parallels 49 and 44, origin 46.5 N 3 E.
        let a = cf_grid_mapping(2154).unwrap();
        assert_eq!(
            get(&a, "grid_mapping_name"),
            Some(&NcAttr::Text("lambert_conformal_conic".into()))
        );
        assert_eq!(
            get(&a, "standard_parallel"),
            Some(&NcAttr::F64(vec![49.0, 44.0]))
        );
        assert_eq!(
            get(&a, "longitude_of_central_meridian"),
            Some(&NcAttr::F64(vec![3.0]))
        );
    }
}
