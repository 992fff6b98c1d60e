//! NetCDF-3 files (`.nc`) for 3-D fields, readable by the netCDF library, xarray, ncview and
//! SciPy's `netcdf_file`.
//!
//! The format is the NetCDF classic format (CDF-1) or, when the file is larger than 2 GiB, its
//! 64-bit offset variant (CDF-2); see "NetCDF File Format Specifications", Unidata,
//! <https://docs.unidata.ucar.edu/netcdf-c/current/file_format_specifications.html>. Layout:
//!
//! ```text
//! header = magic numrecs dim_list gatt_list var_list
//! magic  = 'C' 'D' 'F' (\x01 classic | \x02 64-bit offset)
//! numrecs = INT 0                              (no record dimension is ever written)
//! dim_list = \x00\x00\x00\x0A nelems [name length ...]     | ABSENT
//! att_list = \x00\x00\x00\x0C nelems [name nc_type nelems values ...] | ABSENT
//! var_list = \x00\x00\x00\x0B nelems [name ndims [dimid ...] att_list nc_type vsize begin ...] | ABSENT
//! ABSENT = 8 zero bytes;  name = nelems bytes, padded with \x00 to 4 bytes
//! data   = the values of each variable in turn, at its `begin`, padded to 4 bytes
//! ```
//!
//! Every integer and value is big-endian whatever the host; `begin` is a 32-bit offset in CDF-1
//! and a 64-bit one in CDF-2. Each variable is stored in row-major (C) order over its dimensions,
//! the last dimension varying fastest: a field on `(z, y, x)` holds cell `(k, j, i)` at index
//! `i + nx * (j + ny * k)`, the same order as a `.vti` written by [`crate::vtk`].
//!
//! Choices made by this writer:
//!
//! - Format: classic (CDF-1, magic `CDF\x01`, the most widely read) when the whole file fits in
//!   2 GiB - 1 bytes, otherwise 64-bit offset (CDF-2, magic `CDF\x02`). CDF-2 still limits each
//!   variable but the last to 2^32 - 4 bytes (its 32-bit `vsize`); a larger variable that is not
//!   the last is an error naming it (put the largest variable last or split the file). The last
//!   variable may be larger, with `vsize` = 2^32 - 1 as the specification prescribes.
//! - No record (unlimited) dimension: `numrecs` is 0 and every dimension has a fixed length of
//!   at least 1 (a length of 0 would declare a record dimension, so it is an error).
//! - Types: [`NcData::F32`] is `NC_FLOAT`, [`NcData::F64`] `NC_DOUBLE`, [`NcData::I32`] `NC_INT`.
//!   NetCDF-3 has no unsigned type: [`NcData::U8`] is written as `NC_BYTE` with its bit patterns
//!   unchanged, and the writer adds the attribute `_Unsigned = "true"` (unless the variable
//!   already has an `_Unsigned` attribute), the convention by which xarray and netCDF-Java read
//!   the bytes back as 0..=255; readers that ignore it (ncdump, SciPy) see -128..=127. The padding
//!   after a byte variable is the `NC_BYTE` default fill value `\x81`, as the specification asks.
//! - Attributes: [`NcAttr::Text`] is `NC_CHAR` (the UTF-8 bytes, no terminating NUL), the others
//!   `NC_FLOAT`, `NC_DOUBLE` and `NC_INT` arrays. `_FillValue` is an ordinary attribute, but it
//!   must hold exactly one value of the variable's own type (as the netCDF library requires), so
//!   a [`NcData::U8`] variable cannot have one (there is no byte attribute here).
//! - Checks, each an [`IoError::InvalidOutput`] naming the offending item: names valid per the
//!   specification (first character alphanumeric, `_` or non-ASCII; then also printable ASCII
//!   except `/`; no control characters, no trailing space), no duplicate names among
//!   dimensions, variables, global attributes or one variable's attributes, dimensions of known
//!   names, data lengths equal to the product of the dimension lengths, and a variable named like
//!   a dimension (a coordinate variable) must be one-dimensional on that dimension, which
//!   xarray requires. Non-ASCII names are written as given: the specification asks for Unicode
//!   NFC normalisation, which is the caller's job.
//!
//! The file is written atomically ([`write_atomic`]): a failed write leaves nothing behind.
//!
//! This module writes whatever dimensions, variables and attributes it is given; the CF
//! conventions are the caller's. For georeferencing, [`crate::crs::cf_grid_mapping`] gives the
//! attributes of a CF grid-mapping variable (conventionally a scalar `crs`, named by each
//! field's `grid_mapping` attribute), which GDAL and QGIS read.

