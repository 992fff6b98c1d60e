//! kNN on every backend against the CPU: identical indices and identical d² bits, row by row.
//!
//! Each test body runs on the CPU and, with a GPU, on CUDA (`backends::for_each_backend`: the
//! CUDA run skips with a notice without a GPU, fails with `GEOFIELD_REQUIRE_GPU=1`); the sets too
//! large for the CPU's brute force run on CUDA alone; the device-only checks are in
//! `neighbors_device.rs`. On the GPU:
//! `GEOFIELD_REQUIRE_GPU=1 cargo test --release -p geofield --test neighbors_backends -- --nocapture --test-threads=1`
//!
//! The reference is the CPU's brute force when Q·N is small enough, else the CPU's uniform grid
//! (tested identical to brute force in `neighbors_cpu.rs`). A mismatch prints the first differing
//! query with both rows (index and d² with its bit pattern) and the number of differing rows.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::needless_range_loop
)]

use geofield::Backend;
use geofield::neighbors::{Coord, IndexKind, KnnParams, knn};
use geofield_cuda::neighbors::GpuCoord;

mod backends;
mod neighbors_common;
use backends::{for_each_backend, gpu};
use neighbors_common::*;

/// Every (k, radius, exclusion, separate-queries) combination on one point set.
fn sweep<T: Coord + GpuCoord>(be: &Backend, label: &str, pts: &[T], dim: usize, radii: &[f64]) {
    let n = pts.len() / dim;
    let qs: Vec<T> = uniform::<T>(n.min(3000), dim, 1.0, 99)
        .iter()
        .zip(pts.iter().cycle())
        .map(|(&u, &p)| T::from_f64(p.to_f64() + u.to_f64() * 0.5))
        .collect();
    for k in [1usize, 7, 64] {
        let mut rs: Vec<Option<f64>> = vec![None];
        rs.extend(radii.iter().map(|&r| Some(r)));
        for r in rs {
            case(be, label, pts, None, dim, k, r, true);
            case(be, label, pts, None, dim, k, r, false);
            case(be, label, pts, Some(&qs), dim, k, r, false);
        }
    }
}

fn all_sets<T: Coord + GpuCoord>(be: &Backend) {
    // The CPU's reference is its own brute force (O(n²) per case): a quarter of the points keeps
    // its run short; the device runs the full size.
    let n = if matches!(be, Backend::Cpu) {
        1500
    } else {
        6000
    };
    for dim in [2usize, 3] {
        let u = uniform::<T>(n, dim, 100.0, 1 + dim as u64);
        // Radii giving ~3 and ~30 neighbours on average.
        let vol_per_pt = 100f64.powi(dim as i32) / n as f64;
        let r_small = (3.0 * vol_per_pt).powf(1.0 / dim as f64) * 0.7;
        let r_big = (30.0 * vol_per_pt).powf(1.0 / dim as f64) * 0.7;
        sweep(be, "uniform", &u, dim, &[r_small, r_big]);
        let c = clustered::<T>(n, dim, 7 + dim as u64);
        sweep(be, "clustered", &c, dim, &[0.01, 1.0]);
        // Lattice: exact ties everywhere; radius 1 and 2 land exactly on lattice distances.
        let l = lattice::<T>(n, dim, if dim == 2 { 30 } else { 10 }, 11 + dim as u64);
        sweep(be, "lattice", &l, dim, &[1.0, 2.0, 0.0]);
    }
}

#[test]
fn knn_matches_cpu_f32() {
    for_each_backend(|be| {
        all_sets::<f32>(be);
    });
}

#[test]
fn knn_matches_cpu_f64() {
    for_each_backend(|be| {
        all_sets::<f64>(be);
    });
}

#[test]
fn knn_tiny_sets() {
    for_each_backend(|be| {
        fn tiny<T: Coord + GpuCoord>(be: &Backend) {
            for dim in [2usize, 3] {
                for k in [1usize, 7, 64] {
                    for n in [0usize, 1, 2, k, k + 1] {
                        let pts = lattice::<T>(n, dim, 3, 5 + n as u64);
                        let qs = uniform::<T>(5, dim, 3.0, 17);
                        for r in [None, Some(1.0)] {
                            case(be, "tiny", &pts, None, dim, k, r, true);
                            case(be, "tiny", &pts, None, dim, k, r, false);
                            case(be, "tiny", &pts, Some(&qs), dim, k, r, false);
                            case(be, "tiny/no queries", &pts, Some(&[]), dim, k, r, false);
                        }
                    }
                }
            }
        }
        tiny::<f32>(be);
        tiny::<f64>(be);
    });
}

