//! kNN on every backend against the CPU: identical indices and identical d² bits, row by row.
//!
//! Each test body runs on the CPU and, with a GPU, on CUDA (`backends::for_each_backend`: the
//! CUDA run skips with a notice without a GPU, fails with `GEOFIELD_REQUIRE_GPU=1`); the sets too
//! large for the CPU's brute force and the device-only checks run on CUDA alone. On the GPU:
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

use std::time::Instant;

use geofield::Backend;
use geofield::neighbors::{Coord, IndexKind, KnnParams, Neighbors, knn, knn_distances};
use geofield_cuda::neighbors::{DeviceGrid, DeviceIndex, GpuCoord, bench_device, knn_brute};

mod backends;
use backends::{Rng, for_each_backend, gpu};

fn uniform<T: Coord>(n: usize, dim: usize, scale: f64, seed: u64) -> Vec<T> {
    let mut r = Rng::new(seed);
    (0..n * dim)
        .map(|_| T::from_f64(r.unit() * scale))
        .collect()
}

/// A few tight clusters (spread 1e-3 of the box) plus 5 % background.
fn clustered<T: Coord>(n: usize, dim: usize, seed: u64) -> Vec<T> {
    let mut r = Rng::new(seed);
    let centres: Vec<f64> = (0..8 * dim).map(|_| r.unit() * 100.0).collect();
    let mut v = Vec::with_capacity(n * dim);
    for _ in 0..n {
        let bg = r.unit() < 0.05;
        let c = (r.next_u64() % 8) as usize;
        for a in 0..dim {
            let x = if bg {
                r.unit() * 100.0
            } else {
                centres[c * dim + a] + (r.unit() - 0.5) * 0.1
            };
            v.push(T::from_f64(x));
        }
    }
    v
}

/// Integer lattice 0..m per axis: many exact duplicates and equal distances.
fn lattice<T: Coord>(n: usize, dim: usize, m: u64, seed: u64) -> Vec<T> {
    let mut r = Rng::new(seed);
    (0..n * dim)
        .map(|_| T::from_f64((r.next_u64() % m) as f64))
        .collect()
}

