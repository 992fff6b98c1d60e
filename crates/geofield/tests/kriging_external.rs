//! Kriging with external drift (KED; gstat `z ~ dem`, PyKrige `external_Z`): against an
//! independent dense f64 solve of the universal-kriging system whose drift columns are 1 and the
//! external variable; exact at the samples; refusals that name the sample or node without a
//! drift value.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod kriging_common;

use std::sync::Arc;

use geofield::Backend;
use geofield::kriging::{
    self, Drift, ExternalDrift, Kind, KrigeOptions, KrigeParams, Model, Neighbourhood, SampleSet,
    Target, Variogram,
};
use geofield_core::{Extent, GridSpec};

/// The external variable: a smooth "DEM" given at the 10 m cell centres of a 300 x 300 m raster.
fn dem_value(x: f64, y: f64) -> f64 {
    100.0 + 0.3 * x - 0.1 * y + 20.0 * (x / 60.0).sin() * (y / 80.0).cos()
}

fn dem() -> Arc<ExternalDrift> {
    let grid = GridSpec::from_extent(Extent::new(0.0, 0.0, 300.0, 300.0).unwrap(), 10.0).unwrap();
    let mut v = vec![];
    for r in 0..30 {
        for c in 0..30 {
            v.push(dem_value(5.0 + 10.0 * c as f64, 295.0 - 10.0 * r as f64));
        }
    }
    Arc::new(ExternalDrift::new(grid, v, "dem").unwrap())
}

/// Samples at cell centres (so e there is the DEM's value exactly), values correlated with it.
fn samples() -> SampleSet {
    let (mut xs, mut ys, mut z) = (vec![], vec![], vec![]);
    for k in 0..35u32 {
        let (c, r) = ((k * 7 + 3) % 30, (k * 11 + 5) % 29);
        let (x, y) = (5.0 + 10.0 * f64::from(c), 295.0 - 10.0 * f64::from(r));
        xs.push(x);
        ys.push(y);
        z.push(0.05 * dem_value(x, y) + (x / 90.0).cos() + 0.01 * f64::from(k));
    }
    SampleSet::new(xs, ys, vec![z])
}

fn params(drift: Drift, target: Target, nb: Neighbourhood) -> KrigeParams {
    let vg = Variogram::new(Model::Exponential, 1.0, 150.0, 0.05).unwrap();
    KrigeParams {
        options: KrigeOptions {
            kind: Kind::Universal { drift },
            neighbourhood: nb,
            ..KrigeOptions::default()
        },
        variance: true,
        external_drift: Some(dem()),
        ..KrigeParams::new(vg, target)
    }
}

/// Universal kriging at (x0, y0) by a dense bordered solve with drift columns 1, e (and x, y
/// with `linear`), the covariance written out: (prediction, variance).
fn dense(set: &SampleSet, x0: f64, y0: f64, linear: bool) -> (f64, f64) {
    let c = |h: f64| {
        if h == 0.0 {
            1.05
        } else {
            (-3.0 * h / 150.0).exp()
        }
    };
    let f = |x: f64, y: f64| -> Vec<f64> {
        if linear {
            vec![1.0, x, y, dem_value(x, y)]
        } else {
            vec![1.0, dem_value(x, y)]
        }
    };
    let n = set.xs.len();
    let p = f(0.0, 0.0).len();
    let m = n + p;
    let w = m + 1;
    let mut a = vec![0.0; m * w];
    for i in 0..n {
        for j in 0..n {
            a[i * w + j] = c((set.xs[i] - set.xs[j]).hypot(set.ys[i] - set.ys[j]));
        }
        let fi = f(set.xs[i], set.ys[i]);
        for q in 0..p {
            a[i * w + n + q] = fi[q];
            a[(n + q) * w + i] = fi[q];
        }
        a[i * w + m] = c((set.xs[i] - x0).hypot(set.ys[i] - y0));
    }
    let f0 = f(x0, y0);
    for q in 0..p {
        a[(n + q) * w + m] = f0[q];
    }
    let rhs: Vec<f64> = (0..m).map(|i| a[i * w + m]).collect();
    let lam = kriging_common::solve_augmented(a, m);
    let pred = (0..n).map(|i| lam[i] * set.surfaces[0].values[i]).sum();
    (pred, 1.05 - (0..m).map(|i| lam[i] * rhs[i]).sum::<f64>())
}

