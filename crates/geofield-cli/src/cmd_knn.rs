//! `geofield knn`: exact k nearest neighbours of query points among a point set.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use geofield::neighbors::{self, IndexKind, KnnQuery};
use geofield::{BackendChoice, backend};
use geofield_io::{CsvTable, NpyData};

use crate::output;

#[derive(Clone, Copy, ValueEnum)]
pub enum IndexArg {
    Brute,
    Uniform,
    Dynamic,
    Auto,
}

#[derive(Args)]
pub struct KnnArgs {
    /// Points: CSV with x,y[,z] columns, or .npy of shape (n, 2) or (n, 3), f32 or f64.
    #[arg(long)]
    pub points: PathBuf,
    /// Number of neighbours, 1 to 64.
    #[arg(long)]
    pub k: usize,
    /// Query points (same format); default: the points themselves, each excluding itself.
    #[arg(long)]
    pub queries: Option<PathBuf>,
    /// Only neighbours within this distance (same units as the coordinates).
    #[arg(long)]
    pub radius: Option<f64>,
    /// Search structure. auto: brute force up to 256 points; else on the CPU the uniform grid
    /// for evenly spread points and the dynamic grid for clustered ones, on CUDA the uniform grid.
    #[arg(long, value_enum, default_value = "auto")]
    pub index: IndexArg,
    /// Uniform grid cell size (default: from the point density).
    #[arg(long)]
    pub cell_size: Option<f64>,
    /// Neighbour indices, (queries x k) int64, -1 where fewer than k exist.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Neighbour distances, (queries x k) f64, NaN where absent.
    #[arg(long)]
    pub distances: Option<PathBuf>,
    /// auto | cpu | cuda | cuda:N (env GEOFIELD_BACKEND). On CUDA both grids are built on the
    /// device; `auto` there is brute force up to 256 points, else the uniform grid.
    #[arg(long, env = "GEOFIELD_BACKEND", default_value = "auto")]
    pub backend: String,
}

/// Coordinates as read: the search runs in this precision.
enum Coords {
    F32(Vec<f32>, usize),
    F64(Vec<f64>, usize),
}

impl Coords {
    fn dim(&self) -> usize {
        match self {
            Coords::F32(_, d) | Coords::F64(_, d) => *d,
        }
    }
    fn len(&self) -> usize {
        match self {
            Coords::F32(v, d) => v.len() / d,
            Coords::F64(v, d) => v.len() / d,
        }
    }
}

fn read_points(path: &Path) -> Result<Coords> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    match ext.as_str() {
        "npy" => {
            let a = geofield_io::read_npy(path)?;
            if a.shape.len() != 2 || !(a.shape[1] == 2 || a.shape[1] == 3) {
                bail!(
                    "{}: expected an array of shape (n, 2) or (n, 3), got {:?}",
                    path.display(),
                    a.shape
                );
            }
            let dim = a.shape[1];
            match a.data {
                NpyData::F32(v) => Ok(Coords::F32(v, dim)),
                NpyData::F64(v) => Ok(Coords::F64(v, dim)),
                _ => bail!(
                    "{}: expected float32 or float64 coordinates",
                    path.display()
                ),
            }
        }
        "csv" => {
            let mut t = CsvTable::read(path)?;
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
            Ok(Coords::F64(v, dim))
        }
        other => bail!(
            "{}: unsupported points format {other:?}: use .csv or .npy",
            path.display()
        ),
    }
}

pub fn run(a: &KnnArgs) -> Result<()> {
    for p in [&a.out, &a.distances].into_iter().flatten() {
        output::preflight(p, false)?;
    }
    let points = read_points(&a.points)?;
    let queries = a.queries.as_deref().map(read_points).transpose()?;
    if let Some(q) = &queries
        && q.dim() != points.dim()
    {
        bail!(
            "queries have {} coordinates per point but points have {}",
            q.dim(),
            points.dim()
        );
    }
    let query = KnnQuery {
        k: a.k,
        radius: a.radius,
        exclude_self: queries.is_none(),
    };
    let index = match a.index {
        IndexArg::Brute => IndexKind::Brute,
        IndexArg::Uniform => IndexKind::Uniform {
            cell_size: a.cell_size,
        },
        IndexArg::Dynamic => IndexKind::Dynamic { max_per_leaf: 32 },
        IndexArg::Auto => IndexKind::Auto,
    };
    let choice: BackendChoice = a.backend.parse().map_err(anyhow::Error::msg)?;
    let sel = backend::select(choice)?;
    if let Some(r) = &sel.fallback_reason {
        eprintln!("note: using the CPU backend: {r}");
    }
    let be = sel.backend;
    let start = Instant::now();
    let dim = points.dim();
    let result = match (&points, &queries) {
        (Coords::F64(p, _), None) => neighbors::knn_on(&be, p, None, dim, &query, index),
        (Coords::F32(p, _), None) => neighbors::knn_on(&be, p, None, dim, &query, index),
        (Coords::F64(p, _), Some(Coords::F64(q, _))) => {
            neighbors::knn_on(&be, p, Some(q), dim, &query, index)
        }
        (Coords::F32(p, _), Some(Coords::F32(q, _))) => {
            neighbors::knn_on(&be, p, Some(q), dim, &query, index)
        }
        _ => bail!("points and queries must have the same dtype (both f32 or both f64)"),
    }
    .with_context(|| format!("k nearest neighbours of {}", a.points.display()))?;
    let secs = start.elapsed().as_secs_f64();
    let nq = queries.as_ref().map_or(points.len(), Coords::len);
    println!(
        "{} queries x k = {} among {} points ({}-D) on {}: {:.3} s, {:.3e} queries/s",
        nq,
        a.k,
        points.len(),
        dim,
        be.label(),
        secs,
        nq as f64 / secs.max(1e-12)
    );
    let shape = [nq, a.k];
    if let Some(p) = &a.out {
        geofield_io::write_npy_i64(p, &shape, &result.indices)?;
    }
    if let Some(p) = &a.distances {
        let d: Vec<f64> = result.dist2.iter().map(|&d2| d2.sqrt()).collect();
        geofield_io::write_npy_f64(p, &shape, &d)?;
    }
    Ok(())
}
