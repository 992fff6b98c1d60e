//! `geofield flock` end to end.

use super::{geofield, s, text};

#[test]
fn flock_writes_state_frames_gif_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let (state, gif, json, frames) = (
        dir.path().join("state.npy"),
        dir.path().join("flock.gif"),
        dir.path().join("stats.json"),
        dir.path().join("frames"),
    );
    let o = geofield(&[
        "flock",
        "--agents",
        "500",
        "--steps",
        "40",
        "--world-radius",
        "30",
        "--backend",
        "cpu",
        "--out",
        s(&state),
        "--gif",
        s(&gif),
        "--json",
        s(&json),
        "--frames",
        s(&frames),
        "--every",
        "20",
        "--frame-size",
        "128",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("steps/s"), "{}", text(&o));
    let a = geofield_io::read_npy(&state).unwrap();
    assert_eq!(a.shape, vec![500, 6]);
    let geofield_io::NpyData::F32(v) = a.data else {
        panic!("float32 expected")
    };
    for r in v.chunks_exact(6) {
        let p = (r[0] * r[0] + r[1] * r[1] + r[2] * r[2]).sqrt();
        let sp = (r[3] * r[3] + r[4] * r[4] + r[5] * r[5]).sqrt();
        assert!(p <= 30.0 * (1.0 + 1e-6) && sp <= 9.0 * (1.0 + 1e-6));
    }
    assert_eq!(&std::fs::read(&gif).unwrap()[..6], b"GIF89a");
    let n_frames = std::fs::read_dir(&frames).unwrap().count();
    assert_eq!(n_frames, 3); // steps 0, 20, 40
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(j["agents"], 500);
    assert!(j["steps_per_s"].as_f64().unwrap() > 0.0);
    assert_eq!(j["samples"].as_array().unwrap().len(), 3);

    // The saved state round-trips through --init (positions and velocities; the smoothed
    // accelerations are not saved and restart at zero).
    let out2 = dir.path().join("state2.npy");
    let o = geofield(&[
        "flock",
        "--init",
        s(&state),
        "--steps",
        "0",
        "--world-radius",
        "30",
        "--backend",
        "cpu",
        "--out",
        s(&out2),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let b = geofield_io::read_npy(&out2).unwrap();
    let geofield_io::NpyData::F32(w) = b.data else {
        panic!("float32 expected")
    };
    for (x, y) in v.iter().zip(&w) {
        assert!((x - y).abs() <= 1e-5 * x.abs().max(1.0), "{x} vs {y}");
    }
}

#[test]
fn flock_bad_input_fails_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("state.npy");
    let check = |args: &[&str], needle: &str| {
        let mut v = vec![
            "flock",
            "--backend",
            "cpu",
            "--steps",
            "2",
            "--out",
            s(&out),
        ];
        v.extend_from_slice(args);
        let o = geofield(&v);
        let m = text(&o);
        assert_eq!(o.status.code(), Some(2), "{m}");
        assert!(m.contains(needle), "expected {needle:?} in {m}");
        assert!(!out.exists(), "partial output left behind");
    };
    check(&["--agents", "0"], "--agents");
    check(&["--agents", "10", "--k", "0"], "k = 0");
    check(&["--agents", "10", "--k", "65"], "k = 65");
    check(&["--agents", "10", "--radius=-1"], "radius");
    check(&["--agents", "10", "--world-radius", "nan"], "world radius");
    check(
        &["--agents", "10", "--every", "0", "--gif", "x.gif"],
        "--every",
    );
    // A state file of the wrong shape, the wrong dtype, with NaN, or empty.
    let bad = dir.path().join("bad.npy");
    geofield_io::write_npy_f32(&bad, &[4, 3], &[0.0; 12]).unwrap();
    check(&["--init", s(&bad)], "shape (N, 6)");
    geofield_io::write_npy_i64(&bad, &[2, 6], &[0; 12]).unwrap();
    check(&["--init", s(&bad)], "float32 or float64");
    let mut rows = vec![0.0f32; 12];
    rows[8] = f32::NAN;
    geofield_io::write_npy_f32(&bad, &[2, 6], &rows).unwrap();
    check(&["--init", s(&bad)], "agent 1");
    geofield_io::write_npy_f32(&bad, &[0, 6], &[]).unwrap();
    check(&["--init", s(&bad)], "no agents");
    check(
        &["--init", s(&dir.path().join("missing.npy"))],
        "missing.npy",
    );
    // An output folder that does not exist: refused before any work.
    let o = geofield(&[
        "flock",
        "--agents",
        "10",
        "--out",
        s(&dir.path().join("nope").join("s.npy")),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("does not exist"), "{}", text(&o));
}
