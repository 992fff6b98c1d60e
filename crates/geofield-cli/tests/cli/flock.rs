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

/// A scene file: obstacles are outlined in the frames, the predator drawn in red, and the JSON
/// report names them and counts collisions per snapshot (none: the flock avoids them).
#[test]
fn flock_scene_reports_collisions_and_draws_obstacles() {
    let dir = tempfile::tempdir().unwrap();
    let (scene, json, frames, plain) = (
        dir.path().join("scene.json"),
        dir.path().join("stats.json"),
        dir.path().join("frames"),
        dir.path().join("plain"),
    );
    std::fs::write(
        &scene,
        r#"{"obstacles": [
             {"sphere": {"centre": [0, 0, 0], "radius": 35, "seen_from": "inside"}},
             {"box": {"centre": [26, 0, 0], "size": [6, 6, 6]}}],
            "predators": [{"start": [0, 28, 0], "max_speed": 12}]}"#,
    )
    .unwrap();
    let run = |extra: &[&str], frames: &std::path::Path| {
        let mut v = vec![
            "flock",
            "--agents",
            "300",
            "--steps",
            "120",
            "--world-radius",
            "45",
            "--start",
            "dense",
            "--backend",
            "cpu",
            "--frames",
            s(frames),
            "--every",
            "60",
            "--frame-size",
            "160",
        ];
        v.extend_from_slice(extra);
        let o = geofield(&v);
        assert!(o.status.success(), "{}", text(&o));
        o
    };
    let o = run(&["--scene", s(&scene), "--json", s(&json)], &frames);
    assert!(
        text(&o).contains("2 obstacles, 1 predators"),
        "{}",
        text(&o)
    );
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let sc = &j["scene"];
    assert_eq!(sc["obstacles"].as_array().unwrap().len(), 2);
    assert_eq!(sc["predators"][0]["max_speed"], 12.0);
    let samples = j["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 3);
    for smp in samples {
        assert_eq!(smp["collisions"], 0, "{smp}");
        assert!(smp["predator_distance_m"].as_f64().unwrap() >= 0.0);
    }
    assert_eq!(sc["final_collisions"], 0);
    // The frames differ from the same run without the scene's drawing: red predator pixels.
    run(&[], &plain);
    let read = |p: std::path::PathBuf| {
        let dec = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&p).unwrap()));
        let mut r = dec.read_info().unwrap();
        let mut buf = vec![0; r.output_buffer_size().unwrap()];
        let info = r.next_frame(&mut buf).unwrap();
        buf.truncate(info.buffer_size());
        (info.width, info.height, buf)
    };
    let with = read(frames.join("frame_000000.png"));
    let without = read(plain.join("frame_000000.png"));
    let red = |img: &(u32, u32, Vec<u8>)| {
        img.2
            .chunks_exact(3)
            .filter(|p| p[0] >= 250 && p[1] <= 40 && p[2] <= 40)
            .count()
    };
    // The predator's disc of radius 4 px: ~45 pixels of saturated red (agents seldom are).
    assert!(
        red(&with) >= red(&without) + 20,
        "the predator is drawn: {} vs {} red pixels",
        red(&with),
        red(&without)
    );
    assert_ne!(with.2, without.2);
}

/// A bad scene file: exit code 2, the file and the field named, nothing written.
#[test]
fn flock_bad_scene_fails_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("state.npy");
    let json = dir.path().join("r.json");
    let scene = dir.path().join("scene.json");
    let check = |content: &str, needle: &str| {
        std::fs::write(&scene, content).unwrap();
        let o = geofield(&[
            "flock",
            "--agents",
            "20",
            "--steps",
            "2",
            "--backend",
            "cpu",
            "--scene",
            s(&scene),
            "--out",
            s(&out),
            "--json",
            s(&json),
        ]);
        let m = text(&o);
        assert_eq!(o.status.code(), Some(2), "{m}");
        assert!(m.contains("scene.json"), "the file is named: {m}");
        assert!(m.contains(needle), "expected {needle:?} in {m}");
        assert!(
            !out.exists() && !json.exists(),
            "partial output left behind"
        );
    };
    check(
        r#"{"obstacles":[{"sphere":{"centre":[0,0,0],"radius":-3}}]}"#,
        "obstacles[0].sphere.radius",
    );
    check(
        r#"{"obstacles":[{"box":{"centre":[0,0,0],"size":[1,2]}}]}"#,
        "line 1",
    );
    check(r#"{"obstacles":[{"cube":{}}]}"#, "unknown variant `cube`");
    check(r#"{"obstacle":[]}"#, "unknown field `obstacle`");
    check(
        r#"{"predators":[{"start":[0,0,0],"max_speed":0}]}"#,
        "predators[0].max_speed",
    );
    check(
        r#"{"obstacles":[{"plane":{"point":[0,0,0],"normal":[0,0,0]}}]}"#,
        "normal",
    );
    check("{", "EOF");
    let o = geofield(&[
        "flock",
        "--agents",
        "20",
        "--scene",
        s(&dir.path().join("missing.json")),
        "--out",
        s(&out),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("missing.json"), "{}", text(&o));
    assert!(!out.exists());
}
