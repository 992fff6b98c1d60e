//! Property tests of every domain input parser: thousands of mutated valid files (seeded,
//! deterministic), each either parsed or refused with a typed error that names the file, never
//! a panic, a hang or an allocation beyond what the file's size allows.
//!
//! Parsers: stand CSV ([`read_stand`]), samples CSV ([`read_samples`]), species TOML
//! ([`read_species`]), points CSV and NPY ([`read_points`]), DEM ESRI ASCII and GeoTIFF
//! ([`read_dem`]), stations CSV ([`read_stations`]).
//!
//! Mutations (one to three per file, from SplitMix64 seeded per parser and case): byte flips,
//! truncation, inserted junk bytes (invalid UTF-8 included), duplicated, deleted and swapped
//! lines, a number replaced by a huge, negative, NaN, infinite, empty, overlong or non-numeric
//! value, and the size fields of headers (ESRI ASCII `ncols`/`nrows`, NPY `shape`, TIFF
//! ImageWidth/ImageLength/RowsPerStrip/StripByteCounts) replaced by huge values.
//!
//! - **No panic**: each parse runs under `catch_unwind`.
//! - **No hang**: the cases run on a worker thread that reports each case; the test fails when
//!   one case takes longer than [`CASE_LIMIT`].
//! - **No allocation beyond the file's size**: a counting global allocator records the largest
//!   single allocation made while a case is parsed; it must stay below the bound of the parser
//!   (see [`Bound`]: a multiple of the file's length plus a constant, each derived there).
//!   Allocations above [`HARD_CAP`] are refused outright (the process then aborts with the size
//!   in the message: a failure, not a hang or a swap storm).
//!
//! `INPUT_PROPS_CASES` sets the cases per parser (default 2000). The counts are printed
//! (`--nocapture`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, mpsc};
use std::time::{Duration, Instant};

use geofield::dispersal::io::{read_species, read_stand, species_toml};
use geofield::kriging::io::read_samples;
use geofield::neighbors::io::read_points;
use geofield::wind::io::{DemError, read_dem, read_stations};
use geofield_core::{Extent, GridSpec, Raster, RasterData};

mod mutate;
mod seeds;

use mutate::*;
use seeds::*;

// ---------------------------------------------------------------------------------------------
// Counting allocator.

/// The System allocator, recording the largest single request while [`ARMED`].
struct Counting;

// Armed per thread: only the parsing thread's requests count, not those of the test harness or of
// other tests' threads running at the same time (the harness's output capture, for one, asks
// for 1 MiB buffers). The parsers decode on the calling thread.
thread_local! {
    static ARMED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}
static LARGEST: AtomicUsize = AtomicUsize::new(0);
/// Requests above this are refused (null), whatever the case: 1 GiB.
const HARD_CAP: usize = 1 << 30;

fn record(size: usize) -> bool {
    if ARMED.try_with(std::cell::Cell::get).unwrap_or(false) {
        LARGEST.fetch_max(size, Ordering::Relaxed);
    }
    size <= HARD_CAP
}

// The only unsafe code outside geofield-cuda: a GlobalAlloc must be an `unsafe impl`. Every
// method forwards to `System` with the caller's arguments unchanged (so System's contract is
// the caller's), after recording the size.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !record(layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: forwarded unchanged; `layout` is the caller's, valid per GlobalAlloc.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !record(layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: as in `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` (through this type) with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if !record(new_size) {
            return std::ptr::null_mut();
        }
        // SAFETY: `ptr`/`layout` come from this allocator (System); `new_size` is the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// One parser's test at a time: the allocator's record is process-wide.
static SERIAL: Mutex<()> = Mutex::new(());

/// Longest a single case may take (the slowest legitimate case parses a few KiB in well under
/// a millisecond; 10 s leaves room for a loaded CI machine).
const CASE_LIMIT: Duration = Duration::from_secs(10);

// ---------------------------------------------------------------------------------------------
// The harness.

