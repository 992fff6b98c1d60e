//! SORTIE-ND parameter files (XML) read into the forest model (feature `io`).
//!
//! SORTIE-ND (Canham, Murphy et al.; <https://www.sortie-nd.org>) keeps a run in one XML file:
//! `<plot>`, `<trees>` (species, per-species size limits, an optional tree map), grids, the
//! `<behaviorList>` and one parameter block per behaviour, named after the behaviour and its
//! list position (`<GapDisperse2>`). [`read_sortie`] reads the parts geofield models and says
//! in [`SortieRun::mapping`] how each maps onto ours; every other behaviour is listed in
//! [`SortieRun::unsupported`] and refused unless the caller ignores them.
//!
//! | SORTIE-ND | geofield |
//! |---|---|
//! | `plot_lenX`, `plot_lenY` (m) | [`SortieRun::plot_len_x_m`], [`SortieRun::plot_len_y_m`]; the plot is a torus |
//! | `timesteps` × `yearsPerTimestep`; `randomSeed` (0: none; ±n seed alike) | [`SortieRun::years`]; [`SortieRun::seed`] = \|n\| |
//! | grid "Dispersed Seeds" `ma_lengthXCells` (default 8 m) | [`ForestParams::gap_cell_m`] |
//! | `tr_speciesList` | species, in order |
//! | `tr_minAdultDBH` | `adult_dbh_cm` |
//! | `tr_treemap` (X, Y, DBH; seedlings have no DBH) | [`SortieRun::stand`]; seedlings at our `seedling_dbh_cm` |
//! | `NonGapDisperse`: `di_{weibull,lognormal}Canopy{STR,Beta}`, `di_weibullCanopy{Dispersal,Theta}` or `di_lognormalCanopy{X0,Xb}`, `di_canopyFunction` (0 Weibull, 1 lognormal), `di_minDbhForReproduction` | `canopy`: [`Kernel::Weibull`] `{ d, theta }` or [`Kernel::Lognormal`] `{ x0, xb }`, `str_`, `beta`, [`Eta::Analytic`], `min_dbh_cm`; `gap = None` |
//! | `GapDisperse`: the same canopy values, and `di_{weibull,lognormal}Gap…`, `di_gapFunction`, `di_maxGapDensity` | `canopy`, `gap = Some(..)`, [`ForestParams::max_gap_density`] |
//! | `MastingSpatialDisperse`: `di_mastCDFA`, `di_mastCDFB`, `di_mastGroup`, `di_{spatial,masting}{STR,STRStdDev,Beta}`, `di_mastSTRPDF` (0, 2 lognormal, 3 normal), `di_{spatial,mast}PropParticipating`, `di_mastDrawPerSpecies`, the canopy kernel | [`Masting`]; `canopy` with the non-mast STR and β |
//! | `NonSpatialDisperse`: `di_nonSpatial{Intercept,Slope}OfLambda` | [`Rain`] |
//! | `GeneralDisperse/di_seedDistributionMethod` (0–4), `di_standardDeviation`, `di_clumpingParameter` | [`SeedDistribution`] |
//! | `Establishment` | `establishment` = 1 for its species, 0 for the others |
//! | `StochasticMortality`: `mo_stochasticMortRate` | `mortality[stage]` = { annual: rate, per_neighbour: 0 } for its types |
//! | `ConstRadialGrowth`: `gr_adultConstRadialInc` (mm/yr) | `growth[stage]` = [`Growth::ConstantRadial`] for its types |
//!
//! **STR.** SORTIE-ND's spatial disperse gives a tree of diameter DBH (≥ the minimum)
//! STR × (DBH/30)^β × `yearsPerTimestep` seeds per timestep (`clSpatialDispersal`: fecundity
//! STR/30^β times DBH^β, randomly rounded), each placed by the normalised kernel, so STR is the
//! total seeds per year of a 30 cm tree. Ours are `weight × η` with weight = STR/η · (DBH/30)^β,
//! so [`Eta::Analytic`] (η = ∫ 2πr K(r) dr) gives the same STR × (DBH/30)^β seeds per year.
//! geofield runs yearly: annual values are used as they are, and SORTIE-ND's per-timestep
//! multiplications do not apply.
//!
//! Demography the file does not give (growth and mortality of stages no mapped behaviour covers,
//! the seedling → sapling DBH, the new seedlings' DBH, and establishment when the file has no
//! `Establishment`) keeps [`ForestSpecies::with_defaults`]; the mapping lists what was kept.
//!
//! Errors name the file, the line of the element, the element and the species
//! ([`InputError::Field`]); a file that is not a SORTIE-ND parameter file is
//! [`InputError::Invalid`].

use std::path::Path;

use roxmltree::{Document, ParsingOptions};

use super::fecundity::Masting;
use super::params::{ForestParams, Growth, Mortality};
use super::rain::Rain;
use super::seed_counts::SeedDistribution;
use crate::dispersal::{Species, Stand};
use crate::input_error::{InputError, quote};
use behaviors::Kind;
use xml::{Ctx, Range};

