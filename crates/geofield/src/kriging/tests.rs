//! Kriging through the public entry points: anisotropy, local neighbourhoods, missing values,
//! duplicates and the nugget conventions, each against the textbook per-node system.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::needless_range_loop,
    clippy::cloned_ref_to_slice_refs
)]

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

use geofield_core::GridSpec;

use super::global::tests::{reference, wells};
use super::*;

/// [`krige`] at points, its prediction.
fn krige_points(
    be: &Backend,
    set: &SampleSet,
    variograms: &[Variogram],
    opts: &KrigeOptions,
    xs: &[f64],
    ys: &[f64],
    variance: bool,
) -> Result<Prediction, GeofieldError> {
    let target = Target::Points {
        xs: xs.to_vec(),
        ys: ys.to_vec(),
    };
    let params = KrigeParams {
        variograms: variograms.to_vec(),
        options: *opts,
        variance,
        ..KrigeParams::new(variograms[0].clone(), target)
    };
    Ok(krige(be, set, &params)?.prediction)
}

/// [`krige`] on a grid, its prediction.
fn krige_grid(
    be: &Backend,
    set: &SampleSet,
    variograms: &[Variogram],
    opts: &KrigeOptions,
    grid: &GridSpec,
    variance: bool,
) -> Result<Prediction, GeofieldError> {
    let params = KrigeParams {
        variograms: variograms.to_vec(),
        options: *opts,
        variance,
        ..KrigeParams::new(variograms[0].clone(), Target::Grid(*grid))
    };
    Ok(krige(be, set, &params)?.prediction)
}

fn close(a: f64, b: f64, tol: f64, what: &str) {
    assert!(
        (a - b).abs() <= tol * b.abs().max(1.0),
        "{what}: {a} vs {b}"
    );
}

fn nodes(n: usize, seed: u64, offset: (f64, f64)) -> (Vec<f64>, Vec<f64>) {
    let mut r = Pcg64::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            (
                offset.0 - 100.0 + r.random::<f64>() * 1200.0,
                offset.1 - 100.0 + r.random::<f64>() * 2000.0,
            )
        })
        .unzip()
}

/// Independent anisotropic transform: components along the major axis (azimuth clockwise from
/// north) and across it divided by the ratio.
fn stretch(x: f64, y: f64, az: f64, ratio: f64) -> (f64, f64) {
    let t = az.to_radians();
    let major = (t.sin(), t.cos());
    let minor = (t.cos(), -t.sin());
    (
        x * major.0 + y * major.1,
        (x * minor.0 + y * minor.1) / ratio,
    )
}

#[test]
fn anisotropy_equals_isotropic_kriging_in_stretched_coordinates() {
    let off = (4.0e5, 6.1e6);
    let (xs, ys, z) = wells(35, 3, off);
    let v = Variogram::new(Model::Exponential, 20.0, 900.0, 0.5).unwrap();
    let (az, ratio) = (30.0, 0.4);
    for kind in [
        Kind::Ordinary,
        Kind::Universal {
            drift: Drift::Linear,
        },
    ] {
        let opts = KrigeOptions {
            kind,
            anisotropy: Some(Anisotropy {
                azimuth_deg: az,
                ratio,
            }),
            ..KrigeOptions::default()
        };
        let set = SampleSet::new(xs.clone(), ys.clone(), z.clone());
        let (qx, qy) = nodes(20, 4, off);
        let got = krige_points(&Backend::Cpu, &set, &[v.clone()], &opts, &qx, &qy, true).unwrap();
        let (sx, sy): (Vec<f64>, Vec<f64>) = xs
            .iter()
            .zip(&ys)
            .map(|(&x, &y)| stretch(x - off.0, y - off.1, az, ratio))
            .unzip();
        for p in 0..20 {
            let (tx, ty) = stretch(qx[p] - off.0, qy[p] - off.1, az, ratio);
            for h in 0..3 {
                let (want, want_v) = reference(&sx, &sy, &z[h], &v, kind, tx, ty);
                close(got.values[h][p], want, 1e-9, &format!("{kind:?} node {p}"));
                close(
                    got.variance.as_ref().unwrap()[h][p],
                    want_v,
                    1e-9,
                    "variance",
                );
            }
        }
        // The major axis really is longer: along it the correlation is stronger.
        let g = Frame::new(&[0.0, 1.0], &[0.0, 1.0], opts.anisotropy);
        let (a, b) = g.apply(
            0.5 + 100.0 * az.to_radians().sin(),
            0.5 + 100.0 * az.to_radians().cos(),
        );
        close(a.hypot(b), 100.0, 1e-12, "distance along the major axis");
    }
}

use super::space::Frame;