/// Largest single allocation allowed while parsing a file of `len` bytes: `per_byte * len +
/// constant`.
#[derive(Clone, Copy)]
struct Bound {
    per_byte: usize,
    constant: usize,
}

impl Bound {
    fn of(&self, len: usize) -> usize {
        self.per_byte * len + self.constant
    }
}

/// The CSV readers: the csv crate's 64 KiB read buffer (geofield_io::csv_input), its window of
/// read bytes (at most the file, doubled by Vec growth: 2 x len), one record's fields (<= len),
/// and the output columns: a value takes at least 2 bytes of text (a character and a comma or
/// line feed) and 8 bytes as f64, so a column holds at most len/2 values = 4 x len bytes,
/// doubled by Vec growth = 8 x len. Constant: the 64 KiB buffer plus 64 KiB of small
/// allocations (header names, hash maps of a few species).
const CSV: Bound = Bound {
    per_byte: 8,
    constant: 128 << 10,
};

/// The species TOML: the text (len), the toml crate's parse tree and strings (each a copy of
/// at most len bytes), and one Species (under 256 bytes) per `[[species]]` table of at least
/// 12 bytes: 256/12 < 24 bytes per byte of text, doubled by Vec growth = 48; 64 for margin of
/// the parse tree's per-key nodes. Constant: 64 KiB.
const TOML: Bound = Bound {
    per_byte: 64,
    constant: 64 << 10,
};

/// NPY: the file read whole (len, rounded up by the reader's growth to at most 2 x len), the
/// decoded values (as many bytes as the file's data), nothing else of size. Constant: 64 KiB.
const NPY: Bound = Bound {
    per_byte: 2,
    constant: 64 << 10,
};

/// ESRI ASCII DEM: the text (read whole: up to 2 x len with growth), the values (at most
/// (len + 1)/2 of them, 8 bytes each: 4 x len, reserved exactly), the f64 band copy (4 x len)
/// and the breadth-first queue of nodata filling (8-byte indices, one per cell: 4 x len,
/// doubled by growth: 8 x len). Constant: 64 KiB.
const ASC: Bound = Bound {
    per_byte: 8,
    constant: 64 << 10,
};

/// GeoTIFF DEM: a decoded strip or tile holds at most 2048 bytes per byte of the file (the
/// reader's MAX_EXPANSION, above deflate's and LZW's limits; uncompressed data is held to 1) and
/// a sample becomes at most 8 bytes from at least 1 (u8 -> f32 is 4, i32 -> f64 is 2): the
/// output and its f64 band copy are at most 8 x 2048 x len; the queue of nodata filling as
/// for ASC. `Decoder::new` reads the first directory under the tiff crate's default limit of
/// 1 MiB per tag value. Constant: 1 MiB + 64 KiB.
const TIFF: Bound = Bound {
    per_byte: 8 * 2048,
    constant: (1 << 20) + (64 << 10),
};

struct Counts {
    parsed: usize,
    refused: usize,
    /// Largest single allocation of a case over that case's bound.
    largest_of_bound: f64,
}

