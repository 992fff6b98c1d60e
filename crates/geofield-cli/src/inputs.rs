//! Reading the user's inputs: species files (TOML), stem maps (CSV), extents. Every error names
//! the file, line and field.

use std::collections::HashMap;
use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};
use geofield::dispersal::{Eta, Kernel, Species, Stand};
use geofield_core::{Extent, GridSpec};
use geofield_io::CsvTable;
use serde::Deserialize;

/// `XMIN,YMIN,XMAX,YMAX` in metres.
pub fn parse_extent(s: &str) -> Result<Extent> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    if parts.len() != 4 {
        bail!("--extent must be XMIN,YMIN,XMAX,YMAX (four numbers in metres), got {s:?}");
    }
    let mut v = [0.0; 4];
    for (i, p) in parts.iter().enumerate() {
        v[i] = p
            .parse::<f64>()
            .map_err(|_| anyhow!("--extent: {p:?} is not a number (in {s:?})"))?;
    }
    Extent::new(v[0], v[1], v[2], v[3]).context("--extent")
}

/// The grid of an extent and cell size, refused up front if its `bands` layers (plus the f64
/// working copies) would not fit in memory.
pub fn grid_for(
    extent: &Extent,
    cell_size_m: f64,
    bands: usize,
    out_bytes: usize,
) -> Result<GridSpec> {
    let g = GridSpec::from_extent(*extent, cell_size_m)?;
    if let Some(avail) = available_memory_bytes() {
        g.check_memory(bands.max(1), 8 + out_bytes, avail as u128)
            .context(
                "the output grid would not fit in this machine's available memory (MemAvailable)",
            )?;
    }
    Ok(g)
}

