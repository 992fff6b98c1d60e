//! Block kriging (gstat `block=`): against gstat's own published results on Meuse
//! (`tests/blockkr.Rout.save` of r-spatial/gstat), against an independent dense f64 solve of
//! the block system, and its defining properties (the block prediction is the mean of the point
//! predictions at the discretisation points; a vanishing block is a point; local kriging with
//! every sample is global kriging).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod kriging_common;

use geofield::Backend;
use geofield::kriging::{
    self, Block, Discretisation, KrigeOptions, KrigeParams, Model, Neighbourhood, SampleSet,
    Target, Variogram,
};

fn block(s: f64, d: Discretisation) -> Block {
    Block {
        size_x_m: s,
        size_y_m: s,
        discretisation: d,
    }
}

fn krige_at(
    set: &SampleSet,
    vg: &Variogram,
    opts: KrigeOptions,
    px: &[f64],
    py: &[f64],
) -> (Vec<f64>, Vec<f64>) {
    let params = KrigeParams {
        options: opts,
        variance: true,
        ..KrigeParams::new(
            vg.clone(),
            Target::Points {
                xs: px.to_vec(),
                ys: py.to_vec(),
            },
        )
    };
    let k = kriging::krige(&Backend::Cpu, set, &params).unwrap();
    let mut p = k.prediction;
    (p.values.remove(0), p.variance.unwrap().remove(0))
}

fn samples() -> SampleSet {
    let (mut xs, mut ys, mut z) = (vec![], vec![], vec![]);
    for k in 0..40u32 {
        let t = f64::from(k);
        let (x, y) = (
            (t * 37.77).rem_euclid(300.0),
            (t * 61.31 + 7.0).rem_euclid(300.0),
        );
        xs.push(x);
        ys.push(y);
        z.push((x / 70.0).sin() + (y / 90.0).cos() + 0.01 * t);
    }
    SampleSet::new(xs, ys, vec![z])
}

/// gstat 2.x, `krige(zinc ~ 1, meuse, new.locs, vgm(1.34e5, "Sph", 800, nug = 2.42e4),
/// block = c(40, 40), nmax = 40)`: the published predictions and variances (default Gaussian
/// quadrature: 4 × 4 Gauss-Legendre points), and the 4 × 4 regular discretisation at the first
/// location. The printed
/// digits bound the agreement: half a unit of the last digit shown.
#[test]
fn meuse_block_kriging_matches_gstat() {
    let Some(path) = std::env::var_os("GEOFIELD_MEUSE") else {
        assert!(
            std::env::var("GEOFIELD_REQUIRE_MEUSE").as_deref() != Ok("1"),
            "GEOFIELD_REQUIRE_MEUSE=1 but GEOFIELD_MEUSE is not set"
        );
        eprintln!("notice: GEOFIELD_MEUSE is not set; gstat's block-kriging check is skipped");
        return;
    };
    let text = std::fs::read_to_string(path).unwrap();
    let (mut xs, mut ys, mut zinc) = (vec![], vec![], vec![]);
    for line in text.lines().skip(1).filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line
            .split(',')
            .map(|s| s.trim().trim_matches('"'))
            .collect();
        xs.push(f[0].parse::<f64>().unwrap());
        ys.push(f[1].parse::<f64>().unwrap());
        zinc.push(f[5].parse::<f64>().unwrap());
    }
    assert_eq!(xs.len(), 155);
    let set = SampleSet::new(xs, ys, vec![zinc]);
    let vg = Variogram::new(Model::Spherical, 1.34e5, 800.0, 2.42e4).unwrap();
    let local = |d| KrigeOptions {
        neighbourhood: Neighbourhood::Local {
            k: 40,
            radius: None,
        },
        block: Some(block(40.0, d)),
        ..KrigeOptions::default()
    };
    let px = [181170.0, 180310.0, 180205.0, 178673.0, 178770.0, 178270.0];
    let py = [333250.0, 332189.0, 331707.0, 330066.0, 330675.0, 331075.0];
    let want = [
        (268.7576, 19447.67),
        (663.4915, 16991.33),
        (251.4606, 21579.71),
        (532.5776, 73807.91),
        (664.4039, 23589.17),
        (565.5436, 155113.23),
    ];
    let (p, v) = krige_at(&set, &vg, local(Discretisation::Gauss), &px, &py);
    for (j, (wp, wv)) in want.iter().enumerate() {
        assert!(
            (p[j] - wp).abs() <= 5e-5 + 1e-9,
            "location {j}: {} vs gstat {wp}",
            p[j]
        );
        assert!(
            (v[j] - wv).abs() <= 5e-3 + 1e-6,
            "location {j}: {} vs gstat {wv}",
            v[j]
        );
    }
    let (p, v) = krige_at(
        &set,
        &vg,
        local(Discretisation::Regular { n: 4 }),
        &px[..1],
        &py[..1],
    );
    assert!(
        (p[0] - 268.7324).abs() <= 5e-5 + 1e-9,
        "{} vs gstat 268.7324",
        p[0]
    );
    assert!(
        (v[0] - 19568.76).abs() <= 5e-3 + 1e-6,
        "{} vs gstat 19568.76",
        v[0]
    );
}

