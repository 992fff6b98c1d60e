//! Synthetic inputs for demos, tests and benchmarks (seeded, reproducible).

#[cfg(feature = "io")]
pub mod io;
pub mod terrain;

pub use terrain::{
    StationSpec, TerrainKind, TerrainSpec, dem_raster, is_utm, stations, terrain, terrain_origin,
};

use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Normal, Poisson, Weibull};
use rand_pcg::Pcg64;

use crate::dispersal::{Eta, Kernel, Species, Stand};
use geofield_core::{Extent, GridSpec};

/// The 4-species SBS-like parameter set of the dispersal note (§5): Weibull θ = 3, analytic η,
/// STR_total = STR₁ × η so the maps equal the paper's η = 1 convention; DBH_min 15 cm; the
/// paper's opening distances for the multi-resolution port (fir 40 m, aspen 60 m; pine 31 m and
/// spruce 65 m where K/K(0) = 2.5e-4).
pub fn sbs_species() -> Vec<Species> {
    let mk = |name: &str, d: f64, str1: f64, rho: f64| {
        let kernel = Kernel::Weibull { d, theta: 3.0 };
        Species {
            name: name.to_string(),
            kernel,
            str_: str1 * kernel.eta_analytic(),
            beta: 2.0,
            eta: Eta::Analytic,
            min_dbh_cm: 15.0,
            multires_threshold_m: Some(rho),
        }
    };
    vec![
        mk("subalpine_fir", 1.32e-4, 0.09768, 40.0),
        mk("trembling_aspen", 3.8e-5, 0.2, 60.0),
        mk("lodgepole_pine", 2.8e-4, 0.1, 31.0),
        mk("hybrid_spruce", 3.0e-5, 0.1, 65.0),
    ]
}

/// The SBS-like species ([`sbs_species`]) as a forest with the default demography
/// ([`crate::forest::params::ForestSpecies::with_defaults`]), no gap kernels, 8 m gap cells.
pub fn sbs_forest(torus: bool) -> crate::forest::params::ForestParams {
    crate::forest::params::ForestParams {
        species: sbs_species()
            .into_iter()
            .map(crate::forest::params::ForestSpecies::with_defaults)
            .collect(),
        max_gap_density: 0,
        gap_cell_m: 8.0,
        torus,
    }
}

/// Shares of the SBS-like species in synthetic stands: fir, aspen, pine, spruce.
pub const SBS_SHARES: [f64; 4] = [0.4, 0.1, 0.2, 0.3];

/// Spatial pattern of synthetic stems.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    Uniform,
    /// Thomas process: parents uniform, ~20 stems each, Gaussian offsets σ = 10 m.
    Clustered,
}

/// DBH distribution of synthetic stems.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DbhModel {
    /// 5 cm + Weibull(shape 2, scale 28 cm), capped at 120 cm: a realistic mixed stand (mean
    /// ~30 cm, ~12 % below the 15 cm reproductive minimum).
    Realistic,
    /// U(15, 60) cm: every tree reproduces (the dispersal note's benchmark stands).
    Uniform15to60,
}

/// `n` stems in `extent` with species drawn by `shares` (indices into the species list).
pub fn forest(
    n: usize,
    extent: &Extent,
    seed: u64,
    pattern: Pattern,
    dbh: DbhModel,
    shares: &[f64],
) -> Stand {
    let mut rng = Pcg64::seed_from_u64(seed);
    let (w, h) = (extent.width_m(), extent.height_m());
    let mut x = Vec::with_capacity(n);
    let mut y = Vec::with_capacity(n);
    match pattern {
        Pattern::Uniform => {
            for _ in 0..n {
                x.push(extent.x_min_m + rng.random::<f64>() * w);
                y.push(extent.y_min_m + rng.random::<f64>() * h);
            }
        }
        Pattern::Clustered => {
            let offsets = Normal::new(0.0, 10.0).ok();
            let per_parent = Poisson::new(20.0).ok();
            while x.len() < n {
                let (px, py) = (
                    extent.x_min_m + rng.random::<f64>() * w,
                    extent.y_min_m + rng.random::<f64>() * h,
                );
                let k = per_parent
                    .map(|p| p.sample(&mut rng) as usize)
                    .unwrap_or(20);
                for _ in 0..k {
                    if x.len() >= n {
                        break;
                    }
                    let (dx, dy) = match offsets {
                        Some(o) => (o.sample(&mut rng), o.sample(&mut rng)),
                        None => (0.0, 0.0),
                    };
                    // Reflect into the extent so the requested count lands inside it.
                    x.push(reflect(px + dx, extent.x_min_m, extent.x_max_m));
                    y.push(reflect(py + dy, extent.y_min_m, extent.y_max_m));
                }
            }
        }
    }
    let weib: Option<Weibull<f64>> = Weibull::new(28.0, 2.0).ok();
    let dbh_cm: Vec<f64> = (0..n)
        .map(|_| match (dbh, weib) {
            (DbhModel::Realistic, Some(wb)) => {
                (5.0 + Distribution::<f64>::sample(&wb, &mut rng)).min(120.0)
            }
            _ => 15.0 + 45.0 * rng.random::<f64>(),
        })
        .collect();
    let total: f64 = shares.iter().sum();
    let species: Vec<u32> = (0..n)
        .map(|_| {
            let mut t = rng.random::<f64>() * total;
            for (i, s) in shares.iter().enumerate() {
                if t < *s {
                    return i as u32;
                }
                t -= s;
            }
            shares.len().saturating_sub(1) as u32
        })
        .collect();
    Stand {
        x_m: x,
        y_m: y,
        dbh_cm,
        species,
    }
}

