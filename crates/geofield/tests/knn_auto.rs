//! `IndexKind::Auto` on the CPU picks the uniform grid for evenly spread points and the dynamic
//! grid for clustered ones, and either way returns exactly brute force's rows.
#![allow(clippy::unwrap_used)]

use geofield::Backend;
use geofield::neighbors::{
    AUTO_CLUSTERING_MAX, IndexKind, KnnParams, auto_index, clustering_of, knn,
};
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Normal};
use rand_pcg::Pcg64;

fn uniform_points(n: usize, dim: usize, seed: u64) -> Vec<f64> {
    let mut rng = Pcg64::seed_from_u64(seed);
    (0..n * dim).map(|_| rng.random::<f64>() * 1000.0).collect()
}

/// 20 tight Gaussian clusters (σ = 2 m) at random centres of a 1000 m box: the points fill well
/// under 1 % of their bounding box.
fn clustered_points(n: usize, dim: usize, seed: u64) -> Vec<f64> {
    let mut rng = Pcg64::seed_from_u64(seed);
    let centres: Vec<Vec<f64>> = (0..20)
        .map(|_| (0..dim).map(|_| rng.random::<f64>() * 1000.0).collect())
        .collect();
    let noise = Normal::new(0.0, 2.0).unwrap();
    let mut v = Vec::with_capacity(n * dim);
    for i in 0..n {
        let c = &centres[i % centres.len()];
        for x in c {
            v.push(x + noise.sample(&mut rng));
        }
    }
    v
}

fn same_as_brute(points: &[f64], dim: usize) {
    for k in [1, 8] {
        let q = KnnParams {
            k,
            radius: None,
            exclude_self: true,
            index: IndexKind::Auto,
        };
        let auto = knn(&Backend::Cpu, points, None, dim, &q).unwrap();
        let brute = knn(
            &Backend::Cpu,
            points,
            None,
            dim,
            &q.with_index(IndexKind::Brute),
        )
        .unwrap();
        assert_eq!(
            auto.indices, brute.indices,
            "dim {dim} k {k}: indices differ"
        );
        assert_eq!(
            auto.dist2.iter().map(|d| d.to_bits()).collect::<Vec<_>>(),
            brute.dist2.iter().map(|d| d.to_bits()).collect::<Vec<_>>(),
            "dim {dim} k {k}: distances differ"
        );
    }
}

#[test]
fn evenly_spread_points_take_the_uniform_grid() {
    for dim in [2, 3] {
        let p = uniform_points(20_000, dim, 7 + dim as u64);
        // Poisson counts: the measure's expectation is 1 (its sampling spread is a few per cent).
        let c = clustering_of(&p, dim).unwrap();
        assert!((0.8..1.2).contains(&c), "dim {dim}: clustering {c}");
        assert_eq!(
            auto_index(&p, dim).unwrap(),
            IndexKind::Uniform { cell_size: None },
            "dim {dim}"
        );
        same_as_brute(&p, dim);
    }
}

#[test]
fn clustered_points_take_the_dynamic_grid() {
    for dim in [2, 3] {
        let p = clustered_points(20_000, dim, 11 + dim as u64);
        let c = clustering_of(&p, dim).unwrap();
        assert!(c > 10.0 * AUTO_CLUSTERING_MAX, "dim {dim}: clustering {c}");
        assert!(matches!(
            auto_index(&p, dim).unwrap(),
            IndexKind::Dynamic { .. }
        ));
        same_as_brute(&p, dim);
    }
}

#[test]
fn degenerate_and_tiny_sets() {
    // All points on a line (one axis of zero extent), evenly spaced: not clustered.
    let line: Vec<f64> = (0..4000).flat_map(|i| [i as f64, 5.0]).collect();
    assert_eq!(
        auto_index(&line, 2).unwrap(),
        IndexKind::Uniform { cell_size: None }
    );
    same_as_brute(&line, 2);
    // Every point at one place: the dynamic grid.
    let same = vec![3.0; 2 * 1000];
    assert!(matches!(
        auto_index(&same, 2).unwrap(),
        IndexKind::Dynamic { .. }
    ));
    // Coordinates near ±1e308: the measure stays finite (no overflow of the span).
    let far: Vec<f64> = (0..1000)
        .flat_map(|i| [if i % 2 == 0 { 1e308 } else { -1e308 }, i as f64])
        .collect();
    assert!(clustering_of(&far, 2).unwrap().is_finite());
    // Few points: brute force.
    assert_eq!(
        auto_index(&uniform_points(100, 2, 1), 2).unwrap(),
        IndexKind::Brute
    );
}
