//! The kriging capability's files (feature `io`).
//!
//! Reading sample sets: a CSV with coordinate columns and one or more value columns (names
//! matched ignoring case). Coordinates must be finite; a value cell that is empty or `NA` is
//! missing (NaN), any other must be a finite number ([`read_samples`]; [`read_variable`] for
//! one column that must be complete). An `id` column, when present, labels the samples. Every
//! error names the file, the line and the column.
//!
//! Writing: the cross-validation CSV, maps with the samples marked, the stratigraphic section,
//! the voxel model and the variogram chart (see the functions re-exported from `write`).

use std::path::Path;

use super::{SampleSet, Surface};
use crate::input_error::InputError;

mod sim_nc;
mod volume;
mod write;

pub use sim_nc::write_simulations_nc;
pub use volume::{
    VolumeMeta, read_points3, read_samples3, write_points3_csv, write_volume_nc, write_volume_vti,
};

pub use write::{write_cv, write_map, write_section, write_variogram_png, write_voxels};

/// The samples of `path`: columns `x` and `y` for the coordinates, `values` for the surfaces.
pub fn read_samples(
    path: &Path,
    x: &str,
    y: &str,
    values: &[String],
) -> Result<SampleSet, InputError> {
    let mut t = geofield_io::CsvTable::read(path)?;
    let (cx, cy) = (t.column(x)?, t.column(y)?);
    let cols: Vec<usize> = values
        .iter()
        .map(|v| t.column(v))
        .collect::<Result<_, _>>()?;
    let mut set = SampleSet {
        surfaces: values
            .iter()
            .map(|v| Surface {
                name: v.clone(),
                values: vec![],
            })
            .collect(),
        source: Some(path.display().to_string()),
        ..SampleSet::default()
    };
    let id = t.column("id").ok();
    let mut rec = geofield_io::CsvRecord::default();
    while t.next_record(&mut rec)? {
        let row = t.row(&rec);
        if let Some(c) = id {
            set.labels.push(row.str(c)?.to_string());
        }
        set.xs.push(row.finite_f64(cx)?);
        set.ys.push(row.finite_f64(cy)?);
        set.lines.push(row.line());
        for (s, &c) in set.surfaces.iter_mut().zip(&cols) {
            let text = row.str(c)?;
            let v = if text.is_empty() || text.eq_ignore_ascii_case("na") {
                f64::NAN
            } else {
                row.finite_f64(c)?
            };
            s.values.push(v);
        }
    }
    let invalid = |reason: String| InputError::Invalid {
        path: path.to_path_buf(),
        reason,
    };
    if set.is_empty() {
        return Err(invalid("no samples (only a header?)".into()));
    }
    for s in &set.surfaces {
        if s.values.iter().all(|v| v.is_nan()) {
            return Err(invalid(format!("column {} has no value", s.name)));
        }
    }
    Ok(set)
}

/// One variable of `path` (columns `x`, `y` and `column`, every cell a finite number, as the
/// empirical variogram needs), as a sample set of one surface named `column`.
pub fn read_variable(path: &Path, x: &str, y: &str, column: &str) -> Result<SampleSet, InputError> {
    let mut t = geofield_io::CsvTable::read(path)?;
    let (cx, cy, cv) = (t.column(x)?, t.column(y)?, t.column(column)?);
    let mut set = SampleSet {
        surfaces: vec![Surface {
            name: column.to_string(),
            values: vec![],
        }],
        source: Some(path.display().to_string()),
        ..SampleSet::default()
    };
    let mut rec = geofield_io::CsvRecord::default();
    while t.next_record(&mut rec)? {
        let row = t.row(&rec);
        set.xs.push(row.finite_f64(cx)?);
        set.ys.push(row.finite_f64(cy)?);
        set.lines.push(row.line());
        set.surfaces[0].values.push(row.finite_f64(cv)?);
    }
    Ok(set)
}
