//! The counts table: one row per (year, replicate, species, method).
//!
//! Columns ([`COUNTS_HEADER`]): `year` (0 is the initial stand), `replicate`, `species` (name),
//! `seeds` (seeds that landed on the plot that year, after the cover's survival, rain
//! included; 0 in year 0), `seedlings`, `saplings`, `adults` (trees standing at the end of the
//! year), `recruits` (new seedlings that year, before that year's mortality), `basal_area_m2_ha`
//! (basal area of all the species' trees, m² per hectare of the plot) and `method` (the run's
//! dispersal method label, e.g. `exact` or `multires` under `--compare`).
//!
//! Numbers are written in Rust's shortest round-trip form, so a reader gets back exactly the
//! values written. Text fields (species, method) are quoted when they hold a comma, a double
//! quote, a line break or leading/trailing white space (RFC 4180: a quote inside is doubled).

use std::io::Write;
use std::path::Path;

use geofield_io::IoError;

use crate::forest::simulate::Year;

/// The header row of the counts CSV.
pub const COUNTS_HEADER: &str =
    "year,replicate,species,seeds,seedlings,saplings,adults,recruits,basal_area_m2_ha,method";

/// One row of the counts table (see the module docs for the columns).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CountsRow {
    /// Simulation year; 0 is the initial stand.
    pub year: u32,
    /// Replicate number (0 is the run seed itself).
    pub replicate: u32,
    /// Species name.
    pub species: String,
    /// Seeds that landed on the plot this year (0 in year 0).
    pub seeds: u64,
    /// Seedlings standing at the end of the year.
    pub seedlings: u64,
    /// Saplings standing at the end of the year.
    pub saplings: u64,
    /// Adults standing at the end of the year.
    pub adults: u64,
    /// New seedlings this year (before this year's mortality).
    pub recruits: u64,
    /// Basal area of all the species' trees, m² per hectare of the plot.
    #[serde(rename = "basal_area_m2_ha")]
    pub basal_area_m2_per_ha: f64,
    /// Dispersal method label of the run.
    pub method: String,
}

/// The rows of one year of one run: one per species of `year.species`, named from `names`
/// (a species without a name there is called `species_<index>`).
///
/// ```
/// use geofield::forest::output::rows_of;
/// use geofield::forest::simulate::{SpeciesYear, Year};
/// use geofield::forest::trees::Trees;
///
/// let trees = Trees::default();
/// let year = Year::new(
///     3,
///     vec![SpeciesYear { seeds: 120, recruits: 4, seedlings: 9, ..Default::default() }],
///     vec!["exact".into()],
///     &[],
///     &trees,
/// );
/// let rows = rows_of(&year, &["ABLA".to_string()], 2, "exact");
/// assert_eq!(rows.len(), 1);
/// assert_eq!((rows[0].year, rows[0].replicate, rows[0].recruits), (3, 2, 4));
/// assert_eq!(rows[0].species, "ABLA");
/// ```
pub fn rows_of(year: &Year, names: &[String], replicate: u32, method: &str) -> Vec<CountsRow> {
    year.species
        .iter()
        .enumerate()
        .map(|(s, sp)| CountsRow {
            year: year.year,
            replicate,
            species: names
                .get(s)
                .cloned()
                .unwrap_or_else(|| format!("species_{s}")),
            seeds: sp.seeds,
            seedlings: sp.seedlings,
            saplings: sp.saplings,
            adults: sp.adults,
            recruits: sp.recruits,
            basal_area_m2_per_ha: sp.basal_area_m2_per_ha,
            method: method.to_string(),
        })
        .collect()
}

/// `text` as one CSV field: as is, or in double quotes (inner quotes doubled) when it holds a
/// comma, a quote, a line break, or white space at either end (which readers may trim).
fn field(text: &str) -> std::borrow::Cow<'_, str> {
    let edge_space = text.starts_with(char::is_whitespace) || text.ends_with(char::is_whitespace);
    if edge_space || text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\"")).into()
    } else {
        text.into()
    }
}