use std::io::Write;
use std::path::Path;

use crate::IoError;
use crate::atomic::write_atomic;
use crate::vtk::write_chunked;

/// The values of one variable, borrowed from the caller, in row-major order over its dimensions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NcData<'a> {
    /// 32-bit floats (`NC_FLOAT`).
    F32(&'a [f32]),
    /// 64-bit floats (`NC_DOUBLE`).
    F64(&'a [f64]),
    /// 32-bit signed integers (`NC_INT`).
    I32(&'a [i32]),
    /// Unsigned bytes, written as `NC_BYTE` with `_Unsigned = "true"` (see the module docs).
    U8(&'a [u8]),
}

impl NcData<'_> {
    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            NcData::F32(v) => v.len(),
            NcData::F64(v) => v.len(),
            NcData::I32(v) => v.len(),
            NcData::U8(v) => v.len(),
        }
    }

    /// True when there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The netCDF external type.
    fn nc_type(&self) -> u32 {
        match self {
            NcData::F32(_) => NC_FLOAT,
            NcData::F64(_) => NC_DOUBLE,
            NcData::I32(_) => NC_INT,
            NcData::U8(_) => NC_BYTE,
        }
    }

    /// Bytes per value in the file.
    fn value_bytes(&self) -> u64 {
        match self {
            NcData::U8(_) => 1,
            NcData::F32(_) | NcData::I32(_) => 4,
            NcData::F64(_) => 8,
        }
    }

    /// The type's name for messages.
    fn type_name(&self) -> &'static str {
        match self {
            NcData::F32(_) => "f32 (NC_FLOAT)",
            NcData::F64(_) => "f64 (NC_DOUBLE)",
            NcData::I32(_) => "i32 (NC_INT)",
            NcData::U8(_) => "u8 (NC_BYTE)",
        }
    }

    /// Write the values big-endian, then the padding to 4 bytes.
    fn write_be(&self, w: &mut dyn Write) -> std::io::Result<()> {
        match self {
            NcData::F32(v) => write_chunked(w, v, |x| x.to_be_bytes()),
            NcData::F64(v) => write_chunked(w, v, |x| x.to_be_bytes()),
            NcData::I32(v) => write_chunked(w, v, |x| x.to_be_bytes()),
            NcData::U8(v) => {
                w.write_all(v)?;
                let pad = (4 - v.len() % 4) % 4;
                w.write_all(&[FILL_BYTE; 3][..pad])
            }
        }
    }
}

/// The value of an attribute.
#[derive(Debug, Clone, PartialEq)]
pub enum NcAttr {
    /// Text (`NC_CHAR`), e.g. `units = "m s-1"`.
    Text(String),
    /// 64-bit floats (`NC_DOUBLE`).
    F64(Vec<f64>),
    /// 32-bit floats (`NC_FLOAT`).
    F32(Vec<f32>),
    /// 32-bit signed integers (`NC_INT`).
    I32(Vec<i32>),
}

impl NcAttr {
    /// The netCDF external type.
    fn nc_type(&self) -> u32 {
        match self {
            NcAttr::Text(_) => NC_CHAR,
            NcAttr::F64(_) => NC_DOUBLE,
            NcAttr::F32(_) => NC_FLOAT,
            NcAttr::I32(_) => NC_INT,
        }
    }

    /// Number of elements (bytes for text).
    fn len(&self) -> usize {
        match self {
            NcAttr::Text(s) => s.len(),
            NcAttr::F64(v) => v.len(),
            NcAttr::F32(v) => v.len(),
            NcAttr::I32(v) => v.len(),
        }
    }

