//! The file's structure: tag entries, image file directories, the layout and the bytes.

use super::*;

/// The tag values of the full-resolution image that do not depend on the layout.
pub(super) struct MainTags {
    pub(super) bits: u16,
    pub(super) bands: u16,
    pub(super) description: Option<String>,
    pub(super) scale: [f64; 3],
    pub(super) tiepoint: [f64; 6],
    pub(super) geo_keys: Vec<u16>,
    pub(super) gdal_metadata: String,
    pub(super) nodata: Option<String>,
    pub(super) compression: Compression,
}

impl MainTags {
    pub(super) fn new(
        g: &GridSpec,
        band_names: &[String],
        bits: u16,
        meta: &RasterMeta,
        nodata: Option<f64>,
    ) -> Self {
        Self {
            bits,
            bands: band_names.len() as u16,
            description: meta.description.clone(),
            scale: [g.cell_size_m, g.cell_size_m, 0.0],
            tiepoint: [0.0, 0.0, 0.0, g.x_min_m, g.y_max_m, 0.0],
            geo_keys: geo_keys(meta.crs_epsg),
            gdal_metadata: gdal_metadata_xml(band_names, meta.units.as_deref(), &meta.provenance),
            nodata: nodata.map(|v| {
                if v.is_nan() {
                    "nan".to_string()
                } else {
                    format_f64(v)
                }
            }),
            compression: meta.compression,
        }
    }
}

/// One IFD entry: tag, type, count and the value's bytes (little-endian).
pub(super) struct Entry {
    pub(super) tag: u16,
    pub(super) kind: u16,
    pub(super) count: u64,
    pub(super) bytes: Vec<u8>,
}

pub(super) fn shorts(tag: u16, v: &[u16]) -> Entry {
    Entry {
        tag,
        kind: TYPE_SHORT,
        count: v.len() as u64,
        bytes: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
    }
}

pub(super) fn long(tag: u16, v: u32) -> Entry {
    Entry {
        tag,
        kind: TYPE_LONG,
        count: 1,
        bytes: v.to_le_bytes().to_vec(),
    }
}

pub(super) fn doubles(tag: u16, v: &[f64]) -> Entry {
    Entry {
        tag,
        kind: TYPE_DOUBLE,
        count: v.len() as u64,
        bytes: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
    }
}

/// An ASCII tag from UTF-8 text (GDAL reads these bytes as UTF-8), NUL-terminated.
pub(super) fn ascii(tag: u16, text: &str) -> Entry {
    let mut bytes: Vec<u8> = text.bytes().filter(|&b| b != 0).collect();
    bytes.push(0);
    Entry {
        tag,
        kind: TYPE_ASCII,
        count: bytes.len() as u64,
        bytes,
    }
}

/// Offsets (LONG, or LONG8 in BigTIFF).
pub(super) fn offsets(tag: u16, v: &[u64], big: bool) -> Entry {
    if big {
        Entry {
            tag,
            kind: TYPE_LONG8,
            count: v.len() as u64,
            bytes: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        }
    } else {
        Entry {
            tag,
            kind: TYPE_LONG,
            count: v.len() as u64,
            bytes: v.iter().flat_map(|&x| (x as u32).to_le_bytes()).collect(),
        }
    }
}

/// Where everything goes: the header and ghost bytes, each IFD's bytes (at consecutive
/// offsets), and where the tile data starts; `end` is the file size.
pub(super) struct Layout {
    pub(super) prefix: Vec<u8>,
    pub(super) ifds: Vec<Vec<u8>>,
    pub(super) end: u64,
}

/// One image of the pyramid as the layout sees it: its size and its tiles' byte counts, in file
/// order (band, tile row, tile col).
pub(super) struct Shape {
    pub(super) cols: usize,
    pub(super) rows: usize,
    pub(super) counts: Vec<u64>,
}

impl Shape {
    pub(super) fn of(l: &Level) -> Shape {
        Shape {
            cols: l.cols,
            rows: l.rows,
            counts: l.tiles.iter().map(|t| t.len() as u64).collect(),
        }
    }
}

