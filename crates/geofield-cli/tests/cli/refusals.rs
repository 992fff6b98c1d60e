//! What every command refuses before it computes, and what a refused or interrupted run leaves
//! behind: nothing. Each case checks the exit code (2), the message (it names the flag or the
//! input), that no output appeared and that the inputs are unchanged.

use std::path::{Path, PathBuf};

use super::{geofield, s, text};

/// Every file name in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Run `args`, expect exit 2 with `needle` in the message, and `dir` to hold exactly `before`.
fn refused(args: &[&str], needle: &str, dir: &Path, before: &[String]) {
    let o = geofield(args);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {t}");
    assert!(t.contains(needle), "{args:?}: expected {needle:?} in: {t}");
    assert_eq!(listing(dir), before, "{args:?} left files behind: {t}");
}

fn points_csv(dir: &Path) -> PathBuf {
    let p = dir.join("pts.csv");
    let mut body = String::from("x,y\n");
    for i in 0..50 {
        body.push_str(&format!("{},{}\n", i % 7, i / 7));
    }
    std::fs::write(&p, body).unwrap();
    p
}

fn wells_csv(dir: &Path) -> PathBuf {
    let p = dir.join("wells.csv");
    std::fs::write(
        &p,
        "id,x,y,top\na,15,85,10\nb,75,75,12.5\nc,25,25,9\nd,85,15,11\ne,55,45,10.5\n",
    )
    .unwrap();
    p
}

fn krige_args<'a>(csv: &'a Path, out: &'a Path) -> Vec<&'a str> {
    vec![
        "krige",
        "--samples",
        s(csv),
        "--values",
        "top",
        "--extent",
        "0,0,100,100",
        "--cell-size-m",
        "10",
        "--model",
        "exponential",
        "--sill",
        "2",
        "--range",
        "60",
        "--out",
        s(out),
    ]
}

#[test]
fn an_output_onto_an_input_is_refused_and_the_input_survives() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let pts = points_csv(d);
    let wells = wells_csv(d);
    let before = listing(d);
    let pts_body = std::fs::read(&pts).unwrap();
    let wells_body = std::fs::read(&wells).unwrap();
    refused(
        &["knn", "--points", s(&pts), "--k", "3", "--out", s(&pts)],
        "refusing to overwrite an input",
        d,
        &before,
    );
    // The same file under another spelling of its path.
    let other = d.join(".").join("pts.csv");
    refused(
        &["knn", "--points", s(&pts), "--k", "3", "--out", s(&other)],
        "--points",
        d,
        &before,
    );
    let out = d.join("est.npy");
    let mut a = krige_args(&wells, &out);
    a.extend(["--cv", s(&wells)]);
    refused(&a, "refusing to overwrite an input", d, &before);
    refused(
        &[
            "variogram",
            "--samples",
            s(&wells),
            "--values",
            "top",
            "--json",
            s(&wells),
        ],
        "refusing to overwrite an input",
        d,
        &before,
    );
    assert_eq!(std::fs::read(&pts).unwrap(), pts_body);
    assert_eq!(std::fs::read(&wells).unwrap(), wells_body);
}

#[test]
fn two_outputs_on_one_path_and_device_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let pts = points_csv(d);
    let before = listing(d);
    let out = d.join("idx.npy");
    refused(
        &[
            "knn",
            "--points",
            s(&pts),
            "--k",
            "3",
            "--out",
            s(&out),
            "--distances",
            s(&out),
        ],
        "are the same file",
        d,
        &before,
    );
    if cfg!(unix) {
        refused(
            &["knn", "--points", s(&pts), "--k", "3", "--out", "/dev/null"],
            "not a regular file",
            d,
            &before,
        );
        assert!(
            !Path::new("/dev/null").is_file(),
            "/dev/null must stay a device"
        );
    }
}

#[test]
fn options_that_would_be_ignored_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let pts = points_csv(d);
    let wells = wells_csv(d);
    let before = listing(d);
    let out = d.join("o.npy");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["knn", "--points", s(&pts), "--k", "3"],
            "nothing to write",
        ),
        (
            vec![
                "knn",
                "--points",
                s(&pts),
                "--k",
                "3",
                "--index",
                "dynamic",
                "--cell-size",
                "2",
                "--out",
                s(&out),
            ],
            "--cell-size",
        ),
        (
            vec![
                "knn",
                "--points",
                s(&pts),
                "--k",
                "3",
                "--out",
                s(&out),
                "--crs",
                "EPSG:32633",
            ],
            "--crs has no effect",
        ),
        (
            vec![
                "knn",
                "--points",
                s(&pts),
                "--k",
                "3",
                "--out",
                s(&out),
                "--compress",
                "zstd",
            ],
            "--compress has no effect",
        ),
        (
            vec![
                "variogram",
                "--samples",
                s(&wells),
                "--values",
                "top",
                "--model",
                "exponential:2",
            ],
            "takes no parameter",
        ),
        (
            vec!["flock", "--init", s(&out), "--seed", "3", "--steps", "1"],
            "--seed has no effect with --init",
        ),
        (
            vec!["flock", "--agents", "10", "--steps", "1", "--every", "2"],
            "--every",
        ),
        (
            vec![
                "disperse",
                "--trees",
                s(&pts),
                "--species",
                s(&pts),
                "--extent",
                "0,0,10,10",
                "--cell-size-m",
                "1",
                "--out",
                s(&out),
                "--colormap",
                "jet",
            ],
            "jet",
        ),
    ];
    for (args, needle) in cases {
        refused(&args, needle, d, &before);
    }
    let tif = d.join("o.tif");
    let mut a = krige_args(&wells, &tif);
    a.extend(["--compress", "lz4"]);
    refused(
        &a,
        "--compress \"lz4\": expected one of deflate, zstd",
        d,
        &before,
    );
    let mut a = krige_args(&wells, &out);
    a.extend(["--lags", "20"]);
    refused(&a, "--lags sets the bins of the variogram fit", d, &before);
    let mut a = krige_args(&wells, &out);
    a.extend(["--dz-m", "5"]);
    refused(&a, "--model-vti", d, &before);
}

