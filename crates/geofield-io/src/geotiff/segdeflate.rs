//! A DEFLATE encoder for predictor tiles that a GPU can run, one thread a tile row: the CPU
//! twin of the CUDA kernel `segdeflate.cu` (geofield-cuda), which must give the same bytes.
//!
//! The tile's bytes (after the floating-point predictor) are cut into segments, one a tile row;
//! each segment is parsed on its own, greedily, against a few fixed distances
//! ([`DISTANCES`]: runs, a value's neighbours, the same byte plane of the rows above), which
//! finds most of what a hash-chain matcher finds in these bytes (measured on seed maps: 1.51
//! against libdeflate level 1's 1.55, and 1.46 for runs alone). Matches may reach back into
//! earlier segments (any byte of the tile). The whole tile is one dynamic-Huffman block whose
//! tables are built from the frequencies of every segment ([`huffman_lengths`]); a tile that
//! would not shrink is stored. The output is a zlib stream (header `78 01`, Adler-32), as
//! TIFF's DEFLATE compression (8) expects.
//!
//! Every step is integer arithmetic on a fixed order, so the CUDA kernel reproduces it byte for
//! byte; its tests compare the two, and this module's decode every stream with flate2.

use std::sync::{Arc, RwLock};

use super::TILE_SIZE;
use super::encode::predictor_tile;

/// Compresses the tiles of f32 images on a device (a GPU), with the bytes of [`tile_f32`].
pub trait TileAccelerator: Send + Sync {
    /// The tiles of a `cols` × `rows` image, row-major (tile rows north to south, tiles west
    /// to east), NaN cells stored as `fill` when given. An error sends the image to the CPU's
    /// codec.
    fn deflate_f32(
        &self,
        values: &[f32],
        cols: usize,
        rows: usize,
        fill: Option<f32>,
    ) -> Result<Vec<Vec<u8>>, String>;
}

fn accelerator_slot() -> &'static RwLock<Option<Arc<dyn TileAccelerator>>> {
    static SLOT: RwLock<Option<Arc<dyn TileAccelerator>>> = RwLock::new(None);
    &SLOT
}

/// Installs (or, with `None`, removes) the process's tile accelerator: from then on the DEFLATE
/// tiles of f32 GeoTIFFs are compressed by it, with this module's encoder, instead of
/// libdeflate on the CPU (files a few per cent larger, the CPU left to other work). The
/// command-line tool installs one on runs whose backend is a GPU.
pub fn set_tile_accelerator(a: Option<Arc<dyn TileAccelerator>>) {
    *accelerator_slot()
        .write()
        .unwrap_or_else(|e| e.into_inner()) = a;
}

/// Whether a tile accelerator is installed.
pub fn tile_accelerator_installed() -> bool {
    accelerator_slot()
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .is_some()
}

/// Tiles an accelerator is given at once, at least: a GPU compresses about a thousand tiles in
/// the time of one (one block a tile, all resident together), so images wait until they have
/// that many before they are sent.
const ACCELERATOR_TILES: usize = 1024;

/// Rows of an image `cols` wide to send to the installed accelerator at once (whole tile rows
/// holding about [`ACCELERATOR_TILES`] tiles); `None` without one.
pub(super) fn accelerator_rows(cols: usize) -> Option<usize> {
    tile_accelerator_installed()
        .then(|| (ACCELERATOR_TILES / cols.div_ceil(TILE_SIZE).max(1)).max(1) * TILE_SIZE)
}

/// The tiles of `bands` planes of `cols` × `rows` f32 values, band after band, from the
/// installed accelerator; `None` without one or when it fails (the caller then compresses on
/// the CPU).
pub(super) fn on_accelerator(
    values: &[f32],
    cols: usize,
    rows: usize,
    bands: usize,
    nodata: Option<f64>,
) -> Option<Vec<Vec<u8>>> {
    let acc = accelerator_slot()
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .clone()?;
    let fill = nodata.filter(|v| v.is_finite()).map(|v| v as f32);
    let plane = cols * rows;
    let mut tiles = Vec::new();
    for b in 0..bands {
        let v = values.get(b * plane..(b + 1) * plane)?;
        tiles.extend(acc.deflate_f32(v, cols, rows, fill).ok()?);
    }
    Some(tiles)
}

/// The CPU's copy of an accelerator's tile: tile (`tile_row`, `tile_col`) of a `cols` × `rows`
/// f32 image through the floating-point predictor and [`compress`] (segments of one tile row).
pub fn tile_f32(
    values: &[f32],
    cols: usize,
    rows: usize,
    tile_row: usize,
    tile_col: usize,
    fill: Option<f32>,
) -> Vec<u8> {
    let raw = predictor_tile(
        values,
        cols,
        rows,
        tile_row * TILE_SIZE,
        tile_col * TILE_SIZE,
        fill,
    );
    compress(&raw, TILE_SIZE * 4)
}

