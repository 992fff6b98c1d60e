//! Glue between the kriging systems and the CUDA kernels of `geofield-cuda`: the host solves
//! in f64 (dual coefficients, inverse factors), the GPU evaluates the grid.
//!
//! - Global: dual predictions (`kriging_dual_*`), and with the variance a covariance tile and a
//!   fused triangular product-and-reduction per tile of nodes (`kriging_var_k_*`,
//!   `kriging_var_fused_*`, no cuBLAS); L⁻¹ is formed on the host (n³/3 flops). Every kernel of
//!   the evaluation is compiled (first run) or loaded together before the first launch.
//! - Local: neighbour search on the device and one warp per node (`kriging_local_*`).
//!
//! f32 evaluates with coordinates already centred (and anisotropy-corrected) in f64, accurate
//! f32 exp and sqrt, and per-block partial sums added into f64 accumulators; f64 evaluates in f64.
//! Arbitrary points ([`super::Target::Points`]) are evaluated on the CPU (the kernels take
//! grids); the result says so.

use std::sync::Arc;

use geofield_cuda::Gpu;
use geofield_cuda::kriging::{
    self as gk, CovModel, CovStructure, DualInputs, KrigeFloat, LocalInputs, NodeGrid,
    TargetSupport, VarianceInputs,
};

use super::cokriging::Lmc;
use super::dual::DualSystem;
use super::global::GlobalKriging;
use super::params::{Kind, Precision};
use super::space::{Covariance, Frame, Support};
use super::systems::System;
use super::variogram::{Model, Structure, matern_scale};
use crate::GeofieldError;

/// Predictions per surface, the variance, and the kernels' seconds.
pub(crate) type Out = (Vec<Vec<f64>>, Option<Vec<f64>>, f64);

/// The device's description of a covariance.
pub fn device_covariance(cov: &Covariance) -> gk::Covariance {
    let structures = cov
        .variogram
        .structures
        .iter()
        .map(device_structure)
        .collect();
    gk::Covariance {
        nugget: cov.variogram.nugget,
        structures,
        pseudo_base: cov.pseudo.then_some(cov.c0),
        eps: cov.eps,
        exact: cov.c_coincident == cov.c0,
        var_zero: Some(cov.c0),
    }
}

/// The device's description of a structure.
fn device_structure(s: &Structure) -> CovStructure {
    CovStructure {
        model: match s.model {
            Model::Exponential => CovModel::Exponential,
            Model::Gaussian => CovModel::Gaussian,
            Model::Spherical => CovModel::Spherical,
            Model::Cubic => CovModel::Cubic,
            Model::Stable { alpha } => CovModel::Stable { alpha },
            Model::Matern { nu } => CovModel::Matern {
                nu,
                scale: matern_scale(nu),
            },
            Model::Power { exponent } => CovModel::Power { exponent },
            Model::Linear => CovModel::Linear,
        },
        sill: s.sill,
        range: s.range,
    }
}

/// The cross-covariances C_k0 (k = 0 … K−1) of a coregionalisation model as the device reads
/// them: sills bˢ_k0, nugget b⁰_k0 (counted at h ≤ `eps`), the variance's C(0) `c00`.
pub(crate) fn lmc_covariances(
    lmc: &Lmc,
    eps: f64,
    c00: f64,
) -> Result<Vec<gk::CovParams>, GeofieldError> {
    let kv = lmc.variables;
    (0..kv)
        .map(|k| {
            gk::Covariance {
                nugget: lmc.nugget[k * kv],
                structures: lmc
                    .structures
                    .iter()
                    .zip(&lmc.sills)
                    .map(|(s, b)| CovStructure {
                        sill: b[k * kv],
                        ..device_structure(s)
                    })
                    .collect(),
                pseudo_base: None,
                eps,
                exact: true,
                var_zero: Some(c00),
            }
            .to_params_cross()
            .map_err(GeofieldError::from)
        })
        .collect()
}