    /// Append the values big-endian, padded to 4 bytes with zeros.
    fn put_values(&self, buf: &mut Vec<u8>) {
        match self {
            NcAttr::Text(s) => {
                buf.extend_from_slice(s.as_bytes());
                pad_zero(buf);
            }
            NcAttr::F64(v) => v
                .iter()
                .for_each(|x| buf.extend_from_slice(&x.to_be_bytes())),
            NcAttr::F32(v) => v
                .iter()
                .for_each(|x| buf.extend_from_slice(&x.to_be_bytes())),
            NcAttr::I32(v) => v
                .iter()
                .for_each(|x| buf.extend_from_slice(&x.to_be_bytes())),
        }
    }
}

/// One variable: its name, the names of its dimensions (slowest first), values and attributes.
#[derive(Debug, Clone, PartialEq)]
pub struct NcVar<'a> {
    pub name: String,
    /// Dimension names, slowest varying first, e.g. `["z", "y", "x"]`; empty for a scalar.
    pub dims: Vec<String>,
    pub data: NcData<'a>,
    pub attrs: Vec<(String, NcAttr)>,
}

/// A whole file: named dimensions with their lengths, global attributes and variables, written
/// in the order given.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NcFile<'a> {
    pub dims: Vec<(String, usize)>,
    pub global_attrs: Vec<(String, NcAttr)>,
    pub vars: Vec<NcVar<'a>>,
}

const NC_BYTE: u32 = 1;
const NC_CHAR: u32 = 2;
const NC_INT: u32 = 4;
const NC_FLOAT: u32 = 5;
const NC_DOUBLE: u32 = 6;
const NC_DIMENSION: u32 = 0x0A;
const NC_VARIABLE: u32 = 0x0B;
const NC_ATTRIBUTE: u32 = 0x0C;
/// Default fill value of `NC_BYTE`, used for the padding after byte data.
const FILL_BYTE: u8 = 0x81;
/// The largest count or length the format stores (a non-negative 32-bit INT).
const MAX_COUNT: usize = i32::MAX as usize;
/// The largest file that the classic format (32-bit signed offsets) can address.
const CLASSIC_MAX_BYTES: u64 = i32::MAX as u64;
/// The largest `vsize`; bigger variables store `u32::MAX` (allowed for the last variable only).
const MAX_VSIZE: u64 = (1 << 32) - 4;

/// Where the data of each variable goes.
#[derive(Debug, Clone, PartialEq)]
struct Layout {
    /// 1 (classic, 32-bit offsets) or 2 (64-bit offsets).
    version: u8,
    /// File offset of each variable's first value.
    begins: Vec<u64>,
    /// The `vsize` field of each variable.
    vsizes: Vec<u32>,
}

/// Choose the format and place the variables after a header of `header_bytes_classic` bytes in
/// the classic format. `var_bytes[i]` is the unpadded size of variable `i`. An error names the
/// index of a variable too large for the format.
fn plan_layout(header_bytes_classic: u64, var_bytes: &[u64]) -> Result<Layout, (usize, u64)> {
    let padded = |n: u64| n.div_ceil(4) * 4;
    let place = |header: u64| -> (Vec<u64>, u64) {
        let mut at = header;
        let begins = var_bytes
            .iter()
            .map(|&n| {
                let b = at;
                at = at.saturating_add(padded(n));
                b
            })
            .collect();
        (begins, at)
    };
    let (begins, end) = place(header_bytes_classic);
    let (version, begins) = if end <= CLASSIC_MAX_BYTES {
        (1, begins)
    } else {
        // Each `begin` grows from 4 to 8 bytes.
        let extra = 4 * var_bytes.len() as u64;
        (2, place(header_bytes_classic + extra).0)
    };
    let last = var_bytes.len().saturating_sub(1);
    let mut vsizes = Vec::with_capacity(var_bytes.len());
    for (i, &n) in var_bytes.iter().enumerate() {
        let p = padded(n);
        if p <= MAX_VSIZE {
            vsizes.push(p as u32);
        } else if i == last {
            vsizes.push(u32::MAX);
        } else {
            return Err((i, n));
        }
    }
    Ok(Layout {
        version,
        begins,
        vsizes,
    })
}

