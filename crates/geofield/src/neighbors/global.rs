//! Global simulation envelopes and the maximum-absolute-deviation (MAD) and
//! Diggle–Cressie–Loosmore–Ford (DCLF) tests, as spatstat's `envelope(X, fun, global = TRUE)`,
//! `mad.test` and `dclf.test` with their defaults (two-sided, no scaling), from the curves of
//! [`super::envelope::simulate_curves`].
//!
//! **Reference curve** ([`Reference`], spatstat's `use.theory`). spatstat's default for CSR
//! simulations of a function with a known value under CSR (K, L, g all have one) is the theory:
//! πr², r or 1 ([`Reference::Theory`], `use.theory = TRUE`). [`Reference::Mean`]
//! (`use.theory = FALSE`) estimates it from simulations instead, as spatstat does then:
//! * the global envelope uses `2·nsim` simulations: 0..nsim for the deviations, nsim..2·nsim
//!   for the mean (spatstat's `nsim2 = nsim` "dual" simulations, so the band's patterns are
//!   independent of its centre);
//! * the tests use spatstat's default `leaveout = 1`: the reference at r is the mean of the nsim
//!   simulated and the observed values, and every deviation is (f − mean)·(nsim + 1)/nsim
//!   (the deviation from the mean of the other nsim curves, up to that constant factor).
//!
//! **Global envelope.** T_s = max over the radii in the interval of |f_s(r) − ref(r)| (non-finite
//! values skipped), the band is ref ± T_(nrank), T_(nrank) the nrank-th largest of T_1..T_nsim;
//! a random pattern's curve leaves it somewhere in the interval with probability
//! nrank/(nsim + 1).
//!
//! **Tests.** With d(r) the deviation above at the radii in the interval [a, b]: MAD's statistic
//! is max |d(r)|, DCLF's is (b − a)·mean(d(r)²) (spatstat's discretisation of ∫ d² dr: the mean
//! over the radii times the interval's length, 1 for a single radius), NaN values skipped. As
//! spatstat, where the observed curve is undefined at the interval's first radius only (g at
//! r = 0), that radius is dropped and a moved to the next. The p-value is rank/(nsim + 1) with
//! rank = 1 + #{s: T_s > T_obs} + #{s: T_s = T_obs}: ties count against the pattern
//! (conservative; spatstat's default `tie.rule = "randomise"` draws their share at random, so the
//! two agree exactly when there is no tie, which continuous statistics make almost sure).

use super::envelope::{Curves, Envelope, check_nsim_nrank};
use crate::GeofieldError;

/// The reference curve of the deviations (spatstat's `use.theory`; see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reference {
    /// The value under CSR (`use.theory = TRUE`, spatstat's default for CSR).
    Theory,
    /// The simulations' mean (`use.theory = FALSE`).
    Mean,
}

impl Reference {
    pub fn name(&self) -> &'static str {
        match self {
            Reference::Theory => "theory",
            Reference::Mean => "mean",
        }
    }

    /// How many simulations a global envelope of `nsim` needs: 2·nsim with the mean as
    /// reference (its centre from separate patterns), nsim otherwise.
    pub fn simulations(&self, nsim: usize) -> usize {
        match self {
            Reference::Theory => nsim,
            Reference::Mean => 2 * nsim,
        }
    }
}

/// What makes an envelope global.
#[derive(Clone, Debug, PartialEq)]
pub struct Global {
    /// The interval [a, b] of r over which the deviations are maximised (spatstat `ginterval`).
    pub interval: (f64, f64),
    pub reference: Reference,
    /// The band's centre: the theory, or the mean of simulations nsim..2·nsim.
    pub centre: Vec<f64>,
    /// The band's half-width T_(nrank).
    pub width: f64,
}

/// The MAD or DCLF test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Statistic {
    /// Maximum absolute deviation (spatstat `mad.test`).
    Mad,
    /// Integrated squared deviation (spatstat `dclf.test`).
    Dclf,
}

impl Statistic {
    pub fn name(&self) -> &'static str {
        match self {
            Statistic::Mad => "mad",
            Statistic::Dclf => "dclf",
        }
    }
}

/// A Monte Carlo deviation test's result.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviationTest {
    pub statistic: Statistic,
    pub reference: Reference,
    /// The observed pattern's statistic.
    pub observed: f64,
    /// Each simulation's statistic.
    pub simulated: Vec<f64>,
    /// 1 + the simulations at least as extreme as the observed pattern.
    pub rank: usize,
    /// Simulations whose statistic equals the observed one (counted in `rank`).
    pub ties: usize,
    /// rank / (nsim + 1).
    pub p_value: f64,
    /// The interval of r used (its lower end moved past an undefined first value).
    pub interval: (f64, f64),
    pub nsim: usize,
}

/// The radii of `r` (non-decreasing) in `interval` (default: all), with the interval.
fn in_interval(
    r: &[f64],
    interval: Option<(f64, f64)>,
) -> Result<((f64, f64), Vec<usize>), GeofieldError> {
    let (Some(&first), Some(&last)) = (r.first(), r.last()) else {
        return Err(GeofieldError::Invalid("no radii".into()));
    };
    let (a, b) = interval.unwrap_or((first, last));
    if !(a.is_finite() && b.is_finite() && a <= b && a >= first && b <= last) {
        return Err(GeofieldError::InvalidParameter {
            name: "interval".into(),
            value: format!("[{a}, {b}]"),
            expected: format!("a <= b within the radii's range [{first}, {last}]"),
        });
    }
    let ok: Vec<usize> = (0..r.len()).filter(|&k| a <= r[k] && r[k] <= b).collect();
    if ok.is_empty() {
        return Err(GeofieldError::InvalidParameter {
            name: "interval".into(),
            value: format!("[{a}, {b}]"),
            expected: "an interval holding at least one of the radii".into(),
        });
    }
    Ok(((a, b), ok))
}

