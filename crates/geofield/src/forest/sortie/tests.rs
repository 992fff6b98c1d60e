//! Tests on small parameter files of our own, written in SORTIE-ND's format.

use std::path::Path;

use super::assemble::NO_DISPERSAL;
use super::{SortieRun, parse_sortie, read_sortie};
use crate::dispersal::{Eta, Kernel, Species};
use crate::forest::fecundity::{EventFecundity, Masting, StrLaw};
use crate::forest::params::{ForestSpecies, Growth, Mortality};
use crate::forest::rain::Rain;
use crate::forest::seed_counts::SeedDistribution;
use crate::input_error::InputError;

/// Two species; GapDisperse (Weibull canopy, lognormal gap) for Fir, NonGapDisperse
/// (lognormal) and NonSpatialDisperse for Aspen, a negative binomial seed distribution,
/// Establishment for Fir only, StochasticMortality, ConstRadialGrowth, a tree map with a
/// snag, and one behaviour geofield does not model (Substrate).
const MAIN: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="no" ?>
<paramFile fileCode="07010101">
<plot>
<timesteps>6</timesteps>
<yearsPerTimestep>2</yearsPerTimestep>
<randomSeed>-42</randomSeed>
<plot_lenX>120.0</plot_lenX>
<plot_lenY>80.0</plot_lenY>
<plot_latitude>54.8</plot_latitude>
</plot>
<trees>
<tr_speciesList>
<tr_species speciesName="Fir"/>
<tr_species speciesName="Aspen"/>
</tr_speciesList>
<tr_seedDiam10Cm>0.1</tr_seedDiam10Cm>
<tr_minAdultDBH>
<tr_madVal species="Fir">12.5</tr_madVal>
<tr_madVal species="Aspen">8</tr_madVal>
</tr_minAdultDBH>
<tr_maxSeedlingHeight>
<tr_mshVal species="Fir">1.35</tr_mshVal>
<tr_mshVal species="Aspen">1.35</tr_mshVal>
</tr_maxSeedlingHeight>
<tr_treemap>
<tm_treeSettings sp="Fir" tp="3">
<tm_floatCodes><tm_floatCode label="X">0</tm_floatCode><tm_floatCode label="Y">1</tm_floatCode><tm_floatCode label="DBH">2</tm_floatCode></tm_floatCodes>
</tm_treeSettings>
<tm_treeSettings sp="Fir" tp="5">
<tm_floatCodes><tm_floatCode label="X">0</tm_floatCode><tm_floatCode label="Y">1</tm_floatCode><tm_floatCode label="DBH">2</tm_floatCode></tm_floatCodes>
</tm_treeSettings>
<tm_treeSettings sp="Aspen" tp="2">
<tm_floatCodes><tm_floatCode label="X">0</tm_floatCode><tm_floatCode label="Y">1</tm_floatCode><tm_floatCode label="DBH">2</tm_floatCode><tm_floatCode label="Height">3</tm_floatCode></tm_floatCodes>
</tm_treeSettings>
<tm_treeSettings sp="Aspen" tp="1">
<tm_floatCodes><tm_floatCode label="X">0</tm_floatCode><tm_floatCode label="Y">1</tm_floatCode><tm_floatCode label="Diam10">2</tm_floatCode></tm_floatCodes>
</tm_treeSettings>
<tree sp="0" tp="3"><fl c="0">10.5</fl><fl c="1">20.25</fl><fl c="2">31.5</fl></tree>
<tree sp="0" tp="3"><fl c="0">100</fl><fl c="1">70</fl><fl c="2">45</fl></tree>
<tree sp="1" tp="2"><fl c="0">55</fl><fl c="1">5.5</fl><fl c="2">4.2</fl><fl c="3">5.1</fl></tree>
<tree sp="1" tp="1"><fl c="0">60</fl><fl c="1">40</fl><fl c="2">0.6</fl></tree>
<tree sp="0" tp="5"><fl c="0">1</fl><fl c="1">2</fl><fl c="2">20</fl></tree>
</tr_treemap>
</trees>
<grid gridName="Dispersed Seeds">
<ma_lengthXCells>10</ma_lengthXCells>
<ma_lengthYCells>10</ma_lengthYCells>
</grid>
<behaviorList>
<behavior><behaviorName>GapDisperse</behaviorName><version>1</version><listPosition>1</listPosition>
<applyTo species="Fir" type="Adult"/></behavior>
<behavior><behaviorName>NonGapDisperse</behaviorName><version>1</version><listPosition>2</listPosition>
<applyTo species="Aspen" type="Adult"/></behavior>
<behavior><behaviorName>NonSpatialDisperse</behaviorName><version>1</version><listPosition>3</listPosition>
<applyTo species="Aspen" type="Adult"/></behavior>
<behavior><behaviorName>Establishment</behaviorName><version>1</version><listPosition>4</listPosition>
<applyTo species="Fir" type="Seed"/></behavior>
<behavior><behaviorName>StochasticMortality</behaviorName><version>1</version><listPosition>5</listPosition>
<applyTo species="Fir" type="Seedling"/><applyTo species="Fir" type="Adult"/><applyTo species="Fir" type="Snag"/></behavior>
<behavior><behaviorName>ConstRadialGrowth</behaviorName><version>1</version><listPosition>6</listPosition>
<applyTo species="Aspen" type="Sapling"/></behavior>
<behavior><behaviorName>Substrate</behaviorName><version>2.1</version><listPosition>7</listPosition>
<applyTo species="Fir" type="Seedling"/></behavior>
</behaviorList>
<GeneralDisperse>
<di_seedDistributionMethod>4</di_seedDistributionMethod>
<di_clumpingParameter>
<di_cpVal species="Fir">0.8</di_cpVal>
<di_cpVal species="Aspen">2.5</di_cpVal>
</di_clumpingParameter>
</GeneralDisperse>
<GapDisperse1>
<di_minDbhForReproduction><di_mdfrVal species="Fir">15</di_mdfrVal></di_minDbhForReproduction>
<di_canopyFunction><di_cfVal species="Fir">0</di_cfVal></di_canopyFunction>
<di_weibullCanopySTR><di_wcsVal species="Fir">50.5</di_wcsVal></di_weibullCanopySTR>
<di_weibullCanopyBeta><di_wcbVal species="Fir">2</di_wcbVal></di_weibullCanopyBeta>
<di_weibullCanopyDispersal><di_wcdVal species="Fir">1.2E-4</di_wcdVal></di_weibullCanopyDispersal>
<di_weibullCanopyTheta><di_wctVal species="Fir">3</di_wctVal></di_weibullCanopyTheta>
<di_gapFunction><di_gfVal species="Fir">1</di_gfVal></di_gapFunction>
<di_lognormalGapSTR><di_lgsVal species="Fir">30</di_lgsVal></di_lognormalGapSTR>
<di_lognormalGapBeta><di_lgbVal species="Fir">1.5</di_lgbVal></di_lognormalGapBeta>
<di_lognormalGapX0><di_lgx0Val species="Fir">8</di_lgx0Val></di_lognormalGapX0>
<di_lognormalGapXb><di_lgxbVal species="Fir">0.5</di_lgxbVal></di_lognormalGapXb>
<di_maxGapDensity>2</di_maxGapDensity>
</GapDisperse1>
<NonGapDisperse2>
<di_minDbhForReproduction><di_mdfrVal species="Aspen">10</di_mdfrVal></di_minDbhForReproduction>
<di_canopyFunction><di_cfVal species="Aspen">1</di_cfVal></di_canopyFunction>
<di_lognormalCanopySTR><di_lcsVal species="Aspen">80</di_lcsVal></di_lognormalCanopySTR>
<di_lognormalCanopyBeta><di_lcbVal species="Aspen">2.1</di_lcbVal></di_lognormalCanopyBeta>
<di_lognormalCanopyX0><di_lcx0Val species="Aspen">12</di_lcx0Val></di_lognormalCanopyX0>
<di_lognormalCanopyXb><di_lcxbVal species="Aspen">0.6</di_lcxbVal></di_lognormalCanopyXb>
</NonGapDisperse2>
<NonSpatialDisperse3>
<di_minDbhForReproduction><di_mdfrVal species="Aspen">10</di_mdfrVal></di_minDbhForReproduction>
<di_nonSpatialSlopeOfLambda><di_nssolVal species="Aspen">0.02</di_nssolVal></di_nonSpatialSlopeOfLambda>
<di_nonSpatialInterceptOfLambda><di_nsiolVal species="Aspen">0.3</di_nsiolVal></di_nonSpatialInterceptOfLambda>
</NonSpatialDisperse3>
<StochasticMortality5>
<mo_stochasticMortRate><mo_smrVal species="Fir">0.15</mo_smrVal></mo_stochasticMortRate>
</StochasticMortality5>
<ConstRadialGrowth6>
<gr_adultConstRadialInc><gr_acriVal species="Aspen">1.5</gr_acriVal></gr_adultConstRadialInc>
</ConstRadialGrowth6>
</paramFile>
"#;

