//! `forest` replicates and methods over ranks, its failures, and `info`.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use crate::{BIN, failed_cleanly, launcher, mpiexec, run};

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
