//! The flock kernels' contract: exact-rounding PTX, and configurations or states the kernels
//! cannot take are refused. The GPU flock's results are tested against the CPU library
//! (`crates/geofield/tests/flock_backends.rs`).
//!
//! The PTX check needs NVRTC only; the state checks skip (with a notice) without a GPU and fail
//! when GEOFIELD_REQUIRE_GPU=1.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use geofield_cuda::flock::{FlockConfig, FlockHostState, FlockSearch, GpuFlock};
use geofield_cuda::{compile_check, module_source, nvrtc_present, test_gpu};

use geofield_cuda::flock::FlockConstants;

fn config(k: u32, world_radius: f32, search: FlockSearch) -> FlockConfig {
    FlockConfig {
        constants: FlockConstants::opensteer(world_radius),
        k,
        r2: 81.0,
        dt: 1.0 / 60.0,
        search,
    }
}

/// `n` agents on a line along x, heading +x, at rest.
fn line_state(n: usize) -> FlockHostState {
    FlockHostState {
        pos: (0..n).map(|i| [i as f32 * 0.5, 0.0, 0.0]).collect(),
        fwd: vec![[1.0, 0.0, 0.0]; n],
        speed: vec![0.0; n],
        acc: vec![[0.0; 3]; n],
    }
}

/// Every f32 operation of the module is exact-rounding PTX: no flush-to-zero, approximate or
/// fused f32 instruction, even though the module is compiled with --use_fast_math.
#[test]
fn flock_ptx_has_no_inexact_f32_instruction() {
    if !nvrtc_present() {
        eprintln!("skipping: no NVRTC");
        return;
    }
    let src = module_source("flock").unwrap();
    let ptx = compile_check("flock", src, "sm_90").unwrap();
    assert!(
        ptx.contains(".entry flock_predators"),
        "the scene's predator kernel"
    );
    let bad: Vec<&str> = ptx
        .lines()
        .map(str::trim)
        .filter(|l| {
            l.contains(".ftz")
                || l.contains(".approx")
                || l.starts_with("fma.rn.f32")
                || l.starts_with("mad.f32")
                || l.starts_with("mad.rn.f32")
        })
        .collect();
    assert!(
        bad.is_empty(),
        "{} inexact f32 instructions, e.g. {:?}",
        bad.len(),
        &bad[..bad.len().min(10)]
    );
}

/// A state the kernels cannot take is refused on upload (the configuration checks are host-only,
/// in `src/flock/tests.rs`).
#[test]
fn flock_rejects_bad_input() {
    let good = config(7, 50.0, FlockSearch::Grid);
    good.validate().unwrap();
    let Some(gpu) = test_gpu() else { return };
    assert_eq!(
        GpuFlock::new(&gpu, good, &line_state(10)).unwrap().len(),
        10
    );
    let mut s = line_state(10);
    s.pos[3][1] = f32::NAN;
    assert!(GpuFlock::new(&gpu, good, &s).is_err());
    let mut s = line_state(10);
    s.acc.pop();
    assert!(GpuFlock::new(&gpu, good, &s).is_err());
    let s = line_state(10);
    assert!(GpuFlock::new(&gpu, FlockConfig { k: 65, ..good }, &s).is_err());
}