/// Two species under MastingSpatialDisperse: Pine deterministic STR drawn per species,
/// Spruce lognormal STR drawn per tree; normal seed distribution; no tree map.
const MASTING: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<paramFile>
<plot><timesteps>3</timesteps><yearsPerTimestep>1</yearsPerTimestep><randomSeed>0</randomSeed>
<plot_lenX>50</plot_lenX><plot_lenY>60</plot_lenY></plot>
<trees>
<tr_speciesList><tr_species speciesName="Pine"/><tr_species speciesName="Spruce"/></tr_speciesList>
<tr_minAdultDBH><tr_madVal species="Pine">10</tr_madVal><tr_madVal species="Spruce">9</tr_madVal></tr_minAdultDBH>
</trees>
<behaviorList>
<behavior><behaviorName>MastingSpatialDisperse</behaviorName><version>1</version><listPosition>1</listPosition>
<applyTo species="Pine" type="Adult"/><applyTo species="Spruce" type="Adult"/><applyTo species="Spruce" type="Sapling"/></behavior>
</behaviorList>
<GeneralDisperse>
<di_seedDistributionMethod>3</di_seedDistributionMethod>
<di_standardDeviation><di_sdVal species="Pine">2</di_sdVal><di_sdVal species="Spruce">1.5</di_sdVal></di_standardDeviation>
</GeneralDisperse>
<MastingSpatialDisperse1>
<di_minDbhForReproduction><di_mdfrVal species="Pine">12</di_mdfrVal><di_mdfrVal species="Spruce">11</di_mdfrVal></di_minDbhForReproduction>
<di_mastCDFA><di_mcdfaVal species="Pine">4</di_mcdfaVal><di_mcdfaVal species="Spruce">6</di_mcdfaVal></di_mastCDFA>
<di_mastCDFB><di_mcdfbVal species="Pine">-3</di_mcdfbVal><di_mcdfbVal species="Spruce">-2.5</di_mcdfbVal></di_mastCDFB>
<di_mastSTRPDF><di_mstrpdfVal species="Pine">0</di_mstrpdfVal><di_mstrpdfVal species="Spruce">2</di_mstrpdfVal></di_mastSTRPDF>
<di_spatialSTR><di_sstrVal species="Pine">20</di_sstrVal><di_sstrVal species="Spruce">3</di_sstrVal></di_spatialSTR>
<di_spatialSTRStdDev><di_sstrsdVal species="Pine">0</di_sstrsdVal><di_sstrsdVal species="Spruce">0.5</di_sstrsdVal></di_spatialSTRStdDev>
<di_mastingSTR><di_mstrVal species="Pine">400</di_mstrVal><di_mstrVal species="Spruce">5</di_mstrVal></di_mastingSTR>
<di_mastingSTRStdDev><di_mstrsdVal species="Pine">0</di_mstrsdVal><di_mstrsdVal species="Spruce">0.4</di_mstrsdVal></di_mastingSTRStdDev>
<di_spatialBeta><di_sbVal species="Pine">2</di_sbVal><di_sbVal species="Spruce">1.8</di_sbVal></di_spatialBeta>
<di_mastingBeta><di_mbVal species="Pine">2.5</di_mbVal><di_mbVal species="Spruce">2.2</di_mbVal></di_mastingBeta>
<di_canopyFunction><di_cfVal species="Pine">0</di_cfVal><di_cfVal species="Spruce">1</di_cfVal></di_canopyFunction>
<di_weibullCanopyDispersal><di_wcdVal species="Pine">1e-4</di_wcdVal></di_weibullCanopyDispersal>
<di_weibullCanopyTheta><di_wctVal species="Pine">3</di_wctVal></di_weibullCanopyTheta>
<di_weibullMastingDispersal><di_wmdVal species="Pine">1e-4</di_wmdVal></di_weibullMastingDispersal>
<di_weibullMastingTheta><di_wmtVal species="Pine">3</di_wmtVal></di_weibullMastingTheta>
<di_lognormalCanopyX0><di_lcx0Val species="Spruce">10</di_lcx0Val></di_lognormalCanopyX0>
<di_lognormalCanopyXb><di_lcxbVal species="Spruce">0.7</di_lcxbVal></di_lognormalCanopyXb>
<di_lognormalMastingX0><di_lmx0Val species="Spruce">10</di_lmx0Val></di_lognormalMastingX0>
<di_lognormalMastingXb><di_lmxbVal species="Spruce">0.7</di_lmxbVal></di_lognormalMastingXb>
<di_mastGroup><di_mgVal species="Pine">7</di_mgVal><di_mgVal species="Spruce">3</di_mgVal></di_mastGroup>
<di_mastDrawPerSpecies><di_mdpsVal species="Pine">1</di_mdpsVal><di_mdpsVal species="Spruce">0</di_mdpsVal></di_mastDrawPerSpecies>
<di_spatialPropParticipating><di_sppVal species="Pine">0.6</di_sppVal><di_sppVal species="Spruce">1</di_sppVal></di_spatialPropParticipating>
<di_mastPropParticipating><di_mppVal species="Pine">1</di_mppVal><di_mppVal species="Spruce">0.9</di_mppVal></di_mastPropParticipating>
</MastingSpatialDisperse1>
</paramFile>
"#;