/// The k nearest samples by (d², index), brute force.
fn nearest(xs: &[f64], ys: &[f64], x: f64, y: f64, k: usize, r: Option<f64>) -> Vec<usize> {
    let mut ids: Vec<(f64, usize)> = (0..xs.len())
        .map(|i| ((xs[i] - x).powi(2) + (ys[i] - y).powi(2), i))
        .filter(|&(d2, _)| r.is_none_or(|r| d2 <= r * r))
        .collect();
    ids.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    ids.into_iter().take(k).map(|p| p.1).collect()
}

#[test]
fn local_kriging_solves_each_nodes_system_on_its_nearest_samples() {
    let (xs, ys, z) = wells(60, 7, (0.0, 0.0));
    let v = Variogram::new(Model::Spherical, 30.0, 700.0, 1.0).unwrap();
    let set = SampleSet::new(xs.clone(), ys.clone(), z.clone());
    let (qx, qy) = nodes(40, 8, (0.0, 0.0));
    for (kind, k, radius) in [
        (Kind::Ordinary, 8, None),
        (Kind::Simple { mean: 90.0 }, 5, Some(400.0)),
        (
            Kind::Universal {
                drift: Drift::Linear,
            },
            12,
            Some(600.0),
        ),
    ] {
        let opts = KrigeOptions {
            kind,
            neighbourhood: Neighbourhood::Local { k, radius },
            ..KrigeOptions::default()
        };
        let got = krige_points(&Backend::Cpu, &set, &[v.clone()], &opts, &qx, &qy, true).unwrap();
        let mut nan = 0;
        for p in 0..40 {
            // The frame centres on the samples' mean: distances are the same.
            let ids = nearest(&xs, &ys, qx[p], qy[p], k, radius);
            let var = got.variance.as_ref().unwrap();
            if ids.len() < kind.min_samples() {
                assert!(got.values[0][p].is_nan() && var[0][p].is_nan());
                nan += 1;
                continue;
            }
            let sx: Vec<f64> = ids.iter().map(|&i| xs[i]).collect();
            let sy: Vec<f64> = ids.iter().map(|&i| ys[i]).collect();
            for h in 0..3 {
                let sz: Vec<f64> = ids.iter().map(|&i| z[h][i]).collect();
                let (want, want_v) = reference(&sx, &sy, &sz, &v, kind, qx[p], qy[p]);
                close(
                    got.values[h][p],
                    want,
                    1e-9,
                    &format!("{kind:?} k {k} node {p}"),
                );
                close(var[h][p], want_v, 1e-9, "variance");
            }
        }
        if radius == Some(400.0) {
            assert!(nan < 40, "some nodes have neighbours");
        }
    }
}

#[test]
fn local_kriging_with_every_sample_is_global_kriging() {
    let (xs, ys, z) = wells(30, 9, (2.0e5, 3.0e5));
    let v = Variogram::new(Model::Gaussian, 10.0, 800.0, 0.2).unwrap();
    let set = SampleSet::new(xs, ys, z);
    let (qx, qy) = nodes(25, 10, (2.0e5, 3.0e5));
    let global = KrigeOptions::default();
    let local = KrigeOptions {
        neighbourhood: Neighbourhood::Local {
            k: 64,
            radius: None,
        },
        ..global
    };
    let a = krige_points(&Backend::Cpu, &set, &[v.clone()], &global, &qx, &qy, true).unwrap();
    let b = krige_points(&Backend::Cpu, &set, &[v], &local, &qx, &qy, true).unwrap();
    for h in 0..3 {
        for p in 0..25 {
            close(b.values[h][p], a.values[h][p], 1e-8, "prediction");
            close(
                b.variance.as_ref().unwrap()[h][p],
                a.variance.as_ref().unwrap()[h][p],
                1e-8,
                "variance",
            );
        }
    }
}

