//! On-disk cache of compiled kernel images (CUBIN, one per kernel unit), so that each run of the
//! command-line tool does not pay NVRTC's compile time (0.1–1.7 s per kernel) again.
//!
//! Location: `$GEOFIELD_CACHE_DIR`, else `$XDG_CACHE_HOME/geofield`, else `~/.cache/geofield`;
//! `GEOFIELD_CACHE_DIR=off` disables it. Entries are keyed by a hash of the full source, the
//! compile options, the target architecture and the NVRTC version, so any change misses. A
//! corrupt or unloadable entry is ignored and overwritten; failing to write is not an error.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;

/// The cache folder, or None when disabled or no home is known.
fn dir() -> Option<PathBuf> {
    match std::env::var_os("GEOFIELD_CACHE_DIR") {
        Some(v) if v == "off" || v.is_empty() => None,
        Some(v) => Some(PathBuf::from(v)),
        None => std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
            .map(|p| p.join("geofield")),
    }
}

/// The cache file for a module compiled from `source` with `options` for `arch`.
pub(crate) fn path_for(
    name: &str,
    arch: &str,
    source: &str,
    options: &[String],
    nvrtc: Option<(i32, i32)>,
) -> Option<PathBuf> {
    let mut h = DefaultHasher::new();
    (source, options, arch, nvrtc).hash(&mut h);
    Some(dir()?.join(format!("{name}-{arch}-{:016x}.cubin", h.finish())))
}

/// The cached image, if present.
pub(crate) fn load(path: &PathBuf) -> Option<Vec<u8>> {
    std::fs::read(path).ok().filter(|b| !b.is_empty())
}

/// Store an image (best effort): written to a temporary name and renamed, so concurrent runs
/// never read a partial file.
pub(crate) fn store(path: &PathBuf, image: &[u8]) {
    let Some(parent) = path.parent() else { return };
    if std::fs::create_dir_all(parent).is_err() {
        return;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    if std::fs::write(&tmp, image).is_ok() && std::fs::rename(&tmp, path).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}
