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

mod files;
use files::{MAIN, MASTING};

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
