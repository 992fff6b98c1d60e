//! The forest model's parameters, with units and documented defaults.
//!
//! A species carries its dispersal ([`Species`]: the canopy kernel, STR, β, η and the minimum
//! reproductive DBH), an optional gap kernel, optional masting, its seed-count law, an optional
//! non-spatial seed rain, and its demography: establishment probability, stage thresholds,
//! growth and mortality per stage. [`ForestParams`] adds what is shared by the run: the gap
//! rule (cells of `gap_cell_m` holding at most `max_gap_density` adults) and the torus.

use super::fecundity::Masting;
use super::rain::Rain;
use super::seed_counts::SeedDistribution;
use crate::dispersal::Species;

/// The life stages, in order. A tree's stage follows from its DBH and its species' thresholds:
/// DBH < `sapling_dbh_cm` is a seedling, < `adult_dbh_cm` a sapling, else an adult.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    Seedling = 0,
    Sapling = 1,
    Adult = 2,
}

impl Stage {
    pub const ALL: [Stage; 3] = [Stage::Seedling, Stage::Sapling, Stage::Adult];

    pub fn name(self) -> &'static str {
        match self {
            Stage::Seedling => "seedling",
            Stage::Sapling => "sapling",
            Stage::Adult => "adult",
        }
    }
}

/// Annual diameter growth of one stage (a stand-in for SORTIE-ND's growth behaviours, which
/// are driven by light; ours see only size).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
#[serde(tag = "law", rename_all = "snake_case")]
pub enum Growth {
    /// SORTIE's "constant radial growth": the radius grows by `radial_mm_per_yr` each year, so
    /// the DBH grows by 2 × radial / 10 cm.
    ConstantRadial { radial_mm_per_yr: f64 },
    /// A size-dependent increment that rises from 0 and peaks at `peak_dbh_cm` with
    /// `max_cm_per_yr` (ΔD = g · (D/D*) · e^(1 − D/D*), a gamma-shaped form common in gap
    /// models; a tree of DBH 0 still grows by `min_cm_per_yr`): ΔD = max(min, g (D/D*) e^(1−D/D*)).
    SizeDependent {
        max_cm_per_yr: f64,
        peak_dbh_cm: f64,
        min_cm_per_yr: f64,
    },
}

impl Growth {
    /// DBH increment in cm for one year at DBH `dbh_cm`.
    #[inline]
    pub fn increment_cm(&self, dbh_cm: f64) -> f64 {
        match *self {
            Growth::ConstantRadial { radial_mm_per_yr } => 0.2 * radial_mm_per_yr,
            Growth::SizeDependent {
                max_cm_per_yr,
                peak_dbh_cm,
                min_cm_per_yr,
            } => {
                let q = dbh_cm / peak_dbh_cm;
                (max_cm_per_yr * q * super::exact_math::exp(1.0 - q)).max(min_cm_per_yr)
            }
        }
    }

    fn validated(self, what: &str) -> Result<Self, String> {
        let ok = |v: f64| v.is_finite() && v >= 0.0;
        let good = match self {
            Growth::ConstantRadial { radial_mm_per_yr } => ok(radial_mm_per_yr),
            Growth::SizeDependent {
                max_cm_per_yr,
                peak_dbh_cm,
                min_cm_per_yr,
            } => {
                ok(max_cm_per_yr)
                    && ok(min_cm_per_yr)
                    && peak_dbh_cm.is_finite()
                    && peak_dbh_cm > 0.0
            }
        };
        if good {
            Ok(self)
        } else {
            Err(format!(
                "{what} growth: every rate must be a finite number >= 0 and peak_dbh_cm > 0, got {self:?}"
            ))
        }
    }
}

/// Annual mortality of one stage: p = min(1, `annual` + `per_neighbour` × n), n the other
/// trees (any species and stage) in the tree's gap cell at the start of the year
/// (`per_neighbour` = 0: density independent).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Mortality {
    pub annual: f64,
    pub per_neighbour: f64,
}

impl Mortality {
    /// The probability of dying this year with `neighbours` other trees in the gap cell.
    #[inline]
    pub fn probability(&self, neighbours: u32) -> f64 {
        (self.annual + self.per_neighbour * f64::from(neighbours)).min(1.0)
    }
}

/// One species of the forest.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ForestSpecies {
    /// Canopy dispersal (SORTIE-ND's NonGapDisperse): kernel, STR, β, η, and the minimum DBH
    /// for reproduction. Its name is the species'.
    pub canopy: Species,
    /// Gap dispersal (GapDisperse) for parents in gap cells; None: the canopy parameters
    /// everywhere.
    pub gap: Option<Species>,
    /// Masting (MastingSpatialDisperse); None: STR of the dispersal parameters every year.
    pub masting: Option<Masting>,
    /// How the expected seeds of a cell become a count (expected mode only).
    pub seed_distribution: SeedDistribution,
    /// Non-spatial seed rain (NonSpatialDisperse) from the species' basal area.
    pub rain: Option<Rain>,
    /// Probability that a seed becomes a seedling, in [0, 1].
    pub establishment: f64,
    /// DBH of a new seedling (cm).
    pub seedling_dbh_cm: f64,
    /// Seedling → sapling at this DBH (cm).
    pub sapling_dbh_cm: f64,
    /// Sapling → adult at this DBH (cm; SORTIE's `tr_minAdultDBH`).
    pub adult_dbh_cm: f64,
    /// Growth of seedlings, saplings, adults.
    pub growth: [Growth; 3],
    /// Mortality of seedlings, saplings, adults.
    pub mortality: [Mortality; 3],
}

