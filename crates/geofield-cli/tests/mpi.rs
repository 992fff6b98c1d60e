//! `mpiexec -n R geofield ...` (feature `mpi`): forest replicates and methods and wind atlases
//! spread over the ranks, and the dispersal and the kriging split by rows, give outputs
//! byte-identical to one process; one rank's failure, before the work or in a case, ends the whole job with exit code 2, a message naming the rank, no output and
//! no hang. Needs `mpiexec` on the PATH (`source scripts/mpi_env.sh`); without it the tests skip
//! with a notice, unless `GEOFIELD_REQUIRE_MPI=1` (CI).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_geofield");

fn mpiexec() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("mpiexec"))
            .find(|f| f.is_file())
    });
    if found.is_none() {
        assert!(
            std::env::var("GEOFIELD_REQUIRE_MPI").as_deref() != Ok("1"),
            "GEOFIELD_REQUIRE_MPI=1 but no mpiexec on the PATH"
        );
        eprintln!("skipping: no mpiexec on the PATH (source scripts/mpi_env.sh)");
    }
    found
}

/// Runs `cmd` to the end or kills it after `limit` (a hang fails the test).
fn run(mut cmd: Command, limit: Duration) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "still running after {limit:?} (a hang): {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// The geofield binary on `ranks` MPI ranks (0: run directly, without mpiexec).
fn launcher(mpi: &Path, ranks: usize) -> Command {
    if ranks == 0 {
        return Command::new(BIN);
    }
    let mut c = Command::new(mpi);
    c.args(["-n", &ranks.to_string(), BIN]);
    c
}

