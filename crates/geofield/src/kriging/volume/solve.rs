//! The 3-D kriging systems: merging of coincident samples, the global system (factored once,
//! nodes evaluated in tiles) and local systems (the k nearest samples of each node).

use faer::Mat;
use rayon::prelude::*;

use super::super::dual::{DualSystem, Fail};
use super::super::global::small::{invert_lower, lower_mul, small_cholesky};
use super::super::local::cholesky_in_place;
use super::super::params::Kind;
use super::super::space::{Covariance, eps_for};
use super::{Krige3Params, Kriged3, Samples3};
use crate::neighbors::{IndexKind, KnnParams, knn};
use crate::{Backend, GeofieldError};

/// Nodes per tile of the global evaluation (one n × TILE block of covariances per task).
const TILE: usize = 256;
/// Nodes per k-NN query batch of local kriging (bounds the neighbour lists held at once).
const QUERY_BATCH: usize = 1 << 16;

/// Samples at identical coordinates as one, their values averaged; the order of first
/// occurrence kept.
pub(super) fn merge(s: &Samples3) -> Samples3 {
    let n = s.len();
    let key = |i: usize| (s.xs[i].to_bits(), s.ys[i].to_bits(), s.zs[i].to_bits());
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| (key(i), i));
    let mut group = vec![0usize; n];
    let mut firsts: Vec<usize> = vec![];
    for (r, &i) in order.iter().enumerate() {
        if r > 0 && key(order[r - 1]) == key(i) {
            group[i] = group[order[r - 1]];
        } else {
            group[i] = i;
            firsts.push(i);
        }
    }
    firsts.sort_unstable();
    let mut sum = vec![0.0; n];
    let mut count = vec![0usize; n];
    for i in 0..n {
        sum[group[i]] += s.values[i];
        count[group[i]] += 1;
    }
    Samples3 {
        xs: firsts.iter().map(|&i| s.xs[i]).collect(),
        ys: firsts.iter().map(|&i| s.ys[i]).collect(),
        zs: firsts.iter().map(|&i| s.zs[i]).collect(),
        values: firsts.iter().map(|&i| sum[i] / count[i] as f64).collect(),
    }
}

/// Kriging space: centred on the samples' mean, mapped by the anisotropy; drift coordinates
/// divided by the largest |coordinate| of the samples.
struct Space {
    centre: [f64; 3],
    m: super::Anisotropy3,
    scale: f64,
}

impl Space {
    fn new(s: &Samples3, m: super::Anisotropy3) -> Space {
        let n = s.len() as f64;
        let centre = [
            s.xs.iter().sum::<f64>() / n,
            s.ys.iter().sum::<f64>() / n,
            s.zs.iter().sum::<f64>() / n,
        ];
        let mut sp = Space {
            centre,
            m,
            scale: 1.0,
        };
        let big = (0..s.len())
            .map(|i| sp.map([s.xs[i], s.ys[i], s.zs[i]]))
            .fold(0.0f64, |a, p| {
                a.max(p[0].abs()).max(p[1].abs()).max(p[2].abs())
            });
        sp.scale = if big > 0.0 { big } else { 1.0 };
        sp
    }

    #[inline]
    fn map(&self, p: [f64; 3]) -> [f64; 3] {
        self.m.apply([
            p[0] - self.centre[0],
            p[1] - self.centre[1],
            p[2] - self.centre[2],
        ])
    }

    /// The first `p` of (1, u, v, w) at kriging-space `q`.
    #[inline]
    fn drift(&self, q: [f64; 3], p: usize, out: &mut [f64]) {
        let all = [1.0, q[0] / self.scale, q[1] / self.scale, q[2] / self.scale];
        out[..p].copy_from_slice(&all[..p]);
    }
}

/// The samples in kriging space, the covariance with its ε and pseudo-covariance constant.
struct Prepared {
    space: Space,
    pts: Vec<[f64; 3]>,
    z: Vec<f64>,
    cov: Covariance,
    p: usize,
    offset: f64,
}

