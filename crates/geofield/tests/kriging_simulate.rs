//! Conditional simulation on the GPU against the CPU: the unconditional fields at grid nodes bit
//! for bit (`kernels/sim.cu` repeats `spectral::field_grid`'s arithmetic), the whole simulation
//! within the kriging's own backend tolerance (f64: 1e-9 of the values' size,
//! `tests/kriging_backends.rs`). Skips without a GPU; fails with `GEOFIELD_REQUIRE_GPU=1`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use geofield::Backend;
use geofield::kriging::simulate::spectral;
use geofield::kriging::{
    KrigeParams, Model, SampleSet, SimParams, Structure, Target, Variogram, simulate,
};
use geofield_core::{Extent, GridSpec};
use geofield_cuda::kriging::NodeGrid;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

fn nested() -> Variogram {
    Variogram {
        nugget: 0.3,
        structures: vec![
            Structure::new(Model::Exponential, 2.0, 300.0),
            Structure::new(Model::Matern { nu: 1.5 }, 1.0, 900.0),
        ],
    }
}

#[test]
fn unconditional_fields_equal_the_cpu_bit_for_bit() {
    let Some(g) = geofield_cuda::test_gpu() else {
        return;
    };
    // Sizes that are not multiples of the 64 x 64 tiles nor of the 16-mode chunks, an
    // anisotropic (rotated) step, UTM-sized offsets from the centre.
    let map = NodeGrid {
        origin: [-1234.5, 987.25],
        col_step: [7.1, -2.3],
        row_step: [1.9, -6.4],
        rows: 150,
        cols: 133,
        row0: 0,
    };
    let vg = nested();
    let reals = 3;
    let mut flat = vec![];
    let mut cpu = vec![];
    for i in 0..reals {
        let mut rng = Pcg64::seed_from_u64(40 + i);
        let modes = spectral::draw_modes(&vg, 350, &mut rng).unwrap();
        cpu.push(spectral::field_grid(&map, &modes));
        flat.extend(modes.iter().flatten().copied());
    }
    let mut gpu = vec![vec![]; reals as usize];
    geofield_cuda::kriging::sim::field_grid(&g, &map, &flat, reals as usize, &mut |i, z| {
        gpu[i] = z.to_vec()
    })
    .unwrap();
    for i in 0..reals as usize {
        let same = cpu[i]
            .iter()
            .zip(&gpu[i])
            .filter(|(a, b)| a.to_bits() == b.to_bits());
        assert_eq!(same.count(), cpu[i].len(), "realisation {i}");
    }
}

#[test]
fn simulations_match_across_backends() {
    let Some(g) = geofield_cuda::test_gpu() else {
        return;
    };
    let mut r = Pcg64::seed_from_u64(8);
    let n = 60;
    let xs: Vec<f64> = (0..n).map(|_| 4.2e5 + r.random::<f64>() * 3000.0).collect();
    let ys: Vec<f64> = (0..n).map(|_| 5.1e6 + r.random::<f64>() * 2000.0).collect();
    let zs: Vec<f64> = xs
        .iter()
        .map(|x| 10.0 + ((x - 4.2e5) / 400.0).sin())
        .collect();
    let set = SampleSet::new(xs, ys, vec![zs]);
    let grid =
        GridSpec::from_extent(Extent::new(4.2e5, 5.1e6, 4.23e5, 5.102e6).unwrap(), 20.0).unwrap();
    let p = KrigeParams::new(nested(), Target::Grid(grid));
    let sim = SimParams {
        realisations: 7,
        seed: 3,
        modes: 400,
    };
    let c = simulate(&Backend::Cpu, &set, &p, &sim).unwrap();
    let d = simulate(&Backend::Cuda(g), &set, &p, &sim).unwrap();
    assert!(d.evaluated.starts_with("cuda"), "{}", d.evaluated);
    let scale = c.values.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    for (a, b) in c.values.iter().zip(&d.values) {
        assert!((a - b).abs() <= 1e-9 * scale, "{a} vs {b}");
    }
}
