//! Evaluation of built systems at nodes: a grid (on the backend) or arbitrary points (on the
//! CPU).

use std::ops::Range;

use geofield_core::GridSpec;

use super::cuda;
use super::params::{KrigeOptions, Precision};
use super::samples::SampleSet;
use super::systems::{Group, GroupReport};
use super::{Backend, Prediction};
use crate::{Cancel, GeofieldError};

/// Nodes evaluated between two progress reports and cancellation checks on the CPU.
const BAND_NODES: usize = 65_536;

/// Kriging at world points (`px`, `py`) with systems already built by [`build`](super::systems::build). The kernels
/// take grids: points are evaluated on the CPU (said in [`Prediction::evaluated`]), in bands of
/// [`BAND_NODES`]; `progress` gets the fraction done; [`GeofieldError::Cancelled`] soon after
/// `cancel` is set.
#[allow(clippy::too_many_arguments)]
pub fn eval_points(
    backend: &Backend,
    set: &SampleSet,
    groups: &[Group],
    reports: Vec<GroupReport>,
    px: &[f64],
    py: &[f64],
    variance: bool,
    progress: Option<&(dyn Fn(f64) + Sync)>,
    cancel: &Cancel,
) -> Result<Prediction, GeofieldError> {
    if px.len() != py.len() {
        return Err(GeofieldError::Invalid(
            "the x and y coordinates of the points differ in length".into(),
        ));
    }
    let hc = set.surfaces.len();
    let mut values = vec![vec![]; hc];
    let mut var = variance.then(|| vec![vec![]; hc]);
    let total_work = (groups.len() * px.len()).max(1);
    let mut done = 0usize;
    for g in groups {
        let f = g.system.frame();
        let (nx, ny): (Vec<f64>, Vec<f64>) =
            px.iter().zip(py).map(|(&x, &y)| f.apply(x, y)).unzip();
        let mut p: Vec<Vec<f64>> = vec![Vec::with_capacity(nx.len()); g.surfaces.len()];
        let mut v = variance.then(|| Vec::with_capacity(nx.len()));
        for (bx, by) in nx.chunks(BAND_NODES).zip(ny.chunks(BAND_NODES)) {
            let (bp, bv) = g.system.eval_nodes_until(bx, by, variance, cancel)?;
            for (dst, src) in p.iter_mut().zip(bp) {
                dst.extend_from_slice(&src);
            }
            if let (Some(v), Some(bv)) = (v.as_mut(), bv) {
                v.extend_from_slice(&bv);
            }
            done += bx.len();
            if let Some(f) = progress {
                f(done as f64 / total_work as f64);
            }
        }
        for (k, &h) in g.surfaces.iter().enumerate() {
            values[h] = std::mem::take(&mut p[k]);
            if let (Some(var), Some(v)) = (var.as_mut(), v.as_ref()) {
                var[h] = v.clone();
            }
        }
    }
    Ok(Prediction {
        values,
        variance: var,
        groups: reports,
        evaluated: match backend {
            Backend::Cpu => "cpu f64".into(),
            Backend::Cuda(_) => "cpu f64 (points are evaluated on the CPU)".into(),
        },
        device_seconds: None,
    })
}

fn evaluated(backend: &Backend, precision: Precision) -> String {
    match (backend, precision) {
        (Backend::Cpu, _) => "cpu f64".into(),
        (Backend::Cuda(_), Precision::F32) => "cuda f32".into(),
        (Backend::Cuda(_), Precision::F64) => "cuda f64".into(),
    }
}

/// Kriging at every cell centre of `grid` (row 0 north) with systems already built by
/// [`build`](super::systems::build). Rows are processed in bands, so the memory is the output plus O(band × n)
/// scratch. `progress` gets the fraction done.
#[allow(clippy::too_many_arguments)]
pub fn krige_grid_with(
    backend: &Backend,
    set: &SampleSet,
    groups: &[Group],
    reports: Vec<GroupReport>,
    opts: &KrigeOptions,
    grid: &GridSpec,
    variance: bool,
    progress: Option<&(dyn Fn(f64) + Sync)>,
) -> Result<Prediction, GeofieldError> {
    krige_grid_until(
        backend,
        set,
        groups,
        reports,
        opts,
        grid,
        0..grid.rows,
        variance,
        progress,
        &Cancel::new(),
    )
}