/// MemAvailable from /proc/meminfo, if readable.
pub fn available_memory_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = s.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SpeciesFile {
    species: Vec<toml::Spanned<RawSpecies>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawEta {
    Number(f64),
    Word(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpecies {
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
}

fn line_of(text: &str, byte: usize) -> usize {
    text[..byte.min(text.len())].matches('\n').count() + 1
}

/// Parse a species file: `[[species]]` tables with name, kernel (weibull | lognormal | 2dt), str,
/// beta, the kernel's parameters (d, theta | x0, xb | u, p), eta (number or "analytic"),
/// min_dbh_cm and optionally multires_threshold_m.
pub fn read_species(path: &Path) -> Result<Vec<Species>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read species file {}", path.display()))?;
    parse_species(&text, &path.display().to_string())
}

pub fn parse_species(text: &str, file: &str) -> Result<Vec<Species>> {
    let parsed: SpeciesFile = toml::from_str(text).map_err(|e| {
        let line = e
            .span()
            .map(|s| format!(":{}", line_of(text, s.start)))
            .unwrap_or_default();
        anyhow!("{file}{line}: {}", e.message())
    })?;
    if parsed.species.is_empty() {
        bail!("{file}: no [[species]] tables");
    }
    let mut out: Vec<Species> = Vec::new();
    for sp in parsed.species {
        let line = line_of(text, sp.span().start);
        let r = sp.into_inner();
        let at = |m: String| anyhow!("{file}:{line}: species {:?}: {m}", r.name);
        let need = |v: Option<f64>, field: &str| {
            v.ok_or_else(|| at(format!("kernel {:?} needs field `{field}`", r.kernel)))
        };
        let unused = |fields: &[(&str, Option<f64>)]| -> Result<()> {
            for (f, v) in fields {
                if v.is_some() {
                    return Err(at(format!(
                        "field `{f}` does not belong to kernel {:?}",
                        r.kernel
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
            other => {
                return Err(at(format!(
                    "unknown kernel {other:?}: expected weibull, lognormal or 2dt"
                )));
            }
        };
        let eta = match &r.eta {
            RawEta::Number(v) => Eta::Value(*v),
            RawEta::Word(w) if w.eq_ignore_ascii_case("analytic") => Eta::Analytic,
            RawEta::Word(w) => {
                return Err(at(format!(
                    "`eta` must be a number or \"analytic\", got {w:?}"
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
        .map_err(|e| anyhow!("{file}:{line}: {e}"))?;
        out.push(s);
    }
    Ok(out)
}

/// Write a species file that [`read_species`] reads back.
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
#[derive(Debug, Default, serde::Serialize)]
pub struct StandReport {
    pub rows: usize,
    pub unknown_species: usize,
    pub unknown_species_names: Vec<String>,
    pub unknown_species_first_lines: Vec<u64>,
    pub outside_extent: usize,
    pub outside_extent_first_lines: Vec<u64>,
    pub trees_per_species: Vec<usize>,
}

const FIRST_LINES: usize = 5;

/// Read `x_m,y_m,dbh_cm,species` (any order, other columns ignored). Species not in `species`
/// are skipped and reported (an error with `strict`); trees outside `extent` are kept (seeds fly
/// in) and reported.
pub fn read_trees(
    path: &Path,
    species: &[Species],
    extent: &Extent,
    strict: bool,
) -> Result<(Stand, StandReport)> {
    let mut t = CsvTable::read(path)?;
    let cx = t.column_any(&["x_m", "x"])?;
    let cy = t.column_any(&["y_m", "y"])?;
    let cd = t.column_any(&["dbh_cm", "dbh"])?;
    let cs = t.column("species")?;
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
    let mut st = Stand::default();
    let mut rep = StandReport {
        trees_per_species: vec![0; species.len()],
        ..Default::default()
    };
    let file = path.display().to_string();
    let mut rec = geofield_io::CsvRecord::default();
    while t.next_record(&mut rec)? {
        rep.rows += 1;
        let row = t.row(&rec);
        let line = row.line();
        let x = row.finite_f64(cx)?;
        let y = row.finite_f64(cy)?;
        let dbh = row.finite_f64(cd)?;
        let name = row.str(cs)?;
        if dbh < 0.0 {
            bail!(
                "{file}:{line}: column \"{}\": DBH {dbh} cm is negative; DBH must be >= 0",
                t.headers[cd]
            );
        }
        let sp = index
            .get(name)
            .copied()
            .or_else(|| lower.get(&name.to_lowercase()).copied());
        let Some(sp) = sp else {
            rep.unknown_species += 1;
            if rep.unknown_species_first_lines.len() < FIRST_LINES {
                rep.unknown_species_first_lines.push(line);
            }
            if !rep.unknown_species_names.iter().any(|n| n == name)
                && rep.unknown_species_names.len() < 10
            {
                rep.unknown_species_names.push(name.to_string());
            }
            continue;
        };
        if !extent.contains(x, y) {
            rep.outside_extent += 1;
            if rep.outside_extent_first_lines.len() < FIRST_LINES {
                rep.outside_extent_first_lines.push(line);
            }
        }
        rep.trees_per_species[sp as usize] += 1;
        st.x_m.push(x);
        st.y_m.push(y);
        st.dbh_cm.push(dbh);
        st.species.push(sp);
    }
    if strict && rep.unknown_species > 0 {
        bail!(
            "{file}:{}: species {:?} is not in the species file ({} trees of unknown species; --strict makes this an error). Known species: {}",
            rep.unknown_species_first_lines[0],
            rep.unknown_species_names
                .first()
                .cloned()
                .unwrap_or_default(),
            rep.unknown_species,
            species
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok((st, rep))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn species_round_trip_and_errors() {
        let sp = geofield::synth::sbs_species();
        let text = species_toml(&sp);
        let back = parse_species(&text, "s.toml").unwrap();
        assert_eq!(back, sp);
        let bad = text.replacen("d = 1.32e-4", "d = -1.0", 1);
        let e = parse_species(&bad, "s.toml").unwrap_err().to_string();
        assert!(
            e.starts_with("s.toml:") && e.contains("`d`") && e.contains("subalpine_fir"),
            "{e}"
        );
        let e = parse_species(
            "[[species]]\nname = \"a\"\nkernel = \"weibull\"\n",
            "s.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("s.toml"), "{e}");
        let e = parse_species(
            &text.replacen("kernel = \"weibull\"", "kernel = \"cauchy\"", 1),
            "f.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("cauchy") && e.contains("f.toml:"), "{e}");
    }

    #[test]
    fn extent_parsing() {
        assert!(parse_extent("0,0,10,10").is_ok());
        assert!(parse_extent("0,0,10").is_err());
        assert!(parse_extent("0,0,a,10").is_err());
        assert!(parse_extent("10,0,0,10").is_err());
    }
}