/// The largest of the values that are not NaN (−∞ when none is).
fn max_of(v: impl Iterator<Item = f64>) -> f64 {
    v.filter(|x| !x.is_nan()).fold(f64::NEG_INFINITY, f64::max)
}

impl Curves {
    /// The global envelope of simulations 0..`nsim` at rank `nrank` over `interval` (default:
    /// every radius) with `reference` (see the module docs; [`Reference::Mean`] needs
    /// 2·nsim simulations).
    pub fn global(
        &self,
        nsim: usize,
        nrank: usize,
        interval: Option<(f64, f64)>,
        reference: Reference,
    ) -> Result<Envelope, GeofieldError> {
        check_nsim_nrank(nsim, Some(nrank))?;
        self.check_count(reference.simulations(nsim))?;
        let (interval, ok) = in_interval(&self.r, interval)?;
        let centre = match reference {
            Reference::Theory => self.theo.clone(),
            Reference::Mean => self.mean_of(nsim..2 * nsim),
        };
        let mut sup: Vec<f64> = self.sims[..nsim]
            .iter()
            .map(|v| {
                max_of(
                    ok.iter()
                        .filter(|&&k| v[k].is_finite())
                        .map(|&k| (v[k] - centre[k]).abs()),
                )
            })
            .collect();
        sup.sort_by(f64::total_cmp);
        let width = sup[nsim - nrank];
        let nr = self.r.len();
        let (mut lo, mut hi) = (vec![f64::NAN; nr], vec![f64::NAN; nr]);
        for &k in &ok {
            lo[k] = centre[k] - width;
            hi[k] = centre[k] + width;
        }
        Ok(Envelope {
            r: self.r.clone(),
            obs: self.obs.clone(),
            theo: self.theo.clone(),
            lo,
            hi,
            mean: self.mean_of(0..nsim),
            nsim,
            nrank,
            summary: self.summary,
            correction: self.correction,
            global: Some(Global {
                interval,
                reference,
                centre,
                width,
            }),
        })
    }

    /// The MAD or DCLF test of the observed curve against simulations 0..`nsim` over
    /// `interval` (default: every radius) with `reference` (see the module docs).
    pub fn deviation_test(
        &self,
        statistic: Statistic,
        nsim: usize,
        interval: Option<(f64, f64)>,
        reference: Reference,
    ) -> Result<DeviationTest, GeofieldError> {
        check_nsim_nrank(nsim, None)?;
        self.check_count(nsim)?;
        let ((a, b), mut ok) = in_interval(&self.r, interval)?;
        let mut a = a;
        if self.obs.iter().all(|x| !x.is_finite()) {
            return Err(GeofieldError::Invalid(
                "the observed function is undefined (not finite) at every radius".into(),
            ));
        }
        let bad = |k: usize| !self.obs[k].is_finite();
        if bad(ok[0]) && !ok[1..].iter().any(|&k| bad(k)) {
            if ok.len() == 1 {
                return Err(GeofieldError::Invalid(format!(
                    "the observed function is undefined at the only radius of [{a}, {b}]"
                )));
            }
            ok.remove(0);
            a = self.r[ok[0]];
        }
        let n = nsim as f64;
        let (reference_curve, factor) = match reference {
            Reference::Theory => (self.theo.clone(), 1.0),
            Reference::Mean => {
                // the mean of the simulated and observed values (NaN skipped, as R's na.rm)
                let m = (0..self.r.len())
                    .map(|k| {
                        let vals = self.sims[..nsim]
                            .iter()
                            .map(|v| v[k])
                            .chain([self.obs[k]])
                            .filter(|x| !x.is_nan());
                        let (s, c) = vals.fold((0.0, 0usize), |(s, c), x| (s + x, c + 1));
                        s / c as f64
                    })
                    .collect();
                (m, (n + 1.0) / n)
            }
        };
        let length = if ok.len() > 1 { b - a } else { 1.0 };
        let stat = |f: &[f64]| -> f64 {
            let d = ok
                .iter()
                .map(|&k| ((f[k] - reference_curve[k]) * factor).abs());
            match statistic {
                Statistic::Mad => max_of(d),
                Statistic::Dclf => {
                    let (s, c) = d
                        .filter(|x| !x.is_nan())
                        .fold((0.0, 0usize), |(s, c), x| (s + x * x, c + 1));
                    length * s / c as f64
                }
            }
        };
        let observed = stat(&self.obs);
        let simulated: Vec<f64> = self.sims[..nsim].iter().map(|v| stat(v)).collect();
        let above = simulated.iter().filter(|&&t| t > observed).count();
        let ties = simulated.iter().filter(|&&t| t == observed).count();
        let rank = 1 + above + ties;
        Ok(DeviationTest {
            statistic,
            reference,
            observed,
            simulated,
            rank,
            ties,
            p_value: rank as f64 / (n + 1.0),
            interval: (a, b),
            nsim,
        })
    }
}
