//! The seed-placement kernel's contract: the parameter struct's size, the NVRTC compile (the
//! kernel present, no spills, every f64 operation an explicit round-to-nearest one), the input
//! checks, and (on a GPU) where seeds of a constant flight land. The placement itself is tested
//! against the CPU library through its public API
//! (`crates/geofield/tests/forest_per_seed_backends.rs`) and, seed by seed, in the library's
//! `forest::per_seed_cuda` tests.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;
use crate::{compile_with_log, module_source, nvrtc_present, test_gpu};

#[test]
fn param_struct_size_matches_the_kernel() {
    assert_eq!(std::mem::size_of::<ForestPlaceParams>(), 128);
    let src = module_source(MODULE).unwrap();
    for (_, c, size) in PARAM_STRUCTS {
        assert!(
            src.contains(&format!("GF_CHECK_SIZE({c}, {size});")),
            "forest.cu lacks the size check of {c}"
        );
    }
    assert!(src.contains(&format!("#define FO_THREADS {THREADS}")));
    let sizes = year::year_struct_sizes();
    for ((_, c, size), got) in year::YEAR_STRUCTS.iter().zip(sizes) {
        assert_eq!(got, *size, "{c}'s Rust mirror");
        assert!(
            src.contains(&format!("GF_CHECK_SIZE({c}, {size});")),
            "forest_year.cu lacks the size check of {c}"
        );
    }
    assert!(src.contains("#define FY_THREADS 256") && src.contains("#define FY_PER_THREAD 16"));
    assert!(src.contains(&format!("#define FO_DIRECTIONS {DIRECTIONS}")));
    assert_eq!(1usize << (32 - 20), DIRECTIONS);
    assert!(src.contains("#define FO_DIR_SHIFT 20"));
}

/// Whether a PTX instruction's last operand is a literal power of two (`0d` and a zero
/// mantissa): a multiplication by it is exact, so fusing it into an FMA changes nothing
/// (libdevice's `fmod` scales subnormal operands by 2^54).
fn by_power_of_two(line: &str) -> bool {
    line.trim_end_matches(';')
        .rsplit([' ', ',', '\t'])
        .next()
        .and_then(|t| t.strip_prefix("0d"))
        .and_then(|h| u64::from_str_radix(h, 16).ok())
        .is_some_and(|b| b & ((1 << 52) - 1) == 0 && (b >> 52) & 0x7FF != 0)
}

