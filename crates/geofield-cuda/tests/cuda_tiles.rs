//! GeoTIFF tiles compressed on the device are the CPU encoder's streams byte for byte
//! (`geofield_io::geotiff::segdeflate::tile_f32`, itself checked against flate2's decoder):
//! smooth maps, NaN with and without a fill value, noise (stored blocks), zeros, edge tiles,
//! more tiles than one launch holds.
//!
//! GPU checks skip (with a notice) without a GPU and fail when GEOFIELD_REQUIRE_GPU=1.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use geofield_cuda::test_gpu;
use geofield_cuda::tiles::{deflate_f32, deflate_f32_timed};
use geofield_io::geotiff::segdeflate::tile_f32;
use rayon::prelude::*;

/// A seed-map-like field: smooth bumps over many magnitudes, exact zeros far from them.
fn field(cols: usize, rows: usize, seed: u64) -> Vec<f32> {
    (0..cols * rows)
        .into_par_iter()
        .map(|i| {
            let (r, c) = ((i / cols) as f64, (i % cols) as f64);
            let s = seed as f64;
            let v = (-((r - 0.3 * rows as f64).powi(2) + (c - 0.6 * cols as f64 + s).powi(2))
                / (0.02 * (cols * rows) as f64))
                .exp()
                * 40.0
                + ((r * 0.13 + s).sin() * (c * 0.071).cos()).max(0.0).powi(3) * 0.5;
            if v < 1e-6 { 0.0 } else { v as f32 }
        })
        .collect()
}

/// xorshift noise of every bit pattern but NaN.
fn noise(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let v = f32::from_bits(s as u32);
            if v.is_nan() { 1.5 } else { v }
        })
        .collect()
}

fn check(name: &str, v: &[f32], cols: usize, rows: usize, fill: Option<f32>) {
    let gpu = test_gpu().expect("checked by the caller");
    let got = deflate_f32(&gpu, v, cols, rows, fill).unwrap();
    let (across, down) = (cols.div_ceil(256), rows.div_ceil(256));
    assert_eq!(got.len(), across * down, "{name}: tiles");
    let want: Vec<Vec<u8>> = (0..across * down)
        .into_par_iter()
        .map(|t| tile_f32(v, cols, rows, t / across, t % across, fill))
        .collect();
    for (t, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(
            g == w,
            "{name}: tile {t} differs ({} bytes on the GPU, {} on the CPU; first difference at {:?})",
            g.len(),
            w.len(),
            g.iter().zip(w).position(|(a, b)| a != b)
        );
    }
    let raw = 4 * 65536 * got.len();
    let packed: usize = got.iter().map(Vec::len).sum();
    eprintln!(
        "{name}: {} tiles, ratio {:.3}",
        got.len(),
        raw as f64 / packed as f64
    );
}

#[test]
fn gpu_tiles_are_the_cpu_encoders_bytes() {
    if test_gpu().is_none() {
        return;
    }
    let (c, r) = (700, 1300);
    let mut v = field(c, r, 1);
    for i in (0..v.len()).step_by(997) {
        v[i] = f32::NAN;
    }
    check("smooth with NaN, fill", &v, c, r, Some(-9999.0));
    check("smooth with NaN, no fill", &v, c, r, None);
    check("noise", &noise(600 * 300, 7), 600, 300, None);
    check("zeros", &vec![0.0; 1000 * 1000], 1000, 1000, None);
    check("one cell", &[3.25], 1, 1, None);
    check("one tile", &field(256, 256, 3), 256, 256, None);
    check("empty", &[], 0, 5, None);
    // 40 x 28 tiles: two launches (1,024 tiles each at most).
    check("wide", &field(10240, 7000, 5), 10240, 7000, None);
}

#[test]
fn gpu_tiles_throughput() {
    let Some(gpu) = test_gpu() else { return };
    let (c, r) = (20480, 3072);
    let v = field(c, r, 2);
    deflate_f32(&gpu, &v, c, r, None).unwrap();
    let mut times = Vec::new();
    for _ in 0..5 {
        let (tiles, t) = deflate_f32_timed(&gpu, &v, c, r, None).unwrap();
        times.push((t.total_s, t.kernel_ms));
        assert_eq!(tiles.len(), 80 * 12);
    }
    times.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mb = (c * r * 4) as f64 / 1e6;
    eprintln!(
        "deflate_f32 of {c} x {r} (host to host): median {:.4} s, {:.0} MB/s; kernel {:.2} ms ({:.0} MB/s)",
        times[2].0,
        mb / times[2].0,
        times[2].1,
        mb / times[2].1 * 1e3
    );
}