fn reflect(v: f64, lo: f64, hi: f64) -> f64 {
    let span = hi - lo;
    let mut t = (v - lo).rem_euclid(2.0 * span);
    if t > span {
        t = 2.0 * span - t;
    }
    (lo + t).clamp(lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stands_are_reproducible_and_inside() {
        let e = Extent::new(100.0, 200.0, 400.0, 500.0).unwrap();
        for pattern in [Pattern::Uniform, Pattern::Clustered] {
            let a = forest(2000, &e, 7, pattern, DbhModel::Realistic, &SBS_SHARES);
            let b = forest(2000, &e, 7, pattern, DbhModel::Realistic, &SBS_SHARES);
            assert_eq!(a, b);
            assert_eq!(a.len(), 2000);
            assert!(a.x_m.iter().zip(&a.y_m).all(|(&x, &y)| e.contains(x, y)));
            let small = a.dbh_cm.iter().filter(|&&d| d < 15.0).count() as f64 / 2000.0;
            assert!(small > 0.05 && small < 0.25, "share below 15 cm: {small}");
            let fir = a.species.iter().filter(|&&s| s == 0).count() as f64 / 2000.0;
            assert!((fir - 0.4).abs() < 0.05);
        }
        let sp = sbs_species();
        assert!(
            (sp[1].str_ - 501.8).abs() < 0.1,
            "aspen STR_total {}",
            sp[1].str_
        );
    }
}

/// Column names of `h` stratum surfaces, top to bottom: `s01`, `s02`, ...
pub fn surface_names(h: usize) -> Vec<String> {
    (1..=h).map(|i| format!("s{i:02}")).collect()
}

/// A layered subsurface: `surfaces` smooth horizons ordered top to bottom (elevations in metres,
/// about 500 m at the top, layers 8 to 30 m thick, so surfaces never cross), seeded.
#[derive(Clone, Debug, PartialEq)]
pub struct Strata {
    pub extent: Extent,
    pub surfaces: usize,
    /// Per surface: phases and wavelengths of its thickness undulation.
    waves: Vec<[f64; 4]>,
}

impl Strata {
    pub fn new(extent: &Extent, surfaces: usize, seed: u64) -> Strata {
        let mut rng = Pcg64::seed_from_u64(seed);
        let waves = (0..surfaces.max(1))
            .map(|_| {
                [
                    rng.random::<f64>() * std::f64::consts::TAU,
                    rng.random::<f64>() * std::f64::consts::TAU,
                    0.5 + rng.random::<f64>(),
                    0.5 + rng.random::<f64>(),
                ]
            })
            .collect();
        Strata {
            extent: *extent,
            surfaces: surfaces.max(1),
            waves,
        }
    }

    /// Elevation of surface `h` (0 = top) at (x, y).
    pub fn elevation(&self, h: usize, x: f64, y: f64) -> f64 {
        let e = &self.extent;
        let (u, v) = (
            (x - e.x_min_m) / e.width_m().max(1.0),
            (y - e.y_min_m) / e.height_m().max(1.0),
        );
        let tau = std::f64::consts::TAU;
        let w0 = &self.waves[0];
        let mut z = 500.0
            + 25.0 * (tau * u * w0[2] + w0[0]).sin() * (tau * v * w0[3] + w0[1]).cos()
            + 15.0 * u
            - 10.0 * v;
        for w in &self.waves[1..=h.min(self.surfaces - 1)] {
            z -= 19.0 + 11.0 * (tau * u * w[2] + w[0]).sin() * (tau * v * w[3] + w[1]).sin();
        }
        z
    }

    /// `n` wells at seeded uniform positions; each surface's elevation where the well reaches
    /// it. A share `partial` of the wells stops before the bottom (NaN below its last surface).
    pub fn wells(&self, n: usize, seed: u64, partial: f64) -> (Vec<f64>, Vec<f64>, Vec<Vec<f64>>) {
        let mut rng = Pcg64::seed_from_u64(seed ^ 0x9e37_79b9_7f4a_7c15);
        let e = &self.extent;
        let mut xs = Vec::with_capacity(n);
        let mut ys = Vec::with_capacity(n);
        let mut z = vec![Vec::with_capacity(n); self.surfaces];
        for _ in 0..n {
            let x = e.x_min_m + rng.random::<f64>() * e.width_m();
            let y = e.y_min_m + rng.random::<f64>() * e.height_m();
            let depth = if rng.random::<f64>() < partial && self.surfaces > 1 {
                1 + rng.random_range(0..self.surfaces - 1)
            } else {
                self.surfaces
            };
            for (h, zh) in z.iter_mut().enumerate() {
                zh.push(if h < depth {
                    self.elevation(h, x, y)
                } else {
                    f64::NAN
                });
            }
            xs.push(x);
            ys.push(y);
        }
        (xs, ys, z)
    }

    /// Root-mean-square error of gridded surfaces (`surfaces[h]` row-major over `grid`, as
    /// kriging predicts them) against the true elevations at the cell centres, over all surfaces
    /// and cells (values past the grid's cell count are ignored; 0 when there are none).
    pub fn rmse(&self, grid: &GridSpec, surfaces: &[Vec<f64>]) -> f64 {
        let cols = grid.cols.max(1);
        let mut sq = 0.0;
        let mut count = 0usize;
        for (h, v) in surfaces.iter().enumerate() {
            for (i, &z) in v.iter().take(grid.rows * grid.cols).enumerate() {
                let (x, y) = grid.cell_centre(i / cols, i % cols);
                let e = z - self.elevation(h, x, y);
                sq += e * e;
                count += 1;
            }
        }
        (sq / count.max(1) as f64).sqrt()
    }
}
