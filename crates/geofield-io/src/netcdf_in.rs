//! Reading NetCDF-3 inputs (classic CDF-1 and 64-bit offset CDF-2), such as a weather model's
//! gridded wind, with the CF conventions for packed and missing values.
//!
//! The header and the raw values are parsed by the pure-Rust `netcdf3` crate; this module adds
//! what a user's file needs on top of it:
//! - a clear refusal of NetCDF-4 (HDF5) and CDF-5 files, naming the command that converts them
//!   (`nccopy -k classic in.nc out.nc`, or `cdo -f nc copy`), rather than a parse error;
//! - CF unpacking to f64 (CF 1.11 §8.1): a raw value equal to `_FillValue` or `missing_value`,
//!   or outside `valid_min`/`valid_max`/`valid_range`, is missing (NaN); the others become
//!   `raw × scale_factor + add_offset` (each optional);
//! - a size check before anything is allocated: a variable (or one record of it) is read only
//!   when its bytes fit in the file, so a corrupt header cannot ask for a huge buffer.

use std::io::Read;
use std::path::{Path, PathBuf};

use netcdf3::{DataType, DataVector, FileReader};

use crate::IoError;

/// What a variable is: its name and its dimensions (name, length), outermost first; the
/// unlimited (record) dimension, if the variable has it, is the first.
#[derive(Debug, Clone, PartialEq)]
pub struct NcVarInfo {
    pub name: String,
    pub dims: Vec<(String, usize)>,
    /// Whether the first dimension is the record (unlimited) dimension.
    pub is_record: bool,
}

/// An open NetCDF-3 file.
pub struct NcReader {
    path: PathBuf,
    file: FileReader,
    size: u64,
}

impl std::fmt::Debug for NcReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NcReader")
            .field("path", &self.path)
            .finish()
    }
}

/// The command that rewrites a NetCDF file in the classic format, for messages.
pub const CONVERT_HINT: &str = "convert it to the classic format first: `nccopy -k classic IN.nc OUT.nc` \
     (netCDF tools), `cdo -f nc copy IN OUT.nc` (CDO, also from GRIB), or \
     `ds.to_netcdf(\"OUT.nc\", format=\"NETCDF3_64BIT\")` (xarray)";

