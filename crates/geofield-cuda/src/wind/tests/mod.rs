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