/// Write `file` as NetCDF-3 at `path`, atomically. See the module docs for the format chosen,
/// the mapping of types and the checks; every error names the variable, dimension or attribute
/// at fault.
pub fn write_netcdf(path: &Path, file: &NcFile) -> Result<(), IoError> {
    let invalid = |reason: String| IoError::InvalidOutput {
        path: path.to_path_buf(),
        reason,
    };
    let dim_ids = check(file).map_err(invalid)?;
    let unsigned = NcAttr::Text("true".to_string());
    let var_attrs: Vec<Vec<(&str, &NcAttr)>> = file
        .vars
        .iter()
        .map(|v| {
            let mut a: Vec<(&str, &NcAttr)> =
                v.attrs.iter().map(|(n, a)| (n.as_str(), a)).collect();
            if matches!(v.data, NcData::U8(_)) && !a.iter().any(|(n, _)| *n == "_Unsigned") {
                a.push(("_Unsigned", &unsigned));
            }
            a
        })
        .collect();
    let var_bytes: Vec<u64> = file
        .vars
        .iter()
        .map(|v| v.data.len() as u64 * v.data.value_bytes())
        .collect();
    let classic_header = encode_header(
        file,
        &dim_ids,
        &var_attrs,
        &Layout {
            version: 1,
            begins: vec![0; file.vars.len()],
            vsizes: vec![0; file.vars.len()],
        },
    );
    let layout = plan_layout(classic_header.len() as u64, &var_bytes).map_err(|(i, n)| {
        invalid(format!(
            "NetCDF variable \"{}\" takes {n} bytes; the 64-bit offset format allows at most \
             {MAX_VSIZE} bytes for any variable but the last: write the largest variable last \
             or split the file",
            file.vars[i].name
        ))
    })?;
    let header = encode_header(file, &dim_ids, &var_attrs, &layout);
    write_atomic(path, |w| {
        w.write_all(&header)?;
        for v in &file.vars {
            v.data.write_be(w)?;
        }
        Ok(())
    })
}

/// Check names, dimensions and lengths; return each variable's dimension ids.
fn check(file: &NcFile) -> Result<Vec<Vec<u32>>, String> {
    let mut dim_names: Vec<&str> = Vec::with_capacity(file.dims.len());
    for (name, len) in &file.dims {
        check_name(name, "dimension")?;
        if dim_names.contains(&name.as_str()) {
            return Err(format!("two NetCDF dimensions are named \"{name}\""));
        }
        if *len == 0 {
            return Err(format!(
                "NetCDF dimension \"{name}\" has length 0, which would make it the record \
                 (unlimited) dimension; this writer only writes fixed dimensions of length 1 or more"
            ));
        }
        if *len > MAX_COUNT {
            return Err(format!(
                "NetCDF dimension \"{name}\" has length {len}, more than the format's {MAX_COUNT}"
            ));
        }
        dim_names.push(name);
    }
    check_attrs(&file.global_attrs, "global attribute", None)?;
    let mut var_names: Vec<&str> = Vec::with_capacity(file.vars.len());
    let mut all_ids = Vec::with_capacity(file.vars.len());
    for v in &file.vars {
        let name = &v.name;
        check_name(name, "variable")?;
        if var_names.contains(&name.as_str()) {
            return Err(format!("two NetCDF variables are named \"{name}\""));
        }
        var_names.push(name);
        let mut ids = Vec::with_capacity(v.dims.len());
        let mut expected: usize = 1;
        for d in &v.dims {
            let Some(id) = dim_names.iter().position(|n| n == d) else {
                return Err(format!(
                    "NetCDF variable \"{name}\" uses dimension \"{d}\", which is not among the \
                     file's dimensions ({})",
                    dim_names.join(", ")
                ));
            };
            ids.push(id as u32);
            expected = expected.saturating_mul(file.dims[id].1);
        }
        let shape = || {
            let lens: Vec<String> = ids
                .iter()
                .map(|&i| file.dims[i as usize].1.to_string())
                .collect();
            format!("({}) = ({})", v.dims.join(", "), lens.join(", "))
        };
        if v.data.len() != expected {
            return Err(format!(
                "NetCDF variable \"{name}\" has {} values but its dimensions {} need {expected}",
                v.data.len(),
                shape()
            ));
        }
        if dim_names.contains(&name.as_str()) && v.dims != [name.clone()] {
            return Err(format!(
                "NetCDF variable \"{name}\" is named like a dimension, so it is that dimension's \
                 coordinate variable and must have the single dimension ({name}), not {}",
                shape()
            ));
        }
        check_attrs(&v.attrs, "attribute", Some(v))?;
        all_ids.push(ids);
    }
    Ok(all_ids)
}

