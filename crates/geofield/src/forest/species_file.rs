//! The forest's parameters in the species file (TOML, feature `io`).
//!
//! `geofield forest` reads the species file of `geofield disperse` (each `[[species]]` table's
//! dispersal keys: the canopy kernel, STR, β, η, `min_dbh_cm` for reproduction) and two
//! optional tables; every key is optional and falls back to the defaults of
//! [`ForestSpecies::with_defaults`]:
//!
//! ```toml
//! [forest]                       # the run
//! max_gap_density = 0            # a gap cell holds at most this many adults
//! gap_cell_m = 8.0               # side of the gap (and neighbour) cells, m
//! torus = false                  # seeds leaving the plot re-enter on the other side
//!
//! [[species]]
//! name = "subalpine_fir"         # ... the dispersal keys of `geofield disperse`
//! [species.forest]
//! establishment = 0.02           # probability that a seed becomes a seedling
//! seedling_dbh_cm = 0.1          # DBH of a new seedling
//! sapling_dbh_cm = 1.0           # seedling -> sapling
//! adult_dbh_cm = 15.0            # sapling -> adult (default: min_dbh_cm, at least 2)
//! seed_distribution = "poisson"  # deterministic | poisson | negative_binomial | normal | lognormal
//! clumping = 2.0                 # negative binomial k;  sd = (normal), sigma = (lognormal)
//! rain = { intercept = 0.0, slope = 0.1 }   # non-spatial seeds m-2 yr-1 (+ per m2/ha of BA)
//! gap = { kernel = "weibull", d = 1e-4, theta = 3.0, str = 150.0, beta = 2.0 }  # gap parents
//! growth.seedling = { radial_mm_per_yr = 1.0 }
//! growth.adult = { max_cm_per_yr = 0.6, peak_dbh_cm = 40.0, min_cm_per_yr = 0.05 }
//! mortality.seedling = { annual = 0.25, per_neighbour = 0.02 }
//! [species.forest.masting]       # SORTIE-ND's MastingSpatialDisperse
//! a = 4.0
//! b = -3.0
//! group = 1
//! str_per_species = false
//! mast = { str_mean = 400.0, str_sd = 100.0, law = "lognormal", beta = 2.0, participating = 0.9 }
//! non_mast = { str_mean = 40.0, str_sd = 10.0, law = "normal", beta = 2.0, participating = 0.5 }
//! ```
//!
//! The gap table takes the kernel keys of a species (`kernel` and its parameters, `str`,
//! `beta`; `eta` and `min_dbh_cm` default to the species'). Every error names the file, the
//! line of the species' table and the key.

use std::path::Path;

use serde::Deserialize;

use super::fecundity::{EventFecundity, Masting, StrLaw};
use super::params::{ForestParams, ForestSpecies, Growth, Mortality};
use super::rain::Rain;
use super::seed_counts::SeedDistribution;
use crate::dispersal::io::parse_species;
use crate::dispersal::{Eta, Kernel, Species};
use crate::input_error::{InputError, quote};

#[derive(Deserialize)]
struct File {
    species: Vec<toml::Spanned<Entry>>,
    forest: Option<toml::Spanned<RunRaw>>,
}

