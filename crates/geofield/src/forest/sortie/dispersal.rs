//! The dispersal behaviours: `NonGapDisperse`, `GapDisperse`, `MastingSpatialDisperse`,
//! `NonSpatialDisperse`, and the shared seed distribution method.
//!
//! Where SORTIE-ND looks values up (`clSpatialDispersal::GetParameterFileData`,
//! `clMastingSpatialDisperse`, `clNonSpatialDispersal`, `clDisperseOrg`): the behaviour's block
//! for its own values; the whole file for `di_seedDistributionMethod`, `di_standardDeviation`,
//! `di_clumpingParameter` (usually in `<GeneralDisperse>`), and for the mast CDF's a and b. A
//! cover's STR and β may be written under either function's name (`di_weibullCanopySTR` or
//! `di_lognormalCanopySTR`); we take the one of the cover's function first.

use roxmltree::Node;

use super::behaviors::{Behavior, TreeType};
use super::xml::{Range, first};
use super::{FUNCTIONS, Reader, Spatial};
use crate::dispersal::{Eta, Kernel, Species};
use crate::forest::rain::Rain;
use crate::forest::seed_counts::SeedDistribution;
use crate::input_error::InputError;

/// A kernel in words, for the mapping.
pub(super) fn kernel_words(k: &Kernel) -> String {
    match *k {
        Kernel::Weibull { d, theta } => format!("Weibull (D {d}, theta {theta})"),
        Kernel::Lognormal { x0, xb } => format!("lognormal (X0 {x0} m, Xb {xb})"),
        Kernel::TwoDt { u, p } => format!("2Dt (u {u}, p {p})"),
    }
}

impl<'c, 'a, 'i> Reader<'c, 'a, 'i> {
    /// The kernel of `cover` ("Canopy", "Gap" or "Masting") with SORTIE-ND function `function`.
    pub(super) fn kernel(
        &self,
        block: Node<'a, 'i>,
        sp: usize,
        who: &str,
        cover: &str,
        function: i64,
    ) -> Result<Kernel, InputError> {
        let c = self.ctx;
        Ok(if function == 0 {
            Kernel::Weibull {
                d: c.need(
                    block,
                    &format!("di_weibull{cover}Dispersal"),
                    sp,
                    who,
                    Range::Positive,
                )?,
                theta: c.need(
                    block,
                    &format!("di_weibull{cover}Theta"),
                    sp,
                    who,
                    Range::Theta,
                )?,
            }
        } else {
            Kernel::Lognormal {
                x0: c.need(
                    block,
                    &format!("di_lognormal{cover}X0"),
                    sp,
                    who,
                    Range::Positive,
                )?,
                xb: c.need(
                    block,
                    &format!("di_lognormal{cover}Xb"),
                    sp,
                    who,
                    Range::Positive,
                )?,
            }
        })
    }

    /// `what` ("STR" or "Beta") of `cover` with SORTIE-ND function `function`: under the
    /// function's own name, else the other's.
    fn cover_value(
        &self,
        block: Node<'a, 'i>,
        sp: usize,
        who: &str,
        (cover, function): (&str, i64),
        what: &str,
        range: Range,
    ) -> Result<f64, InputError> {
        let c = self.ctx;
        let (own, other) = if function == 0 {
            ("weibull", "lognormal")
        } else {
            ("lognormal", "weibull")
        };
        let own_tag = format!("di_{own}{cover}{what}");
        if let Some(v) = c.opt(block, &own_tag, sp, range)? {
            return Ok(v);
        }
        match c.opt(block, &format!("di_{other}{cover}{what}"), sp, range)? {
            Some(v) => Ok(v),
            None => c.need(block, &own_tag, sp, who, range),
        }
    }