/// Lay the file out: header, ghost area, IFDs (level 0 first), then tiles (last level first).
/// Returns the layout and each image's tile offsets.
pub(super) fn plan(levels: &[Shape], tags: &MainTags, big: bool) -> (Layout, Vec<Vec<u64>>) {
    let mut prefix = Vec::new();
    if big {
        prefix.extend_from_slice(b"II\x2b\x00\x08\x00\x00\x00");
        prefix.extend_from_slice(&0u64.to_le_bytes()); // first IFD, patched below
    } else {
        prefix.extend_from_slice(b"II\x2a\x00");
        prefix.extend_from_slice(&0u32.to_le_bytes());
    }
    prefix.extend_from_slice(
        format!(
            "GDAL_STRUCTURAL_METADATA_SIZE={:06} bytes\n",
            GHOST_BODY.len()
        )
        .as_bytes(),
    );
    prefix.extend_from_slice(GHOST_BODY.as_bytes());
    if prefix.len() % 2 == 1 {
        prefix.push(0);
    }
    let first_ifd = prefix.len() as u64;
    if big {
        prefix[8..16].copy_from_slice(&first_ifd.to_le_bytes());
    } else {
        prefix[4..8].copy_from_slice(&(first_ifd as u32).to_le_bytes());
    }

    // Entries with placeholder tile offsets give each IFD's size, which does not depend on the
    // offsets' values.
    let entries = |offs: &[Vec<u64>]| -> Vec<Vec<Entry>> {
        levels
            .iter()
            .enumerate()
            .map(|(i, l)| level_entries(i, l, tags, &offs[i], big))
            .collect()
    };
    let zero_offsets: Vec<Vec<u64>> = levels.iter().map(|l| vec![0; l.counts.len()]).collect();
    let sizes: Vec<u64> = entries(&zero_offsets)
        .iter()
        .map(|e| ifd_size(e, big))
        .collect();
    let data_start = first_ifd + sizes.iter().sum::<u64>();
    // Tile data, smallest overview first; each tile is framed by a 4-byte leader and trailer.
    let mut tile_offsets: Vec<Vec<u64>> = vec![Vec::new(); levels.len()];
    let mut at = data_start;
    for (i, l) in levels.iter().enumerate().rev() {
        for &n in &l.counts {
            at += 4;
            tile_offsets[i].push(at);
            at += n + 4;
        }
    }
    let all = entries(&tile_offsets);
    let mut ifds = Vec::with_capacity(all.len());
    let mut ifd_at = first_ifd;
    for (i, e) in all.iter().enumerate() {
        let next = if i + 1 < all.len() {
            ifd_at + sizes[i]
        } else {
            0
        };
        let bytes = serialize_ifd(e, ifd_at, next, big);
        ifd_at += bytes.len() as u64;
        ifds.push(bytes);
    }
    (
        Layout {
            prefix,
            ifds,
            end: at,
        },
        tile_offsets,
    )
}

/// The entries of level `i` (0 = full resolution), sorted by tag.
pub(super) fn level_entries(
    i: usize,
    l: &Shape,
    t: &MainTags,
    offs: &[u64],
    big: bool,
) -> Vec<Entry> {
    let bands = usize::from(t.bands);
    let counts = &l.counts;
    let mut e = vec![
        long(TAG_IMAGE_WIDTH, l.cols as u32),
        long(TAG_IMAGE_LENGTH, l.rows as u32),
        shorts(TAG_BITS_PER_SAMPLE, &vec![t.bits; bands]),
        shorts(TAG_COMPRESSION, &[t.compression.tag()]),
        shorts(TAG_PHOTOMETRIC, &[1]), // MinIsBlack
        shorts(TAG_SAMPLES_PER_PIXEL, &[t.bands]),
        shorts(TAG_PLANAR_CONFIGURATION, &[2]), // separate planes
        shorts(TAG_PREDICTOR, &[PREDICTOR_FLOATING_POINT]),
        shorts(TAG_TILE_WIDTH, &[TILE_SIZE as u16]),
        shorts(TAG_TILE_LENGTH, &[TILE_SIZE as u16]),
        offsets(TAG_TILE_OFFSETS, offs, big),
        offsets(TAG_TILE_BYTE_COUNTS, counts, big),
        shorts(TAG_SAMPLE_FORMAT, &vec![3; bands]), // IEEE floating point
    ];
    if bands > 1 {
        e.push(shorts(TAG_EXTRA_SAMPLES, &vec![0; bands - 1])); // unspecified
    }
    if let Some(nd) = &t.nodata {
        e.push(ascii(TAG_GDAL_NODATA, nd));
    }
    if i == 0 {
        if let Some(d) = &t.description {
            e.push(ascii(TAG_IMAGE_DESCRIPTION, d));
        }
        e.push(ascii(TAG_SOFTWARE, "geofield"));
        e.push(doubles(TAG_MODEL_PIXEL_SCALE, &t.scale));
        e.push(doubles(TAG_MODEL_TIEPOINT, &t.tiepoint));
        e.push(shorts(TAG_GEO_KEY_DIRECTORY, &t.geo_keys));
        e.push(ascii(TAG_GDAL_METADATA, &t.gdal_metadata));
    } else {
        e.push(long(TAG_NEW_SUBFILE_TYPE, 1)); // reduced-resolution image
    }
    e.sort_by_key(|x| x.tag);
    e
}

