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
// Deterministic randomness and mutations.

/// SplitMix64.
/// The mutations' seeded generator (PCG64, as every test of the project uses).
struct Rng(rand_pcg::Pcg64);
impl Rng {
    fn seeded(seed: u64) -> Self {
        use rand::SeedableRng;
        Rng(rand_pcg::Pcg64::seed_from_u64(seed))
    }
    fn next(&mut self) -> u64 {
        rand::RngCore::next_u64(&mut self.0)
    }
    fn below(&mut self, n: usize) -> usize {
        rand::Rng::random_range(&mut self.0, 0..n.max(1))
    }
    fn unit(&mut self) -> f64 {
        rand::Rng::random::<f64>(&mut self.0)
    }
}

/// Values a number is replaced by.
const NASTY: [&str; 18] = [
    "1e308",
    "-1e308",
    "1e309",
    "NaN",
    "nan",
    "inf",
    "-inf",
    "",
    "-1",
    "0",
    "-0",
    "1e-320",
    "18446744073709551615",
    "4294967296",
    "99999999999999999999999999",
    "0x10",
    "1,5",
    "\"",
];

/// Byte ranges of the numbers (runs of digits, '.', 'e', '-', '+') in `b`.
fn numbers(b: &[u8]) -> Vec<(usize, usize)> {
    let mut out = vec![];
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            let mut s = i;
            while s > 0 && matches!(b[s - 1], b'-' | b'+' | b'.') {
                s -= 1;
            }
            let mut e = i;
            while e < b.len() && (b[e].is_ascii_digit() || matches!(b[e], b'.' | b'e' | b'E')) {
                e += 1;
            }
            out.push((s, e));
            i = e;
        } else {
            i += 1;
        }
    }
    out
}

/// Line ranges (with their line feed) of `b`.
fn lines(b: &[u8]) -> Vec<(usize, usize)> {
    let mut out = vec![];
    let mut s = 0;
    for (i, &c) in b.iter().enumerate() {
        if c == b'\n' {
            out.push((s, i + 1));
            s = i + 1;
        }
    }
    if s < b.len() {
        out.push((s, b.len()));
    }
    out
}

fn splice(b: &mut Vec<u8>, (s, e): (usize, usize), with: &[u8]) {
    b.splice(s..e, with.iter().copied());
}

/// One random mutation of `b`; `header` rewrites a declared size to a huge value (per format).
fn mutate(b: &mut Vec<u8>, rng: &mut Rng, header: Option<fn(&mut Vec<u8>, &mut Rng)>) {
    let kinds = if header.is_some() { 9 } else { 8 };
    match rng.below(kinds) {
        0 => {
            for _ in 0..1 + rng.below(4) {
                if !b.is_empty() {
                    let i = rng.below(b.len());
                    b[i] = rng.next() as u8;
                }
            }
        }
        1 => {
            let n = rng.below(b.len() + 1);
            b.truncate(n);
        }
        2 => {
            let at = rng.below(b.len() + 1);
            let junk: Vec<u8> = (0..1 + rng.below(8)).map(|_| rng.next() as u8).collect();
            splice(b, (at, at), &junk);
        }
        3..=5 => {
            let ls = lines(b);
            if ls.is_empty() {
                return;
            }
            let (s, e) = ls[rng.below(ls.len())];
            let line = b[s..e].to_vec();
            match rng.below(3) {
                0 => splice(b, (s, s), &line),
                1 => splice(b, (s, e), &[]),
                _ => {
                    let (s2, e2) = ls[rng.below(ls.len())];
                    let other = b[s2..e2].to_vec();
                    if s2 > s {
                        splice(b, (s2, e2), &line);
                        splice(b, (s, e), &other);
                    } else if s2 < s {
                        splice(b, (s, e), &other);
                        splice(b, (s2, e2), &line);
                    }
                }
            }
        }
        6 | 7 => {
            let ns = numbers(b);
            if ns.is_empty() {
                return;
            }
            let r = ns[rng.below(ns.len())];
            let long;
            let with: &[u8] = match rng.below(8) {
                0 => {
                    long = "9".repeat(300 + rng.below(300));
                    long.as_bytes()
                }
                1 => {
                    long = "x".repeat(200 + rng.below(200));
                    long.as_bytes()
                }
                _ => NASTY[rng.below(NASTY.len())].as_bytes(),
            };
            splice(b, r, with);
        }
        _ => {
            if let Some(h) = header {
                h(b, rng)
            }
        }
    }
}

/// Replace the value of the first line starting with `key` (ASCII header).
fn ascii_header_huge(b: &mut Vec<u8>, rng: &mut Rng) {
    let key: &[u8] = if rng.below(2) == 0 {
        b"ncols"
    } else {
        b"nrows"
    };
    let huge = ["18446744073709551615", "4294967296", "100000", "3037000500"][rng.below(4)];
    if let Some(&(s, e)) = lines(b).iter().find(|(s, _)| b[*s..].starts_with(key)) {
        let line = format!("{} {huge}\n", String::from_utf8_lossy(key));
        splice(b, (s, e), line.as_bytes());
    }
}

/// Replace one number of an NPY header's `shape` tuple.
fn npy_shape_huge(b: &mut Vec<u8>, rng: &mut Rng) {
    let Some(at) = b.windows(8).position(|w| w == b"'shape':") else {
        return;
    };
    let end = b[at..]
        .iter()
        .position(|&c| c == b')')
        .map_or(b.len(), |p| at + p);
    let ns: Vec<_> = numbers(&b[at..end])
        .into_iter()
        .map(|(s, e)| (s + at, e + at))
        .collect();
    if ns.is_empty() {
        return;
    }
    let huge = [
        "18446744073709551615",
        "4294967296",
        "100000000",
        "2305843009213693952",
    ][rng.below(4)];
    // Keep the header length (NPY pads it) by overwriting in place where possible.
    let r = ns[rng.below(ns.len())];
    splice(b, r, huge.as_bytes());
}

