//! CRS attributes for xarray outputs: the CF grid-mapping attributes of an EPSG code (the same
//! table the NetCDF writer uses), so `spatial_ref` opens in rioxarray, GDAL and QGIS.

use geofield_io::NcAttr;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors;

/// The attributes of a CF `spatial_ref` variable for EPSG `code` (`crs_wkt`, `spatial_ref`,
/// `grid_mapping_name` and its parameters where CF names the projection).
#[pyfunction]
pub fn crs_attrs(py: Python<'_>, code: u32) -> PyResult<Bound<'_, PyDict>> {
    let known = u16::try_from(code)
        .ok()
        .and_then(|c| geofield_io::crs::cf_grid_mapping(c).map(|a| (c, a)));
    let Some((_, attrs)) = known else {
        return Err(errors::arg(
            "crs",
            format!("EPSG:{code} is not in geofield's CRS registry"),
        ));
    };
    let d = PyDict::new(py);
    for (name, value) in attrs {
        match value {
            NcAttr::Text(s) => d.set_item(name, s)?,
            NcAttr::F64(v) if v.len() == 1 => d.set_item(name, v[0])?,
            NcAttr::F64(v) => d.set_item(name, v)?,
            NcAttr::F32(v) => d.set_item(name, v)?,
            NcAttr::I32(v) => d.set_item(name, v)?,
        }
    }
    Ok(d)
}
