use super::*;

#[test]
fn param_sizes_match_the_kernel() {
    assert_eq!(std::mem::size_of::<BruteParams>(), 32);
    assert_eq!(std::mem::size_of::<GridParams>(), 40);
    assert_eq!(std::mem::size_of::<BuildParams>(), 40);
    let src = crate::module_source("neighbors").unwrap_or("");
    assert!(src.contains("GF_CHECK_SIZE(NeighborsBruteParams, 32)"));
    assert!(src.contains("GF_CHECK_SIZE(NeighborsGridParams, 40)"));
    assert!(src.contains("#define NB_K_MAX 64"));
    let grid = crate::module_source("grid").unwrap_or("");
    assert!(grid.contains("GF_CHECK_SIZE(GridBuildParams, 40)"));
    // GridPlan::from_words reads the 11 words of GfGridPlan.
    assert!(crate::COMMON_SOURCE.contains("GF_CHECK_SIZE(GfGridPlan, 88)"));
    assert_eq!(K_MAX, 64);
}

#[test]
fn uniform_cells_counts_like_the_device_plan() {
    // 0..=10 by 0..=4 with h = 2: 6 x 3 cells.
    let p = [0.0f64, 0.0, 10.0, 4.0, 3.0, 1.0];
    assert_eq!(uniform_cells(&p, 2, 2.0).unwrap(), 18);
    assert_eq!(uniform_cells::<f32>(&[], 3, 1.0).unwrap(), 1);
}

#[test]
fn bad_inputs_are_errors() {
    assert!(uniform_cells::<f32>(&[1.0, 2.0, 3.0], 2, 1.0).is_err());
    assert!(uniform_cells::<f32>(&[1.0, f32::NAN], 2, 1.0).is_err());
    assert!(uniform_cells::<f32>(&[1.0, 2.0], 4, 1.0).is_err());
    assert!(uniform_cells::<f64>(&[0.0, 0.0, 1e9, 1e9], 2, 1e-3).is_err());
    assert!(uniform_cells::<f64>(&[0.0, 0.0], 2, 0.0).is_err());
    assert!(uniform_cells::<f64>(&[0.0, 0.0], 2, f64::NAN).is_err());
    assert!(check_k_r2::<f32>(0, None, "t").is_err());
    assert!(check_k_r2::<f32>(65, None, "t").is_err());
    assert!(check_k_r2::<f32>(3, Some(-1.0), "t").is_err());
    assert_eq!(check_k_r2::<f32>(3, Some(0.25), "t").ok(), Some(0.25));
}