/// The block system solved here densely (bordered ordinary kriging with the block-averaged
/// right-hand side and C̄(B, B)), from the covariance written out: prediction and variance.
fn dense_block(set: &SampleSet, x0: f64, y0: f64, offs: &[(f64, f64, f64)]) -> (f64, f64) {
    let c = |h: f64| {
        // exponential sill 1, practical range 120, nugget 0.1 (C(0) = 1.1)
        if h == 0.0 {
            1.1
        } else {
            (-3.0 * h / 120.0).exp()
        }
    };
    let n = set.xs.len();
    let m = n + 1;
    let w = m + 1;
    let mut a = vec![0.0; m * w];
    for i in 0..n {
        for j in 0..n {
            a[i * w + j] = c((set.xs[i] - set.xs[j]).hypot(set.ys[i] - set.ys[j]));
        }
        a[i * w + n] = 1.0;
        a[n * w + i] = 1.0;
        a[i * w + m] = offs
            .iter()
            .map(|&(ox, oy, wt)| wt * c((set.xs[i] - x0 - ox).hypot(set.ys[i] - y0 - oy)))
            .sum::<f64>();
    }
    a[n * w + m] = 1.0;
    let rhs: Vec<f64> = (0..m).map(|i| a[i * w + m]).collect();
    let lam = kriging_common::solve_augmented(a, m);
    let pred = (0..n).map(|i| lam[i] * set.surfaces[0].values[i]).sum();
    // The block with itself: the nugget left out (gstat's convention).
    let mut cbb = 0.0;
    for &(ax, ay, wa) in offs {
        for &(bx, by, wb) in offs {
            let h = (ax - bx).hypot(ay - by);
            cbb += wa * wb * if h == 0.0 { 1.0 } else { c(h) };
        }
    }
    let var = cbb - (0..m).map(|i| lam[i] * rhs[i]).sum::<f64>();
    (pred, var)
}

#[test]
fn block_kriging_matches_a_dense_solve_and_is_the_mean_of_point_predictions() {
    let set = samples();
    let vg = Variogram::new(Model::Exponential, 1.0, 120.0, 0.1).unwrap();
    let (px, py) = (vec![55.0, 150.0, 260.0], vec![40.0, 150.0, 290.0]);
    for d in [Discretisation::Gauss, Discretisation::Regular { n: 3 }] {
        let b = block(25.0, d);
        let opts = KrigeOptions {
            block: Some(b),
            ..KrigeOptions::default()
        };
        let (p, v) = krige_at(&set, &vg, opts, &px, &py);
        let offs = b.points();
        for j in 0..px.len() {
            // Two backward-stable f64 solves of a 41 x 41 system with condition < 1e4:
            // agreement far inside 1e-10.
            let (dp, dv) = dense_block(&set, px[j], py[j], &offs);
            assert!(
                (p[j] - dp).abs() < 1e-10,
                "{d:?} node {j}: {} vs {dp}",
                p[j]
            );
            assert!(
                (v[j] - dv).abs() < 1e-10,
                "{d:?} node {j}: {} vs {dv}",
                v[j]
            );
            // The block prediction is the weighted mean of the point predictions at its points.
            let (qx, qy): (Vec<f64>, Vec<f64>) = offs
                .iter()
                .map(|&(ox, oy, _)| (px[j] + ox, py[j] + oy))
                .unzip();
            let (pp, _) = krige_at(&set, &vg, KrigeOptions::default(), &qx, &qy);
            let mean: f64 = pp.iter().zip(&offs).map(|(p, o)| p * o.2).sum();
            assert!(
                (p[j] - mean).abs() < 1e-12,
                "{d:?} node {j}: {} vs {mean}",
                p[j]
            );
        }
    }
}

