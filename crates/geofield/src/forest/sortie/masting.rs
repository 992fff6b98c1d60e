//! `MastingSpatialDisperse` (`clMastingSpatialDisperse`): the masting CDF's a and b, groups,
//! the mast and non-mast STR laws, β and shares of trees taking part, and the kernel, mapped
//! onto [`Masting`]. A mast-year kernel unlike the non-mast one has no counterpart (geofield
//! has one kernel a species) and is reported as unsupported.

use super::behaviors::Behavior;
use super::dispersal::kernel_words;
use super::xml::{Range, first};
use super::{FUNCTIONS, Reader, Spatial};
use crate::forest::fecundity::{EventFecundity, Masting, StrLaw};
use crate::input_error::InputError;

impl<'a, 'i> Reader<'_, 'a, 'i> {
    /// An STR law's mean and standard deviation as ours: SORTIE-ND draws a lognormal STR as
    /// gsl_ran_lognormal(mean, sd), i.e. exp(mean + sd Z), so its two numbers are the log's
    /// μ and σ; ours are the STR's own mean e^(μ + σ²/2) and sd mean · √(e^(σ²) − 1), the same
    /// law.
    fn str_law(law: i64, mean: f64, sd: f64) -> (StrLaw, f64, f64) {
        match law {
            2 => {
                let m = (mean + 0.5 * sd * sd).exp();
                (StrLaw::Lognormal, m, m * (sd * sd).exp_m1().sqrt())
            }
            3 => (StrLaw::Normal, mean, sd),
            _ => (StrLaw::Deterministic, mean, sd),
        }
    }

    /// `MastingSpatialDisperse`.
    pub(super) fn masting(&mut self, b: &Behavior<'a, 'i>) -> Result<(), InputError> {
        let c = self.ctx;
        let who = b.who();
        let species = self.spatial_species(b, false)?;
        if species.is_empty() {
            return Ok(());
        }
        let block = b.block(c)?;
        let root = c.doc.root_element();
        // SORTIE-ND reads the CDF's a and b from the whole file; they normally sit in the block.
        let scope = |tag: &str| {
            if first(block, tag).is_some() {
                block
            } else {
                root
            }
        };
        for sp in species {
            let name = c.name(sp);
            let min = c.need(
                block,
                "di_minDbhForReproduction",
                sp,
                &who,
                Range::NonNegative,
            )?;
            let cf = c.need_code(block, "di_canopyFunction", sp, &who, &FUNCTIONS)?;
            let kernel = self.kernel(block, sp, &who, "Canopy", cf)?;
            let mast_kernel = self.kernel(block, sp, &who, "Masting", cf)?;
            let law = c.need_code(
                block,
                "di_mastSTRPDF",
                sp,
                &who,
                &[(0, "deterministic"), (2, "lognormal"), (3, "normal")],
            )?;
            // A lognormal STR's numbers are the log's μ and σ, which may be negative.
            let str_range = if law == 2 {
                Range::Any
            } else {
                Range::NonNegative
            };
            // One event's parameters, and SORTIE-ND's STR numbers (for the mapping).
            let event = |str_tag: &str, sd_tag: &str, beta_tag: &str, part_tag: &str| {
                let mean = c.need(block, str_tag, sp, &who, str_range)?;
                let sd = c.need(block, sd_tag, sp, &who, Range::NonNegative)?;
                let (law, str_mean, str_sd) = Self::str_law(law, mean, sd);
                let e = EventFecundity {
                    str_mean,
                    str_sd,
                    law,
                    beta: c.need(block, beta_tag, sp, &who, Range::Beta)?,
                    participating: c.need(block, part_tag, sp, &who, Range::Unit)?,
                };
                Ok::<_, InputError>((e, (mean, sd)))
            };
            let (non_mast, non_mast_raw) = event(
                "di_spatialSTR",
                "di_spatialSTRStdDev",
                "di_spatialBeta",
                "di_spatialPropParticipating",
            )?;
            let (mast, mast_raw) = event(
                "di_mastingSTR",
                "di_mastingSTRStdDev",
                "di_mastingBeta",
                "di_mastPropParticipating",
            )?;
            let group = c.need_integer(block, "di_mastGroup", sp, &who)?;
            let group_id = match self.mast_groups.iter().position(|&g| g == group) {
                Some(i) => i,
                None => {
                    self.mast_groups.push(group);
                    self.mast_groups.len() - 1
                }
            };
            let per_species = c.need_integer(block, "di_mastDrawPerSpecies", sp, &who)? == 1;
            let a_tag = "di_mastCDFA";
            let a = c.need(scope(a_tag), a_tag, sp, &who, Range::Positive)?;
            let b_tag = "di_mastCDFB";
            let b_cdf = c.need(scope(b_tag), b_tag, sp, &who, Range::Any)?;
            let masting = Masting {
                a,
                b: b_cdf,
                group: u8::try_from(group_id).unwrap_or(u8::MAX),
                mast,
                non_mast,
                str_per_species: per_species,
            }
            .validated()
            .map_err(|e| c.err(block, c.species_field(block.tag_name().name(), sp), e))?;
            let canopy = self.species(block, sp, kernel, non_mast.str_mean, non_mast.beta, min)?;
            if mast_kernel != kernel {
                self.unsupported(format!(
                    "{} mast-year kernel of species {name} ({} in mast years, {} otherwise; geofield uses one kernel a species)",
                    b.name,
                    kernel_words(&mast_kernel),
                    kernel_words(&kernel)
                ));
            }
            let event_words = |e: &EventFecundity, sortie: (f64, f64)| match e.law {
                StrLaw::Deterministic => format!("STR {}", e.str_mean),
                StrLaw::Normal => format!("STR normal (mean {}, sd {})", e.str_mean, e.str_sd),
                StrLaw::Lognormal => format!(
                    "STR lognormal exp({} + {} Z) (mean {}, sd {})",
                    sortie.0, sortie.1, e.str_mean, e.str_sd
                ),
            } + &format!(", beta {}, {} of the trees", e.beta, e.participating);
            self.mapping.push(format!(
                "{who}, species {name}: mast probability 1/(1 + (X/{a})^{b_cdf}) (di_mastCDFA, di_mastCDFB), di_mastGroup {group} -> group {group_id}; non-mast: {}; mast: {}; STR drawn once per {}; kernel {}; di_minDbhForReproduction {min} cm -> min_dbh_cm",
                event_words(&non_mast, non_mast_raw),
                event_words(&mast, mast_raw),
                if per_species { "species and year" } else { "tree and year" },
                kernel_words(&kernel)
            ));
            // SORTIE-ND's STR without a per-tree draw (deterministic, or drawn per species)
            // goes into a fecundity already multiplied by the years per timestep, and is
            // multiplied again per tree.
            if self.years_per_timestep > 1 && (law == 0 || per_species) {
                self.mapping.push(format!(
                    "{who}, species {name}: SORTIE-ND multiplies this STR by yearsPerTimestep twice per timestep; geofield uses it once a year"
                ));
            }
            self.drafts[sp].spatial = Some(Spatial {
                canopy,
                gap: None,
                masting: Some(masting),
                who: who.clone(),
            });
        }
        Ok(())
    }
}
