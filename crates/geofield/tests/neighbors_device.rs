//! Device-only kNN checks (CUDA; each skips with a notice without a GPU, fails with
//! `GEOFIELD_REQUIRE_GPU=1`): staged transfers in several chunks, the device grid's counting
//! sort, and throughput. On the GPU:
//! `GEOFIELD_REQUIRE_GPU=1 cargo test --release -p geofield --test neighbors_device -- --nocapture --test-threads=1`
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::needless_range_loop
)]

use std::time::Instant;

use geofield::Backend;
use geofield::neighbors::{IndexKind, KnnParams, Neighbors, knn};
use geofield_cuda::neighbors::{DeviceGrid, DeviceIndex, bench_device, knn_brute};

mod backends;
mod neighbors_common;
use backends::gpu;
use neighbors_common::{assert_same, case, clustered, distances_case, lattice, uniform};

/// Sets large enough that the pinned staging copies run in several chunks both ways (over 2^20
/// f64 coordinates up, over 2^23 bytes of rows back), against the CPU.
#[test]
fn cuda_knn_staged_in_chunks() {
    let Some(be) = gpu() else { return };
    let n = 600_000;
    let p = uniform::<f64>(n, 2, 1000.0, 91);
    let qs = uniform::<f64>(700_000, 2, 1000.0, 92);
    let q = KnnParams {
        radius: Some(1.2),
        ..KnnParams::new(8)
    };
    case(&be, "staged uniform f64", &p, None, 2, 8, Some(1.2), true);
    distances_case(&be, "staged uniform f64", &p, None, 2, &q);
    distances_case(
        &be,
        "staged queries f64",
        &p,
        Some(&qs),
        2,
        &KnnParams::new(8),
    );
    let p32 = uniform::<f32>(n, 3, 1000.0, 93);
    distances_case(
        &be,
        "staged uniform f32 3-D",
        &p32,
        None,
        3,
        &KnnParams::new(16),
    );
}

