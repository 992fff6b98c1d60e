//! Sizes and parameters given by a user are checked before anything of that size is allocated:
//! a number of agents or of variogram lags that cannot fit in memory, and a zero variogram, are
//! refused with typed errors naming the parameter and the size it would need.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use geofield::GeofieldError;
use geofield::flock::{FlockState, Start};
use geofield::kriging::{Estimator, LagSpec, Model, Variogram, empirical};
use geofield_core::CoreError;

#[test]
fn agents_beyond_memory_or_u32_are_refused() {
    for n in [usize::MAX, u32::MAX as usize, 0] {
        let e = FlockState::new(n, Start::Dense, 100.0, 1).unwrap_err();
        assert!(matches!(e, GeofieldError::Invalid(_)), "{n}: {e}");
        assert!(e.to_string().contains(&n.to_string()), "{e}");
    }
    // 2e9 agents fit u32 but need 2e9 x 128 B = 256 GB: more than any CI machine has free.
    let e = FlockState::new(2_000_000_000, Start::Dense, 100.0, 1).unwrap_err();
    match &e {
        GeofieldError::Core(CoreError::TooLarge { need_bytes, .. }) => {
            assert_eq!(*need_bytes, 2_000_000_000u128 * 128)
        }
        other => panic!("{other}"),
    }
    assert!(e.to_string().contains("2000000000 agents"), "{e}");
    let s = FlockState::new(100, Start::Dense, 100.0, 1).unwrap();
    assert_eq!(s.len(), 100);
}

#[test]
fn a_billion_lags_are_refused_before_allocating() {
    let (xs, ys, v) = (
        vec![0.0, 1.0, 2.0],
        vec![0.0, 1.0, 0.0],
        vec![1.0, 2.0, 3.0],
    );
    let spec = |lags| LagSpec {
        lags,
        ..LagSpec::default()
    };
    for lags in [usize::MAX, 1_000_000_000_000] {
        let e = empirical(&xs, &ys, &v, &spec(lags), Estimator::Matheron).unwrap_err();
        assert!(
            matches!(e, GeofieldError::Core(CoreError::TooLarge { .. })),
            "{lags}: {e}"
        );
        assert!(e.to_string().contains(&format!("lags = {lags}")), "{e}");
    }
    assert_eq!(
        empirical(&xs, &ys, &v, &spec(4), Estimator::Matheron)
            .unwrap()
            .len(),
        4
    );
}

#[test]
fn a_zero_sill_is_a_bad_parameter() {
    let e = Variogram::new(Model::Spherical, 0.0, 100.0, 0.0).unwrap_err();
    assert!(
        matches!(&e, GeofieldError::InvalidParameter { name, .. } if name == "sill"),
        "{e}"
    );
    // With a nugget the variogram is not zero: accepted.
    assert!(Variogram::new(Model::Spherical, 0.0, 100.0, 0.5).is_ok());
}