/// Bytes of an IFD with its out-of-line values (each starting on a word boundary).
pub(super) fn ifd_size(entries: &[Entry], big: bool) -> u64 {
    let (head, entry, next, inline) = if big { (8, 20, 8, 8) } else { (2, 12, 4, 4) };
    let mut n = head + entry * entries.len() as u64 + next;
    for e in entries {
        let len = e.bytes.len() as u64;
        if len > inline {
            n += len + len % 2;
        }
    }
    n
}

/// An IFD at file offset `at` with its out-of-line values right after it; `next` is the offset
/// of the next IFD (0 for the last).
pub(super) fn serialize_ifd(entries: &[Entry], at: u64, next: u64, big: bool) -> Vec<u8> {
    let (head, entry_len, next_len, inline) = if big { (8, 20, 8, 8) } else { (2, 12, 4, 4) };
    let mut extra_at = at + head + entry_len * entries.len() as u64 + next_len;
    let mut table = Vec::new();
    let mut extra = Vec::new();
    if big {
        table.extend_from_slice(&(entries.len() as u64).to_le_bytes());
    } else {
        table.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    }
    for e in entries {
        table.extend_from_slice(&e.tag.to_le_bytes());
        table.extend_from_slice(&e.kind.to_le_bytes());
        if big {
            table.extend_from_slice(&e.count.to_le_bytes());
        } else {
            table.extend_from_slice(&(e.count as u32).to_le_bytes());
        }
        let len = e.bytes.len() as u64;
        if len <= inline {
            let mut v = e.bytes.clone();
            v.resize(inline as usize, 0);
            table.extend_from_slice(&v);
        } else {
            if big {
                table.extend_from_slice(&extra_at.to_le_bytes());
            } else {
                table.extend_from_slice(&(extra_at as u32).to_le_bytes());
            }
            extra.extend_from_slice(&e.bytes);
            if len % 2 == 1 {
                extra.push(0);
            }
            extra_at += len + len % 2;
        }
    }
    if big {
        table.extend_from_slice(&next.to_le_bytes());
    } else {
        table.extend_from_slice(&(next as u32).to_le_bytes());
    }
    table.extend_from_slice(&extra);
    table
}

/// Write the planned file: prefix, IFDs, then framed tiles (smallest overview first).
#[cfg(any(not(unix), test))]
pub(super) fn write_file(
    w: &mut dyn Write,
    layout: &Layout,
    levels: &[Level],
) -> std::io::Result<()> {
    w.write_all(&layout.prefix)?;
    for ifd in &layout.ifds {
        w.write_all(ifd)?;
    }
    for l in levels.iter().rev() {
        for t in &l.tiles {
            w.write_all(&(t.len() as u32).to_le_bytes())?;
            w.write_all(t)?;
            let tail = &t[t.len().saturating_sub(4)..];
            w.write_all(tail)?;
            // A tile shorter than 4 bytes (never with zlib or zstd) still gets a 4-byte trailer.
            w.write_all(&[0u8; 4][..4 - tail.len()])?;
        }
    }
    Ok(())
}

/// Bytes of file written by one task of [`write_file_at`].
#[cfg(unix)]
const WRITE_GROUP_BYTES: usize = 8 << 20;

/// [`write_file`] by positioned writes from several threads: the prefix and IFDs, then the
/// framed tiles in groups of about [`WRITE_GROUP_BYTES`], each group at its offset. The same
/// bytes; a copy into the operating system's cache of a GB-sized file takes several times
/// less than on one thread.
#[cfg(unix)]
pub(super) fn write_file_at(
    f: &std::fs::File,
    layout: &Layout,
    levels: &[Level],
) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    // At its full length first: the tiles can then be written through a map of the file.
    f.set_len(layout.end)?;
    let mut head = layout.prefix.clone();
    for ifd in &layout.ifds {
        head.extend_from_slice(ifd);
    }
    f.write_all_at(&head, 0)?;
    // Tiles in file order (smallest overview first), each framed by 4 bytes before and after.
    let tiles: Vec<&Vec<u8>> = levels.iter().rev().flat_map(|l| l.tiles.iter()).collect();
    write_tiles_at(f, &tiles, head.len() as u64)
}