/// [`krige_grid_with`] on the grid's rows `window` only (row 0 north; the values are row-major
/// over the window's rows, each the whole grid's value bit for bit), returning
/// [`GeofieldError::Cancelled`] soon after `cancel` is set (between groups, and inside a band
/// between tiles of nodes; a GPU launch runs to its end).
#[allow(clippy::too_many_arguments)]
pub(crate) fn krige_grid_until(
    backend: &Backend,
    set: &SampleSet,
    groups: &[Group],
    reports: Vec<GroupReport>,
    opts: &KrigeOptions,
    grid: &GridSpec,
    window: Range<usize>,
    variance: bool,
    progress: Option<&(dyn Fn(f64) + Sync)>,
    cancel: &Cancel,
) -> Result<Prediction, GeofieldError> {
    if window.start > window.end || window.end > grid.rows {
        return Err(GeofieldError::Invalid(format!(
            "rows {}..{} are not rows of a grid of {} rows",
            window.start, window.end, grid.rows
        )));
    }
    let (rows, cols) = (window.len(), grid.cols);
    let cells = rows
        .checked_mul(cols)
        .ok_or_else(|| GeofieldError::Invalid("the grid has too many cells".into()))?;
    let hc = set.surfaces.len();
    let mut values = vec![vec![]; hc];
    let mut var = variance.then(|| vec![vec![]; hc]);
    let total_work = groups.len() * rows;
    let mut done = 0usize;
    let mut device_seconds = None;
    if let Some(f) = progress {
        f(0.0);
    }
    for g in groups {
        cancel.check()?;
        let map = g.system.frame().node_grid(grid).window(window.clone());
        let (mut p, mut v) = if let Backend::Cuda(gpu) = backend {
            let (p, v, s) = cuda::eval_grid(gpu, &g.system, &map, variance, opts.precision)?;
            *device_seconds.get_or_insert(0.0) += s;
            done += rows;
            if let Some(f) = progress {
                f(done as f64 / total_work.max(1) as f64);
            }
            (p, v)
        } else {
            let mut p: Vec<Vec<f64>> = vec![Vec::with_capacity(cells); g.surfaces.len()];
            let mut v = variance.then(|| Vec::with_capacity(cells));
            let band = (BAND_NODES / cols.max(1)).clamp(1, rows.max(1));
            let mut r0 = 0;
            while r0 < rows {
                let r1 = (r0 + band).min(rows);
                let mut nx = Vec::with_capacity((r1 - r0) * cols);
                let mut ny = Vec::with_capacity((r1 - r0) * cols);
                for r in r0..r1 {
                    for c in 0..cols {
                        let (x, y) = map.node(r, c);
                        nx.push(x);
                        ny.push(y);
                    }
                }
                let (bp, bv) = g.system.eval_nodes_until(&nx, &ny, variance, cancel)?;
                for (dst, src) in p.iter_mut().zip(bp) {
                    dst.extend_from_slice(&src);
                }
                if let (Some(v), Some(bv)) = (v.as_mut(), bv) {
                    v.extend_from_slice(&bv);
                }
                done += r1 - r0;
                if let Some(f) = progress {
                    f(done as f64 / total_work.max(1) as f64);
                }
                r0 = r1;
            }
            (p, v)
        };
        for (k, &h) in g.surfaces.iter().enumerate() {
            values[h] = std::mem::take(&mut p[k]);
            if let (Some(var), Some(v)) = (var.as_mut(), v.as_mut()) {
                var[h] = if k + 1 == g.surfaces.len() {
                    std::mem::take(v)
                } else {
                    v.clone()
                };
            }
        }
    }
    Ok(Prediction {
        values,
        variance: var,
        groups: reports,
        evaluated: evaluated(backend, opts.precision),
        device_seconds,
    })
}
