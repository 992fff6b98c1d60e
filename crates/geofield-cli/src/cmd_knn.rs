//! `geofield knn`: exact k nearest neighbours of query points among a point set.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use geofield::neighbors::ball::{self, K_MAX_SPACE, Metric, Space};
use geofield::neighbors::io::{
    Points as Coords, read_points, write_distance_rows, write_index_rows,
};
use geofield::neighbors::{self, IndexKind, KnnParams};

use crate::ctx::{Ctx, Global};
use crate::outputs::{Kind, Outputs};

#[derive(Clone, Copy, ValueEnum)]
pub enum IndexArg {
    Brute,
    Uniform,
    Dynamic,
    Auto,
}

#[derive(Clone, Copy, PartialEq, ValueEnum)]
pub enum MetricArg {
    /// √Σδ² (scipy p = 2).
    Euclidean,
    /// Σ|δ| (scipy p = 1).
    Manhattan,
    /// max |δ| (scipy p = inf).
    Chebyshev,
}

#[derive(Args)]
pub struct KnnArgs {
    /// Points: CSV with x,y[,z] columns, or .npy of shape (n, 2) or (n, 3), f32 or f64.
    #[arg(long)]
    pub points: PathBuf,
    /// Number of neighbours: 1 to 64 for Euclidean distance on open axes, up to 65536 otherwise
    /// (and above 64).
    #[arg(long)]
    pub k: usize,
    /// Distance: euclidean, manhattan or chebyshev (scipy's Minkowski p = 2, 1, inf).
    #[arg(long, value_enum, default_value = "euclidean")]
    pub metric: MetricArg,
    /// A periodic box (scipy's boxsize): its length per axis, comma-separated (one value for
    /// every axis; 0: an open axis). Points must lie in [0, L); queries are wrapped into it.
    #[arg(long, value_delimiter = ',')]
    pub boxsize: Option<Vec<f64>>,
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
    /// Uniform grid cell size (with --index uniform; default: from the point density).
    #[arg(long)]
    pub cell_size: Option<f64>,
    /// Neighbour indices, (queries x k) int64, -1 where fewer than k exist.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Neighbour distances, (queries x k) f64, NaN where absent. At least one of --out and
    /// --distances is needed. (On CUDA both grids are built on the device.)
    #[arg(long)]
    pub distances: Option<PathBuf>,
}

#[derive(serde::Serialize)]
struct Summary {
    command: &'static str,
    version: &'static str,
    points: String,
    queries: Option<String>,
    point_count: usize,
    query_count: usize,
    dimensions: usize,
    k: usize,
    radius: Option<f64>,
    metric: String,
    boxsize: Option<Vec<f64>>,
    backend: String,
    device: String,
    seconds: f64,
    outputs: Vec<String>,
}