/// Check a list of attributes (of `var`, or global when `None`).
fn check_attrs(attrs: &[(String, NcAttr)], kind: &str, var: Option<&NcVar>) -> Result<(), String> {
    let owner = var.map_or(String::new(), |v| {
        format!(" of NetCDF variable \"{}\"", v.name)
    });
    let mut seen: Vec<&str> = Vec::with_capacity(attrs.len());
    for (name, value) in attrs {
        check_name(name, kind).map_err(|e| format!("{e}{owner}"))?;
        if seen.contains(&name.as_str()) {
            return Err(format!("two {kind}s{owner} are named \"{name}\""));
        }
        seen.push(name);
        if value.len() > MAX_COUNT {
            return Err(format!(
                "{kind} \"{name}\"{owner} has {} elements, more than the format's {MAX_COUNT}",
                value.len()
            ));
        }
        if let (Some(v), "_FillValue") = (var, name.as_str())
            && (value.len() != 1 || value.nc_type() != v.data.nc_type())
        {
            let why = if matches!(v.data, NcData::U8(_)) {
                ", which attributes cannot hold here"
            } else {
                ""
            };
            return Err(format!(
                "_FillValue{owner} must be a single value of the variable's type {}{why}",
                v.data.type_name()
            ));
        }
    }
    Ok(())
}

/// Check that `name` is a valid netCDF name (see the module docs).
fn check_name(name: &str, kind: &str) -> Result<(), String> {
    let bad = |why: &str| Err(format!("NetCDF {kind} name \"{name}\" is invalid: {why}"));
    let Some(first) = name.chars().next() else {
        return Err(format!("a NetCDF {kind} has an empty name"));
    };
    if !(first.is_ascii_alphanumeric() || first == '_' || !first.is_ascii()) {
        return bad("it must start with a letter, a digit or '_'");
    }
    if let Some(c) = name
        .chars()
        .find(|&c| c == '/' || (c.is_ascii() && !(' '..='~').contains(&c)) || c.is_control())
    {
        return bad(&format!("it contains {c:?}"));
    }
    if name.ends_with(' ') {
        return bad("it ends with a space");
    }
    if name.len() > MAX_COUNT {
        return bad("it is too long");
    }
    Ok(())
}

/// Encode the header for `layout` (whose begins may be placeholders when only measuring).
fn encode_header(
    file: &NcFile,
    dim_ids: &[Vec<u32>],
    var_attrs: &[Vec<(&str, &NcAttr)>],
    layout: &Layout,
) -> Vec<u8> {
    let mut b = Vec::with_capacity(1024);
    b.extend_from_slice(&[b'C', b'D', b'F', layout.version]);
    put_u32(&mut b, 0); // numrecs: no record dimension
    put_list_tag(&mut b, NC_DIMENSION, file.dims.len());
    for (name, len) in &file.dims {
        put_name(&mut b, name);
        put_u32(&mut b, *len as u32);
    }
    let global: Vec<(&str, &NcAttr)> = file
        .global_attrs
        .iter()
        .map(|(n, a)| (n.as_str(), a))
        .collect();
    put_attrs(&mut b, &global);
    put_list_tag(&mut b, NC_VARIABLE, file.vars.len());
    for (i, v) in file.vars.iter().enumerate() {
        put_name(&mut b, &v.name);
        put_u32(&mut b, dim_ids[i].len() as u32);
        for &id in &dim_ids[i] {
            put_u32(&mut b, id);
        }
        put_attrs(&mut b, &var_attrs[i]);
        put_u32(&mut b, v.data.nc_type());
        put_u32(&mut b, layout.vsizes[i]);
        if layout.version == 1 {
            put_u32(&mut b, layout.begins[i] as u32);
        } else {
            b.extend_from_slice(&layout.begins[i].to_be_bytes());
        }
    }
    b
}