// Both sides solve the same system in f64; the drift column (values ~100) makes it less well
// conditioned than ordinary kriging (cond ~1e8 here): 1e-7 relative is still far below the
// effect of the drift (dropping it changes the surface by > 1e-2).
#[test]
fn ked_matches_a_dense_universal_solve() {
    let set = samples();
    // Nodes at cell centres, where the raster's e is the DEM function exactly.
    let px: Vec<f64> = (0..12).map(|k| 5.0 + 20.0 * f64::from(k) + 10.0).collect();
    let py: Vec<f64> = (0..12).map(|k| 285.0 - 20.0 * f64::from(k)).collect();
    for (drift, linear) in [(Drift::External, false), (Drift::LinearExternal, true)] {
        for nb in [
            Neighbourhood::Global,
            Neighbourhood::Local {
                k: 35,
                radius: None,
            },
        ] {
            let t = Target::Points {
                xs: px.clone(),
                ys: py.clone(),
            };
            let k = kriging::krige(&Backend::Cpu, &set, &params(drift, t, nb)).unwrap();
            let (p, v) = (&k.prediction.values[0], &k.prediction.variance.unwrap()[0]);
            for j in 0..px.len() {
                let (dp, dv) = dense(&set, px[j], py[j], linear);
                assert!(
                    (p[j] - dp).abs() < 1e-7 * dp.abs(),
                    "{drift:?} {nb:?} {j}: {} {dp}",
                    p[j]
                );
                assert!(
                    (v[j] - dv).abs() < 1e-7,
                    "{drift:?} {nb:?} {j}: {} {dv}",
                    v[j]
                );
            }
        }
    }
}

#[test]
fn ked_on_a_grid_is_exact_at_the_samples_and_refuses_what_the_raster_does_not_cover() {
    let set = samples();
    let grid = GridSpec::from_extent(Extent::new(0.0, 0.0, 300.0, 300.0).unwrap(), 10.0).unwrap();
    let k = kriging::krige(
        &Backend::Cpu,
        &set,
        &params(Drift::External, Target::Grid(grid), Neighbourhood::Global),
    )
    .unwrap();
    for i in 0..set.xs.len() {
        let (c, r) = (
            ((set.xs[i] - 5.0) / 10.0) as usize,
            ((295.0 - set.ys[i]) / 10.0) as usize,
        );
        let got = k.prediction.values[0][r * 30 + c];
        assert!((got - set.surfaces[0].values[i]).abs() < 1e-9, "sample {i}");
    }
    // A grid reaching past the raster: refused, naming the cell.
    let wide = GridSpec::from_extent(Extent::new(0.0, 0.0, 320.0, 300.0).unwrap(), 10.0).unwrap();
    let e = kriging::krige(
        &Backend::Cpu,
        &set,
        &params(Drift::External, Target::Grid(wide), Neighbourhood::Global),
    )
    .unwrap_err();
    assert!(e.to_string().contains("cell (row 0, column 30)"), "{e}");
    // A sample outside the raster: refused, naming it.
    let mut out = samples();
    out.xs[3] = 400.0;
    let e = kriging::krige(
        &Backend::Cpu,
        &out,
        &params(Drift::External, Target::Grid(grid), Neighbourhood::Global),
    )
    .unwrap_err();
    assert!(e.to_string().contains("no external drift value"), "{e}");
    // No raster: refused.
    let mut p = params(Drift::External, Target::Grid(grid), Neighbourhood::Global);
    p.external_drift = None;
    assert!(kriging::krige(&Backend::Cpu, &set, &p).is_err());
}
