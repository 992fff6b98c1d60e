//! Simulation envelopes of K, L or g under complete spatial randomness (spatstat's
//! `envelope(X, Kest)` with its defaults): `nsim` Poisson patterns of the observed intensity in
//! the same window, the summary function of each with the same radii and correction, and at each
//! r the `nrank`-th smallest and largest of the simulated values (pointwise; with nrank = 1 an
//! observed curve outside [lo, hi] at a given r rejects randomness at level 2·nrank/(nsim + 1)).
//!
//! Pattern s is drawn from its own generator (PCG64 seeded with a mix of `seed` and s): the
//! envelope does not depend on the threads or the backend's scheduling, and K of each pattern is
//! [`super::ripley::ripley_k`]'s on the backend asked for; [`csr_pattern`] draws pattern s alone
//! (to hand the very same patterns to another program).
//!
//! [`simulate_curves`] computes the observed and simulated curves once; [`Curves::pointwise`]
//! makes the pointwise envelope from them, and [`super::global`] the global envelope and the
//! MAD and DCLF tests (spatstat's `envelope(global = TRUE)`, `mad.test`, `dclf.test`).

use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Poisson};
use rand_pcg::Pcg64;
use rayon::prelude::*;

use super::global::Global;
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
    /// The band: pointwise, the nrank-th smallest and largest simulated values at each r;
    /// global, the reference ± the nrank-th largest maximum deviation (NaN outside the interval).
    pub lo: Vec<f64>,
    pub hi: Vec<f64>,
    /// The simulations' mean.
    pub mean: Vec<f64>,
    pub nsim: usize,
    pub nrank: usize,
    pub summary: Summary,
    pub correction: Correction,
    /// `Some` for a global envelope (see [`super::global`]).
    pub global: Option<Global>,
}

impl Envelope {
    /// The significance level of the envelope: 2·nrank / (nsim + 1) pointwise (at one r chosen
    /// beforehand), nrank / (nsim + 1) global (anywhere in its interval).
    pub fn alpha(&self) -> f64 {
        let k = if self.global.is_some() { 1.0 } else { 2.0 };
        k * self.nrank as f64 / (self.nsim + 1) as f64
    }
}

