//! The wind kernels' contract: the parameter blocks' sizes, the NVRTC compile of the module
//! (every kernel present, no spills) and the up-front memory check. The solvers' results are
//! tested against the CPU library through the public API (`crates/geofield/tests/wind_backends.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::params::PARAM_SIZES;
use crate::{compile_with_log, module_source, nvrtc_present, test_gpu};

#[test]
fn param_struct_sizes() {
    for (name, rust, c) in PARAM_SIZES {
        assert_eq!(rust, c, "{name}: Rust {rust} bytes, C asserts {c}");
    }
    let src = module_source("wind").unwrap();
    for (name, _, c) in PARAM_SIZES {
        assert!(
            src.contains(&format!("GF_CHECK_SIZE({name}, {c});")),
            "wind.cu lacks the size check of {name}"
        );
    }
}

/// Every kernel the wrappers launch.
const KERNELS: &[&str] = &[
    "wind_west_compact_f32",
    "wind_west_parity_f32",
    "wind_divmax_f32",
    "wind_reduce_max_f64",
    "wind_reduce_sum_f64",
    "wind_factor_f32",
    "wind_line_rhs_f32",
    "wind_thomas_f32",
    "wind_coarsest_f32",
    "wind_restrict_f32",
    "wind_prolong_f32",
    "wind_edge_rows_f32",
    "wind_edge_rows_f64",
    "wind_op_f64",
    "wind_sor_f64",
    "wind_cg_update_f64",
    "wind_dot_z_f64",
    "wind_cg_dir_f64",
    "wind_to_f32",
    "wind_add_f64",
    "wind_assemble_f64",
    "wind_coarsen_f64",
];

/// Compiles the wind module with NVRTC (no GPU needed) for sm_90 and sm_80: every kernel is
/// there and nothing spills. Skips with a notice without libnvrtc (run with
/// LD_LIBRARY_PATH=/opt/nvrtc on the dev machine), unless GEOFIELD_REQUIRE_GPU=1.
#[test]
fn wind_module_compiles_with_nvrtc() {
    if !nvrtc_present() {
        assert!(
            std::env::var("GEOFIELD_REQUIRE_GPU").as_deref() != Ok("1"),
            "GEOFIELD_REQUIRE_GPU=1 but libnvrtc is missing"
        );
        eprintln!("skipping: libnvrtc not loadable");
        return;
    }
    let src = module_source("wind").unwrap();
    for arch in ["sm_90", "sm_80"] {
        let c = compile_with_log("wind", src, arch).unwrap_or_else(|e| panic!("{e}"));
        for k in KERNELS {
            assert!(
                c.ptx.contains(&format!(".entry {k}(")),
                "{arch}: no kernel {k} in the PTX"
            );
        }
        for line in c.log.lines().filter(|l| l.contains("Used")) {
            eprintln!("wind {arch}: {}", line.trim());
        }
        let spills: Vec<&str> = c
            .log
            .lines()
            .filter(|l| l.contains("spill") && !l.contains(" 0 bytes spill stores"))
            .collect();
        assert!(spills.is_empty(), "wind/{arch} spills: {spills:?}");
    }
}

/// A problem larger than the free device memory is refused before anything is allocated, with
/// a message that says how much it needs and what to do.
#[test]
fn too_large_for_the_device_is_refused_up_front() {
    let Some(gpu) = test_gpu() else { return };
    let e = gpu.ensure_free("a test problem", u64::MAX).unwrap_err();
    let msg = e.to_string();
    assert!(
        matches!(e, crate::error::CudaError::DeviceMemory { .. }),
        "{msg}"
    );
    assert!(
        msg.contains("a test problem needs about") && msg.contains("--backend cpu"),
        "{msg}"
    );
    gpu.ensure_free("one byte", 1).unwrap();
}