/// The device build is a counting sort: every point stored once, cells contiguous, each point
/// inside its cell's slab ranges (uniform) or pyramid boxes (Morton), the plan consistent.
#[test]
fn cuda_grid_build_is_a_consistent_counting_sort() {
    let Some(be) = gpu() else { return };
    let Backend::Cuda(g) = &be else { return };
    for dim in [2usize, 3] {
        for (label, pts) in [
            ("uniform", uniform::<f64>(5000, dim, 30.0, 61)),
            ("clustered", clustered::<f64>(5000, dim, 62)),
            ("lattice", lattice::<f64>(5000, dim, 7, 63)),
            ("one point", vec![1.5; dim]),
            ("empty", vec![]),
        ] {
            let n = pts.len() / dim;
            for index in [DeviceIndex::Uniform, DeviceIndex::Morton { max_leaf: 16 }] {
                let what = format!("{label} dim {dim} {index:?}");
                let mut grid = DeviceGrid::<f64>::new(g, n, dim, index).unwrap();
                let dp = g
                    .stream()
                    .clone_htod(&if pts.is_empty() {
                        vec![0.0]
                    } else {
                        pts.clone()
                    })
                    .unwrap();
                // Build twice: the second build must not see the first one's accumulators.
                grid.build(g, &dp).unwrap();
                grid.build(g, &dp).unwrap();
                let plan = grid.plan(g).unwrap();
                let (starts, sp, ids) = grid.storage(g).unwrap();
                let (slo, shi) = grid.slabs(g).unwrap();
                assert_eq!(plan.ncells, plan.dims.iter().product::<u32>(), "{what}");
                assert!(plan.ncells as usize <= (4 * n).max(64), "{what}: {plan:?}");
                assert_eq!(starts[0], 0, "{what}");
                assert_eq!(*starts.last().unwrap() as usize, n, "{what}");
                assert!(starts.windows(2).all(|w| w[0] <= w[1]), "{what}");
                let mut seen = vec![false; n];
                for (slot, &i) in ids.iter().enumerate() {
                    assert!(!seen[i as usize], "{what}: point {i} stored twice");
                    seen[i as usize] = true;
                    assert_eq!(
                        &sp[slot * dim..(slot + 1) * dim],
                        &pts[i as usize * dim..(i as usize + 1) * dim]
                    );
                }
                let morton = matches!(index, DeviceIndex::Morton { .. });
                if morton {
                    assert!(
                        plan.dims[..dim].iter().all(|&d| d == 1 << plan.levels),
                        "{what}"
                    );
                }
                for c in 0..plan.ncells as usize {
                    // Cell coordinates: x fastest (uniform) or bit-interleaved (Morton).
                    let mut cc = [0usize; 3];
                    if morton {
                        for b in 0..plan.levels as usize {
                            for a in 0..dim {
                                cc[a] |= ((c >> (b * dim + a)) & 1) << b;
                            }
                        }
                    } else {
                        cc = [
                            c % plan.dims[0] as usize,
                            (c / plan.dims[0] as usize) % plan.dims[1] as usize,
                            c / (plan.dims[0] * plan.dims[1]) as usize,
                        ];
                    }
                    for slot in starts[c] as usize..starts[c + 1] as usize {
                        let p = &sp[slot * dim..(slot + 1) * dim];
                        for a in 0..dim {
                            // Every level of the pyramid (Morton) or the slab (uniform) holds p.
                            let levels = if morton { plan.levels as usize + 1 } else { 1 };
                            for l in 0..levels {
                                let e = if morton {
                                    plan.slab_off[a] as usize + (1 << l) - 1
                                        + (cc[a] >> (plan.levels as usize - l))
                                } else {
                                    plan.slab_off[a] as usize + cc[a]
                                };
                                assert!(
                                    slo[e] <= p[a] && p[a] <= shi[e],
                                    "{what}: cell {c} slot {slot} axis {a} level {l}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Throughput (prints, asserts only that the kernels agree): 7-NN of 2^20 uniform 2-D f32
/// points, self-excluded, device-resident build + search.
#[test]
fn cuda_knn_throughput() {
    let Some(be) = gpu() else { return };
    let Backend::Cuda(g) = &be else { return };
    let n = 1usize << 20;
    let pts = uniform::<f32>(n, 2, 1.0, 41);
    let k = 7;
    let to_nb = |i: Vec<i64>, d: Vec<f32>| Neighbors {
        k,
        indices: i,
        dist2: d.into_iter().map(f64::from).collect(),
    };
    let mut rows = Vec::new();
    for index in [DeviceIndex::Uniform, DeviceIndex::Morton { max_leaf: 16 }] {
        let (times, (i, d, _)) = bench_device(g, &pts, 2, k, index, 2, 5).unwrap();
        let mut b: Vec<f32> = times.iter().map(|t| t.build_ms).collect();
        let mut q: Vec<f32> = times.iter().map(|t| t.query_ms).collect();
        b.sort_by(f32::total_cmp);
        q.sort_by(f32::total_cmp);
        eprintln!(
            "{index:?}: N = {n}; build {:.3} ms, search {:.3} ms (medians of 5)",
            b[2], q[2]
        );
        rows.push(to_nb(i, d));
    }
    let t = Instant::now();
    let (bi, bd, bms) = knn_brute(g, &pts, &pts, 2, k, None, true).unwrap();
    eprintln!(
        "brute: N = {n}; call {:.1} ms (kernel {:.2} ms): {:.3e} pairs/s",
        t.elapsed().as_secs_f64() * 1e3,
        bms,
        (n as f64) * (n as f64) / (f64::from(bms) * 1e-3)
    );
    let brute = to_nb(bi, bd);
    assert_same("throughput: uniform grid vs brute kernel", &brute, &rows[0]);
    assert_same("throughput: Morton tree vs brute kernel", &brute, &rows[1]);
    let q = KnnParams {
        k,
        radius: None,
        exclude_self: true,
        index: IndexKind::Auto,
    };
    let t = Instant::now();
    let via = knn(
        &be,
        &pts,
        None,
        2,
        &q.with_index(IndexKind::Uniform { cell_size: None }),
    )
    .unwrap();
    eprintln!(
        "knn(Uniform) end to end: {:.1} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
    assert_same("throughput: knn vs brute kernel", &brute, &via);
}
