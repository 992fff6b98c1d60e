use std::path::Path;
use std::process::Command;

use geofield_io::npz::write_npz_with;
use geofield_io::{NpyData, NpzArray, NpzData, read_npz, write_npz};

/// Python with numpy, if this machine has it.
fn python_numpy() -> bool {
    Command::new("python3")
        .args(["-c", "import numpy"])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn python_zipfile() -> bool {
    Command::new("python3")
        .args(["-c", "import zipfile"])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn write_sample(path: &Path, zip64: bool) -> (Vec<f32>, Vec<f64>, Vec<u8>, Vec<i64>) {
    let u: Vec<f32> = (0..2 * 3 * 4).map(|i| i as f32 * 0.25 - 1.0).collect();
    let z = vec![0.0, 10.0, 25.5];
    let solid: Vec<u8> = (0..6).map(|i| (i % 2) as u8).collect();
    let ids = vec![-7i64, 0, 9];
    let x_min = [1234.5f64];
    write_npz_with(
        path,
        &[
            ("u", NpzArray::new(&[2, 3, 4], NpzData::F32(&u))),
            ("z_faces_m", NpzArray::new(&[3], NpzData::F64(&z))),
            ("solid", NpzArray::new(&[2, 3], NpzData::U8(&solid))),
            ("ids", NpzArray::new(&[3], NpzData::I64(&ids))),
            ("x_min_m", NpzArray::new(&[], NpzData::F64(&x_min))),
        ],
        zip64,
    )
    .unwrap();
    (u, z, solid, ids)
}

#[test]
fn npz_round_trips_through_our_reader() {
    for zip64 in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.npz");
        let (u, z, solid, ids) = write_sample(&p, zip64);
        let bytes = std::fs::read(&p).unwrap();
        assert_eq!(&bytes[..4], b"PK\x03\x04");
        let a = read_npz(&p).unwrap();
        let names: Vec<&str> = a.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["u", "z_faces_m", "solid", "ids", "x_min_m"]);
        assert_eq!(a[0].1.shape, [2, 3, 4]);
        assert_eq!(a[0].1.data, NpyData::F32(u));
        assert_eq!(a[1].1.data, NpyData::F64(z));
        assert_eq!(
            (a[2].1.shape.clone(), a[2].1.data.clone()),
            (vec![2, 3], NpyData::U8(solid))
        );
        assert_eq!(a[3].1.data, NpyData::I64(ids));
        assert!(a[4].1.shape.is_empty());
        assert_eq!(a[4].1.data, NpyData::F64(vec![1234.5]));
        // No temporary file is left next to the archive.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}

#[test]
fn npz_reads_in_python() {
    if !python_zipfile() {
        eprintln!("skipped: no python3");
        return;
    }
    for zip64 in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.npz");
        write_sample(&p, zip64);
        // zipfile checks the structure and every CRC-32.
        let o = Command::new("python3")
            .args([
                "-c",
                "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); \
                 assert z.testzip() is None; print(sorted(z.namelist()))",
                p.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "{out}{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(
            out.contains("'u.npy'") && out.contains("'solid.npy'"),
            "{out}"
        );
        if !python_numpy() {
            eprintln!("numpy not installed: checked the ZIP structure only");
            continue;
        }
        let o = Command::new("python3")
            .args([
                "-c",
                "import sys, numpy as np; a = np.load(sys.argv[1]); \
                 assert a['u'].shape == (2, 3, 4) and a['u'].dtype == np.float32; \
                 assert a['u'][1, 2, 3] == 23 * 0.25 - 1.0; \
                 assert a['solid'].dtype == np.uint8 and a['solid'].tolist() == [[0, 1, 0], [1, 0, 1]]; \
                 assert a['z_faces_m'].tolist() == [0.0, 10.0, 25.5]; \
                 assert a['ids'].tolist() == [-7, 0, 9]; \
                 assert a['x_min_m'].shape == () and float(a['x_min_m']) == 1234.5; print('ok')",
                p.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

#[test]
fn npz_refuses_bad_names_and_shapes_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.npz");
    let v = [1.0f32, 2.0];
    for (arrays, want) in [
        (vec![("a/b", NpzArray::new(&[2], NpzData::F32(&v)))], "a/b"),
        (vec![("", NpzArray::new(&[2], NpzData::F32(&v)))], "\"\""),
        (
            vec![
                ("a", NpzArray::new(&[2], NpzData::F32(&v))),
                ("a", NpzArray::new(&[2], NpzData::F32(&v))),
            ],
            "two arrays",
        ),
        (
            vec![("a", NpzArray::new(&[3], NpzData::F32(&v)))],
            "needs 3 values",
        ),
    ] {
        let e = write_npz(&p, &arrays).unwrap_err().to_string();
        assert!(e.contains("bad.npz") && e.contains(want), "{e}");
        assert!(!p.exists());
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    let e = read_npz(&dir.path().join("missing.npz"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("missing.npz"), "{e}");
}
