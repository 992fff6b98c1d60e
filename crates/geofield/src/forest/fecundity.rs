//! Seed production with masting: SORTIE-ND's `MastingSpatialDisperse` fecundity.
//!
//! Each year every masting group (species that mast together) decides whether it masts: with
//! X the years since the group's last mast (1 in the first year, 1 again the year after a mast,
//! one more each year without), the group masts with probability
//!
//! ```text
//! P(X) = 1 / (1 + (X / a)^b)            (b < 0 makes it grow with X)
//! ```
//!
//! (SORTIE-ND's "masting cumulative distribution function"). In a mast year a species uses its
//! mast parameters, otherwise its non-mast ones: the fraction of reproductive trees (DBH ≥ the
//! species' minimum) that take part, chosen at random each year, and an STR drawn once per species
//! or once per tree from a deterministic, normal or lognormal law (mean and standard deviation;
//! a normal draw below 0 counts as 0; the lognormal has the given mean and standard deviation).
//! A taking-part tree sheds STR × (DBH/30)^β seeds on average (β per event), the expected count
//! that [`super::per_seed`] rounds at random or that weights the tree in the expected map.
//!
//! The draws come from [`Stream`]s with purpose [`Purpose::Masting`] (the group's decision, id =
//! group) and [`Purpose::Fecundity`] (the species' STR with id = 2⁴⁸ − 1, a tree's taking part
//! and STR with id = the tree), so a run is the same for any thread count.

use super::rng::{MAX_ID, Purpose, Stream};

/// How an STR is drawn.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub enum StrLaw {
    /// STR = the mean.
    Deterministic,
    /// Normal with the mean and standard deviation; below 0 counts as 0.
    Normal,
    /// Lognormal with the mean and standard deviation (of the STR, not of its log).
    Lognormal,
}

/// One event's (mast or non-mast) fecundity parameters of a species.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct EventFecundity {
    pub str_mean: f64,
    pub str_sd: f64,
    pub law: StrLaw,
    pub beta: f64,
    /// Fraction of reproductive trees taking part, in [0, 1].
    pub participating: f64,
}

/// A species' masting parameters.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Masting {
    pub a: f64,
    pub b: f64,
    /// Species with the same group mast together.
    pub group: u8,
    pub mast: EventFecundity,
    pub non_mast: EventFecundity,
    /// Draw the STR once per species and year (true) or once per tree (false).
    pub str_per_species: bool,
}

impl Masting {
    /// Check every parameter; the message names it.
    pub fn validated(self) -> Result<Self, String> {
        if !(self.a.is_finite() && self.a > 0.0) {
            return Err(format!(
                "masting `a` must be a finite number > 0, got {}",
                self.a
            ));
        }
        if !self.b.is_finite() {
            return Err(format!("masting `b` must be finite, got {}", self.b));
        }
        for (name, e) in [("mast", &self.mast), ("non-mast", &self.non_mast)] {
            if !(e.str_mean.is_finite() && e.str_mean >= 0.0) {
                return Err(format!(
                    "{name} STR mean must be finite and >= 0, got {}",
                    e.str_mean
                ));
            }
            if !(e.str_sd.is_finite() && e.str_sd >= 0.0) {
                return Err(format!(
                    "{name} STR standard deviation must be finite and >= 0, got {}",
                    e.str_sd
                ));
            }
            if !(e.beta.is_finite() && e.beta.abs() <= 25.0) {
                return Err(format!(
                    "{name} beta must be finite with |beta| <= 25, got {}",
                    e.beta
                ));
            }
            if !(0.0..=1.0).contains(&e.participating) {
                return Err(format!(
                    "{name} fraction of trees taking part must be in [0, 1], got {}",
                    e.participating
                ));
            }
        }
        Ok(self)
    }

    /// P(mast) after `years` (≥ 1) years since the group's last mast.
    pub fn probability(&self, years: u32) -> f64 {
        1.0 / (1.0 + (f64::from(years) / self.a).powf(self.b))
    }
}