fn path() -> &'static Path {
    Path::new("run.xml")
}

/// The 1-based line of the first occurrence of `needle` in `text`.
fn line_of(text: &str, needle: &str) -> u64 {
    let at = text.find(needle).unwrap();
    text[..at].matches('\n').count() as u64 + 1
}

/// `text` with `from` (which must occur) replaced by `to`.
fn edit(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "fixture lacks {from}");
    text.replacen(from, to, 1)
}

/// The fields of an [`InputError::Field`], or a panic naming the error.
fn field_error(e: InputError) -> (String, u64, String, String) {
    match e {
        InputError::Field {
            path,
            line,
            field,
            reason,
        } => (path.display().to_string(), line, field, reason),
        other => panic!("expected a field error, got {other}"),
    }
}

fn species(name: &str, kernel: Kernel, str_: f64, beta: f64, min_dbh_cm: f64) -> Species {
    Species {
        name: name.into(),
        kernel,
        str_,
        beta,
        eta: Eta::Analytic,
        min_dbh_cm,
        multires_threshold_m: None,
    }
}

#[test]
fn main_file_maps_every_value() {
    let run = parse_sortie(MAIN, path(), true).unwrap();
    // The documented defaults, for the stages and values the file does not give.
    let d = ForestSpecies::with_defaults(species("x", NO_DISPERSAL, 0.0, 0.0, 0.0));
    let fir = ForestSpecies {
        canopy: species(
            "Fir",
            Kernel::Weibull {
                d: 1.2e-4,
                theta: 3.0,
            },
            50.5,
            2.0,
            15.0,
        ),
        gap: Some(species(
            "Fir",
            Kernel::Lognormal { x0: 8.0, xb: 0.5 },
            30.0,
            1.5,
            15.0,
        )),
        masting: None,
        seed_distribution: SeedDistribution::NegativeBinomial { clumping: 0.8 },
        rain: None,
        establishment: 1.0,
        seedling_dbh_cm: 0.1,
        sapling_dbh_cm: 1.0,
        adult_dbh_cm: 12.5,
        growth: d.growth,
        mortality: [
            Mortality {
                annual: 0.15,
                per_neighbour: 0.0,
            },
            d.mortality[1],
            Mortality {
                annual: 0.15,
                per_neighbour: 0.0,
            },
        ],
    };
    let aspen = ForestSpecies {
        canopy: species(
            "Aspen",
            Kernel::Lognormal { x0: 12.0, xb: 0.6 },
            80.0,
            2.1,
            10.0,
        ),
        gap: None,
        masting: None,
        seed_distribution: SeedDistribution::NegativeBinomial { clumping: 2.5 },
        rain: Some(Rain {
            intercept: 0.3,
            slope: 0.02,
        }),
        // The file has Establishment, for Fir only: SORTIE-ND germinates no Aspen seeds.
        establishment: 0.0,
        seedling_dbh_cm: 0.1,
        sapling_dbh_cm: 1.0,
        adult_dbh_cm: 8.0,
        growth: [
            d.growth[0],
            Growth::ConstantRadial {
                radial_mm_per_yr: 1.5,
            },
            d.growth[2],
        ],
        mortality: d.mortality,
    };
    assert_eq!(run.params.species, vec![fir, aspen]);
    assert_eq!(run.params.max_gap_density, 2);
    assert_eq!(run.params.gap_cell_m, 10.0);
    assert!(run.params.torus);
    assert_eq!((run.plot_len_x_m, run.plot_len_y_m), (120.0, 80.0));
    // 6 timesteps of 2 years; SORTIE-ND seeds with -42 as with 42.
    assert_eq!(run.years, Some(12));
    assert_eq!(run.seed, Some(42));
    // Four living trees; the seedling gets the seedling DBH, its Diam10 (0.6) is not a DBH;
    // the sapling's Height is not used; the snag is skipped.
    assert_eq!(run.stand.x_m, vec![10.5, 100.0, 55.0, 60.0]);
    assert_eq!(run.stand.y_m, vec![20.25, 70.0, 5.5, 40.0]);
    assert_eq!(run.stand.dbh_cm, vec![31.5, 45.0, 4.2, 0.1]);
    assert_eq!(run.stand.species, vec![0, 0, 1, 1]);
    assert_eq!(run.unsupported, vec!["Substrate".to_string()]);
    let has = |words: &[&str]| {
        assert!(
            run.mapping
                .iter()
                .any(|l| words.iter().all(|w| l.contains(w))),
            "no mapping line with {words:?}:\n{}",
            run.mapping.join("\n")
        )
    };
    has(&["12 years", "yearly"]);
    has(&[
        "GapDisperse (listPosition 1)",
        "\"Fir\"",
        "Weibull (D 0.00012, theta 3)",
        "STR 50.5",
        "gap lognormal (X0 8 m, Xb 0.5)",
    ]);
    has(&["NonGapDisperse (listPosition 2)", "\"Aspen\"", "gap None"]);
    has(&["NonSpatialDisperse (listPosition 3)", "0.3 + 0.02"]);
    has(&["NegativeBinomial"]);
    has(&["\"Aspen\"", "no Establishment", "establishment 0"]);
    has(&["StochasticMortality (listPosition 5)", "type Snag ignored"]);
    has(&["\"Fir\"", "defaults kept", "sapling mortality 0.05"]);
    has(&["\"Substrate\"", "version 2.1", "not modelled"]);
    has(&[
        "tree map: 4 trees",
        "1 seedlings",
        "1 saplings",
        "2 adults",
        "1 dead or seed entries skipped",
    ]);
    has(&["tr_maxSeedlingHeight", "1 cm"]);
}

