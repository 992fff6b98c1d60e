//! NetCDF-3 files read back with a minimal reader written here from the format specification
//! (header, then every value at its variable's `begin`), independent of the writer's code.

use geofield_io::netcdf::{NcAttr, NcData, NcFile, NcVar, write_netcdf};

/// An attribute or variable value as read from the file.
#[derive(Debug, Clone, PartialEq)]
enum Val {
    Byte(Vec<i8>),
    Text(String),
    Int(Vec<i32>),
    Float(Vec<f32>),
    Double(Vec<f64>),
}

#[derive(Debug)]
struct Var {
    name: String,
    dim_ids: Vec<usize>,
    attrs: Vec<(String, Val)>,
    nc_type: u32,
    vsize: u32,
    begin: u64,
}

#[derive(Debug)]
struct Header {
    version: u8,
    numrecs: u32,
    dims: Vec<(String, usize)>,
    gatts: Vec<(String, Val)>,
    vars: Vec<Var>,
    /// Bytes the header takes.
    len: usize,
}

struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> &[u8] {
        let s = &self.b[self.at..self.at + n];
        self.at += n;
        s
    }
    fn u32(&mut self) -> u32 {
        u32::from_be_bytes(self.take(4).try_into().unwrap())
    }
    fn u64(&mut self) -> u64 {
        u64::from_be_bytes(self.take(8).try_into().unwrap())
    }
    /// Skip padding to a multiple of 4, asserting it is zero (header padding).
    fn skip_zero_pad(&mut self) {
        while !self.at.is_multiple_of(4) {
            assert_eq!(self.take(1)[0], 0, "header padding must be zero");
        }
    }
    fn name(&mut self) -> String {
        let n = self.u32() as usize;
        let s = String::from_utf8(self.take(n).to_vec()).unwrap();
        self.skip_zero_pad();
        s
    }
    /// `n` values of `nc_type`, unpadded.
    fn values(&mut self, nc_type: u32, n: usize) -> Val {
        match nc_type {
            1 => Val::Byte(self.take(n).iter().map(|&b| b as i8).collect()),
            2 => Val::Text(String::from_utf8(self.take(n).to_vec()).unwrap()),
            4 => Val::Int(
                (0..n)
                    .map(|_| i32::from_be_bytes(self.take(4).try_into().unwrap()))
                    .collect(),
            ),
            5 => Val::Float((0..n).map(|_| f32::from_bits(self.u32())).collect()),
            6 => Val::Double((0..n).map(|_| f64::from_bits(self.u64())).collect()),
            t => panic!("unexpected nc_type {t}"),
        }
    }
    /// A list header: (tag, count); ABSENT is (0, 0).
    fn list(&mut self, tag: u32) -> usize {
        let t = self.u32();
        let n = self.u32() as usize;
        if n == 0 {
            assert_eq!(t, 0, "an empty list must be ABSENT");
        } else {
            assert_eq!(t, tag);
        }
        n
    }
    fn attrs(&mut self) -> Vec<(String, Val)> {
        let n = self.list(0x0C);
        (0..n)
            .map(|_| {
                let name = self.name();
                let t = self.u32();
                let k = self.u32() as usize;
                let v = self.values(t, k);
                self.skip_zero_pad();
                (name, v)
            })
            .collect()
    }
}

fn read_header(bytes: &[u8]) -> Header {
    assert_eq!(&bytes[..3], b"CDF");
    let version = bytes[3];
    assert!(version == 1 || version == 2, "version {version}");
    let mut c = Cursor { b: bytes, at: 4 };
    let numrecs = c.u32();
    let n_dims = c.list(0x0A);
    let dims = (0..n_dims)
        .map(|_| {
            let name = c.name();
            (name, c.u32() as usize)
        })
        .collect();
    let gatts = c.attrs();
    let n_vars = c.list(0x0B);
    let vars = (0..n_vars)
        .map(|_| {
            let name = c.name();
            let nd = c.u32() as usize;
            let dim_ids = (0..nd).map(|_| c.u32() as usize).collect();
            let attrs = c.attrs();
            let nc_type = c.u32();
            let vsize = c.u32();
            let begin = if version == 1 {
                c.u32() as u64
            } else {
                c.u64()
            };
            Var {
                name,
                dim_ids,
                attrs,
                nc_type,
                vsize,
                begin,
            }
        })
        .collect();
    Header {
        version,
        numrecs,
        dims,
        gatts,
        vars,
        len: c.at,
    }
}

