//! The GPU's dispersal kernels compute in f32: asking for an f64 map on the GPU is refused with
//! a message that says so (never an f32 computation written out as f64). Skips without a GPU;
//! fails when GEOFIELD_REQUIRE_GPU=1.
#![allow(clippy::unwrap_used, clippy::panic)]

use geofield::Backend;
use geofield::dispersal::{self, DisperseOptions, Method, Precision, reference_precision};
use geofield::synth::{self, DbhModel, Pattern};
use geofield_core::{Extent, GridSpec};

#[test]
fn f64_on_the_gpu_is_refused_for_every_method() {
    assert_eq!(reference_precision(&Backend::Cpu), Precision::F64);
    let Some(gpu) = geofield_cuda::test_gpu().map(Backend::Cuda) else {
        return;
    };
    assert_eq!(reference_precision(&gpu), Precision::F32);
    let sp = synth::sbs_species();
    let e = Extent::new(0.0, 0.0, 64.0, 64.0).unwrap();
    let g = GridSpec::from_extent(e, 1.0).unwrap();
    let st = synth::forest(
        200,
        &e,
        3,
        Pattern::Uniform,
        DbhModel::Realistic,
        &synth::SBS_SHARES,
    );
    for method in [
        Method::Exact,
        Method::Cutoff,
        Method::Multires,
        Method::Auto,
    ] {
        let o = DisperseOptions {
            method,
            precision: Precision::F64,
            ..Default::default()
        };
        match dispersal::disperse(&gpu, &g, &sp, &st, &o) {
            Err(e) => {
                let m = e.to_string();
                assert!(m.contains("F64") && m.contains("f32"), "{method:?}: {m}");
            }
            Ok(_) => panic!("{method:?}: an f64 map was computed on the GPU"),
        }
        // F32 on the GPU and F64 on the CPU still run.
        let o32 = DisperseOptions {
            precision: Precision::F32,
            ..o
        };
        dispersal::disperse(&gpu, &g, &sp, &st, &o32).unwrap();
        dispersal::disperse(&Backend::Cpu, &g, &sp, &st, &o).unwrap();
    }
}