/// Two parts of a split solve on a 16 × 8 × 4 box, each on device 0 with its own context:
/// part p claims rows `bands[p]`, assembles its band (levels m = 2) and hands the result to
/// `then`. Returns each part's outcome (a panic's message as `Err(Err(..))`).
#[allow(clippy::type_complexity)]
fn two_parts(
    bands: [std::ops::Range<usize>; 2],
    then: &(dyn Fn(usize, super::GpuSherman, &super::LocalPart<'_>) -> Result<(), String> + Sync),
) -> Vec<Result<Result<(), String>, String>> {
    use super::{BandSpec, CycleShape, GpuSherman, LocalParts, ShermanGrid};
    let (rows, cols, nz) = (16, 8, 4);
    let n = rows * cols * nz;
    let ones = |len: usize| vec![1.0; len];
    let (cu, cv, cw) = (
        ones(nz * rows * (cols + 1)),
        ones(nz * (rows + 1) * cols),
        ones((nz + 1) * rows * cols),
    );
    let div0: Vec<f64> = (0..n).map(|i| ((i * 7919) % 13) as f64 * 1e-3).collect();
    let ground = vec![0u32; rows * cols];
    let (dz, dzc) = (vec![10.0; nz], {
        let mut d = vec![10.0; nz + 1];
        d[0] = 5.0;
        d[nz] = 5.0;
        d
    });
    let parts = LocalParts::new(2);
    std::thread::scope(|s| {
        let hs: Vec<_> = bands
            .into_iter()
            .enumerate()
            .map(|(p, band)| {
                let (parts, cu, cv, cw, div0, ground, dz, dzc) =
                    (&parts, &cu, &cv, &cw, &div0, &ground, &dz, &dzc);
                s.spawn(move || {
                    let gpu = crate::Gpu::open(0).unwrap();
                    let r = band.len();
                    let lr = |v: &[f64], per: usize, w: usize, extra: usize, layers: usize| {
                        super::layer_rows(v, layers, per, w, band.start..band.end + extra)
                    };
                    let (bu, bv, bw, bd) = (
                        lr(cu, rows, cols + 1, 0, nz),
                        lr(cv, rows + 1, cols, 1, nz),
                        lr(cw, rows, cols, 0, nz + 1),
                        lr(div0, rows, cols, 0, nz),
                    );
                    let g = ShermanGrid {
                        rows: r,
                        cols,
                        nz,
                        dx_m: 10.0,
                        dz_m: dz,
                        dzc_m: dzc,
                        cu: &bu,
                        cv: &bv,
                        cw: &bw,
                        ground_k: &ground[..r * cols],
                        div0: &bd,
                        vol_frac: None,
                    };
                    let spec = BandSpec {
                        first_row: band.start,
                        all_rows: rows,
                        levels: 2,
                    };
                    let shape = CycleShape {
                        smooth: 2,
                        coarsest_sweeps: 8,
                    };
                    let me = parts.part(p);
                    let dev = GpuSherman::assemble_band(&gpu, &g, shape, spec, &me)
                        .map_err(|e| e.to_string())?;
                    then(p, dev, &me)
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| {
                h.join().map_err(|e| {
                    e.downcast_ref::<String>()
                        .cloned()
                        .unwrap_or_else(|| "a panic".into())
                })
            })
            .collect()
    })
}

/// A part of a split solve that fails while assembling its band (here: a band that does not
/// start at a multiple of 2^m rows) fails every part, and no part waits for it: the others get
/// "another part ... failed".
#[test]
fn a_part_failing_its_band_fails_every_part() {
    if test_gpu().is_none() {
        return;
    }
    // Part 0 holds rows 0..8 rightly; part 1 claims rows 9..16, off the 2^2 grid of bands.
    let results = two_parts([0..8, 9..16], &|_, _, _| Ok(()));
    let e0 = results[0].clone().unwrap().unwrap_err();
    let e1 = results[1].clone().unwrap().unwrap_err();
    assert!(e0.contains("another part"), "{e0}");
    assert!(e1.contains("cannot be coarsened"), "{e1}");
}

/// A part whose solve fails alone after the bands are assembled (here: its stopping rule is
/// refused, before its first halo exchange) abandons the run: the other part, waiting in that
/// exchange, ends with the failing part's cause instead of waiting for ever.
#[test]
fn a_part_failing_in_the_solve_ends_every_part() {
    use super::{Method, StopRule};
    if test_gpu().is_none() {
        return;
    }
    let results = two_parts([0..8, 8..16], &|p, mut dev, me| {
        let stop = StopRule {
            max_iterations: 50,
            threshold_per_s: if p == 1 { f64::NAN } else { 1e-9 },
            check_every: 1,
        };
        dev.solve_split(me, Method::Multigrid, stop, &mut |_, _| {})
            .map(|_| ())
            .map_err(|e| e.to_string())
    });
    let e1 = results[1].clone().unwrap().unwrap_err();
    assert!(e1.contains("threshold"), "{e1}");
    let e0 = results[0].clone().unwrap_err();
    assert!(
        e0.contains("abandoned") && e0.contains("part 1") && e0.contains("threshold"),
        "{e0}"
    );
}
