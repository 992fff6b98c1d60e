//! A chart of one column of the counts table over the years (recruits: the seed paper's
//! Fig. 13), drawn by geofield-io's [`XyChart`].
//!
//! One series per species, and per method when the rows hold several (`--compare`); each
//! series is the mean over the replicates of every year. [`XyChart`] draws one line and one
//! kind of marker in one colour, with a text label above any marker, so the series are drawn
//! as markers and each is named once by a label above one of its markers; the labels are
//! staggered along the years (series i of n at the fraction (i + 1)/(n + 1) of its years) so
//! that they do not overlap. A single series is also joined by the line.

use std::collections::BTreeMap;
use std::path::Path;

use geofield_io::{IoError, XyChart};

use super::counts::CountsRow;

/// The columns [`write_counts_png`] can draw: name, chart title, y-axis label.
const COLUMNS: [(&str, &str, &str); 6] = [
    (
        "recruits",
        "recruits per year",
        "new seedlings per year (whole plot)",
    ),
    (
        "seeds",
        "seeds landed per year",
        "seeds per year (whole plot)",
    ),
    (
        "seedlings",
        "seedlings",
        "trees at the end of the year (whole plot)",
    ),
    (
        "saplings",
        "saplings",
        "trees at the end of the year (whole plot)",
    ),
    (
        "adults",
        "adults",
        "trees at the end of the year (whole plot)",
    ),
    ("basal_area_m2_ha", "basal area", "basal area (m2 ha-1)"),
];

/// The value of column `what` in `r`.
fn value(r: &CountsRow, what: &str) -> f64 {
    match what {
        "seeds" => r.seeds as f64,
        "seedlings" => r.seedlings as f64,
        "saplings" => r.saplings as f64,
        "adults" => r.adults as f64,
        "basal_area_m2_ha" => r.basal_area_m2_per_ha,
        _ => r.recruits as f64,
    }
}

/// Longest subtitle in characters (the chart is 760 pixels wide, 8 per character).
const SUBTITLE_CHARS: usize = 84;

/// One line of the chart: (method, species) and, per year, the sum and number of replicates.
type Series = ((String, String), BTreeMap<u32, (f64, u32)>);

