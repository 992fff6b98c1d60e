use super::*;

// ---------------------------------------------------------------------------------------------
// Dual predictions.
// ---------------------------------------------------------------------------------------------
fn dual_reference(c: &Covariance, cs: &Case, inp: &DualInputs) -> (Vec<f64>, Vec<f64>) {
    let (nn, hh, n) = (cs.grid.len(), inp.surfaces, cs.xy.len() / 2);
    let cz = c.to_params().unwrap().c_zero.abs();
    let mut out = vec![0.0; nn * hh];
    let mut scale = vec![0.0; nn * hh];
    for r in 0..cs.grid.rows {
        for col in 0..cs.grid.cols {
            let j = r * cs.grid.cols + col;
            let (x, y) = cs.grid.node(r, col);
            let f = drift(x, y, inp.drift_scale, inp.drift_terms);
            let k: Vec<f64> = (0..n)
                .map(|i| {
                    let (dx, dy) = (cs.xy[2 * i] - x, cs.xy[2 * i + 1] - y);
                    ref_cov(c, (dx * dx + dy * dy).sqrt())
                })
                .collect();
            for h in 0..hh {
                let (mut s, mut a) = (0.0, 0.0);
                for (i, ki) in k.iter().enumerate() {
                    let t = ki * inp.alpha[i * hh + h];
                    s += t;
                    // the size of the covariance, not only of its value: pseudo-covariances
                    // B − γ(h) cancel to ~0 at moderate h, where f32 keeps an absolute error of
                    // ~B·2^-24
                    a += (ki.abs() + cz) * inp.alpha[i * hh + h].abs();
                }
                for (l, fl) in f.iter().enumerate() {
                    s += fl * inp.beta[l * hh + h];
                    a += (fl * inp.beta[l * hh + h]).abs();
                }
                out[h * nn + j] = s;
                scale[h * nn + j] = a;
            }
        }
    }
    (out, scale)
}

fn rel_err<T: KrigeFloat>(got: &[T], want: &[f64], scale: &[f64]) -> f64 {
    got.iter()
        .zip(want.iter().zip(scale))
        .map(|(g, (w, s))| (g.widen() - w).abs() / s.max(1e-300))
        .fold(0.0, f64::max)
}

#[test]
fn dual_matches_reference() {
    let Some(gpu) = test_gpu() else { return };
    let models = [
        cov1(CovModel::Exponential, 1.3, 300.0, 0.2),
        cov1(CovModel::Gaussian, 0.7, 400.0, 0.0),
        cov1(CovModel::Spherical, 2.0, 350.0, 0.1),
        Covariance {
            nugget: 0.1,
            structures: vec![
                CovStructure {
                    model: CovModel::Cubic,
                    sill: 0.5,
                    range: 500.0,
                },
                CovStructure {
                    model: CovModel::Stable { alpha: 1.4 },
                    sill: 0.4,
                    range: 200.0,
                },
                CovStructure {
                    model: CovModel::Matern {
                        nu: 2.5,
                        scale: 4.2,
                    },
                    sill: 0.3,
                    range: 300.0,
                },
                CovStructure {
                    model: CovModel::Matern {
                        nu: 0.8,
                        scale: 3.3,
                    },
                    sill: 0.2,
                    range: 250.0,
                },
            ],
            pseudo_base: None,
            eps: 1e-9,
            exact: true,
            var_zero: None,
        },
        Covariance {
            nugget: 0.05,
            structures: vec![
                CovStructure {
                    model: CovModel::Power { exponent: 1.2 },
                    sill: 0.01,
                    range: 0.0,
                },
                CovStructure {
                    model: CovModel::Linear,
                    sill: 0.001,
                    range: 0.0,
                },
            ],
            pseudo_base: Some(30.0),
            eps: 1e-9,
            exact: true,
            var_zero: None,
        },
    ];
    // (n, H, p, rows, cols, coincide)
    let shapes = [
        (1, 1, 1, 7, 9, 1),
        (2, 3, 0, 13, 11, 2),
        (37, 11, 3, 40, 50, 10),
        (300, 16, 6, 33, 61, 20),
        (520, 18, 1, 20, 30, 5),
    ];
    for (mi, c) in models.iter().enumerate() {
        for exact in [true, false] {
            let mut c = c.clone();
            c.exact = exact;
            for &(n, hh, p, rows, cols, co) in &shapes {
                let cs = case(n, rows, cols, co, 7 + n as u64);
                let mut rng = Rng::seeded(99 + hh as u64);
                let alpha: Vec<f64> = (0..n * hh).map(|_| rng.uniform(-1.0, 1.0)).collect();
                let beta: Vec<f64> = (0..p * hh).map(|_| rng.uniform(-1.0, 1.0)).collect();
                let inp = DualInputs {
                    samples_xy: &cs.xy,
                    alpha: &alpha,
                    beta: &beta,
                    surfaces: hh,
                    drift_terms: p,
                    drift_scale: 500.0,
                };
                let (want, scale) = dual_reference(&c, &cs, &inp);
                let (g64, _) = dual_predict::<f64>(&gpu, &c, &cs.grid, &inp, false).unwrap();
                let (g32, _) = dual_predict::<f32>(&gpu, &c, &cs.grid, &inp, false).unwrap();
                let (g32f, _) = dual_predict::<f32>(&gpu, &c, &cs.grid, &inp, true).unwrap();
                let (e64, e32, e32f) = (
                    rel_err(&g64, &want, &scale),
                    rel_err(&g32, &want, &scale),
                    rel_err(&g32f, &want, &scale),
                );
                eprintln!(
                    "dual model {mi} exact {exact} n {n} H {hh} p {p}: rel err f64 {e64:.1e} \
                     f32 {e32:.1e} f32fast {e32f:.1e}"
                );
                assert!(e64 < 1e-12, "f64 error {e64}");
                assert!(e32 < 2e-5, "f32 error {e32}");
                assert!(e32f < 5e-5, "f32fast error {e32f}");
            }
        }
    }
}