/// Compiles the module with NVRTC (no GPU needed; run with LD_LIBRARY_PATH pointing at a
/// libnvrtc on a machine without CUDA) for sm_90 and sm_80: the kernel is there, nothing spills,
/// and no f64 addition, subtraction, multiplication or division lacks its explicit `.rn` (PTX
/// lets ptxas fuse those into FMAs, which would change the bits; exact multiplications by a power
/// of two excepted), nor is anything approximate.
#[test]
fn forest_module_compiles_with_exact_f64_arithmetic() {
    if !nvrtc_present() {
        assert!(
            std::env::var("GEOFIELD_REQUIRE_GPU").as_deref() != Ok("1"),
            "GEOFIELD_REQUIRE_GPU=1 but libnvrtc is missing"
        );
        eprintln!("skipping: libnvrtc not loadable");
        return;
    }
    let src = module_source(MODULE).unwrap();
    for arch in ["sm_90", "sm_80"] {
        let c = compile_with_log(MODULE, src, arch).unwrap_or_else(|e| panic!("{e}"));
        for k in std::iter::once(&KERNEL).chain(year::YEAR_KERNELS) {
            assert!(
                c.ptx.contains(&format!(".entry {k}(")),
                "{arch}: no kernel {k} in the PTX"
            );
        }
        if std::env::var("GEOFIELD_PTXAS_LOG").is_ok() {
            eprintln!("{}", c.log);
        }
        for line in c.log.lines().filter(|l| l.contains("Used")) {
            eprintln!("forest {arch}: {}", line.trim());
        }
        // No spills, except in the kernels allowed to (year::SPILLS_ALLOWED).
        let spills = crate::compile::tests::spilling_functions(&c.log);
        assert!(spills.is_empty(), "forest/{arch} spills: {spills:?}");
        let loose: Vec<&str> = c
            .ptx
            .lines()
            .map(str::trim)
            .filter(|l| {
                let op = l.split_whitespace().next().unwrap_or("");
                let f64_arith = op.ends_with(".f64")
                    && ["add.", "sub.", "mul.", "div.", "mad.", "fma."]
                        .iter()
                        .any(|p| op.starts_with(p));
                (f64_arith && !op.contains(".rn.") && !(op == "mul.f64" && by_power_of_two(l)))
                    || op.contains(".approx")
                    || op.contains(".ftz")
            })
            .collect();
        // Every FMA of the source is an explicit gf_fma_rn, inline PTX between "begin inline
        // asm" and "end inline asm": an fma.rn.f64 anywhere else is one NVVM contracted from a
        // separate multiplication and addition.
        let mut in_asm = false;
        let mut contracted = Vec::new();
        for l in c.ptx.lines().map(str::trim) {
            if l.starts_with("// begin inline asm") {
                in_asm = true;
            } else if l.starts_with("// end inline asm") {
                in_asm = false;
            } else if !in_asm && l.starts_with("fma.") && l.contains(".f64") {
                contracted.push(l);
            }
        }
        assert!(
            contracted.is_empty(),
            "forest/{arch}: {} contracted f64 FMAs, e.g. {:?}",
            contracted.len(),
            &contracted[..contracted.len().min(5)]
        );
        assert!(
            !src.contains("__fma_rn("),
            "write FMAs as gf_fma_rn (inline PTX) so that the check above can see them"
        );
        assert!(
            loose.is_empty(),
            "forest/{arch}: {} f64 operations without .rn or approximate, e.g. {:?}",
            loose.len(),
            &loose[..loose.len().min(10)]
        );
    }
}

/// A constant flight of 10 m (both tables ln 10) and the unit vectors of the angles.
fn tables_10m() -> (Vec<f64>, Vec<(f64, f64)>) {
    let table = vec![10f64.ln(); 9];
    let dir = (0..=DIRECTIONS)
        .map(|k| {
            let phi = std::f64::consts::TAU * k as f64 / DIRECTIONS as f64;
            (phi.cos(), phi.sin())
        })
        .collect();
    (table, dir)
}

fn grid(cols: usize, rows: usize, torus: bool) -> PlotGrid {
    PlotGrid {
        x_min_m: 0.0,
        y_max_m: rows as f64,
        cell_size_m: 1.0,
        cols,
        rows,
        width_m: cols as f64,
        height_m: rows as f64,
        torus,
    }
}

const KEY: StreamKey = StreamKey {
    seed: 7,
    year: 3,
    species: 1,
    purpose: 4,
};