/// Coordinates so small that d² is subnormal (f32: ~1e-42; f64: ~1e-310): a flush-to-zero or a
/// fused multiply-add anywhere would change d² bits or the neighbour order.
#[test]
fn knn_subnormal_distances_and_cell_sizes() {
    for_each_backend(|be| {
        for dim in [2usize, 3] {
            let p32 = uniform::<f32>(3000, dim, 1e-20, 21);
            let p64 = uniform::<f64>(3000, dim, 1e-154, 22);
            for k in [1usize, 7, 64] {
                case(be, "subnormal", &p32, None, dim, k, None, true);
                case(be, "subnormal", &p64, None, dim, k, None, true);
                case(be, "subnormal", &p32, None, dim, k, Some(3e-21), true);
            }
            // Odd cell sizes: tiny cells (many shells) and one huge cell.
            let u = uniform::<f32>(4000, dim, 10.0, 23);
            let q = KnnParams {
                k: 7,
                radius: None,
                exclude_self: true,
                index: IndexKind::Auto,
            };
            let want = knn(
                &Backend::Cpu,
                &u,
                None,
                dim,
                &q.with_index(IndexKind::Brute),
            )
            .unwrap();
            for h in [0.05, 0.37, 1e6] {
                let kind = IndexKind::Uniform { cell_size: Some(h) };
                let got = knn(be, &u, None, dim, &q.with_index(kind)).unwrap();
                assert_same(&format!("cell size {h} dim {dim}"), &want, &got);
            }
            for leaf in [2usize, 64, 5000] {
                let kind = IndexKind::Dynamic { max_per_leaf: leaf };
                let got = knn(be, &u, None, dim, &q.with_index(kind)).unwrap();
                assert_same(&format!("leaf {leaf} dim {dim}"), &want, &got);
            }
        }
    });
}

/// Up to 2e5 points against the CPU's uniform grid.
#[test]
fn cuda_knn_large_sets() {
    let Some(be) = gpu() else { return };
    let n = 200_000;
    let u2 = uniform::<f32>(n, 2, 1000.0, 31);
    case(&be, "large uniform", &u2, None, 2, 7, None, true);
    case(&be, "large uniform", &u2, None, 2, 64, Some(3.0), true);
    let c3 = clustered::<f64>(n, 3, 32);
    case(&be, "large clustered", &c3, None, 3, 7, None, true);
    let l2 = lattice::<f32>(n, 2, 300, 33);
    case(&be, "large lattice", &l2, None, 2, 7, None, true);
    let l3 = lattice::<f64>(n, 3, 40, 34);
    case(&be, "large lattice", &l3, None, 3, 64, Some(2.0), true);
}

#[test]
fn knn_distances_match_knn() {
    for_each_backend(|be| {
        for dim in [2usize, 3] {
            let p = uniform::<f32>(3000, dim, 100.0, 61 + dim as u64);
            let qs = uniform::<f32>(500, dim, 120.0, 71 + dim as u64);
            let l = lattice::<f64>(3000, dim, 12, 81 + dim as u64);
            for r in [None, Some(1.5), Some(0.0)] {
                for ex in [true, false] {
                    let q = KnnParams {
                        k: 9,
                        radius: r,
                        exclude_self: ex,
                        index: IndexKind::Auto,
                    };
                    distances_case(be, "uniform f32", &p, None, dim, &q);
                    distances_case(be, "lattice f64", &l, None, dim, &q);
                    distances_case(be, "queries f32", &p, Some(&qs), dim, &q);
                    let b = q.with_index(IndexKind::Brute);
                    distances_case(be, "brute f64", &l, None, dim, &b);
                }
            }
        }
    });
}

#[test]
fn knn_invalid_inputs_are_errors() {
    for_each_backend(|be| {
        let q = |k| KnnParams {
            k,
            radius: None,
            exclude_self: true,
            index: IndexKind::Auto,
        };
        let pts = [0.0f32, 1.0, 2.0, 3.0];
        for kind in [
            IndexKind::Brute,
            IndexKind::Uniform { cell_size: None },
            IndexKind::Dynamic { max_per_leaf: 8 },
        ] {
            assert!(knn(be, &pts, None, 2, &q(0).with_index(kind)).is_err());
            assert!(knn(be, &pts, None, 2, &q(65).with_index(kind)).is_err());
            assert!(knn(be, &pts, None, 4, &q(1).with_index(kind)).is_err());
            assert!(knn(be, &pts[..3], None, 2, &q(1).with_index(kind)).is_err());
            assert!(knn(be, &[0.0, f32::NAN], None, 2, &q(1).with_index(kind)).is_err());
            assert!(knn(be, &pts, Some(&[1.0, 2.0, 3.0]), 2, &q(1).with_index(kind)).is_err());
            let neg = KnnParams {
                k: 1,
                radius: Some(-1.0),
                exclude_self: false,
                index: IndexKind::Auto,
            };
            assert!(knn(be, &pts, None, 2, &neg.with_index(kind)).is_err());
        }
        assert!(
            knn(
                be,
                &[0.0f64, 0.0, 1e9, 1e9],
                None,
                2,
                &q(1).with_index(IndexKind::Uniform {
                    cell_size: Some(1e-3)
                })
            )
            .is_err()
        );
    });
}

/// Runs everywhere: on the CPU backend every index returns brute force's rows.
#[test]
fn knn_cpu_indexes_match_brute_force() {
    let pts = lattice::<f32>(500, 3, 6, 51);
    for kind in [
        IndexKind::Brute,
        IndexKind::Uniform { cell_size: None },
        IndexKind::Auto,
    ] {
        let q = KnnParams {
            k: 7,
            radius: Some(2.0),
            exclude_self: true,
            index: IndexKind::Auto,
        };
        let a = knn(
            &Backend::Cpu,
            &pts,
            None,
            3,
            &q.with_index(IndexKind::Brute),
        )
        .unwrap();
        let b = knn(&Backend::Cpu, &pts, None, 3, &q.with_index(kind)).unwrap();
        assert_same(&format!("cpu {kind:?}"), &a, &b);
    }
}