/// A list's tag and count, or ABSENT (eight zero bytes) for an empty list.
fn put_list_tag(b: &mut Vec<u8>, tag: u32, n: usize) {
    put_u32(b, if n == 0 { 0 } else { tag });
    put_u32(b, n as u32);
}

fn put_attrs(b: &mut Vec<u8>, attrs: &[(&str, &NcAttr)]) {
    put_list_tag(b, NC_ATTRIBUTE, attrs.len());
    for (name, value) in attrs {
        put_name(b, name);
        put_u32(b, value.nc_type());
        put_u32(b, value.len() as u32);
        value.put_values(b);
    }
}

fn put_name(b: &mut Vec<u8>, name: &str) {
    put_u32(b, name.len() as u32);
    b.extend_from_slice(name.as_bytes());
    pad_zero(b);
}

fn put_u32(b: &mut Vec<u8>, v: u32) {
    b.extend_from_slice(&v.to_be_bytes());
}

/// Pad `b` with zeros to a multiple of 4 bytes (the header's padding).
fn pad_zero(b: &mut Vec<u8>) {
    while !b.len().is_multiple_of(4) {
        b.push(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_files_are_classic_with_padded_consecutive_variables() {
        let l = plan_layout(100, &[24, 5, 8]).unwrap();
        assert_eq!(l.version, 1);
        assert_eq!(l.begins, vec![100, 124, 132]);
        assert_eq!(l.vsizes, vec![24, 8, 8]);
        let empty = plan_layout(32, &[]).unwrap();
        assert_eq!((empty.version, empty.begins.len()), (1, 0));
    }

    #[test]
    fn files_over_2_gib_use_64_bit_offsets() {
        // Just fits the classic format...
        let fits = CLASSIC_MAX_BYTES - 103; // a multiple of 4: the file ends at 2^31 - 4
        assert_eq!(plan_layout(100, &[fits]).unwrap().version, 1);
        // ...one more padded word does not: every begin grows by 4 bytes per variable.
        let l = plan_layout(100, &[fits + 1, 4]).unwrap();
        assert_eq!(l.version, 2);
        assert_eq!(l.begins, vec![108, 108 + fits + 4]);
        assert!(l.begins[1] > CLASSIC_MAX_BYTES);
    }

    #[test]
    fn only_the_last_variable_may_exceed_4_gib() {
        let big = MAX_VSIZE + 1;
        let l = plan_layout(100, &[8, big]).unwrap();
        assert_eq!(l.vsizes, vec![8, u32::MAX]);
        assert_eq!(l.version, 2);
        assert_eq!(plan_layout(100, &[8, big, 8]), Err((1, big)));
        // Exactly 2^32 - 4 bytes still has its own vsize.
        assert_eq!(
            plan_layout(100, &[MAX_VSIZE, 8]).unwrap().vsizes,
            vec![MAX_VSIZE as u32, 8]
        );
    }

    #[test]
    fn names_follow_the_specification() {
        for ok in [
            "x",
            "_FillValue",
            "wind speed",
            "u_10m",
            "2d",
            "a.b-c+d@e",
            "θ",
            "a(b)",
        ] {
            assert!(check_name(ok, "variable").is_ok(), "{ok}");
        }
        for bad in ["", "a/b", " x", "x ", "-x", ".x", "a\tb", "a\nb", "a\u{7f}"] {
            assert!(check_name(bad, "variable").is_err(), "{bad:?}");
        }
    }
}