impl Header {
    fn var(&self, name: &str) -> &Var {
        self.vars.iter().find(|v| v.name == name).unwrap()
    }
    fn shape(&self, v: &Var) -> Vec<usize> {
        v.dim_ids.iter().map(|&i| self.dims[i].1).collect()
    }
    fn dim_names(&self, v: &Var) -> Vec<&str> {
        v.dim_ids.iter().map(|&i| self.dims[i].0.as_str()).collect()
    }
    /// All values of `v`, read at its `begin`.
    fn data(&self, bytes: &[u8], v: &Var) -> Val {
        let n = self.shape(v).iter().product();
        let mut c = Cursor {
            b: bytes,
            at: v.begin as usize,
        };
        c.values(v.nc_type, n)
    }
}

fn text(s: &str) -> NcAttr {
    NcAttr::Text(s.to_string())
}

fn attr<'a>(attrs: &'a [(String, Val)], name: &str) -> &'a Val {
    &attrs
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no attribute {name}"))
        .1
}

fn coord<'a>(name: &str, values: &'a [f64], axis: &str) -> NcVar<'a> {
    NcVar {
        name: name.into(),
        dims: vec![name.into()],
        data: NcData::F64(values),
        attrs: vec![
            ("units".into(), text("m")),
            ("axis".into(), text(axis)),
            ("standard_name".into(), text(&format!("projection_{name}"))),
        ],
    }
}