/// Rewrite one size tag of the first IFD of a little-endian classic TIFF to a huge LONG.
#[allow(clippy::ptr_arg)] // the signature every header mutation shares (others resize)
fn tiff_size_huge(b: &mut Vec<u8>, rng: &mut Rng) {
    if b.len() < 8 || &b[..4] != b"II*\0" {
        return;
    }
    let ifd = u32::from_le_bytes(b[4..8].try_into().unwrap()) as usize;
    let Some(n) = b.get(ifd..ifd + 2) else { return };
    let n = u16::from_le_bytes(n.try_into().unwrap()) as usize;
    let tags = [256u16, 257, 278, 279, 322, 323, 277, 258];
    let want = tags[rng.below(tags.len())];
    let value: u32 = [100_000, u32::MAX, 1 << 20, 65_536][rng.below(4)];
    for e in 0..n {
        let at = ifd + 2 + 12 * e;
        let Some(entry) = b.get(at..at + 12) else {
            return;
        };
        if u16::from_le_bytes([entry[0], entry[1]]) == want {
            b[at + 2..at + 4].copy_from_slice(&4u16.to_le_bytes());
            b[at + 4..at + 8].copy_from_slice(&1u32.to_le_bytes());
            b[at + 8..at + 12].copy_from_slice(&value.to_le_bytes());
            // Same dimensions on both axes now and then, as a real header would have.
            if want == 256 && rng.below(2) == 0 {
                for e2 in 0..n {
                    let at2 = ifd + 2 + 12 * e2;
                    if b.get(at2..at2 + 2) == Some(&257u16.to_le_bytes()[..]) {
                        b[at2 + 2..at2 + 4].copy_from_slice(&4u16.to_le_bytes());
                        b[at2 + 4..at2 + 8].copy_from_slice(&1u32.to_le_bytes());
                        b[at2 + 8..at2 + 12].copy_from_slice(&value.to_le_bytes());
                    }
                }
            }
            return;
        }
    }
}

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
// Valid seed files.

fn unit_rows(n: usize, f: impl Fn(usize, &mut Rng) -> String) -> String {
    let mut rng = Rng::seeded(42);
    (0..n).map(|i| f(i, &mut rng)).collect()
}

fn stand_csv() -> Vec<u8> {
    let names = [
        "subalpine_fir",
        "hybrid_spruce",
        "lodgepole_pine",
        "Trembling_Aspen",
    ];
    let rows = unit_rows(24, |i, r| {
        format!(
            "{:.2},{:.2},{:.1},{}\n",
            r.unit() * 100.0,
            r.unit() * 100.0,
            5.0 + r.unit() * 40.0,
            names[i % names.len()]
        )
    });
    format!("x_m,y_m,dbh_cm,species\n{rows}").into_bytes()
}

fn samples_csv() -> Vec<u8> {
    let rows = unit_rows(24, |i, r| {
        format!(
            "w{i},{:.3},{:.3},{:.4},{}\n",
            r.unit() * 1000.0,
            r.unit() * 1000.0,
            r.unit() * 10.0,
            if i % 5 == 0 {
                "NA".to_string()
            } else {
                format!("{:.2}", r.unit())
            }
        )
    });
    format!("id,x,y,depth,porosity\n{rows}").into_bytes()
}

fn stations_csv() -> Vec<u8> {
    let rows = unit_rows(8, |i, r| {
        format!(
            "s{i},{:.1},{:.1},{:.1},{:.2},{:.1},{}\n",
            r.unit() * 300.0,
            r.unit() * 300.0,
            2.0 + r.unit() * 10.0,
            r.unit() * 12.0,
            r.unit() * 360.0,
            ["", "D", "e", "A"][i % 4]
        )
    });
    format!("id,x_m,y_m,height_agl_m,speed_m_per_s,direction_deg,stability\n{rows}").into_bytes()
}

fn points_csv() -> Vec<u8> {
    let rows = unit_rows(40, |_, r| {
        format!("{:.4},{:.4},{:.4}\n", r.unit(), r.unit() * 5.0, r.unit())
    });
    format!("x,y,z\n{rows}").into_bytes()
}

fn points_npy(dir: &Path) -> Vec<u8> {
    let mut r = Rng::seeded(7);
    let v: Vec<f64> = (0..40 * 3).map(|_| r.unit() * 100.0).collect();
    let p = dir.join("p.npy");
    geofield_io::write_npy_f64(&p, &[40, 3], &v).unwrap();
    std::fs::read(&p).unwrap()
}

fn dem_raster() -> Raster {
    let (cols, rows) = (12, 9);
    let mut r = Rng::seeded(11);
    let z: Vec<f32> = (0..cols * rows)
        .map(|i| {
            if i % 17 == 3 {
                -9999.0
            } else {
                500.0 + (r.unit() * 100.0) as f32
            }
        })
        .collect();
    Raster {
        grid: GridSpec {
            x_min_m: 1000.0,
            y_max_m: 5000.0,
            cell_size_m: 30.0,
            cols,
            rows,
        },
        band_names: vec!["elevation".into()],
        data: RasterData::F32(z),
    }
}

fn dem_file(dir: &Path, name: &str) -> Vec<u8> {
    let p = dir.join(name);
    let meta = geofield_io::RasterMeta {
        nodata: Some(-9999.0),
        ..Default::default()
    };
    geofield_io::write_raster(&p, &dem_raster(), &meta).unwrap();
    std::fs::read(&p).unwrap()
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
