//! `wind`: an atlas's cases over ranks, and one solve split by rows.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use crate::{BIN, failed_cleanly, launcher, mpiexec, run, same_files};

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
                let one = d.join(format!("one-{solver}"));
                same_files(&one, &d.join(&sub), &files, 1000, &format!("-n {ranks}"));
            }
        }
    }
}

/// A rank failing before the split wind solve, or a solver it does not run (SOR, refused on
/// every rank before the work), ends the job with exit code 2, the cause named, and no output.
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
    for (fail, solver, says) in [
        (Some("1"), "multigrid", "rank 1: injected failure"),
        // Rank 1 fails alone at its first halo exchange, rank 0 waiting there: the job
        // aborts (no hang) naming the rank.
        (
            Some("solve"),
            "multigrid",
            "rank 1: injected failure in the solve",
        ),
        (None, "sor", "not SOR"),
    ] {
        let at = d.join("f");
        std::fs::create_dir_all(&at).unwrap();
        let mut cmd = launcher(&mpi, 2);
        cmd.current_dir(&at)
            .args(["--backend", "cpu", "wind", "--dem", "../hill.tif"])
            .args(["--solver", solver])
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
        failed_cleanly(&out, says, Some(&at), &format!("{solver} {fail:?}"));
    }
}