/// Framed `tiles` (4-byte leader and trailer each) written one after another from `start`, in
/// groups of about [`WRITE_GROUP_BYTES`] from several threads: through a map of the file
/// ([`super::mapped`]) when the run is large and the file already holds it, else by positioned
/// writes.
#[cfg(unix)]
pub(super) fn write_tiles_at(
    f: &std::fs::File,
    tiles: &[&Vec<u8>],
    start: u64,
) -> std::io::Result<()> {
    write_runs_at(f, &[(start, tiles.to_vec())])
}

/// Several runs of framed tiles, each `(start, tiles)` as [`write_tiles_at`] writes one, in
/// increasing order of `start` and not overlapping: all through one map of the file.
#[cfg(unix)]
pub(super) fn write_runs_at(
    f: &std::fs::File,
    runs: &[(u64, Vec<&Vec<u8>>)],
) -> std::io::Result<()> {
    write_runs(f, runs, super::mapped::MAPPED_MIN_BYTES)
}

/// [`write_runs_at`], through a map when the runs hold at least `mapped_min` bytes.
#[cfg(unix)]
fn write_runs(
    f: &std::fs::File,
    runs: &[(u64, Vec<&Vec<u8>>)],
    mapped_min: u64,
) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    /// Tiles `tiles` of run `run`, framed: `bytes` bytes at `at` in the file.
    struct Group {
        run: usize,
        tiles: std::ops::Range<usize>,
        at: u64,
        bytes: usize,
    }
    let mut groups: Vec<Group> = Vec::new();
    for (run, (start, tiles)) in runs.iter().enumerate() {
        let (mut at, mut from, mut bytes) = (*start, 0usize, 0usize);
        for (i, t) in tiles.iter().enumerate() {
            bytes += t.len() + 8;
            if bytes >= WRITE_GROUP_BYTES || i + 1 == tiles.len() {
                groups.push(Group {
                    run,
                    tiles: from..i + 1,
                    at,
                    bytes,
                });
                (from, at, bytes) = (i + 1, at + bytes as u64, 0);
            }
        }
    }
    let frame = |g: &Group, out: &mut [u8]| frame_into(&runs[g.run].1[g.tiles.clone()], out);
    let total: u64 = groups.iter().map(|g| g.bytes as u64).sum();
    if let Some(base) = groups.first().map(|g| g.at)
        && total >= mapped_min
    {
        let pieces: Vec<(usize, usize)> = groups
            .iter()
            .map(|g| ((g.at - base) as usize, g.bytes))
            .collect();
        if super::mapped::write_mapped(f, base, &pieces, |i, out| frame(&groups[i], out))? {
            return Ok(());
        }
    }
    groups.par_iter().try_for_each(|g| {
        let mut buf = vec![0u8; g.bytes];
        frame(g, &mut buf);
        f.write_all_at(&buf, g.at)
    })
}

/// `tiles` one after another into `out` (their framed sizes' sum long), each framed by its
/// length (u32, little endian) before and its last 4 bytes (zero-padded) after: GDAL's
/// optimisation hints of a COG.
fn frame_into(tiles: &[&Vec<u8>], out: &mut [u8]) {
    let mut at = 0;
    for t in tiles {
        let n = t.len();
        out[at..at + 4].copy_from_slice(&(n as u32).to_le_bytes());
        out[at + 4..at + 4 + n].copy_from_slice(t);
        let tail = &t[n.saturating_sub(4)..];
        out[at + 4 + n..at + 4 + n + tail.len()].copy_from_slice(tail);
        out[at + 4 + n + tail.len()..at + 8 + n].fill(0);
        at += n + 8;
    }
}

