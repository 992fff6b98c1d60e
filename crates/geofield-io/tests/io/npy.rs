use geofield_io::npy::{NpyData, read_npy, write_npy_f32, write_npy_f64, write_npy_i64};
use geofield_io::{RasterMeta, write_raster};

use crate::{grid, raster_f64};

/// Check the NPY 1.0 preamble and return the header dict text.
fn check_header(bytes: &[u8]) -> String {
    assert_eq!(&bytes[..6], b"\x93NUMPY", "magic");
    assert_eq!((bytes[6], bytes[7]), (1, 0), "version 1.0");
    let len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    assert_eq!((10 + len) % 64, 0, "data must start on a 64-byte boundary");
    assert_eq!(bytes[10 + len - 1], b'\n', "header ends with a newline");
    String::from_utf8(bytes[10..10 + len].to_vec()).unwrap()
}

#[test]
fn f32_round_trip_and_header_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.npy");
    let data: Vec<f32> = (0..24).map(|i| i as f32 * 0.5 - 3.0).collect();
    write_npy_f32(&p, &[2, 3, 4], &data).unwrap();
    let bytes = std::fs::read(&p).unwrap();
    let header = check_header(&bytes);
    assert!(header.starts_with("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, 4), }"));
    assert!(header.trim_end_matches('\n').ends_with(' ') || header.ends_with("}\n"));
    assert_eq!(bytes.len(), 10 + header.len() + 24 * 4);
    // First value -3.0 little-endian right after the header.
    assert_eq!(&bytes[10 + header.len()..][..4], &(-3.0f32).to_le_bytes());
    let a = read_npy(&p).unwrap();
    assert_eq!(a.shape, [2, 3, 4]);
    assert_eq!(a.data, NpyData::F32(data));
}

#[test]
fn f64_i64_and_one_dimensional_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("b.npy");
    let data = vec![1.0 / 3.0, -1e-300, f64::MAX, f64::NAN];
    write_npy_f64(&p, &[4], &data).unwrap();
    let header = check_header(&std::fs::read(&p).unwrap());
    assert!(
        header.contains("'descr': '<f8'") && header.contains("'shape': (4,)"),
        "{header}"
    );
    let a = read_npy(&p).unwrap();
    let NpyData::F64(back) = a.data else {
        panic!("expected f64")
    };
    assert_eq!(a.shape, [4]);
    assert_eq!(back[..3], data[..3]);
    assert!(back[3].is_nan());

    let p = dir.path().join("c.npy");
    let ints = vec![i64::MIN, -1, 0, 7, i64::MAX, 42];
    write_npy_i64(&p, &[3, 2], &ints).unwrap();
    assert!(check_header(&std::fs::read(&p).unwrap()).contains("'<i8'"));
    let a = read_npy(&p).unwrap();
    assert_eq!((a.shape, a.data), (vec![3, 2], NpyData::I64(ints)));
}

/// Build an .npy file by hand, as numpy would write it.
fn handmade(descr: &str, fortran: bool, shape: &str, data: &[u8]) -> Vec<u8> {
    let mut dict = format!(
        "{{'descr': '{descr}', 'fortran_order': {}, 'shape': {shape}, }}",
        if fortran { "True" } else { "False" }
    );
    while (10 + dict.len() + 1) % 64 != 0 {
        dict.push(' ');
    }
    dict.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.extend_from_slice(data);
    out
}

#[test]
fn reads_int32_and_rejects_unsupported_files_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("i4.npy");
    let vals = [5i32, -6, 7];
    let bytes: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(&p, handmade("<i4", false, "(3,)", &bytes)).unwrap();
    let a = read_npy(&p).unwrap();
    assert_eq!((a.shape, a.data), (vec![3], NpyData::I32(vals.to_vec())));

    let cases = [
        (handmade("<f8", true, "(2, 2)", &[0; 32]), "Fortran"),
        (handmade(">f8", false, "(1,)", &[0; 8]), "big-endian"),
        (
            handmade("<u2", false, "(1,)", &[0; 2]),
            "dtype \"<u2\" is not supported",
        ),
        (handmade("<f8", false, "(3,)", &[0; 16]), "truncated"),
        (b"PK\x03\x04 not npy".to_vec(), "magic"),
    ];
    for (bytes, expected) in cases {
        std::fs::write(&p, bytes).unwrap();
        let e = read_npy(&p).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("cannot read {} as an NPY array: ", p.display())),
            "{e}"
        );
        assert!(e.contains(expected), "{e} should mention {expected}");
    }
}

#[test]
fn shape_mismatch_is_refused_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.npy");
    let e = write_npy_f32(&p, &[2, 2], &[1.0; 3])
        .unwrap_err()
        .to_string();
    assert!(e.contains("needs 4 values but 3 were given"), "{e}");
    assert!(!p.exists());
}

#[test]
fn raster_to_npy_has_band_row_col_shape() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("r.npy");
    let r = raster_f64(grid(4, 3, 1.0, 0.0, 3.0), &["a", "b"], |b, r, c| {
        (b * 100 + r * 10 + c) as f64
    });
    assert_eq!(
        write_raster(&p, &r, &RasterMeta::default()).unwrap(),
        std::slice::from_ref(&p)
    );
    let a = read_npy(&p).unwrap();
    assert_eq!(a.shape, [2, 3, 4]);
    let NpyData::F64(v) = a.data else {
        panic!("expected f64")
    };
    assert_eq!(v[(3 + 2) * 4 + 3], 123.0);
}
