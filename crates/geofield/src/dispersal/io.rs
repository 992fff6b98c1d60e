//! The files of seed dispersal (feature `io`). Reading its inputs: species files (TOML) and
//! stem maps (CSV); every error names the file, the line and the field. Writing (see
//! [`write_seed_map`] and its neighbours): the seed maps as rasters with their units and
//! provenance, PNG maps, and the inputs themselves, which the readers read back.
//!
//! A species file has one `[[species]]` table per species, with the keys of [`RawSpecies`]:
//!
//! ```toml
//! [[species]]
//! name = "subalpine_fir"
//! kernel = "weibull"        # weibull (d, theta) | lognormal (x0, xb) | 2dt (u, p)
//! d = 1.32e-4
//! theta = 3.0
//! str = 2.5                 # seeds per cm² of basal area... see Species
//! beta = 2.0
//! eta = "analytic"          # or a number
//! min_dbh_cm = 10.0
//! # multires_threshold_m = 50.0   (optional)
//! ```
//!
//! `geofield forest` reads the same file, with an optional `[species.forest]` table per
//! species and a `[forest]` table for the run (see [`crate::forest::species_file`]);
//! `geofield disperse` ignores them.
//!
//! A stem map is a CSV with columns `x_m` (or `x`), `y_m` (or `y`), `dbh_cm` (or `dbh`) and
//! `species`, in any order, other columns ignored.

use std::collections::HashMap;
use std::path::Path;

use geofield_core::Extent;
use geofield_cuda::wind::Exchange;
use serde::Deserialize;

use super::{Eta, Kernel, Species, Stand};
use crate::input_error::{InputError, quote};

mod write;

