//! The trees of a forest run and the coarse cells that the gap rule and the neighbour counts use.

use geofield_core::GridSpec;
use rayon::prelude::*;

use super::params::{ForestParams, Stage};
use crate::GeofieldError;
use crate::dispersal::Stand;

/// Every living tree, one entry per tree in five columns. `id` is unique over the run (the
/// initial trees are 0 .. n, each new seedling takes the next), and keys the tree's random
/// streams, so a tree's fate does not depend on where it sits in the columns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Trees {
    pub x_m: Vec<f64>,
    pub y_m: Vec<f64>,
    pub dbh_cm: Vec<f64>,
    pub species: Vec<u32>,
    pub id: Vec<u64>,
}

impl Trees {
    /// The trees of a stem map, with ids 0 .. n. Species indices must be below `n_species`.
    pub fn from_stand(stand: &Stand, n_species: usize) -> Result<Self, GeofieldError> {
        if let Some(&s) = stand.species.iter().find(|&&s| s as usize >= n_species) {
            return Err(GeofieldError::Invalid(format!(
                "a tree has species index {s}, but there are {n_species} species"
            )));
        }
        Ok(Trees {
            x_m: stand.x_m.clone(),
            y_m: stand.y_m.clone(),
            dbh_cm: stand.dbh_cm.clone(),
            species: stand.species.clone(),
            id: (0..stand.x_m.len() as u64).collect(),
        })
    }

    /// The trees as a stem map (for writing, or for `geofield disperse`).
    pub fn to_stand(&self) -> Stand {
        Stand {
            x_m: self.x_m.clone(),
            y_m: self.y_m.clone(),
            dbh_cm: self.dbh_cm.clone(),
            species: self.species.clone(),
        }
    }

    pub fn len(&self) -> usize {
        self.x_m.len()
    }

    pub fn is_empty(&self) -> bool {
        self.x_m.is_empty()
    }

    /// The next unused id.
    pub fn next_id(&self) -> u64 {
        self.id.iter().max().map_or(0, |m| m + 1)
    }

    /// Keep the trees where `keep` is true, in order.
    pub(crate) fn retain(&mut self, keep: &[bool]) {
        fn keep_in<T: Copy + Send + Sync>(v: &mut Vec<T>, keep: &[bool]) {
            *v = v
                .par_iter()
                .zip(keep.par_iter())
                .filter(|(_, k)| **k)
                .map(|(x, _)| *x)
                .collect();
        }
        keep_in(&mut self.x_m, keep);
        keep_in(&mut self.y_m, keep);
        keep_in(&mut self.dbh_cm, keep);
        keep_in(&mut self.species, keep);
        keep_in(&mut self.id, keep);
    }

    /// Append `other`'s trees.
    pub(crate) fn extend(&mut self, other: Trees) {
        self.x_m.extend(other.x_m);
        self.y_m.extend(other.y_m);
        self.dbh_cm.extend(other.dbh_cm);
        self.species.extend(other.species);
        self.id.extend(other.id);
    }

    /// The stage of tree `i`.
    #[inline]
    pub fn stage(&self, params: &ForestParams, i: usize) -> Stage {
        params.species[self.species[i] as usize].stage(self.dbh_cm[i])
    }
}

/// The coarse cells (side `gap_cell_m`, from the plot's north-west corner; the last row and
/// column may reach past the plot) in which adults are counted for the gap rule and all trees
/// for density-dependent mortality.
#[derive(Debug, Clone, PartialEq)]
pub struct CoarseCells {
    pub x_min_m: f64,
    pub y_max_m: f64,
    pub cell_m: f64,
    pub cols: usize,
    pub rows: usize,
}

impl CoarseCells {
    pub fn new(grid: &GridSpec, cell_m: f64) -> Self {
        let n = |len: f64| ((len / cell_m).ceil() as usize).max(1);
        CoarseCells {
            x_min_m: grid.x_min_m,
            y_max_m: grid.y_max_m,
            cell_m,
            cols: n(grid.width_m()),
            rows: n(grid.height_m()),
        }
    }

    pub fn n_cells(&self) -> usize {
        self.cols * self.rows
    }

    /// The cell holding (x, y), or None outside.
    #[inline]
    pub fn of(&self, x_m: f64, y_m: f64) -> Option<usize> {
        let c = ((x_m - self.x_min_m) / self.cell_m).floor();
        let r = ((self.y_max_m - y_m) / self.cell_m).floor();
        if c >= 0.0 && r >= 0.0 && (c as usize) < self.cols && (r as usize) < self.rows {
            Some(r as usize * self.cols + c as usize)
        } else {
            None
        }
    }
}

/// Per coarse cell: the adults (any species) and all trees standing in it.
#[derive(Debug, Clone, PartialEq)]
pub struct Occupancy {
    pub adults: Vec<u32>,
    pub trees: Vec<u32>,
}

impl Occupancy {
    pub fn count(cells: &CoarseCells, params: &ForestParams, trees: &Trees) -> Self {
        // Integer counts: the same for any split of the trees among threads.
        let n = cells.n_cells();
        let zero = || (vec![0u32; n], vec![0u32; n]);
        let (adults, all) = (0..trees.len())
            .into_par_iter()
            .with_min_len(1 << 16)
            .fold(zero, |(mut adults, mut all), i| {
                if let Some(c) = cells.of(trees.x_m[i], trees.y_m[i]) {
                    all[c] += 1;
                    if trees.stage(params, i) == Stage::Adult {
                        adults[c] += 1;
                    }
                }
                (adults, all)
            })
            .reduce(zero, |(mut a0, mut t0), (a1, t1)| {
                a0.iter_mut().zip(&a1).for_each(|(x, y)| *x += y);
                t0.iter_mut().zip(&t1).for_each(|(x, y)| *x += y);
                (a0, t0)
            });
        Occupancy { adults, trees: all }
    }

    /// Whether coarse cell `c` is a gap: at most `max_gap_density` adults.
    #[inline]
    pub fn is_gap(&self, c: usize, max_gap_density: u32) -> bool {
        self.adults[c] <= max_gap_density
    }
}
