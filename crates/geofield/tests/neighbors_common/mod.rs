//! Shared helpers of the kNN backend tests: point sets, row comparison with the first difference
//! printed, and one case run against the CPU reference.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::needless_range_loop,
    dead_code
)]

use geofield::Backend;
use geofield::neighbors::{Coord, IndexKind, KnnParams, Neighbors, knn, knn_distances};
use std::time::Instant;

use geofield_cuda::neighbors::GpuCoord;

use crate::backends::Rng;

pub fn uniform<T: Coord>(n: usize, dim: usize, scale: f64, seed: u64) -> Vec<T> {
    let mut r = Rng::new(seed);
    (0..n * dim)
        .map(|_| T::from_f64(r.unit() * scale))
        .collect()
}

/// A few tight clusters (spread 1e-3 of the box) plus 5 % background.
pub fn clustered<T: Coord>(n: usize, dim: usize, seed: u64) -> Vec<T> {
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
pub fn lattice<T: Coord>(n: usize, dim: usize, m: u64, seed: u64) -> Vec<T> {
    let mut r = Rng::new(seed);
    (0..n * dim)
        .map(|_| T::from_f64((r.next_u64() % m) as f64))
        .collect()
}

pub fn fmt_row(nb: &Neighbors, i: usize) -> String {
    let (ix, d) = nb.row(i);
    ix.iter()
        .zip(d)
        .map(|(i, d)| format!("({i}, {d:e} [{:016x}])", d.to_bits()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Panics with a clear report unless `got` equals `want` exactly (indices, d² bits, NaN pads).
pub fn assert_same(label: &str, want: &Neighbors, got: &Neighbors) {
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
pub fn assert_well_formed(
    label: &str,
    nb: &Neighbors,
    n: usize,
    radius: Option<f64>,
    skip_self: bool,
) {
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
pub fn case<T: Coord + GpuCoord>(
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

/// `knn_distances` against `knn` on the same backend (each distance the f64 square root of the
/// squared distance, missing entries index `missing` and +inf; an independent derivation of
/// the form) and against the CPU's `knn_distances` (bit for bit).
pub fn distances_case<T: Coord + GpuCoord>(
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