mod assemble;
mod behaviors;
mod demography;
mod dispersal;
mod masting;
mod plot;
mod stand;
#[cfg(test)]
mod tests;
mod xml;

/// A SORTIE-ND run read into geofield's forest model.
#[derive(Debug, Clone, PartialEq)]
pub struct SortieRun {
    /// The species and run-wide parameters: `torus` is true (SORTIE-ND plots are tori),
    /// `gap_cell_m` the "Dispersed Seeds" grid's `ma_lengthXCells` (8 m when absent),
    /// `max_gap_density` `di_maxGapDensity` (0 without `GapDisperse`).
    pub params: ForestParams,
    /// The initial trees (`tr_treemap`), species indices into `params.species`; empty when the
    /// file has no tree map.
    pub stand: Stand,
    /// `plot_lenX` in m.
    pub plot_len_x_m: f64,
    /// `plot_lenY` in m.
    pub plot_len_y_m: f64,
    /// `timesteps` × `yearsPerTimestep`, when the file gives `timesteps`.
    pub years: Option<u32>,
    /// `randomSeed`: None when absent or 0 (SORTIE-ND then seeds from the clock); SORTIE-ND
    /// seeds n and −n alike, so this is |n|.
    pub seed: Option<u64>,
    /// What was read and how it maps onto geofield, one line per species and behaviour.
    pub mapping: Vec<String>,
    /// Behaviours (and parts of behaviours) of the file that geofield does not model.
    pub unsupported: Vec<String>,
}

/// Read a SORTIE-ND parameter file; see the module docs. With `ignore_unsupported` false, a
/// file using behaviours geofield does not model is refused.
///
/// ```no_run
/// let run = geofield::forest::sortie::read_sortie(std::path::Path::new("run.xml"), true)?;
/// for line in &run.mapping {
///     println!("{line}");
/// }
/// # Ok::<(), geofield::input_error::InputError>(())
/// ```
pub fn read_sortie(path: &Path, ignore_unsupported: bool) -> Result<SortieRun, InputError> {
    let text = std::fs::read_to_string(path).map_err(|source| geofield_io::IoError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse_sortie(&text, path, ignore_unsupported)
}

/// Parse the text of a SORTIE-ND parameter file read from `path` (named in errors); see
/// [`read_sortie`].
///
/// ```
/// let xml = r#"<paramFile><plot><plot_lenX>50</plot_lenX><plot_lenY>40</plot_lenY></plot>
///   <trees><tr_speciesList><tr_species speciesName="Fir"/></tr_speciesList>
///   <tr_minAdultDBH><tr_madVal species="Fir">10</tr_madVal></tr_minAdultDBH></trees>
///   </paramFile>"#;
/// let run = geofield::forest::sortie::parse_sortie(xml, std::path::Path::new("a.xml"), false)?;
/// assert_eq!(run.params.species[0].adult_dbh_cm, 10.0);
/// # Ok::<(), geofield::input_error::InputError>(())
/// ```
pub fn parse_sortie(
    text: &str,
    path: &Path,
    ignore_unsupported: bool,
) -> Result<SortieRun, InputError> {
    let options = ParsingOptions {
        allow_dtd: true,
        ..ParsingOptions::default()
    };
    let doc = Document::parse_with_options(text, options).map_err(|e| InputError::Invalid {
        path: path.to_path_buf(),
        reason: format!("not a well-formed XML file (SORTIE-ND parameter files are XML): {e}"),
    })?;
    let root = doc.root_element();
    if root.tag_name().name() != "paramFile" {
        return Err(InputError::Invalid {
            path: path.to_path_buf(),
            reason: format!(
                "not a SORTIE-ND parameter file: its root element is <{}>, expected <paramFile>",
                root.tag_name().name()
            ),
        });
    }
    let species = plot::species_list(&doc, path)?;
    let ctx = Ctx {
        path,
        doc: &doc,
        species,
    };
    ctx.check_species_names()?;
    let mut r = Reader::new(&ctx)?;
    r.plot()?;
    r.grid()?;
    for b in behaviors::read(&ctx)? {
        r.mapping.push(format!(
            "behavior {} version {} at listPosition {}: {}",
            quote(&b.name),
            if b.version.is_empty() {
                "?"
            } else {
                b.version.as_str()
            },
            b.position,
            if b.kind == Kind::Unsupported {
                "not modelled by geofield"
            } else {
                "read"
            }
        ));
        match b.kind {
            Kind::Spatial { gap } => r.spatial(&b, gap)?,
            Kind::Masting => r.masting(&b)?,
            Kind::Rain => r.rain(&b)?,
            Kind::Establishment => r.establishment(&b),
            Kind::Mortality => r.mortality(&b)?,
            Kind::Growth => r.growth(&b)?,
            Kind::Unsupported => r.unsupported(b.name.clone()),
        }
        if b.kind.disperses() {
            for sp in b.species() {
                r.drafts[sp].disperses = true;
            }
        }
    }
    r.seed_distribution()?;
    let params = r.assemble()?;
    let seedling_dbh: Vec<f64> = params.species.iter().map(|s| s.seedling_dbh_cm).collect();
    let (stand, stand_lines) = stand::read(&ctx, r.plot_len_m, &seedling_dbh)?;
    r.mapping.extend(stand_lines);
    if !r.unsupported.is_empty() && !ignore_unsupported {
        return Err(ctx.invalid(format!(
            "geofield does not model {} of this file's behaviours: {}. Pass --ignore-unsupported to run without them (the run then leaves out what they do in SORTIE-ND)",
            r.unsupported.len(),
            r.unsupported.join("; ")
        )));
    }
    Ok(SortieRun {
        params,
        stand,
        plot_len_x_m: r.plot_len_m[0],
        plot_len_y_m: r.plot_len_m[1],
        years: r.years,
        seed: r.seed,
        mapping: r.mapping,
        unsupported: r.unsupported,
    })
}

/// A species' spatial dispersal, as one behaviour gave it.
struct Spatial {
    canopy: Species,
    gap: Option<Species>,
    masting: Option<Masting>,
    who: String,
}

/// What the file gives for one species, before defaults fill the rest.
struct Draft {
    adult_dbh_cm: f64,
    spatial: Option<Spatial>,
    /// The rain, its behaviour's minimum DBH for reproduction, and the behaviour.
    rain: Option<(Rain, f64, String)>,
    establishment: Option<f64>,
    growth: [Option<(Growth, String)>; 3],
    mortality: [Option<(Mortality, String)>; 3],
    seed_distribution: SeedDistribution,
    /// Some dispersal behaviour applies to it.
    disperses: bool,
}

/// The reading state: the values found so far and the mapping lines.
struct Reader<'c, 'a, 'i> {
    ctx: &'c Ctx<'a, 'i>,
    drafts: Vec<Draft>,
    mapping: Vec<String>,
    unsupported: Vec<String>,
    plot_len_m: [f64; 2],
    years_per_timestep: u32,
    years: Option<u32>,
    seed: Option<u64>,
    gap_cell_m: f64,
    /// `di_maxGapDensity` and the behaviour that gave it.
    max_gap_density: Option<(u32, String)>,
    /// SORTIE-ND's mast group numbers, in order of first use (our group = the index).
    mast_groups: Vec<i64>,
    /// The file has an `Establishment` behaviour.
    establishment_given: bool,
}

