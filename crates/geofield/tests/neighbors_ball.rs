//! Radius queries, pair enumeration and counts, and k-NN in any space against independent
//! oracles: exact integer arithmetic on lattice points (every distance exact, many exactly at
//! r, so the inclusive boundary is exercised) and brute force in f64 on random points; the CUDA
//! path against the CPU's (Ripley's K too). Ripley's K against its definition:
//! `neighbors_ripley.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use geofield::neighbors::ball::{
    self, BallParams, Metric, Order, Space, count_pairs, count_pairs_weighted, pairs, within,
};
use geofield::neighbors::ripley::{self, Correction, Window};
use geofield::{Backend, GeofieldError};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

fn lattice_points(n: usize, dim: usize, side: i64, seed: u64) -> Vec<i64> {
    let mut rng = Pcg64::seed_from_u64(seed);
    (0..n * dim).map(|_| rng.random_range(0..side)).collect()
}

/// The metric's value between integer points, exactly (periodic axes: nearest image).
fn int_value(m: Metric, period: &[i64], q: &[i64], p: &[i64]) -> i64 {
    let mut v = 0i64;
    for a in 0..q.len() {
        let mut d = (p[a] - q[a]).abs();
        if period[a] > 0 && 2 * d > period[a] {
            d = period[a] - d;
        }
        v = match m {
            Metric::Euclidean => v + d * d,
            Metric::Manhattan => v + d,
            Metric::Chebyshev => v.max(d),
        };
    }
    v
}

fn int_threshold(m: Metric, r: i64) -> i64 {
    if m == Metric::Euclidean { r * r } else { r }
}

const METRICS: [Metric; 3] = [Metric::Euclidean, Metric::Manhattan, Metric::Chebyshev];