#[test]
fn unsupported_behaviours_are_refused_without_the_flag() {
    let e = parse_sortie(MAIN, path(), false).unwrap_err();
    let InputError::Invalid { path: p, reason } = &e else {
        panic!("expected a whole-file error, got {e}");
    };
    assert_eq!(p, path());
    assert!(
        reason.contains("Substrate") && reason.contains("--ignore-unsupported"),
        "{reason}"
    );
    assert!(e.to_string().starts_with("run.xml: "), "{e}");
    // Without the unsupported behaviour the file is read either way.
    let clean = edit(
        MAIN,
        "<behavior><behaviorName>Substrate</behaviorName><version>2.1</version><listPosition>7</listPosition>\n<applyTo species=\"Fir\" type=\"Seedling\"/></behavior>\n",
        "",
    );
    let run = parse_sortie(&clean, path(), false).unwrap();
    assert!(run.unsupported.is_empty());
    assert_eq!(
        run,
        SortieRun {
            unsupported: Vec::new(),
            mapping: run.mapping.clone(),
            ..parse_sortie(MAIN, path(), true).unwrap()
        }
    );
}

#[test]
fn masting_maps_onto_masting() {
    let run = parse_sortie(MASTING, path(), false).unwrap();
    assert!(run.unsupported.is_empty(), "{:?}", run.unsupported);
    let [pine, spruce] = &run.params.species[..] else {
        panic!("two species expected");
    };
    assert_eq!(
        pine.masting,
        Some(Masting {
            a: 4.0,
            b: -3.0,
            group: 0,
            mast: EventFecundity {
                str_mean: 400.0,
                str_sd: 0.0,
                law: StrLaw::Deterministic,
                beta: 2.5,
                participating: 1.0,
            },
            non_mast: EventFecundity {
                str_mean: 20.0,
                str_sd: 0.0,
                law: StrLaw::Deterministic,
                beta: 2.0,
                participating: 0.6,
            },
            str_per_species: true,
        })
    );
    assert_eq!(
        pine.canopy,
        species(
            "Pine",
            Kernel::Weibull {
                d: 1e-4,
                theta: 3.0
            },
            20.0,
            2.0,
            12.0
        )
    );
    assert_eq!(pine.seed_distribution, SeedDistribution::Normal { sd: 2.0 });
    // SORTIE-ND's lognormal STR is exp(μ + σZ) with the file's numbers as μ and σ; ours is
    // given by its mean e^(μ+σ²/2) and sd mean·√(e^(σ²)−1): non-mast μ 3, σ 0.5 → 22.7598950935…,
    // 12.1296664577…; mast μ 5, σ 0.4 → 160.774055928…, 66.9698479652….
    let m = spruce.masting.unwrap();
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b;
    assert!(close(m.non_mast.str_mean, 22.75989509352673), "{m:?}");
    assert!(close(m.non_mast.str_sd, 12.129666457739877), "{m:?}");
    assert!(close(m.mast.str_mean, 160.7740559286073), "{m:?}");
    assert!(close(m.mast.str_sd, 66.96984796525717), "{m:?}");
    assert_eq!(
        (m.mast.law, m.non_mast.law),
        (StrLaw::Lognormal, StrLaw::Lognormal)
    );
    assert_eq!(
        (m.a, m.b, m.group, m.str_per_species),
        (6.0, -2.5, 1, false)
    );
    assert_eq!((m.mast.beta, m.non_mast.beta), (2.2, 1.8));
    assert_eq!((m.mast.participating, m.non_mast.participating), (0.9, 1.0));
    assert_eq!(
        spruce.canopy.kernel,
        Kernel::Lognormal { x0: 10.0, xb: 0.7 }
    );
    assert_eq!(spruce.canopy.str_, m.non_mast.str_mean);
    assert_eq!((spruce.canopy.beta, spruce.canopy.min_dbh_cm), (1.8, 11.0));
    assert_eq!(
        spruce.seed_distribution,
        SeedDistribution::Normal { sd: 1.5 }
    );
    // No Establishment in the file: the default is kept; no gap behaviour, no tree map, no
    // grid, seed 0.
    assert_eq!(spruce.establishment, 0.02);
    assert_eq!(spruce.gap, None);
    assert_eq!(run.params.max_gap_density, 0);
    assert_eq!(run.params.gap_cell_m, 8.0);
    assert!(run.stand.is_empty());
    assert_eq!((run.years, run.seed), (Some(3), None));
    assert!(
        run.mapping
            .iter()
            .any(|l| l.contains("\"Spruce\"") && l.contains("saplings too")),
        "{:#?}",
        run.mapping
    );
    // A mast-year kernel unlike the non-mast one cannot be modelled.
    let other = edit(
        MASTING,
        "<di_wmdVal species=\"Pine\">1e-4<",
        "<di_wmdVal species=\"Pine\">2e-4<",
    );
    let e = parse_sortie(&other, path(), false).unwrap_err().to_string();
    assert!(
        e.contains("mast-year kernel") && e.contains("\"Pine\""),
        "{e}"
    );
    let run = parse_sortie(&other, path(), true).unwrap();
    assert_eq!(run.unsupported.len(), 1);
    assert_eq!(
        run.params.species[0].canopy.kernel,
        Kernel::Weibull {
            d: 1e-4,
            theta: 3.0
        }
    );
}

