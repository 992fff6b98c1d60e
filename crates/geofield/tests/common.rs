//! Shared helpers for the dispersal tests: seeded stands and an independent f64 oracle written
//! from the model's definition in world coordinates.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::needless_range_loop
)]

use geofield::dispersal::{Eta, Kernel, Species, Stand};
use geofield::synth::{self, DbhModel, Pattern};
use geofield_core::{Extent, GridSpec};

pub fn grid(x0: f64, y0: f64, x1: f64, y1: f64, h: f64) -> GridSpec {
    GridSpec::from_extent(Extent::new(x0, y0, x1, y1).unwrap(), h).unwrap()
}

pub fn species(name: &str, kernel: Kernel) -> Species {
    Species::new(name.into(), kernel, 3.0, 2.0, Eta::Analytic, 15.0, None).unwrap()
}

/// One species per kernel shape, with scales that give reach of tens of metres.
pub fn all_shapes() -> Vec<Species> {
    vec![
        species(
            "weibull3",
            Kernel::Weibull {
                d: 3.8e-5,
                theta: 3.0,
            },
        ),
        species(
            "weibull2",
            Kernel::Weibull {
                d: 2e-3,
                theta: 2.0,
            },
        ),
        species(
            "weibull1.5",
            Kernel::Weibull {
                d: 0.02,
                theta: 1.5,
            },
        ),
        species("lognormal", Kernel::Lognormal { x0: 12.0, xb: 0.6 }),
        species("2dt_p1", Kernel::TwoDt { u: 30.0, p: 1.0 }),
        species("2dt_p1.7", Kernel::TwoDt { u: 60.0, p: 1.7 }),
    ]
}

/// A seeded stand with every tree of species `sp`.
pub fn stand(
    n: usize,
    extent: (f64, f64, f64, f64),
    seed: u64,
    pattern: Pattern,
    n_species: usize,
) -> Stand {
    let e = Extent::new(extent.0, extent.1, extent.2, extent.3).unwrap();
    let shares = vec![1.0; n_species];
    synth::forest(n, &e, seed, pattern, DbhModel::Realistic, &shares)
}

/// R_s(c) straight from the definition, in world coordinates, f64.
pub fn oracle(grid: &GridSpec, sp: &Species, index: u32, stand: &Stand, torus: bool) -> Vec<f64> {
    let (lx, ly) = (grid.width_m(), grid.height_m());
    let eta = match sp.eta {
        Eta::Value(v) => v,
        Eta::Analytic => sp.kernel.eta_analytic(),
    };
    let mut out = vec![0.0; grid.n_cells()];
    for row in 0..grid.rows {
        for col in 0..grid.cols {
            let cx = grid.x_min_m + (col as f64 + 0.5) * grid.cell_size_m;
            let cy = grid.y_max_m - (row as f64 + 0.5) * grid.cell_size_m;
            let mut acc = 0.0;
            for k in 0..stand.len() {
                if stand.species[k] != index || stand.dbh_cm[k] < sp.min_dbh_cm {
                    continue;
                }
                let (mut dx, mut dy) = (stand.x_m[k] - cx, stand.y_m[k] - cy);
                if torus {
                    dx -= lx * (dx / lx).round();
                    dy -= ly * (dy / ly).round();
                }
                let d = (dx * dx + dy * dy).sqrt();
                acc += sp.str_ / eta * (stand.dbh_cm[k] / 30.0).powf(sp.beta) * sp.kernel.eval(d);
            }
            out[row * grid.cols + col] = acc;
        }
    }
    out
}

/// max |a − b| / max |b| (0 when both vanish).
pub fn max_rel_to_max(a: &[f64], b: &[f64]) -> f64 {
    let m = b.iter().fold(0.0f64, |m, &x| m.max(x.abs()));
    let e = a
        .iter()
        .zip(b)
        .fold(0.0f64, |m, (&x, &y)| m.max((x - y).abs()));
    if m == 0.0 { e } else { e / m }
}
