//! Growth, mortality and stage transitions: simple stand-ins for SORTIE-ND's growth and
//! mortality behaviours (which depend on light and many more parameters), documented so that
//! a run can be read against them.
//!
//! - **Growth** ([`Growth`]): every tree's DBH grows by its stage's annual increment, either a
//!   constant radial increment (ΔD = 2 × radial; SORTIE's `ConstantRadialGrowth`) or a
//!   size-dependent ΔD = max(ΔD_min, g (D/D*) e^(1 − D/D*)), which rises with size, peaks
//!   with g at D*, and falls for the largest trees.
//! - **Mortality** ([`Mortality`]): a tree dies this year with p = min(1, m + c × n), m the
//!   stage's annual rate, c its density dependence and n the other trees in its coarse cell at
//!   the start of the year; the draw is the tree's (purpose [`Purpose::Mortality`], id = the
//!   tree's id), so it does not depend on the order of the trees or the thread count.
//! - **Stage transitions**: a tree's stage follows from its DBH after growth
//!   ([`super::params::ForestSpecies::stage`]): seedling → sapling at `sapling_dbh_cm`,
//!   sapling → adult at `adult_dbh_cm`.
//!
//! Mortality uses the stage at the start of the year (before growth), as a census would.

use rayon::prelude::*;

use super::params::{ForestParams, Growth, Mortality};
use super::rng::{Purpose, Stream};
use super::trees::{CoarseCells, Trees};

/// Which trees survive this `year`: `neighbours[c]` trees stood in coarse cell c at the start
/// of the year (a tree in it counts the others; a tree that came after, all of them).
/// `existing` trees (the first ones) were counted in `neighbours`.
pub fn survivors(
    params: &ForestParams,
    trees: &Trees,
    cells: &CoarseCells,
    neighbours: &[u32],
    existing: usize,
    seed: u64,
    year: u32,
) -> Vec<bool> {
    (0..trees.len())
        .into_par_iter()
        .map(|i| {
            let sp = &params.species[trees.species[i] as usize];
            let m: &Mortality = &sp.mortality[sp.stage(trees.dbh_cm[i]) as usize];
            let n = cells
                .of(trees.x_m[i], trees.y_m[i])
                .map_or(0, |c| neighbours[c].saturating_sub(u32::from(i < existing)));
            let p = m.probability(n);
            if p <= 0.0 {
                return true;
            }
            let mut s = Stream::new(
                seed,
                year,
                trees.species[i] as u8,
                trees.id[i],
                Purpose::Mortality,
            );
            s.uniform() >= p
        })
        .collect()
}

/// Grow every tree by one year at its current stage's law.
pub fn grow(params: &ForestParams, trees: &mut Trees) {
    trees
        .dbh_cm
        .par_iter_mut()
        .zip(trees.species.par_iter())
        .for_each(|(d, &s)| {
            let sp = &params.species[s as usize];
            let g: &Growth = &sp.growth[sp.stage(*d) as usize];
            *d += g.increment_cm(*d);
        });
}

#[cfg(test)]
mod tests {
    use super::super::params::Stage;
    use super::*;
    use crate::synth;

    fn params() -> ForestParams {
        synth::sbs_forest(false)
    }

    /// Hand-checked increments: 1 mm radial → 0.2 cm of DBH; the size-dependent law gives g
    /// at its peak, g·½·e^½ at half of it, and its minimum near 0.
    #[test]
    fn growth_follows_its_formulas() {
        let g = Growth::ConstantRadial {
            radial_mm_per_yr: 1.0,
        };
        assert!((g.increment_cm(3.0) - 0.2).abs() < 1e-15);
        let g = Growth::SizeDependent {
            max_cm_per_yr: 0.6,
            peak_dbh_cm: 40.0,
            min_cm_per_yr: 0.05,
        };
        assert!((g.increment_cm(40.0) - 0.6).abs() < 1e-15);
        assert!((g.increment_cm(20.0) - 0.6 * 0.5 * 0.5f64.exp()).abs() < 1e-15);
        assert_eq!(g.increment_cm(0.0), 0.05);
        let p = params();
        let mut t = Trees {
            x_m: vec![1.0, 2.0],
            y_m: vec![1.0, 2.0],
            dbh_cm: vec![0.5, 20.0],
            species: vec![0, 1],
            id: vec![0, 1],
        };
        grow(&p, &mut t);
        assert!((t.dbh_cm[0] - 0.7).abs() < 1e-15);
        assert!((t.dbh_cm[1] - (20.0 + 0.6 * 0.5 * 0.5f64.exp())).abs() < 1e-12);
    }

    /// Over 100,000 seedlings alone in their cells the deaths are Binomial(n, 0.25) (5 sd);
    /// with 9 neighbours each the rate is 0.25 + 0.02 × 9; p = 1 kills all; the draws are the
    /// trees' own (reversing the order reverses the answer).
    #[test]
    fn mortality_has_its_rate_and_density_dependence() {
        let p = params();
        let n = 100_000;
        let cells = CoarseCells::new(
            &geofield_core::GridSpec::from_extent(
                geofield_core::Extent::new(0.0, 0.0, 800.0, 1000.0).unwrap(),
                1.0,
            )
            .unwrap(),
            8.0,
        );
        let t = Trees {
            x_m: (0..n).map(|i| (i % 100) as f64 * 8.0 + 4.0).collect(),
            y_m: (0..n).map(|i| (i / 100) as f64 + 0.5).collect(),
            dbh_cm: vec![0.5; n],
            species: vec![2; n],
            id: (0..n as u64).collect(),
        };
        assert_eq!(t.stage(&p, 0), Stage::Seedling);
        let check = |neigh: u32, rate: f64| {
            let nb = vec![neigh + 1; cells.n_cells()];
            let alive = survivors(&p, &t, &cells, &nb, n, 4, 7);
            let dead = alive.iter().filter(|a| !**a).count() as f64;
            let (m, sd) = (n as f64 * rate, (n as f64 * rate * (1.0 - rate)).sqrt());
            assert!((dead - m).abs() < 5.0 * sd, "{dead} vs {m} ± {sd}");
            alive
        };
        let alone = check(0, 0.25);
        check(9, 0.25 + 0.02 * 9.0);
        let all = vec![200u32; cells.n_cells()];
        assert!(survivors(&p, &t, &cells, &all, n, 4, 7).iter().all(|a| !a));
        let mut rev = t.clone();
        for v in [&mut rev.x_m, &mut rev.y_m, &mut rev.dbh_cm] {
            v.reverse();
        }
        rev.species.reverse();
        rev.id.reverse();
        let mut back = survivors(&p, &rev, &cells, &vec![1; cells.n_cells()], n, 4, 7);
        back.reverse();
        assert_eq!(back, alone);
    }
}