fn prepare(s: &Samples3, params: &Krige3Params) -> Result<Prepared, GeofieldError> {
    let n = s.len();
    let p = params.drift_terms();
    let need = match params.kind {
        Kind::Ordinary => 2,
        _ => p.max(1),
    };
    if n < need {
        return Err(GeofieldError::Invalid(format!(
            "{n} distinct sample location(s): {} kriging in 3-D needs at least {need}",
            params.kind.name()
        )));
    }
    let space = Space::new(s, params.anisotropy);
    let pts: Vec<[f64; 3]> = (0..n)
        .map(|i| space.map([s.xs[i], s.ys[i], s.zs[i]]))
        .collect();
    let mut lo = [f64::MAX; 3];
    let mut hi = [f64::MIN; 3];
    for q in &pts {
        for a in 0..3 {
            lo[a] = lo[a].min(q[a]);
            hi[a] = hi[a].max(q[a]);
        }
    }
    let diag = (0..3).map(|a| (hi[a] - lo[a]).powi(2)).sum::<f64>().sqrt();
    // γ of power and linear grows with h, so γ(diagonal) bounds it between any two samples.
    let max_gamma = params.variogram.gamma(diag);
    let cov = Covariance::new(&params.variogram, eps_for(diag), params.nugget, max_gamma);
    let offset = match params.kind {
        Kind::Simple { mean } => mean,
        _ => 0.0,
    };
    Ok(Prepared {
        space,
        pts,
        z: s.values.clone(),
        cov,
        p,
        offset,
    })
}

#[inline]
fn dist(a: [f64; 3], b: [f64; 3]) -> f64 {
    let (dx, dy, dz) = (a[0] - b[0], a[1] - b[1], a[2] - b[2]);
    (dx * dx + dy * dy + dz * dz).sqrt()
}

fn singular(s: &Samples3, pts: &[[f64; 3]]) -> GeofieldError {
    let mut best = (f64::INFINITY, 0, 0);
    for i in 0..pts.len() {
        for j in i + 1..pts.len() {
            let d = dist(pts[i], pts[j]);
            if d < best.0 {
                best = (d, i, j);
            }
        }
    }
    let at = |i: usize| format!("({}, {}, {})", s.xs[i], s.ys[i], s.zs[i]);
    GeofieldError::Invalid(format!(
        "the 3-D kriging system is singular (the covariance matrix is not positive definite); \
         the closest samples are at {} and {}, {:.3e} apart in kriging space: add a nugget or \
         merge them",
        at(best.1),
        at(best.2),
        best.0
    ))
}

fn drift_error(n: usize) -> GeofieldError {
    GeofieldError::Invalid(format!(
        "the linear drift (1, x, y, z) cannot be estimated from these {n} sample locations: they \
         lie (nearly) on one plane; it needs 4 samples not on a plane"
    ))
}