/// Surface-major device output (`surfaces` blocks of equal length) as one f64 vector per
/// surface, in one pass.
fn per_surface<T: KrigeFloat>(v: &[T], surfaces: usize) -> Vec<Vec<f64>> {
    use rayon::prelude::*;
    let n = v.len() / surfaces.max(1);
    // In parallel: fresh output pages fault on every core (100 surfaces of 1e6 nodes: 0.8 GB).
    (0..surfaces)
        .into_par_iter()
        .map(|h| {
            v[h * n..(h + 1) * n]
                .par_iter()
                .with_min_len(1 << 16)
                .map(|x| x.widen())
                .collect()
        })
        .collect()
}

fn widen<T: KrigeFloat>(v: Vec<T>) -> Vec<f64> {
    v.into_iter().map(|x| x.widen()).collect()
}

/// Predictions and variances at the nodes of a grid on the GPU.
pub(crate) fn eval_grid(
    gpu: &Arc<Gpu>,
    system: &System,
    grid: &NodeGrid,
    variance: bool,
    precision: Precision,
) -> Result<Out, GeofieldError> {
    match precision {
        Precision::F32 => eval_grid_t::<f32>(gpu, system, grid, variance, precision),
        Precision::F64 => eval_grid_t::<f64>(gpu, system, grid, variance, precision),
    }
}

/// The global variance in `precision` (cuBLAS S/DGEMM), and the kernels' seconds.
fn global_variance(
    gpu: &Gpu,
    cov: &gk::Covariance,
    grid: &NodeGrid,
    inp: &VarianceInputs,
    precision: Precision,
) -> Result<(Vec<f64>, f64), GeofieldError> {
    Ok(match precision {
        Precision::F32 => {
            let (v, t) = gk::global_variance::<f32>(gpu, cov, grid, inp, false, None)?;
            (widen(v), t.kernel_ms / 1e3)
        }
        Precision::F64 => {
            let (v, t) = gk::global_variance::<f64>(gpu, cov, grid, inp, false, None)?;
            (widen(v), t.kernel_ms / 1e3)
        }
    })
}

fn eval_grid_t<T: KrigeFloat>(
    gpu: &Arc<Gpu>,
    system: &System,
    grid: &NodeGrid,
    variance: bool,
    precision: Precision,
) -> Result<Out, GeofieldError> {
    match system {
        System::Global(g) if !g.support.is_plain() => {
            global_support::<T>(gpu, g, grid, variance, precision)
        }
        System::Global(g) => {
            let cov = device_covariance(&g.cov);
            let xy: Vec<f64> = g.xs.iter().zip(&g.ys).flat_map(|(&x, &y)| [x, y]).collect();
            let inp = DualInputs {
                samples_xy: &xy,
                alpha: &g.alpha,
                beta: &g.beta,
                surfaces: g.surfaces,
                drift_terms: g.p_eval,
                drift_scale: g.frame.drift_scale,
            };
            // Every kernel of the evaluation compiled together (in parallel) on a first run.
            gk::prepare_global::<T>(gpu, &cov, g.xs.len(), g.surfaces, false, variance)?;
            let (pred, t) = gk::dual_predict::<T>(gpu, &cov, grid, &inp, false)?;
            let mut seconds = t.kernel_ms / 1e3;
            let var = if variance {
                let linv = g.l_inverse();
                let vin = VarianceInputs {
                    samples_xy: &xy,
                    linv,
                    g: &g.g,
                    rinv: &g.rinv,
                    drift_terms: g.p_var,
                    drift_scale: g.frame.drift_scale,
                    support: Default::default(),
                };
                let (v, s) = global_variance(gpu, &cov, grid, &vin, precision)?;
                seconds += s;
                Some(v)
            } else {
                None
            };
            Ok((per_surface(&pred, g.surfaces), var, seconds))
        }
        System::Local(l) => {
            let mut cov = device_covariance(&l.cov);
            cov.var_zero = Some(l.support.c0(&l.cov));
            let xy: Vec<f64> = l.xs.iter().zip(&l.ys).flat_map(|(&x, &y)| [x, y]).collect();
            let means = match l.kind {
                Kind::Simple { mean } => vec![mean; l.surfaces],
                _ => vec![],
            };
            let p = l.kind.drift_terms();
            let block = l.support.block_triples();
            // Block means of the drift and an external drift come from the host's rule.
            let host_drift = p > 0 && !l.support.is_plain();
            let fnode = host_drift.then(|| node_drift(&l.support, &l.frame, grid, p));
            let sdrift: Option<Vec<f64>> = host_drift.then(|| {
                let mut f = [0.0; 6];
                l.xs.iter()
                    .zip(&l.ys)
                    .flat_map(|(&x, &y)| {
                        l.support.point_drift(&l.frame, x, y, p, &mut f);
                        f[..p].to_vec()
                    })
                    .collect()
            });
            let inp = LocalInputs {
                samples_xy: &xy,
                values: &l.z,
                surfaces: l.surfaces,
                k: l.k,
                radius2: l.radius.map(|r| r * r),
                drift_terms: l.kind.drift_terms(),
                drift_scale: l.frame.drift_scale,
                means: &means,
                want_variance: variance,
                support: TargetSupport {
                    block: &block,
                    node_drift: fnode.as_deref(),
                    sample_drift: sdrift.as_deref(),
                    stride: p,
                },
            };
            let (out, t) = gk::local_krige::<T>(gpu, &cov, grid, &inp)?;
            Ok((
                per_surface(&out.pred, l.surfaces),
                out.var.map(widen),
                t.kernel_ms / 1e3,
            ))
        }
    }
}