#[test]
fn within_matches_exact_integer_oracle() {
    for dim in [2usize, 3] {
        for periodic in [false, true] {
            for m in METRICS {
                let side = 40i64;
                let n = 700;
                let pts = lattice_points(n, dim, side, 7 + dim as u64);
                let qs = lattice_points(90, dim, if periodic { side } else { 60 }, 11);
                let period: Vec<i64> = if periodic {
                    // One open axis in 3-D: mixed boxes are allowed.
                    (0..dim)
                        .map(|a| if dim == 3 && a == 1 { 0 } else { side })
                        .collect()
                } else {
                    vec![0; dim]
                };
                let space = Space {
                    metric: m,
                    boxsize: periodic.then(|| period.iter().map(|&l| l as f64).collect()),
                };
                for r in [0i64, 3, 7, 25] {
                    let fp: Vec<f64> = pts.iter().map(|&v| v as f64).collect();
                    let fq: Vec<f64> = qs.iter().map(|&v| v as f64).collect();
                    let params = BallParams {
                        radius: r as f64,
                        space: space.clone(),
                        order: Order::Distance,
                        exclude_self: false,
                    };
                    let b = within(&Backend::Cpu, &fp, Some(&fq), dim, &params).unwrap();
                    assert_eq!(b.queries(), 90);
                    let t = int_threshold(m, r);
                    for qi in 0..90 {
                        let q = &qs[qi * dim..(qi + 1) * dim];
                        let mut want: Vec<(i64, u32)> = (0..n)
                            .filter_map(|j| {
                                let v = int_value(m, &period, q, &pts[j * dim..(j + 1) * dim]);
                                (v <= t).then_some((v, j as u32))
                            })
                            .collect();
                        want.sort();
                        let (idx, dist) = b.row(qi);
                        let got: Vec<u32> = idx.to_vec();
                        let want_idx: Vec<u32> = want.iter().map(|w| w.1).collect();
                        assert_eq!(
                            got, want_idx,
                            "dim {dim} periodic {periodic} {m:?} r {r} q {qi}"
                        );
                        for (d, w) in dist.iter().zip(&want) {
                            let exact = if m == Metric::Euclidean {
                                (w.0 as f64).sqrt()
                            } else {
                                w.0 as f64
                            };
                            assert_eq!(*d, exact);
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn orders_self_exclusion_and_threads() {
    let mut rng = Pcg64::seed_from_u64(3);
    let pts: Vec<f64> = (0..3000 * 2).map(|_| rng.random::<f64>() * 100.0).collect();
    let base = BallParams::new(4.0);
    let by_dist = within(&Backend::Cpu, &pts, None, 2, &base).unwrap();
    let by_index = within(
        &Backend::Cpu,
        &pts,
        None,
        2,
        &BallParams {
            order: Order::Index,
            ..base.clone()
        },
    )
    .unwrap();
    let unsorted = within(
        &Backend::Cpu,
        &pts,
        None,
        2,
        &BallParams {
            order: Order::Unsorted,
            ..base.clone()
        },
    )
    .unwrap();
    let no_self = within(
        &Backend::Cpu,
        &pts,
        None,
        2,
        &BallParams {
            exclude_self: true,
            ..base.clone()
        },
    )
    .unwrap();
    assert_eq!(by_dist.offsets, by_index.offsets);
    let counts = ball::within_counts(&Backend::Cpu, &pts, None, 2, &base).unwrap();
    assert!(
        counts
            .iter()
            .zip(by_dist.offsets.windows(2))
            .all(|(&c, w)| c == w[1] - w[0])
    );
    for i in 0..3000 {
        let (a, da) = by_dist.row(i);
        let (b, _) = by_index.row(i);
        let (c, _) = unsorted.row(i);
        let (e, de) = no_self.row(i);
        // Distance order: non-decreasing, ties by index; the point itself first (d = 0).
        assert_eq!(a[0], i as u32);
        assert!(
            da.windows(2)
                .zip(a.windows(2))
                .all(|(d, j)| d[0] < d[1] || (d[0] == d[1] && j[0] < j[1]))
        );
        assert!(b.windows(2).all(|w| w[0] < w[1]));
        let mut s = a.to_vec();
        s.sort();
        assert_eq!(s, b);
        let mut s = c.to_vec();
        s.sort();
        assert_eq!(s, b);
        assert_eq!(e, &a[1..]);
        assert_eq!(de, &da[1..]);
        // Brute force in f64, the module's formula.
        let q = &pts[2 * i..2 * i + 2];
        let want: Vec<u32> = (0..3000u32)
            .filter(|&j| {
                let (dx, dy) = (pts[2 * j as usize] - q[0], pts[2 * j as usize + 1] - q[1]);
                dx * dx + dy * dy <= 16.0
            })
            .collect();
        assert_eq!(b, want.as_slice());
    }
    // The same rows, bit for bit, on one thread.
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap()
        .install(|| {
            within(
                &Backend::Cpu,
                &pts,
                None,
                2,
                &BallParams {
                    order: Order::Unsorted,
                    ..base.clone()
                },
            )
            .unwrap()
        });
    assert_eq!(one, unsorted);
}

#[test]
fn pairs_and_counts_match_brute_force() {
    for (dim, periodic) in [(2usize, false), (2, true), (3, false), (3, true)] {
        let pts = lattice_points(500, dim, 30, 5 + dim as u64);
        let oth = lattice_points(300, dim, 30, 9);
        let period: Vec<i64> = vec![if periodic { 30 } else { 0 }; dim];
        for m in METRICS {
            let space = Space {
                metric: m,
                boxsize: periodic.then(|| vec![30.0; dim]),
            };
            let fp: Vec<f64> = pts.iter().map(|&v| v as f64).collect();
            let fo: Vec<f64> = oth.iter().map(|&v| v as f64).collect();
            let got = pairs(&Backend::Cpu, &fp, dim, 4.0, &space).unwrap();
            let mut want = Vec::new();
            for i in 0..500 {
                for j in i + 1..500 {
                    let v = int_value(
                        m,
                        &period,
                        &pts[i * dim..(i + 1) * dim],
                        &pts[j * dim..(j + 1) * dim],
                    );
                    if v <= int_threshold(m, 4) {
                        want.push([i as u32, j as u32]);
                    }
                }
            }
            assert_eq!(got, want, "dim {dim} periodic {periodic} {m:?}");

            // count_neighbors: ordered pairs, radii in any order (cumulative), bins.
            let radii = [5.0, 0.0, 2.0, 9.0, -1.0];
            let wa: Vec<f64> = (0..500).map(|i| 0.5 + (i % 7) as f64 * 0.25).collect();
            let wb: Vec<f64> = (0..300).map(|i| 1.0 - (i % 5) as f64 * 0.125).collect();
            let c = count_pairs(&Backend::Cpu, &fp, Some(&fo), dim, &radii, &space, true).unwrap();
            let cw = count_pairs_weighted(
                &Backend::Cpu,
                &fp,
                Some(&fo),
                dim,
                &radii,
                &space,
                (Some(&wa), Some(&wb)),
                true,
            )
            .unwrap();
            for (k, &r) in radii.iter().enumerate() {
                let (mut n, mut w) = (0u64, 0.0f64);
                for i in 0..500 {
                    for j in 0..300 {
                        let v = int_value(
                            m,
                            &period,
                            &pts[i * dim..(i + 1) * dim],
                            &oth[j * dim..(j + 1) * dim],
                        );
                        if r >= 0.0 && v <= int_threshold(m, r as i64) {
                            n += 1;
                            w += wa[i] * wb[j];
                        }
                    }
                }
                assert_eq!(c[k], n, "{m:?} r {r}");
                // The weights are multiples of 1/32: every product and sum is exact in both.
                assert_eq!(cw[k], w, "{m:?} r {r}");
            }
            let edges = [0.0, 2.0, 5.0, 9.0];
            let cum = count_pairs(&Backend::Cpu, &fp, None, dim, &edges, &space, true).unwrap();
            let bins = count_pairs(&Backend::Cpu, &fp, None, dim, &edges, &space, false).unwrap();
            // The points against themselves include each point with itself.
            assert_eq!(cum[0] as usize, {
                let mut same = 0;
                for i in 0..500 {
                    for j in 0..500 {
                        if pts[i * dim..(i + 1) * dim] == pts[j * dim..(j + 1) * dim] {
                            same += 1;
                        }
                    }
                }
                same
            });
            assert_eq!(bins[0], cum[0]);
            for k in 1..4 {
                assert_eq!(bins[k], cum[k] - cum[k - 1]);
            }
            let n_pairs = |r| pairs(&Backend::Cpu, &fp, dim, r, &space).unwrap().len() as u64;
            assert_eq!(cum[3], 500 + 2 * n_pairs(9.0));
            assert_eq!(cum[0], 500 + 2 * n_pairs(0.0));
        }
    }
}

#[test]
fn bad_inputs_are_refused() {
    let pts = [0.0, 0.0, 1.0, 1.0];
    let e = |r: Result<ball::Ball, GeofieldError>| r.unwrap_err().to_string();
    let p = |radius: f64, boxsize: Option<Vec<f64>>| BallParams {
        radius,
        space: Space {
            metric: Metric::Euclidean,
            boxsize,
        },
        ..BallParams::new(1.0)
    };
    assert!(e(within(&Backend::Cpu, &pts[..], None, 2, &p(-1.0, None))).contains("radius"));
    assert!(e(within(&Backend::Cpu, &pts[..], None, 2, &p(f64::NAN, None))).contains("radius"));
    assert!(
        e(within(
            &Backend::Cpu,
            &pts[..],
            None,
            2,
            &p(1.0, Some(vec![1.0, 5.0]))
        ))
        .contains("point 1 is outside the periodic box (axis 0")
    );
    assert!(
        e(within(
            &Backend::Cpu,
            &pts[..],
            None,
            2,
            &p(1.0, Some(vec![5.0]))
        ))
        .contains("boxsize has 1 lengths")
    );
    assert!(
        e(within(
            &Backend::Cpu,
            &[0.0, f64::NAN][..],
            None,
            2,
            &p(1.0, None)
        ))
        .contains("non-finite")
    );
    assert!(
        Metric::from_p(3.0)
            .unwrap_err()
            .to_string()
            .contains("p = 3")
    );
    assert!(
        count_pairs(
            &Backend::Cpu,
            &pts[..],
            None,
            2,
            &[2.0, 1.0],
            &Space::default(),
            false
        )
        .is_err()
    );
    let w = Window {
        x0: 0.0,
        y0: 0.0,
        x1: 0.5,
        y1: 2.0,
    };
    assert!(
        ripley::ripley_k(
            &Backend::Cpu,
            &pts[..],
            &w,
            &[0.0, 1.0],
            &[Correction::Border]
        )
        .unwrap_err()
        .to_string()
        .contains("point 1 (1, 1) is outside the window")
    );
    // Queries are wrapped into the box, not refused: -1 is 9 in a box of 10.
    let b = within(
        &Backend::Cpu,
        &[9.0, 0.0][..],
        Some(&[-1.0, 0.0][..]),
        2,
        &p(0.0, Some(vec![10.0, 0.0])),
    )
    .unwrap();
    assert_eq!(b.indices, vec![0]);
}

#[test]
fn knn_in_any_space_matches_exact_oracle() {
    for (dim, periodic) in [(2usize, false), (2, true), (3, true), (3, false)] {
        let pts = lattice_points(1500, dim, 50, 21 + dim as u64);
        let qs = lattice_points(60, dim, 50, 23);
        let period = vec![if periodic { 50 } else { 0 }; dim];
        let fp: Vec<f64> = pts.iter().map(|&v| v as f64).collect();
        let fq: Vec<f64> = qs.iter().map(|&v| v as f64).collect();
        for m in METRICS {
            let space = Space {
                metric: m,
                boxsize: periodic.then(|| vec![50.0; dim]),
            };
            for (k, cap) in [
                (1usize, None),
                (7, None),
                (200, Some(9.0)),
                (1024, None),
                (1600, None),
            ] {
                let nb = ball::knn_in(
                    &Backend::Cpu,
                    &fp,
                    Some(&fq),
                    dim,
                    k,
                    &space,
                    false,
                    cap,
                    -7,
                )
                .unwrap();
                for qi in 0..60 {
                    let q = &qs[qi * dim..(qi + 1) * dim];
                    let mut all: Vec<(i64, usize)> = (0..1500)
                        .map(|j| (int_value(m, &period, q, &pts[j * dim..(j + 1) * dim]), j))
                        .filter(|&(v, _)| cap.is_none_or(|c| v <= int_threshold(m, c as i64)))
                        .collect();
                    all.sort();
                    all.truncate(k);
                    let row = &nb.indices[qi * k..(qi + 1) * k];
                    let drow = &nb.dist[qi * k..(qi + 1) * k];
                    for s in 0..k {
                        match all.get(s) {
                            Some(&(v, j)) => {
                                assert_eq!(row[s], j as i64, "{dim} {periodic} {m:?} k {k} q {qi}");
                                let d = if m == Metric::Euclidean {
                                    (v as f64).sqrt()
                                } else {
                                    v as f64
                                };
                                assert_eq!(drow[s], d);
                            }
                            None => assert_eq!((row[s], drow[s]), (-7, f64::INFINITY)),
                        }
                    }
                }
            }
        }
    }
    // Euclidean, open axes, f64: the same bits as the k-NN search's distance rows.
    let mut rng = Pcg64::seed_from_u64(8);
    let pts: Vec<f64> = (0..3 * 4000).map(|_| rng.random::<f64>() * 10.0).collect();
    let a = ball::knn_in(
        &Backend::Cpu,
        &pts,
        None,
        3,
        9,
        &Space::default(),
        true,
        None,
        -1,
    )
    .unwrap();
    let b = geofield::neighbors::knn_distances(
        &Backend::Cpu,
        &pts,
        None,
        3,
        &geofield::neighbors::KnnParams::new(9),
        -1,
    )
    .unwrap();
    assert_eq!(a, b);
}

/// The CUDA path against the CPU's (skips with a notice without a GPU; fails under
/// `GEOFIELD_REQUIRE_GPU=1`): rows in every order, pairs, counts and fixed-point sums bit for
/// bit; Ripley's K bit for bit but for the isotropic estimate, whose weights use the device's
/// acos (within 1 ulp of the host's: the sums agree to a few ulps, 1e-13 relative bounds it).
#[test]
fn cuda_matches_cpu() {
    let Some(g) = geofield_cuda::test_gpu() else {
        return;
    };
    let gpu = Backend::Cuda(g);
    let mut rng = Pcg64::seed_from_u64(77);
    for (dim, periodic) in [(2usize, false), (2, true), (3, false), (3, true)] {
        let n = 40_000;
        let pts: Vec<f64> = (0..n * dim).map(|_| rng.random::<f64>() * 100.0).collect();
        let qs: Vec<f64> = (0..5000 * dim)
            .map(|_| rng.random::<f64>() * 120.0 - 10.0)
            .collect();
        let lat: Vec<f64> = lattice_points(20_000, dim, 100, 3)
            .iter()
            .map(|&v| v as f64)
            .collect();
        for m in METRICS {
            let space = Space {
                metric: m,
                boxsize: periodic.then(|| vec![100.0; dim]),
            };
            for order in [Order::Distance, Order::Index, Order::Unsorted] {
                for (p, q, ex) in [
                    (&pts, Some(&qs), false),
                    (&pts, None, true),
                    (&lat, None, false),
                ] {
                    let params = BallParams {
                        radius: 3.0,
                        space: space.clone(),
                        order,
                        exclude_self: ex,
                    };
                    let a = within(&Backend::Cpu, p, q.map(|v| &v[..]), dim, &params).unwrap();
                    let b = within(&gpu, p, q.map(|v| &v[..]), dim, &params).unwrap();
                    assert_eq!(a, b, "within {dim} {periodic} {m:?} {order:?}");
                    let c = ball::within_counts(&gpu, p, q.map(|v| &v[..]), dim, &params).unwrap();
                    assert!(
                        c.iter()
                            .zip(a.offsets.windows(2))
                            .all(|(&c, w)| c == w[1] - w[0])
                    );
                }
            }
            let a = pairs(&Backend::Cpu, &lat, dim, 4.0, &space).unwrap();
            assert_eq!(a, pairs(&gpu, &lat, dim, 4.0, &space).unwrap());
            let radii = [0.0, 1.0, 2.5, 4.0, 6.0];
            for others in [None, Some(&pts[..3000 * dim])] {
                let a =
                    count_pairs(&Backend::Cpu, &lat, others, dim, &radii, &space, true).unwrap();
                let b = count_pairs(&gpu, &lat, others, dim, &radii, &space, true).unwrap();
                assert_eq!(a, b);
                let w1: Vec<f64> = (0..20_000).map(|i| 1.0 + (i % 13) as f64 * 0.37).collect();
                let w2: Vec<f64> = (0..others.map_or(20_000, |o| o.len() / dim))
                    .map(|i| 0.3 + (i % 7) as f64 * 0.91)
                    .collect();
                let args = |be: &Backend| {
                    count_pairs_weighted(
                        be,
                        &lat,
                        others,
                        dim,
                        &radii,
                        &space,
                        (Some(&w1), Some(&w2)),
                        false,
                    )
                    .unwrap()
                };
                assert_eq!(args(&Backend::Cpu), args(&gpu));
            }
        }
    }
    // Bins beyond the device's shared memory (global atomics).
    let many: Vec<f64> = (0..3000).map(|i| i as f64 * 0.002).collect();
    let pts: Vec<f64> = (0..2 * 30_000)
        .map(|_| rng.random::<f64>() * 100.0)
        .collect();
    let a = count_pairs(&Backend::Cpu, &pts, None, 2, &many, &Space::default(), true).unwrap();
    assert_eq!(
        a,
        count_pairs(&gpu, &pts, None, 2, &many, &Space::default(), true).unwrap()
    );

    let w = Window {
        x0: 0.0,
        y0: 0.0,
        x1: 100.0,
        y1: 100.0,
    };
    let all = [
        Correction::None,
        Correction::Border,
        Correction::Translate,
        Correction::Isotropic,
    ];
    let p2: Vec<f64> = (0..60_000).map(|_| rng.random::<f64>() * 100.0).collect();
    for radii in [
        ripley::default_radii(30_000, &w),
        (0..800).map(|i| i as f64 * 0.01).collect(),
    ] {
        let a = ripley::ripley_k(&Backend::Cpu, &p2, &w, &radii, &all).unwrap();
        let b = ripley::ripley_k(&gpu, &p2, &w, &radii, &all).unwrap();
        assert_eq!(a.none, b.none);
        assert_eq!(a.border, b.border);
        assert_eq!(a.translate, b.translate);
        for (x, y) in a.isotropic.unwrap().iter().zip(b.isotropic.unwrap()) {
            assert!(
                (x - y).abs() <= 1e-13 * x.abs() || (x.is_nan() && y.is_nan()),
                "{x} vs {y}"
            );
        }
    }
}