    /// The species of a spatial behaviour, checking the types it applies to: saplings and
    /// adults (SORTIE-ND refuses others), stumps noted as unsupported (suckering).
    pub(super) fn spatial_species(
        &mut self,
        b: &Behavior<'a, 'i>,
        stumps: bool,
    ) -> Result<Vec<usize>, InputError> {
        let c = self.ctx;
        let mut out: Vec<usize> = Vec::new();
        for &(sp, ty, node) in &b.apply {
            match ty {
                TreeType::Sapling | TreeType::Adult => {
                    if !out.contains(&sp) {
                        out.push(sp);
                    }
                }
                TreeType::Stump if stumps => {
                    self.unsupported(format!("{} from stumps (suckering)", b.name));
                }
                _ => {
                    return Err(c.err(
                        node,
                        format!("element <behavior> \"{}\"", b.name),
                        format!(
                            "{} applies to type {}: SORTIE-ND disperses from saplings and adults only",
                            b.who(),
                            ty.name()
                        ),
                    ));
                }
            }
        }
        for &sp in &out {
            if let Some(s) = &self.drafts[sp].spatial {
                return Err(c.err(
                    b.node,
                    format!("element <behavior> \"{}\" species {}", b.name, c.name(sp)),
                    format!(
                        "the species already disperses by {}; geofield models one spatial dispersal behaviour per species",
                        s.who
                    ),
                ));
            }
            if b.apply
                .iter()
                .any(|&(s, t, _)| s == sp && t == TreeType::Sapling)
            {
                self.mapping.push(format!(
                    "{}, species {}: applies to saplings too; geofield disperses from every tree with DBH >= the minimum, whatever its stage",
                    b.who(),
                    c.name(sp)
                ));
            }
        }
        Ok(out)
    }

    /// A [`Species`] with the analytic η, errors reported at the block.
    pub(super) fn species(
        &self,
        block: Node,
        sp: usize,
        kernel: Kernel,
        str_: f64,
        beta: f64,
        min_dbh_cm: f64,
    ) -> Result<Species, InputError> {
        let c = self.ctx;
        Species::new(
            c.species[sp].clone(),
            kernel,
            str_,
            beta,
            Eta::Analytic,
            min_dbh_cm,
            None,
        )
        .map_err(|e| {
            c.err(
                block,
                c.species_field(block.tag_name().name(), sp),
                e.to_string(),
            )
        })
    }

    /// `NonGapDisperse` (canopy only) or `GapDisperse` (canopy and gap).
    pub(super) fn spatial(&mut self, b: &Behavior<'a, 'i>, gap: bool) -> Result<(), InputError> {
        let c = self.ctx;
        let who = b.who();
        let species = self.spatial_species(b, true)?;
        if species.is_empty() {
            return Ok(());
        }
        let block = b.block(c)?;
        for sp in species {
            let min = c.need(
                block,
                "di_minDbhForReproduction",
                sp,
                &who,
                Range::NonNegative,
            )?;
            let cf = c.need_code(block, "di_canopyFunction", sp, &who, &FUNCTIONS)?;
            let kernel = self.kernel(block, sp, &who, "Canopy", cf)?;
            let str_ =
                self.cover_value(block, sp, &who, ("Canopy", cf), "STR", Range::NonNegative)?;
            let beta = self.cover_value(block, sp, &who, ("Canopy", cf), "Beta", Range::Beta)?;
            let canopy = self.species(block, sp, kernel, str_, beta, min)?;
            let mut line = format!(
                "{who}, species {}: canopy {} -> kernel; STR {str_}, beta {beta} -> str_, beta with eta analytic ({str_} (DBH/30)^{beta} seeds per tree and year, as SORTIE-ND's STR); di_minDbhForReproduction {min} cm -> min_dbh_cm",
                c.name(sp),
                kernel_words(&kernel)
            );
            let gap_species = if gap {
                let gf = c.need_code(block, "di_gapFunction", sp, &who, &FUNCTIONS)?;
                let gk = self.kernel(block, sp, &who, "Gap", gf)?;
                let gs =
                    self.cover_value(block, sp, &who, ("Gap", gf), "STR", Range::NonNegative)?;
                let gb = self.cover_value(block, sp, &who, ("Gap", gf), "Beta", Range::Beta)?;
                line.push_str(&format!(
                    "; gap {}, STR {gs}, beta {gb} -> gap (parents in gap cells)",
                    kernel_words(&gk)
                ));
                Some(self.species(block, sp, gk, gs, gb, min)?)
            } else {
                line.push_str("; no gap parameters -> gap None");
                None
            };
            self.mapping.push(line);
            self.drafts[sp].spatial = Some(Spatial {
                canopy,
                gap: gap_species,
                masting: None,
                who: who.clone(),
            });
        }
        if gap {
            self.max_gap_density(b, block)?;
        }
        Ok(())
    }

