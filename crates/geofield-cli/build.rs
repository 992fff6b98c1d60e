//! Records the git commit in the binary (benchmarks report it).
fn main() {
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let dirty = std::process::Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()
        .map(|o| !o.stdout.is_empty())
        .unwrap_or(false);
    println!(
        "cargo:rustc-env=GEOFIELD_COMMIT={commit}{}",
        if dirty { "-dirty" } else { "" }
    );
    // HEAD names a branch whose ref moves on commit; the index changes on add and commit; the
    // sources decide whether the build is dirty.
    for p in [
        "../../.git/HEAD",
        "../../.git/index",
        "../../.git/refs/heads",
        "../../crates",
    ] {
        println!("cargo:rerun-if-changed={p}");
    }
}