#[derive(Deserialize)]
struct Entry {
    forest: Option<SpeciesRaw>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RunRaw {
    max_gap_density: Option<u32>,
    gap_cell_m: Option<f64>,
    torus: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SpeciesRaw {
    establishment: Option<f64>,
    seedling_dbh_cm: Option<f64>,
    sapling_dbh_cm: Option<f64>,
    adult_dbh_cm: Option<f64>,
    seed_distribution: Option<String>,
    clumping: Option<f64>,
    sd: Option<f64>,
    sigma: Option<f64>,
    rain: Option<Rain2>,
    gap: Option<GapRaw>,
    growth: Option<Stages<GrowthRaw>>,
    mortality: Option<Stages<MortalityRaw>>,
    masting: Option<MastingRaw>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Rain2 {
    intercept: f64,
    slope: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GapRaw {
    kernel: String,
    str: f64,
    beta: f64,
    eta: Option<toml::Value>,
    min_dbh_cm: Option<f64>,
    d: Option<f64>,
    theta: Option<f64>,
    x0: Option<f64>,
    xb: Option<f64>,
    u: Option<f64>,
    p: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Stages<T> {
    seedling: Option<T>,
    sapling: Option<T>,
    adult: Option<T>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GrowthRaw {
    radial_mm_per_yr: Option<f64>,
    max_cm_per_yr: Option<f64>,
    peak_dbh_cm: Option<f64>,
    min_cm_per_yr: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MortalityRaw {
    annual: f64,
    #[serde(default)]
    per_neighbour: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MastingRaw {
    a: f64,
    b: f64,
    #[serde(default)]
    group: u8,
    #[serde(default)]
    str_per_species: bool,
    mast: EventRaw,
    non_mast: EventRaw,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EventRaw {
    str_mean: f64,
    #[serde(default)]
    str_sd: f64,
    law: String,
    beta: f64,
    #[serde(default = "one")]
    participating: f64,
}

fn one() -> f64 {
    1.0
}

fn line_of(text: &str, byte: usize) -> u64 {
    let end = text.floor_char_boundary(byte.min(text.len()));
    text[..end].matches('\n').count() as u64 + 1
}

/// Read the forest's parameters from a species file (see the module docs).
pub fn read_forest_species(path: &Path) -> Result<ForestParams, InputError> {
    let text = std::fs::read_to_string(path).map_err(|source| geofield_io::IoError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse_forest_species(&text, path)
}

/// Parse the text of a species file read from `path` (named in errors).
pub fn parse_forest_species(text: &str, path: &Path) -> Result<ForestParams, InputError> {
    let dispersal = parse_species(text, path)?;
    let file: File = toml::from_str(text).map_err(|e| InputError::Toml {
        path: path.to_path_buf(),
        line: e.span().map(|s| line_of(text, s.start)),
        message: e.message().to_string(),
    })?;
    let (run, run_line) = match file.forest {
        Some(r) => {
            let line = line_of(text, r.span().start);
            (Some(r.into_inner()), line)
        }
        None => (None, 1),
    };
    let mut species = Vec::with_capacity(dispersal.len());
    for (canopy, entry) in dispersal.into_iter().zip(file.species) {
        let line = line_of(text, entry.span().start);
        let name = canopy.name.clone();
        let at = |reason: String| InputError::Field {
            path: path.to_path_buf(),
            line,
            field: format!("species {} [species.forest]", quote(&name)),
            reason,
        };
        let mut f = ForestSpecies::with_defaults(canopy);
        if let Some(r) = entry.into_inner().forest {
            apply(&mut f, r).map_err(at)?;
        }
        species.push(f.validated().map_err(|e| InputError::Field {
            path: path.to_path_buf(),
            line,
            field: format!("species {}", quote(&name)),
            reason: e,
        })?);
    }
    let run = run.unwrap_or(RunRaw {
        max_gap_density: None,
        gap_cell_m: None,
        torus: None,
    });
    ForestParams {
        species,
        max_gap_density: run.max_gap_density.unwrap_or(0),
        gap_cell_m: run.gap_cell_m.unwrap_or(8.0),
        torus: run.torus.unwrap_or(false),
    }
    .validated()
    .map_err(|reason| InputError::Field {
        path: path.to_path_buf(),
        line: run_line,
        field: "[forest]".into(),
        reason,
    })
}

/// Apply a species' `[species.forest]` table over the defaults.
fn apply(f: &mut ForestSpecies, r: SpeciesRaw) -> Result<(), String> {
    if let Some(v) = r.establishment {
        f.establishment = v;
    }
    if let Some(v) = r.seedling_dbh_cm {
        f.seedling_dbh_cm = v;
    }
    if let Some(v) = r.sapling_dbh_cm {
        f.sapling_dbh_cm = v;
    }
    if let Some(v) = r.adult_dbh_cm {
        f.adult_dbh_cm = v;
    }
    let law = r.seed_distribution.as_deref().unwrap_or("poisson");
    let unused = |key: &str, v: Option<f64>| match v {
        Some(_) => Err(format!(
            "`{key}` does not belong to seed_distribution {}",
            quote(law)
        )),
        None => Ok(()),
    };
    let need = |key: &str, v: Option<f64>| {
        v.ok_or_else(|| format!("seed_distribution {} needs `{key}`", quote(law)))
    };
    f.seed_distribution = match law.to_ascii_lowercase().as_str() {
        "deterministic" | "poisson" => {
            unused("clumping", r.clumping)?;
            unused("sd", r.sd)?;
            unused("sigma", r.sigma)?;
            if law.eq_ignore_ascii_case("poisson") {
                SeedDistribution::Poisson
            } else {
                SeedDistribution::Deterministic
            }
        }
        "negative_binomial" => {
            unused("sd", r.sd)?;
            unused("sigma", r.sigma)?;
            SeedDistribution::NegativeBinomial {
                clumping: need("clumping", r.clumping)?,
            }
        }
        "normal" => {
            unused("clumping", r.clumping)?;
            unused("sigma", r.sigma)?;
            SeedDistribution::Normal {
                sd: need("sd", r.sd)?,
            }
        }
        "lognormal" => {
            unused("clumping", r.clumping)?;
            unused("sd", r.sd)?;
            SeedDistribution::Lognormal {
                sigma: need("sigma", r.sigma)?,
            }
        }
        _ => {
            return Err(format!(
                "unknown seed_distribution {}: expected deterministic, poisson, negative_binomial, normal or lognormal",
                quote(law)
            ));
        }
    };
    if let Some(rain) = r.rain {
        f.rain = Some(Rain {
            intercept: rain.intercept,
            slope: rain.slope,
        });
    }
    if let Some(g) = r.gap {
        f.gap = Some(gap_species(&f.canopy, g)?);
    }
    if let Some(g) = r.growth {
        for (i, st) in [g.seedling, g.sapling, g.adult].into_iter().enumerate() {
            if let Some(st) = st {
                f.growth[i] = growth(st, i)?;
            }
        }
    }
    if let Some(m) = r.mortality {
        for (i, st) in [m.seedling, m.sapling, m.adult].into_iter().enumerate() {
            if let Some(st) = st {
                f.mortality[i] = Mortality {
                    annual: st.annual,
                    per_neighbour: st.per_neighbour,
                };
            }
        }
    }
    if let Some(m) = r.masting {
        f.masting = Some(Masting {
            a: m.a,
            b: m.b,
            group: m.group,
            mast: event(m.mast, "mast")?,
            non_mast: event(m.non_mast, "non_mast")?,
            str_per_species: m.str_per_species,
        });
    }
    Ok(())
}

fn growth(g: GrowthRaw, stage: usize) -> Result<Growth, String> {
    let name = ["seedling", "sapling", "adult"][stage];
    match (g.radial_mm_per_yr, g.max_cm_per_yr, g.peak_dbh_cm) {
        (Some(r), None, None) if g.min_cm_per_yr.is_none() => Ok(Growth::ConstantRadial {
            radial_mm_per_yr: r,
        }),
        (None, Some(m), Some(p)) => Ok(Growth::SizeDependent {
            max_cm_per_yr: m,
            peak_dbh_cm: p,
            min_cm_per_yr: g.min_cm_per_yr.unwrap_or(0.0),
        }),
        _ => Err(format!(
            "growth.{name}: give either `radial_mm_per_yr`, or `max_cm_per_yr` and `peak_dbh_cm` (and optionally `min_cm_per_yr`)"
        )),
    }
}

fn event(e: EventRaw, which: &str) -> Result<EventFecundity, String> {
    let law = match e.law.to_ascii_lowercase().as_str() {
        "deterministic" => StrLaw::Deterministic,
        "normal" => StrLaw::Normal,
        "lognormal" => StrLaw::Lognormal,
        _ => {
            return Err(format!(
                "masting.{which}.law: expected deterministic, normal or lognormal, got {}",
                quote(&e.law)
            ));
        }
    };
    Ok(EventFecundity {
        str_mean: e.str_mean,
        str_sd: e.str_sd,
        law,
        beta: e.beta,
        participating: e.participating,
    })
}

fn gap_species(canopy: &Species, g: GapRaw) -> Result<Species, String> {
    let kname = quote(&g.kernel);
    let need =
        |v: Option<f64>, key: &str| v.ok_or_else(|| format!("gap kernel {kname} needs `{key}`"));
    let kernel = match g.kernel.to_ascii_lowercase().as_str() {
        "weibull" => Kernel::Weibull {
            d: need(g.d, "d")?,
            theta: need(g.theta, "theta")?,
        },
        "lognormal" => Kernel::Lognormal {
            x0: need(g.x0, "x0")?,
            xb: need(g.xb, "xb")?,
        },
        "2dt" => Kernel::TwoDt {
            u: need(g.u, "u")?,
            p: need(g.p, "p")?,
        },
        _ => {
            return Err(format!(
                "unknown gap kernel {kname}: expected weibull, lognormal or 2dt"
            ));
        }
    };
    let eta = match g.eta {
        None => canopy.eta,
        Some(toml::Value::Float(v)) => Eta::Value(v),
        Some(toml::Value::Integer(v)) => Eta::Value(v as f64),
        Some(toml::Value::String(s)) if s.eq_ignore_ascii_case("analytic") => Eta::Analytic,
        Some(v) => {
            return Err(format!(
                "gap `eta` must be a number or \"analytic\", got {v}"
            ));
        }
    };
    Species::new(
        canopy.name.clone(),
        kernel,
        g.str,
        g.beta,
        eta,
        g.min_dbh_cm.unwrap_or(canopy.min_dbh_cm),
        canopy.multires_threshold_m,
    )
    .map_err(|e| format!("gap: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forest::params::Stage;

    const FILE: &str = r#"
[forest]
max_gap_density = 2
gap_cell_m = 5.0
torus = true

[[species]]
name = "fir"
kernel = "weibull"
d = 1.0e-4
theta = 3.0
str = 100.0
beta = 2.0
eta = "analytic"
min_dbh_cm = 12.0
[species.forest]
establishment = 0.1
seed_distribution = "negative_binomial"
clumping = 1.5
rain = { intercept = 0.5, slope = 0.25 }
gap = { kernel = "lognormal", x0 = 5.0, xb = 0.8, str = 60.0, beta = 2.5 }
growth.adult = { max_cm_per_yr = 0.8, peak_dbh_cm = 35.0 }
mortality.seedling = { annual = 0.4 }
[species.forest.masting]
a = 4.0
b = -3.0
group = 2
mast = { str_mean = 400.0, str_sd = 100.0, law = "lognormal", beta = 2.0, participating = 0.9 }
non_mast = { str_mean = 40.0, law = "deterministic", beta = 2.0 }

[[species]]
name = "pine"
kernel = "2dt"
u = 30.0
p = 1.2
str = 80.0
beta = 1.5
eta = "analytic"
min_dbh_cm = 10.0
"#;

    #[test]
    fn every_key_maps_onto_the_model() {
        let p = parse_forest_species(FILE, Path::new("s.toml")).unwrap();
        assert_eq!((p.max_gap_density, p.gap_cell_m, p.torus), (2, 5.0, true));
        let fir = &p.species[0];
        assert_eq!(fir.establishment, 0.1);
        assert_eq!(
            fir.seed_distribution,
            SeedDistribution::NegativeBinomial { clumping: 1.5 }
        );
        assert_eq!(
            fir.rain,
            Some(Rain {
                intercept: 0.5,
                slope: 0.25
            })
        );
        let gap = fir.gap.as_ref().unwrap();
        assert_eq!(gap.kernel, Kernel::Lognormal { x0: 5.0, xb: 0.8 });
        assert_eq!((gap.str_, gap.beta, gap.min_dbh_cm), (60.0, 2.5, 12.0));
        assert_eq!(
            fir.growth[Stage::Adult as usize],
            Growth::SizeDependent {
                max_cm_per_yr: 0.8,
                peak_dbh_cm: 35.0,
                min_cm_per_yr: 0.0
            }
        );
        assert_eq!(fir.mortality[0].annual, 0.4);
        assert_eq!(fir.mortality[0].per_neighbour, 0.0);
        let m = fir.masting.unwrap();
        assert_eq!(
            (m.a, m.b, m.group, m.str_per_species),
            (4.0, -3.0, 2, false)
        );
        assert_eq!(m.mast.law, StrLaw::Lognormal);
        assert_eq!((m.non_mast.str_sd, m.non_mast.participating), (0.0, 1.0));
        // Adults from the reproductive minimum; the second species keeps every default.
        assert_eq!(fir.adult_dbh_cm, 12.0);
        let pine = &p.species[1];
        let defaults = ForestSpecies::with_defaults(pine.canopy.clone());
        assert_eq!(pine, &defaults);
    }

    #[test]
    fn bad_values_name_the_species_line_and_key() {
        let bad = FILE.replace("clumping = 1.5", "sd = 1.5");
        let e = parse_forest_species(&bad, Path::new("s.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("s.toml:7:") && e.contains("\"fir\"") && e.contains("`sd`"),
            "{e}"
        );
        let bad = FILE.replace("establishment = 0.1", "establishment = 1.5");
        let e = parse_forest_species(&bad, Path::new("s.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"fir\"") && e.contains("establishment"), "{e}");
        let bad = FILE.replace("annual = 0.4", "annual = 0.4, yearly = 2");
        let e = parse_forest_species(&bad, Path::new("s.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("yearly"), "{e}");
        let bad = FILE.replace("gap_cell_m = 5.0", "gap_cell_m = -5.0");
        let e = parse_forest_species(&bad, Path::new("s.toml"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("s.toml:2:") && e.contains("gap_cell_m"),
            "{e}"
        );
        let bad = FILE.replace("law = \"deterministic\"", "law = \"gamma\"");
        let e = parse_forest_species(&bad, Path::new("s.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("non_mast.law") && e.contains("gamma"), "{e}");
    }
}
