//! A file's bytes written by many threads at once through a shared memory map of it.
//!
//! Positioned writes (`pwrite`) into one file serialise on the file's lock in Linux (tmpfs,
//! ext4, xfs: one writer at a time per inode), so the GB-sized GeoTIFFs of a landscape reach
//! the page cache at one core's copying speed (2.5-3 GB/s), and MPI ranks writing their tiles
//! into one file wait for each other. Stores into a shared map of the file take no such lock:
//! every thread (and every process) copies its own bytes into the file's pages at once.
//!
//! What could go wrong with a map, and what is done about it:
//! - A store into a page the file system cannot provide (the disk or tmpfs full) would raise
//!   SIGBUS. Every range is first populated with `MADV_POPULATE_WRITE` (Linux 5.14), which
//!   allocates the pages and returns the failure as an error instead; only then is it written.
//! - A store past the end of the file would raise SIGBUS too: only ranges inside the file's
//!   current length are mapped (the caller sizes the file first).
//! - Where the kernel or the file system cannot map or populate (an older kernel, a network or
//!   FUSE file system, a disk already full), [`write_mapped`] says so by returning `Ok(false)`
//!   before writing anything, and the caller writes with positioned writes instead.
//!
//! The map lives only inside [`write_mapped`]; the file is the caller's freshly created output,
//! which nothing else truncates while it is written.

use std::fs::File;
use std::io;

use rayon::prelude::*;

/// Runs smaller than this are written with positioned writes: mapping pays for itself only
/// when the copying is long.
pub(super) const MAPPED_MIN_BYTES: u64 = 64 << 20;

/// Whether tiles may be written through a map: unless `GEOFIELD_MAPPED_WRITES=0` (positioned
/// writes only: for a file system whose maps misbehave, and to compare the two).
pub(super) fn enabled() -> bool {
    std::env::var_os("GEOFIELD_MAPPED_WRITES").is_none_or(|v| v != "0")
}

/// Write pieces of `f` in parallel: `pieces` are (offset from `offset`, length), in increasing
/// order and not overlapping (the bytes between them are left alone), and `fill(i, s)` writes
/// piece `i` into its slice `s` of the file. `Ok(false)`: nothing was written because the file
/// cannot be written through a map here (the caller falls back to positioned writes); an
/// error: the file system could not give the pages (e.g. it is full).
#[cfg(target_os = "linux")]
pub(super) fn write_mapped(
    f: &File,
    offset: u64,
    pieces: &[(usize, usize)],
    fill: impl Fn(usize, &mut [u8]) + Sync,
) -> io::Result<bool> {
    use rustix::mm::{Advice, MapFlags, ProtFlags};
    let in_order = pieces.windows(2).all(|w| w[0].0 + w[0].1 <= w[1].0);
    let Some(len) = pieces.last().map(|p| p.0 + p.1).filter(|&n| n > 0) else {
        return Ok(true);
    };
    if !in_order {
        return Err(io::Error::other("mapped write: pieces out of order"));
    }
    if !enabled() {
        return Ok(false);
    }
    let end = offset
        .checked_add(len as u64)
        .ok_or_else(|| io::Error::other("mapped write: offset overflow"))?;
    if f.metadata()?.len() < end {
        // Past the end a store would fault: the caller's positioned writes extend the file.
        return Ok(false);
    }
    let page = rustix::param::page_size() as u64;
    let skip = (offset % page) as usize;
    let map_len = skip + len;
    // SAFETY: a fresh shared, writable map of `map_len` bytes of a file this process opened
    // for writing, inside the file's length (checked above); it is unmapped by `Unmap` before
    // this function returns.
    #[allow(unsafe_code)]
    let ptr = match unsafe {
        rustix::mm::mmap(
            std::ptr::null_mut(),
            map_len,
            ProtFlags::READ | ProtFlags::WRITE,
            MapFlags::SHARED,
            f,
            offset - skip as u64,
        )
    } {
        Ok(p) => p.cast::<u8>(),
        Err(_) => return Ok(false),
    };
    struct Unmap(*mut u8, usize);
    impl Drop for Unmap {
        fn drop(&mut self) {
            // SAFETY: the map made above, unmapped once, after the last use of the slices
            // made from it.
            #[allow(unsafe_code)]
            let _ = unsafe { rustix::mm::munmap(self.0.cast(), self.1) };
        }
    }
    let _guard = Unmap(ptr, map_len);
    // Asks the file system for the pages of `n` bytes from `at` (bytes into the map), so that
    // the stores below cannot fault.
    let base = ptr as usize;
    let populate = |at: usize, n: usize| -> io::Result<()> {
        let aligned = at - at % page as usize;
        // SAFETY: `aligned .. at + n` lies inside the live map (`at + n` ≤ `map_len`, the map
        // starts on a page); populating writes no data.
        #[allow(unsafe_code)]
        unsafe {
            rustix::mm::madvise(
                (base + aligned) as *mut std::ffi::c_void,
                n + (at - aligned),
                Advice::LinuxPopulateWrite,
            )
        }
        .map_err(io::Error::from)
    };
    // Any refusal of the first page (EINVAL before Linux 5.14, a file system that cannot
    // populate, or one already full) and nothing is written: the positioned writes then go
    // ahead, or fail with the file system's own error (e.g. "No space left on device").
    let Some(&(first, _)) = pieces.iter().find(|p| p.1 > 0) else {
        return Ok(true);
    };
    if populate(skip + first, 1).is_err() {
        return Ok(false);
    }
    // Each piece's own bytes, and only those: the bytes between pieces may be another
    // process's, written through its own map at the same time.
    let slices: Vec<(usize, usize, &mut [u8])> = pieces
        .iter()
        .enumerate()
        .filter(|(_, p)| p.1 > 0)
        .map(|(i, &(start, n))| {
            // SAFETY: the pieces are in order and do not overlap (checked above), so these
            // slices are disjoint; each lies inside the live map (`start + n` ≤ `len`), which
            // `_guard` keeps until after the last use of them below.
            #[allow(unsafe_code)]
            let s = unsafe { std::slice::from_raw_parts_mut(ptr.add(skip + start), n) };
            (i, skip + start, s)
        })
        .collect();
    slices.into_par_iter().try_for_each(|(i, at, s)| {
        populate(at, s.len()).map_err(no_pages)?;
        fill(i, s);
        Ok::<_, io::Error>(())
    })?;
    Ok(true)
}

/// Elsewhere than Linux: positioned writes.
#[cfg(not(target_os = "linux"))]
pub(super) fn write_mapped(
    _: &File,
    _: u64,
    _: &[(usize, usize)],
    _: impl Fn(usize, &mut [u8]) + Sync,
) -> io::Result<bool> {
    Ok(false)
}

/// The file system refused the pages of the file.
#[cfg(target_os = "linux")]
fn no_pages(e: io::Error) -> io::Error {
    io::Error::new(
        e.kind(),
        format!("the file system could not give the file its pages (is it full?): {e}"),
    )
}