#[test]
fn vanishing_block_is_a_point_and_local_with_all_samples_is_global() {
    let set = samples();
    let vg = Variogram::new(Model::Spherical, 1.0, 150.0, 0.0).unwrap();
    let (px, py) = (vec![33.0, 201.0], vec![77.0, 123.0]);
    let (p0, v0) = krige_at(&set, &vg, KrigeOptions::default(), &px, &py);
    // A 1 µm block: covariances change by O(1e-6 / 150) (the model's slope): 1e-7 bounds it.
    let tiny = KrigeOptions {
        block: Some(block(1e-6, Discretisation::Regular { n: 2 })),
        ..KrigeOptions::default()
    };
    let (p1, v1) = krige_at(&set, &vg, tiny, &px, &py);
    for j in 0..2 {
        assert!((p0[j] - p1[j]).abs() < 1e-7 && (v0[j] - v1[j]).abs() < 1e-7);
    }
    let b = Some(block(30.0, Discretisation::Gauss));
    let global = KrigeOptions {
        block: b,
        ..KrigeOptions::default()
    };
    let local = KrigeOptions {
        block: b,
        neighbourhood: Neighbourhood::Local {
            k: 40,
            radius: None,
        },
        ..KrigeOptions::default()
    };
    let (pg, vg_) = krige_at(&set, &vg, global, &px, &py);
    let (pl, vl) = krige_at(&set, &vg, local, &px, &py);
    for j in 0..2 {
        assert!((pg[j] - pl[j]).abs() < 1e-9 && (vg_[j] - vl[j]).abs() < 1e-9);
        // Averaging over a block of the continuous part lowers the variance below the point's.
        assert!(
            vg_[j] < v0[j],
            "block variance {} >= point variance {}",
            vg_[j],
            v0[j]
        );
    }
}

#[test]
fn bad_blocks_are_refused() {
    let set = samples();
    let vg = Variogram::new(Model::Spherical, 1.0, 150.0, 0.0).unwrap();
    for b in [
        block(0.0, Discretisation::Gauss),
        block(f64::NAN, Discretisation::Gauss),
        block(10.0, Discretisation::Regular { n: 0 }),
        block(10.0, Discretisation::Regular { n: 17 }),
    ] {
        let params = KrigeParams {
            options: KrigeOptions {
                block: Some(b),
                ..KrigeOptions::default()
            },
            ..KrigeParams::new(
                vg.clone(),
                Target::Points {
                    xs: vec![1.0],
                    ys: vec![1.0],
                },
            )
        };
        assert!(
            kriging::krige(&Backend::Cpu, &set, &params).is_err(),
            "{b:?}"
        );
    }
    // 4 x 4 Gauss-Legendre points, weights summing to 1; regular ones at the sub-cell centres
    // (gstat's -15, -5, 5, 15).
    let g = block(40.0, Discretisation::Gauss).points();
    assert_eq!(g.len(), 16);
    assert!((g[0].0 + 20.0 * 0.861_136_311_594_052_6).abs() < 1e-12);
    assert!((g.iter().map(|p| p.2).sum::<f64>() - 1.0).abs() < 1e-15);
    let r = block(40.0, Discretisation::Regular { n: 4 }).points();
    let xs: Vec<f64> = r[..4].iter().map(|o| o.0).collect();
    assert_eq!(xs, vec![-15.0, -5.0, 5.0, 15.0]);
}