    /// `di_maxGapDensity` of a `GapDisperse` block (required there, as in SORTIE-ND); two
    /// blocks must agree, since geofield has one gap rule.
    fn max_gap_density(&mut self, b: &Behavior, block: Node) -> Result<(), InputError> {
        let c = self.ctx;
        let field = "element <di_maxGapDensity>";
        let node = first(block, "di_maxGapDensity").ok_or_else(|| {
            c.err(
                block,
                field,
                format!(
                    "missing: {} needs the largest adult count of a gap cell",
                    b.who()
                ),
            )
        })?;
        let v = c.integer(node, field)?;
        let v = u32::try_from(v)
            .map_err(|_| c.err(node, field, format!("{v} must be a whole number >= 0")))?;
        if let Some((old, by)) = &self.max_gap_density
            && *old != v
        {
            return Err(c.err(
                node,
                field,
                format!("{v} differs from {old} of {by}; geofield has one gap rule"),
            ));
        }
        self.mapping.push(format!(
            "{}: di_maxGapDensity {v} -> max_gap_density (a cell of <= {v} adults is a gap)",
            b.who()
        ));
        self.max_gap_density = Some((v, b.who()));
        Ok(())
    }

    /// `NonSpatialDisperse`: seeds per m² and year = intercept + slope × basal area (m²/ha).
    pub(super) fn rain(&mut self, b: &Behavior<'a, 'i>) -> Result<(), InputError> {
        let c = self.ctx;
        let who = b.who();
        let species = b.species();
        if species.is_empty() {
            return Ok(());
        }
        let block = b.block(c)?;
        for sp in species {
            if let Some((_, _, by)) = &self.drafts[sp].rain {
                return Err(c.err(
                    b.node,
                    format!("element <behavior> \"{}\" species {}", b.name, c.name(sp)),
                    format!("the species already has seed rain from {by}; geofield models one"),
                ));
            }
            let slope = c.need(block, "di_nonSpatialSlopeOfLambda", sp, &who, Range::Any)?;
            let intercept = c.need(
                block,
                "di_nonSpatialInterceptOfLambda",
                sp,
                &who,
                Range::Any,
            )?;
            let min = c.need(
                block,
                "di_minDbhForReproduction",
                sp,
                &who,
                Range::NonNegative,
            )?;
            self.mapping.push(format!(
                "{who}, species {}: seeds per m2 and year = {intercept} + {slope} x basal area (m2/ha) of trees >= {min} cm -> rain",
                c.name(sp)
            ));
            self.drafts[sp].rain = Some((Rain { intercept, slope }, min, who.clone()));
        }
        Ok(())
    }

    /// `di_seedDistributionMethod` (0 when absent, as in SORTIE-ND) with its per-species
    /// parameter, for every species some dispersal behaviour applies to.
    pub(super) fn seed_distribution(&mut self) -> Result<(), InputError> {
        let c = self.ctx;
        let root = c.doc.root_element();
        let method = match first(root, "di_seedDistributionMethod") {
            Some(n) => {
                let field = "element <di_seedDistributionMethod>";
                let v = c.integer(n, field)?;
                if !(0..=4).contains(&v) {
                    return Err(c.err(
                        n,
                        field,
                        format!("unknown method {v}: expected 0 (deterministic), 1 (Poisson), 2 (lognormal), 3 (normal) or 4 (negative binomial)"),
                    ));
                }
                v
            }
            None => 0,
        };
        let who = match method {
            0 => "di_seedDistributionMethod 0 (deterministic)",
            1 => "di_seedDistributionMethod 1 (Poisson)",
            2 => "di_seedDistributionMethod 2 (lognormal)",
            3 => "di_seedDistributionMethod 3 (normal)",
            _ => "di_seedDistributionMethod 4 (negative binomial)",
        };
        let mut words = Vec::new();
        for sp in 0..c.species.len() {
            if !self.drafts[sp].disperses {
                continue;
            }
            let d = match method {
                1 => SeedDistribution::Poisson,
                2 => SeedDistribution::Lognormal {
                    sigma: c.need(root, "di_standardDeviation", sp, who, Range::NonNegative)?,
                },
                3 => SeedDistribution::Normal {
                    sd: c.need(root, "di_standardDeviation", sp, who, Range::NonNegative)?,
                },
                4 => SeedDistribution::NegativeBinomial {
                    clumping: c.need(root, "di_clumpingParameter", sp, who, Range::Positive)?,
                },
                _ => SeedDistribution::Deterministic,
            };
            words.push(format!("{} {d:?}", c.name(sp)));
            self.drafts[sp].seed_distribution = d;
        }
        if !words.is_empty() {
            let mut line = format!("seed distribution: {who} -> {}", words.join(", "));
            match method {
                0 => line.push_str(
                    " (SORTIE-ND keeps fractional seeds; geofield rounds at random, keeping the mean)",
                ),
                2 => line.push_str(
                    " (SORTIE-ND draws exp(lambda + sigma Z), whose mean is not lambda; geofield keeps the mean lambda with log-sd sigma)",
                ),
                _ => {}
            }
            self.mapping.push(line);
        }
        Ok(())
    }
}