/// The mast state of a run: years since each group's last mast.
#[derive(Debug, Clone, PartialEq)]
pub struct MastState {
    years: [u32; 256],
}

impl Default for MastState {
    fn default() -> Self {
        MastState { years: [1; 256] }
    }
}

impl MastState {
    /// Decide this `year`'s mast for every group of `species` (the first species of a group
    /// decides with its parameters, as SORTIE-ND does) and advance the counters. Returns, per
    /// species, whether it masts.
    pub fn decide(&mut self, species: &[Masting], seed: u64, year: u32) -> Vec<bool> {
        let mut decided: [Option<bool>; 256] = [None; 256];
        let out: Vec<bool> = species
            .iter()
            .map(|m| {
                let g = usize::from(m.group);
                *decided[g].get_or_insert_with(|| {
                    let mut s = Stream::new(seed, year, m.group, 0, Purpose::Masting);
                    s.uniform() < m.probability(self.years[g])
                })
            })
            .collect();
        for (g, d) in decided.iter().enumerate() {
            match d {
                Some(true) => self.years[g] = 1,
                Some(false) => self.years[g] = self.years[g].saturating_add(1),
                None => {}
            }
        }
        out
    }

    /// Years since group `g`'s last mast, as the next decision uses it.
    pub fn years_since(&self, g: u8) -> u32 {
        self.years[usize::from(g)]
    }
}

/// An STR drawn from `e`'s law.
fn draw_str(e: &EventFecundity, s: &mut Stream) -> f64 {
    match e.law {
        StrLaw::Deterministic => e.str_mean,
        StrLaw::Normal => (e.str_mean + e.str_sd * s.normal()).max(0.0),
        StrLaw::Lognormal => {
            if e.str_mean <= 0.0 {
                return 0.0;
            }
            // The log's parameters for the given mean m and sd s: σ² = ln(1 + s²/m²),
            // μ = ln m − σ²/2.
            let s2 = (1.0 + (e.str_sd / e.str_mean).powi(2)).ln();
            s.lognormal(e.str_mean.ln() - 0.5 * s2, s2.sqrt())
        }
    }
}

/// The species' STR for this year when drawn once per species (None when drawn per tree).
pub fn species_str(m: &Masting, mast: bool, seed: u64, year: u32, species: u8) -> Option<f64> {
    let e = if mast { &m.mast } else { &m.non_mast };
    m.str_per_species.then(|| {
        let mut s = Stream::new(seed, year, species, MAX_ID, Purpose::Fecundity);
        draw_str(e, &mut s)
    })
}