/// Draw column `what` of `rows` over the years as a PNG, atomically: `what` is one of
/// `recruits`, `seeds`, `seedlings`, `saplings`, `adults`, `basal_area_m2_ha` (the CSV's
/// column names). One series per species (and per method when there are several), the mean
/// over replicates; see the module docs for how series are told apart.
///
/// ```
/// use geofield::forest::output::{CountsRow, write_counts_png};
///
/// let rows: Vec<CountsRow> = (0..10u32)
///     .map(|y| CountsRow {
///         year: y, replicate: 0, species: "ABLA".into(), seeds: 0, seedlings: 0,
///         saplings: 0, adults: 0, recruits: u64::from(y * y), basal_area_m2_per_ha: 0.0,
///         method: "exact".into(),
///     })
///     .collect();
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("recruits.png");
/// write_counts_png(&path, &rows, "recruits")?;
/// assert_eq!(&std::fs::read(&path)?[..8], b"\x89PNG\r\n\x1a\n");
/// assert!(write_counts_png(&path, &rows, "height").is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_counts_png(path: &Path, rows: &[CountsRow], what: &str) -> Result<(), IoError> {
    let invalid = |reason: String| IoError::InvalidOutput {
        path: path.to_path_buf(),
        reason,
    };
    let Some(&(_, title, y_label)) = COLUMNS.iter().find(|c| c.0 == what) else {
        let names: Vec<&str> = COLUMNS.iter().map(|c| c.0).collect();
        return Err(invalid(format!(
            "no column {what:?} to draw; use one of {}",
            names.join(", ")
        )));
    };
    if rows.is_empty() {
        return Err(invalid("no rows to draw".into()));
    }
    // Series in order of first appearance.
    let mut series: Vec<Series> = Vec::new();
    let mut replicates: Vec<u32> = Vec::new();
    for r in rows {
        let key = (r.method.clone(), r.species.clone());
        let at = match series.iter().position(|s| s.0 == key) {
            Some(i) => i,
            None => {
                series.push((key, BTreeMap::new()));
                series.len() - 1
            }
        };
        let slot = series[at].1.entry(r.year).or_insert((0.0, 0));
        slot.0 += value(r, what);
        slot.1 += 1;
        if !replicates.contains(&r.replicate) {
            replicates.push(r.replicate);
        }
    }
    let methods = {
        let mut m: Vec<&str> = Vec::new();
        for ((method, _), _) in &series {
            if !m.contains(&method.as_str()) {
                m.push(method);
            }
        }
        m
    };
    let n = series.len();
    let mut chart = XyChart {
        title: format!("{title} by species"),
        x_label: "year".into(),
        y_label: y_label.into(),
        ..XyChart::default()
    };
    let mut names = Vec::with_capacity(n);
    for (i, ((method, species), years)) in series.iter().enumerate() {
        let name = if methods.len() > 1 {
            format!("{species} ({method})")
        } else {
            species.clone()
        };
        let labelled = ((i + 1) * years.len().saturating_sub(1)) / (n + 1);
        for (j, (&year, &(sum, count))) in years.iter().enumerate() {
            chart
                .points
                .push((f64::from(year), sum / f64::from(count.max(1))));
            let label = if j == labelled && n > 1 {
                name.clone()
            } else {
                String::new()
            };
            chart.point_labels.push(label);
        }
        names.push(name);
    }
    if n == 1 {
        chart.curve = chart.points.clone();
    }
    let replicated = match replicates.len() {
        1 => String::new(),
        r => format!("mean of {r} replicates; "),
    };
    let mut subtitle = format!("{replicated}{}", names.join(", "));
    if subtitle.chars().count() > SUBTITLE_CHARS {
        subtitle = subtitle
            .chars()
            .take(SUBTITLE_CHARS - 3)
            .collect::<String>()
            + "...";
    }
    chart.subtitle = subtitle;
    geofield_io::write_xy_chart_png(path, &chart)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn row(year: u32, replicate: u32, species: &str, method: &str, recruits: u64) -> CountsRow {
        CountsRow {
            year,
            replicate,
            species: species.into(),
            seeds: 10 * recruits,
            seedlings: recruits,
            saplings: 1,
            adults: 2,
            recruits,
            basal_area_m2_per_ha: 0.5,
            method: method.into(),
        }
    }

    #[test]
    fn draws_species_methods_and_replicates() {
        let mut rows = Vec::new();
        for method in ["exact", "multires"] {
            for rep in 0..3 {
                for year in 0..=20 {
                    for (s, name) in ["ABLA", "PICO", "Picea engelmannii"].iter().enumerate() {
                        rows.push(row(
                            year,
                            rep,
                            name,
                            method,
                            u64::from(year * (s as u32 + 1) + rep),
                        ));
                    }
                }
            }
        }
        let dir = tempfile::tempdir().unwrap();
        for what in COLUMNS.map(|c| c.0) {
            let path = dir.path().join(format!("{what}.png"));
            write_counts_png(&path, &rows, what).unwrap();
            let bytes = std::fs::read(&path).unwrap();
            assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
            assert!(bytes.len() > 1000);
        }
        // One series, one replicate; degenerate values.
        let one: Vec<CountsRow> = (0..3).map(|y| row(y, 0, "ABLA", "exact", 0)).collect();
        let path = dir.path().join("one.png");
        write_counts_png(&path, &one, "recruits").unwrap();
        assert!(write_counts_png(&path, &[], "recruits").is_err());
        let err = write_counts_png(&path, &one, "height")
            .unwrap_err()
            .to_string();
        assert!(err.contains("recruits, seeds"), "{err}");
    }
}
