//! `mpiexec -n R geofield ...` (feature `mpi`): forest replicates and methods and wind atlases
//! spread over the ranks, and the dispersal, the kriging and one wind solve split by rows, give
//! outputs identical to one process; one rank's failure, before the work or in a case, ends the
//! whole job with exit code 2, a message naming the rank, no output and no hang. Needs `mpiexec` on the PATH (`source scripts/mpi_env.sh`); without it the tests skip
//! with a notice, unless `GEOFIELD_REQUIRE_MPI=1` (CI).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_geofield");

pub(crate) fn mpiexec() -> Option<PathBuf> {
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
pub(crate) fn run(mut cmd: Command, limit: Duration) -> Output {
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
pub(crate) fn launcher(mpi: &Path, ranks: usize) -> Command {
    if ranks == 0 {
        return Command::new(BIN);
    }
    let mut c = Command::new(mpi);
    c.args(["-n", &ranks.to_string(), BIN]);
    c
}

/// The job ended cleanly on a failure: exit code 2, `says` in its errors, and (with a folder)
/// nothing left in `folder`.
pub(crate) fn failed_cleanly(out: &Output, says: &str, folder: Option<&Path>, what: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{what}: {err}");
    assert!(err.contains(says), "{what}: {err}");
    if let Some(f) = folder {
        let left: Vec<_> = std::fs::read_dir(f).unwrap().collect();
        assert!(left.is_empty(), "{what} left {left:?}");
    }
}

/// Each of `files` is the same, byte for byte, in folders `a` and `b`, and more than `min`
/// bytes long (an empty file would compare equal without showing anything).
pub(crate) fn same_files(a: &Path, b: &Path, files: &[&str], min: usize, what: &str) {
    for f in files {
        let x = std::fs::read(a.join(f)).unwrap();
        let y = std::fs::read(b.join(f)).unwrap();
        assert!(x.len() > min, "{f}: {} bytes", x.len());
        assert!(x == y, "{what}: {f} differs");
    }
}

mod disperse;
mod forest;
mod krige;
mod wind;