/// The distances tried at each byte, in order (the first of equally long matches wins).
pub const DISTANCES: [usize; 8] = [1, 2, 3, 4, 8, 256, 512, 1024];

/// Longest and shortest match DEFLATE codes.
const MAX_MATCH: usize = 258;
const MIN_MATCH: usize = 3;

/// Length codes 257..=285: the first length of each, and its extra bits.
const LEN_BASE: [u16; 29] = [
    3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131,
    163, 195, 227, 258,
];
const LEN_EXTRA: [u8; 29] = [
    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
];
/// Distance codes 0..=29: the first distance of each, and its extra bits.
const DIST_BASE: [u16; 30] = [
    1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
    2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577,
];
const DIST_EXTRA: [u8; 30] = [
    0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13,
    13,
];
/// The order in which the code-length code's lengths are sent.
const CL_ORDER: [usize; 19] = [
    16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15,
];

/// Symbols of the literal/length and distance alphabets.
const NLIT: usize = 286;
const NDIST: usize = 30;

/// One token of the parse: a literal byte, or a match of `len` bytes `dist` back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token {
    Lit(u8),
    Match { len: u16, dist: u16 },
}

/// The length code (257..) of a match length and its extra bits' value.
fn len_code(len: usize) -> (usize, u32) {
    let i = LEN_BASE.partition_point(|&b| usize::from(b) <= len) - 1;
    (257 + i, (len - usize::from(LEN_BASE[i])) as u32)
}

/// The distance code of a distance and its extra bits' value.
fn dist_code(dist: usize) -> (usize, u32) {
    let i = DIST_BASE.partition_point(|&b| usize::from(b) <= dist) - 1;
    (i, (dist - usize::from(DIST_BASE[i])) as u32)
}

/// The greedy parse of `data[start..end]`: at each byte the longest match over [`DISTANCES`]
/// (not past `end`, at most 258), taken when it is at least 3 bytes.
fn parse_segment(data: &[u8], start: usize, end: usize, mut emit: impl FnMut(Token)) {
    let mut i = start;
    while i < end {
        let (mut best, mut best_d) = (0usize, 0usize);
        let most = (end - i).min(MAX_MATCH);
        for &d in &DISTANCES {
            if d > i {
                break;
            }
            let mut l = 0;
            while l < most && data[i + l] == data[i + l - d] {
                l += 1;
            }
            if l > best {
                (best, best_d) = (l, d);
                // No later distance can be longer (the kernel stops here too).
                if best == most {
                    break;
                }
            }
        }
        if best >= MIN_MATCH {
            emit(Token::Match {
                len: best as u16,
                dist: best_d as u16,
            });
            i += best;
        } else {
            emit(Token::Lit(data[i]));
            i += 1;
        }
    }
}

/// Code lengths (at most `limit` bits) of a Huffman code for `freq`, into `out`: symbols
/// sorted by (frequency, symbol), merged with leaves first on equal weights; while the
/// deepest leaf is deeper than `limit`, every frequency is halved (rounding up) and the code
/// built again. Fewer than two used symbols are completed with the lowest unused symbols of
/// frequency 1, so that every code is complete (as zlib does).
pub fn huffman_lengths(freq: &[u32], limit: u32, out: &mut [u8]) {
    let n = freq.len();
    let mut f: Vec<u32> = freq.to_vec();
    let mut used = f.iter().filter(|&&x| x > 0).count();
    for x in f.iter_mut() {
        if used >= 2 {
            break;
        }
        if *x == 0 {
            *x = 1;
            used += 1;
        }
    }
    loop {
        // Leaves in (frequency, symbol) order: insertion sort, as the kernel does.
        let mut leaves: Vec<usize> = Vec::with_capacity(n);
        for s in 0..n {
            if f[s] == 0 {
                continue;
            }
            let mut k = leaves.len();
            leaves.push(s);
            while k > 0 && f[leaves[k - 1]] > f[s] {
                leaves[k] = leaves[k - 1];
                k -= 1;
            }
            leaves[k] = s;
        }
        let m = leaves.len();
        // Internal nodes in creation order: weights and children (a child < m is a leaf's
        // index, else m + the internal node's index).
        let mut weight = vec![0u64; m - 1];
        let mut kids = vec![[0usize; 2]; m - 1];
        let (mut li, mut qi) = (0usize, 0usize);
        for k in 0..m - 1 {
            for kid in &mut kids[k] {
                let take_leaf = li < m && (qi >= k || u64::from(f[leaves[li]]) <= weight[qi]);
                if take_leaf {
                    *kid = li;
                    li += 1;
                } else {
                    *kid = m + qi;
                    qi += 1;
                }
            }
            let w = |c: usize| {
                if c < m {
                    u64::from(f[leaves[c]])
                } else {
                    weight[c - m]
                }
            };
            weight[k] = w(kids[k][0]) + w(kids[k][1]);
        }
        // Depths from the root (the last node) down.
        let mut depth = vec![0u32; m - 1];
        let mut deepest = 0;
        out.fill(0);
        for k in (0..m - 1).rev() {
            for &c in &kids[k] {
                if c < m {
                    let d = depth[k] + 1;
                    out[leaves[c]] = d as u8;
                    deepest = deepest.max(d);
                } else {
                    depth[c - m] = depth[k] + 1;
                }
            }
        }
        if deepest <= limit {
            return;
        }
        for x in f.iter_mut() {
            *x = x.div_ceil(2);
        }
    }
}

