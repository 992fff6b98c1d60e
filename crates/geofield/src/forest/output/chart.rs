//! A chart of one column of the counts table over the years (recruits: the seed paper's
//! Fig. 13), drawn by geofield-io's [`write_xy_chart_series_png`].
//!
//! One line per species, and per method when the rows hold several (`--compare`); each point is
//! the mean over the replicates of that year (the subtitle says over how many). A species has
//! one colour for all methods (geofield-io's [`blend_hue`] of its index in the rows' order,
//! which is the species order of the run, as in the stand GIF); the first method's lines are
//! solid and the second's dashed (a third solid again, and so on; the subtitle names them).
//! Each year is marked by a square on the line, unless a series has more than
//! [`MAX_MARKED_YEARS`] years, where markers would fill in the dashes. A legend names each line
//! by its species, or "species (method)" for several methods.
//!
//! [`write_xy_chart_series_png`]: geofield_io::render::write_xy_chart_series_png
//! [`blend_hue`]: geofield_io::render::blend_hue

use std::collections::BTreeMap;
use std::path::Path;

use geofield_io::render::{ChartSeries, LineStyle, blend_hue, write_xy_chart_series_png};
use geofield_io::{IoError, XyChart};

use super::counts::CountsRow;

/// Series with more years than this are drawn without markers.
pub const MAX_MARKED_YEARS: usize = 50;

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

/// Per year, the sum over replicates and their number.
type Sums = BTreeMap<u32, (f64, u32)>;

/// Draw column `what` of `rows` over the years as a PNG, atomically: `what` is one of
/// `recruits`, `seeds`, `seedlings`, `saplings`, `adults`, `basal_area_m2_ha` (the CSV's
/// column names). One line per species (and per method when there are several), the mean
/// over replicates, with a legend; see the module docs for how lines are told apart.
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
    let (chart, series) = counts_chart(rows, what).map_err(|reason| IoError::InvalidOutput {
        path: path.to_path_buf(),
        reason,
    })?;
    write_xy_chart_series_png(path, &chart, &series)
}

/// The chart and its series for [`write_counts_png`], or why there is none.
fn counts_chart(rows: &[CountsRow], what: &str) -> Result<(XyChart, Vec<ChartSeries>), String> {
    let Some(&(_, title, y_label)) = COLUMNS.iter().find(|c| c.0 == what) else {
        let names: Vec<&str> = COLUMNS.iter().map(|c| c.0).collect();
        return Err(format!(
            "no column {what:?} to draw; use one of {}",
            names.join(", ")
        ));
    };
    if rows.is_empty() {
        return Err("no rows to draw".into());
    }
    // Species, methods and replicates in order of first appearance; sums per (species, method),
    // so that the legend lists a species' methods together.
    let mut species: Vec<&str> = Vec::new();
    let mut methods: Vec<&str> = Vec::new();
    let mut replicates: Vec<u32> = Vec::new();
    let mut sums: BTreeMap<(usize, usize), Sums> = BTreeMap::new();
    for r in rows {
        let s = position_or_push(&mut species, &r.species);
        let m = position_or_push(&mut methods, &r.method);
        if !replicates.contains(&r.replicate) {
            replicates.push(r.replicate);
        }
        let slot = sums
            .entry((s, m))
            .or_default()
            .entry(r.year)
            .or_insert((0.0, 0));
        slot.0 += value(r, what);
        slot.1 += 1;
    }
    let several = methods.len() > 1;
    let series = sums
        .iter()
        .map(|(&(s, m), years)| {
            let label = if several {
                format!("{} ({})", species[s], methods[m])
            } else {
                species[s].to_string()
            };
            let points = years
                .iter()
                .map(|(&year, &(sum, n))| (f64::from(year), sum / f64::from(n.max(1))))
                .collect();
            ChartSeries {
                line: if m % 2 == 0 {
                    LineStyle::Solid
                } else {
                    LineStyle::Dashed
                },
                markers: years.len() <= MAX_MARKED_YEARS,
                ..ChartSeries::new(label, blend_hue(s), points)
            }
        })
        .collect();
    let mut subtitle = match replicates.len() {
        1 => "one replicate".to_string(),
        r => format!("mean over {r} replicates"),
    };
    if several {
        let styled: Vec<String> = methods
            .iter()
            .enumerate()
            .map(|(m, name)| {
                let style = if m % 2 == 0 { "solid" } else { "dashed" };
                format!("{style}: {name}")
            })
            .collect();
        subtitle = format!("{subtitle}; {}", styled.join(", "));
    }
    if subtitle.chars().count() > SUBTITLE_CHARS {
        subtitle = subtitle
            .chars()
            .take(SUBTITLE_CHARS - 3)
            .collect::<String>()
            + "...";
    }
    let chart = XyChart {
        title: if several {
            format!("{title} by species and method")
        } else {
            format!("{title} by species")
        },
        x_label: "year".into(),
        y_label: y_label.into(),
        subtitle,
        ..XyChart::default()
    };
    Ok((chart, series))
}

