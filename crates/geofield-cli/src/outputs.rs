//! All outputs of one run, all or nothing.
//!
//! A command declares its inputs and outputs before it computes anything ([`Outputs::input`],
//! [`Outputs::plan`]); planning refuses, with the flag that named it:
//! - an output whose folder is missing or not writable, or whose raster extension is unknown;
//! - an output that is the same file as an input (also through a symbolic or hard link): writing
//!   it would destroy the input;
//! - two outputs on one path (one of them would be lost);
//! - an existing path that is not a regular file (a folder, `/dev/null`, a FIFO): geofield writes
//!   files whole and would replace it.
//!
//! Every file is then written into a hidden staging folder next to its target
//! ([`Outputs::write`], [`Outputs::folder`]), and [`Outputs::commit`] moves them all into place
//! once every one is complete. A run that fails, or is stopped by Ctrl-C or SIGTERM, leaves none
//! of its outputs and no staging folder behind ([`install_signal_cleanup`]).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{Context, Result, bail};
use geofield_io::RasterFormat;

/// What kind of output a path is, for the checks made when it is planned.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    /// A raster, format by extension (`.tif`, `.asc`, `.npy`).
    Raster,
    /// Any other file.
    File,
    /// A folder that receives several files (created if missing).
    Folder,
}

