use super::*;
use crate::forest::rng::Purpose;

/// Seeds placed per second on this machine (not a check: `cargo test -- --ignored
/// --nocapture seeds_per_second`).
#[test]
#[ignore]
fn seeds_per_second() {
    let g = GridSpec::from_extent(
        geofield_core::Extent::new(0.0, 0.0, 1000.0, 500.0).unwrap(),
        1.0,
    )
    .unwrap();
    for sp in crate::synth::sbs_species() {
        let n = 100_000;
        let mut s = Stream::new(1, 0, 0, 0, Purpose::Growth);
        let stand = Stand::new(
            (0..n).map(|_| 1000.0 * s.uniform()).collect(),
            (0..n).map(|_| 500.0 * s.uniform()).collect(),
            vec![30.0; n],
            vec![0; n],
        )
        .unwrap();
        let t = std::time::Instant::now();
        let fl = Flight::new(&sp.kernel);
        let (_, shed) = place_seeds(&g, &sp, &fl, 0, &stand, true, 1, 0);
        let dt = t.elapsed().as_secs_f64();
        eprintln!(
            "{}: {shed} seeds in {dt:.3} s: {:.1} ns per seed on {} threads",
            sp.name,
            dt / shed as f64 * 1e9,
            rayon::current_num_threads()
        );
    }
}