/// The observed curve, its value under randomness and the simulated curves, at the same radii
/// with the same correction: what every envelope and test here is made of.
#[derive(Clone, Debug, PartialEq)]
pub struct Curves {
    pub r: Vec<f64>,
    pub obs: Vec<f64>,
    pub theo: Vec<f64>,
    /// Simulation s's curve (pattern [`csr_pattern`]`(.., s)`).
    pub sims: Vec<Vec<f64>>,
    pub summary: Summary,
    pub correction: Correction,
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

/// Check `nsim` (1 to [`MAX_SIMULATIONS`]) and `nrank` (1 to nsim / 2).
pub(crate) fn check_nsim_nrank(nsim: usize, nrank: Option<usize>) -> Result<(), GeofieldError> {
    if nsim == 0 || nsim > MAX_SIMULATIONS {
        return Err(GeofieldError::InvalidParameter {
            name: "nsim".into(),
            value: nsim.to_string(),
            expected: format!("1 to {MAX_SIMULATIONS} simulations"),
        });
    }
    if let Some(nrank) = nrank
        && (nrank == 0 || 2 * nrank > nsim)
    {
        return Err(GeofieldError::InvalidParameter {
            name: "nrank".into(),
            value: nrank.to_string(),
            expected: format!("1 to nsim / 2 = {}", nsim / 2),
        });
    }
    Ok(())
}

/// Simulation `s` of the envelopes of a pattern of `n` points in `window` with `seed`: a Poisson
/// number of mean n (drawn again while below 2, as a pair statistic needs two points) of
/// uniform points, flat x, y. Pattern s depends only on (window, n, seed, s).
pub fn csr_pattern(
    window: &Window,
    n: usize,
    seed: u64,
    s: usize,
) -> Result<Vec<f64>, GeofieldError> {
    let mean_count = n as f64;
    let poisson = Poisson::new(mean_count).map_err(|e| {
        GeofieldError::Invalid(format!("a Poisson count of mean {mean_count}: {e}"))
    })?;
    // SplitMix-style mix of the seed and the simulation's number.
    let mut z = seed ^ (s as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    let mut rng = Pcg64::seed_from_u64(z ^ (z >> 31));
    let mut m = 0usize;
    for _ in 0..64 {
        m = poisson.sample(&mut rng) as usize;
        if m >= 2 {
            break;
        }
    }
    let m = m.max(2);
    Ok((0..m)
        .flat_map(|_| {
            let x = window.x0 + rng.random::<f64>() * window.width();
            let y = window.y0 + rng.random::<f64>() * window.height();
            [x, y]
        })
        .collect())
}

/// The observed curve of `points` and the curves of the CSR patterns 0..`count` (see the module
/// docs).
#[allow(clippy::too_many_arguments)]
pub fn simulate_curves(
    backend: &Backend,
    points: &[f64],
    window: &Window,
    radii: &[f64],
    correction: Correction,
    summary: Summary,
    count: usize,
    seed: u64,
) -> Result<Curves, GeofieldError> {
    if count == 0 || count > 2 * MAX_SIMULATIONS {
        return Err(GeofieldError::InvalidParameter {
            name: "nsim".into(),
            value: count.to_string(),
            expected: format!("1 to {MAX_SIMULATIONS} simulations"),
        });
    }
    let obs = summary_of(backend, points, window, radii, correction, summary)?;
    let n = points.len() / 2;
    let one = |s: usize| {
        let p = csr_pattern(window, n, seed, s)?;
        summary_of(backend, &p, window, radii, correction, summary)
    };
    let sims: Vec<Vec<f64>> = match backend {
        Backend::Cuda(_) => (0..count).map(one).collect::<Result<_, _>>()?,
        _ => (0..count)
            .into_par_iter()
            .map(one)
            .collect::<Result<_, _>>()?,
    };
    let theo = radii
        .iter()
        .map(|&r| match summary {
            Summary::K => std::f64::consts::PI * r * r,
            Summary::L => r,
            Summary::G { .. } => 1.0,
        })
        .collect();
    Ok(Curves {
        r: radii.to_vec(),
        obs,
        theo,
        sims,
        summary,
        correction,
    })
}

impl Curves {
    /// The mean at each r of the finite values of simulations `range` (NaN where none is).
    pub(crate) fn mean_of(&self, range: std::ops::Range<usize>) -> Vec<f64> {
        (0..self.r.len())
            .map(|k| {
                let (mut sum, mut m) = (0.0, 0usize);
                for v in &self.sims[range.clone()] {
                    if v[k].is_finite() {
                        sum += v[k];
                        m += 1;
                    }
                }
                if m == 0 { f64::NAN } else { sum / m as f64 }
            })
            .collect()
    }

    /// Fail unless the first `nsim` simulations exist.
    pub(crate) fn check_count(&self, nsim: usize) -> Result<(), GeofieldError> {
        if nsim > self.sims.len() {
            return Err(GeofieldError::Invalid(format!(
                "{nsim} simulations asked for, {} simulated",
                self.sims.len()
            )));
        }
        Ok(())
    }

    /// The pointwise envelope of simulations 0..`nsim`: at each r the `nrank`-th smallest and
    /// largest finite simulated values (NaN with fewer than 2·nrank of them).
    pub fn pointwise(&self, nsim: usize, nrank: usize) -> Result<Envelope, GeofieldError> {
        check_nsim_nrank(nsim, Some(nrank))?;
        self.check_count(nsim)?;
        let nr = self.r.len();
        let (mut lo, mut hi) = (vec![f64::NAN; nr], vec![f64::NAN; nr]);
        let mut col = Vec::with_capacity(nsim);
        for k in 0..nr {
            col.clear();
            col.extend(
                self.sims[..nsim]
                    .iter()
                    .map(|v| v[k])
                    .filter(|x| x.is_finite()),
            );
            if col.len() < 2 * nrank {
                continue;
            }
            col.sort_by(f64::total_cmp);
            lo[k] = col[nrank - 1];
            hi[k] = col[col.len() - nrank];
        }
        let mut mean = self.mean_of(0..nsim);
        for (k, m) in mean.iter_mut().enumerate() {
            if lo[k].is_nan() {
                *m = f64::NAN;
            }
        }
        Ok(Envelope {
            r: self.r.clone(),
            obs: self.obs.clone(),
            theo: self.theo.clone(),
            lo,
            hi,
            mean,
            nsim,
            nrank,
            summary: self.summary,
            correction: self.correction,
            global: None,
        })
    }
}

/// The pointwise CSR envelope of `summary` for `points` (see the module docs). `nrank` ≥ 1 and
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
    check_nsim_nrank(nsim, Some(nrank))?;
    simulate_curves(
        backend, points, window, radii, correction, summary, nsim, seed,
    )?
    .pointwise(nsim, nrank)
}
