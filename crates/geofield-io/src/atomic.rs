//! Outputs that appear whole or not at all.
//!
//! Every writer in this crate writes to a temporary file in the target's own folder (so that the
//! final rename stays on one file system), flushes and syncs it, and only then renames it onto
//! the target. A failed or interrupted run leaves no truncated output behind: on error the
//! temporary file is removed (tempfile's `NamedTempFile` deletes itself when dropped).
//!
//! Multi-file outputs (one `.asc` per band) write every temporary file first and rename them
//! all at the end, so a failure while writing leaves none of them.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use crate::IoError;

/// Buffer size for writers over the temporary file.
const WRITE_BUFFER_BYTES: usize = 1 << 20;

/// Write `path` atomically: `f` writes the content to a temporary file in the same folder,
/// which is renamed onto `path` only when `f` and the flush succeed. On any error nothing is left
/// at `path` (an existing file there is kept unchanged) and the temporary file is removed.
pub fn write_atomic(
    path: &Path,
    f: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), IoError> {
    let mut staged = Staged::create(path)?;
    staged.with_writer(|w| f(w).map_err(|source| write_error(path, source)))?;
    commit(vec![staged]).map(|_| ())
}

/// Write several files atomically as a group: `f(i, writer)` writes the content of `paths[i]`.
/// All temporary files are written first and renamed only when every one succeeded. Returns the
/// paths written.
pub fn write_atomic_many(
    paths: &[PathBuf],
    mut f: impl FnMut(usize, &mut dyn Write) -> std::io::Result<()>,
) -> Result<Vec<PathBuf>, IoError> {
    let mut all = Vec::with_capacity(paths.len());
    for (i, path) in paths.iter().enumerate() {
        let mut staged = Staged::create(path)?;
        staged.with_writer(|w| f(i, w).map_err(|source| write_error(path, source)))?;
        all.push(staged);
    }
    commit(all)
}

/// A temporary file destined for `target`; dropping it without [`commit`] removes it.
pub(crate) struct Staged {
    target: PathBuf,
    tmp: NamedTempFile,
}

impl Staged {
    /// Create the temporary file next to `target`.
    pub(crate) fn create(target: &Path) -> Result<Self, IoError> {
        let dir = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !dir.is_dir() {
            return Err(IoError::DirectoryMissing {
                path: target.to_path_buf(),
                dir,
            });
        }
        let name = target.file_name().map(|n| n.to_string_lossy().into_owned());
        let prefix = format!(".{}.", name.as_deref().unwrap_or("geofield"));
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(".tmp");
        // tempfile creates files readable by the owner only; outputs should get the usual
        // permissions (0666 less the umask), like any file a program creates.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(0o666));
        }
        let tmp = builder
            .tempfile_in(&dir)
            .map_err(|source| write_error(target, source))?;
        Ok(Self {
            target: target.to_path_buf(),
            tmp,
        })
    }

    /// The temporary file, for writers that place their bytes themselves (positioned writes
    /// from several threads).
    pub(crate) fn file(&self) -> &File {
        self.tmp.as_file()
    }

    /// Run `f` on a buffered writer over the temporary file, then flush the buffer.
    pub(crate) fn with_writer(
        &mut self,
        f: impl FnOnce(&mut BufWriter<&mut File>) -> Result<(), IoError>,
    ) -> Result<(), IoError> {
        let mut w = BufWriter::with_capacity(WRITE_BUFFER_BYTES, self.tmp.as_file_mut());
        f(&mut w)?;
        w.flush()
            .map_err(|source| write_error(&self.target, source))
    }
}

/// Sync every staged file to disk, then rename each onto its target. Returns the targets.
pub(crate) fn commit(staged: Vec<Staged>) -> Result<Vec<PathBuf>, IoError> {
    for s in &staged {
        s.tmp
            .as_file()
            .sync_all()
            .map_err(|source| write_error(&s.target, source))?;
    }
    let mut written = Vec::with_capacity(staged.len());
    for s in staged {
        let target = s.target;
        s.tmp
            .persist(&target)
            .map_err(|e| write_error(&target, e.error))?;
        written.push(target);
    }
    Ok(written)
}

/// The error for a failed write of `path`.
pub(crate) fn write_error(path: &Path, source: std::io::Error) -> IoError {
    IoError::Write {
        path: path.to_path_buf(),
        source,
    }
}
