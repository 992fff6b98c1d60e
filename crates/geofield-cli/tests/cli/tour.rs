//! The README's tour of the command line runs top to bottom, as written, in an empty folder
//! (the `bench` lines aside: each bench has its own smoke test).

use std::process::Command;

use super::{binary, text};

const README: &str = include_str!("../../../../README.md");

/// The commands of the tour's first `sh` block: continuation lines joined, comments dropped,
/// `a; b` split.
fn tour_commands() -> Vec<String> {
    let start = README
        .find("```sh\ngeofield info")
        .expect("the tour's sh block");
    let body = &README[start + "```sh\n".len()..];
    let body = &body[..body.find("```").expect("the end of the tour")];
    let joined = body.replace("\\\n", " ");
    joined
        .lines()
        .map(|l| l.split("  #").next().unwrap_or("").trim().to_string())
        .flat_map(|l| {
            l.split(';')
                .map(|c| c.trim().to_string())
                .collect::<Vec<_>>()
        })
        .filter(|c| !c.is_empty())
        .collect()
}

#[test]
fn the_readme_tour_runs_top_to_bottom() {
    let commands = tour_commands();
    assert!(commands.len() >= 10, "{commands:?}");
    let dir = tempfile::tempdir().unwrap();
    for c in commands {
        let words: Vec<&str> = c.split_whitespace().collect();
        assert_eq!(words[0], "geofield", "{c}");
        if words[1] == "bench" {
            continue;
        }
        let o = Command::new(binary())
            .args(&words[1..])
            .current_dir(dir.path())
            .env("GEOFIELD_BACKEND", "cpu")
            .output()
            .unwrap();
        assert!(o.status.success(), "{c}: {}", text(&o));
        // Every file the command names after a flag ending in out/png/json/... exists.
        for w in words.windows(2) {
            let (flag, value) = (w[0], w[1]);
            let writes = flag.starts_with("--")
                && [
                    "out",
                    "png",
                    "json",
                    "gif",
                    "variance",
                    "distances",
                    "stations",
                ]
                .iter()
                .any(|k| flag.ends_with(k))
                && !matches!(flag, "--station-count");
            let is_input = matches!(
                words[1],
                "wind" | "krige" | "variogram" | "disperse" | "knn"
            ) && matches!(flag, "--stations" | "--samples" | "--trees" | "--points");
            if writes && !is_input {
                assert!(dir.path().join(value).exists(), "{c}: {value} missing");
            }
        }
    }
}