#[test]
fn a_small_file_reads_back_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("wind.nc");
    let (nz, ny, nx) = (2, 3, 4);
    // Distinct values that would not survive a wrong byte order or index order.
    let u: Vec<f32> = (0..nz * ny * nx)
        .map(|i| 0.25 + i as f32 * 1.5 - 7.0)
        .collect();
    let x = [0.5, 1.5, 2.5, 3.5];
    let y = [10.0, 20.0, 30.0];
    let z = [-1.25, 1e-300];
    let ids: Vec<i32> = (0..ny * nx)
        .map(|i| i as i32 * 1_000_003 - 6_000_000)
        .collect();
    let mask = [0u8, 1, 255];
    let file = NcFile {
        dims: vec![("z".into(), nz), ("y".into(), ny), ("x".into(), nx)],
        global_attrs: vec![
            ("Conventions".into(), text("CF-1.8")),
            ("title".into(), text("test wind")),
            ("version".into(), NcAttr::I32(vec![3, -7])),
        ],
        vars: vec![
            coord("z", &z, "Z"),
            coord("y", &y, "Y"),
            coord("x", &x, "X"),
            NcVar {
                name: "u".into(),
                dims: vec!["z".into(), "y".into(), "x".into()],
                data: NcData::F32(&u),
                attrs: vec![
                    ("units".into(), text("m s-1")),
                    ("_FillValue".into(), NcAttr::F32(vec![-9999.0])),
                    ("valid_range".into(), NcAttr::F64(vec![-100.0, 100.0])),
                ],
            },
            // Three bytes: one byte of padding before the next variable.
            NcVar {
                name: "mask".into(),
                dims: vec!["y".into()],
                data: NcData::U8(&mask),
                attrs: vec![],
            },
            NcVar {
                name: "cell_id".into(),
                dims: vec!["y".into(), "x".into()],
                data: NcData::I32(&ids),
                attrs: vec![("long_name".into(), text("cell id"))],
            },
        ],
    };
    write_netcdf(&p, &file).unwrap();
    let bytes = std::fs::read(&p).unwrap();
    let h = read_header(&bytes);

    assert_eq!(h.version, 1, "a small file is classic CDF-1");
    assert_eq!(h.numrecs, 0);
    assert_eq!(
        h.dims,
        vec![
            ("z".to_string(), 2),
            ("y".to_string(), 3),
            ("x".to_string(), 4)
        ]
    );
    assert_eq!(
        h.gatts,
        vec![
            ("Conventions".to_string(), Val::Text("CF-1.8".into())),
            ("title".to_string(), Val::Text("test wind".into())),
            ("version".to_string(), Val::Int(vec![3, -7])),
        ]
    );
    let names: Vec<&str> = h.vars.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["z", "y", "x", "u", "mask", "cell_id"]);

    // Coordinate variables: 1-D f64 on their own dimension with units and axis.
    for (name, values, axis) in [("x", &x[..], "X"), ("y", &y[..], "Y"), ("z", &z[..], "Z")] {
        let v = h.var(name);
        assert_eq!(h.dim_names(v), [name]);
        assert_eq!(v.nc_type, 6);
        assert_eq!(v.vsize as usize, values.len() * 8);
        assert_eq!(attr(&v.attrs, "units"), &Val::Text("m".into()));
        assert_eq!(attr(&v.attrs, "axis"), &Val::Text(axis.into()));
        assert_eq!(
            attr(&v.attrs, "standard_name"),
            &Val::Text(format!("projection_{name}"))
        );
        assert_eq!(h.data(&bytes, v), Val::Double(values.to_vec()));
    }

    let vu = h.var("u");
    assert_eq!(h.dim_names(vu), ["z", "y", "x"]);
    assert_eq!(h.shape(vu), [2, 3, 4]);
    assert_eq!(vu.nc_type, 5);
    assert_eq!(vu.vsize, 24 * 4);
    assert_eq!(
        vu.attrs,
        vec![
            ("units".to_string(), Val::Text("m s-1".into())),
            ("_FillValue".to_string(), Val::Float(vec![-9999.0])),
            ("valid_range".to_string(), Val::Double(vec![-100.0, 100.0])),
        ]
    );
    assert_eq!(h.data(&bytes, vu), Val::Float(u.clone()));
    // Row-major: u[k=1, j=2, i=3] is the last value, u[0, 1, 2] is at 0*12 + 1*4 + 2.
    let Val::Float(read_u) = h.data(&bytes, vu) else {
        unreachable!()
    };
    assert_eq!(read_u[4 + 2], u[6]);

    // Unsigned bytes: NC_BYTE with the bit patterns kept and _Unsigned = "true".
    let vm = h.var("mask");
    assert_eq!(vm.nc_type, 1);
    assert_eq!(vm.vsize, 4, "vsize includes the padding");
    assert_eq!(
        vm.attrs,
        vec![("_Unsigned".to_string(), Val::Text("true".into()))]
    );
    assert_eq!(h.data(&bytes, vm), Val::Byte(vec![0, 1, -1]));
    assert_eq!(
        bytes[vm.begin as usize + 3],
        0x81,
        "byte padding is the fill value"
    );

    let vi = h.var("cell_id");
    assert_eq!(h.dim_names(vi), ["y", "x"]);
    assert_eq!(vi.nc_type, 4);
    assert_eq!(attr(&vi.attrs, "long_name"), &Val::Text("cell id".into()));
    assert_eq!(h.data(&bytes, vi), Val::Int(ids.clone()));

    // Data follow the header, each variable 4-byte aligned right after the previous one, and
    // the file ends with the last variable.
    let mut at = h.len as u64;
    for v in &h.vars {
        assert_eq!(v.begin % 4, 0, "{}", v.name);
        assert_eq!(v.begin, at, "{}", v.name);
        at += v.vsize as u64;
    }
    assert_eq!(at, bytes.len() as u64);
    // Only the file itself is left in the folder.
    assert_eq!(crate::dir_entries(dir.path()), ["wind.nc"]);
}

