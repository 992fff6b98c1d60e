//! Tests of [`super`]: round trips through flate2, stored blocks, complete length-limited
//! Huffman codes, Adler-32.
use super::*;
use std::io::Read;

fn inflate(z: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::ZlibDecoder::new(z)
        .read_to_end(&mut out)
        .expect("a valid zlib stream");
    out
}

/// Deterministic bytes: xorshift.
fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s as u8
        })
        .collect()
}

#[test]
fn every_kind_of_input_round_trips_through_flate2() {
    let mut cases: Vec<(Vec<u8>, usize)> = vec![
        (vec![], 1024),
        (vec![7], 1024),
        (vec![0; 262144], 1024),
        (noise(262144, 3), 1024),
        (noise(5000, 9), 1024),
        ((0..100_000u32).map(|i| (i % 7) as u8).collect(), 1000),
        ((0..70_000u32).map(|i| (i / 300) as u8).collect(), 256),
    ];
    // Predictor-like bytes: smooth high planes, random low planes, per 1024-byte row.
    let mut rows = Vec::new();
    let low = noise(262144, 5);
    for r in 0..256 {
        for k in 0..4 {
            for c in 0..256 {
                rows.push(match k {
                    0 => u8::from(c % 97 == 0),
                    1 => ((r + c) / 64) as u8 & 3,
                    _ => low[r * 1024 + k * 256 + c],
                });
            }
        }
    }
    cases.push((rows, 1024));
    for (data, seg) in cases {
        let z = compress(&data, seg);
        assert_eq!(inflate(&z), data, "{} bytes", data.len());
        // Never larger than stored blocks (5 bytes each) plus zlib's 6.
        assert!(z.len() <= data.len() + 5 * data.len().div_ceil(65535).max(1) + 6);
    }
}

#[test]
fn runs_compress_and_noise_is_stored() {
    assert!(compress(&vec![0u8; 262144], 1024).len() < 262144 / 100);
    let n = noise(262144, 11);
    let z = compress(&n, 1024);
    assert_eq!(z.len(), 262144 + 5 * 5 + 6, "random bytes are stored");
}

#[test]
fn huffman_lengths_are_complete_and_limited() {
    // Fibonacci frequencies make the unlimited code 30 deep.
    let mut f = vec![0u32; 40];
    let (mut a, mut b) = (1u32, 1u32);
    for x in f.iter_mut().take(30) {
        *x = a;
        (a, b) = (b, a + b);
    }
    for limit in [7u32, 15] {
        let mut l = vec![0u8; 40];
        huffman_lengths(&f, limit, &mut l);
        assert!(l.iter().all(|&x| u32::from(x) <= limit));
        // Kraft's sum is exactly 1: a complete prefix code.
        let kraft: f64 = l
            .iter()
            .filter(|&&x| x > 0)
            .map(|&x| 0.5f64.powi(x.into()))
            .sum();
        assert_eq!(kraft, 1.0);
        assert_eq!(l.iter().filter(|&&x| x > 0).count(), 30);
    }
    // One or no used symbol: completed to two codes of one bit.
    let mut l = [0u8; 5];
    huffman_lengths(&[0, 0, 9, 0, 0], 15, &mut l);
    assert_eq!(l, [1, 0, 1, 0, 0]);
    huffman_lengths(&[0; 5], 15, &mut l);
    assert_eq!(l, [1, 1, 0, 0, 0]);
}

#[test]
fn adler32_matches_flate2s_trailer() {
    let data = noise(100_000, 1);
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut e, &data).expect("in memory");
    let z = e.finish().expect("in memory");
    assert_eq!(z[z.len() - 4..], adler32(&data).to_be_bytes());
}