impl<'c, 'a, 'i> Reader<'c, 'a, 'i> {
    /// Start with each species' `tr_minAdultDBH` (required, as SORTIE-ND requires it).
    fn new(ctx: &'c Ctx<'a, 'i>) -> Result<Self, InputError> {
        let root = ctx.doc.root_element();
        let mut drafts = Vec::new();
        let mut adults = Vec::new();
        for sp in 0..ctx.species.len() {
            let adult = ctx.need(
                root,
                "tr_minAdultDBH",
                sp,
                "the tree population",
                Range::Positive,
            )?;
            adults.push(format!("{} {adult} cm", ctx.name(sp)));
            drafts.push(Draft {
                adult_dbh_cm: adult,
                spatial: None,
                rain: None,
                establishment: None,
                growth: [None, None, None],
                mortality: [None, None, None],
                seed_distribution: SeedDistribution::Deterministic,
                disperses: false,
            });
        }
        let mut mapping = vec![format!(
            "species: {} (tr_speciesList, in this order)",
            ctx.species
                .iter()
                .map(|s| quote(s))
                .collect::<Vec<_>>()
                .join(", ")
        )];
        mapping.push(format!(
            "tr_minAdultDBH -> adult_dbh_cm: {}",
            adults.join(", ")
        ));
        mapping.push(
            "seedling -> sapling boundary: SORTIE-ND's is a height (tr_maxSeedlingHeight), geofield's a DBH: kept geofield's 1 cm (or the adult DBH if smaller)".into(),
        );
        Ok(Reader {
            ctx,
            drafts,
            mapping,
            unsupported: Vec::new(),
            plot_len_m: [0.0; 2],
            years_per_timestep: 1,
            years: None,
            seed: None,
            gap_cell_m: plot::DEFAULT_CELL_M,
            max_gap_density: None,
            mast_groups: Vec::new(),
            establishment_given: false,
        })
    }

    /// Note a behaviour (or a part of one) geofield does not model.
    fn unsupported(&mut self, what: String) {
        if !self.unsupported.contains(&what) {
            self.unsupported.push(what);
        }
    }
}

/// SORTIE-ND's dispersal function codes (`di_canopyFunction`, `di_gapFunction`).
const FUNCTIONS: [(i64, &str); 2] = [(0, "Weibull"), (1, "lognormal")];
