//! [`super::krige_on`]'s GPU path: the given-drift system factored on the host, every node
//! evaluated on the device (see the parent module's docs).

use faer::Mat;
use rayon::prelude::*;

use super::System;
use crate::GeofieldError;

/// The system of `sys` factored on the host (Cholesky of C, then the drift's system), every
/// node evaluated on the GPU (module docs).
pub(super) fn krige_gpu(
    gpu: &geofield_cuda::Gpu,
    sys: &System<'_>,
    values: &[&[f64]],
    nodes: &[[f64; 3]],
    variance: bool,
    dims: usize,
) -> Result<super::super::systems::Evaluated, GeofieldError> {
    let (n, p) = (sys.pts.len(), sys.basis.len());
    let (c, f) = super::sample_system(sys)?;
    let samples: Vec<f64> = sys.pts.iter().flat_map(|q| q[..dims].to_vec()).collect();
    let q: Vec<f64> = nodes.iter().flat_map(|q| q[..dims].to_vec()).collect();
    let mut fnode = vec![0.0; nodes.len() * p];
    fnode
        .par_chunks_mut(p.max(1))
        .zip(nodes.par_iter())
        .enumerate()
        .for_each(|(j, (row, x0))| {
            if p > 0 {
                sys.basis.row(x0, &|k| sys.given.at_nodes[k][j], row);
            }
        });
    let covs = [super::super::cuda::device_covariance(sys.cov).to_params()?];
    let mut preds = Vec::with_capacity(values.len());
    let mut var = None;
    for (h, z) in values.iter().enumerate() {
        let cmat = Mat::from_fn(n, n, |i, j| c[i * n + j]);
        let dual =
            super::super::dual::DualSystem::new(cmat, |i, k| f[i * p + k], p, z).map_err(|_| {
                GeofieldError::Invalid(format!(
                    "the kriging system of {n} samples with a {p}-term drift is singular"
                ))
            })?;
        let want = variance && h == 0;
        let (pred, v, _) = super::super::cuda::eval_dual_points(
            gpu,
            &dual,
            dims,
            &samples,
            &covs,
            &[],
            &q,
            &fnode,
            want.then_some(sys.cov.c0),
        )?;
        preds.push(pred);
        if want {
            var = v;
        }
    }
    Ok((preds, var))
}