#[test]
fn krige_checks_every_option_before_writing_anything() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let wells = wells_csv(d);
    let before = listing(d);
    let out = d.join("est.tif");
    let var = d.join("var.tif");
    let cv = d.join("cv.csv");
    let section = d.join("section.png");
    let mut a = krige_args(&wells, &out);
    a.extend([
        "--variance",
        s(&var),
        "--cv",
        s(&cv),
        "--strata",
        "--section-png",
        s(&section),
        "--section-row",
        "9999",
    ]);
    refused(&a, "--section-row 9999 is outside the grid", d, &before);
    let vti = d.join("m.vti");
    let mut a = krige_args(&wells, &out);
    a.extend([
        "--variance",
        s(&var),
        "--strata",
        "--model-vti",
        s(&vti),
        "--dz-m",
        "0",
    ]);
    refused(&a, "--dz-m 0", d, &before);
}

#[test]
fn non_finite_results_are_errors_with_their_cause() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Kriging values near the f64 limit overflow the weighted sums.
    let wells = d.join("big.csv");
    std::fs::write(
        &wells,
        "id,x,y,top\na,15,85,1.7e308\nb,75,75,1.7e308\nc,25,25,1.6e308\nd,85,15,1.7e308\n",
    )
    .unwrap();
    let before = listing(d);
    let out = d.join("est.npy");
    refused(&krige_args(&wells, &out), "not finite", d, &before);

    // A station at 1e300 m/s: refused (the f32 outputs would hold inf).
    let dem = d.join("dem.tif");
    let st = d.join("st.csv");
    let o = geofield(&[
        "synth",
        "terrain",
        "--kind",
        "flat",
        "--cols",
        "8",
        "--rows",
        "8",
        "--out",
        s(&dem),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    std::fs::write(
        &st,
        "id,x_m,y_m,height_agl_m,speed_m_per_s,direction_deg,stability\nfast,120,120,10,1e300,270,D\n",
    )
    .unwrap();
    let before = listing(d);
    let w = d.join("w.npz");
    refused(
        &[
            "wind",
            "--dem",
            s(&dem),
            "--stations",
            s(&st),
            "--nz",
            "4",
            "--out",
            s(&w),
        ],
        "speed_m_per_s of station \"fast\" = 1e300: expected a wind speed below 340 m/s",
        d,
        &before,
    );
    std::fs::write(
        &st,
        "id,x_m,y_m,height_agl_m,speed_m_per_s,direction_deg,stability\na,120,120,10,5,270,D\n",
    )
    .unwrap();
    refused(
        &[
            "wind",
            "--dem",
            s(&dem),
            "--stations",
            s(&st),
            "--nz",
            "4",
            "--dz-m",
            "1e308",
            "--out",
            s(&w),
        ],
        "--dz-m 1e308",
        d,
        &before,
    );
    refused(
        &[
            "wind",
            "--dem",
            s(&dem),
            "--stations",
            s(&st),
            "--omega",
            "1.5",
            "--out",
            s(&w),
        ],
        "--omega 1.5",
        d,
        &before,
    );
}

#[test]
fn an_empty_stem_map_is_an_error_not_a_zero_map() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let trees = d.join("trees.csv");
    let species = d.join("species.toml");
    let o = geofield(&[
        "synth",
        "forest",
        "--trees",
        "10",
        "--extent",
        "0,0,50,50",
        "--out",
        s(&trees),
        "--species-out",
        s(&species),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    std::fs::write(&trees, "x_m,y_m,dbh_cm,species\n").unwrap();
    let before = listing(d);
    let out = d.join("seeds.tif");
    refused(
        &[
            "disperse",
            "--trees",
            s(&trees),
            "--species",
            s(&species),
            "--extent",
            "0,0,50,50",
            "--cell-size-m",
            "1",
            "--out",
            s(&out),
        ],
        "no trees",
        d,
        &before,
    );
}

#[cfg(unix)]
#[test]
fn an_interrupted_run_leaves_no_output_and_no_temporary_files() {
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = d.join("state.npy");
    let frames = d.join("frames");
    let mut child = Command::new(super::binary())
        .args([
            "flock",
            "--agents",
            "4000",
            "--steps",
            "1000000",
            "--every",
            "1",
            "--frame-size",
            "64",
            "--frames",
            s(&frames),
            "--out",
            s(&out),
        ])
        .env("GEOFIELD_BACKEND", "cpu")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the run is under way: its staging folder exists.
    let start = std::time::Instant::now();
    while !listing(d)
        .iter()
        .any(|n| n.starts_with(".geofield-staging"))
    {
        assert!(start.elapsed().as_secs() < 60, "the run never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let pid = child.id().to_string();
    let killed = Command::new("kill").args(["-INT", &pid]).status().unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert_eq!(listing(d), Vec::<String>::new(), "left behind");
}
