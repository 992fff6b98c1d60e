//! Host-side tests (no GPU): shape constants, parameter-struct sizes, input checks.

use super::params::{PARAM_STRUCTS, ShapeConsts};
use super::*;
use crate::CudaError;

fn shapes() -> Vec<KernelShape> {
    vec![
        KernelShape::Weibull {
            d: 3.8e-5,
            theta: 3.0,
        },
        KernelShape::Weibull {
            d: 2.0e-3,
            theta: 2.0,
        },
        KernelShape::Weibull {
            d: 0.15,
            theta: 1.0,
        },
        KernelShape::Weibull {
            d: 2.0e-3,
            theta: 1.5,
        },
        KernelShape::Lognormal { x0: 30.0, xb: 0.6 },
        KernelShape::TwoDt { u: 6447.0, p: 1.0 },
        KernelShape::TwoDt { u: 400.0, p: 1.7 },
    ]
}

/// The kernels evaluate K from x = (s r)^2 with host-derived constants; in exact arithmetic
/// that must be the model's K(r).
#[test]
fn shape_constants_reproduce_the_model() {
    let tags: Vec<&str> = shapes()
        .iter()
        .map(|s| ShapeConsts::new(s, "t").map(|c| c.tag).unwrap_or("?"))
        .collect();
    assert_eq!(tags, ["w3", "w2", "w1", "wgen", "logn", "t1", "tgen"]);
    for shape in shapes() {
        let c = ShapeConsts::new(&shape, "test").expect("valid shape");
        for i in 0..=400 {
            let r = f64::from(i) * 0.37;
            let x = (c.scale * r) * (c.scale * r);
            let (want, got) = (shape.eval(r), c.eval_scaled(x));
            let tol = 1e-6 * want.abs() + 1e-300;
            // a, b are f32 on the device: allow their rounding (relative 6e-8 x |ln K|).
            let tol = tol.max(want * 1e-7 * want.ln().abs());
            assert!(
                (want - got).abs() <= tol,
                "{shape:?} r={r}: model {want} kernel {got}"
            );
        }
    }
    assert_eq!(KernelShape::Lognormal { x0: 3.0, xb: 1.0 }.eval(0.0), 0.0);
    assert_eq!(KernelShape::Weibull { d: 1.0, theta: 1.5 }.eval(0.0), 1.0);
}

#[test]
fn bad_shapes_are_errors() {
    for s in [
        KernelShape::Weibull { d: 0.0, theta: 3.0 },
        KernelShape::Weibull {
            d: 1e-3,
            theta: f64::NAN,
        },
        KernelShape::Lognormal { x0: -1.0, xb: 0.5 },
        KernelShape::TwoDt { u: 10.0, p: 0.0 },
        KernelShape::Weibull {
            d: 1e-300,
            theta: 0.01,
        },
    ] {
        let e = ShapeConsts::new(&s, "k");
        assert!(
            matches!(e, Err(CudaError::InvalidInput { .. })),
            "{s:?} gave {e:?}"
        );
    }
}

/// Every Rust parameter struct has the size that dispersal.cu's GF_CHECK_SIZE asserts.
#[test]
fn param_struct_sizes_match_the_c_side() {
    let src = crate::module_source("dispersal").expect("registered");
    for &(rust, c, size) in PARAM_STRUCTS {
        let decl = format!("GF_CHECK_SIZE({c}, {size});");
        assert!(
            src.contains(&decl),
            "dispersal.cu lacks `{decl}` (Rust {rust})"
        );
    }
    assert_eq!(std::mem::size_of::<params::ExactParams>(), 72);
    assert_eq!(std::mem::size_of::<params::CutoffParams>(), 88);
    assert_eq!(std::mem::size_of::<params::MultiresParams>(), 168);
    assert_eq!(std::mem::size_of::<params::FinalizeParams>(), 16);
    assert_eq!(params::MULTIRES_MAX_LEVELS, 16);
    assert!(src.contains("#define GF_MR_MAX_LEVELS 16"));
    assert!(src.contains("#define EX_C 8") && src.contains("#define CO_C 4"));
}

#[test]
fn slices_fill_the_device_within_limits() {
    // Paper's largest case on an H100: 5e5 cells (707 x 707 -> 23 x 12 tiles), 1e5 trees.
    let s = check::exact_slices(276, 100_000, 500_000, 132);
    assert!((2..=24).contains(&s), "{s}");
    assert_eq!(
        check::exact_slices(276, 3000, 500_000, 132),
        1,
        "few trees: one slice"
    );
    assert_eq!(
        check::exact_slices(100_000, 1_000_000, 2e8 as u64, 132),
        1,
        "many tiles"
    );
    assert_eq!(check::exact_slices(1, 0, 1, 132), 1);
    assert!(check::exact_slices(1, u32::MAX - 1, 1, 10_000) <= 65_535);
}

