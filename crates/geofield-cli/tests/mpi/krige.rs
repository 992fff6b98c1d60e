//! `krige` split by rows over ranks.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use crate::{BIN, failed_cleanly, launcher, mpiexec, run, same_files};

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
            let (one, got) = (dir.path().join("one"), dir.path().join(&sub));
            same_files(&one, &got, files, 1000, &format!("-n {ranks} {args:?}"));
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
        failed_cleanly(
            &out,
            &format!("rank {rank}: "),
            Some(&at),
            &format!("GEOFIELD_MPI_FAIL={fail}"),
        );
    }
}
