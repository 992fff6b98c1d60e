//! `forest` replicates and methods over ranks, one stand split by rows over the ranks, their
//! failures, and `info`.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use crate::{BIN, failed_cleanly, launcher, mpiexec, run, same_files};

/// A synthetic stand of `trees` stems over `extent` (its SBS species): `name`.csv and
/// `name`.toml in `dir`.
fn synth(dir: &Path, name: &str, trees: &str, extent: &str, seed: &str) {
    let out = Command::new(BIN)
        .args(["synth", "forest", "--trees", trees, "--extent", extent])
        .args(["--seed", seed, "--out"])
        .arg(dir.join(format!("{name}.csv")))
        .arg("--species-out")
        .arg(dir.join(format!("{name}.toml")))
        .arg("-q")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn stand(dir: &Path) {
    synth(dir, "t", "500", "0,0,100,80", "3");
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
        failed_cleanly(&out, rank, None, &format!("GEOFIELD_MPI_FAIL={fail}"));
        failed_cleanly(
            &out,
            "injected failure",
            None,
            &format!("GEOFIELD_MPI_FAIL={fail}"),
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
    failed_cleanly(&out, "missing.csv", None, "a missing stem map");
}

/// A tall stand (120 m x 600 m of 1 m cells: bands of 256 rows, the third rank's short) for
/// the split: 1,500 stems of the synthetic species.
fn tall_stand(dir: &Path) {
    synth(dir, "tall", "1500", "0,0,120,600", "4");
}

/// One case of `forest` on the tall stand, run in folder `out` (created; the same command
/// line in every folder, which the NetCDF records), on `ranks` ranks (0: without mpiexec):
/// counts, final stand, densities.
fn split_forest(
    mpi: &Path,
    dir: &Path,
    ranks: usize,
    out: &str,
    extra: &[&str],
    fail: Option<&str>,
) -> Output {
    std::fs::create_dir_all(dir.join(out)).unwrap();
    let mut cmd = launcher(mpi, ranks);
    cmd.current_dir(dir.join(out))
        .args([
            "forest",
            "--trees",
            "../tall.csv",
            "--species",
            "../tall.toml",
        ])
        .args([
            "--extent",
            "0,0,120,600",
            "--years",
            "3",
            "--method",
            "cutoff",
        ])
        .args(["--counts", "c.csv", "--stand-out", "s.csv", "-q"])
        .args(extra)
        .env("RAYON_NUM_THREADS", "1")
        .env("SOURCE_DATE_EPOCH", "0");
    if let Some(f) = fail {
        cmd.env("GEOFIELD_MPI_FAIL", f);
    }
    run(cmd, Duration::from_secs(180))
}

const DENSITY: &[&str] = &["--density", "d.nc", "--density-cell-m", "4"];

#[test]
fn a_split_stand_is_byte_identical() {
    let Some(mpi) = mpiexec() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    tall_stand(dir.path());
    let one = split_forest(&mpi, dir.path(), 0, "one", DENSITY, None);
    assert!(
        one.status.success(),
        "{}",
        String::from_utf8_lossy(&one.stderr)
    );
    for ranks in [2, 3] {
        let name = format!("n{ranks}");
        let out = split_forest(&mpi, dir.path(), ranks, &name, DENSITY, None);
        assert!(
            out.status.success(),
            "-n {ranks}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        same_files(
            &dir.path().join("one"),
            &dir.path().join(&name),
            &["c.csv", "s.csv", "d.nc"],
            1000,
            &format!("-n {ranks}"),
        );
    }
}

#[test]
fn a_failing_rank_ends_a_split_stand_cleanly() {
    let Some(mpi) = mpiexec() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    tall_stand(dir.path());
    for (fail, says) in [("1", "rank 1"), ("year:2", "rank 2")] {
        let out = split_forest(&mpi, dir.path(), 3, "bad", DENSITY, Some(fail));
        let what = format!("GEOFIELD_MPI_FAIL={fail}");
        failed_cleanly(&out, says, Some(&dir.path().join("bad")), &what);
        failed_cleanly(&out, "injected failure", None, &what);
    }
    // Per-seed dispersal is not split by rows: rank 0 runs the one case, as one process does.
    let per_seed = ["--dispersal", "per-seed"];
    let one = split_forest(&mpi, dir.path(), 0, "ps1", &per_seed, None);
    let two = split_forest(&mpi, dir.path(), 2, "ps2", &per_seed, None);
    assert!(one.status.success() && two.status.success());
    let err = String::from_utf8_lossy(&two.stderr);
    assert!(err.contains("per-seed dispersal is not split"), "{err}");
    same_files(
        &dir.path().join("ps1"),
        &dir.path().join("ps2"),
        &["c.csv", "s.csv"],
        1000,
        "per-seed on 2 ranks",
    );
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
