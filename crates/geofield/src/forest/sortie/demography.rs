//! The demography behaviours with a one-to-one counterpart: `Establishment` (every seed of its
//! species becomes a seedling), `StochasticMortality` (an annual probability per species,
//! `mo_stochasticMortRate`; SORTIE-ND raises it to 1 − (1 − p)^years per timestep) and
//! `ConstRadialGrowth` (a radial increment per species in mm a year, `gr_adultConstRadialInc`;
//! SORTIE-ND adds 0.2 × it × years per timestep to the diameter in cm).

use super::Reader;
use super::behaviors::{Behavior, TreeType};
use super::xml::Range;
use crate::forest::params::{Growth, Mortality, Stage};
use crate::input_error::InputError;

/// A behaviour's (species, stage) pairs, with a note for the types that are not living trees.
fn living<'a, 'i>(
    r: &mut Reader,
    b: &Behavior<'a, 'i>,
) -> Vec<(usize, Stage, roxmltree::Node<'a, 'i>)> {
    let mut out = Vec::new();
    for &(sp, ty, node) in &b.apply {
        match ty.stage() {
            Some(st) => out.push((sp, st, node)),
            None => {
                let what = if ty == TreeType::Seed {
                    "seeds are not trees in geofield"
                } else {
                    "geofield keeps no dead trees"
                };
                r.mapping.push(format!(
                    "{}, species {}: type {} ignored ({what})",
                    b.who(),
                    r.ctx.name(sp),
                    ty.name()
                ));
            }
        }
    }
    out
}

impl Reader<'_, '_, '_> {
    /// `Establishment`: establishment probability 1 for its species (the others get 0).
    pub(super) fn establishment(&mut self, b: &Behavior) {
        self.establishment_given = true;
        for sp in b.species() {
            self.drafts[sp].establishment = Some(1.0);
            self.mapping.push(format!(
                "{}, species {}: every seed becomes a seedling -> establishment 1",
                b.who(),
                self.ctx.name(sp)
            ));
        }
    }

    /// `StochasticMortality`.
    pub(super) fn mortality(&mut self, b: &Behavior) -> Result<(), InputError> {
        let c = self.ctx;
        let who = b.who();
        let pairs = living(self, b);
        if pairs.is_empty() {
            return Ok(());
        }
        let block = b.block(c)?;
        for (sp, st, node) in pairs {
            let rate = c.need(block, "mo_stochasticMortRate", sp, &who, Range::Unit)?;
            let slot = &mut self.drafts[sp].mortality[st as usize];
            if let Some((_, by)) = slot {
                return Err(c.err(
                    node,
                    format!("element <behavior> \"{}\" species {}", b.name, c.name(sp)),
                    format!(
                        "{} mortality is already given by {by}; geofield models one",
                        st.name()
                    ),
                ));
            }
            *slot = Some((
                Mortality {
                    annual: rate,
                    per_neighbour: 0.0,
                },
                who.clone(),
            ));
            self.mapping.push(format!(
                "{who}, species {}: {} mortality {rate} a year -> mortality.annual, per_neighbour 0",
                c.name(sp),
                st.name()
            ));
        }
        Ok(())
    }

    /// `ConstRadialGrowth` (and "ConstRadialGrowth diam only": geofield has no heights).
    pub(super) fn growth(&mut self, b: &Behavior) -> Result<(), InputError> {
        let c = self.ctx;
        let who = b.who();
        let pairs = living(self, b);
        if pairs.is_empty() {
            return Ok(());
        }
        let block = b.block(c)?;
        for (sp, st, node) in pairs {
            let mm = c.need(
                block,
                "gr_adultConstRadialInc",
                sp,
                &who,
                Range::NonNegative,
            )?;
            let slot = &mut self.drafts[sp].growth[st as usize];
            if let Some((_, by)) = slot {
                return Err(c.err(
                    node,
                    format!("element <behavior> \"{}\" species {}", b.name, c.name(sp)),
                    format!(
                        "{} growth is already given by {by}; geofield models one",
                        st.name()
                    ),
                ));
            }
            *slot = Some((
                Growth::ConstantRadial {
                    radial_mm_per_yr: mm,
                },
                who.clone(),
            ));
            let seedling = if st == Stage::Seedling {
                " (SORTIE-ND grows a seedling's diameter at 10 cm, geofield its DBH)"
            } else {
                ""
            };
            self.mapping.push(format!(
                "{who}, species {}: {} growth {mm} mm/yr radial -> growth ConstantRadial{seedling}",
                c.name(sp),
                st.name()
            ));
        }
        Ok(())
    }
}