/// The first `p` drift terms of every node of `grid` (row-major, p per node) by the host's rule:
/// block means, the external variable.
fn node_drift(support: &Support, frame: &Frame, grid: &NodeGrid, p: usize) -> Vec<f64> {
    use rayon::prelude::*;
    let mut out = vec![0.0; grid.len() * p];
    out.par_chunks_mut((grid.cols * p).max(1))
        .enumerate()
        .for_each(|(r, row)| {
            let mut f = [0.0; 6];
            for (c, o) in row.chunks_mut(p).enumerate() {
                let (x, y) = grid.node(r, c);
                support.drift(frame, x, y, p, &mut f);
                o.copy_from_slice(&f[..p]);
            }
        });
    out
}

/// Global kriging of blocks or with an external drift: the covariance part of the dual
/// prediction at each block point (the grid shifted by its offset; a block's covariance is the
/// weighted mean over its points, and the prediction is linear in it), the drift part from the
/// host's node drift, and the variance with the block's covariance tiles, C̄(B, B) and that
/// drift.
fn global_support<T: KrigeFloat>(
    gpu: &Arc<Gpu>,
    g: &GlobalKriging,
    grid: &NodeGrid,
    variance: bool,
    precision: Precision,
) -> Result<Out, GeofieldError> {
    let mut cov = device_covariance(&g.cov);
    cov.var_zero = Some(g.support.c0(&g.cov));
    let xy: Vec<f64> = g.xs.iter().zip(&g.ys).flat_map(|(&x, &y)| [x, y]).collect();
    let (nn, hc) = (grid.len(), g.surfaces);
    let pd = g.p_eval.max(g.p_var);
    let fnode = node_drift(&g.support, &g.frame, grid, pd);
    let block = g.support.block_triples();
    let points: Vec<(f64, f64, f64)> = if block.is_empty() {
        vec![(0.0, 0.0, 1.0)]
    } else {
        block.chunks(3).map(|t| (t[0], t[1], t[2])).collect()
    };
    let inp = DualInputs {
        samples_xy: &xy,
        alpha: &g.alpha,
        beta: &[],
        surfaces: hc,
        drift_terms: 0,
        drift_scale: g.frame.drift_scale,
    };
    gk::prepare_global::<T>(gpu, &cov, g.xs.len(), hc, false, variance)?;
    let mut seconds = 0.0;
    let mut pred = vec![vec![0.0; nn]; hc];
    for &(dx, dy, w) in &points {
        let shifted = NodeGrid {
            origin: [grid.origin[0] + dx, grid.origin[1] + dy],
            ..*grid
        };
        let (p, t) = gk::dual_predict::<T>(gpu, &cov, &shifted, &inp, false)?;
        seconds += t.kernel_ms / 1e3;
        for (h, ph) in pred.iter_mut().enumerate() {
            for (o, v) in ph.iter_mut().zip(&p[h * nn..(h + 1) * nn]) {
                *o += w * v.widen();
            }
        }
    }
    for (h, ph) in pred.iter_mut().enumerate() {
        for (j, o) in ph.iter_mut().enumerate() {
            let f = &fnode[j * pd..(j + 1) * pd];
            *o += (0..g.p_eval)
                .map(|l| f[l] * g.beta[l * hc + h])
                .sum::<f64>();
        }
    }
    let var = if variance {
        let vin = VarianceInputs {
            samples_xy: &xy,
            linv: g.l_inverse(),
            g: &g.g,
            rinv: &g.rinv,
            drift_terms: g.p_var,
            drift_scale: g.frame.drift_scale,
            support: TargetSupport {
                block: &block,
                node_drift: (pd > 0).then_some(&fnode[..]),
                sample_drift: None,
                stride: pd,
            },
        };
        let (v, s) = global_variance(gpu, &cov, grid, &vin, precision)?;
        seconds += s;
        Some(v)
    } else {
        None
    };
    Ok((pred, var, seconds))
}