/// The index of `name` in `list`, appending it when absent.
fn position_or_push<'a>(list: &mut Vec<&'a str>, name: &'a str) -> usize {
    match list.iter().position(|n| *n == name) {
        Some(i) => i,
        None => {
            list.push(name);
            list.len() - 1
        }
    }
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
        // One line per (species, method): the species' colour, the second method dashed, the
        // mean over the three replicates (recruits = year x (s + 1) + replicate).
        let (chart, series) = counts_chart(&rows, "recruits").unwrap();
        assert_eq!(series.len(), 6);
        let labels: Vec<&str> = series.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "ABLA (exact)",
                "ABLA (multires)",
                "PICO (exact)",
                "PICO (multires)",
                "Picea engelmannii (exact)",
                "Picea engelmannii (multires)",
            ]
        );
        for (k, s) in series.iter().enumerate() {
            let species = k / 2;
            assert_eq!(s.colour, blend_hue(species));
            let dashed = if k % 2 == 0 {
                LineStyle::Solid
            } else {
                LineStyle::Dashed
            };
            assert_eq!(s.line, dashed);
            assert!(s.markers);
            assert_eq!(s.points.len(), 21);
            assert_eq!(s.points[5], (5.0, 5.0 * (species as f64 + 1.0) + 1.0));
        }
        assert_eq!(chart.title, "recruits per year by species and method");
        assert_eq!(
            chart.subtitle,
            "mean over 3 replicates; solid: exact, dashed: multires"
        );
        assert!(chart.points.is_empty() && chart.curve.is_empty());
        // One method: species names alone, solid lines.
        let exact: Vec<CountsRow> = rows
            .iter()
            .filter(|r| r.method == "exact")
            .cloned()
            .collect();
        let (chart, series) = counts_chart(&exact, "basal_area_m2_ha").unwrap();
        assert_eq!(series[2].label, "Picea engelmannii");
        assert!(series.iter().all(|s| s.line == LineStyle::Solid));
        assert_eq!(chart.subtitle, "mean over 3 replicates");
        // One series, one replicate; degenerate values.
        let one: Vec<CountsRow> = (0..3).map(|y| row(y, 0, "ABLA", "exact", 0)).collect();
        let path = dir.path().join("one.png");
        write_counts_png(&path, &one, "recruits").unwrap();
        assert_eq!(
            counts_chart(&one, "recruits").unwrap().0.subtitle,
            "one replicate"
        );
        assert!(write_counts_png(&path, &[], "recruits").is_err());
        let err = write_counts_png(&path, &one, "height")
            .unwrap_err()
            .to_string();
        assert!(err.contains("recruits, seeds"), "{err}");
        // Long runs: no markers.
        let long: Vec<CountsRow> = (0..=200).map(|y| row(y, 0, "ABLA", "exact", 1)).collect();
        let (_, series) = counts_chart(&long, "recruits").unwrap();
        assert!(!series[0].markers);
        if let Ok(out) = std::env::var("GEOFIELD_CHART_PNG") {
            write_counts_png(Path::new(&out), &rows, "recruits").unwrap();
        }
    }
}
