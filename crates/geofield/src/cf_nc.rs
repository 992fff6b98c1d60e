//! The CF pieces that every NetCDF output of the library shares (feature `io`): text and
//! attribute lists, and the horizontal cell-centre coordinates with their bounds.

use geofield_io::{NcAttr, NcData, NcVar};

/// A text attribute.
pub(crate) fn text(s: &str) -> NcAttr {
    NcAttr::Text(s.to_string())
}

/// Owned attributes from borrowed pairs.
pub(crate) fn attrs(list: &[(&str, NcAttr)]) -> Vec<(String, NcAttr)> {
    list.iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

/// The projected `x` and `y` coordinates of cell centres (metres; east, north) and their
/// `x_bnds`/`y_bnds` on the `nv` dimension, as CF and GDAL read them.
pub(crate) fn xy_coordinates<'a>(
    x: &'a [f64],
    x_bnds: &'a [f64],
    y: &'a [f64],
    y_bnds: &'a [f64],
) -> [NcVar<'a>; 4] {
    let axis = |name: &str, data: &'a [f64], standard: &str, long: &str, ax: &str| NcVar {
        name: name.into(),
        dims: vec![name.into()],
        data: NcData::F64(data),
        attrs: attrs(&[
            ("standard_name", text(standard)),
            ("long_name", text(long)),
            ("units", text("m")),
            ("axis", text(ax)),
            ("bounds", text(&format!("{name}_bnds"))),
        ]),
    };
    let bnds = |name: &str, data: &'a [f64]| NcVar {
        name: format!("{name}_bnds"),
        dims: vec![name.into(), "nv".into()],
        data: NcData::F64(data),
        attrs: attrs(&[("units", text("m"))]),
    };
    [
        axis(
            "x",
            x,
            "projection_x_coordinate",
            "x of cell centres (east)",
            "X",
        ),
        bnds("x", x_bnds),
        axis(
            "y",
            y,
            "projection_y_coordinate",
            "y of cell centres (north)",
            "Y",
        ),
        bnds("y", y_bnds),
    ]
}