/// Canonical codes of `lengths` (RFC 1951, 3.2.2), bit-reversed for LSB-first output.
fn canonical_codes(lengths: &[u8]) -> Vec<u32> {
    let mut count = [0u32; 16];
    for &l in lengths {
        count[usize::from(l)] += 1;
    }
    count[0] = 0;
    let mut next = [0u32; 16];
    let mut code = 0;
    for bits in 1..16 {
        code = (code + count[bits - 1]) << 1;
        next[bits] = code;
    }
    lengths
        .iter()
        .map(|&l| {
            if l == 0 {
                return 0;
            }
            let c = next[usize::from(l)];
            next[usize::from(l)] += 1;
            c.reverse_bits() >> (32 - u32::from(l))
        })
        .collect()
}

/// The code-length sequence run-length coded with symbols 16 (repeat the previous 3-6
/// times), 17 (3-10 zeros) and 18 (11-138 zeros): (symbol, extra bits' value).
fn code_length_tokens(seq: &[u8]) -> Vec<(u8, u8)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < seq.len() {
        let v = seq[i];
        let mut run = 1;
        while i + run < seq.len() && seq[i + run] == v {
            run += 1;
        }
        if v == 0 && run >= 11 {
            let r = run.min(138);
            out.push((18, (r - 11) as u8));
            i += r;
        } else if v == 0 && run >= 3 {
            out.push((17, (run - 3) as u8));
            i += run;
        } else {
            out.push((v, 0));
            i += 1;
            let mut left = run - 1;
            while v != 0 && left >= 3 {
                let r = left.min(6);
                out.push((16, (r - 3) as u8));
                i += r;
                left -= r;
            }
        }
    }
    out
}

/// LSB-first bit writer.
struct Bits {
    out: Vec<u8>,
    acc: u64,
    n: u32,
}

impl Bits {
    fn put(&mut self, value: u32, bits: u32) {
        self.acc |= u64::from(value) << self.n;
        self.n += bits;
        while self.n >= 8 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.n -= 8;
        }
    }

    fn flush(&mut self) {
        if self.n > 0 {
            self.out.push(self.acc as u8);
        }
        self.acc = 0;
        self.n = 0;
    }
}

/// Adler-32 of `data`.
pub fn adler32(data: &[u8]) -> u32 {
    const MOD: u32 = 65521;
    let (mut a, mut b) = (1u32, 0u32);
    for chunk in data.chunks(5552) {
        for &x in chunk {
            a += u32::from(x);
            b += a;
        }
        a %= MOD;
        b %= MOD;
    }
    (b << 16) | a
}

