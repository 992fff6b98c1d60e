//! Simulation envelopes of K, L or g under complete spatial randomness (spatstat's
//! `envelope(X, Kest)` with its defaults): `nsim` Poisson patterns of the observed intensity in
//! the same window, the summary function of each with the same radii and correction, and at each
//! r the `nrank`-th smallest and largest of the simulated values (pointwise; with nrank = 1 an
//! observed curve outside [lo, hi] at a given r rejects randomness at level 2·nrank/(nsim + 1)).
//!
//! Pattern s is drawn from its own generator (PCG64 seeded with a mix of `seed` and s): the
//! envelope does not depend on the threads or the backend's scheduling, and K of each pattern is
//! [`super::ripley::ripley_k`]'s on the backend asked for.

use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Poisson};
use rand_pcg::Pcg64;
use rayon::prelude::*;

use super::pcf::{Divisor, pair_correlation};
use super::ripley::{Correction, Window, ripley_k};
use crate::{Backend, GeofieldError};

/// Most simulations of one envelope.
pub const MAX_SIMULATIONS: usize = 100_000;

/// Which summary function.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Summary {
    K,
    /// Besag's L = √(K/π).
    L,
    /// The pair-correlation function, with the kernel's standard deviation (None: spatstat's
    /// default) and divisor of [`super::pcf`].
    G {
        bw: Option<f64>,
        divisor: Divisor,
    },
}

impl Summary {
    pub fn name(&self) -> &'static str {
        match self {
            Summary::K => "K",
            Summary::L => "L",
            Summary::G { .. } => "g",
        }
    }
}

/// The observed function, its value under randomness, and the envelope.
#[derive(Clone, Debug, PartialEq)]
pub struct Envelope {
    pub r: Vec<f64>,
    pub obs: Vec<f64>,
    pub theo: Vec<f64>,
    pub lo: Vec<f64>,
    pub hi: Vec<f64>,
    /// The simulations' mean.
    pub mean: Vec<f64>,
    pub nsim: usize,
    pub nrank: usize,
    pub summary: Summary,
    pub correction: Correction,
}

impl Envelope {
    /// The pointwise significance level of the envelope: 2·nrank / (nsim + 1).
    pub fn alpha(&self) -> f64 {
        2.0 * self.nrank as f64 / (self.nsim + 1) as f64
    }
}

/// `summary` of the 2-D `points` (flat x, y) in `window` at `radii` with `correction`.
fn summary_of(
    backend: &Backend,
    points: &[f64],
    window: &Window,
    radii: &[f64],
    correction: Correction,
    summary: Summary,
) -> Result<Vec<f64>, GeofieldError> {
    let pick = |cols: Vec<(Correction, &[f64])>| {
        cols.into_iter()
            .find(|(c, _)| *c == correction)
            .map(|(_, v)| v.to_vec())
            .unwrap_or_default()
    };
    Ok(match summary {
        Summary::K | Summary::L => {
            let k = ripley_k(backend, points, window, radii, &[correction])?;
            let v = pick(k.columns());
            if summary == Summary::L {
                super::ripley::l_of(&v)
            } else {
                v
            }
        }
        Summary::G { bw, divisor } => {
            let g = pair_correlation(points, window, radii, &[correction], bw, divisor)?;
            pick(g.columns())
        }
    })
}

/// The CSR envelope of `summary` for `points` (see the module docs). `nrank` ≥ 1 and
/// 2·nrank ≤ nsim.
#[allow(clippy::too_many_arguments)]
pub fn csr_envelope(
    backend: &Backend,
    points: &[f64],
    window: &Window,
    radii: &[f64],
    correction: Correction,
    summary: Summary,
    nsim: usize,
    nrank: usize,
    seed: u64,
) -> Result<Envelope, GeofieldError> {
    if nsim == 0 || nsim > MAX_SIMULATIONS {
        return Err(GeofieldError::InvalidParameter {
            name: "nsim".into(),
            value: nsim.to_string(),
            expected: format!("1 to {MAX_SIMULATIONS} simulations"),
        });
    }
    if nrank == 0 || 2 * nrank > nsim {
        return Err(GeofieldError::InvalidParameter {
            name: "nrank".into(),
            value: nrank.to_string(),
            expected: format!("1 to nsim / 2 = {}", nsim / 2),
        });
    }
    let obs = summary_of(backend, points, window, radii, correction, summary)?;
    let n = points.len() / 2;
    let mean_count = n as f64;
    let poisson = Poisson::new(mean_count).map_err(|e| {
        GeofieldError::Invalid(format!("a Poisson count of mean {mean_count}: {e}"))
    })?;
    let draw = |s: usize| -> Vec<f64> {
        // SplitMix-style mix of the seed and the simulation's number.
        let mut z = seed ^ (s as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        let mut rng = Pcg64::seed_from_u64(z ^ (z >> 31));
        // A pattern needs two points for any pair statistic: draw the count again below that.
        let mut m = 0usize;
        for _ in 0..64 {
            m = poisson.sample(&mut rng) as usize;
            if m >= 2 {
                break;
            }
        }
        let m = m.max(2);
        (0..m)
            .flat_map(|_| {
                let x = window.x0 + rng.random::<f64>() * window.width();
                let y = window.y0 + rng.random::<f64>() * window.height();
                [x, y]
            })
            .collect()
    };
    let sims: Vec<Vec<f64>> = match backend {
        Backend::Cuda(_) => (0..nsim)
            .map(|s| summary_of(backend, &draw(s), window, radii, correction, summary))
            .collect::<Result<_, _>>()?,
        _ => (0..nsim)
            .into_par_iter()
            .map(|s| summary_of(backend, &draw(s), window, radii, correction, summary))
            .collect::<Result<_, _>>()?,
    };
    let nr = radii.len();
    let (mut lo, mut hi, mut mean) = (vec![f64::NAN; nr], vec![f64::NAN; nr], vec![f64::NAN; nr]);
    let mut col = Vec::with_capacity(nsim);
    for k in 0..nr {
        col.clear();
        col.extend(sims.iter().map(|v| v[k]).filter(|x| x.is_finite()));
        if col.len() < 2 * nrank {
            continue;
        }
        col.sort_by(f64::total_cmp);
        lo[k] = col[nrank - 1];
        hi[k] = col[col.len() - nrank];
        mean[k] = col.iter().sum::<f64>() / col.len() as f64;
    }
    let theo = radii
        .iter()
        .map(|&r| match summary {
            Summary::K => std::f64::consts::PI * r * r,
            Summary::L => r,
            Summary::G { .. } => 1.0,
        })
        .collect();
    Ok(Envelope {
        r: radii.to_vec(),
        obs,
        theo,
        lo,
        hi,
        mean,
        nsim,
        nrank,
        summary,
        correction,
    })
}