#[test]
fn an_empty_file_is_the_32_byte_minimum() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("empty.nc");
    write_netcdf(&p, &NcFile::default()).unwrap();
    let bytes = std::fs::read(&p).unwrap();
    let mut expected = b"CDF\x01".to_vec();
    expected.extend_from_slice(&[0; 28]);
    assert_eq!(bytes, expected);
}

#[test]
fn scalars_and_names_with_punctuation_and_unicode() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("scalar.nc");
    let file = NcFile {
        dims: vec![],
        global_attrs: vec![("history".into(), text("θ (K) @ 2 m"))],
        vars: vec![NcVar {
            name: "speed (m per s)".into(),
            dims: vec![],
            data: NcData::F64(&[42.5]),
            attrs: vec![("empty".into(), NcAttr::F32(vec![]))],
        }],
    };
    write_netcdf(&p, &file).unwrap();
    let bytes = std::fs::read(&p).unwrap();
    let h = read_header(&bytes);
    assert_eq!(h.gatts[0].1, Val::Text("θ (K) @ 2 m".into()));
    let v = &h.vars[0];
    assert_eq!(v.name, "speed (m per s)");
    assert!(v.dim_ids.is_empty());
    assert_eq!(v.attrs, vec![("empty".to_string(), Val::Float(vec![]))]);
    assert_eq!(h.data(&bytes, v), Val::Double(vec![42.5]));
}

#[test]
fn bad_files_are_errors_naming_the_culprit_and_leave_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.nc");
    let ok = vec![0.0f32; 6];
    let short = vec![0.0f32; 5];
    let var = |name: &str, dims: &[&str], data| NcVar {
        name: name.into(),
        dims: dims.iter().map(|d| d.to_string()).collect(),
        data,
        attrs: vec![],
    };
    let base = NcFile {
        dims: vec![("y".into(), 2), ("x".into(), 3)],
        global_attrs: vec![],
        vars: vec![var("t", &["y", "x"], NcData::F32(&ok))],
    };
    write_netcdf(&p, &base).unwrap();
    std::fs::remove_file(&p).unwrap();

    let err = |f: &NcFile| write_netcdf(&p, f).unwrap_err().to_string();
    let with_vars = |vars| NcFile {
        vars,
        ..base.clone()
    };

    let e = err(&with_vars(vec![
        var("t", &["y", "x"], NcData::F32(&ok)),
        var("pressure", &["y", "x"], NcData::F32(&short)),
    ]));
    assert!(
        e.contains("\"pressure\"") && e.contains("5 values") && e.contains("(y, x) = (2, 3)"),
        "{e}"
    );
    assert!(e.contains("need 6"), "{e}");

    let e = err(&with_vars(vec![var("t", &["y", "z"], NcData::F32(&ok))]));
    assert!(e.contains("\"t\"") && e.contains("dimension \"z\""), "{e}");

    let e = err(&with_vars(vec![
        var("t", &["y", "x"], NcData::F32(&ok)),
        var("t", &["y", "x"], NcData::F32(&ok)),
    ]));
    assert!(
        e.contains("two NetCDF variables") && e.contains("\"t\""),
        "{e}"
    );

    let e = err(&NcFile {
        dims: vec![("x".into(), 3), ("x".into(), 3)],
        ..NcFile::default()
    });
    assert!(
        e.contains("two NetCDF dimensions") && e.contains("\"x\""),
        "{e}"
    );

    let e = err(&NcFile {
        dims: vec![("t".into(), 0)],
        ..NcFile::default()
    });
    assert!(e.contains("\"t\"") && e.contains("length 0"), "{e}");

    for bad in ["a/b", "_x ", " x", ""] {
        let e = err(&with_vars(vec![var(bad, &["y", "x"], NcData::F32(&ok))]));
        assert!(e.contains("name"), "{bad:?}: {e}");
    }
    let e = err(&NcFile {
        global_attrs: vec![("a/b".into(), text("x")), ("ok".into(), text("y"))],
        ..base.clone()
    });
    assert!(e.contains("global attribute name \"a/b\""), "{e}");
    let e = err(&NcFile {
        global_attrs: vec![("c".into(), text("x")), ("c".into(), text("y"))],
        ..base.clone()
    });
    assert!(
        e.contains("two global attributes") && e.contains("\"c\""),
        "{e}"
    );

    // _FillValue must be one value of the variable's type.
    let mut filled = var("t", &["y", "x"], NcData::F32(&ok));
    filled.attrs = vec![("_FillValue".into(), NcAttr::F64(vec![-1.0]))];
    let e = err(&with_vars(vec![filled]));
    assert!(e.contains("_FillValue") && e.contains("\"t\""), "{e}");

    // A coordinate variable must be 1-D on its own dimension.
    let e = err(&with_vars(vec![var("x", &["y", "x"], NcData::F32(&ok))]));
    assert!(e.contains("\"x\"") && e.contains("coordinate"), "{e}");

    // Nothing was left behind.
    assert!(crate::dir_entries(dir.path()).is_empty());
}

