//! Neighbour search input errors: each bad argument is refused with a message naming it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use geofield::Backend;
use geofield::neighbors::{IndexKind, KnnParams, Neighbors, knn};

fn err_text(r: Result<Neighbors, geofield::GeofieldError>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn input_errors() {
    let pts = [0.0f64, 0.0, 1.0, 1.0, 2.0, 2.0];
    let ok = KnnParams {
        k: 2,
        radius: None,
        exclude_self: true,
        index: IndexKind::Auto,
    };
    let e = err_text(knn(&Backend::Cpu, &pts, None, 2, &KnnParams { k: 0, ..ok }));
    assert!(e.contains("k = 0"), "{e}");
    let e = err_text(knn(
        &Backend::Cpu,
        &pts,
        None,
        2,
        &KnnParams { k: 65, ..ok },
    ));
    assert!(e.contains("k = 65"), "{e}");
    for r in [-1.0, f64::NAN] {
        let q = KnnParams {
            radius: Some(r),
            ..ok
        };
        let e = err_text(knn(&Backend::Cpu, &pts, None, 2, &q));
        assert!(e.contains("radius"), "{e}");
    }
    for dim in [0usize, 1, 4] {
        let e = err_text(knn(
            &Backend::Cpu,
            &pts,
            None,
            dim,
            &ok.with_index(IndexKind::Brute),
        ));
        assert!(e.contains("dim"), "{e}");
    }
    let e = err_text(knn(
        &Backend::Cpu,
        &pts[..5],
        None,
        2,
        &ok.with_index(IndexKind::Brute),
    ));
    assert!(e.contains("multiple of dim"), "{e}");
    let e = err_text(knn(
        &Backend::Cpu,
        &pts,
        Some(&pts[..3]),
        2,
        &ok.with_index(IndexKind::Brute),
    ));
    assert!(e.contains("queries"), "{e}");
    let mut bad = pts;
    bad[5] = f64::NAN;
    let e = err_text(knn(&Backend::Cpu, &bad, None, 2, &ok));
    assert!(e.contains("point 2"), "{e}");
    let bad32 = [0.0f32, 1.0, f32::INFINITY, 0.0, 0.0, 0.0];
    let e = err_text(knn(&Backend::Cpu, &bad32, None, 3, &ok));
    assert!(e.contains("point 0"), "{e}");
    let e = err_text(knn(&Backend::Cpu, &pts, Some(&bad), 2, &ok));
    assert!(e.contains("query 2"), "{e}");
    let e = err_text(knn(
        &Backend::Cpu,
        &pts,
        None,
        2,
        &ok.with_index(IndexKind::Uniform {
            cell_size: Some(0.0),
        }),
    ));
    assert!(e.contains("cell_size"), "{e}");
    let e = err_text(knn(
        &Backend::Cpu,
        &pts,
        None,
        2,
        &ok.with_index(IndexKind::Uniform {
            cell_size: Some(1e-9),
        }),
    ));
    assert!(e.contains("cell_size"), "{e}");
    let e = err_text(knn(
        &Backend::Cpu,
        &pts,
        None,
        2,
        &ok.with_index(IndexKind::Dynamic { max_per_leaf: 0 }),
    ));
    assert!(e.contains("max_per_leaf"), "{e}");
}