fn stand(dir: &Path) {
    let out = Command::new(BIN)
        .args([
            "synth",
            "forest",
            "--trees",
            "500",
            "--extent",
            "0,0,100,80",
        ])
        .args(["--seed", "3", "--out"])
        .arg(dir.join("t.csv"))
        .arg("--species-out")
        .arg(dir.join("t.toml"))
        .arg("-q")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `geofield forest` on the stand with `extra` arguments, counts to `counts`, on `ranks` ranks
/// (0: without mpiexec).
fn forest(
    mpi: &Path,
    dir: &Path,
    ranks: usize,
    extra: &[&str],
    counts: &str,
    fail: Option<&str>,
) -> Output {
    let mut cmd = launcher(mpi, ranks);
    cmd.current_dir(dir)
        .args(["forest", "--trees", "t.csv", "--species", "t.toml"])
        .args([
            "--extent",
            "0,0,100,80",
            "--years",
            "4",
            "--counts",
            counts,
            "-q",
        ])
        .args(extra)
        .env("RAYON_NUM_THREADS", "1");
    if let Some(f) = fail {
        cmd.env("GEOFIELD_MPI_FAIL", f);
    }
    run(cmd, Duration::from_secs(120))
}

#[test]
fn replicates_and_methods_over_ranks_are_byte_identical() {
    let Some(mpi) = mpiexec() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    stand(dir.path());
    for extra in [
        &["--replicates", "5"][..],
        &["--replicates", "2", "--compare", "exact,cutoff"][..],
    ] {
        let one = forest(&mpi, dir.path(), 0, extra, "one.csv", None);
        assert!(
            one.status.success(),
            "{}",
            String::from_utf8_lossy(&one.stderr)
        );
        let reference = std::fs::read(dir.path().join("one.csv")).unwrap();
        assert!(reference.len() > 1000);
        for ranks in [1, 2, 3] {
            let name = format!("n{ranks}.csv");
            let out = forest(&mpi, dir.path(), ranks, extra, &name, None);
            assert!(
                out.status.success(),
                "-n {ranks}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let got = std::fs::read(dir.path().join(&name)).unwrap();
            assert!(got == reference, "-n {ranks} {extra:?}: counts differ");
        }
    }
}

#[test]
fn a_failing_rank_ends_the_job_cleanly() {
    let Some(mpi) = mpiexec() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    stand(dir.path());
    for (fail, rank) in [
        ("1", "rank 1"),
        ("case:4", "case 4"),
        ("case:0", "rank 0: case 0"),
    ] {
        let out = forest(
            &mpi,
            dir.path(),
            3,
            &["--replicates", "6"],
            "c.csv",
            Some(fail),
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(2),
            "GEOFIELD_MPI_FAIL={fail}: {err}"
        );
        assert!(
            err.contains(rank) && err.contains("injected failure"),
            "GEOFIELD_MPI_FAIL={fail}: {err}"
        );
        assert!(!dir.path().join("c.csv").exists(), "a partial output");
    }
    // Bad input on every rank: the same clean end.
    let mut cmd = Command::new(&mpi);
    cmd.current_dir(dir.path())
        .args(["-n", "2", BIN, "forest", "--trees", "missing.csv"])
        .args([
            "--species",
            "t.toml",
            "--extent",
            "0,0,100,80",
            "--counts",
            "c.csv",
        ]);
    let out = run(cmd, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.csv"));
}

#[test]
fn info_reports_the_library_and_each_ranks_device() {
    let Some(mpi) = mpiexec() else {
        return;
    };
    let mut cmd = Command::new(&mpi);
    cmd.args(["-n", "2", BIN, "info"]);
    let out = run(cmd, Duration::from_secs(60));
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("MPI: "), "{text}");
    for r in ["MPI rank 0 of 2", "MPI rank 1 of 2"] {
        assert!(text.contains(r), "{text}");
    }
}

/// A 12-case wind atlas on 1, 2 and 3 ranks writes the same files, byte for byte, as one
/// process.
#[test]
fn a_wind_atlas_over_ranks_is_byte_identical() {
    let Some(mpi) = mpiexec() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = Command::new(BIN)
        .args([
            "synth",
            "terrain",
            "--kind",
            "gaussian-hill",
            "--cols",
            "32",
        ])
        .args(["--rows", "24", "--cell-size-m", "30", "--out"])
        .arg(d.join("hill.tif"))
        .arg("-q")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let atlas = |ranks: usize, folder: &str| {
        let mut cmd = launcher(&mpi, ranks);
        cmd.current_dir(d)
            .args(["wind", "--dem", "hill.tif", "--directions", "0:330:30"])
            .args([
                "--speeds",
                "4",
                "--nz",
                "8",
                "--dz-m",
                "40",
                "--ascii-out",
                folder,
            ])
            .args(["--crs", "EPSG:32611", "-q"]);
        let out = run(cmd, Duration::from_secs(180));
        assert!(
            out.status.success(),
            "-n {ranks}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(d.join(folder))
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (
                    e.file_name().to_string_lossy().into_owned(),
                    std::fs::read(e.path()).unwrap(),
                )
            })
            .collect();
        files.sort();
        files
    };
    let one = atlas(0, "one");
    assert_eq!(one.iter().filter(|(n, _)| n.ends_with(".asc")).count(), 24);
    for ranks in [2, 3] {
        let got = atlas(ranks, &format!("n{ranks}"));
        assert!(got == one, "-n {ranks}: the atlas' files differ");
    }
}

/// `geofield disperse` on a synthetic stand of 700 m x 1100 m (3000 stems, 4 species) in
/// `dir/sub`, with `extra` arguments, on `ranks` ranks (0: without mpiexec). The outputs carry
/// the command line and a creation time: the runs differ only in their folder, and
/// SOURCE_DATE_EPOCH fixes the time.
fn disperse(
    mpi: &Path,
    dir: &Path,
    sub: &str,
    ranks: usize,
    extra: &[&str],
    fail: Option<&str>,
) -> Output {
    let at = dir.join(sub);
    std::fs::create_dir_all(&at).unwrap();
    let mut cmd = launcher(mpi, ranks);
    cmd.current_dir(&at)
        .args(["--backend", "cpu", "disperse", "--trees", "../t.csv"])
        .args(["--extent", "0,0,700,1100", "-q"])
        .args(extra)
        .env("RAYON_NUM_THREADS", "1")
        .env("SOURCE_DATE_EPOCH", "1800000000");
    if let Some(f) = fail {
        cmd.env("GEOFIELD_MPI_FAIL", f);
    }
    run(cmd, Duration::from_secs(300))
}

fn big_stand(dir: &Path) {
    let out = Command::new(BIN)
        .current_dir(dir)
        .args([
            "synth",
            "forest",
            "--trees",
            "3000",
            "--extent",
            "0,0,700,1100",
        ])
        .args([
            "--seed",
            "3",
            "--out",
            "t.csv",
            "--species-out",
            "t.toml",
            "-q",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The same species with lognormal kernels (fat tails): `auto` plans a near/far split, whose
    // candidate splits the ranks share out.
    let toml = std::fs::read_to_string(dir.join("t.toml")).unwrap();
    let mut ln = String::new();
    for l in toml.lines() {
        if l.starts_with("kernel = \"weibull\"") {
            ln.push_str("kernel = \"lognormal\"\nx0 = 6.0\nxb = 0.8\n");
        } else if !(l.starts_with("d = ") || l.starts_with("theta = ")) {
            ln.push_str(l);
            ln.push('\n');
        }
    }
    std::fs::write(dir.join("ln.toml"), ln).unwrap();
}

/// Every method split by rows over 2 and 3 ranks writes the one-process files byte for byte:
/// the GeoTIFF (tiles, overviews, directories), and the gathered `.npy` and `.asc` maps.
#[test]
fn a_split_dispersal_is_byte_identical() {
    let Some(mpi) = mpiexec() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    big_stand(dir.path());
    let cases: [(&[&str], &[&str]); 8] = [
        (
            &["--cell-size-m", "1", "--species", "../ln.toml"],
            &["s.tif"],
        ),
        (&["--cell-size-m", "1", "--method", "cutoff"], &["s.tif"]),
        (
            &[
                "--cell-size-m",
                "1",
                "--method",
                "cutoff",
                "--strip-rows",
                "256",
            ],
            &["s.tif"],
        ),
        (&["--cell-size-m", "2", "--method", "exact"], &["s.tif"]),
        (
            &[
                "--cell-size-m",
                "1",
                "--method",
                "nearfar",
                "--tolerance",
                "1e-5",
            ],
            &["s.tif"],
        ),
        (
            &[
                "--cell-size-m",
                "2",
                "--method",
                "multires",
                "--precision",
                "f64",
            ],
            &["s.tif"],
        ),
        (
            &["--cell-size-m", "2", "--torus", "--out", "s.npy"],
            &["s.npy"],
        ),
        (
            &["--cell-size-m", "2", "--out", "s.asc"],
            &["s_subalpine_fir.asc", "s_hybrid_spruce.asc"],
        ),
    ];
    for (extra, files) in cases {
        let mut args = extra.to_vec();
        if !args.contains(&"--out") {
            args.extend(["--out", "s.tif"]);
        }
        if !args.contains(&"--species") {
            args.extend(["--species", "../t.toml"]);
        }
        let one = disperse(&mpi, dir.path(), "one", 0, &args, None);
        assert!(
            one.status.success(),
            "{}",
            String::from_utf8_lossy(&one.stderr)
        );
        if args.contains(&"../ln.toml") {
            let said = String::from_utf8_lossy(&one.stdout);
            assert!(
                said.contains("auto: near/far"),
                "auto did not pick near/far: {said}"
            );
        }
        for ranks in [2, 3] {
            let sub = format!("n{ranks}");
            let out = disperse(&mpi, dir.path(), &sub, ranks, &args, None);
            assert!(
                out.status.success(),
                "-n {ranks} {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            for f in files {
                let a = std::fs::read(dir.path().join("one").join(f)).unwrap();
                let b = std::fs::read(dir.path().join(&sub).join(f)).unwrap();
                assert!(a.len() > 10_000, "{f}: {} bytes", a.len());
                assert!(a == b, "-n {ranks} {args:?}: {f} differs");
            }
        }
    }
}

/// A rank failing before the work, or while the others compute, ends the split dispersal with
/// exit code 2, the rank named, and no output.
#[test]
fn a_failing_rank_ends_a_split_dispersal_cleanly() {
    let Some(mpi) = mpiexec() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    big_stand(dir.path());
    for (fail, rank) in [("0", 0), ("2", 2), ("band:0", 2), ("band:3", 2)] {
        let args = [
            "--cell-size-m",
            "1",
            "--out",
            "s.tif",
            "--png",
            "s.png",
            "--species",
            "../t.toml",
        ];
        let out = disperse(&mpi, dir.path(), "f", 3, &args, Some(fail));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(2),
            "GEOFIELD_MPI_FAIL={fail}: {err}"
        );
        assert!(
            err.contains(&format!("rank {rank}: injected failure")),
            "GEOFIELD_MPI_FAIL={fail}: {err}"
        );
        let left: Vec<_> = std::fs::read_dir(dir.path().join("f")).unwrap().collect();
        assert!(left.is_empty(), "GEOFIELD_MPI_FAIL={fail} left {left:?}");
    }
}

/// `geofield krige` in `dir/sub` on the wells of `dir/w.csv`, on `ranks` ranks (0: without
/// mpiexec), one thread per rank.
fn krige(mpi: &Path, dir: &Path, sub: &str, ranks: usize, extra: &[&str]) -> Output {
    let at = dir.join(sub);
    std::fs::create_dir_all(&at).unwrap();
    let mut cmd = launcher(mpi, ranks);
    cmd.current_dir(&at)
        .args(["--backend", "cpu", "krige", "--samples", "../w.csv"])
        .args(["--values", "s01,s02,s03", "--extent", "0,0,2000,1500"])
        .args(["--crs", "EPSG:32611", "-q"])
        .args(extra)
        .env("RAYON_NUM_THREADS", "1")
        .env("SOURCE_DATE_EPOCH", "1800000000");
    run(cmd, Duration::from_secs(300))
}

fn wells(dir: &Path) {
    let out = Command::new(BIN)
        .current_dir(dir)
        .args(["synth", "wells", "--wells", "300", "--surfaces", "3"])
        .args(["--extent", "0,0,2000,1500", "--out", "w.csv", "-q"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Kriging split by rows over 2 and 3 ranks writes the one-process files byte for byte: global
/// ordinary kriging of stratum surfaces with fitted variograms (predictions, variances, the
/// clipped crossings, the voxel model, the cross-validation, the maps) and local universal
/// kriging (ASCII grids, a variance GeoTIFF).
#[test]
fn a_split_kriging_is_byte_identical() {
    let Some(mpi) = mpiexec() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    wells(dir.path());
    let cases: [(&[&str], &[&str]); 2] = [
        (
            &[
                "--fit",
                "spherical",
                "--cell-size-m",
                "10",
                "--strata",
                "--out",
                "k.tif",
                "--variance",
                "v.npy",
                "--cv",
                "cv.csv",
                "--png",
                "k.png",
                "--model-vti",
                "m.vti",
                "--dz-m",
                "5",
                "--json",
                "r.json",
            ],
            &["k.tif", "v.npy", "cv.csv", "k.png", "m.vti"],
        ),
        (
            &[
                "--model",
                "exponential",
                "--sill",
                "300",
                "--range",
                "900",
                "--nugget",
                "1",
                "--neighbors",
                "12",
                "--radius",
                "700",
                "--drift",
                "linear",
                "--cell-size-m",
                "20",
                "--out",
                "k.asc",
                "--variance",
                "v.tif",
            ],
            &["k_s01.asc", "k_s03.asc", "v.tif"],
        ),
    ];
    for (args, files) in cases {
        let one = krige(&mpi, dir.path(), "one", 0, args);
        assert!(
            one.status.success(),
            "{}",
            String::from_utf8_lossy(&one.stderr)
        );
        for ranks in [2, 3] {
            let sub = format!("n{ranks}");
            let out = krige(&mpi, dir.path(), &sub, ranks, args);
            assert!(
                out.status.success(),
                "-n {ranks} {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let said = String::from_utf8_lossy(&out.stdout);
            assert!(
                said.contains(&format!("rows split over {ranks} MPI ranks")),
                "{said}"
            );
            for f in files {
                let a = std::fs::read(dir.path().join("one").join(f)).unwrap();
                let b = std::fs::read(dir.path().join(&sub).join(f)).unwrap();
                assert!(a.len() > 1000, "{f}: {} bytes", a.len());
                assert!(a == b, "-n {ranks} {args:?}: {f} differs");
            }
        }
    }
}

/// A rank failing before the work, or as it starts its share of the grid while the others
/// compute, ends the split kriging with exit code 2, the rank named, and no output.
#[test]
fn a_failing_rank_ends_a_split_kriging_cleanly() {
    let Some(mpi) = mpiexec() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    wells(dir.path());
    for (fail, rank) in [("0", 0), ("2", 2), ("eval", 2)] {
        let mut cmd = launcher(&mpi, 3);
        let at = dir.path().join("f");
        std::fs::create_dir_all(&at).unwrap();
        cmd.current_dir(&at)
            .args(["--backend", "cpu", "krige", "--samples", "../w.csv"])
            .args(["--values", "s01,s02", "--extent", "0,0,2000,1500"])
            .args([
                "--fit",
                "spherical",
                "--cell-size-m",
                "10",
                "--out",
                "k.tif",
            ])
            .args(["--variance", "v.npy", "--png", "k.png", "-q"])
            .env("RAYON_NUM_THREADS", "1")
            .env("GEOFIELD_MPI_FAIL", fail);
        let out = run(cmd, Duration::from_secs(300));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(2),
            "GEOFIELD_MPI_FAIL={fail}: {err}"
        );
        assert!(
            err.contains(&format!("rank {rank}: ")),
            "GEOFIELD_MPI_FAIL={fail}: {err}"
        );
        let left: Vec<_> = std::fs::read_dir(&at).unwrap().collect();
        assert!(left.is_empty(), "GEOFIELD_MPI_FAIL={fail} left {left:?}");
    }
}

/// `geofield wind` (one solve) in `dir/sub` on `dir/hill.tif`, on `ranks` ranks (0: without
/// mpiexec), one thread per rank.
fn wind_solve(mpi: &Path, dir: &Path, sub: &str, ranks: usize, extra: &[&str]) -> Output {
    let at = dir.join(sub);
    std::fs::create_dir_all(&at).unwrap();
    let mut cmd = launcher(mpi, ranks);
    cmd.current_dir(&at)
        .args([
            "wind",
            "--dem",
            "../hill.tif",
            "--speed",
            "5",
            "--direction",
            "250",
        ])
        .args(["--nz", "12", "--dz-m", "25", "--crs", "EPSG:32611", "-q"])
        .args(extra)
        .env("RAYON_NUM_THREADS", "1")
        .env("SOURCE_DATE_EPOCH", "1800000000");
    run(cmd, Duration::from_secs(300))
}

fn report(dir: &Path, sub: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join(sub).join("r.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["report"].clone()
}

/// One wind solve split by rows over 2 and 3 ranks (halo rows exchanged in every sweep, the
/// coarse levels gathered): the multigrid solver writes the one-process files byte for byte;
/// MG-CG converges to the same tolerance in the same number of iterations ± 1.
#[test]
fn a_split_wind_solve_matches_one_process() {
    let Some(mpi) = mpiexec() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = Command::new(BIN)
        .current_dir(d)
        .args([
            "synth",
            "terrain",
            "--kind",
            "gaussian-hill",
            "--cols",
            "90",
        ])
        .args([
            "--rows",
            "77",
            "--cell-size-m",
            "30",
            "--out",
            "hill.tif",
            "-q",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let files = [
        "f.nc",
        "s.tif",
        "a/hill_250_5_30m_vel.asc",
        "a/hill_250_5_30m_ang.asc",
    ];
    for solver in ["multigrid", "mgcg"] {
        let args = [
            "--backend",
            "cpu",
            "--solver",
            solver,
            "--out",
            "f.nc",
            "--speed-out",
            "s.tif",
            "--ascii-out",
            "a",
            "--json",
            "r.json",
        ];
        let one = wind_solve(&mpi, d, &format!("one-{solver}"), 0, &args);
        assert!(
            one.status.success(),
            "{}",
            String::from_utf8_lossy(&one.stderr)
        );
        let whole = report(d, &format!("one-{solver}"));
        assert!(whole["split_parts"].is_null());
        for ranks in [2, 3] {
            let sub = format!("n{ranks}-{solver}");
            let out = wind_solve(&mpi, d, &sub, ranks, &args);
            assert!(
                out.status.success(),
                "-n {ranks} {solver}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let got = report(d, &sub);
            assert_eq!(got["split_parts"], ranks);
            assert_eq!(got["converged"], true);
            let its = |r: &serde_json::Value| r["iterations"].as_u64().unwrap();
            assert!(its(&got).abs_diff(its(&whole)) <= 1, "{got} vs {whole}");
            if solver == "multigrid" {
                assert_eq!(its(&got), its(&whole));
                for f in files {
                    let a = std::fs::read(d.join(format!("one-{solver}")).join(f)).unwrap();
                    let b = std::fs::read(d.join(&sub).join(f)).unwrap();
                    assert!(a.len() > 1000, "{f}: {} bytes", a.len());
                    assert!(a == b, "-n {ranks}: {f} differs");
                }
            }
        }
    }
}

/// A rank failing before the split wind solve, or a backend it does not run on, ends the job
/// with exit code 2, the cause named, and no output.
#[test]
fn a_split_wind_solve_fails_cleanly() {
    let Some(mpi) = mpiexec() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = Command::new(BIN)
        .current_dir(d)
        .args([
            "synth",
            "terrain",
            "--kind",
            "gaussian-hill",
            "--cols",
            "40",
        ])
        .args([
            "--rows",
            "40",
            "--cell-size-m",
            "30",
            "--out",
            "hill.tif",
            "-q",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    for (backend, fail, says) in [
        ("cpu", Some("1"), "rank 1: injected failure"),
        ("cuda", None, "runs on the CPU backend"),
    ] {
        let at = d.join("f");
        std::fs::create_dir_all(&at).unwrap();
        let mut cmd = launcher(&mpi, 2);
        cmd.current_dir(&at)
            .args(["--backend", backend, "wind", "--dem", "../hill.tif"])
            .args([
                "--speed",
                "5",
                "--direction",
                "250",
                "--nz",
                "8",
                "--dz-m",
                "25",
            ])
            .args(["--out", "f.nc", "--speed-out", "s.tif", "-q"]);
        if let Some(f) = fail {
            cmd.env("GEOFIELD_MPI_FAIL", f);
        }
        let out = run(cmd, Duration::from_secs(120));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{backend} {fail:?}: {err}");
        assert!(err.contains(says), "{backend} {fail:?}: {err}");
        let left: Vec<_> = std::fs::read_dir(&at).unwrap().collect();
        assert!(left.is_empty(), "{backend} {fail:?} left {left:?}");
    }
}