#[test]
fn a_missing_value_names_the_element_the_species_and_the_line() {
    // The species' value is missing from the element: the element's line.
    let text = edit(MAIN, "<di_wcdVal species=\"Fir\">1.2E-4</di_wcdVal>", "");
    let (p, line, field, reason) = field_error(parse_sortie(&text, path(), true).unwrap_err());
    assert_eq!(p, "run.xml");
    assert_eq!(line, line_of(&text, "<di_weibullCanopyDispersal>"));
    assert_eq!(field, "element <di_weibullCanopyDispersal> species \"Fir\"");
    assert!(
        reason.contains("missing") && reason.contains("GapDisperse (listPosition 1)"),
        "{reason}"
    );
    // The whole element is missing: the block's line.
    let text = edit(
        MAIN,
        "<di_weibullCanopyDispersal><di_wcdVal species=\"Fir\">1.2E-4</di_wcdVal></di_weibullCanopyDispersal>\n",
        "",
    );
    let (_, line, field, reason) = field_error(parse_sortie(&text, path(), true).unwrap_err());
    assert_eq!(line, line_of(&text, "<GapDisperse1>"));
    assert_eq!(field, "element <di_weibullCanopyDispersal> species \"Fir\"");
    assert!(reason.contains("<GapDisperse1> has none"), "{reason}");
    // A negative binomial needs each dispersing species' clumping.
    let text = edit(MAIN, "<di_cpVal species=\"Aspen\">2.5</di_cpVal>\n", "");
    let (_, line, field, _) = field_error(parse_sortie(&text, path(), true).unwrap_err());
    assert_eq!(line, line_of(&text, "<di_clumpingParameter>"));
    assert_eq!(field, "element <di_clumpingParameter> species \"Aspen\"");
    // A behaviour without its parameter block.
    let start = MAIN.find("<NonSpatialDisperse3>").unwrap();
    let end = MAIN.find("</NonSpatialDisperse3>\n").unwrap() + "</NonSpatialDisperse3>\n".len();
    let text = format!("{}{}", &MAIN[..start], &MAIN[end..]);
    let (_, line, field, _) = field_error(parse_sortie(&text, path(), true).unwrap_err());
    assert_eq!(line, line_of(&text, "<behaviorName>NonSpatialDisperse"));
    assert_eq!(field, "element <NonSpatialDisperse3>");
}

