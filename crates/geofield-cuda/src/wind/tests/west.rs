//! WEST sweeps and the divergence check against the host reference.

use super::reference::Grid;
use crate::test_gpu;
use crate::wind::{GpuWest, SweepVariant};

/// (rows, cols, nz): odd sizes, a single row, a single layer, one column.
const SIZES: &[(usize, usize, usize)] = &[
    (1, 7, 5),
    (6, 9, 1),
    (5, 8, 4),
    (1, 1, 3),
    (17, 33, 9),
    (40, 31, 12),
];

fn max_abs_diff(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (f64::from(*x) - f64::from(*y)).abs())
        .fold(0.0, f64::max)
}

fn max_abs(a: &[f32]) -> f64 {
    a.iter().map(|x| f64::from(x.abs())).fold(0.0, f64::max)
}

/// Compact and parity mappings compute the same bits; both follow the host's f32 sweeps to
/// rounding; closed faces stay exactly 0; the f64 divergence check equals the host's.
///
/// Tolerance: the kernel may contract to FMA and divide approximately (2 ulp) where the host
/// does not, a few ulps of the largest face per update; after N sweeps each face has seen 2N
/// updates, and the differences spread to the neighbours without growing (every mode's SOR
/// factor is below 1), so 2N · 8 ulps of max |face| bounds the drift with margin. An indexing
/// or colour error moves faces by O(max |face|).
#[test]
fn west_sweeps_match_the_host_reference() {
    let Some(gpu) = test_gpu() else { return };
    let sweeps = 6;
    for (case, &(rows, cols, nz)) in SIZES.iter().enumerate() {
        let g = Grid::random(rows, cols, nz, 100 + case as u64);
        // Corrections form (faces from 0, random D0) and plain form (random faces, D0 = 0).
        let plain_d0 = vec![0.0; g.n()];
        let corr_d0 = g.div0(0.05, 7 + case as u64);
        let random = g.faces(8.0, 3 + case as u64);
        let zeros = (
            vec![0.0f32; g.tu.len()],
            vec![0.0f32; g.tv.len()],
            vec![0.0f32; g.tw.len()],
        );
        for (form, d0, start) in [
            ("plain", &plain_d0, &random),
            ("corrections", &corr_d0, &zeros),
        ] {
            let omega = 1.25;
            let inp = g.inputs(d0, omega);
            let mut runs = Vec::new();
            for variant in [SweepVariant::Compact, SweepVariant::Parity] {
                let mut dev = GpuWest::new(&gpu, &inp, &start.0, &start.1, &start.2).unwrap();
                dev.sweeps(sweeps, variant).unwrap();
                let d = dev.max_div().unwrap();
                let f = dev.faces().unwrap();
                runs.push((f, d));
            }
            let ((fc, dc), (fp, dp)) = (&runs[0], &runs[1]);
            assert!(
                fc == fp && dc.to_bits() == dp.to_bits(),
                "{form} {rows}x{cols}x{nz}: compact ≠ parity"
            );
            let (mut u, mut v, mut w) = start.clone();
            for _ in 0..sweeps {
                g.west_half(d0, omega, 1, &mut u, &mut v, &mut w);
                g.west_half(d0, omega, 0, &mut u, &mut v, &mut w);
            }
            let scale = max_abs(&u).max(max_abs(&v)).max(max_abs(&w)).max(1e-3);
            let diff = max_abs_diff(&fc.0, &u)
                .max(max_abs_diff(&fc.1, &v))
                .max(max_abs_diff(&fc.2, &w));
            let tol = 2.0 * sweeps as f64 * 8.0 * f64::from(f32::EPSILON) * scale;
            eprintln!("{form} {rows}x{cols}x{nz}: |gpu - host| = {diff:.2e} (tol {tol:.2e})");
            assert!(diff <= tol, "{form} {rows}x{cols}x{nz}: {diff} > {tol}");
            for (t, f) in [(&g.tu, &fc.0), (&g.tv, &fc.1), (&g.tw, &fc.2)] {
                assert!(
                    t.iter().zip(f.iter()).all(|(t, f)| *t == 1 || *f == 0.0),
                    "flux through a closed face"
                );
            }
            let host_div = g.max_div(d0, &fc.0, &fc.1, &fc.2);
            assert!(
                (dc - host_div).abs() <= 1e-12 * host_div + 1e-15,
                "{form} {rows}x{cols}x{nz}: device max div {dc:e}, host {host_div:e}"
            );
        }
    }
}

/// A sweep count of 0 leaves the faces alone; set_faces restarts; the divergence of the
/// untouched faces is D0's.
#[test]
fn west_state_round_trips() {
    let Some(gpu) = test_gpu() else { return };
    let g = Grid::random(7, 10, 6, 42);
    let d0 = g.div0(0.1, 9);
    let (u, v, w) = g.faces(5.0, 11);
    let mut dev = GpuWest::new(&gpu, &g.inputs(&d0, 1.5), &u, &v, &w).unwrap();
    dev.sweeps(0, SweepVariant::Compact).unwrap();
    assert_eq!(dev.faces().unwrap(), (u.clone(), v.clone(), w.clone()));
    let host = g.max_div(&d0, &u, &v, &w);
    assert!((dev.max_div().unwrap() - host).abs() <= 1e-12 * host);
    dev.sweeps(3, SweepVariant::Compact).unwrap();
    let after3 = dev.faces().unwrap();
    dev.set_faces(&u, &v, &w).unwrap();
    dev.sweeps(3, SweepVariant::Parity).unwrap();
    assert_eq!(
        dev.faces().unwrap(),
        after3,
        "runs are reproducible bit for bit"
    );
    // Wrong sizes are errors, not panics.
    assert!(dev.set_faces(&u[1..], &v, &w).is_err());
    let mut bad = g.tu.clone();
    bad[0] = 2;
    let mut inp = g.inputs(&d0, 1.5);
    inp.tu = &bad;
    assert!(GpuWest::new(&gpu, &inp, &u, &v, &w).is_err());
}