/// Expected seeds of tree `tree` (DBH `dbh_cm`, reproductive) this year: 0 when it does not take
/// part, else STR × (DBH/30)^β with the species' STR (`species_str`) or its own draw.
#[allow(clippy::too_many_arguments)]
pub fn tree_seeds(
    m: &Masting,
    mast: bool,
    species_str: Option<f64>,
    dbh_cm: f64,
    seed: u64,
    year: u32,
    species: u8,
    tree: u64,
) -> f64 {
    let e = if mast { &m.mast } else { &m.non_mast };
    let mut s = Stream::new(seed, year, species, tree, Purpose::Fecundity);
    if s.uniform() >= e.participating {
        return 0.0;
    }
    let str_ = species_str.unwrap_or_else(|| draw_str(e, &mut s));
    str_ * (dbh_cm / 30.0).powf(e.beta)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(str_mean: f64, law: StrLaw, participating: f64) -> EventFecundity {
        EventFecundity {
            str_mean,
            str_sd: 0.3 * str_mean,
            law,
            beta: 2.0,
            participating,
        }
    }

    fn masting(group: u8, a: f64, b: f64) -> Masting {
        Masting {
            a,
            b,
            group,
            mast: event(500.0, StrLaw::Lognormal, 0.9),
            non_mast: event(50.0, StrLaw::Normal, 0.4),
            str_per_species: false,
        }
    }

    #[test]
    fn the_cdf_is_sorties() {
        let m = masting(0, 4.0, -3.0);
        // 1/(1 + (X/a)^b): ½ at X = a, rising with X for b < 0.
        assert!((m.probability(4) - 0.5).abs() < 1e-15);
        assert!((m.probability(2) - 1.0 / (1.0 + 0.5f64.powf(-3.0))).abs() < 1e-15);
        assert!(m.probability(1) < m.probability(2) && m.probability(8) > 0.88);
    }

    /// Mast years of a group over many runs: the share of masts at each X equals P(X)
    /// (binomial, within 5 sd), species of one group always agree, and the counter restarts.
    #[test]
    fn groups_mast_together_with_the_cdfs_frequency() {
        let sp = [
            masting(3, 4.0, -3.0),
            masting(3, 9.0, 5.0),
            masting(7, 2.0, -2.0),
        ];
        let (mut at, mut masts) = ([0u64; 40], [0u64; 40]);
        for run in 0..4000u64 {
            let mut st = MastState::default();
            for year in 0..30u32 {
                let x = st.years_since(3) as usize;
                let d = st.decide(&sp, run, year);
                assert_eq!(d[0], d[1], "one group, one decision");
                at[x.min(39)] += 1;
                masts[x.min(39)] += u64::from(d[0]);
                assert_eq!(st.years_since(3), if d[0] { 1 } else { x as u32 + 1 });
            }
        }
        for x in 1..12 {
            if at[x] < 500 {
                continue;
            }
            let p = sp[0].probability(x as u32);
            let (n, k) = (at[x] as f64, masts[x] as f64);
            let sd = (n * p * (1.0 - p)).sqrt();
            assert!(
                (k - n * p).abs() < 5.0 * sd + 1.0,
                "X = {x}: {k} of {n}, p {p}"
            );
        }
    }

    #[test]
    fn trees_take_part_and_produce_as_drawn() {
        let m = masting(0, 4.0, -3.0);
        let n = 100_000u64;
        for (mast, e) in [(true, &m.mast), (false, &m.non_mast)] {
            let seeds: Vec<f64> = (0..n)
                .map(|t| tree_seeds(&m, mast, None, 30.0, 1, 2, 0, t))
                .collect();
            let taking = seeds.iter().filter(|&&x| x > 0.0).count() as f64;
            let p = e.participating;
            let sd = (n as f64 * p * (1.0 - p)).sqrt();
            assert!(
                (taking - n as f64 * p).abs() < 5.0 * sd,
                "{mast}: {taking} take part"
            );
            // At DBH 30 the seeds are the STR: mean str_mean over the trees taking part
            // (the normal clipped at 0, 3.3 sd below, moves it by < 0.01), sd 0.3 mean; within 5
            // standard errors.
            let mean = seeds.iter().filter(|&&x| x > 0.0).sum::<f64>() / taking;
            let se = e.str_sd / taking.sqrt();
            assert!(
                (mean - e.str_mean).abs() < 5.0 * se,
                "{mast}: mean STR {mean}"
            );
        }
        // Per species: every tree taking part gets the same STR; DBH scales it by (DBH/30)^β.
        let m2 = Masting {
            str_per_species: true,
            ..m
        };
        let s = species_str(&m2, true, 1, 2, 0);
        let a: Vec<f64> = (0..50)
            .map(|t| tree_seeds(&m2, true, s, 60.0, 1, 2, 0, t))
            .filter(|&x| x > 0.0)
            .collect();
        assert!(a.iter().all(|&x| (x - s.unwrap_or(0.0) * 4.0).abs() < 1e-9));
    }

    #[test]
    fn bad_parameters_are_named() {
        let mut m = masting(0, 4.0, -3.0);
        m.non_mast.participating = 1.5;
        assert!(m.validated().unwrap_err().contains("non-mast fraction"));
        let mut m = masting(0, 0.0, -3.0);
        m.mast.beta = 2.0;
        assert!(m.validated().unwrap_err().contains("`a`"));
    }
}
