//! Random seed counts per cell from the expected map: SORTIE-ND's seed distribution methods
//! (`GeneralDisperse/di_seedDistributionMethod`), applied to each cell's expected count λ (its
//! density times the cell's area), as SORTIE-ND's `clDisperseOrg::AdjustSeedNumbers` does to
//! each cell's seeds.
//!
//! | method | count | SORTIE-ND |
//! |---|---|---|
//! | deterministic | ⌊λ⌋, plus one with probability λ − ⌊λ⌋ (mean λ) | keeps λ as a fraction of a seed |
//! | Poisson | Poisson(λ) | the same |
//! | negative binomial | mean λ, variance λ + λ²/k (clumping k, `di_clumpingParameter`) | the same law (it sums the PMF by Hilborn and Mangel's recursion) |
//! | normal | λ + σ Z, below 0 as 0, then randomly rounded (`di_standardDeviation`) | keeps λ + σ Z, negative values included |
//! | lognormal | exp(ln λ − σ²/2 + σ Z), randomly rounded: mean λ, log-sd σ | draws exp(λ + σ Z), whose mean is e^(λ + σ²/2), not λ: not reproduced |
//!
//! Counts are integers because seedlings are trees: SORTIE-ND's fractions of seeds are rounded
//! at random where it establishes them. Each cell draws from its own [`Stream`] (purpose
//! [`Purpose::SeedCount`], id = the cell's index), so the counts are the same for any thread
//! count and on any device.

use rayon::prelude::*;

use super::per_seed::random_round;
use super::rng::{Purpose, Stream};

/// How a cell's seed count varies around its expected value.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub enum SeedDistribution {
    Deterministic,
    Poisson,
    /// Clumping k > 0 (k = ∞ is the Poisson).
    NegativeBinomial {
        clumping: f64,
    },
    /// Standard deviation σ ≥ 0 in seeds.
    Normal {
        sd: f64,
    },
    /// Standard deviation σ ≥ 0 of the log.
    Lognormal {
        sigma: f64,
    },
}

impl SeedDistribution {
    /// Check the parameter; the message names it.
    pub fn validated(self) -> Result<Self, String> {
        match self {
            SeedDistribution::NegativeBinomial { clumping }
                if clumping.is_nan() || clumping <= 0.0 =>
            {
                Err(format!(
                    "the negative binomial's clumping parameter must be > 0, got {clumping}"
                ))
            }
            SeedDistribution::Normal { sd } if !(sd >= 0.0 && sd.is_finite()) => Err(format!(
                "the normal seed distribution's standard deviation must be finite and >= 0, got {sd}"
            )),
            SeedDistribution::Lognormal { sigma } if !(sigma >= 0.0 && sigma.is_finite()) => {
                Err(format!(
                    "the lognormal seed distribution's sigma must be finite and >= 0, got {sigma}"
                ))
            }
            d => Ok(d),
        }
    }

    /// One cell's count for the expected `lambda` (0 for λ ≤ 0 or not finite).
    pub fn count(&self, lambda: f64, s: &mut Stream) -> u64 {
        if !(lambda > 0.0 && lambda.is_finite()) {
            return 0;
        }
        match *self {
            SeedDistribution::Deterministic => random_round(lambda, s),
            SeedDistribution::Poisson => s.poisson(lambda),
            SeedDistribution::NegativeBinomial { clumping } => {
                s.negative_binomial(lambda, clumping)
            }
            SeedDistribution::Normal { sd } => {
                let x = lambda + sd * s.normal();
                random_round(x.max(0.0), s)
            }
            SeedDistribution::Lognormal { sigma } => {
                let x = s.lognormal(super::exact_math::ln(lambda) - 0.5 * sigma * sigma, sigma);
                random_round(x, s)
            }
        }
    }
}

/// Counts per cell of species `species` in `year` from the expected counts `expected` (one per
/// cell, row-major), with the run's `seed`.
pub fn counts(
    dist: SeedDistribution,
    expected: &[f64],
    seed: u64,
    year: u32,
    species: u8,
) -> Vec<u32> {
    let mut out = Vec::new();
    counts_into(dist, expected, seed, year, species, &mut out);
    out
}

/// [`counts`] into `out` (resized to the cells; a buffer kept from an earlier year saves the
/// allocation and its first-touch page faults).
pub fn counts_into(
    dist: SeedDistribution,
    expected: &[f64],
    seed: u64,
    year: u32,
    species: u8,
    out: &mut Vec<u32>,
) {
    counts_into_at(dist, expected, 0, seed, year, species, out);
}