impl NcReader {
    /// Opens `path` and parses its header. NetCDF-4/HDF5, CDF-5 and files that are not NetCDF
    /// are refused with what to do.
    pub fn open(path: &Path) -> Result<Self, IoError> {
        let bad = |reason: String| IoError::BadNetcdf {
            path: path.to_path_buf(),
            reason,
        };
        let read_err = |source: std::io::Error| IoError::Read {
            path: path.to_path_buf(),
            source,
        };
        let mut magic = [0u8; 4];
        let mut f = std::fs::File::open(path).map_err(read_err)?;
        let size = f.metadata().map_err(read_err)?.len();
        let n = f.read(&mut magic).map_err(read_err)?;
        match &magic[..n] {
            b"CDF\x01" | b"CDF\x02" => {}
            b"CDF\x05" => {
                return Err(bad(format!(
                    "the file is NetCDF CDF-5 (64-bit data), which is not read here; {CONVERT_HINT}"
                )));
            }
            [0x89, b'H', b'D', b'F'] => {
                return Err(bad(format!(
                    "the file is NetCDF-4 (HDF5), which is not read here; {CONVERT_HINT}"
                )));
            }
            _ => {
                return Err(bad(format!(
                    "not a NetCDF file (it does not start with \"CDF\"); GRIB files: {CONVERT_HINT}"
                )));
            }
        }
        let file = FileReader::open(path).map_err(|e| bad(format!("bad header: {e:?}")))?;
        Ok(Self {
            path: path.to_path_buf(),
            file,
            size,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The names of every variable, in file order.
    pub fn var_names(&self) -> Vec<String> {
        self.file.data_set().get_var_names()
    }

    /// The variable `name`, or `None`.
    pub fn var(&self, name: &str) -> Option<NcVarInfo> {
        let v = self.file.data_set().get_var(name)?;
        Some(NcVarInfo {
            name: name.to_string(),
            dims: v.get_dims().iter().map(|d| (d.name(), d.size())).collect(),
            is_record: v.is_record_var(),
        })
    }

    /// Whether `var` holds characters (NC_CHAR: text such as WRF's `Times`).
    pub fn is_text(&self, var: &str) -> bool {
        self.file
            .data_set()
            .get_var(var)
            .is_some_and(|v| v.data_type() == DataType::U8)
    }

    /// The text attribute `attr` of variable `var` (`var` = "" for a global attribute).
    pub fn attr_text(&self, var: &str, attr: &str) -> Option<String> {
        let ds = self.file.data_set();
        if var.is_empty() {
            ds.get_global_attr_as_string(attr)
        } else {
            ds.get_var_attr_as_string(var, attr)
        }
    }

    /// The numeric attribute `attr` of `var` as f64 values, whatever its type.
    pub fn attr_numbers(&self, var: &str, attr: &str) -> Option<Vec<f64>> {
        let ds = self.file.data_set();
        let a = if var.is_empty() {
            ds.get_global_attr(attr)?
        } else {
            ds.get_var_attr(var, attr)?
        };
        let out: Vec<f64> = match a.data_type() {
            DataType::I8 => a.get_i8()?.iter().map(|&x| x as f64).collect(),
            DataType::U8 => return None,
            DataType::I16 => a.get_i16()?.iter().map(|&x| x as f64).collect(),
            DataType::I32 => a.get_i32()?.iter().map(|&x| x as f64).collect(),
            DataType::F32 => a.get_f32()?.iter().map(|&x| x as f64).collect(),
            DataType::F64 => a.get_f64()?.to_vec(),
        };
        Some(out)
    }

    /// The number of records (the length of the unlimited dimension; 0 without one).
    pub fn num_records(&self) -> usize {
        self.file.data_set().num_records().unwrap_or(0)
    }

    /// The values of `var` as f64 after CF unpacking (see the module docs): the whole variable
    /// with `record` = `None`, or record `record` of a record variable (every dimension but the
    /// first). Missing values are NaN.
    pub fn read(&mut self, var: &str, record: Option<usize>) -> Result<Vec<f64>, IoError> {
        let path = self.path.clone();
        let bad = |reason: String| IoError::BadNetcdf {
            path: path.clone(),
            reason,
        };
        let (len, chunk_len, item, is_record) = {
            let v = self
                .file
                .data_set()
                .get_var(var)
                .ok_or_else(|| bad(format!("no variable named {var:?}")))?;
            (
                v.len(),
                v.chunk_len(),
                v.data_type().size_of(),
                v.is_record_var(),
            )
        };
        let n = match record {
            Some(r) if is_record => {
                if r >= self.num_records() {
                    return Err(bad(format!(
                        "variable {var:?} has {} records; record {r} does not exist",
                        self.num_records()
                    )));
                }
                chunk_len
            }
            Some(_) => {
                return Err(bad(format!(
                    "variable {var:?} has no record (unlimited) dimension"
                )));
            }
            None => len,
        };
        let bytes = (n as u128) * (item as u128);
        if bytes > self.size as u128 {
            return Err(bad(format!(
                "variable {var:?} declares {n} values ({bytes} bytes), more than the file holds \
                 ({} bytes): the file is truncated or corrupt",
                self.size
            )));
        }
        let data = match record {
            Some(r) => self.file.read_record(var, r),
            None => self.file.read_var(var),
        }
        .map_err(|e| bad(format!("variable {var:?}: {e:?}")))?;
        let raw: Vec<f64> = match data {
            DataVector::I8(d) => d.into_iter().map(f64::from).collect(),
            DataVector::U8(d) => d.into_iter().map(f64::from).collect(),
            DataVector::I16(d) => d.into_iter().map(f64::from).collect(),
            DataVector::I32(d) => d.into_iter().map(f64::from).collect(),
            DataVector::F32(d) => d.into_iter().map(f64::from).collect(),
            DataVector::F64(d) => d,
        };
        Ok(self.unpack(var, raw))
    }

    /// CF unpacking of raw values of `var` (module docs).
    fn unpack(&self, var: &str, mut raw: Vec<f64>) -> Vec<f64> {
        let one = |a: &str| self.attr_numbers(var, a).and_then(|v| v.first().copied());
        let fills: Vec<f64> = ["_FillValue", "missing_value"]
            .iter()
            .filter_map(|a| self.attr_numbers(var, a))
            .flatten()
            .collect();
        let (mut lo, mut hi) = (one("valid_min"), one("valid_max"));
        if let Some(r) = self.attr_numbers(var, "valid_range")
            && r.len() == 2
        {
            (lo, hi) = (Some(r[0]), Some(r[1]));
        }
        let scale = one("scale_factor").unwrap_or(1.0);
        let offset = one("add_offset").unwrap_or(0.0);
        for x in &mut raw {
            let missing = !x.is_finite()
                || fills.contains(x)
                || lo.is_some_and(|l| *x < l)
                || hi.is_some_and(|h| *x > h);
            *x = if missing {
                f64::NAN
            } else {
                *x * scale + offset
            };
        }
        raw
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::{NcAttr, NcData, NcFile, NcVar, write_netcdf};

    /// A file written by our own NetCDF writer (an independent implementation of the format)
    /// reads back with its values, dimensions and attributes; packing and fill values are
    /// applied as CF says.
    #[test]
    fn reads_back_what_the_writer_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.nc");
        let lat = [50.0, 49.5, 49.0];
        let lon = [10.0, 10.5];
        let packed: Vec<i32> = vec![100, -200, 300, -32767, 0, 7];
        let plain: Vec<f32> = vec![1.5, 2.5, 3.5, 4.5, 5.5, 6.5];
        let file = NcFile {
            dims: vec![("lat".into(), 3), ("lon".into(), 2)],
            global_attrs: vec![("Conventions".into(), NcAttr::Text("CF-1.8".into()))],
            vars: vec![
                NcVar {
                    name: "lat".into(),
                    dims: vec!["lat".into()],
                    data: NcData::F64(&lat),
                    attrs: vec![("units".into(), NcAttr::Text("degrees_north".into()))],
                },
                NcVar {
                    name: "lon".into(),
                    dims: vec!["lon".into()],
                    data: NcData::F64(&lon),
                    attrs: vec![],
                },
                NcVar {
                    name: "u10".into(),
                    dims: vec!["lat".into(), "lon".into()],
                    data: NcData::I32(&packed),
                    attrs: vec![
                        ("scale_factor".into(), NcAttr::F64(vec![0.01])),
                        ("add_offset".into(), NcAttr::F64(vec![1.0])),
                        ("_FillValue".into(), NcAttr::I32(vec![-32767])),
                    ],
                },
                NcVar {
                    name: "v10".into(),
                    dims: vec!["lat".into(), "lon".into()],
                    data: NcData::F32(&plain),
                    attrs: vec![("valid_max".into(), NcAttr::F32(vec![6.0]))],
                },
            ],
        };
        write_netcdf(&path, &file).unwrap();
        let mut r = NcReader::open(&path).unwrap();
        assert_eq!(r.var_names(), ["lat", "lon", "u10", "v10"]);
        let info = r.var("u10").unwrap();
        assert_eq!(info.dims, [("lat".to_string(), 3), ("lon".to_string(), 2)]);
        assert!(!info.is_record);
        assert_eq!(r.attr_text("lat", "units").unwrap(), "degrees_north");
        assert_eq!(r.attr_text("", "Conventions").unwrap(), "CF-1.8");
        assert_eq!(r.read("lat", None).unwrap(), lat);
        let u = r.read("u10", None).unwrap();
        // raw × 0.01 + 1 (the products are exact to an ulp of the values).
        for (got, raw) in u.iter().zip(&packed) {
            if *raw == -32767 {
                assert!(got.is_nan());
            } else {
                assert!((got - (*raw as f64 * 0.01 + 1.0)).abs() < 1e-12);
            }
        }
        let v = r.read("v10", None).unwrap();
        assert_eq!(&v[..5], &[1.5, 2.5, 3.5, 4.5, 5.5]);
        assert!(v[5].is_nan(), "6.5 is above valid_max");
        let e = r.read("w10", None).unwrap_err().to_string();
        assert!(e.contains("a.nc") && e.contains("w10"), "{e}");
        let e = r.read("u10", Some(0)).unwrap_err().to_string();
        assert!(e.contains("no record"), "{e}");
    }

    /// NetCDF-4 (HDF5), CDF-5 and other files are refused with the conversion command.
    #[test]
    fn refuses_other_formats() {
        let dir = tempfile::tempdir().unwrap();
        for (name, bytes, says) in [
            ("h.nc", &b"\x89HDF\r\n\x1a\n...."[..], "NetCDF-4"),
            ("c5.nc", &b"CDF\x05\0\0\0\0"[..], "CDF-5"),
            ("t.nc", &b"hello"[..], "not a NetCDF"),
        ] {
            let p = dir.path().join(name);
            std::fs::write(&p, bytes).unwrap();
            let e = NcReader::open(&p).unwrap_err().to_string();
            assert!(
                e.contains(name) && e.contains(says) && e.contains("nccopy"),
                "{e}"
            );
        }
        // A truncated classic file: a header error, not a panic.
        let p = dir.path().join("cut.nc");
        std::fs::write(&p, b"CDF\x01\0\0").unwrap();
        let e = NcReader::open(&p).unwrap_err().to_string();
        assert!(e.contains("cut.nc"), "{e}");
    }
}
