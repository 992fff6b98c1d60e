//! The flock wrappers' host-side pieces (no GPU needed).

use super::*;

fn config() -> FlockConfig {
    FlockConfig {
        constants: FlockConstants::opensteer(50.0),
        k: 7,
        r2: f32::from_bits(81.0f32.to_bits() - 1),
        dt: 1.0 / 60.0,
        search: FlockSearch::Grid,
    }
}

#[test]
fn param_sizes_match_the_kernel() {
    assert_eq!(std::mem::size_of::<FlockConstants>(), 56);
    assert_eq!(std::mem::size_of::<FlockKernelParams>(), 128);
    assert_eq!(std::mem::size_of::<FlockObstacle>(), 80);
    let src = crate::module_source("flock").unwrap_or("");
    for (_, c, size) in PARAM_STRUCTS {
        assert!(
            src.contains(&format!("GF_CHECK_SIZE({c}, {size})")),
            "{c} lacks its size check"
        );
    }
    assert!(src.contains(&format!("#define FL_TILE {TILE}")));
    assert!(src.contains(&format!("#define FL_THREADS {STEP_THREADS}")));
    assert!(src.contains(&format!("#define FL_AUX {AUX_THREADS}")));
    assert!(src.contains(&format!("#define FL_K_LOCAL {K_MAX}")));
}

#[test]
fn config_validation() {
    assert!(config().validate().is_ok());
    let radius = FlockConfig { k: 0, ..config() };
    assert!(radius.validate().is_ok());
    let bad = [
        FlockConfig { k: 65, ..config() },
        FlockConfig {
            r2: f32::NAN,
            ..config()
        },
        FlockConfig {
            r2: f32::INFINITY,
            ..config()
        },
        FlockConfig {
            r2: -1.0,
            ..config()
        },
        FlockConfig {
            dt: f32::NAN,
            ..config()
        },
        FlockConfig {
            dt: f32::INFINITY,
            ..config()
        },
        FlockConfig {
            dt: 0.0,
            ..config()
        },
    ];
    for c in bad {
        assert!(
            matches!(c.validate(), Err(CudaError::InvalidInput { .. })),
            "{c:?} was accepted"
        );
    }
    let mut c = config();
    c.constants.sep_cos = f32::NAN;
    assert!(c.validate().is_err());
    c = config();
    c.constants.world_radius = 0.0;
    assert!(c.validate().is_err());
}

#[test]
fn rate_is_the_cpu_clamp() {
    assert_eq!(config().rate(), 0.15);
    let c = FlockConfig {
        dt: 0.03,
        ..config()
    };
    assert_eq!(c.rate(), (9.0f32 * 0.03).clamp(0.15, 0.4));
    let c = FlockConfig {
        dt: 1.0,
        ..config()
    };
    assert_eq!(c.rate(), 0.4);
}

#[test]
fn state_checks() {
    let mut s = FlockHostState {
        pos: vec![[0.0; 3]; 2],
        fwd: vec![[0.0, 0.0, 1.0]; 2],
        speed: vec![1.0; 2],
        acc: vec![[0.0; 3]; 2],
    };
    assert_eq!(s.check().ok(), Some(2));
    s.speed.pop();
    assert!(s.check().is_err());
    s.speed.push(f32::NAN);
    assert!(s.check().is_err());
    assert_eq!(FlockHostState::default().check().ok(), Some(0));
}

#[test]
fn kernel_names_cover_k() {
    assert_eq!(k_suffix(0), "r");
    assert_eq!(k_suffix(1), "k8");
    assert_eq!(k_suffix(8), "k8");
    assert_eq!(k_suffix(9), "k16");
    assert_eq!(k_suffix(16), "k16");
    assert_eq!(k_suffix(17), "k64");
    assert_eq!(k_suffix(64), "k64");
    let src = crate::module_source("flock").unwrap_or("");
    for s in ["r", "k8", "k16", "k64"] {
        assert!(src.contains(&format!("FL_GRID_ENTRY({s},")));
        assert!(src.contains(&format!("FL_BRUTE_ENTRY({s},")));
    }
}
