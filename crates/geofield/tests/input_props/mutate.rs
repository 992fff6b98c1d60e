//! Deterministic randomness and the mutations applied to valid files.

// ---------------------------------------------------------------------------------------------
// Deterministic randomness and mutations.

/// SplitMix64.
/// The mutations' seeded generator (PCG64, as every test of the project uses).
pub(super) struct Rng(rand_pcg::Pcg64);
impl Rng {
    pub(super) fn seeded(seed: u64) -> Self {
        use rand::SeedableRng;
        Rng(rand_pcg::Pcg64::seed_from_u64(seed))
    }
    pub(super) fn next(&mut self) -> u64 {
        rand::RngCore::next_u64(&mut self.0)
    }
    pub(super) fn below(&mut self, n: usize) -> usize {
        rand::Rng::random_range(&mut self.0, 0..n.max(1))
    }
    pub(super) fn unit(&mut self) -> f64 {
        rand::Rng::random::<f64>(&mut self.0)
    }
}

/// Values a number is replaced by.
pub(super) const NASTY: [&str; 18] = [
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
pub(super) fn numbers(b: &[u8]) -> Vec<(usize, usize)> {
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
pub(super) fn lines(b: &[u8]) -> Vec<(usize, usize)> {
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

pub(super) fn splice(b: &mut Vec<u8>, (s, e): (usize, usize), with: &[u8]) {
    b.splice(s..e, with.iter().copied());
}

/// One random mutation of `b`; `header` rewrites a declared size to a huge value (per format).
pub(super) fn mutate(b: &mut Vec<u8>, rng: &mut Rng, header: Option<fn(&mut Vec<u8>, &mut Rng)>) {
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
pub(super) fn ascii_header_huge(b: &mut Vec<u8>, rng: &mut Rng) {
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
pub(super) fn npy_shape_huge(b: &mut Vec<u8>, rng: &mut Rng) {
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
pub(super) fn tiff_size_huge(b: &mut Vec<u8>, rng: &mut Rng) {
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