#[test]
fn a_malformed_number_is_quoted_with_its_line() {
    let text = edit(MAIN, ">1.2E-4<", ">1.2E-4x<");
    let e = parse_sortie(&text, path(), true).unwrap_err();
    let shown = e.to_string();
    let (_, line, field, reason) = field_error(e);
    assert_eq!(line, line_of(&text, "1.2E-4x"));
    assert_eq!(field, "element <di_weibullCanopyDispersal> species \"Fir\"");
    assert_eq!(reason, "not a number: \"1.2E-4x\"");
    assert_eq!(
        shown,
        format!(
            "run.xml:{line}: element <di_weibullCanopyDispersal> species \"Fir\": not a number: \"1.2E-4x\""
        )
    );
    // Out of range, a bad function code, a bad tree value.
    let text = edit(MAIN, ">0.15</mo_smrVal>", ">1.5</mo_smrVal>");
    let (_, line, _, reason) = field_error(parse_sortie(&text, path(), true).unwrap_err());
    assert_eq!(
        (line, reason.as_str()),
        (
            line_of(&text, ">1.5</mo_smrVal>"),
            "1.5 is out of range: expected a number in [0, 1]"
        )
    );
    let text = edit(
        MAIN,
        "<di_cfVal species=\"Aspen\">1<",
        "<di_cfVal species=\"Aspen\">2<",
    );
    let (_, _, field, reason) = field_error(parse_sortie(&text, path(), true).unwrap_err());
    assert_eq!(field, "element <di_canopyFunction> species \"Aspen\"");
    assert!(reason.contains("unknown code 2"), "{reason}");
    let text = edit(MAIN, "<fl c=\"2\">45</fl>", "<fl c=\"2\">forty</fl>");
    let (_, line, field, reason) = field_error(parse_sortie(&text, path(), true).unwrap_err());
    assert_eq!(
        (line, field.as_str(), reason.as_str()),
        (
            line_of(&text, "forty"),
            "element <fl>",
            "not a number: \"forty\""
        )
    );
}

