use super::local::local_reference;
use super::*;

// ---------------------------------------------------------------------------------------------
// The paper's method.
// ---------------------------------------------------------------------------------------------
#[test]
fn paper_matches_reference() {
    let Some(gpu) = test_gpu() else { return };
    for (n, hh, rows, cols) in [
        (1, 1, 5, 6),
        (2, 3, 6, 7),
        (10, 11, 30, 40),
        (40, 3, 17, 19),
    ] {
        let c = cov1(CovModel::Exponential, 400.0, 800.0, 0.0);
        let cs = case(n, rows, cols, n.min(3), 555 + n as u64);
        let z = values(&cs.xy, hh, 9);
        let nn = cs.grid.len();
        let mut want = vec![0.0; nn * hh];
        for r in 0..rows {
            for col in 0..cols {
                let (x, y) = cs.grid.node(r, col);
                let (pr, _) = local_reference(&c, &cs.xy, &z, hh, n, None, 1, 1.0, &[], x, y);
                for h in 0..hh {
                    want[h * nn + r * cols + col] = pr[h];
                }
            }
        }
        for mode in [PaperMode::Exp1, PaperMode::Exp2, PaperMode::Exp4] {
            let (g64, _) = paper_krige::<f64>(&gpu, &c, &cs.grid, &cs.xy, &z, hh, mode).unwrap();
            let (g32, _) = paper_krige::<f32>(&gpu, &c, &cs.grid, &cs.xy, &z, hh, mode).unwrap();
            let (e64, e32) = (max_err(&g64, &want), max_err(&g32, &want));
            eprintln!("paper n {n} H {hh} {mode:?}: f64 {e64:.1e} f32 {e32:.1e}");
            assert!(e64 < 1e-9, "paper f64 error {e64}");
            assert!(e32 < 2e-2, "paper f32 error {e32}");
        }
    }
}
