//! Time compressing one band into a COG (tiles, overviews, predictor, DEFLATE).
use std::time::Instant;

use geofield_core::{Extent, GridSpec};
use geofield_io::RasterMeta;
use geofield_io::geotiff::{BandValues, CogBuilder};

fn main() {
    let n = 4096;
    let grid =
        GridSpec::from_extent(Extent::new(0.0, 0.0, n as f64, n as f64).unwrap(), 1.0).unwrap();
    let v: Vec<f32> = (0..n * n)
        .map(|i| {
            let (x, y) = ((i % n) as f32, (i / n) as f32);
            (1.0 + (x * 0.013).sin() * (y * 0.007).cos()) * 3.7 + 1e-3 * ((i * 7919) % 1000) as f32
        })
        .collect();
    let p = std::path::Path::new("/tmp/cog_speed.tif");
    for _ in 0..3 {
        let mut b =
            CogBuilder::new(p, grid, vec!["a".into()], false, RasterMeta::default()).unwrap();
        let t = Instant::now();
        b.add_band(p, 0, BandValues::F32(&v)).unwrap();
        let s = t.elapsed().as_secs_f64();
        println!(
            "{:.3} s, {:.0} MB/s raw full-res",
            s,
            (n * n * 4) as f64 / s / 1e6
        );
    }
}