#[test]
fn inputs_outside_the_contract_are_refused() {
    let (tab, dir) = tables_10m();
    let t = FlightTables {
        near: &tab,
        far: &tab,
        inv_step: 2.0,
        dir: &dir,
    };
    let (x, y, id, off) = (
        vec![5.0, 6.0],
        vec![5.0, 6.0],
        vec![0u64, 1],
        vec![0u64, 3, 7],
    );
    let p = SeedParents {
        x_m: &x,
        y_m: &y,
        id: &id,
        offsets: &off,
    };
    let g = grid(20, 10, false);
    let ok = params(&t, &p, &g, KEY, 200, false).unwrap().unwrap();
    assert_eq!((ok.seeds, ok.parents, ok.table, ok.cols), (7, 2, 8, 20));
    assert_eq!(ok.tag, (1 << 16) | (4 << 24));
    assert_eq!(ok.width_below_m, 20f64.next_down());
    let bad_off = [vec![0u64, 3], vec![1, 3, 7], vec![0, 5, 3]];
    for o in &bad_off {
        let q = SeedParents { offsets: o, ..p };
        assert!(params(&t, &q, &g, KEY, 200, false).is_err(), "{o:?}");
    }
    let short = [1.0];
    let q = SeedParents { y_m: &short, ..p };
    assert!(params(&t, &q, &g, KEY, 200, false).is_err());
    assert!(params(&t, &p, &g, KEY, 199, false).is_err());
    let far = vec![0.0; 5];
    for bad in [
        FlightTables { far: &far, ..t },
        FlightTables {
            dir: &dir[1..],
            ..t
        },
        FlightTables {
            inv_step: f64::NAN,
            ..t
        },
        FlightTables {
            near: &tab[..1],
            far: &tab[..1],
            ..t
        },
    ] {
        assert!(params(&bad, &p, &g, KEY, 200, false).is_err());
    }
    let flat = PlotGrid {
        cell_size_m: 0.0,
        ..g
    };
    assert!(params(&t, &p, &flat, KEY, 200, false).is_err());
    let none = [0u64, 0, 0];
    let q = SeedParents {
        offsets: &none,
        ..p
    };
    assert_eq!(params(&t, &q, &g, KEY, 200, false).unwrap(), None);
}

/// On a GPU: every seed of a constant 10 m flight lands 10 m from its parent (to rounding), each
/// in the cell of its position; on a torus every seed is counted. Tables too short for some
/// draws are an error.
#[test]
fn constant_flights_land_ten_metres_away() {
    let Some(gpu) = test_gpu() else { return };
    let (tab, dir) = tables_10m();
    // 8 intervals up to x = ln 2 + 32 (the largest x of a 32-bit draw is 33 ln 2 ≈ 22.9).
    let t = FlightTables {
        near: &tab,
        far: &tab,
        inv_step: 0.25,
        dir: &dir,
    };
    let (x, y, id, off) = (
        vec![25.0, 3.5, 38.25],
        vec![12.0, 1.0, 19.5],
        vec![10u64, 11, 1 << 40],
        vec![0u64, 1000, 1000, 3001],
    );
    let p = SeedParents {
        x_m: &x,
        y_m: &y,
        id: &id,
        offsets: &off,
    };
    // Up to x = ln 2 + 4 only: draws with u or 1 − u below e^(−4.7) fall beyond.
    let short = FlightTables { inv_step: 2.0, ..t };
    let mut counts = vec![0u32; 800];
    match place_seeds(&gpu, &short, &p, &grid(40, 20, true), KEY, &mut counts) {
        Err(CudaError::InvalidInput { detail, .. }) => {
            assert!(detail.contains("beyond the quantile tables"), "{detail}")
        }
        other => panic!("tables too short were accepted: {other:?}"),
    }
    for torus in [false, true] {
        let g = grid(40, 20, torus);
        let mut counts = vec![1u32; 800];
        let rec = seed_positions(&gpu, &t, &p, &g, KEY, &mut counts).unwrap();
        assert_eq!(rec.len(), 3001);
        let mut want = vec![1u32; 800];
        for (s, &[r, u, v]) in rec.iter().enumerate() {
            assert!((r - 10.0).abs() < 1e-12, "seed {s}: r = {r}");
            let i = if s < 1000 { 0 } else { 2 };
            let (u0, v0) = (x[i], 20.0 - y[i]);
            if !torus {
                let d = ((u - u0).powi(2) + (v - v0).powi(2)).sqrt();
                assert!((d - 10.0).abs() < 1e-5, "seed {s}: {d} m away");
            }
            if (0.0..40.0).contains(&u) && (0.0..20.0).contains(&v) {
                want[v.floor() as usize * 40 + u.floor() as usize] += 1;
            } else {
                assert!(!torus, "seed {s} at ({u}, {v}) is off the torus");
            }
        }
        assert_eq!(counts, want, "torus {torus}");
        let total: u64 = counts.iter().map(|&c| u64::from(c) - 1).sum();
        if torus {
            assert_eq!(total, 3001);
        }
    }
}