/// Global kriging: every sample in one system.
pub(super) fn global(
    backend: &Backend,
    s: &Samples3,
    params: &Krige3Params,
) -> Result<Kriged3, GeofieldError> {
    let n = s.len();
    let need = 3 * (n as u128) * (n as u128) * 8;
    if let Err(geofield_core::CoreError::TooLarge {
        need_bytes,
        available_bytes,
        ..
    }) = geofield_core::check_memory(String::new, need)
    {
        return Err(GeofieldError::KrigingTooLarge {
            samples: n,
            need_bytes,
            available_bytes,
        });
    }
    let pr = prepare(s, params)?;
    let (pts, cov, p) = (&pr.pts, &pr.cov, pr.p);
    let cmat = Mat::<f64>::from_fn(n, n, |i, j| {
        if i == j {
            cov.c0
        } else {
            cov.between_samples(dist(pts[i], pts[j]))
        }
    });
    let drift = |i: usize, c: usize| {
        let mut f = [0.0; 4];
        pr.space.drift(pts[i], p, &mut f);
        f[c]
    };
    let z: Vec<f64> = pr.z.iter().map(|v| v - pr.offset).collect();
    let sys = DualSystem::new(cmat, drift, p, &z).map_err(|e| match e {
        Fail::Singular => singular(s, pts),
        Fail::Drift => drift_error(n),
    })?;

    if let Backend::Cuda(gpu) = backend {
        return global_gpu(gpu, &pr, &sys, params);
    }
    let nodes = params.target.len();
    let mut values = vec![0.0; nodes];
    let mut variance = params.variance.then(|| vec![0.0; nodes]);
    let eval_tile = |tile: usize, vals: &mut [f64], vars: Option<&mut [f64]>| {
        let m = vals.len();
        let mut d = vec![0.0; n];
        let mut row = vec![0.0; n];
        let mut c = Mat::<f64>::zeros(n, m);
        let mut f = vec![[0.0; 4]; m];
        for (j, out) in vals.iter_mut().enumerate() {
            let q = pr.space.map(params.target.node(tile * TILE + j));
            for i in 0..n {
                d[i] = dist(q, pts[i]);
            }
            cov.from_distances(&d, &mut row);
            for (i, &r) in row.iter().enumerate() {
                c[(i, j)] = r;
            }
            pr.space.drift(q, p, &mut f[j]);
            *out = sys.predict(&row, &f[j][..p]) + pr.offset;
        }
        if let Some(vars) = vars {
            sys.variances(&mut c, |j| f[j][..p].to_vec(), cov.c0, vars);
        }
    };
    match variance.as_mut() {
        Some(var) => values
            .par_chunks_mut(TILE)
            .zip(var.par_chunks_mut(TILE))
            .enumerate()
            .for_each(|(t, (v, s))| eval_tile(t, v, Some(s))),
        None => values
            .par_chunks_mut(TILE)
            .enumerate()
            .for_each(|(t, v)| eval_tile(t, v, None)),
    }
    Ok(Kriged3 {
        values,
        variance,
        locations: n,
        merged: 0,
        missing: 0,
        evaluated: format!("CPU, global ({n} sample locations, f64)"),
        seconds: 0.0,
    })
}

/// [`global`]'s evaluation on the GPU: every node's kriging-space coordinates and drift terms
/// from the host, the covariances, products and variances on the device (f64).
fn global_gpu(
    gpu: &std::sync::Arc<geofield_cuda::Gpu>,
    pr: &Prepared,
    sys: &DualSystem,
    params: &Krige3Params,
) -> Result<Kriged3, GeofieldError> {
    let (nodes, p) = (params.target.len(), pr.p);
    let mut q = vec![0.0; 3 * nodes];
    q.par_chunks_mut(3)
        .enumerate()
        .for_each(|(t, o)| o.copy_from_slice(&pr.space.map(params.target.node(t))));
    let mut f = vec![0.0; p * nodes];
    if p > 0 {
        f.par_chunks_mut(p)
            .zip(q.par_chunks(3))
            .for_each(|(o, qt)| {
                pr.space.drift([qt[0], qt[1], qt[2]], p, o);
            });
    }
    let samples: Vec<f64> = pr.pts.iter().flatten().copied().collect();
    let covs = [crate::kriging::cuda::device_covariance(&pr.cov).to_params()?];
    let (mut values, variance, _) = crate::kriging::cuda::eval_dual_points(
        gpu,
        sys,
        3,
        &samples,
        &covs,
        &[],
        &q,
        &f,
        params.variance.then_some(pr.cov.c0),
    )?;
    for v in &mut values {
        *v += pr.offset;
    }
    Ok(Kriged3 {
        values,
        variance,
        locations: pr.pts.len(),
        merged: 0,
        missing: 0,
        evaluated: format!("CUDA, global ({} sample locations, f64)", pr.pts.len()),
        seconds: 0.0,
    })
}