impl ForestSpecies {
    pub fn name(&self) -> &str {
        &self.canopy.name
    }

    /// The stage of a tree of this species with DBH `dbh_cm`.
    #[inline]
    pub fn stage(&self, dbh_cm: f64) -> Stage {
        if dbh_cm < self.sapling_dbh_cm {
            Stage::Seedling
        } else if dbh_cm < self.adult_dbh_cm {
            Stage::Sapling
        } else {
            Stage::Adult
        }
    }

    /// The demography a species gets when a file gives none: every seed establishes with
    /// probability 0.02; seedlings start at 0.1 cm, become saplings at 1 cm and adults at the
    /// canopy's minimum reproductive DBH (at least 2 cm); growth 1 mm radial a year for
    /// seedlings, 2 mm for saplings, and for adults a size-dependent 0.6 cm/yr at 40 cm; annual
    /// mortality 0.25 / 0.05 / 0.01, seedlings and saplings also 0.02 per neighbour.
    pub fn with_defaults(canopy: Species) -> Self {
        let adult = canopy.min_dbh_cm.max(2.0);
        ForestSpecies {
            canopy,
            gap: None,
            masting: None,
            seed_distribution: SeedDistribution::Poisson,
            rain: None,
            establishment: 0.02,
            seedling_dbh_cm: 0.1,
            sapling_dbh_cm: 1.0,
            adult_dbh_cm: adult,
            growth: [
                Growth::ConstantRadial {
                    radial_mm_per_yr: 1.0,
                },
                Growth::ConstantRadial {
                    radial_mm_per_yr: 2.0,
                },
                Growth::SizeDependent {
                    max_cm_per_yr: 0.6,
                    peak_dbh_cm: 40.0,
                    min_cm_per_yr: 0.05,
                },
            ],
            mortality: [
                Mortality {
                    annual: 0.25,
                    per_neighbour: 0.02,
                },
                Mortality {
                    annual: 0.05,
                    per_neighbour: 0.02,
                },
                Mortality {
                    annual: 0.01,
                    per_neighbour: 0.0,
                },
            ],
        }
    }

    /// Check every field; the message names the species and the field.
    pub fn validated(self) -> Result<Self, String> {
        let name = self.name().to_string();
        let bad = |m: String| format!("species {name:?}: {m}");
        let prob = |v: f64, f: &str| -> Result<(), String> {
            if (0.0..=1.0).contains(&v) {
                Ok(())
            } else {
                Err(bad(format!("`{f}` must be in [0, 1], got {v}")))
            }
        };
        prob(self.establishment, "establishment")?;
        for (st, m) in Stage::ALL.iter().zip(&self.mortality) {
            prob(m.annual, &format!("{} mortality", st.name()))?;
            if !(m.per_neighbour.is_finite() && m.per_neighbour >= 0.0) {
                return Err(bad(format!(
                    "{} mortality `per_neighbour` must be a finite number >= 0, got {}",
                    st.name(),
                    m.per_neighbour
                )));
            }
        }
        for (st, g) in Stage::ALL.iter().zip(&self.growth) {
            g.validated(st.name()).map_err(bad)?;
        }
        let pos = |v: f64| v.is_finite() && v > 0.0;
        if !(pos(self.seedling_dbh_cm)
            && self.seedling_dbh_cm <= self.sapling_dbh_cm
            && self.sapling_dbh_cm <= self.adult_dbh_cm
            && self.adult_dbh_cm.is_finite())
        {
            return Err(bad(format!(
                "stage thresholds must satisfy 0 < seedling_dbh_cm ({}) <= sapling_dbh_cm ({}) <= adult_dbh_cm ({})",
                self.seedling_dbh_cm, self.sapling_dbh_cm, self.adult_dbh_cm
            )));
        }
        let seed_distribution = self.seed_distribution.validated().map_err(bad)?;
        if let Some(r) = self.rain
            && !(r.intercept.is_finite() && r.slope.is_finite())
        {
            return Err(bad(format!("seed rain must be finite, got {r:?}")));
        }
        let masting = match self.masting {
            Some(m) => Some(m.validated().map_err(bad)?),
            None => None,
        };
        Ok(ForestSpecies {
            seed_distribution,
            masting,
            ..self
        })
    }
}

/// The run-wide parameters of the forest.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ForestParams {
    pub species: Vec<ForestSpecies>,
    /// A gap cell holds at most this many adults (SORTIE's `di_maxGapDensity`).
    pub max_gap_density: u32,
    /// Side of the gap (and neighbour) cells in m (SORTIE's "Dispersed Seeds" grid, 8 m by
    /// default).
    pub gap_cell_m: f64,
    /// The plot is a torus: seeds leaving one side re-enter on the other (SORTIE-ND's plots).
    pub torus: bool,
}

impl ForestParams {
    /// Check the run-wide fields and every species.
    pub fn validated(self) -> Result<Self, String> {
        if self.species.is_empty() {
            return Err("no species".into());
        }
        if self.species.len() > 255 {
            return Err(format!("at most 255 species, got {}", self.species.len()));
        }
        if !(self.gap_cell_m.is_finite() && self.gap_cell_m > 0.0) {
            return Err(format!(
                "`gap_cell_m` must be a finite number > 0, got {}",
                self.gap_cell_m
            ));
        }
        let species = self
            .species
            .into_iter()
            .map(ForestSpecies::validated)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ForestParams { species, ..self })
    }
}