/// Staging folders that exist now; removed by the signal handler.
static LIVE_STAGING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Remove every staging folder and exit with 130 on Ctrl-C (SIGINT) or SIGTERM.
pub fn install_signal_cleanup() {
    // Best effort: without a handler (another one installed), the default action still stops
    // the process; only the staging folders would stay behind.
    let _ = ctrlc::set_handler(|| {
        // Hold the lock until exit, so that no new staging folder appears after the cleanup.
        let live = LIVE_STAGING.lock().unwrap_or_else(|e| e.into_inner());
        for d in live.iter() {
            // The main thread may be writing into the folder right now: move it away first (new
            // writes then fail), and retry while a write that was already under way lands.
            let doomed = d.with_extension("interrupted");
            let gone = if std::fs::rename(d, &doomed).is_ok() {
                doomed
            } else {
                d.clone()
            };
            for _ in 0..50 {
                if std::fs::remove_dir_all(&gone).is_ok() || !gone.exists() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
        if live.is_empty() {
            eprintln!("interrupted");
        } else {
            eprintln!("interrupted: no output was written");
        }
        std::process::exit(130);
    });
}

/// A file's identity: its canonical path and, on Unix, its device and inode.
#[derive(Clone, Debug)]
struct Identity {
    canonical: PathBuf,
    inode: Option<(u64, u64)>,
}

impl Identity {
    /// The identity of an existing file, or `None` when it does not exist.
    fn of_existing(path: &Path) -> Option<Self> {
        let canonical = std::fs::canonicalize(path).ok()?;
        Some(Identity {
            inode: inode(&canonical),
            canonical,
        })
    }

    /// The identity `path` has or would have once written: the canonical folder joined with the
    /// file name, or the file's own identity when it exists (links resolved).
    fn of_target(path: &Path) -> Option<Self> {
        if let Some(id) = Self::of_existing(path) {
            return Some(id);
        }
        let dir = std::fs::canonicalize(parent_of(path)).ok()?;
        Some(Identity {
            canonical: dir.join(path.file_name()?),
            inode: None,
        })
    }

    fn same(&self, other: &Identity) -> bool {
        self.canonical == other.canonical
            || matches!((self.inode, other.inode), (Some(a), Some(b)) if a == b)
    }
}

#[cfg(unix)]
fn inode(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn inode(_path: &Path) -> Option<(u64, u64)> {
    None
}

/// The folder a path lives in (`.` for a bare file name).
fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

struct Named {
    flag: String,
    path: PathBuf,
    id: Option<Identity>,
}

/// The inputs and outputs of one run; see the module docs.
#[derive(Default)]
pub struct Outputs {
    inputs: Vec<Named>,
    planned: Vec<Named>,
    staging: Vec<tempfile::TempDir>,
    /// (staged file, final path)
    moves: Vec<(PathBuf, PathBuf)>,
    /// (staged folder, final folder)
    folders: Vec<(PathBuf, PathBuf)>,
}

impl Outputs {
    pub fn new() -> Self {
        Self::default()
    }

    /// Record an input file (named by `flag`), so that no output may replace it.
    pub fn input(&mut self, flag: &str, path: &Path) {
        self.inputs.push(Named {
            flag: flag.to_string(),
            path: path.to_path_buf(),
            id: Identity::of_existing(path),
        });
    }

    /// Check an output path now, before anything is computed; see the module docs.
    pub fn plan(&mut self, flag: &str, path: &Path, kind: Kind) -> Result<()> {
        let shown = path.display();
        if path.as_os_str().is_empty() {
            bail!("{flag}: the path is empty");
        }
        if kind == Kind::Raster {
            RasterFormat::from_path(path).with_context(|| format!("{flag} {shown}"))?;
        }
        let dir = parent_of(path);
        if !dir.is_dir() {
            bail!("{flag} {shown}: folder {} does not exist", dir.display());
        }
        match (std::fs::metadata(path), kind) {
            (Ok(m), Kind::Folder) if !m.is_dir() => {
                bail!("{flag} {shown}: exists and is not a folder")
            }
            (Ok(m), Kind::Raster | Kind::File) if m.is_dir() => {
                bail!("{flag} {shown}: is a folder")
            }
            (Ok(m), Kind::Raster | Kind::File) if !m.is_file() => bail!(
                "{flag} {shown}: exists and is not a regular file (a device, FIFO or socket); \
                 geofield writes files whole and would replace it"
            ),
            _ => {}
        }
        tempfile::NamedTempFile::new_in(dir)
            .with_context(|| format!("{flag} {shown}: folder {} is not writable", dir.display()))?;
        let id = Identity::of_target(path);
        if let Some(id) = &id {
            self.refuse_clash(flag, path, id)?;
        }
        self.planned.push(Named {
            flag: flag.to_string(),
            path: path.to_path_buf(),
            id,
        });
        Ok(())
    }

    /// Plan `path` when it is given.
    pub fn plan_opt(&mut self, flag: &str, path: Option<&Path>, kind: Kind) -> Result<()> {
        match path {
            Some(p) => self.plan(flag, p, kind),
            None => Ok(()),
        }
    }

    /// Refuse `path` (identity `id`) when it is an input or an output planned before.
    fn refuse_clash(&self, flag: &str, path: &Path, id: &Identity) -> Result<()> {
        for i in &self.inputs {
            if i.id.as_ref().is_some_and(|x| x.same(id)) {
                bail!(
                    "{flag} {} is the input {} {}: refusing to overwrite an input",
                    path.display(),
                    i.flag,
                    i.path.display()
                );
            }
        }
        for o in &self.planned {
            if o.id.as_ref().is_some_and(|x| x.same(id)) {
                bail!(
                    "{flag} {} and {} {} are the same file: one would be lost",
                    path.display(),
                    o.flag,
                    o.path.display()
                );
            }
        }
        Ok(())
    }

    /// A new staging folder next to `target`, registered for the signal cleanup.
    fn stage_dir(&mut self, target: &Path) -> Result<PathBuf> {
        let mut live = LIVE_STAGING.lock().unwrap_or_else(|e| e.into_inner());
        let d = tempfile::Builder::new()
            .prefix(".geofield-staging-")
            .tempdir_in(parent_of(target))
            .with_context(|| format!("cannot write {}", target.display()))?;
        let path = d.path().to_path_buf();
        live.push(path.clone());
        self.staging.push(d);
        Ok(path)
    }

    /// Run `write` on the staged path of `target`; it returns the files it wrote there (the
    /// staged path itself, or several, such as one `.asc` per band), which move into
    /// `target`'s folder under the same names at [`Outputs::commit`]. Returns the final paths.
    pub fn write(
        &mut self,
        target: &Path,
        write: impl FnOnce(&Path) -> Result<Vec<PathBuf>>,
    ) -> Result<Vec<PathBuf>> {
        let dir = self.stage_dir(target)?;
        let name = target
            .file_name()
            .with_context(|| format!("{} is not a file name", target.display()))?;
        let written = write(&dir.join(name))?;
        let final_dir = parent_of(target);
        let mut out = Vec::with_capacity(written.len());
        for w in written {
            let f = final_dir.join(w.file_name().unwrap_or(name));
            self.moves.push((w, f.clone()));
            out.push(f);
        }
        Ok(out)
    }

    /// Write one file: `write` gets the staged path.
    pub fn write_one(
        &mut self,
        target: &Path,
        write: impl FnOnce(&Path) -> Result<()>,
    ) -> Result<PathBuf> {
        let mut v = self.write(target, |p| {
            write(p)?;
            Ok(vec![p.to_path_buf()])
        })?;
        v.pop()
            .with_context(|| format!("nothing was written for {}", target.display()))
    }

    /// A staging folder for the files of the output folder `target`: each file written into it
    /// moves into `target` (created if missing) at [`Outputs::commit`].
    pub fn folder(&mut self, target: &Path) -> Result<PathBuf> {
        let staged = self.stage_dir(target)?;
        self.folders.push((staged.clone(), target.to_path_buf()));
        Ok(staged)
    }

    /// Serialise `value` as pretty JSON to `target`.
    pub fn write_json<T: serde::Serialize>(&mut self, target: &Path, value: &T) -> Result<PathBuf> {
        self.write_one(target, |p| crate::output::write_json(p, value))
    }

    /// Move every staged file into place. Before any move, every final path (including ones
    /// derived from a target, like one `.asc` per band or a `.prj`) is checked again against the
    /// inputs, the other outputs, and for being a regular file when it exists.
    pub fn commit(mut self) -> Result<Vec<PathBuf>> {
        // Files of output folders: every file of each folder's staging area.
        let mut moves = std::mem::take(&mut self.moves);
        for (staged, target) in &self.folders {
            let mut names: Vec<_> = std::fs::read_dir(staged)
                .with_context(|| format!("cannot read the staged {}", target.display()))?
                .filter_map(|e| e.ok().map(|e| e.file_name()))
                .collect();
            names.sort();
            for n in names {
                moves.push((staged.join(&n), target.join(&n)));
            }
        }
        let mut seen: Vec<Identity> = Vec::new();
        for (_, to) in &moves {
            if let Ok(m) = std::fs::metadata(to)
                && !m.is_file()
            {
                bail!(
                    "{} exists and is not a regular file; no output was written",
                    to.display()
                );
            }
            // A file in an output folder that does not exist yet: compare by the joined path.
            let id = Identity::of_target(to).unwrap_or_else(|| Identity {
                canonical: to.clone(),
                inode: None,
            });
            {
                for i in &self.inputs {
                    if i.id.as_ref().is_some_and(|x| x.same(&id)) {
                        bail!(
                            "the output {} is the input {} {}: refusing to overwrite an input; \
                             no output was written",
                            to.display(),
                            i.flag,
                            i.path.display()
                        );
                    }
                }
                if seen.iter().any(|s| s.same(&id)) {
                    bail!(
                        "two outputs would be written to {}; no output was written",
                        to.display()
                    );
                }
                seen.push(id);
            }
        }
        for (_, f) in &self.folders {
            std::fs::create_dir_all(f)
                .with_context(|| format!("cannot create the folder {}", f.display()))?;
        }
        let mut done = Vec::with_capacity(moves.len());
        for (from, to) in &moves {
            std::fs::rename(from, to)
                .with_context(|| format!("cannot move the finished {} into place", to.display()))?;
            done.push(to.clone());
        }
        Ok(done)
    }
}

impl Drop for Outputs {
    fn drop(&mut self) {
        let mut live = LIVE_STAGING.lock().unwrap_or_else(|e| e.into_inner());
        live.retain(|p| !self.staging.iter().any(|d| d.path() == p));
        // The TempDirs remove themselves (with anything left in them) when dropped after this.
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_on_an_input_or_on_another_output_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("pts.npy");
        std::fs::write(&input, b"x").unwrap();
        let mut o = Outputs::new();
        o.input("--points", &input);
        let e = o.plan("--out", &input, Kind::File).unwrap_err().to_string();
        assert!(
            e.contains("--points") && e.contains("overwrite an input"),
            "{e}"
        );
        // The same file through another spelling of its path.
        let other = dir.path().join(".").join("pts.npy");
        assert!(o.plan("--out", &other, Kind::File).is_err());
        // A hard link to the input.
        let link = dir.path().join("link.npy");
        std::fs::hard_link(&input, &link).unwrap();
        assert!(o.plan("--out", &link, Kind::File).is_err());
        let a = dir.path().join("a.npy");
        o.plan("--out", &a, Kind::File).unwrap();
        let e = o
            .plan("--distances", &a, Kind::File)
            .unwrap_err()
            .to_string();
        assert!(e.contains("same file"), "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn a_device_file_is_refused() {
        let mut o = Outputs::new();
        let e = o
            .plan("--out", Path::new("/dev/null"), Kind::File)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a regular file"), "{e}");
    }

    #[test]
    fn nothing_appears_until_commit_and_a_dropped_run_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.txt");
        let b = dir.path().join("b.txt");
        {
            let mut o = Outputs::new();
            o.plan("--a", &a, Kind::File).unwrap();
            o.plan("--b", &b, Kind::File).unwrap();
            o.write_one(&a, |p| Ok(std::fs::write(p, "A")?)).unwrap();
            // The second output fails: the run is abandoned.
            assert!(o.write_one(&b, |_| bail!("boom")).is_err());
        }
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(left.is_empty(), "left behind: {left:?}");

        let mut o = Outputs::new();
        o.plan("--a", &a, Kind::File).unwrap();
        let frames = dir.path().join("frames");
        o.plan("--frames", &frames, Kind::Folder).unwrap();
        o.write_one(&a, |p| Ok(std::fs::write(p, "A")?)).unwrap();
        let f = o.folder(&frames).unwrap();
        std::fs::write(f.join("f1.png"), "1").unwrap();
        assert!(!a.exists() && !frames.exists());
        let done = o.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "A");
        assert_eq!(std::fs::read_to_string(frames.join("f1.png")).unwrap(), "1");
        assert_eq!(done.len(), 2);
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            names.iter().all(|n| !n.starts_with(".geofield")),
            "{names:?}"
        );
    }

    #[test]
    fn a_derived_file_landing_on_an_input_is_refused_at_commit() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("seeds_fir.asc");
        std::fs::write(&input, b"in").unwrap();
        let mut o = Outputs::new();
        o.input("--dem", &input);
        let target = dir.path().join("seeds.asc");
        o.plan("--out", &target, Kind::Raster).unwrap();
        o.write(&target, |p| {
            let derived = p.with_file_name("seeds_fir.asc");
            std::fs::write(&derived, "out")?;
            Ok(vec![derived])
        })
        .unwrap();
        assert!(o.commit().is_err());
        assert_eq!(std::fs::read(&input).unwrap(), b"in");
    }
}