/// The kriging system of `ids` (sample indices) at kriging-space node `q`: (prediction,
/// variance), NaN when singular.
fn solve_node(pr: &Prepared, ids: &[usize], q: [f64; 3], variance: bool) -> (f64, f64) {
    let (m, p, cov) = (ids.len(), pr.p, &pr.cov);
    let mut a = vec![0.0; m * m];
    for r in 0..m {
        for c in 0..=r {
            a[r * m + c] = if r == c {
                cov.c0
            } else {
                cov.between_samples(dist(pr.pts[ids[r]], pr.pts[ids[c]]))
            };
        }
    }
    if !cholesky_in_place(&mut a, m) {
        return (f64::NAN, f64::NAN);
    }
    // Forward solves with L: w = L⁻¹c, y = L⁻¹(z − offset), G = L⁻¹F (columns).
    let fwd = |b: &mut [f64]| {
        for r in 0..m {
            let s: f64 = (0..r).map(|k| a[r * m + k] * b[k]).sum();
            b[r] = (b[r] - s) / a[r * m + r];
        }
    };
    let mut w: Vec<f64> = ids.iter().map(|&i| cov.at(dist(q, pr.pts[i]))).collect();
    fwd(&mut w);
    let mut y: Vec<f64> = ids.iter().map(|&i| pr.z[i] - pr.offset).collect();
    fwd(&mut y);
    let mut g = vec![vec![0.0; m]; p];
    for (r, &i) in ids.iter().enumerate() {
        let mut f = [0.0; 4];
        pr.space.drift(pr.pts[i], p, &mut f);
        for c in 0..p {
            g[c][r] = f[c];
        }
    }
    for col in g.iter_mut() {
        fwd(col);
    }
    let mut f0 = [0.0; 4];
    pr.space.drift(q, p, &mut f0);
    let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
    let mut gtg = vec![0.0; p * p];
    for r in 0..p {
        for c in 0..=r {
            gtg[r * p + c] = dot(&g[r], &g[c]);
        }
    }
    let Some(rr) = small_cholesky(&gtg, p) else {
        return (f64::NAN, f64::NAN);
    };
    let rinv = invert_lower(&rr, p);
    let t: Vec<f64> = (0..p).map(|c| dot(&g[c], &y)).collect();
    let sv = lower_mul(&rinv, p, &t);
    let beta: Vec<f64> = (0..p)
        .map(|c| (c..p).map(|k| rinv[k * p + c] * sv[k]).sum())
        .collect();
    let resid: Vec<f64> = (0..m)
        .map(|r| y[r] - (0..p).map(|c| g[c][r] * beta[c]).sum::<f64>())
        .collect();
    let pred = dot(&w, &resid) + dot(&f0[..p], &beta) + pr.offset;
    if !variance {
        return (pred, 0.0);
    }
    let rr: Vec<f64> = (0..p).map(|c| f0[c] - dot(&g[c], &w)).collect();
    let extra: f64 = lower_mul(&rinv, p, &rr).iter().map(|v| v * v).sum();
    (pred, (cov.c0 - dot(&w, &w) + extra).max(0.0))
}