#[test]
fn a_surface_missing_at_some_wells_gets_its_own_system() {
    let (xs, ys, mut z) = wells(25, 11, (0.0, 0.0));
    z[1][3] = f64::NAN;
    z[1][17] = f64::NAN;
    let v = Variogram::new(Model::Exponential, 30.0, 600.0, 0.0).unwrap();
    let set = SampleSet::new(xs.clone(), ys.clone(), z.clone());
    let (qx, qy) = nodes(10, 12, (0.0, 0.0));
    let opts = KrigeOptions::default();
    let got = krige_points(&Backend::Cpu, &set, &[v.clone()], &opts, &qx, &qy, true).unwrap();
    assert_eq!(got.groups.len(), 2);
    assert_eq!(got.groups[0].surfaces, vec!["surface1", "surface3"]);
    assert_eq!(got.groups[1].missing, 2);
    let keep: Vec<usize> = (0..25).filter(|&i| i != 3 && i != 17).collect();
    let sx: Vec<f64> = keep.iter().map(|&i| xs[i]).collect();
    let sy: Vec<f64> = keep.iter().map(|&i| ys[i]).collect();
    let sz: Vec<f64> = keep.iter().map(|&i| z[1][i]).collect();
    for p in 0..10 {
        let (want, want_v) = reference(&sx, &sy, &sz, &v, Kind::Ordinary, qx[p], qy[p]);
        close(got.values[1][p], want, 1e-9, "surface 2");
        close(
            got.variance.as_ref().unwrap()[1][p],
            want_v,
            1e-9,
            "variance 2",
        );
        let (want0, _) = reference(&xs, &ys, &z[0], &v, Kind::Ordinary, qx[p], qy[p]);
        close(got.values[0][p], want0, 1e-9, "surface 1");
    }
    // One variogram per surface.
    let vs = vec![
        v.clone(),
        v.clone(),
        Variogram::new(Model::Gaussian, 5.0, 900.0, 0.1).unwrap(),
    ];
    let got = krige_points(&Backend::Cpu, &set, &vs, &opts, &qx, &qy, false).unwrap();
    assert_eq!(got.groups.len(), 3);
    assert!(krige_points(&Backend::Cpu, &set, &vs[..2], &opts, &qx, &qy, false).is_err());
}

#[test]
fn near_duplicates_merge_within_the_distance_and_disagreements_are_errors() {
    let mut set = SampleSet::new(
        vec![0.0, 100.0, 100.0005, 250.0, 400.0, 30.0],
        vec![0.0, 50.0, 50.0, 300.0, 10.0, 200.0],
        vec![vec![1.0, 2.0, 2.1, 3.0, 5.0, 4.0]],
    );
    set.source = Some("wells.csv".into());
    set.lines = (2..8).collect();
    let v = Variogram::new(Model::Exponential, 1.0, 300.0, 0.0).unwrap();
    let mut opts = KrigeOptions::default();
    opts.merge.distance_m = Some(0.01);
    let got = krige_points(
        &Backend::Cpu,
        &set,
        &[v.clone()],
        &opts,
        &[100.0],
        &[50.0],
        true,
    )
    .unwrap();
    assert_eq!(
        got.groups[0].merged,
        vec![vec![
            "wells.csv line 3".to_string(),
            "wells.csv line 4".to_string()
        ]]
    );
    close(
        got.values[0][0],
        2.05,
        1e-12,
        "the merged location holds the mean",
    );
    // A tight tolerance turns the disagreement into an error naming both lines.
    opts.merge.tolerance = Some(0.01);
    let e = krige_points(
        &Backend::Cpu,
        &set,
        &[v.clone()],
        &opts,
        &[0.0],
        &[0.0],
        false,
    )
    .err()
    .unwrap()
    .to_string();
    assert!(
        e.contains("line 3") && e.contains("line 4") && e.contains("tolerance"),
        "{e}"
    );
    // Without a merge distance the pair is 0.5 mm apart: fine with a nugget-free exponential.
    let opts = KrigeOptions::default();
    assert!(krige_points(&Backend::Cpu, &set, &[v], &opts, &[0.0], &[0.0], false).is_ok());
}

#[test]
fn the_nugget_as_measurement_error_smooths_only_at_the_samples() {
    let (xs, ys, z) = wells(20, 13, (0.0, 0.0));
    let v = Variogram::new(Model::Exponential, 10.0, 600.0, 3.0).unwrap();
    let set = SampleSet::new(xs.clone(), ys.clone(), z.clone());
    let exact = KrigeOptions::default();
    let noisy = KrigeOptions {
        nugget: NuggetMode::MeasurementError,
        ..exact
    };
    let a = krige_points(&Backend::Cpu, &set, &[v.clone()], &exact, &xs, &ys, true).unwrap();
    let b = krige_points(&Backend::Cpu, &set, &[v.clone()], &noisy, &xs, &ys, true).unwrap();
    let mut smoothed = 0;
    for i in 0..20 {
        close(a.values[0][i], z[0][i], 1e-9, "exact at the sample");
        if (b.values[0][i] - z[0][i]).abs() > 1e-6 {
            smoothed += 1;
        }
        // Independent: the bordered system with the nugget left out of the right-hand side.
        let c0 = v.sill();
        let n = 20;
        let cov = |h: f64| if h == 0.0 { c0 } else { c0 - v.gamma(h) };
        let mut m = vec![vec![0.0; n + 1]; n + 1];
        let mut rhs = vec![1.0; n + 1];
        for r in 0..n {
            for c in 0..n {
                m[r][c] = cov((xs[r] - xs[c]).hypot(ys[r] - ys[c]));
            }
            m[r][n] = 1.0;
            m[n][r] = 1.0;
            let d = (xs[r] - xs[i]).hypot(ys[r] - ys[i]);
            rhs[r] = if d == 0.0 { c0 - 3.0 } else { cov(d) };
        }
        let w = super::global::tests::solve(m, rhs.clone());
        let want: f64 = (0..n).map(|r| w[r] * z[0][r]).sum();
        let want_v = c0 - (0..=n).map(|r| w[r] * rhs[r]).sum::<f64>();
        close(b.values[0][i], want, 1e-9, "measurement-error prediction");
        close(
            b.variance.as_ref().unwrap()[0][i],
            want_v,
            1e-9,
            "measurement-error variance",
        );
    }
    assert!(smoothed > 10);
    let (qx, qy) = nodes(10, 14, (0.0, 0.0));
    let a = krige_points(&Backend::Cpu, &set, &[v.clone()], &exact, &qx, &qy, true).unwrap();
    let b = krige_points(&Backend::Cpu, &set, &[v], &noisy, &qx, &qy, true).unwrap();
    assert_eq!(a.values, b.values, "identical away from the samples");
}

