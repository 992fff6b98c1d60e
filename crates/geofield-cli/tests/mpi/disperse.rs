//! `disperse` split by rows over ranks.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use crate::{BIN, failed_cleanly, launcher, mpiexec, run, same_files};

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
    env: &[(&str, &str)],
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
    cmd.envs(env.iter().copied());
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
        let one = disperse(&mpi, dir.path(), "one", 0, &args, &[]);
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
            // Near/far's far field: on 2 ranks as summed lattices, on 3 as the default choice
            // (the trees, here: fewer words than the lattices).
            let far: &[(&str, &str)] = if ranks == 2 {
                &[("GEOFIELD_FAR_EXCHANGE", "lattice")]
            } else {
                &[]
            };
            let out = disperse(&mpi, dir.path(), &sub, ranks, &args, far);
            assert!(
                out.status.success(),
                "-n {ranks} {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let (one, got) = (dir.path().join("one"), dir.path().join(&sub));
            same_files(&one, &got, files, 10_000, &format!("-n {ranks} {args:?}"));
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
        let out = disperse(
            &mpi,
            dir.path(),
            "f",
            3,
            &args,
            &[("GEOFIELD_MPI_FAIL", fail)],
        );
        failed_cleanly(
            &out,
            &format!("rank {rank}: injected failure"),
            Some(&dir.path().join("f")),
            &format!("GEOFIELD_MPI_FAIL={fail}"),
        );
    }
}

/// Each rank reads its byte range of the stem map: a bad value in the last rank's range, or in
/// the first's, is reported as one process reports it (the file and line), by that rank, with
/// exit code 2 and no output; `--strict` with an unknown species in the middle rank's range
/// names the first such line, as one process does (found in the reports every rank combines:
/// rank 0 names it).
#[test]
fn a_bad_stem_map_line_is_named_as_one_process_names_it() {
    let Some(mpi) = mpiexec() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    big_stand(dir.path());
    let text = std::fs::read_to_string(dir.path().join("t.csv")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let args = [
        "--cell-size-m",
        "2",
        "--out",
        "s.tif",
        "--species",
        "../t.toml",
    ];
    let cases = [
        (lines.len() * 9 / 10, "1,2,-3,subalpine_fir", 2),
        (3, "1,2,x,subalpine_fir", 0),
        (lines.len() / 2, "1,2,30,no_such_tree", 0),
    ];
    for (at, bad, rank) in cases {
        let mut l = lines.clone();
        let mut fields: Vec<&str> = bad.split(',').collect();
        // Keep the file's column order: x, y, dbh, species as the header has them.
        let header: Vec<&str> = l[0].split(',').collect();
        let order = |name: &str| header.iter().position(|h| h.trim() == name).unwrap();
        let mut row = vec![""; header.len()];
        for (name, v) in ["x_m", "y_m", "dbh_cm", "species"]
            .iter()
            .zip(fields.drain(..))
        {
            row[order(name)] = v;
        }
        let row = row.join(",");
        l[at] = &row;
        std::fs::write(dir.path().join("t.csv"), l.join("\n") + "\n").unwrap();
        let mut a = args.to_vec();
        if bad.contains("no_such") {
            a.push("--strict");
        }
        let one = disperse(&mpi, dir.path(), "one", 0, &a, &[]);
        let said = String::from_utf8_lossy(&one.stderr).to_string();
        assert_eq!(one.status.code(), Some(2), "{said}");
        assert!(said.contains(&format!("t.csv:{}:", at + 1)), "{said}");
        // The one-process error, after "rank R: ".
        let cause = said
            .lines()
            .find(|s| s.contains("t.csv:"))
            .unwrap()
            .split("t.csv:")
            .nth(1)
            .unwrap()
            .to_string();
        let out = disperse(&mpi, dir.path(), "f", 3, &a, &[]);
        failed_cleanly(
            &out,
            &format!("rank {rank}: "),
            Some(&dir.path().join("f")),
            &format!("a bad line {at} on rank {rank}"),
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&cause), "{err} does not say {cause}");
        std::fs::remove_dir_all(dir.path().join("one")).unwrap();
    }
    std::fs::write(dir.path().join("t.csv"), text).unwrap();
}