#[test]
fn input_checks_are_errors() {
    let g = GridDims {
        cols: 10,
        rows: 7,
        cell_size_m: 1.0,
    };
    assert_eq!(check::grid("k", &g, 64).ok(), Some(70));
    assert!(
        check::grid(
            "k",
            &GridDims {
                cell_size_m: 0.0,
                ..g
            },
            64
        )
        .is_err()
    );
    assert!(
        check::grid(
            "k",
            &GridDims {
                rows: u32::MAX,
                ..g
            },
            32
        )
        .is_err()
    );
    assert!(check::same_len("k", "u, v", &[3, 3, 2]).is_err());
    assert!(check::finite64("k", "u", &[1.0, f64::INFINITY]).is_err());
    assert!(check::torus("k", &g, (10.0, 7.0), 32, 64).is_ok());
    assert!(check::torus("k", &g, (5.0, 7.0), 32, 64).is_err());

    let ts = [0u32, 1, 1, 2];
    let (du, dv, w) = ([0.5f32, 3.9], [1.0f32, 0.0], [1.0f32, 2.0]);
    let bins = TileBins {
        tile_size_m: 4.0,
        tiles_x: 3,
        tiles_y: 1,
        origin_u_m: -4.0,
        origin_v_m: 0.0,
        tile_start: &ts,
        du: &du,
        dv: &dv,
        w: &w,
    };
    assert_eq!(check::bins("k", &bins, 10.0).ok(), Some(2));
    assert!(check::bins("k", &TileBins { tiles_x: 2, ..bins }, 10.0).is_err());
    assert!(check::bins("k", &bins, -1.0).is_err());
    let bad_ts = [0u32, 2, 1, 2];
    assert!(
        check::bins(
            "k",
            &TileBins {
                tile_start: &bad_ts,
                ..bins
            },
            1.0
        )
        .is_err()
    );
    let outside = [0.5f32, 4.5];
    assert!(
        check::bins(
            "k",
            &TileBins {
                du: &outside,
                ..bins
            },
            1.0
        )
        .is_err()
    );

    // Pyramid over 4 x 4 leaves (K = 2): 16 + 4 + 1 nodes.
    let off = [0u32, 16, 20];
    let z = [0f32; 21];
    let rho = [0f32, 2.0, 4.0];
    let p = Pyramid {
        levels: 3,
        level_offset: &off,
        node_u: &z,
        node_v: &z,
        node_w: &z,
        rho_m: &rho,
    };
    let g4 = GridDims {
        cols: 4,
        rows: 3,
        cell_size_m: 1.0,
    };
    assert_eq!(check::pyramid("k", &g4, &p).ok(), Some(21));
    assert!(check::pyramid("k", &GridDims { cols: 5, ..g4 }, &p).is_err());
    assert!(
        check::pyramid(
            "k",
            &g4,
            &Pyramid {
                node_w: &z[..20],
                ..p
            }
        )
        .is_err()
    );
    let off_bad = [0u32, 16, 21];
    assert!(
        check::pyramid(
            "k",
            &g4,
            &Pyramid {
                level_offset: &off_bad,
                ..p
            }
        )
        .is_err()
    );
    assert!(check::pyramid("k", &g4, &Pyramid { levels: 17, ..p }).is_err());
}

#[test]
fn host_out_helpers() {
    let h = HostOut::F32(vec![1.0, 2.5]);
    assert_eq!(h.len(), 2);
    assert_eq!(h.to_f64(), vec![1.0, 2.5]);
    assert!(HostOut::empty(OutPrecision::F64).is_empty());
}

#[test]
fn plans_pick_kernels_and_launch_shapes() {
    let g = GridDims {
        cols: 45,
        rows: 70,
        cell_size_m: 0.5,
    };
    let w3 = KernelShape::Weibull {
        d: 1e-3,
        theta: 3.0,
    };
    let (u, v, w) = (vec![1.0; 20_000], vec![2.0; 20_000], vec![1.0f32; 20_000]);
    let p = plan_exact(
        g,
        w3,
        Some((22.5, 35.0)),
        &u,
        &v,
        &w,
        OutPrecision::F32,
        132,
    )
    .expect("valid")
    .expect("non-empty grid");
    assert_eq!(p.kernel, "dispersal_exact_w3_torus");
    assert_eq!((p.grid_dim.0, p.grid_dim.1), (2, 2));
    assert!(p.slices > 1 && p.grid_dim.2 == p.slices);
    assert_eq!(p.params.out_f64, 1, "slices write f64 partials");
    assert_eq!(p.params.slice_stride, 45 * 70);
    assert!(u64::from(p.params.trees_per_slice) * u64::from(p.slices) >= 20_000);
    let one = plan_exact(
        g,
        w3,
        None,
        &u[..3],
        &v[..3],
        &w[..3],
        OutPrecision::F32,
        132,
    )
    .expect("valid")
    .expect("non-empty");
    assert_eq!(
        (one.kernel.as_str(), one.slices, one.params.out_f64),
        ("dispersal_exact_w3_open", 1, 0)
    );
    let empty = GridDims { cols: 0, ..g };
    assert!(
        plan_exact(empty, w3, None, &u, &v, &w, OutPrecision::F64, 1)
            .expect("ok")
            .is_none()
    );

    let ts = [0u32, 0, 0, 0, 0];
    let bins = TileBins {
        tile_size_m: 32.0,
        tiles_x: 2,
        tiles_y: 2,
        origin_u_m: 0.0,
        origin_v_m: 0.0,
        tile_start: &ts,
        du: &[],
        dv: &[],
        w: &[],
    };
    let t = KernelShape::TwoDt { u: 100.0, p: 1.0 };
    let c = plan_cutoff(g, t, &bins, 20.0, OutPrecision::F64)
        .expect("ok")
        .expect("non-empty");
    assert_eq!(c.kernel, "dispersal_cutoff_t1");
    assert_eq!(c.grid_dim, (2, 3, 1));
    assert!(
        (f64::from(c.params.cut2) - 4.0).abs() < 1e-6,
        "cut2 = (R s)^2 = 400/100"
    );
    assert!(c.params.visit_radius_m > 20.0 && c.params.visit_radius_m < 20.01);
}