#[test]
fn a_grid_is_the_same_function_as_its_cell_centres() {
    let (xs, ys, z) = wells(30, 15, (5.0e5, 7.8e6));
    let v = Variogram::new(Model::Exponential, 20.0, 700.0, 0.3).unwrap();
    let set = SampleSet::new(xs, ys, z);
    let grid = GridSpec {
        x_min_m: 5.0e5,
        y_max_m: 7.8e6 + 1800.0,
        cell_size_m: 50.0,
        cols: 20,
        rows: 36,
    };
    for opts in [
        KrigeOptions::default(),
        KrigeOptions {
            anisotropy: Some(Anisotropy {
                azimuth_deg: 120.0,
                ratio: 0.5,
            }),
            neighbourhood: Neighbourhood::Local {
                k: 10,
                radius: None,
            },
            ..KrigeOptions::default()
        },
    ] {
        let g = krige_grid(&Backend::Cpu, &set, &[v.clone()], &opts, &grid, true).unwrap();
        let (mut px, mut py) = (vec![], vec![]);
        for r in 0..grid.rows {
            for c in 0..grid.cols {
                px.push(5.0e5 + (c as f64 + 0.5) * 50.0);
                py.push(7.8e6 + 1800.0 - (r as f64 + 0.5) * 50.0);
            }
        }
        let p = krige_points(&Backend::Cpu, &set, &[v.clone()], &opts, &px, &py, true).unwrap();
        for h in 0..3 {
            for j in 0..px.len() {
                close(g.values[h][j], p.values[h][j], 1e-9, "grid vs points");
            }
        }
    }
}

#[test]
fn local_leave_one_out_equals_kriging_without_each_sample() {
    let (xs, ys, z) = wells(40, 17, (0.0, 0.0));
    let v = Variogram::new(Model::Exponential, 30.0, 600.0, 0.5).unwrap();
    let opts = KrigeOptions {
        neighbourhood: Neighbourhood::Local {
            k: 10,
            radius: None,
        },
        ..KrigeOptions::default()
    };
    let set = SampleSet::new(xs.clone(), ys.clone(), z.clone());
    let params = KrigeParams {
        options: opts,
        ..KrigeParams::new(
            v.clone(),
            Target::Points {
                xs: vec![],
                ys: vec![],
            },
        )
    };
    let cv = cross_validate(&Backend::Cpu, &set, &params).unwrap();
    for i in [0, 7, 23, 39] {
        let keep: Vec<usize> = (0..40).filter(|&j| j != i).collect();
        let sub = SampleSet::new(
            keep.iter().map(|&j| xs[j]).collect(),
            keep.iter().map(|&j| ys[j]).collect(),
            z.iter()
                .map(|s| keep.iter().map(|&j| s[j]).collect())
                .collect(),
        );
        let p = krige_points(
            &Backend::Cpu,
            &sub,
            &[v.clone()],
            &opts,
            &[xs[i]],
            &[ys[i]],
            true,
        )
        .unwrap();
        for h in 0..3 {
            let j = cv[h].locations.iter().position(|&l| l == i).unwrap();
            close(cv[h].error[j], z[h][i] - p.values[h][0], 1e-9, "LOO error");
            close(
                cv[h].variance[j],
                p.variance.as_ref().unwrap()[h][0],
                1e-9,
                "LOO variance",
            );
        }
    }
}