pub fn run(a: &KnnArgs, ctx: &Ctx) -> Result<()> {
    ctx.refuse_unused(&[Global::Crs, Global::Compress])?;
    if a.out.is_none() && a.distances.is_none() {
        bail!("nothing to write: give --out (indices) and/or --distances");
    }
    if a.cell_size.is_some() && !matches!(a.index, IndexArg::Uniform) {
        bail!("--cell-size applies to --index uniform only");
    }
    let mut outs = Outputs::new();
    outs.input("--points", &a.points);
    if let Some(q) = &a.queries {
        outs.input("--queries", q);
    }
    outs.plan_opt("--out", a.out.as_deref(), Kind::File)?;
    outs.plan_opt("--distances", a.distances.as_deref(), Kind::File)?;
    outs.plan_opt("--json", ctx.json(), Kind::File)?;
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
    let dim = points.dim();
    let metric = match a.metric {
        MetricArg::Euclidean => Metric::Euclidean,
        MetricArg::Manhattan => Metric::Manhattan,
        MetricArg::Chebyshev => Metric::Chebyshev,
    };
    let boxsize = a.boxsize.as_ref().map(|b| {
        if b.len() == 1 {
            vec![b[0]; dim]
        } else {
            b.clone()
        }
    });
    // Euclidean open space with k ≤ 64 has the dedicated grids; anything else the growing
    // radius search of the radius queries.
    let in_space = metric != Metric::Euclidean || boxsize.is_some() || a.k > neighbors::K_MAX;
    if in_space && !matches!(a.index, IndexArg::Auto) {
        bail!(
            "--index applies to Euclidean distance on open axes with k <= {} (this search uses \
             its own cell list)",
            neighbors::K_MAX
        );
    }
    if a.k == 0 || a.k > K_MAX_SPACE {
        bail!("--k {} is out of range 1..={K_MAX_SPACE}", a.k);
    }
    let index = match a.index {
        IndexArg::Brute => IndexKind::Brute,
        IndexArg::Uniform => IndexKind::Uniform {
            cell_size: a.cell_size,
        },
        IndexArg::Dynamic => IndexKind::Dynamic { max_per_leaf: 32 },
        IndexArg::Auto => IndexKind::Auto,
    };
    let params = KnnParams {
        k: a.k,
        radius: a.radius,
        exclude_self: queries.is_none(),
        index,
    };
    let space = Space { metric, boxsize };
    let be = ctx.open_backend()?.backend;
    let start = Instant::now();
    let (indices, dist) = match (&points, &queries) {
        (Coords::F64(p, _), q) => {
            let q = match q {
                None => None,
                Some(Coords::F64(q, _)) => Some(&q[..]),
                Some(_) => {
                    bail!("points and queries must have the same dtype (both f32 or both f64)")
                }
            };
            search(&be, p, q, dim, &params, &space, in_space)
        }
        (Coords::F32(p, _), q) => {
            let q = match q {
                None => None,
                Some(Coords::F32(q, _)) => Some(&q[..]),
                Some(_) => {
                    bail!("points and queries must have the same dtype (both f32 or both f64)")
                }
            };
            search(&be, p, q, dim, &params, &space, in_space)
        }
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
    let mut written = Vec::new();
    if let Some(p) = &a.out {
        written.push(outs.write_one(p, |s| Ok(write_index_rows(s, a.k, &indices)?))?);
    }
    if let Some(p) = &a.distances {
        written.push(outs.write_one(p, |s| Ok(write_distance_rows(s, a.k, &dist)?))?);
    }
    if let Some(p) = ctx.json() {
        let summary = Summary {
            command: "knn",
            version: env!("CARGO_PKG_VERSION"),
            points: a.points.display().to_string(),
            queries: a.queries.as_ref().map(|q| q.display().to_string()),
            point_count: points.len(),
            query_count: nq,
            dimensions: dim,
            k: a.k,
            radius: a.radius,
            metric: format!("{metric:?}").to_lowercase(),
            boxsize: space.boxsize.clone(),
            backend: be.label(),
            device: be.device_name(),
            seconds: secs,
            outputs: written.iter().map(|p| p.display().to_string()).collect(),
        };
        written.push(outs.write_json(p, &summary)?);
    }
    outs.commit()?;
    println!("wrote {}", crate::output::joined(&written));
    Ok(())
}

/// The rows of the search: indices (−1 where fewer than k) and distances (NaN there).
fn search<T: neighbors::Coord>(
    be: &geofield::Backend,
    p: &[T],
    q: Option<&[T]>,
    dim: usize,
    params: &KnnParams,
    space: &Space,
    in_space: bool,
) -> Result<(Vec<i64>, Vec<f64>), geofield::GeofieldError> {
    if in_space {
        let nb = ball::knn_in(
            be,
            p,
            q,
            dim,
            params.k,
            space,
            params.exclude_self,
            params.radius,
            -1,
        )?;
        let d = nb
            .indices
            .iter()
            .zip(nb.dist)
            .map(|(&i, d)| if i < 0 { f64::NAN } else { d })
            .collect();
        Ok((nb.indices, d))
    } else {
        let nb = neighbors::knn(be, p, q, dim, params)?;
        let d = nb.dist2.iter().map(|&d2| d2.sqrt()).collect();
        Ok((nb.indices, d))
    }
}
