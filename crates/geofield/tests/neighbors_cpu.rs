//! CPU neighbour search: every index against brute force, bit for bit, on seeded random sets
//! (uniform, clustered, duplicate-heavy lattices, tiny sets) in 2-D and 3-D, f32 and f64; brute
//! force against a naive full sort (input errors: `neighbors_errors.rs`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::needless_range_loop
)]

use geofield::Backend;
use geofield::neighbors::{Coord, IndexKind, KnnParams, Neighbors, knn};

mod backends;
use backends::Rng;

#[derive(Debug, Clone, Copy)]
enum Family {
    /// Uniform in [0, 100)^d.
    Uniform,
    /// Five Gaussian blobs of very different widths, plus a few far outliers.
    Clustered,
    /// Integer lattice 0..6 per axis: many exact duplicates and exact distance ties.
    Lattice,
    /// Uniform points, each repeated up to 4 times at the same position.
    Repeated,
}

const FAMILIES: [Family; 4] = [
    Family::Uniform,
    Family::Clustered,
    Family::Lattice,
    Family::Repeated,
];

fn generate(family: Family, n: usize, dim: usize, seed: u64) -> Vec<f64> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::with_capacity(n * dim);
    match family {
        Family::Uniform => {
            for _ in 0..n * dim {
                out.push(rng.unit() * 100.0);
            }
        }
        Family::Clustered => {
            let centres: Vec<Vec<f64>> = (0..5)
                .map(|_| (0..dim).map(|_| rng.unit() * 100.0).collect())
                .collect();
            let widths = [0.01, 0.1, 1.0, 5.0, 20.0];
            for i in 0..n {
                if i % 97 == 96 {
                    for _ in 0..dim {
                        out.push(rng.unit() * 2000.0 - 1000.0);
                    }
                    continue;
                }
                let c = rng.below(5) as usize;
                for a in 0..dim {
                    out.push(centres[c][a] + widths[c] * rng.normal());
                }
            }
        }
        Family::Lattice => {
            for _ in 0..n * dim {
                out.push(rng.below(6) as f64);
            }
        }
        Family::Repeated => {
            while out.len() < n * dim {
                let p: Vec<f64> = (0..dim).map(|_| rng.unit() * 10.0 - 5.0).collect();
                let reps = 1 + rng.below(4);
                for _ in 0..reps {
                    if out.len() < n * dim {
                        out.extend_from_slice(&p);
                    }
                }
            }
            // Shuffle the points so duplicates are not adjacent in index order.
            let m = n;
            for i in (1..m).rev() {
                let j = rng.below(i as u64 + 1) as usize;
                for a in 0..dim {
                    out.swap(i * dim + a, j * dim + a);
                }
            }
        }
    }
    out
}

/// Largest bounding-box extent of a flat point set.
fn extent<T: Coord>(pts: &[T], dim: usize) -> f64 {
    let mut e: f64 = 0.0;
    for a in 0..dim {
        let vals = pts.iter().skip(a).step_by(dim).map(|v| v.to_f64());
        let lo = vals.clone().fold(f64::INFINITY, f64::min);
        let hi = vals.fold(f64::NEG_INFINITY, f64::max);
        if hi > lo {
            e = e.max(hi - lo);
        }
    }
    e
}

/// The indexes under test; `ext` sets a fine user cell size (about 25 cells along the longest
/// axis, many of them empty for clustered sets).
fn indexes(ext: f64) -> Vec<IndexKind> {
    vec![
        IndexKind::Uniform { cell_size: None },
        IndexKind::Uniform {
            cell_size: Some(if ext > 0.0 { ext / 25.0 } else { 0.37 }),
        },
        IndexKind::Uniform {
            cell_size: Some(1e4),
        },
        IndexKind::Dynamic { max_per_leaf: 1 },
        IndexKind::Dynamic { max_per_leaf: 8 },
        IndexKind::Dynamic { max_per_leaf: 64 },
        IndexKind::Auto,
    ]
}

fn assert_same(want: &Neighbors, got: &Neighbors, label: &str) {
    assert_eq!(want.k, got.k, "{label}: k");
    assert_eq!(want.indices.len(), got.indices.len(), "{label}: length");
    for i in 0..want.indices.len() {
        let (q, j) = (i / want.k, i % want.k);
        assert_eq!(
            want.indices[i],
            got.indices[i],
            "{label}: query {q} slot {j} index (want row {:?}, got {:?})",
            want.row(q).0,
            got.row(q).0
        );
        assert_eq!(
            want.dist2[i].to_bits(),
            got.dist2[i].to_bits(),
            "{label}: query {q} slot {j} dist2 {} vs {}",
            want.dist2[i],
            got.dist2[i]
        );
    }
}

