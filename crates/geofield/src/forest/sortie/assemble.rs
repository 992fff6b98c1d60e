//! The species assembled from what the file gives, with [`ForestSpecies::with_defaults`] for
//! the rest, and the run-wide parameters.

use super::Reader;
use crate::dispersal::{Eta, Kernel, Species};
use crate::forest::params::{ForestParams, ForestSpecies, Growth, Stage};
use crate::input_error::InputError;

/// The Weibull placeholder kernel of a species without spatial dispersal (its STR is 0, so it
/// sheds no seeds; the kernel is short so that nothing is spent on it).
pub(super) const NO_DISPERSAL: Kernel = Kernel::Weibull { d: 1.0, theta: 2.0 };

impl Reader<'_, '_, '_> {
    /// Build the species with defaults for what the file does not give, and check them.
    pub(super) fn assemble(&mut self) -> Result<ForestParams, InputError> {
        let ctx = self.ctx;
        let mut species = Vec::new();
        for (sp, d) in self.drafts.iter_mut().enumerate() {
            let name = ctx.species[sp].clone();
            let spatial = d.spatial.take();
            let canopy = match &spatial {
                Some(s) => s.canopy.clone(),
                None => {
                    let min = d.rain.as_ref().map_or(d.adult_dbh_cm, |r| r.1);
                    self.mapping.push(format!(
                        "species {}: no spatial dispersal behaviour -> STR 0 (no seeds from its trees){}",
                        ctx.name(sp),
                        if d.rain.is_some() {
                            format!("; its rain counts the basal area of trees >= {min} cm")
                        } else {
                            String::new()
                        }
                    ));
                    Species::new(
                        name.clone(),
                        NO_DISPERSAL,
                        0.0,
                        0.0,
                        Eta::Analytic,
                        min,
                        None,
                    )
                    .map_err(|e| ctx.invalid(e.to_string()))?
                }
            };
            if let (Some(s), Some((_, min, who))) = (&spatial, &d.rain)
                && *min != s.canopy.min_dbh_cm
            {
                self.mapping.push(format!(
                    "species {}: {who} gives a minimum reproductive DBH of {min} cm, {} {} cm; geofield's rain uses {} cm",
                    ctx.name(sp),
                    s.who,
                    s.canopy.min_dbh_cm,
                    s.canopy.min_dbh_cm
                ));
            }
            let mut f = ForestSpecies::with_defaults(canopy);
            let mut kept: Vec<String> = Vec::new();
            if let Some(s) = spatial {
                f.gap = s.gap;
                f.masting = s.masting;
            }
            f.rain = d.rain.as_ref().map(|r| r.0);
            f.seed_distribution = d.seed_distribution;
            f.adult_dbh_cm = d.adult_dbh_cm;
            f.sapling_dbh_cm = f.sapling_dbh_cm.min(d.adult_dbh_cm);
            f.seedling_dbh_cm = f.seedling_dbh_cm.min(f.sapling_dbh_cm);
            kept.push(format!("new seedlings {} cm DBH", f.seedling_dbh_cm));
            match d.establishment {
                Some(v) => f.establishment = v,
                None if self.establishment_given => f.establishment = 0.0,
                None => kept.push(format!("establishment {}", f.establishment)),
            }
            for st in Stage::ALL {
                let i = st as usize;
                match &d.growth[i] {
                    Some((g, _)) => f.growth[i] = *g,
                    None => kept.push(format!(
                        "{} growth {}",
                        st.name(),
                        growth_words(&f.growth[i])
                    )),
                }
                match &d.mortality[i] {
                    Some((m, _)) => f.mortality[i] = *m,
                    None => kept.push(format!(
                        "{} mortality {} a year + {} per neighbour",
                        st.name(),
                        f.mortality[i].annual,
                        f.mortality[i].per_neighbour
                    )),
                }
            }
            if self.establishment_given && d.establishment.is_none() {
                self.mapping.push(format!(
                    "species {}: no Establishment -> establishment 0 (SORTIE-ND germinates none of its seeds)",
                    ctx.name(sp)
                ));
            }
            self.mapping.push(format!(
                "species {}: geofield defaults kept: {}",
                ctx.name(sp),
                kept.join(", ")
            ));
            species.push(f);
        }
        let max_gap_density = self.max_gap_density.as_ref().map_or(0, |m| m.0);
        ForestParams {
            species,
            max_gap_density,
            gap_cell_m: self.gap_cell_m,
            torus: true,
        }
        .validated()
        .map_err(|e| ctx.invalid(e))
    }
}

/// A growth law in words, for the mapping.
fn growth_words(g: &Growth) -> String {
    match *g {
        Growth::ConstantRadial { radial_mm_per_yr } => {
            format!("{radial_mm_per_yr} mm/yr radial")
        }
        Growth::SizeDependent {
            max_cm_per_yr,
            peak_dbh_cm,
            min_cm_per_yr,
        } => format!(
            "size-dependent (peak {max_cm_per_yr} cm/yr at {peak_dbh_cm} cm, at least {min_cm_per_yr} cm/yr)"
        ),
    }
}
