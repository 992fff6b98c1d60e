//! Point sets and neighbour files (feature `io`). Points are read from a CSV with `x`, `y` and
//! optionally `z` columns (also `x_m`, `y_m`, `z_m`; names matched ignoring case; every value
//! finite), or an `.npy` array of shape `(n, 2)` or `(n, 3)`, float32 or float64 (kept in its
//! precision: the search runs in it). Results are written as `.npy` arrays of shape
//! `(queries, k)`: neighbour indices (int64, −1 where fewer than k exist) and distances
//! (float64, NaN where absent).

use std::path::Path;

use super::Neighbors;
use crate::input_error::InputError;

/// Coordinates as read, `dim` per point, point-major.
#[derive(Debug, Clone, PartialEq)]
pub enum Points {
    F32(Vec<f32>, usize),
    F64(Vec<f64>, usize),
}

impl Points {
    /// Coordinates per point (2 or 3).
    pub fn dim(&self) -> usize {
        match self {
            Points::F32(_, d) | Points::F64(_, d) => *d,
        }
    }
    /// Number of points.
    pub fn len(&self) -> usize {
        match self {
            Points::F32(v, d) => v.len() / d,
            Points::F64(v, d) => v.len() / d,
        }
    }
    /// True without points.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Read the points of `path` by its extension (`.csv` or `.npy`, case-insensitive).
pub fn read_points(path: &Path) -> Result<Points, InputError> {
    let invalid = |reason: String| InputError::Invalid {
        path: path.to_path_buf(),
        reason,
    };
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    match ext.as_str() {
        "npy" => {
            let a = geofield_io::read_npy(path)?;
            if a.shape.len() != 2 || !(a.shape[1] == 2 || a.shape[1] == 3) {
                return Err(invalid(format!(
                    "expected an array of shape (n, 2) or (n, 3), got {:?}",
                    a.shape
                )));
            }
            let dim = a.shape[1];
            let finite = |i: Option<usize>| match i {
                Some(i) => Err(invalid(format!(
                    "row {} (0-based), column {}: the coordinate is not finite",
                    i / dim,
                    i % dim
                ))),
                None => Ok(()),
            };
            match a.data {
                geofield_io::NpyData::F32(v) => {
                    finite(v.iter().position(|x| !x.is_finite()))?;
                    Ok(Points::F32(v, dim))
                }
                geofield_io::NpyData::F64(v) => {
                    finite(v.iter().position(|x| !x.is_finite()))?;
                    Ok(Points::F64(v, dim))
                }
                _ => Err(invalid("expected float32 or float64 coordinates".into())),
            }
        }
        "csv" => {
            let mut t = geofield_io::CsvTable::read(path)?;
            let cx = t.column_any(&["x", "x_m"])?;
            let cy = t.column_any(&["y", "y_m"])?;
            let cz = t.column_any(&["z", "z_m"]).ok();
            let dim = if cz.is_some() { 3 } else { 2 };
            let mut v = Vec::new();
            let mut rec = geofield_io::CsvRecord::default();
            while t.next_record(&mut rec)? {
                let row = t.row(&rec);
                v.push(row.finite_f64(cx)?);
                v.push(row.finite_f64(cy)?);
                if let Some(cz) = cz {
                    v.push(row.finite_f64(cz)?);
                }
            }
            Ok(Points::F64(v, dim))
        }
        other => Err(invalid(format!(
            "unsupported points format {}: use .csv or .npy",
            crate::input_error::quote(other)
        ))),
    }
}

/// Write the neighbour indices of `nb` as an int64 `.npy` of shape `(queries, k)`, −1 where
/// fewer than k neighbours exist.
pub fn write_indices(path: &Path, nb: &Neighbors) -> Result<(), InputError> {
    write_index_rows(path, nb.k, &nb.indices)
}

/// Write rows of `k` neighbour indices as an int64 `.npy` of shape `(rows, k)`.
pub fn write_index_rows(path: &Path, k: usize, indices: &[i64]) -> Result<(), InputError> {
    let rows = indices.len().checked_div(k).unwrap_or(0);
    Ok(geofield_io::write_npy_i64(path, &[rows, k], indices)?)
}

/// Write rows of `k` neighbour distances as a float64 `.npy` of shape `(rows, k)`.
pub fn write_distance_rows(path: &Path, k: usize, dist: &[f64]) -> Result<(), InputError> {
    let rows = dist.len().checked_div(k).unwrap_or(0);
    Ok(geofield_io::write_npy_f64(path, &[rows, k], dist)?)
}

/// Write the neighbour distances of `nb` (the square roots of its squared distances) as a
/// float64 `.npy` of shape `(queries, k)`, NaN where absent.
pub fn write_distances(path: &Path, nb: &Neighbors) -> Result<(), InputError> {
    let d: Vec<f64> = nb.dist2.iter().map(|&d2| d2.sqrt()).collect();
    write_distance_rows(path, nb.k, &d)
}

/// Write named columns of equal length as CSV, undefined values as `NaN` (which pandas, R and
/// QGIS read as missing).
fn write_columns_csv(path: &Path, names: &[String], cols: &[&[f64]]) -> Result<(), InputError> {
    use std::fmt::Write as _;
    let mut s = names.join(",");
    s.push('\n');
    let rows = cols.first().map_or(0, |c| c.len());
    for i in 0..rows {
        for (k, c) in cols.iter().enumerate() {
            if k > 0 {
                s.push(',');
            }
            if c[i].is_finite() {
                let _ = write!(s, "{}", c[i]);
            } else {
                s.push_str("NaN");
            }
        }
        s.push('\n');
    }
    Ok(geofield_io::write_atomic(path, |w| {
        w.write_all(s.as_bytes())
    })?)
}

/// Write Ripley's K as CSV: `r`, `theo` (πr²), then per correction asked for its K (spatstat's
/// column names `un`, `border`, `trans`, `iso`) and its L = √(K/π) (`L_un`, ...). Undefined
/// values (beyond a correction's range) are written as `NaN`.
pub fn write_k_csv(path: &Path, k: &super::ripley::KFunction) -> Result<(), InputError> {
    let cols = k.columns();
    let ls: Vec<Vec<f64>> = cols.iter().map(|(_, v)| super::ripley::l_of(v)).collect();
    let mut names = vec!["r".to_string(), "theo".to_string()];
    names.extend(cols.iter().map(|(c, _)| c.name().to_string()));
    names.extend(cols.iter().map(|(c, _)| format!("L_{}", c.name())));
    let mut data: Vec<&[f64]> = vec![&k.r, &k.theo];
    data.extend(cols.iter().map(|(_, v)| *v));
    data.extend(ls.iter().map(Vec::as_slice));
    write_columns_csv(path, &names, &data)
}

/// Write the pair-correlation function as CSV: `r`, `theo` (1), then g per correction asked for
/// (spatstat's column names `un`, `trans`, `iso`); undefined values as `NaN`.
pub fn write_g_csv(path: &Path, g: &super::pcf::PairCorrelation) -> Result<(), InputError> {
    let cols = g.columns();
    let mut names = vec!["r".to_string(), "theo".to_string()];
    names.extend(cols.iter().map(|(c, _)| c.name().to_string()));
    let mut data: Vec<&[f64]> = vec![&g.r, &g.theo];
    data.extend(cols.iter().map(|(_, v)| *v));
    write_columns_csv(path, &names, &data)
}

/// Write a CSR envelope as CSV: `r`, `obs`, `theo`, `lo`, `hi`, `mean` (undefined as `NaN`),
/// and for a global envelope `centre`, the band's reference curve (the theory or the mean of
/// the separate simulations; `lo` and `hi` are `NaN` outside its interval).
pub fn write_envelope_csv(path: &Path, e: &super::envelope::Envelope) -> Result<(), InputError> {
    let mut names: Vec<String> = ["r", "obs", "theo", "lo", "hi", "mean"]
        .map(String::from)
        .to_vec();
    let mut data: Vec<&[f64]> = vec![&e.r, &e.obs, &e.theo, &e.lo, &e.hi, &e.mean];
    if let Some(g) = &e.global {
        names.push("centre".into());
        data.push(&g.centre);
    }
    write_columns_csv(path, &names, &data)
}

/// Draw L(r) = √(K(r)/π) of each correction asked for against r, with the value under
/// complete spatial randomness (L = r, dashed), as a PNG chart: above the line, clustering at
/// that scale; below it, regularity.
///
/// With an `envelope` of L, its lower and upper curves are drawn too (grey): where the observed
/// L leaves the band, the pattern departs from randomness at the envelope's level (pointwise at
/// one r chosen beforehand, or anywhere in its interval for a global envelope).
pub fn write_l_png(
    path: &Path,
    k: &super::ripley::KFunction,
    title: &str,
    envelope: Option<&super::envelope::Envelope>,
) -> Result<(), InputError> {
    use geofield_io::render::{ChartSeries, LineStyle, blend_hue, write_xy_chart_series_png};
    let mut series: Vec<ChartSeries> = k
        .columns()
        .iter()
        .enumerate()
        .map(|(i, (c, v))| {
            let l = super::ripley::l_of(v);
            ChartSeries {
                markers: false,
                ..ChartSeries::new(
                    format!("L {}", c.name()),
                    blend_hue(i),
                    k.r.iter().copied().zip(l).collect(),
                )
            }
        })
        .collect();
    series.push(ChartSeries {
        line: LineStyle::Dashed,
        markers: false,
        ..ChartSeries::new(
            "random (L = r)",
            [90, 90, 90],
            k.r.iter().map(|&r| (r, r)).collect(),
        )
    });
    if let Some(e) = envelope.filter(|e| e.summary == super::envelope::Summary::L) {
        let kind = if e.global.is_some() { "global " } else { "" };
        for (name, v) in [("lower", &e.lo), ("upper", &e.hi)] {
            series.push(ChartSeries {
                markers: false,
                ..ChartSeries::new(
                    format!(
                        "{kind}CSR envelope ({name}), {} {} sims",
                        e.correction.name(),
                        e.nsim
                    ),
                    [160, 160, 160],
                    e.r.iter()
                        .zip(v.iter())
                        .filter(|(_, y)| y.is_finite())
                        .map(|(&x, &y)| (x, y))
                        .collect(),
                )
            });
        }
    }
    let chart = geofield_io::XyChart {
        title: title.into(),
        subtitle: format!(
            "{} points, intensity {:.4e} per unit area; above the dashed line: clustered",
            k.n,
            k.n as f64 / k.area
        ),
        x_label: "r".into(),
        y_label: "L(r)".into(),
        ..geofield_io::XyChart::default()
    };
    Ok(write_xy_chart_series_png(path, &chart, &series)?)
}
