//! Bad inputs from issue 13 end to end: each exits 2 with a message naming what is wrong and
//! the size it would need, never a panic, an abort or a hang.

use std::process::Output;

use super::{geofield, s, text};

fn refused(o: &Output, needles: &[&str]) {
    let msg = text(o);
    assert_eq!(o.status.code(), Some(2), "{msg}");
    assert!(!msg.contains("panicked"), "{msg}");
    for n in needles {
        assert!(msg.contains(n), "expected {n:?} in: {msg}");
    }
}

#[test]
fn huge_sizes_from_flags_and_headers_are_refused_with_their_size() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    refused(
        &geofield(&["flock", "--agents", "18446744073709551615", "--steps", "1"]),
        &["--agents", "18446744073709551615"],
    );
    // 2e9 agents x 128 B = 256 GB, more than any CI machine has available.
    refused(
        &geofield(&["flock", "--agents", "2000000000", "--steps", "1"]),
        &["--agents", "256000000000 bytes"],
    );
    let mut wells = String::from("x,y,v\n");
    for i in 0..12 {
        wells.push_str(&format!("{},{},{}\n", 10 * i, (i * 7) % 5, i % 4));
    }
    std::fs::write(p("w.csv"), wells).unwrap();
    refused(
        &geofield(&[
            "variogram",
            "--samples",
            s(&p("w.csv")),
            "--values",
            "v",
            "--lags",
            "1000000000000",
        ]),
        &["lags = 1000000000000", "bytes"],
    );
    std::fs::write(
        p("dem.asc"),
        "ncols 100000\nnrows 100000\nxllcorner 0\nyllcorner 0\ncellsize 1\n1 2 3\n",
    )
    .unwrap();
    std::fs::write(
        p("st.csv"),
        "id,x_m,y_m,height_agl_m,speed_m_per_s,direction_deg\na,1,1,10,5,270\n",
    )
    .unwrap();
    refused(
        &geofield(&[
            "wind",
            "--dem",
            s(&p("dem.asc")),
            "--stations",
            s(&p("st.csv")),
            "--out",
            s(&p("w.npz")),
        ]),
        &["dem.asc:6", "100000 rows x 100000 cols", "too few values"],
    );
    refused(
        &geofield(&[
            "krige",
            "--samples",
            s(&p("w.csv")),
            "--values",
            "v",
            "--extent",
            "-1e308,0,1e308,100",
            "--cell-size-m",
            "10",
            "--out",
            s(&p("k.tif")),
            "--model",
            "spherical",
            "--sill",
            "1",
            "--range",
            "50",
        ]),
        &["10 rows x inf cols", "--cell-size-m"],
    );
    assert!(!p("k.tif").exists());
}

#[test]
fn knn_on_coordinates_near_the_f64_limit_returns() {
    let dir = tempfile::tempdir().unwrap();
    let (pts, idx) = (dir.path().join("p.csv"), dir.path().join("i.npy"));
    std::fs::write(&pts, "x,y\n1e308,1e308\n-1e308,-1e308\n0,0\n1,1\n5,5\n").unwrap();
    let o = geofield(&["knn", "--points", s(&pts), "--k", "1", "--out", s(&idx)]);
    assert!(o.status.success(), "{}", text(&o));
    let geofield_io::NpyData::I64(ix) = geofield_io::read_npy(&idx).unwrap().data else {
        panic!("int64 expected")
    };
    // (0,0) and (1,1) are each other's nearest; (5,5)'s is (1,1); the far points' distances
    // overflow to infinity, so brute force (the reference) finds none for them.
    assert_eq!(&ix[2..], &[3, 2, 3]);
}

#[test]
fn messages_name_the_real_problem_once() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.csv");
    let out = dir.path().join("i.npy");
    let o = geofield(&["knn", "--points", s(&missing), "--k", "2", "--out", s(&out)]);
    let msg = text(&o);
    assert_eq!(o.status.code(), Some(2), "{msg}");
    assert_eq!(msg.matches("os error 2").count(), 1, "{msg}");
    let w = dir.path().join("w.csv");
    std::fs::write(&w, "x,y,v\n0,0,1\n10,0,2\n0,10,3\n10,10,4\n").unwrap();
    let o = geofield(&[
        "krige",
        "--samples",
        s(&w),
        "--values",
        "v",
        "--extent",
        "0,0,10,10",
        "--cell-size-m",
        "1",
        "--out",
        s(&dir.path().join("k.tif")),
        "--model",
        "spherical",
        "--sill",
        "0",
        "--range",
        "5",
    ]);
    refused(&o, &["--sill 0: expected a partial sill > 0"]);
    assert!(!text(&o).to_lowercase().contains("singular matrix"));
}
