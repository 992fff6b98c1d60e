use super::*;

// ---------------------------------------------------------------------------------------------
// Global variance.
// ---------------------------------------------------------------------------------------------
pub(super) struct Factors {
    pub(super) linv: Vec<f64>,
    pub(super) g: Vec<f64>,
    pub(super) rinv: Vec<f64>,
}

pub(super) fn factors(c: &Covariance, xy: &[f64], p: usize, s: f64) -> Factors {
    let n = xy.len() / 2;
    let cz = c.to_params().unwrap().c_zero;
    let mut a = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            let (dx, dy) = (xy[2 * i] - xy[2 * j], xy[2 * i + 1] - xy[2 * j + 1]);
            a[i * n + j] = if i == j {
                cz
            } else {
                ref_cov(c, (dx * dx + dy * dy).sqrt())
            };
        }
    }
    let l = cholesky(&a, n).expect("SPD sample matrix");
    let linv = lower_inverse(&l, n);
    let mut g = vec![0.0; n * p];
    for i in 0..n {
        for l_ in 0..p {
            g[i * p + l_] = (0..=i)
                .map(|k| linv[i * n + k] * drift(xy[2 * k], xy[2 * k + 1], s, p)[l_])
                .sum();
        }
    }
    let mut m = vec![0.0; p * p];
    for a_ in 0..p {
        for b in 0..p {
            m[a_ * p + b] = (0..n).map(|i| g[i * p + a_] * g[i * p + b]).sum();
        }
    }
    let rinv = if p > 0 {
        lower_inverse(&cholesky(&m, p).unwrap(), p)
    } else {
        Vec::new()
    };
    Factors { linv, g, rinv }
}

/// σ² from the bordered system [[C, F], [Fᵀ, 0]] [λ; μ] = [k; f]: C₀ − λᵀk − μᵀf (simple: C λ = k).
fn variance_reference(c: &Covariance, xy: &[f64], p: usize, s: f64, x: f64, y: f64) -> f64 {
    let n = xy.len() / 2;
    let cz = c.to_params().unwrap().c_zero;
    let m = n + p;
    let mut a = vec![0.0; m * m];
    let mut b = vec![0.0; m];
    for i in 0..n {
        for j in 0..n {
            let (dx, dy) = (xy[2 * i] - xy[2 * j], xy[2 * i + 1] - xy[2 * j + 1]);
            a[i * m + j] = if i == j {
                cz
            } else {
                ref_cov(c, (dx * dx + dy * dy).sqrt())
            };
        }
        let f = drift(xy[2 * i], xy[2 * i + 1], s, p);
        for l in 0..p {
            a[i * m + n + l] = f[l];
            a[(n + l) * m + i] = f[l];
        }
        let (dx, dy) = (xy[2 * i] - x, xy[2 * i + 1] - y);
        b[i] = ref_cov(c, (dx * dx + dy * dy).sqrt());
    }
    let f0 = drift(x, y, s, p);
    b[n..].copy_from_slice(&f0);
    let sol = solve(a, b.clone(), m).unwrap();
    let v = cz - (0..m).map(|i| sol[i] * b[i]).sum::<f64>();
    v.max(0.0)
}

#[test]
fn variance_matches_reference() {
    let Some(gpu) = test_gpu() else { return };
    let cases = [
        (cov1(CovModel::Exponential, 1.0, 300.0, 0.1), 1, 0, 9, 7, 1),
        (cov1(CovModel::Gaussian, 1.0, 250.0, 0.05), 2, 1, 12, 10, 2),
        (cov1(CovModel::Spherical, 2.0, 400.0, 0.0), 40, 3, 30, 37, 8),
        (
            cov1(CovModel::Exponential, 1.0, 300.0, 0.0),
            300,
            6,
            9,
            8,
            10,
        ),
        (
            cov1(CovModel::Exponential, 1.0, 300.0, 0.0),
            500,
            1,
            6,
            7,
            10,
        ),
    ];
    for (c, n, p, rows, cols, co) in cases {
        let cs = case(n, rows, cols, co, 1234 + n as u64);
        let s = 500.0;
        let fa = factors(&c, &cs.xy, p, s);
        let inp = VarianceInputs {
            samples_xy: &cs.xy,
            linv: &fa.linv,
            g: &fa.g,
            rinv: &fa.rinv,
            drift_terms: p,
            drift_scale: s,
            support: Default::default(),
        };
        let mut want = Vec::new();
        for r in 0..rows {
            for col in 0..cols {
                let (x, y) = cs.grid.node(r, col);
                want.push(variance_reference(&c, &cs.xy, p, s, x, y));
            }
        }
        let (v64, t) = global_variance::<f64>(&gpu, &c, &cs.grid, &inp, false, Some(97)).unwrap();
        let (v32, _) = global_variance::<f32>(&gpu, &c, &cs.grid, &inp, false, None).unwrap();
        let (vtf, _) = global_variance::<f32>(&gpu, &c, &cs.grid, &inp, true, None).unwrap();
        let cz = c.to_params().unwrap().c_zero;
        let (e64, e32, etf) = (
            max_err(&v64, &want) / cz,
            max_err(&v32, &want) / cz,
            max_err(&vtf, &want) / cz,
        );
        eprintln!(
            "variance n {n} p {p}: rel err f64 {e64:.1e} f32 {e32:.1e} tf32 {etf:.1e} \
             (tiles of {})",
            t.tile_nodes
        );
        assert!(e64 < 1e-9, "f64 variance error {e64}");
        assert!(e32 < 2e-3, "f32 variance error {e32}");
    }
}
