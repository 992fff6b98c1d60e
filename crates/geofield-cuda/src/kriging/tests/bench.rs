use super::variance::factors;
use super::*;

// ---------------------------------------------------------------------------------------------
// Benchmark (ignored): the targets of the brief, medians of repeated calls (CUDA-event times).
// ---------------------------------------------------------------------------------------------
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[test]
#[ignore = "benchmark: run on the GPU machine with --ignored --nocapture"]
fn bench_kriging() {
    let Some(gpu) = test_gpu() else { return };
    let mut report = String::new();
    let mut line = |s: String| {
        eprintln!("{s}");
        report.push_str(&s);
        report.push('\n');
    };
    line(format!("device: {:?}", gpu.info()));
    let reps = 5;
    // Dual: 1e6 nodes x 500 samples, H = 1 (exponential, a = 300, the note's case).
    {
        let cs = case(500, 1000, 1000, 0, 42);
        let c = cov1(CovModel::Exponential, 1.0, 300.0, 0.0);
        let mut rng = Rng::seeded(3);
        let alpha: Vec<f64> = (0..500).map(|_| rng.uniform(-1.0, 1.0)).collect();
        let inp = DualInputs {
            samples_xy: &cs.xy,
            alpha: &alpha,
            beta: &[0.1],
            surfaces: 1,
            drift_terms: 1,
            drift_scale: 500.0,
        };
        let (r64, _) = dual_predict::<f64>(&gpu, &c, &cs.grid, &inp, false).unwrap();
        for (label, fast) in [("f32fast", true), ("f32", false)] {
            let mut ts = Vec::new();
            let mut out = Vec::new();
            for _ in 0..reps + 1 {
                let (o, t) = dual_predict::<f32>(&gpu, &c, &cs.grid, &inp, fast).unwrap();
                ts.push(t.kernel_ms);
                out = o;
            }
            let ms = median(ts[1..].to_vec());
            line(format!(
                "dual {label} 1e6 nodes x 500 samples H=1: {ms:.3} ms, {:.3e} pairs/s, max abs \
                 err vs f64 {:.2e}",
                5e8 / (ms * 1e-3),
                max_err(&out, &r64)
            ));
        }
        let mut ts = Vec::new();
        for _ in 0..reps {
            ts.push(
                dual_predict::<f64>(&gpu, &c, &cs.grid, &inp, false)
                    .unwrap()
                    .1
                    .kernel_ms,
            );
        }
        let ms = median(ts);
        line(format!(
            "dual f64 1e6 nodes x 500 samples H=1: {ms:.3} ms, {:.3e} pairs/s",
            5e8 / (ms * 1e-3)
        ));
    }
    // The paper's case at 10x zoom: 500 x 900 nodes, 10 wells, 11 surfaces.
    {
        let cs = case(10, 500, 900, 0, 11);
        let c = cov1(CovModel::Exponential, 400.0, 800.0, 0.0);
        let z = values(&cs.xy, 11, 4);
        let mut rng = Rng::seeded(8);
        let alpha: Vec<f64> = (0..110).map(|_| rng.uniform(-1.0, 1.0)).collect();
        let beta = vec![0.5; 11];
        let inp = DualInputs {
            samples_xy: &cs.xy,
            alpha: &alpha,
            beta: &beta,
            surfaces: 11,
            drift_terms: 1,
            drift_scale: 500.0,
        };
        for (label, fast) in [("f32fast", true), ("f32", false)] {
            let ts: Vec<f64> = (0..reps)
                .map(|_| {
                    dual_predict::<f32>(&gpu, &c, &cs.grid, &inp, fast)
                        .unwrap()
                        .1
                        .kernel_ms
                })
                .collect();
            line(format!(
                "dual {label} 450k nodes x 10 samples H=11: {:.3} ms",
                median(ts)
            ));
        }
        let ts: Vec<f64> = (0..reps)
            .map(|_| {
                dual_predict::<f64>(&gpu, &c, &cs.grid, &inp, false)
                    .unwrap()
                    .1
                    .kernel_ms
            })
            .collect();
        line(format!(
            "dual f64 450k nodes x 10 samples H=11: {:.3} ms",
            median(ts)
        ));
        let (r64, _) =
            paper_krige::<f64>(&gpu, &c, &cs.grid, &cs.xy, &z, 11, PaperMode::Exp4).unwrap();
        for mode in [PaperMode::Exp1, PaperMode::Exp2, PaperMode::Exp4] {
            for prec in ["f32", "f64"] {
                let mut ts = Vec::new();
                let mut err = 0.0;
                for _ in 0..3 {
                    if prec == "f32" {
                        let (o, t) =
                            paper_krige::<f32>(&gpu, &c, &cs.grid, &cs.xy, &z, 11, mode).unwrap();
                        ts.push(t.kernel_ms);
                        err = max_err(&o, &r64);
                    } else {
                        let (_, t) =
                            paper_krige::<f64>(&gpu, &c, &cs.grid, &cs.xy, &z, 11, mode).unwrap();
                        ts.push(t.kernel_ms);
                    }
                }
                line(format!(
                    "paper {mode:?} {prec} 450k nodes x 10 wells H=11: {:.3} ms (f32 max abs err \
                     vs f64 exp4 {err:.2e})",
                    median(ts)
                ));
            }
        }
    }
    // Global variance: 1e6 nodes x 500 samples, ordinary kriging.
    {
        let cs = case(500, 1000, 1000, 0, 42);
        let c = cov1(CovModel::Exponential, 1.0, 300.0, 0.0);
        let fa = factors(&c, &cs.xy, 1, 500.0);
        let inp = VarianceInputs {
            samples_xy: &cs.xy,
            linv: &fa.linv,
            g: &fa.g,
            rinv: &fa.rinv,
            drift_terms: 1,
            drift_scale: 500.0,
            support: Default::default(),
        };
        let (v64, _) = global_variance::<f64>(&gpu, &c, &cs.grid, &inp, false, None).unwrap();
        for (label, tf32) in [("f32", false), ("f32+tf32", true)] {
            let mut ts = Vec::new();
            let mut last = None;
            for _ in 0..reps + 1 {
                let (o, t) = global_variance::<f32>(&gpu, &c, &cs.grid, &inp, tf32, None).unwrap();
                ts.push(t);
                last = Some(o);
            }
            let t = ts[1..].to_vec();
            let pick = |f: fn(&VarianceTimes) -> f64| median(t.iter().map(f).collect());
            line(format!(
                "variance {label} 1e6 nodes x 500 samples p=1: {:.3} ms (K {:.3}, GEMM {:.3}, \
                 reduce {:.3}; tiles of {}), max abs err vs f64 {:.2e} (C0 = 1)",
                pick(|x| x.kernel_ms),
                pick(|x| x.k_ms),
                pick(|x| x.gemm_ms),
                pick(|x| x.reduce_ms),
                t[0].tile_nodes,
                max_err(last.as_ref().unwrap(), &v64)
            ));
        }
        let ts: Vec<f64> = (0..3)
            .map(|_| {
                global_variance::<f64>(&gpu, &c, &cs.grid, &inp, false, None)
                    .unwrap()
                    .1
                    .kernel_ms
            })
            .collect();
        line(format!(
            "variance f64 1e6 nodes x 500 samples p=1: {:.3} ms",
            median(ts)
        ));
    }
    // Local: 1e6 nodes, k = 32, 10,000 samples, ordinary kriging with variance.
    {
        let cs = case(10_000, 1000, 1000, 0, 5);
        let c = cov1(CovModel::Exponential, 1.0, 300.0, 0.0);
        let z = values(&cs.xy, 1, 6);
        let inp = LocalInputs {
            samples_xy: &cs.xy,
            values: &z,
            surfaces: 1,
            k: 32,
            radius2: None,
            drift_terms: 1,
            drift_scale: 500.0,
            means: &[],
            want_variance: true,
            support: Default::default(),
        };
        let (o64, _) = local_krige::<f64>(&gpu, &c, &cs.grid, &inp).unwrap();
        for prec in ["f32", "f64"] {
            let mut ts = Vec::new();
            let mut err = (0.0, 0.0);
            for _ in 0..3 {
                if prec == "f32" {
                    let (o, t) = local_krige::<f32>(&gpu, &c, &cs.grid, &inp).unwrap();
                    ts.push(t);
                    err = (
                        max_err(&o.pred, &o64.pred),
                        max_err(o.var.as_ref().unwrap(), o64.var.as_ref().unwrap()),
                    );
                } else {
                    ts.push(local_krige::<f64>(&gpu, &c, &cs.grid, &inp).unwrap().1);
                }
            }
            let pick = |f: fn(&LocalTimes) -> f64| median(ts.iter().map(f).collect());
            line(format!(
                "local {prec} 1e6 nodes k=32 10k samples p=1 +variance: {:.3} ms (build {:.3}, \
                 search {:.3}, solve {:.3}; end to end {:.1}); f32 max abs err vs f64 pred \
                 {:.2e} var {:.2e}",
                pick(|x| x.kernel_ms),
                pick(|x| x.build_ms),
                pick(|x| x.search_ms),
                pick(|x| x.solve_ms),
                pick(|x| x.total_ms),
                err.0,
                err.1
            ));
        }
    }
    if let Ok(dir) = std::env::var("OUT") {
        let _ = std::fs::write(
            std::path::Path::new(&dir).join("kriging_bench.txt"),
            &report,
        );
    }
}
