//! Smoke tests: `geofield demo` writes every file its README paragraph names, and every
//! `geofield bench` runs at a tiny scale (the benches' own size flags; all of them together take
//! a few seconds on 2 CPU cores) and writes JSON rows of finite numbers.

use serde_json::Value;

use super::{geofield, s, text};

/// The README paragraph that lists the demo's outputs.
const README: &str = include_str!("../../../../README.md");

/// The `name.ext` words in backquotes of the paragraph starting "The demo writes".
fn demo_files_in_readme() -> Vec<String> {
    let start = README
        .find("The demo writes")
        .expect("the README describes the demo's outputs");
    let para = &README[start..];
    let para = &para[..para.find("\n\n").unwrap_or(para.len())];
    para.split('`')
        .skip(1)
        .step_by(2)
        .filter(|w| w.contains('.') && !w.contains(' '))
        .map(str::to_string)
        .collect()
}

#[test]
fn demo_writes_every_file_the_readme_lists() {
    let files = demo_files_in_readme();
    assert!(files.len() >= 15, "README lists {files:?}");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("demo");
    let o = geofield(&["demo", "--out", s(&out), "--backend", "cpu"]);
    assert!(o.status.success(), "{}", text(&o));
    for f in &files {
        let p = out.join(f);
        let len = std::fs::metadata(&p)
            .unwrap_or_else(|e| panic!("the demo did not write {f}: {e}"))
            .len();
        assert!(len > 0, "{f} is empty");
    }
}

/// Every number under `v`, with its path.
fn numbers(v: &Value, path: &str, out: &mut Vec<(String, f64)>) {
    match v {
        Value::Number(n) => out.push((path.to_string(), n.as_f64().unwrap_or(f64::NAN))),
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                numbers(x, &format!("{path}[{i}]"), out);
            }
        }
        Value::Object(m) => {
            for (k, x) in m {
                numbers(x, &format!("{path}.{k}"), out);
            }
        }
        _ => {}
    }
}

/// Runs `bench <args> --json FILE` on the CPU and returns the rows under `key`: at least one,
/// each with finite numbers only and a positive timing among them.
fn bench_rows(args: &[&str], key: &str, timing: &[&str]) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("b.json");
    let mut all = vec!["bench"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--backend", "cpu", "--json", s(&json)]);
    let o = geofield(&all);
    assert!(o.status.success(), "bench {args:?}: {}", text(&o));
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let rows = v[key].as_array().cloned().unwrap_or_default();
    assert!(!rows.is_empty(), "bench {args:?}: no {key} in {v}");
    for (i, r) in rows.iter().enumerate() {
        let mut n = Vec::new();
        numbers(r, "", &mut n);
        assert!(!n.is_empty(), "bench {args:?}: row {i} has no number: {r}");
        for (p, x) in &n {
            assert!(x.is_finite(), "bench {args:?}: row {i} {p} = {x}");
        }
        assert!(
            n.iter()
                .any(|(p, x)| timing.iter().any(|t| p.contains(t)) && *x > 0.0),
            "bench {args:?}: row {i} has no positive {timing:?}: {r}"
        );
    }
    rows
}

#[test]
fn every_bench_runs_at_a_tiny_scale() {
    let rows = bench_rows(
        &["knn", "--log2-n", "8", "--repeats", "1", "--warmup", "0"],
        "rows",
        &["median"],
    );
    assert!(
        rows.iter().all(|r| r["agrees"] == true),
        "kNN rows agree: {rows:?}"
    );
    bench_rows(
        &[
            "forest",
            "--scales",
            "paper",
            "--years",
            "3",
            "--repeats",
            "1",
        ],
        "rows",
        &["median"],
    );
    bench_rows(
        &[
            "flock",
            "--agents",
            "300",
            "--repeats",
            "1",
            "--warmup-steps",
            "1",
        ],
        "rows",
        &["steps_per_s"],
    );
    bench_rows(
        &[
            "kriging",
            "--cases",
            "paper",
            "--zoom",
            "1",
            "--repeats",
            "1",
            "--warmup",
            "0",
        ],
        "rows",
        &["median", "nodes_per_s"],
    );
    bench_rows(
        &[
            "dispersal",
            "--scale",
            "quick",
            "--repeats",
            "1",
            "--warmup",
            "0",
        ],
        "cases",
        &["median"],
    );
    let rows = bench_rows(
        &[
            "wind",
            "--r",
            "1",
            "--iterations",
            "10",
            "--tolerance",
            "1e-2",
            "--big",
            "false",
            "--repeats",
            "1",
        ],
        "rows",
        &["seconds"],
    );
    assert!(rows.len() >= 2, "{rows:?}");
}

/// A bench stopped half-way (SIGKILL, no clean-up at all) leaves a valid `--json` holding every
/// row it measured: the file is rewritten whole, atomically, after each row.
#[cfg(unix)]
#[test]
fn a_killed_bench_keeps_the_rows_it_measured() {
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("b.json");
    let mut child = Command::new(super::binary())
        .args([
            "bench",
            "knn",
            "--log2-n",
            "8,9,10,11,12,13,22,22,22",
            "--repeats",
            "1",
            "--backend",
            "cpu",
            "--json",
            s(&json),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while !json.exists() {
        assert!(start.elapsed().as_secs() < 120, "no row was written");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let rows = v["rows"].as_array().cloned().unwrap_or_default();
    assert!(!rows.is_empty() && v["env"].is_object(), "{v}");
    // The run was cut short: not every size was measured.
    assert!(!rows.iter().any(|r| r["n"] == 1 << 22), "{v}");
}