#[test]
fn cf_grid_mapping_variable_round_trips() {
    // A scalar `crs` with the attributes of EPSG:26910 (NAD83 / UTM zone 10N), and a field
    // that names it, as CF-1.8 asks and GDAL reads.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("mapped.nc");
    let gm = geofield_io::crs::cf_grid_mapping(26910).unwrap();
    let (x, y) = ([500_015.0, 500_045.0], [6_000_015.0]);
    let file = NcFile {
        dims: vec![("y".into(), 1), ("x".into(), 2)],
        global_attrs: vec![("Conventions".into(), text("CF-1.8"))],
        vars: vec![
            coord("x", &x, "X"),
            coord("y", &y, "Y"),
            NcVar {
                name: "crs".into(),
                dims: vec![],
                data: NcData::I32(&[0]),
                attrs: gm,
            },
            NcVar {
                name: "t".into(),
                dims: vec!["y".into(), "x".into()],
                data: NcData::F32(&[1.0, 2.0]),
                attrs: vec![("grid_mapping".into(), text("crs"))],
            },
        ],
    };
    write_netcdf(&p, &file).unwrap();
    let bytes = std::fs::read(&p).unwrap();
    let h = read_header(&bytes);
    let crs = h.var("crs");
    let a = &crs.attrs;
    assert_eq!(
        attr(a, "grid_mapping_name"),
        &Val::Text("transverse_mercator".into())
    );
    // Zone 10: central meridian 6 * 10 - 183 = -123 degrees; GRS 1980 ellipsoid.
    assert_eq!(
        attr(a, "longitude_of_central_meridian"),
        &Val::Double(vec![-123.0])
    );
    assert_eq!(
        attr(a, "scale_factor_at_central_meridian"),
        &Val::Double(vec![0.9996])
    );
    assert_eq!(attr(a, "false_easting"), &Val::Double(vec![500_000.0]));
    assert_eq!(attr(a, "semi_major_axis"), &Val::Double(vec![6_378_137.0]));
    assert_eq!(
        attr(a, "inverse_flattening"),
        &Val::Double(vec![298.257222101])
    );
    let (Val::Text(wkt), Val::Text(sr)) = (attr(a, "crs_wkt"), attr(a, "spatial_ref")) else {
        panic!("crs_wkt and spatial_ref are text")
    };
    assert!(
        wkt.starts_with("PROJCS[\"NAD83 / UTM zone 10N\"") && wkt == sr,
        "{wkt}"
    );
    assert!(h.shape(crs).is_empty(), "crs is a scalar");
    assert_eq!(
        attr(&h.var("t").attrs, "grid_mapping"),
        &Val::Text("crs".into())
    );
}