#[test]
fn unknown_species_are_named() {
    let text = edit(
        MAIN,
        "<di_cpVal species=\"Aspen\">",
        "<di_cpVal species=\"Birch\">",
    );
    let (_, line, field, reason) = field_error(parse_sortie(&text, path(), true).unwrap_err());
    assert_eq!(line, line_of(&text, "Birch"));
    assert_eq!(field, "element <di_cpVal>");
    assert!(
        reason.contains("unknown species \"Birch\"") && reason.contains("\"Fir\", \"Aspen\""),
        "{reason}"
    );
    let text = edit(
        MAIN,
        "<applyTo species=\"Aspen\" type=\"Sapling\"/>",
        "<applyTo species=\"aspen\" type=\"Sapling\"/>",
    );
    let (_, line, field, _) = field_error(parse_sortie(&text, path(), true).unwrap_err());
    assert_eq!(
        (line, field.as_str()),
        (line_of(&text, "\"aspen\""), "element <applyTo>")
    );
    let text = edit(MAIN, "<tree sp=\"1\" tp=\"1\">", "<tree sp=\"2\" tp=\"1\">");
    let (_, _, field, reason) = field_error(parse_sortie(&text, path(), true).unwrap_err());
    assert_eq!(field, "element <tree>");
    assert!(reason.contains("sp \"2\""), "{reason}");
}

#[test]
fn text_that_is_not_a_parameter_file_is_refused_with_the_path() {
    let p = Path::new("data/notes.xml");
    for (text, words) in [
        ("plot_lenX = 100\n", "not a well-formed XML file"),
        ("<paramFile><plot>", "not a well-formed XML file"),
        ("<svg></svg>", "root element is <svg>"),
        ("<paramFile><plot/></paramFile>", "no <tr_speciesList>"),
    ] {
        let e = parse_sortie(text, p, true).unwrap_err();
        assert!(matches!(e, InputError::Invalid { .. }), "{e}");
        let s = e.to_string();
        assert!(
            s.starts_with("data/notes.xml: ") && s.contains(words),
            "{s}"
        );
    }
    let e = read_sortie(Path::new("/nonexistent/run.xml"), true).unwrap_err();
    assert!(matches!(e, InputError::File(_)), "{e}");
    assert!(e.to_string().contains("/nonexistent/run.xml"), "{e}");
}

#[test]
fn read_sortie_reads_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("run.xml");
    std::fs::write(&p, MASTING).unwrap();
    let run = read_sortie(&p, false).unwrap();
    assert_eq!(run, parse_sortie(MASTING, &p, false).unwrap());
}