/// Local kriging from the `k` nearest samples of each node (within the radius).
pub(super) fn local(
    backend: &Backend,
    s: &Samples3,
    params: &Krige3Params,
    k: usize,
) -> Result<Kriged3, GeofieldError> {
    let pr = prepare(s, params)?;
    let n = s.len();
    let k = k.min(n);
    let need = match params.kind {
        Kind::Ordinary => 2,
        _ => pr.p.max(1),
    };
    if k < need {
        return Err(GeofieldError::InvalidParameter {
            name: "neighbors".into(),
            value: k.to_string(),
            expected: format!("at least {need} for {} kriging", params.kind.name()),
        });
    }
    let flat: Vec<f64> = pr.pts.iter().flat_map(|q| q.iter().copied()).collect();
    if let Backend::Cuda(gpu) = backend
        && k <= geofield_cuda::kriging::K_MAX
    {
        return local_gpu(gpu, &pr, &flat, params, k);
    }
    let kp = KnnParams {
        k,
        radius: params.radius,
        exclude_self: false,
        index: IndexKind::Auto,
    };
    let nodes = params.target.len();
    let mut values = vec![0.0; nodes];
    let mut variance = vec![0.0; if params.variance { nodes } else { 0 }];
    let mut on = "CPU";
    for start in (0..nodes).step_by(QUERY_BATCH) {
        let end = (start + QUERY_BATCH).min(nodes);
        let qs: Vec<[f64; 3]> = (start..end)
            .map(|t| pr.space.map(params.target.node(t)))
            .collect();
        let qflat: Vec<f64> = qs.iter().flat_map(|q| q.iter().copied()).collect();
        let nb = knn(backend, &flat, Some(&qflat), 3, &kp)?;
        if backend.is_cuda() {
            on = "CUDA k-NN, CPU systems";
        }
        let out: Vec<(f64, f64)> = (0..end - start)
            .into_par_iter()
            .map(|j| {
                let (idx, _) = nb.row(j);
                let ids: Vec<usize> = idx
                    .iter()
                    .filter(|&&i| i >= 0)
                    .map(|&i| i as usize)
                    .collect();
                if ids.len() < need {
                    return (f64::NAN, f64::NAN);
                }
                solve_node(&pr, &ids, qs[j], params.variance)
            })
            .collect();
        for (j, (v, s2)) in out.into_iter().enumerate() {
            values[start + j] = v;
            if params.variance {
                variance[start + j] = s2;
            }
        }
    }
    let evaluated = format!("{on}, local ({k} nearest of {n} sample locations, f64)");
    local_done(
        params,
        k,
        n,
        values,
        params.variance.then_some(variance),
        evaluated,
    )
}

/// [`local`]'s result: an error for a singular node when every node has its k neighbours.
fn local_done(
    params: &Krige3Params,
    k: usize,
    n: usize,
    values: Vec<f64>,
    variance: Option<Vec<f64>>,
    evaluated: String,
) -> Result<Kriged3, GeofieldError> {
    if params.radius.is_none()
        && let Some(t) = values.iter().position(|v| v.is_nan())
    {
        return Err(GeofieldError::Invalid(format!(
            "the local kriging system of node {t} is singular (its {k} nearest samples lie on a \
             plane for the linear drift, or coincide): add a nugget or take more neighbours"
        )));
    }
    Ok(Kriged3 {
        values,
        variance,
        locations: n,
        merged: 0,
        missing: 0,
        evaluated,
        seconds: 0.0,
    })
}

/// [`local`] on the GPU (k ≤ 64): the nodes mapped into kriging space on the host, the k-NN
/// search and every node's system on the device (`geofield_cuda::kriging::local_krige3`: the
/// same system as [`solve_node`], f64).
fn local_gpu(
    gpu: &std::sync::Arc<geofield_cuda::Gpu>,
    pr: &Prepared,
    samples: &[f64],
    params: &Krige3Params,
    k: usize,
) -> Result<Kriged3, GeofieldError> {
    let nodes = params.target.len();
    let mut q = vec![0.0; 3 * nodes];
    q.par_chunks_mut(3)
        .enumerate()
        .for_each(|(t, o)| o.copy_from_slice(&pr.space.map(params.target.node(t))));
    let cov = crate::kriging::cuda::device_covariance(&pr.cov);
    let inp = geofield_cuda::kriging::Local3Inputs {
        samples,
        values: &pr.z,
        nodes: &q,
        k,
        radius2: params.radius.map(|r| r * r),
        drift_terms: pr.p,
        drift_scale: pr.space.scale,
        mean: pr.offset,
        want_variance: params.variance,
    };
    let (out, _) = geofield_cuda::kriging::local_krige3(gpu, &cov, &inp)?;
    let n = pr.pts.len();
    let evaluated = format!("CUDA, local ({k} nearest of {n} sample locations, f64)");
    local_done(params, k, n, out.pred, out.var, evaluated)
}
