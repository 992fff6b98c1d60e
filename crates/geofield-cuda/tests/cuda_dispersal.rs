//! The dispersal kernels' contract on a device: the probe, and inputs the kernels cannot take refused as typed errors (no launch). The kernels' results
//! are tested against the CPU library through the public API
//! (`crates/geofield/tests/dispersal_backends.rs`); the parameter blocks' sizes are checked in
//! `src/dispersal/tests.rs`.
//!
//! GPU checks skip (with a notice) without a GPU and fail when GEOFIELD_REQUIRE_GPU=1.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use geofield_cuda::dispersal::{
    GridDims, HostOut, KernelShape, OutPrecision, TileBins, dispersal_cutoff, dispersal_exact,
};
use geofield_cuda::{CudaError, probe, test_gpu};

#[test]
fn cuda_probe_reports_the_device() {
    let Some(gpu) = test_gpu() else { return };
    let r = probe(gpu.info().ordinal);
    eprintln!("{r:#?}");
    assert!(r.ok, "probe failed: {:?}", r.reason);
    let d = r.device.expect("device info");
    assert!(d.multiprocessors > 0 && d.total_memory_bytes > 0 && !d.name.is_empty());
    assert!(d.compute_capability.0 >= 7, "{:?}", d.compute_capability);
    assert!(r.driver_version.is_some() && r.nvrtc_version.is_some());
    eprintln!("compiling for {}", gpu.arch());
}

#[test]
fn cuda_invalid_inputs_are_errors() {
    let Some(gpu) = test_gpu() else { return };
    let grid = GridDims {
        cols: 8,
        rows: 8,
        cell_size_m: 1.0,
    };
    let w3 = KernelShape::Weibull {
        d: 1e-3,
        theta: 3.0,
    };
    let is_invalid =
        |r: Result<(HostOut, f32), CudaError>| matches!(r, Err(CudaError::InvalidInput { .. }));
    let f = OutPrecision::F32;
    assert!(is_invalid(dispersal_exact(
        &gpu,
        grid,
        w3,
        None,
        &[1.0, 2.0],
        &[1.0],
        &[1.0, 1.0],
        f
    )));
    assert!(is_invalid(dispersal_exact(
        &gpu,
        grid,
        w3,
        None,
        &[f64::NAN],
        &[1.0],
        &[1.0],
        f
    )));
    let bad = KernelShape::Lognormal { x0: 0.0, xb: 1.0 };
    assert!(is_invalid(dispersal_exact(
        &gpu,
        grid,
        bad,
        None,
        &[1.0],
        &[1.0],
        &[1.0],
        f
    )));
    assert!(is_invalid(dispersal_exact(
        &gpu,
        grid,
        w3,
        Some((2.0, 8.0)),
        &[1.0],
        &[1.0],
        &[1.0],
        f
    )));
    let starts = [0u32, 1];
    let bins = TileBins {
        tile_size_m: 8.0,
        tiles_x: 2,
        tiles_y: 1,
        origin_u_m: 0.0,
        origin_v_m: 0.0,
        tile_start: &starts,
        du: &[1.0],
        dv: &[1.0],
        w: &[1.0],
    };
    assert!(is_invalid(dispersal_cutoff(&gpu, grid, w3, &bins, 10.0, f)));
    // Empty grid: an empty output, no launch.
    let empty = GridDims {
        cols: 0,
        rows: 5,
        cell_size_m: 1.0,
    };
    let (out, _) = dispersal_exact(&gpu, empty, w3, None, &[1.0], &[1.0], &[1.0], f).unwrap();
    assert!(out.is_empty());
}