/// Run `cases` mutations of `seed_file` through `parse`, on a worker thread, checking the
/// three properties; returns the counts.
fn run(
    name: &'static str,
    file_name: &'static str,
    seed_file: Vec<u8>,
    header: Option<fn(&mut Vec<u8>, &mut Rng)>,
    bound: Bound,
    parse: fn(&Path) -> Result<(), String>,
) -> Counts {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cases: usize = std::env::var("INPUT_PROPS_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    let dir = tempfile::tempdir().unwrap();
    let path: PathBuf = dir.path().join(file_name);
    // The unmutated file parses.
    std::fs::write(&path, &seed_file).unwrap();
    if let Err(e) = parse(&path) {
        panic!("{name}: the valid seed file is refused: {e}");
    }
    let (tx, rx) = mpsc::channel::<Result<(usize, bool, usize, usize), String>>();
    let worker_path = path.clone();
    let worker = std::thread::spawn(move || {
        let mut rng =
            Rng::seeded(0x5EED_0000 ^ name.len() as u64 ^ (name.as_bytes()[0] as u64) << 32);
        for case in 0..cases {
            let mut b = seed_file.clone();
            for _ in 0..1 + rng.below(3) {
                mutate(&mut b, &mut rng, header);
            }
            std::fs::write(&worker_path, &b).unwrap();
            LARGEST.store(0, Ordering::Relaxed);
            ARMED.with(|a| a.set(true));
            let outcome = catch_unwind(AssertUnwindSafe(|| parse(&worker_path)));
            ARMED.with(|a| a.set(false));
            let largest = LARGEST.load(Ordering::Relaxed);
            let msg = match outcome {
                Err(_) => Err(format!(
                    "{name} case {case}: the parser panicked on {:?}",
                    String::from_utf8_lossy(&b[..b.len().min(400)])
                )),
                Ok(Err(e)) if !e.contains(file_name) => Err(format!(
                    "{name} case {case}: the error does not name the file: {e}"
                )),
                Ok(_) if largest > bound.of(b.len()) => {
                    let dump = std::env::temp_dir().join(format!("input_props_{file_name}"));
                    let _ = std::fs::write(&dump, &b);
                    Err(format!(
                        "{name} case {case}: an allocation of {largest} bytes while parsing a file \
                         of {} bytes (bound {}); the file is saved as {}",
                        b.len(),
                        bound.of(b.len()),
                        dump.display()
                    ))
                }
                Ok(r) => Ok((case, r.is_ok(), largest, b.len())),
            };
            let stop = msg.is_err();
            if tx.send(msg).is_err() || stop {
                return;
            }
        }
    });
    let mut counts = Counts {
        parsed: 0,
        refused: 0,
        largest_of_bound: 0.0,
    };
    let start = Instant::now();
    for _ in 0..cases {
        match rx.recv_timeout(CASE_LIMIT) {
            Ok(Ok((_, ok, largest, len))) => {
                if ok {
                    counts.parsed += 1;
                } else {
                    counts.refused += 1;
                }
                counts.largest_of_bound = counts
                    .largest_of_bound
                    .max(largest as f64 / bound.of(len) as f64);
            }
            Ok(Err(e)) => panic!("{e}"),
            Err(_) => panic!(
                "{name}: a case did not finish within {CASE_LIMIT:?} (after {} cases)",
                counts.parsed + counts.refused
            ),
        }
    }
    worker.join().unwrap();
    println!(
        "{name}: {cases} mutated files: {} parsed, {} refused; largest allocation at most {:.0}% \
         of its bound; {:.2} s",
        counts.parsed,
        counts.refused,
        100.0 * counts.largest_of_bound,
        start.elapsed().as_secs_f64()
    );
    counts
}

fn assert_counts(c: &Counts) {
    // Both outcomes occur: mutations that break the file and ones it survives (e.g. a changed
    // digit), so neither "always refuse" nor "never check" passes.
    assert!(
        c.parsed > 0 && c.refused > 0,
        "parsed {} refused {}",
        c.parsed,
        c.refused
    );
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

// ---------------------------------------------------------------------------------------------
// The parsers under test (every result is checked for its invariants when Ok).

fn parse_stand(p: &Path) -> Result<(), String> {
    static SPECIES: std::sync::OnceLock<Vec<geofield::dispersal::Species>> =
        std::sync::OnceLock::new();
    let species = SPECIES.get_or_init(geofield::synth::sbs_species);
    let extent = Extent::new(0.0, 0.0, 100.0, 100.0).unwrap();
    let (stand, rep) = read_stand(p, species, &extent, rep_strict(p)).map_err(err)?;
    assert!(stand.dbh_cm.iter().all(|d| d.is_finite() && *d >= 0.0));
    assert!(stand.x_m.iter().chain(&stand.y_m).all(|v| v.is_finite()));
    assert!(stand.species.iter().all(|&s| (s as usize) < species.len()));
    assert_eq!(rep.trees_per_species.iter().sum::<usize>(), stand.x_m.len());
    Ok(())
}

/// Strict reading for half the files (by the file's length), to exercise both.
fn rep_strict(p: &Path) -> bool {
    std::fs::metadata(p)
        .map(|m| m.len() % 2 == 0)
        .unwrap_or(false)
}

fn parse_samples(p: &Path) -> Result<(), String> {
    let set = read_samples(p, "x", "y", &["depth".into(), "porosity".into()]).map_err(err)?;
    assert!(set.xs.iter().chain(&set.ys).all(|v| v.is_finite()));
    for s in &set.surfaces {
        assert!(s.values.iter().all(|v| v.is_nan() || v.is_finite()));
        assert!(s.values.iter().any(|v| !v.is_nan()));
    }
    Ok(())
}

fn parse_species(p: &Path) -> Result<(), String> {
    let sp = read_species(p).map_err(err)?;
    assert!(!sp.is_empty());
    Ok(())
}

fn parse_points(p: &Path) -> Result<(), String> {
    let pts = read_points(p).map_err(err)?;
    assert!(pts.dim() == 2 || pts.dim() == 3);
    match &pts {
        geofield::neighbors::io::Points::F32(v, _) => assert!(v.iter().all(|x| x.is_finite())),
        geofield::neighbors::io::Points::F64(v, _) => assert!(v.iter().all(|x| x.is_finite())),
    }
    Ok(())
}

fn parse_dem(p: &Path) -> Result<(), String> {
    let dem = read_dem(p, None).map_err(|e| match e {
        DemError::Input(e) => e.to_string(),
        e => e.to_string(),
    })?;
    assert_eq!(dem.terrain_m.len(), dem.plan.cols * dem.plan.rows);
    assert!(dem.terrain_m.iter().all(|z| z.is_finite()));
    Ok(())
}

fn parse_stations(p: &Path) -> Result<(), String> {
    let st = read_stations(p).map_err(err)?;
    for s in &st {
        assert!(s.height_agl_m > 0.0 && s.speed_m_per_s >= 0.0);
        assert!((0.0..=360.0).contains(&s.direction_deg));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------

#[test]
fn stand_csv_mutations() {
    assert_counts(&run(
        "stand CSV",
        "trees.csv",
        stand_csv(),
        None,
        CSV,
        parse_stand,
    ));
}

#[test]
fn samples_csv_mutations() {
    assert_counts(&run(
        "samples CSV",
        "wells.csv",
        samples_csv(),
        None,
        CSV,
        parse_samples,
    ));
}

#[test]
fn species_toml_mutations() {
    let text = species_toml(&geofield::synth::sbs_species()).into_bytes();
    assert_counts(&run(
        "species TOML",
        "species.toml",
        text,
        None,
        TOML,
        parse_species,
    ));
}

#[test]
fn points_csv_mutations() {
    assert_counts(&run(
        "points CSV",
        "pts.csv",
        points_csv(),
        None,
        CSV,
        parse_points,
    ));
}

#[test]
fn points_npy_mutations() {
    let dir = tempfile::tempdir().unwrap();
    let seed = points_npy(dir.path());
    assert_counts(&run(
        "points NPY",
        "pts.npy",
        seed,
        Some(npy_shape_huge),
        NPY,
        parse_points,
    ));
}

#[test]
fn dem_ascii_mutations() {
    let dir = tempfile::tempdir().unwrap();
    let seed = dem_file(dir.path(), "seed.asc");
    assert_counts(&run(
        "DEM ESRI ASCII",
        "dem.asc",
        seed,
        Some(ascii_header_huge),
        ASC,
        parse_dem,
    ));
}

#[test]
fn dem_geotiff_mutations() {
    let dir = tempfile::tempdir().unwrap();
    let seed = dem_file(dir.path(), "seed.tif");
    assert_counts(&run(
        "DEM GeoTIFF",
        "dem.tif",
        seed,
        Some(tiff_size_huge),
        TIFF,
        parse_dem,
    ));
}

#[test]
fn stations_csv_mutations() {
    assert_counts(&run(
        "stations CSV",
        "stations.csv",
        stations_csv(),
        None,
        CSV,
        parse_stations,
    ));
}