/// Structural checks on a result: sorted by (d2, index), -1/NaN padding only at the end, radius
/// respected, self excluded.
fn check_shape(nb: &Neighbors, q: &KnnParams, self_query: bool, label: &str) {
    for qi in 0..nb.queries() {
        let (ix, d2) = nb.row(qi);
        let mut ended = false;
        for j in 0..nb.k {
            if ix[j] < 0 {
                assert_eq!(ix[j], -1, "{label}");
                assert!(d2[j].is_nan(), "{label}");
                ended = true;
                continue;
            }
            assert!(!ended, "{label}: hole in row {qi}");
            if self_query && q.exclude_self {
                assert_ne!(ix[j], qi as i64, "{label}: self returned");
            }
            if let Some(r) = q.radius {
                assert!(d2[j] <= r * r * (1.0 + 1e-6), "{label}: radius");
            }
            if j > 0 {
                let prev = (d2[j - 1], ix[j - 1]);
                assert!(prev < (d2[j], ix[j]), "{label}: row {qi} not sorted");
            }
        }
    }
}

fn compare_all<T: Coord>(pts: &[T], queries: Option<&[T]>, dim: usize, q: &KnnParams, label: &str) {
    let want = knn(
        &Backend::Cpu,
        pts,
        queries,
        dim,
        &q.with_index(IndexKind::Brute),
    )
    .unwrap();
    check_shape(&want, q, queries.is_none(), label);
    for idx in indexes(extent(pts, dim)) {
        let got = knn(&Backend::Cpu, pts, queries, dim, &q.with_index(idx)).unwrap();
        assert_same(&want, &got, &format!("{label} {idx:?}"));
    }
}

fn radius_for(family: Family, n: usize, dim: usize, k: usize) -> f64 {
    match family {
        // Integer distances: r = 2 puts many points exactly on the boundary (d^2 = 4).
        Family::Lattice => 2.0,
        Family::Repeated => 10.0 * (k as f64 / n.max(1) as f64).powf(1.0 / dim as f64) * 0.7,
        _ => 100.0 * (k as f64 / n.max(1) as f64).powf(1.0 / dim as f64) * 0.6,
    }
}

fn sweep<T: Coord>(conv: fn(f64) -> T, tname: &str) {
    let n = 900;
    for (fi, &family) in FAMILIES.iter().enumerate() {
        for dim in [2usize, 3] {
            let seed = 1000 + 10 * fi as u64 + dim as u64;
            let pts: Vec<T> = generate(family, n, dim, seed)
                .into_iter()
                .map(conv)
                .collect();
            for k in [1usize, 7, 64] {
                for with_radius in [false, true] {
                    for exclude_self in [false, true] {
                        let q = KnnParams {
                            k,
                            radius: with_radius.then(|| radius_for(family, n, dim, k)),
                            exclude_self,
                            index: IndexKind::Auto,
                        };
                        let label = format!("{tname} {family:?} dim {dim} k {k} {q:?}");
                        compare_all(&pts, None, dim, &q, &label);
                    }
                }
            }
        }
    }
}

#[test]
fn every_index_equals_brute_force_f64() {
    sweep::<f64>(|v| v, "f64");
}

#[test]
fn every_index_equals_brute_force_f32() {
    sweep::<f32>(|v| v as f32, "f32");
}

#[test]
fn separate_queries_inside_and_far_outside() {
    for dim in [2usize, 3] {
        for family in FAMILIES {
            let pts = generate(family, 700, dim, 77 + dim as u64);
            let mut qs = generate(family, 150, dim, 99 + dim as u64);
            // Far-away queries: outside every grid cell, on both sides.
            let mut far = generate(Family::Uniform, 20, dim, 5);
            for (i, v) in far.iter_mut().enumerate() {
                *v = if i % 2 == 0 {
                    *v * 50.0 + 3000.0
                } else {
                    -*v * 50.0 - 3000.0
                };
            }
            qs.extend_from_slice(&far);
            for k in [1usize, 7, 64] {
                for radius in [None, Some(radius_for(family, 700, dim, k))] {
                    // exclude_self is ignored with separate queries.
                    let q = KnnParams {
                        k,
                        radius,
                        exclude_self: true,
                        index: IndexKind::Auto,
                    };
                    let label = format!("queries {family:?} dim {dim} {q:?}");
                    compare_all(&pts, Some(&qs), dim, &q, &label);
                    let qs32: Vec<f32> = qs.iter().map(|&v| v as f32).collect();
                    let p32: Vec<f32> = pts.iter().map(|&v| v as f32).collect();
                    compare_all(&p32, Some(&qs32), dim, &q, &format!("f32 {label}"));
                }
            }
        }
    }
}