/// Predictions, variances when asked, and the kernels' seconds.
pub(crate) type PointsOut = (Vec<f64>, Option<Vec<f64>>, f64);

/// A factored [`DualSystem`] evaluated on the GPU at listed nodes (3-D kriging, cokriging): `dim`
/// coordinates per sample and node in kriging space, a device covariance per sample (`cov_of`
/// into `covs`), the nodes' p drift terms; predictions cᵀα + fᵀβ and, when asked, variances with
/// C(0) = `c00`; and the kernels' seconds.
#[allow(clippy::too_many_arguments)]
pub(crate) fn eval_dual_points(
    gpu: &Gpu,
    sys: &DualSystem,
    dim: usize,
    samples: &[f64],
    covs: &[gk::CovParams],
    cov_of: &[u32],
    nodes: &[f64],
    node_drift: &[f64],
    c00: Option<f64>,
) -> Result<PointsOut, GeofieldError> {
    let (linv, g, rinv, p) = sys.device_factors();
    let inp = gk::PointsInputs {
        dim,
        samples,
        covs,
        cov_of,
        alpha: &sys.alpha,
        nodes,
        variance: c00.map(|c00| gk::PointsVariance {
            linv: &linv,
            g,
            rinv,
            p,
            node_drift,
            c00,
        }),
    };
    let (mut pred, var, t) = gk::points_eval(gpu, &inp)?;
    if p > 0 {
        for (j, v) in pred.iter_mut().enumerate() {
            *v += (0..p)
                .map(|l| node_drift[j * p + l] * sys.beta[l])
                .sum::<f64>();
        }
    }
    Ok((pred, var, t.kernel_ms / 1e3))
}

#[cfg(test)]
mod tests {
    #[test]
    fn per_surface_splits_surface_major_output() {
        let v: Vec<f32> = (0..12).map(|i| i as f32).collect();
        let s = super::per_surface(&v, 3);
        assert_eq!(
            s,
            vec![
                vec![0.0, 1.0, 2.0, 3.0],
                vec![4.0, 5.0, 6.0, 7.0],
                vec![8.0, 9.0, 10.0, 11.0]
            ]
        );
        let e: Vec<f64> = vec![];
        assert_eq!(super::per_surface(&e, 2), vec![Vec::<f64>::new(), vec![]]);
    }
}