pub use write::{
    ERROR_UNITS, MapStyle, SEED_DENSITY_DESCRIPTION, SEED_DENSITY_UNITS, seed_map_meta,
    seed_map_provenance, write_error_png, write_seed_map, write_seed_png, write_species,
    write_stand,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SpeciesFile {
    species: Vec<toml::Spanned<RawSpecies>>,
    /// The forest's run-wide table, read by [`crate::forest::species_file`].
    #[allow(dead_code)]
    forest: Option<toml::Value>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawEta {
    Number(f64),
    Word(String),
}

/// One `[[species]]` table as written (serde-derived; unknown keys are refused).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSpecies {
    name: String,
    kernel: String,
    str: f64,
    beta: f64,
    eta: RawEta,
    min_dbh_cm: f64,
    d: Option<f64>,
    theta: Option<f64>,
    x0: Option<f64>,
    xb: Option<f64>,
    u: Option<f64>,
    p: Option<f64>,
    multires_threshold_m: Option<f64>,
    /// The species' `[species.forest]` table, read by [`crate::forest::species_file`].
    #[allow(dead_code)]
    forest: Option<toml::Value>,
}

fn line_of(text: &str, byte: usize) -> u64 {
    let end = text.floor_char_boundary(byte.min(text.len()));
    text[..end].matches('\n').count() as u64 + 1
}

/// Read a species file (see the module docs).
pub fn read_species(path: &Path) -> Result<Vec<Species>, InputError> {
    let text = std::fs::read_to_string(path).map_err(|source| geofield_io::IoError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse_species(&text, path)
}

/// Parse the text of a species file read from `path` (named in errors).
pub fn parse_species(text: &str, path: &Path) -> Result<Vec<Species>, InputError> {
    let parsed: SpeciesFile = toml::from_str(text).map_err(|e| InputError::Toml {
        path: path.to_path_buf(),
        line: e.span().map(|s| line_of(text, s.start)),
        message: e.message().to_string(),
    })?;
    if parsed.species.is_empty() {
        return Err(InputError::Toml {
            path: path.to_path_buf(),
            line: None,
            message: "no [[species]] tables".into(),
        });
    }
    let mut out: Vec<Species> = Vec::new();
    for sp in parsed.species {
        let line = line_of(text, sp.span().start);
        let r = sp.into_inner();
        let at = |reason: String| InputError::Field {
            path: path.to_path_buf(),
            line,
            field: format!("species {}", quote(&r.name)),
            reason,
        };
        let kernel_name = quote(&r.kernel);
        let need = |v: Option<f64>, field: &str| {
            v.ok_or_else(|| at(format!("kernel {kernel_name} needs field `{field}`")))
        };
        let unused = |fields: &[(&str, Option<f64>)]| -> Result<(), InputError> {
            for (f, v) in fields {
                if v.is_some() {
                    return Err(at(format!(
                        "field `{f}` does not belong to kernel {kernel_name}"
                    )));
                }
            }
            Ok(())
        };
        let kernel = match r.kernel.to_ascii_lowercase().as_str() {
            "weibull" => {
                unused(&[("x0", r.x0), ("xb", r.xb), ("u", r.u), ("p", r.p)])?;
                Kernel::Weibull {
                    d: need(r.d, "d")?,
                    theta: need(r.theta, "theta")?,
                }
            }
            "lognormal" => {
                unused(&[("d", r.d), ("theta", r.theta), ("u", r.u), ("p", r.p)])?;
                Kernel::Lognormal {
                    x0: need(r.x0, "x0")?,
                    xb: need(r.xb, "xb")?,
                }
            }
            "2dt" => {
                unused(&[("d", r.d), ("theta", r.theta), ("x0", r.x0), ("xb", r.xb)])?;
                Kernel::TwoDt {
                    u: need(r.u, "u")?,
                    p: need(r.p, "p")?,
                }
            }
            _ => {
                return Err(at(format!(
                    "unknown kernel {kernel_name}: expected weibull, lognormal or 2dt"
                )));
            }
        };
        let eta = match &r.eta {
            RawEta::Number(v) => Eta::Value(*v),
            RawEta::Word(w) if w.eq_ignore_ascii_case("analytic") => Eta::Analytic,
            RawEta::Word(w) => {
                return Err(at(format!(
                    "`eta` must be a number or \"analytic\", got {}",
                    quote(w)
                )));
            }
        };
        if out.iter().any(|s| s.name == r.name) {
            return Err(at("duplicate species name".into()));
        }
        let s = Species::new(
            r.name.clone(),
            kernel,
            r.str,
            r.beta,
            eta,
            r.min_dbh_cm,
            r.multires_threshold_m,
        )
        .map_err(|e| at(e.to_string()))?;
        out.push(s);
    }
    Ok(out)
}

/// A species file that [`read_species`] reads back to `species`.
pub fn species_toml(species: &[Species]) -> String {
    let mut s = String::from(
        "# geofield species file: one [[species]] table per species.\n# Units: d in m^-theta, x0 in m, u in m^2, min_dbh_cm in cm; eta a number or \"analytic\".\n",
    );
    for sp in species {
        s.push_str(&format!("\n[[species]]\nname = {:?}\n", sp.name));
        match sp.kernel {
            Kernel::Weibull { d, theta } => s.push_str(&format!(
                "kernel = \"weibull\"\nd = {d:e}\ntheta = {theta:?}\n"
            )),
            Kernel::Lognormal { x0, xb } => s.push_str(&format!(
                "kernel = \"lognormal\"\nx0 = {x0:?}\nxb = {xb:?}\n"
            )),
            Kernel::TwoDt { u, p } => {
                s.push_str(&format!("kernel = \"2dt\"\nu = {u:?}\np = {p:?}\n"))
            }
        }
        s.push_str(&format!("str = {:?}\nbeta = {:?}\n", sp.str_, sp.beta));
        match sp.eta {
            Eta::Analytic => s.push_str("eta = \"analytic\"\n"),
            Eta::Value(v) => s.push_str(&format!("eta = {v:?}\n")),
        }
        s.push_str(&format!("min_dbh_cm = {:?}\n", sp.min_dbh_cm));
        if let Some(r) = sp.multires_threshold_m {
            s.push_str(&format!("multires_threshold_m = {r:?}\n"));
        }
    }
    s
}

/// What reading a stem map found besides the trees.
#[derive(Debug, Default, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StandReport {
    pub rows: usize,
    pub unknown_species: usize,
    /// Up to 10 distinct unknown names.
    pub unknown_species_names: Vec<String>,
    /// Lines of the first unknown-species trees (up to 5).
    pub unknown_species_first_lines: Vec<u64>,
    pub outside_extent: usize,
    pub outside_extent_first_lines: Vec<u64>,
    pub trees_per_species: Vec<usize>,
}

const FIRST_LINES: usize = 5;

/// Distinct unknown species names kept.
const UNKNOWN_NAMES: usize = 10;

/// Keep `line` among the first [`FIRST_LINES`].
fn push_first(lines: &mut Vec<u64>, line: u64) {
    if lines.len() < FIRST_LINES {
        lines.push(line);
    }
}

/// Read a stem map (see the module docs). Species not in `species` (matched exactly, else
/// ignoring case) are skipped and reported (an error with `strict`); trees outside `extent` are
/// kept (seeds fly in) and reported.
pub fn read_stand(
    path: &Path,
    species: &[Species],
    extent: &Extent,
    strict: bool,
) -> Result<(Stand, StandReport), InputError> {
    // Chunks of the file in parallel (geofield_io::CsvChunks), each read into its own stand
    // and report, then joined in file order: the same trees, order, counts and first lines as
    // one pass over the file.
    let t = geofield_io::CsvChunks::open(path)?;
    let (st, rep) = join(read_rows(&t, path, species, extent)?, species.len());
    check_strict(&rep, path, species, strict)?;
    Ok((st, rep))
}

/// [`read_stand`] by the parts of a run split over processes (MPI ranks), each reading its
/// byte range of the file ([`geofield_io::CsvChunks::open_part`]): this part's trees, a
/// contiguous run of the stand in file order (the pieces of [`super::RowShare::trees`]), and the
/// whole file's report. Every part calls the exchange the same number of times whatever
/// happens; `Ok(None)`: another part failed, and its error is its own to report (the caller
/// joins the parts' next agreement, where it comes). Errors name the file's line, as
/// [`read_stand`]'s do.
pub fn read_stand_piece(
    path: &Path,
    species: &[Species],
    extent: &Extent,
    strict: bool,
    ex: &dyn Exchange,
) -> Result<Option<(Stand, StandReport)>, InputError> {
    let gather = |m: &[f64]| ex.all_gather(m);
    let mine = match geofield_io::CsvChunks::open_part(path, ex.part(), ex.parts(), &gather) {
        Err(e) => Err(InputError::from(e)),
        Ok(None) => Ok(None),
        Ok(Some(t)) => {
            read_rows(&t, path, species, extent).map(|rows| Some(join(rows, species.len())))
        }
    };
    // Every part's report (status 0: read; 1: failed; 2: another part failed), in part order.
    let (status, payload) = match &mine {
        Ok(Some((_, rep))) => (0u8, serde_json::to_vec(rep).unwrap_or_default()),
        Err(_) => (1, Vec::new()),
        Ok(None) => (2, Vec::new()),
    };
    let mut msg = vec![status];
    msg.extend_from_slice(&payload);
    let all = gather_bytes(ex, &msg);
    let (st, _) = match mine? {
        Some(m) => m,
        None => return Ok(None),
    };
    if all.iter().any(|m| m.first() != Some(&0)) {
        return Ok(None);
    }
    let mut rep = empty_report(species.len());
    for m in &all {
        let r: StandReport =
            serde_json::from_slice(m.get(1..).unwrap_or(&[])).map_err(|e| InputError::Invalid {
                path: path.to_path_buf(),
                reason: format!("a part's report of the file did not come through: {e}"),
            })?;
        join_report(&mut rep, r);
    }
    check_strict(&rep, path, species, strict)?;
    Ok(Some((st, rep)))
}

/// Every part's `mine` on every part, in part order (bytes through the exchange's f64s, bit
/// for bit).
fn gather_bytes(ex: &dyn Exchange, mine: &[u8]) -> Vec<Vec<u8>> {
    let lens = ex.all_gather(&[mine.len() as f64]);
    let words: Vec<f64> = mine
        .chunks(8)
        .map(|c| {
            let mut b = [0u8; 8];
            b[..c.len()].copy_from_slice(c);
            f64::from_bits(u64::from_le_bytes(b))
        })
        .collect();
    let all = ex.all_gather(&words);
    let mut at = 0usize;
    lens.iter()
        .map(|&l| {
            let l = l as usize;
            let n = l.div_ceil(8);
            let bytes: Vec<u8> = all
                .get(at..at + n)
                .unwrap_or(&[])
                .iter()
                .flat_map(|w| w.to_bits().to_le_bytes())
                .take(l)
                .collect();
            at += n;
            bytes
        })
        .collect()
}

/// The records of `t` (all of a file, or a part's byte range) as stands and reports, one per
/// chunk in file order.
fn read_rows(
    t: &geofield_io::CsvChunks,
    path: &Path,
    species: &[Species],
    extent: &Extent,
) -> Result<Vec<(Stand, StandReport)>, InputError> {
    let cx = t.column_any(&["x_m", "x"])?;
    let cy = t.column_any(&["y_m", "y"])?;
    let cd = t.column_any(&["dbh_cm", "dbh"])?;
    let cs = t.column("species")?;
    let dbh_column = t.headers[cd].clone();
    let index: HashMap<&str, u32> = species
        .iter()
        .enumerate()
        .map(|(i, s)| (s.name.as_str(), i as u32))
        .collect();
    let lower: HashMap<String, u32> = species
        .iter()
        .enumerate()
        .map(|(i, s)| (s.name.to_lowercase(), i as u32))
        .collect();
    t.fold(|(st, rep): &mut (Stand, StandReport), row| {
        rep.rows += 1;
        let line = row.line();
        let x = row.finite_f64(cx)?;
        let y = row.finite_f64(cy)?;
        let dbh = row.finite_f64(cd)?;
        let name = row.str(cs)?;
        if dbh < 0.0 {
            return Err(InputError::Field {
                path: path.to_path_buf(),
                line,
                field: format!("column \"{dbh_column}\""),
                reason: format!("DBH {dbh} cm is negative; DBH must be >= 0"),
            });
        }
        let sp = index
            .get(name)
            .copied()
            .or_else(|| lower.get(&name.to_lowercase()).copied());
        let Some(sp) = sp else {
            rep.unknown_species += 1;
            push_first(&mut rep.unknown_species_first_lines, line);
            if !rep.unknown_species_names.iter().any(|n| n == name)
                && rep.unknown_species_names.len() < UNKNOWN_NAMES
            {
                rep.unknown_species_names.push(name.to_string());
            }
            return Ok(());
        };
        if !extent.contains(x, y) {
            rep.outside_extent += 1;
            push_first(&mut rep.outside_extent_first_lines, line);
        }
        if rep.trees_per_species.is_empty() {
            rep.trees_per_species = vec![0; species.len()];
        }
        rep.trees_per_species[sp as usize] += 1;
        st.x_m.push(x);
        st.y_m.push(y);
        st.dbh_cm.push(dbh);
        st.species.push(sp);
        Ok(())
    })
}

fn empty_report(n_species: usize) -> StandReport {
    StandReport {
        trees_per_species: vec![0; n_species],
        ..Default::default()
    }
}

/// The stands and reports of consecutive pieces of a file, joined in order.
fn join(parts: Vec<(Stand, StandReport)>, n_species: usize) -> (Stand, StandReport) {
    let mut st = Stand::default();
    let n: usize = parts.iter().map(|(s, _)| s.x_m.len()).sum();
    st.x_m.reserve_exact(n);
    st.y_m.reserve_exact(n);
    st.dbh_cm.reserve_exact(n);
    st.species.reserve_exact(n);
    let mut rep = empty_report(n_species);
    for (s, r) in parts {
        st.x_m.extend_from_slice(&s.x_m);
        st.y_m.extend_from_slice(&s.y_m);
        st.dbh_cm.extend_from_slice(&s.dbh_cm);
        st.species.extend_from_slice(&s.species);
        join_report(&mut rep, r);
    }
    (st, rep)
}

/// `r`, the report of the piece after `rep`'s, added to `rep`.
fn join_report(rep: &mut StandReport, r: StandReport) {
    rep.rows += r.rows;
    rep.unknown_species += r.unknown_species;
    rep.outside_extent += r.outside_extent;
    for (total, k) in rep.trees_per_species.iter_mut().zip(&r.trees_per_species) {
        *total += k;
    }
    for line in r.unknown_species_first_lines {
        push_first(&mut rep.unknown_species_first_lines, line);
    }
    for line in r.outside_extent_first_lines {
        push_first(&mut rep.outside_extent_first_lines, line);
    }
    for name in r.unknown_species_names {
        if !rep.unknown_species_names.contains(&name)
            && rep.unknown_species_names.len() < UNKNOWN_NAMES
        {
            rep.unknown_species_names.push(name);
        }
    }
}

/// With `strict`, trees of unknown species are an error naming the first one's line.
fn check_strict(
    rep: &StandReport,
    path: &Path,
    species: &[Species],
    strict: bool,
) -> Result<(), InputError> {
    if strict && let Some(&line) = rep.unknown_species_first_lines.first() {
        return Err(InputError::UnknownSpecies {
            path: path.to_path_buf(),
            line,
            name: quote(rep.unknown_species_names.first().map_or("", String::as_str)),
            count: rep.unknown_species,
            known: species
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn species_round_trip_and_errors() {
        let sp = crate::synth::sbs_species();
        let text = species_toml(&sp);
        let f = Path::new("s.toml");
        let back = parse_species(&text, f).unwrap();
        assert_eq!(back, sp);
        let bad = text.replacen("d = 1.32e-4", "d = -1.0", 1);
        let e = parse_species(&bad, f).unwrap_err().to_string();
        assert!(
            e.starts_with("s.toml:") && e.contains("`d`") && e.contains("subalpine_fir"),
            "{e}"
        );
        let e = parse_species("[[species]]\nname = \"a\"\nkernel = \"weibull\"\n", f)
            .unwrap_err()
            .to_string();
        assert!(e.contains("s.toml"), "{e}");
        let e = parse_species(
            &text.replacen("kernel = \"weibull\"", "kernel = \"cauchy\"", 1),
            Path::new("f.toml"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("cauchy") && e.contains("f.toml:"), "{e}");
        let long = "x".repeat(500);
        let e = parse_species(
            &text.replacen("kernel = \"weibull\"", &format!("kernel = \"{long}\""), 1),
            f,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("(500 characters)") && e.len() < 400, "{e}");
    }
}