/// The layout in classic TIFF, or in BigTIFF when `bigtiff` says so or the file passes 4 GiB.
pub(super) fn plan_either(
    shapes: &[Shape],
    tags: &MainTags,
    bigtiff: BigTiff,
) -> (Layout, Vec<Vec<u64>>) {
    let classic = plan(shapes, tags, false);
    if bigtiff == BigTiff::Always || classic.0.end > u64::from(u32::MAX) {
        plan(shapes, tags, true)
    } else {
        classic
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn positioned_writes_give_the_sequential_bytes() {
        // Tiles of every size around the group size, so that groups end inside levels too.
        let tile = |n: usize, k: u8| (0..n).map(|i| (i as u8).wrapping_mul(k)).collect();
        let levels = vec![
            Level {
                cols: 600,
                rows: 300,
                tiles: (0..7).map(|k| tile(3 << 20, k as u8 + 1)).collect(),
            },
            Level {
                cols: 300,
                rows: 150,
                tiles: vec![tile(5, 3), tile(2, 9), tile(1 << 20, 7)],
            },
        ];
        let g = GridSpec::from_extent(
            geofield_core::Extent::new(0.0, 0.0, 600.0, 300.0).unwrap(),
            1.0,
        )
        .unwrap();
        let tags = MainTags::new(&g, &["a".to_string()], 32, &RasterMeta::default(), None);
        let shapes: Vec<Shape> = levels.iter().map(Shape::of).collect();
        let layout = plan(&shapes, &tags, false).0;
        let mut seq = Vec::new();
        write_file(&mut seq, &layout, &levels).unwrap();
        let f = tempfile::tempfile().unwrap();
        write_file_at(&f, &layout, &levels).unwrap();
        let mut par = Vec::new();
        std::io::Read::read_to_end(&mut &f, &mut par).unwrap();
        assert_eq!(seq.len() as u64, layout.end);
        assert!(
            par == seq,
            "positioned writes differ from the sequential file"
        );
        // The same tiles through a map of the file (any run size), and by positioned writes
        // alone, at an offset that is not a page's: the same bytes, on the disk's file system
        // and in memory (tmpfs) where there is one.
        let tiles: Vec<&Vec<u8>> = levels.iter().rev().flat_map(|l| l.tiles.iter()).collect();
        let start = (layout.prefix.len() + layout.ifds.iter().map(Vec::len).sum::<usize>()) as u64;
        assert!(!start.is_multiple_of(4096));
        let mut dirs = vec![std::env::temp_dir()];
        if std::path::Path::new("/dev/shm").is_dir() {
            dirs.push("/dev/shm".into());
        }
        for dir in dirs {
            for mapped_min in [0, u64::MAX] {
                let f = tempfile::tempfile_in(&dir).unwrap();
                f.set_len(layout.end).unwrap();
                std::os::unix::fs::FileExt::write_all_at(&f, &seq[..start as usize], 0).unwrap();
                // As one run; as the first and third quarters of the tiles in one call (a
                // gap between the runs) and then the rest: the same file.
                let q = tiles.len() / 4;
                let at =
                    |k: usize| start + tiles[..k].iter().map(|t| t.len() as u64 + 8).sum::<u64>();
                if mapped_min == 0 {
                    let (a, b) = (tiles[..q].to_vec(), tiles[2 * q..3 * q].to_vec());
                    write_runs(&f, &[(start, a), (at(2 * q), b)], 0).unwrap();
                    let (c, d) = (tiles[q..2 * q].to_vec(), tiles[3 * q..].to_vec());
                    write_runs(&f, &[(at(q), c), (at(3 * q), d)], 0).unwrap();
                } else {
                    write_runs(&f, &[(start, tiles.clone())], mapped_min).unwrap();
                }
                let mut back = Vec::new();
                std::io::Read::read_to_end(&mut &f, &mut back).unwrap();
                assert!(
                    back == seq,
                    "{dir:?}, mapped from {mapped_min} bytes: differ"
                );
            }
        }
    }

    /// A file shorter than the run is not mapped (a store past its end would fault): the
    /// positioned writes extend it instead.
    #[test]
    #[cfg(target_os = "linux")]
    fn a_short_file_is_written_without_a_map() {
        let f = tempfile::tempfile().unwrap();
        let fill = |_: usize, s: &mut [u8]| s.fill(7);
        let pieces = [(0, 100), (120, 30)];
        assert!(!super::super::mapped::write_mapped(&f, 10, &pieces, fill).unwrap());
        assert_eq!(f.metadata().unwrap().len(), 0);
        f.set_len(200).unwrap();
        assert!(super::super::mapped::write_mapped(&f, 10, &pieces, fill).unwrap());
        let mut back = Vec::new();
        std::io::Read::read_to_end(&mut &f, &mut back).unwrap();
        // The pieces written, the gap between them and the bytes around them left alone.
        let seven = |r: std::ops::Range<usize>| back[r].iter().all(|&b| b == 7);
        let zero = |r: std::ops::Range<usize>| back[r].iter().all(|&b| b == 0);
        assert!(zero(0..10) && seven(10..110) && zero(110..130) && seven(130..160));
        assert!(zero(160..200));
        // Empty pieces write nothing, wherever they are.
        let mark = |_: usize, s: &mut [u8]| s.fill(9);
        assert!(super::super::mapped::write_mapped(&f, 10, &[(150, 0)], mark).unwrap());
        assert!(super::super::mapped::write_mapped(&f, 0, &[(3, 0), (190, 0)], mark).unwrap());
        let mut again = Vec::new();
        std::io::Seek::rewind(&mut &f).unwrap();
        std::io::Read::read_to_end(&mut &f, &mut again).unwrap();
        assert!(again == back);
    }
}