fn fmt_row(nb: &Neighbors, i: usize) -> String {
    let (ix, d) = nb.row(i);
    ix.iter()
        .zip(d)
        .map(|(i, d)| format!("({i}, {d:e} [{:016x}])", d.to_bits()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Panics with a clear report unless `got` equals `want` exactly (indices, d² bits, NaN pads).
fn assert_same(label: &str, want: &Neighbors, got: &Neighbors) {
    assert_eq!(want.k, got.k, "{label}: k differs");
    assert_eq!(
        want.indices.len(),
        got.indices.len(),
        "{label}: {} vs {} entries",
        want.indices.len(),
        got.indices.len()
    );
    let same = |a: f64, b: f64| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
    let k = want.k;
    let mut bad = Vec::new();
    for q in 0..want.queries() {
        let r = q * k..(q + 1) * k;
        let ok = want.indices[r.clone()] == got.indices[r.clone()]
            && want.dist2[r.clone()]
                .iter()
                .zip(&got.dist2[r])
                .all(|(&a, &b)| same(a, b));
        if !ok {
            bad.push(q);
        }
    }
    if let Some(&q) = bad.first() {
        panic!(
            "{label}: {} of {} rows differ; first differing query {q}:\n  cpu: {}\n  gpu: {}",
            bad.len(),
            want.queries(),
            fmt_row(want, q),
            fmt_row(got, q)
        );
    }
}

/// Checks that the rows obey the semantics (sorted keys, radius, self-exclusion, padding).
fn assert_well_formed(label: &str, nb: &Neighbors, n: usize, radius: Option<f64>, skip_self: bool) {
    let k = nb.k;
    for q in 0..nb.queries() {
        let (ix, d) = nb.row(q);
        let len = ix.iter().take_while(|&&i| i >= 0).count();
        assert!(
            ix[len..].iter().all(|&i| i == -1) && d[len..].iter().all(|x| x.is_nan()),
            "{label}: query {q}: bad padding: {}",
            fmt_row(nb, q)
        );
        if radius.is_none() {
            let avail = if skip_self { n.saturating_sub(1) } else { n };
            assert_eq!(len, k.min(avail), "{label}: query {q}: row too short");
        }
        for j in 0..len {
            assert!(
                (ix[j] as usize) < n,
                "{label}: query {q}: index out of range"
            );
            assert!(
                !(skip_self && ix[j] as usize == q),
                "{label}: query {q}: itself"
            );
            if j > 0 {
                assert!(
                    (d[j - 1], ix[j - 1]) < (d[j], ix[j]),
                    "{label}: query {q}: row not sorted: {}",
                    fmt_row(nb, q)
                );
            }
        }
    }
}

/// One case: CPU reference vs the GPU's brute-force and grid kernels (and the other kinds).
#[allow(clippy::too_many_arguments)]
fn case<T: Coord + GpuCoord>(
    be: &Backend,
    label: &str,
    points: &[T],
    queries: Option<&[T]>,
    dim: usize,
    k: usize,
    radius: Option<f64>,
    exclude_self: bool,
) {
    let n = points.len() / dim;
    let nq = queries.map_or(n, |q| q.len() / dim);
    let q = KnnParams {
        k,
        radius,
        exclude_self,
        index: IndexKind::Auto,
    };
    let label = format!(
        "{label} [{} dim={dim} n={n} q={nq} k={k} r={radius:?} excl={exclude_self}]",
        std::any::type_name::<T>()
    );
    let ref_kind = if (n as f64) * (nq as f64) <= 4e8 {
        IndexKind::Brute
    } else {
        IndexKind::Uniform { cell_size: None }
    };
    let want = knn(&Backend::Cpu, points, queries, dim, &q.with_index(ref_kind)).unwrap();
    assert_well_formed(
        &format!("{label} cpu"),
        &want,
        n,
        radius,
        exclude_self && queries.is_none(),
    );
    let mut kinds = vec![
        IndexKind::Uniform { cell_size: None },
        IndexKind::Auto,
        IndexKind::Dynamic { max_per_leaf: 16 },
        IndexKind::Dynamic { max_per_leaf: 1 },
    ];
    if (n as f64) * (nq as f64) <= 5e10 {
        kinds.push(IndexKind::Brute);
    }
    for kind in kinds {
        let t = Instant::now();
        let got = knn(be, points, queries, dim, &q.with_index(kind))
            .unwrap_or_else(|e| panic!("{label} {kind:?}: {e}"));
        assert_same(
            &format!("{label} {} {kind:?} vs cpu {ref_kind:?}", be.label()),
            &want,
            &got,
        );
        if n * nq > 10_000_000 {
            eprintln!(
                "  {label} {kind:?}: ok in {:.3} s",
                t.elapsed().as_secs_f64()
            );
        }
    }
}

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

/// `knn_distances` against `knn` on the same backend (each distance the f64 square root of the
/// squared distance, missing entries index `missing` and +inf; an independent derivation of
/// the form) and against the CPU's `knn_distances` (bit for bit).
fn distances_case<T: Coord + GpuCoord>(
    be: &Backend,
    label: &str,
    points: &[T],
    queries: Option<&[T]>,
    dim: usize,
    q: &KnnParams,
) {
    let n = points.len() / dim;
    let missing = n as i64;
    let nb = knn(be, points, queries, dim, q).unwrap();
    let got = knn_distances(be, points, queries, dim, q, missing).unwrap();
    assert_eq!(got.k, q.k, "{label}: k");
    assert_eq!(got.indices.len(), nb.indices.len(), "{label}: entries");
    assert_eq!(got.dist.len(), nb.dist2.len(), "{label}: entries");
    for (e, ((&i, &d), (&i2, &d2))) in got
        .indices
        .iter()
        .zip(&got.dist)
        .zip(nb.indices.iter().zip(&nb.dist2))
        .enumerate()
    {
        if i2 < 0 {
            assert!(
                i == missing && d == f64::INFINITY,
                "{label}: entry {e}: {i} {d}"
            );
        } else {
            assert!(
                i == i2 && d.to_bits() == d2.sqrt().to_bits(),
                "{label}: entry {e}: ({i}, {d:e}) vs ({i2}, sqrt {d2:e})"
            );
        }
    }
    if !matches!(be, Backend::Cpu) {
        let want = knn_distances(&Backend::Cpu, points, queries, dim, q, missing).unwrap();
        assert_eq!(want.indices, got.indices, "{label}: indices vs the CPU");
        assert!(
            want.dist
                .iter()
                .zip(&got.dist)
                .all(|(a, b)| a.to_bits() == b.to_bits()),
            "{label}: distances vs the CPU"
        );
    }
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