/// The zlib stream of `data` (a tile's predictor bytes) cut into segments of `seg` bytes.
pub fn compress(data: &[u8], seg: usize) -> Vec<u8> {
    let seg = seg.max(1);
    let mut lit_f = [0u32; NLIT];
    let mut dist_f = [0u32; NDIST];
    let mut tokens = Vec::with_capacity(data.len());
    for start in (0..data.len()).step_by(seg) {
        parse_segment(data, start, (start + seg).min(data.len()), |t| {
            match t {
                Token::Lit(b) => lit_f[usize::from(b)] += 1,
                Token::Match { len, dist } => {
                    lit_f[len_code(usize::from(len)).0] += 1;
                    dist_f[dist_code(usize::from(dist)).0] += 1;
                }
            }
            tokens.push(t);
        });
    }
    lit_f[256] += 1;
    let mut lit_l = [0u8; NLIT];
    let mut dist_l = [0u8; NDIST];
    huffman_lengths(&lit_f, 15, &mut lit_l);
    huffman_lengths(&dist_f, 15, &mut dist_l);
    let hlit = 257.max(NLIT - lit_l.iter().rev().take_while(|&&l| l == 0).count());
    let hdist = 1.max(NDIST - dist_l.iter().rev().take_while(|&&l| l == 0).count());
    let mut seq = lit_l[..hlit].to_vec();
    seq.extend_from_slice(&dist_l[..hdist]);
    let cl_tokens = code_length_tokens(&seq);
    let mut cl_f = [0u32; 19];
    for &(s, _) in &cl_tokens {
        cl_f[usize::from(s)] += 1;
    }
    let mut cl_l = [0u8; 19];
    huffman_lengths(&cl_f, 7, &mut cl_l);
    let hclen = 4.max(19 - CL_ORDER.iter().rev().take_while(|&&s| cl_l[s] == 0).count());
    let (lit_c, dist_c, cl_c) = (
        canonical_codes(&lit_l),
        canonical_codes(&dist_l),
        canonical_codes(&cl_l),
    );
    let cl_extra = |s: u8| match s {
        16 => 2,
        17 => 3,
        18 => 7,
        _ => 0,
    };
    // The block's size in bits, to choose between it and stored blocks.
    let header_bits: u64 = 3
        + 14
        + 3 * hclen as u64
        + cl_tokens
            .iter()
            .map(|&(s, _)| u64::from(cl_l[usize::from(s)]) + cl_extra(s))
            .sum::<u64>();
    let lit_bits: u64 = (0..NLIT)
        .map(|s| {
            let extra = if s > 256 { LEN_EXTRA[s - 257] } else { 0 };
            u64::from(lit_f[s]) * (u64::from(lit_l[s]) + u64::from(extra))
        })
        .sum();
    let dist_bits: u64 = (0..NDIST)
        .map(|s| u64::from(dist_f[s]) * (u64::from(dist_l[s]) + u64::from(DIST_EXTRA[s])))
        .sum();
    let dynamic_bytes = (header_bits + lit_bits + dist_bits).div_ceil(8);
    let stored_blocks = data.len().div_ceil(65535).max(1);
    let stored_bytes = (data.len() + 5 * stored_blocks) as u64;

    let mut w = Bits {
        out: Vec::with_capacity(dynamic_bytes.min(stored_bytes) as usize + 6),
        acc: 0,
        n: 0,
    };
    w.out.extend_from_slice(&[0x78, 0x01]);
    if dynamic_bytes < stored_bytes {
        w.put(1, 1);
        w.put(2, 2);
        w.put((hlit - 257) as u32, 5);
        w.put((hdist - 1) as u32, 5);
        w.put((hclen - 4) as u32, 4);
        for &s in &CL_ORDER[..hclen] {
            w.put(u32::from(cl_l[s]), 3);
        }
        for &(s, x) in &cl_tokens {
            let s = usize::from(s);
            w.put(cl_c[s], u32::from(cl_l[s]));
            w.put(u32::from(x), cl_extra(s as u8) as u32);
        }
        for t in tokens {
            match t {
                Token::Lit(b) => {
                    let s = usize::from(b);
                    w.put(lit_c[s], u32::from(lit_l[s]));
                }
                Token::Match { len, dist } => {
                    let (lc, lx) = len_code(usize::from(len));
                    w.put(lit_c[lc], u32::from(lit_l[lc]));
                    w.put(lx, u32::from(LEN_EXTRA[lc - 257]));
                    let (dc, dx) = dist_code(usize::from(dist));
                    w.put(dist_c[dc], u32::from(dist_l[dc]));
                    w.put(dx, u32::from(DIST_EXTRA[dc]));
                }
            }
        }
        w.put(lit_c[256], u32::from(lit_l[256]));
        w.flush();
    } else {
        let chunks: Vec<&[u8]> = if data.is_empty() {
            vec![&[][..]]
        } else {
            data.chunks(65535).collect()
        };
        let last = chunks.len() - 1;
        for (k, c) in chunks.into_iter().enumerate() {
            w.put(u32::from(k == last), 1);
            w.put(0, 2);
            w.flush();
            let len = c.len() as u16;
            w.out.extend_from_slice(&len.to_le_bytes());
            w.out.extend_from_slice(&(!len).to_le_bytes());
            w.out.extend_from_slice(c);
        }
    }
    w.out.extend_from_slice(&adler32(data).to_be_bytes());
    w.out
}

#[cfg(test)]
#[path = "segdeflate_tests.rs"]
mod tests;
