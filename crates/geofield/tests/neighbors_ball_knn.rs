//! k nearest neighbours in any space (`ball::knn_in`: Manhattan, Chebyshev, periodic boxes, k
//! up to 65,536) on CUDA against the CPU, which `neighbors_ball.rs` checks against an exact
//! integer oracle. The device's rows must equal the CPU's bit for bit (same candidates, same
//! keys (value, index), same selection), for k kept on the device (≤ 64) and for k selected on
//! the host, with clustered points (queries that need several rounds of the growing radius),
//! lattice points (ties at equal distance, broken by index), radius caps, self-exclusion and
//! separate queries.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use geofield::Backend;
use geofield::neighbors::ball::{self, Metric, Space};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

const METRICS: [Metric; 3] = [Metric::Euclidean, Metric::Manhattan, Metric::Chebyshev];

/// Points in a few tight clusters plus a sparse background, inside [0, side)^dim.
fn clustered(n: usize, dim: usize, side: f64, rng: &mut Pcg64) -> Vec<f64> {
    let centres: Vec<f64> = (0..5 * dim).map(|_| rng.random::<f64>() * side).collect();
    let mut v = Vec::with_capacity(n * dim);
    for i in 0..n {
        let c = i % 6;
        for a in 0..dim {
            let x = if c == 5 {
                rng.random::<f64>() * side
            } else {
                (centres[c * dim + a] + (rng.random::<f64>() - 0.5) * 0.02 * side).rem_euclid(side)
            };
            v.push(x.min(side * (1.0 - f64::EPSILON)));
        }
    }
    v
}

#[test]
fn cuda_knn_in_matches_cpu() {
    let Some(g) = geofield_cuda::test_gpu() else {
        return;
    };
    let gpu = Backend::Cuda(g);
    let mut rng = Pcg64::seed_from_u64(2026);
    for (dim, periodic) in [(2usize, false), (2, true), (3, false), (3, true)] {
        let side = 100.0;
        let sets: [(&str, Vec<f64>); 3] = [
            (
                "uniform",
                (0..20_000 * dim)
                    .map(|_| rng.random::<f64>() * side)
                    .collect(),
            ),
            ("clustered", clustered(20_000, dim, side, &mut rng)),
            (
                "lattice",
                (0..8_000 * dim)
                    .map(|_| f64::from(rng.random_range(0..100u32)))
                    .collect(),
            ),
        ];
        let qs: Vec<f64> = (0..3_000 * dim)
            .map(|_| rng.random::<f64>() * 120.0 - 10.0)
            .collect();
        for m in METRICS {
            let space = Space {
                metric: m,
                boxsize: periodic.then(|| vec![side; dim]),
            };
            for (name, pts) in &sets {
                for (k, cap) in [
                    (1usize, None),
                    (16, None),
                    (64, Some(6.0)),
                    (65, None),
                    (300, None),
                    (1024, Some(20.0)),
                ] {
                    for (q, ex) in [(None, true), (Some(&qs[..]), false), (None, false)] {
                        let run = |be: &Backend| {
                            ball::knn_in(be, pts, q, dim, k, &space, ex, cap, -1).unwrap()
                        };
                        let a = run(&Backend::Cpu);
                        let b = run(&gpu);
                        let what = format!(
                            "{name} {dim}-D periodic {periodic} {m:?} k {k} cap {cap:?} queries {} exclude {ex}",
                            q.is_some()
                        );
                        assert_eq!(a.indices, b.indices, "{what}");
                        let same = a
                            .dist
                            .iter()
                            .zip(&b.dist)
                            .all(|(x, y)| x.to_bits() == y.to_bits());
                        assert!(same, "{what}: distances differ");
                    }
                }
            }
        }
    }
    // More neighbours than points: every point, then missing entries.
    let pts: Vec<f64> = (0..2 * 50).map(|_| rng.random::<f64>()).collect();
    let space = Space {
        metric: Metric::Manhattan,
        boxsize: None,
    };
    let a = ball::knn_in(&Backend::Cpu, &pts, None, 2, 80, &space, true, None, 50).unwrap();
    let b = ball::knn_in(&gpu, &pts, None, 2, 80, &space, true, None, 50).unwrap();
    assert_eq!(a, b);
    assert_eq!(
        b.indices.iter().filter(|&&i| i == 50).count(),
        50 * (80 - 49)
    );
}
