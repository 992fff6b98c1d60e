//! Small hand-made runs for the output tests.

use crate::forest::params::ForestParams;
use crate::forest::trees::Trees;
use crate::synth;

/// The four SBS species with the default demography: a tree of DBH < 1 cm is a seedling,
/// < 2 cm (at least; the species' minimum reproductive DBH) a sapling, else an adult.
pub(crate) fn params() -> ForestParams {
    synth::sbs_forest(true)
}

/// The species names of [`params`].
pub(crate) fn names() -> Vec<String> {
    params()
        .species
        .iter()
        .map(|s| s.name().to_string())
        .collect()
}

/// Trees from (x, y, dbh, species) tuples, ids 0 .. n.
pub(crate) fn trees(list: &[(f64, f64, f64, u32)]) -> Trees {
    Trees {
        x_m: list.iter().map(|t| t.0).collect(),
        y_m: list.iter().map(|t| t.1).collect(),
        dbh_cm: list.iter().map(|t| t.2).collect(),
        species: list.iter().map(|t| t.3).collect(),
        id: (0..list.len() as u64).collect(),
    }
}
