//! Stem maps and their per-species sources in grid-relative coordinates.
//!
//! Grid-relative coordinates: `u = x − x_min` (east, m) and `v = y_max − y` (south, m), so cell
//! (row, col) has its centre at u = (col + ½)h, v = (row + ½)h. Kernels and bins work in these.

use geofield_core::{ExactSum, GridSpec};
use rayon::prelude::*;

use super::params::Species;

/// A validated stem map: positions in world metres, DBH in cm, species as an index into the
/// species list. Construct with [`Stand::new`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stand {
    pub x_m: Vec<f64>,
    pub y_m: Vec<f64>,
    pub dbh_cm: Vec<f64>,
    pub species: Vec<u32>,
}

impl Stand {
    /// Check lengths and values: finite coordinates, finite DBH ≥ 0.
    pub fn new(
        x_m: Vec<f64>,
        y_m: Vec<f64>,
        dbh_cm: Vec<f64>,
        species: Vec<u32>,
    ) -> Result<Self, String> {
        let n = x_m.len();
        if y_m.len() != n || dbh_cm.len() != n || species.len() != n {
            return Err("stand columns have different lengths".into());
        }
        for i in 0..n {
            if !x_m[i].is_finite() || !y_m[i].is_finite() {
                return Err(format!("tree {i}: coordinates must be finite"));
            }
            if !(dbh_cm[i].is_finite() && dbh_cm[i] >= 0.0) {
                return Err(format!("tree {i}: dbh_cm must be a finite number >= 0"));
            }
        }
        Ok(Self {
            x_m,
            y_m,
            dbh_cm,
            species,
        })
    }
    pub fn len(&self) -> usize {
        self.x_m.len()
    }
    pub fn is_empty(&self) -> bool {
        self.x_m.is_empty()
    }
}

/// One species' contributing trees: grid-relative positions and weights w = (STR/η)(DBH/30)^β.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sources {
    pub u: Vec<f64>,
    pub v: Vec<f64>,
    pub w: Vec<f64>,
}

impl Sources {
    pub fn len(&self) -> usize {
        self.u.len()
    }
    pub fn is_empty(&self) -> bool {
        self.u.is_empty()
    }
    /// Σ w, rounded once ([`ExactSum`]): the same bits whatever the order of the trees or the
    /// processes that hold them ([`Sources::weight_sum`]).
    pub fn total_weight(&self) -> f64 {
        self.weight_sum().value()
    }

    /// Σ w exactly, as an [`ExactSum`] (chunks in parallel, merged exactly).
    pub fn weight_sum(&self) -> ExactSum {
        self.w
            .par_chunks(1 << 16)
            .map(ExactSum::of)
            .reduce(ExactSum::new, |mut a, b| {
                a.merge(b.partials());
                a
            })
    }
    fn push(&mut self, u: f64, v: f64, w: f64) {
        self.u.push(u);
        self.v.push(v);
        self.w.push(w);
    }

    /// The trees of species `index` with DBH ≥ its minimum, in grid-relative coordinates; on a
    /// torus wrapped into [0, Lx) × [0, Ly).
    pub fn for_species(
        stand: &Stand,
        index: u32,
        species: &Species,
        grid: &GridSpec,
        torus: bool,
    ) -> Self {
        let (lx, ly) = (grid.width_m(), grid.height_m());
        // In parallel, in stand order (rayon's collect keeps it).
        let kept: Vec<(f64, f64, f64)> = (0..stand.len())
            .into_par_iter()
            .filter_map(|i| {
                if stand.species[i] != index {
                    return None;
                }
                let w = species.weight(stand.dbh_cm[i])?;
                let mut u = stand.x_m[i] - grid.x_min_m;
                let mut v = grid.y_max_m - stand.y_m[i];
                if torus {
                    u = wrap(u, lx);
                    v = wrap(v, ly);
                }
                Some((u, v, w))
            })
            .collect();
        Sources {
            u: kept.par_iter().map(|k| k.0).collect(),
            v: kept.par_iter().map(|k| k.1).collect(),
            w: kept.par_iter().map(|k| k.2).collect(),
        }
    }

    /// On a torus, add the periodic images that lie within `radius_m` of the domain, so that an
    /// open-plot sum over the result equals the minimum-image sum for every cell, provided
    /// `radius_m` < min(Lx, Ly)/2 (then each cell sees at most one image of each tree).
    pub fn with_periodic_images(&self, lx: f64, ly: f64, radius_m: f64) -> Self {
        let mut s = self.clone();
        for i in 0..self.len() {
            let (u, v, w) = (self.u[i], self.v[i], self.w[i]);
            let xs: &[f64] = if u < radius_m {
                &[lx]
            } else if u > lx - radius_m {
                &[-lx]
            } else {
                &[]
            };
            let ys: &[f64] = if v < radius_m {
                &[ly]
            } else if v > ly - radius_m {
                &[-ly]
            } else {
                &[]
            };
            for &ox in xs {
                s.push(u + ox, v, w);
                for &oy in ys {
                    s.push(u + ox, v + oy, w);
                }
            }
            for &oy in ys {
                s.push(u, v + oy, w);
            }
        }
        s
    }

    /// Split into the trees inside the grid rectangle [0, W) × [0, H) and the rest.
    pub fn split_inside(&self, grid: &GridSpec) -> (Sources, Sources) {
        let (wm, hm) = (grid.width_m(), grid.height_m());
        let (mut inside, mut outside) = (Sources::default(), Sources::default());
        for i in 0..self.len() {
            let (u, v) = (self.u[i], self.v[i]);
            let target = if u >= 0.0 && u < wm && v >= 0.0 && v < hm {
                &mut inside
            } else {
                &mut outside
            };
            target.push(u, v, self.w[i]);
        }
        (inside, outside)
    }
}

/// x wrapped into [0, l).
pub fn wrap(x: f64, l: f64) -> f64 {
    let r = x.rem_euclid(l);
    if r >= l { 0.0 } else { r }
}

/// Minimum-image offset per axis: d − l·round(d/l).
#[inline]
pub fn min_image(d: f64, l: f64) -> f64 {
    d - l * (d / l).round()
}