/// Write `rows` as CSV with the header [`COUNTS_HEADER`], atomically.
///
/// ```
/// use geofield::forest::output::{CountsRow, write_counts_csv};
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("counts.csv");
/// let row = CountsRow {
///     year: 1, replicate: 0, species: "ABLA".into(), seeds: 10, seedlings: 2, saplings: 0,
///     adults: 5, recruits: 2, basal_area_m2_per_ha: 12.5, method: "exact".into(),
/// };
/// write_counts_csv(&path, &[row])?;
/// let text = std::fs::read_to_string(&path)?;
/// assert_eq!(text.lines().nth(1), Some("1,0,ABLA,10,2,0,5,2,12.5,exact"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_counts_csv(path: &Path, rows: &[CountsRow]) -> Result<(), IoError> {
    geofield_io::write_atomic(path, |w| {
        let mut b = std::io::BufWriter::with_capacity(1 << 16, w);
        writeln!(b, "{COUNTS_HEADER}")?;
        for r in rows {
            writeln!(
                b,
                "{},{},{},{},{},{},{},{},{},{}",
                r.year,
                r.replicate,
                field(&r.species),
                r.seeds,
                r.seedlings,
                r.saplings,
                r.adults,
                r.recruits,
                r.basal_area_m2_per_ha,
                field(&r.method)
            )?;
        }
        b.flush()
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::forest::output::test_support;
    use crate::forest::simulate::SpeciesYear;
    use geofield_io::{CsvRecord, CsvTable};

    fn read_back(path: &Path) -> Vec<CountsRow> {
        let mut t = CsvTable::read(path).unwrap();
        assert_eq!(t.headers.join(","), COUNTS_HEADER);
        let mut rec = CsvRecord::default();
        let mut out = Vec::new();
        while t.next_record(&mut rec).unwrap() {
            let int = |c: usize| t.str_at(&rec, c).unwrap().parse::<u64>().unwrap();
            out.push(CountsRow {
                year: int(0) as u32,
                replicate: int(1) as u32,
                species: t.str_at(&rec, 2).unwrap().to_string(),
                seeds: int(3),
                seedlings: int(4),
                saplings: int(5),
                adults: int(6),
                recruits: int(7),
                basal_area_m2_per_ha: t.f64_at(&rec, 8).unwrap(),
                method: t.str_at(&rec, 9).unwrap().to_string(),
            });
        }
        out
    }

    #[test]
    fn csv_round_trips_every_field() {
        let trees = test_support::trees(&[]);
        let year = Year::new(
            7,
            vec![
                SpeciesYear {
                    seeds: u64::MAX,
                    recruits: 3,
                    seedlings: 11,
                    saplings: 2,
                    adults: 40,
                    basal_area_m2_per_ha: 0.1 + 0.2,
                    mast: true,
                },
                SpeciesYear {
                    basal_area_m2_per_ha: 1e-300,
                    ..SpeciesYear::default()
                },
                SpeciesYear {
                    seeds: 5,
                    basal_area_m2_per_ha: 123_456.789_012_345,
                    ..SpeciesYear::default()
                },
            ],
            Vec::new(),
            &[],
            &trees,
        );
        // Names that need quoting; the third species has no name.
        let names = vec![
            "Abies, \"lasiocarpa\"".to_string(),
            "Pinus\ncontorta".into(),
        ];
        let mut rows = rows_of(&year, &names, 4, "exact");
        rows.extend(rows_of(&year, &names, 5, "multires, b"));
        assert_eq!(rows[2].species, "species_2");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("counts.csv");
        write_counts_csv(&path, &rows).unwrap();
        assert_eq!(read_back(&path), rows);
        // No rows: the header alone.
        write_counts_csv(&path, &[]).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!("{COUNTS_HEADER}\n")
        );
        assert_eq!(field("a b"), "a b");
        assert_eq!(field(" a"), "\" a\"");
    }

    #[test]
    fn serde_names_match_the_header() {
        let row = CountsRow {
            year: 1,
            replicate: 0,
            species: "ABLA".into(),
            seeds: 1,
            seedlings: 2,
            saplings: 3,
            adults: 4,
            recruits: 5,
            basal_area_m2_per_ha: 0.5,
            method: "exact".into(),
        };
        let json = serde_json::to_value(&row).unwrap();
        let keys: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut want: Vec<&str> = COUNTS_HEADER.split(',').collect();
        let mut got = keys.clone();
        want.sort_unstable();
        got.sort_unstable();
        assert_eq!(got, want);
    }
}
