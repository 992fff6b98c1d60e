//! Exact k nearest neighbours of random points with the library alone.
//!
//! `cargo run --release -p geofield --example neighbors`

use geofield::neighbors::{self, KnnParams};
use geofield::{BackendChoice, backend};
use rand::{Rng, SeedableRng};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let be = backend::select(BackendChoice::Auto)?.backend;
    let mut rng = rand_pcg::Pcg64::seed_from_u64(1);
    // 100 000 points in the unit square, as x0, y0, x1, y1, ...
    let points: Vec<f64> = (0..200_000).map(|_| rng.random::<f64>()).collect();
    // Each point's 8 nearest others, the index chosen from the points (IndexKind::Auto).
    let nb = neighbors::knn(&be, &points, None, 2, &KnnParams::new(8))?;
    // Row i holds point i's neighbours, nearest first; squared distances alongside.
    println!(
        "point 0: neighbours {:?}, distances {:?}",
        &nb.indices[..8],
        nb.dist2[..8].iter().map(|d| d.sqrt()).collect::<Vec<_>>()
    );
    Ok(())
}