/// [`counts_into`] for the cells `first_cell ..` of a grid (a split run's band of rows): each
/// cell draws from the stream of its index in the whole grid.
pub fn counts_into_at(
    dist: SeedDistribution,
    expected: &[f64],
    first_cell: usize,
    seed: u64,
    year: u32,
    species: u8,
    out: &mut Vec<u32>,
) {
    out.resize(expected.len(), 0);
    out.par_iter_mut()
        .zip(expected.par_iter())
        .enumerate()
        .for_each(|(i, (c, &lambda))| {
            let cell = (first_cell + i) as u64;
            let mut s = Stream::new(seed, year, species, cell, Purpose::SeedCount);
            *c = u32::try_from(dist.count(lambda, &mut s)).unwrap_or(u32::MAX);
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Mean and variance over 200,000 cells of one λ against the law's; |z| < 5 for both (a
    /// correct law fails one such check in ~1.7 million; the seeds are fixed).
    fn check(dist: SeedDistribution, lambda: f64, mean: f64, var: f64, kurt: f64) {
        let n = 200_000;
        let x: Vec<f64> = counts(dist, &vec![lambda; n], 5, 2, 1)
            .into_iter()
            .map(f64::from)
            .collect();
        if var == 0.0 {
            assert!(
                x.iter().all(|&a| a == mean),
                "{dist:?} λ {lambda}: not all {mean}"
            );
            return;
        }
        let nf = n as f64;
        let m = x.iter().sum::<f64>() / nf;
        let v = x.iter().map(|a| (a - m) * (a - m)).sum::<f64>() / (nf - 1.0);
        let zm = (m - mean) / (var / nf).sqrt();
        let zv = (v - var) / (var * var * (2.0 / (nf - 1.0) + kurt / nf)).sqrt();
        assert!(zm.abs() < 5.0, "{dist:?} λ {lambda}: mean {m} vs {mean}");
        assert!(zv.abs() < 5.0, "{dist:?} λ {lambda}: variance {v} vs {var}");
    }

    #[test]
    fn every_method_has_its_mean_and_variance() {
        for lambda in [0.3, 4.6, 80.0] {
            // Random rounding: Bernoulli(frac) on top of ⌊λ⌋.
            let f = lambda - f64::floor(lambda);
            let kb = if f > 0.0 && f < 1.0 {
                (1.0 - 6.0 * f * (1.0 - f)) / (f * (1.0 - f))
            } else {
                0.0
            };
            check(
                SeedDistribution::Deterministic,
                lambda,
                lambda,
                f * (1.0 - f),
                kb,
            );
            check(
                SeedDistribution::Poisson,
                lambda,
                lambda,
                lambda,
                1.0 / lambda,
            );
            let k = 1.7;
            let p = k / (k + lambda);
            check(
                SeedDistribution::NegativeBinomial { clumping: k },
                lambda,
                lambda,
                lambda + lambda * lambda / k,
                6.0 / k + p * p / (k * (1.0 - p)),
            );
        }
        // Normal well above 0 (no clipping): variance σ² plus the rounding's ≈ 1/6 on average.
        check(
            SeedDistribution::Normal { sd: 3.0 },
            50.0,
            50.0,
            9.0 + 1.0 / 6.0,
            0.0,
        );
        // Lognormal with mean λ: variance λ² (e^{σ²} − 1) plus the rounding's ≈ 1/6; its
        // kurtosis is large, so the variance check uses the lognormal's excess kurtosis.
        let (lambda, s2) = (40.0f64, 0.25f64 * 0.25);
        let w = s2.exp();
        check(
            SeedDistribution::Lognormal { sigma: 0.25 },
            lambda,
            lambda,
            lambda * lambda * (w - 1.0) + 1.0 / 6.0,
            w.powi(4) + 2.0 * w.powi(3) + 3.0 * w * w - 6.0,
        );
    }

    #[test]
    fn deterministic_keeps_whole_numbers_and_zero_gives_zero() {
        let c = counts(
            SeedDistribution::Deterministic,
            &[3.0, 0.0, -2.0, f64::NAN, 7.5],
            1,
            0,
            0,
        );
        assert_eq!(&c[..4], &[3, 0, 0, 0]);
        assert!(c[4] == 7 || c[4] == 8);
        for d in [
            SeedDistribution::Poisson,
            SeedDistribution::NegativeBinomial { clumping: 0.5 },
            SeedDistribution::Normal { sd: 2.0 },
            SeedDistribution::Lognormal { sigma: 1.0 },
        ] {
            assert_eq!(counts(d, &[0.0; 100], 1, 0, 0), vec![0; 100], "{d:?}");
        }
    }

    #[test]
    fn counts_are_the_same_for_any_thread_count() {
        let expected: Vec<f64> = (0..50_000).map(|i| (i % 97) as f64 * 0.37).collect();
        let d = SeedDistribution::NegativeBinomial { clumping: 0.8 };
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap()
            .install(|| counts(d, &expected, 3, 4, 2));
        assert_eq!(one, counts(d, &expected, 3, 4, 2));
        assert_ne!(
            one,
            counts(d, &expected, 3, 5, 2),
            "another year, other counts"
        );
    }

    #[test]
    fn bad_parameters_are_refused_by_name() {
        let e = SeedDistribution::NegativeBinomial { clumping: 0.0 }
            .validated()
            .unwrap_err();
        assert!(e.contains("clumping"), "{e}");
        let e = SeedDistribution::Normal { sd: -1.0 }
            .validated()
            .unwrap_err();
        assert!(e.contains("standard deviation"), "{e}");
        let e = SeedDistribution::Lognormal { sigma: f64::NAN }
            .validated()
            .unwrap_err();
        assert!(e.contains("sigma"), "{e}");
        assert!(SeedDistribution::Poisson.validated().is_ok());
    }
}
