//! k-NN on points whose coordinates reach ±1e308 (the extent max − min overflows f64 to
//! infinity, and so do squared distances): every index, on every available backend, returns
//! exactly what brute force on the CPU returns (same indices, same d² bits), within a time
//! bound (a build or search that does not terminate fails the test instead of hanging CI).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::mpsc;
use std::time::Duration;

use geofield::Backend;
use geofield::neighbors::{IndexKind, KnnParams, Neighbors, knn};

/// Run `f` on a thread; fail if it takes longer than `secs` (it is then left running, and the
/// test process exits with the failure).
fn within<R: Send + 'static>(secs: u64, what: &str, f: impl FnOnce() -> R + Send + 'static) -> R {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(secs))
        .unwrap_or_else(|_| panic!("{what} did not return within {secs} s"))
}

fn backends() -> Vec<Backend> {
    let mut v = vec![Backend::Cpu];
    if let Some(g) = geofield_cuda::test_gpu() {
        v.push(Backend::Cuda(g));
    }
    v
}

/// Point sets in `dim` dimensions: extremes mixed with ordinary points (SplitMix64 values).
fn cases(dim: usize) -> Vec<Vec<f64>> {
    let mut s = 0x9E37_79B9_7F4A_7C15u64 ^ dim as u64;
    let mut next = move || {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    };
    let big = [1e308, -1e308, f64::MAX, -f64::MAX, 1.7e308, -0.9e308];
    let mut out = Vec::new();
    // Two points at the far ends, the rest ordinary.
    let mut v: Vec<f64> = (0..40 * dim).map(|_| next() * 100.0).collect();
    v[0] = 1e308;
    v[dim] = -1e308;
    out.push(v);
    // Every coordinate extreme or ordinary at random.
    let v: Vec<f64> = (0..60 * dim)
        .map(|_| {
            let u = next();
            if u < 0.5 {
                big[(u * 12.0) as usize % big.len()]
            } else {
                u * 10.0
            }
        })
        .collect();
    out.push(v);
    // Spread over the whole range.
    let v: Vec<f64> = (0..50 * dim)
        .map(|_| (next() * 2.0 - 1.0) * f64::MAX)
        .collect();
    out.push(v);
    out
}

fn same(a: &Neighbors, b: &Neighbors) -> bool {
    a.indices == b.indices
        && a.dist2.len() == b.dist2.len()
        && a.dist2
            .iter()
            .zip(&b.dist2)
            .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
}

#[test]
fn coordinates_near_the_f64_limit_match_brute_force() {
    for dim in [2usize, 3] {
        for (c, pts) in cases(dim).into_iter().enumerate() {
            for k in [1usize, 4] {
                for radius in [None, Some(1e300)] {
                    let q = KnnParams {
                        k,
                        radius,
                        exclude_self: true,
                        index: IndexKind::Auto,
                    };
                    let (p, qq) = (pts.clone(), q);
                    let want = within(20, "brute force", move || {
                        knn(
                            &Backend::Cpu,
                            &p,
                            None,
                            dim,
                            &qq.with_index(IndexKind::Brute),
                        )
                        .unwrap()
                    });
                    for be in backends() {
                        for kind in [
                            IndexKind::Uniform { cell_size: None },
                            IndexKind::Uniform {
                                cell_size: Some(1e307),
                            },
                            IndexKind::Dynamic { max_per_leaf: 4 },
                            IndexKind::Auto,
                        ] {
                            let label = format!(
                                "{dim}-D case {c} k {k} r {radius:?} {kind:?} on {}",
                                be.label()
                            );
                            let (p, qq, be2) = (pts.clone(), q, be.clone());
                            let got = within(20, &label, move || {
                                knn(&be2, &p, None, dim, &qq.with_index(kind))
                            });
                            match got {
                                Ok(got) => {
                                    assert!(same(&got, &want), "{label}: differs from brute force")
                                }
                                Err(e) => panic!("{label}: refused: {e}"),
                            }
                        }
                    }
                }
            }
        }
    }
}