/// More separate queries than `SPATIAL_ORDER_MIN` (4096): they are answered in a spatial order
/// and the rows must still come back in input order, equal to brute force, also with queries far
/// outside the points and repeated queries.
#[test]
fn many_separate_queries_answered_in_spatial_order() {
    for dim in [2usize, 3] {
        for family in [Family::Uniform, Family::Clustered] {
            let pts = generate(family, 900, dim, 11 + dim as u64);
            let mut qs = generate(family, 5000, dim, 13 + dim as u64);
            let far: Vec<f64> = generate(Family::Uniform, 40, dim, 17)
                .iter()
                .map(|v| v * 1e4 - 5e3)
                .collect();
            qs.extend_from_slice(&far);
            let again = qs[..dim * 300].to_vec();
            qs.extend_from_slice(&again);
            for k in [1usize, 8] {
                let q = KnnParams {
                    k,
                    radius: None,
                    exclude_self: false,
                    index: IndexKind::Auto,
                };
                compare_all(
                    &pts,
                    Some(&qs),
                    dim,
                    &q,
                    &format!("many queries {family:?} {dim}-D k {k}"),
                );
            }
        }
    }
}

#[test]
fn tiny_sets() {
    for dim in [2usize, 3] {
        for k in [1usize, 7, 64] {
            for n in [0usize, 1, 2, k, k + 1] {
                for family in [Family::Uniform, Family::Lattice] {
                    let pts = generate(family, n, dim, 7 * n as u64 + k as u64);
                    for exclude_self in [false, true] {
                        for radius in [None, Some(2.0)] {
                            let q = KnnParams {
                                k,
                                radius,
                                exclude_self,
                                index: IndexKind::Auto,
                            };
                            let label = format!("tiny n {n} {family:?} dim {dim} {q:?}");
                            compare_all(&pts, None, dim, &q, &label);
                            let nb = knn(&Backend::Cpu, &pts, None, dim, &q).unwrap();
                            assert_eq!(nb.queries(), n);
                            if radius.is_none() {
                                // Without a radius every row holds min(k, available) neighbours.
                                let avail = if exclude_self { n.saturating_sub(1) } else { n };
                                for qi in 0..n {
                                    let found = nb.row(qi).0.iter().filter(|&&i| i >= 0).count();
                                    assert_eq!(found, k.min(avail), "{label}");
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn no_points_gives_padding() {
    let qs = [1.0f64, 2.0, 3.0, 4.0];
    let q = KnnParams {
        k: 3,
        radius: None,
        exclude_self: false,
        index: IndexKind::Auto,
    };
    for idx in indexes(0.0).into_iter().chain([IndexKind::Brute]) {
        let nb = knn::<f64>(&Backend::Cpu, &[], Some(&qs), 2, &q.with_index(idx)).unwrap();
        assert_eq!(nb.indices, vec![-1; 6]);
        assert!(nb.dist2.iter().all(|d| d.is_nan()));
        let nb = knn::<f64>(&Backend::Cpu, &[], None, 3, &q.with_index(idx)).unwrap();
        assert!(nb.indices.is_empty());
    }
}

#[test]
fn all_points_identical() {
    for dim in [2usize, 3] {
        let pts = vec![3.5f32; 200 * dim];
        for k in [1usize, 7, 64] {
            let q = KnnParams {
                k,
                radius: Some(0.0),
                exclude_self: true,
                index: IndexKind::Auto,
            };
            compare_all(&pts, None, dim, &q, "identical");
            let nb = knn(
                &Backend::Cpu,
                &pts,
                None,
                dim,
                &q.with_index(IndexKind::Dynamic { max_per_leaf: 4 }),
            )
            .unwrap();
            // Ties broken by index: the lowest indices other than self.
            let (ix, d2) = nb.row(0);
            assert_eq!(ix[0], 1);
            assert_eq!(ix[k - 1], k as i64);
            assert!(d2.iter().all(|&d| d == 0.0));
            let (ix, _) = nb.row(5);
            let expect: Vec<i64> = (0..=k as i64).filter(|&i| i != 5).take(k).collect();
            assert_eq!(ix, &expect[..]);
        }
    }
}

/// Naive reference: all squared distances (same formula, same precision), sorted by (d2, idx).
fn naive<T: Coord>(
    pts: &[T],
    qp: &[T],
    qi: Option<usize>,
    dim: usize,
    q: &KnnParams,
) -> Vec<(f64, i64)> {
    let r2 = q.radius.map(|r| T::from_f64(r * r));
    let mut all: Vec<(f64, i64)> = Vec::new();
    for j in 0..pts.len() / dim {
        if q.exclude_self && qi == Some(j) {
            continue;
        }
        let mut s = T::ZERO;
        for a in 0..dim {
            let d = pts[j * dim + a] - qp[a];
            s = s + d * d;
        }
        if let Some(r2) = r2
            && s > r2
        {
            continue;
        }
        all.push((s.to_f64(), j as i64));
    }
    all.sort_by(|x, y| x.partial_cmp(y).unwrap());
    all.truncate(q.k);
    all
}

#[test]
fn brute_force_matches_naive_sort() {
    for dim in [2usize, 3] {
        for family in FAMILIES {
            let pts = generate(family, 600, dim, 4242 + dim as u64);
            let p32: Vec<f32> = pts.iter().map(|&v| v as f32).collect();
            for k in [1usize, 7, 64] {
                for radius in [None, Some(radius_for(family, 600, dim, k))] {
                    let q = KnnParams {
                        k,
                        radius,
                        exclude_self: true,
                        index: IndexKind::Auto,
                    };
                    let nb64 = knn(
                        &Backend::Cpu,
                        &pts,
                        None,
                        dim,
                        &q.with_index(IndexKind::Brute),
                    )
                    .unwrap();
                    let nb32 = knn(
                        &Backend::Cpu,
                        &p32,
                        None,
                        dim,
                        &q.with_index(IndexKind::Brute),
                    )
                    .unwrap();
                    for qi in [0usize, 1, 17, 299, 599] {
                        for (nb, want) in [
                            (
                                &nb64,
                                naive(&pts, &pts[qi * dim..(qi + 1) * dim], Some(qi), dim, &q),
                            ),
                            (
                                &nb32,
                                naive(&p32, &p32[qi * dim..(qi + 1) * dim], Some(qi), dim, &q),
                            ),
                        ] {
                            let (ix, d2) = nb.row(qi);
                            for j in 0..k {
                                match want.get(j) {
                                    Some(&(d, i)) => {
                                        assert_eq!(ix[j], i, "{family:?} dim {dim} {q:?} q {qi}");
                                        assert_eq!(d2[j].to_bits(), d.to_bits());
                                    }
                                    None => {
                                        assert_eq!(ix[j], -1);
                                        assert!(d2[j].is_nan());
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Throughput print (no asserts): `cargo test --release -p geofield --test neighbors_cpu --
/// --ignored --nocapture throughput`.
#[test]
#[ignore]
fn throughput_7nn_1e6_uniform_2d() {
    use std::time::Instant;
    let n = 1_000_000;
    for (tname, pts64) in [("f64", generate(Family::Uniform, n, 2, 1))] {
        let pts32: Vec<f32> = pts64.iter().map(|&v| v as f32).collect();
        let q = KnnParams {
            k: 7,
            radius: None,
            exclude_self: true,
            index: IndexKind::Auto,
        };
        for idx in [
            IndexKind::Uniform { cell_size: None },
            IndexKind::Dynamic { max_per_leaf: 8 },
            IndexKind::Dynamic { max_per_leaf: 16 },
            IndexKind::Dynamic { max_per_leaf: 32 },
        ] {
            let t = Instant::now();
            let nb = knn(&Backend::Cpu, &pts64, None, 2, &q.with_index(idx)).unwrap();
            let s = t.elapsed().as_secs_f64();
            println!(
                "{tname} {idx:?}: {s:.3} s incl. build, {:.3e} queries/s",
                nb.queries() as f64 / s
            );
            let t = Instant::now();
            let nb = knn(&Backend::Cpu, &pts32, None, 2, &q.with_index(idx)).unwrap();
            let s = t.elapsed().as_secs_f64();
            println!(
                "f32 {idx:?}: {s:.3} s incl. build, {:.3e} queries/s",
                nb.queries() as f64 / s
            );
        }
        let arr: Vec<[f64; 2]> = pts64.chunks_exact(2).map(|c| [c[0], c[1]]).collect();
        let t = Instant::now();
        let g = geofield::bench::neighbors::UniformGrid::build(&arr, None).unwrap();
        println!(
            "uniform build: {:.3} s (cell {:.4}, dims {:?})",
            t.elapsed().as_secs_f64(),
            g.cell_size(),
            g.dims()
        );
        let t = Instant::now();
        let g = geofield::bench::neighbors::DynamicGrid::build(&arr, 16);
        println!(
            "dynamic build (16/leaf): {:.3} s ({} leaves)",
            t.elapsed().as_secs_f64(),
            g.leaves()
        );
        let qs = &pts64[..2 * 2000];
        let t = Instant::now();
        let nb = knn(
            &Backend::Cpu,
            &pts64,
            Some(qs),
            2,
            &q.with_index(IndexKind::Brute),
        )
        .unwrap();
        let s = t.elapsed().as_secs_f64();
        println!(
            "f64 Brute (2000 queries): {s:.3} s, {:.3e} queries/s",
            nb.queries() as f64 / s
        );
    }
}
