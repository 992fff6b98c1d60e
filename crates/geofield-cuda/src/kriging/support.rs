//! [`TargetSupport`]: what a prediction stands for when it is not a plain point with the
//! polynomial drift: a block (its discretisation points) and drift terms the host computed (block
//! means of the drift, an external drift variable). The host's `Support` (geofield's
//! `kriging::space`) is the rule; these are its values.

use super::{check_drift, check_finite};
use crate::error::{CudaError, invalid};

/// Most drift terms a kernel holds (`KR_PMAX`).
pub const P_MAX: usize = 6;
/// Most block points (geofield's 16 × 16 discretisation).
pub const BLOCK_POINTS_MAX: usize = 256;

/// The support of the predictions. The default is a point with the polynomial drift.
#[derive(Clone, Copy, Debug, Default)]
pub struct TargetSupport<'a> {
    /// Block points in kriging space, (dx, dy, w) per point (the offsets from the node and the
    /// weights); empty: a point.
    pub block: &'a [f64],
    /// The drift terms of every node (row-major over the grid's nodes), `stride` per node; None:
    /// the polynomial basis at the node.
    pub node_drift: Option<&'a [f64]>,
    /// Local kriging: the drift terms of every sample, `stride` per sample (with `node_drift`).
    pub sample_drift: Option<&'a [f64]>,
    /// Values per node (and sample) in `node_drift` (`sample_drift`): at least p, at most
    /// [`P_MAX`].
    pub stride: usize,
}

impl TargetSupport<'_> {
    /// Block points.
    pub fn points(&self) -> usize {
        self.block.len() / 3
    }

    /// Checks the support for `nodes` nodes, `samples` samples and p drift terms (`drift_scale`
    /// for the polynomial basis); `need_samples`: local kriging, which also needs the samples'
    /// terms with the nodes'.
    pub(crate) fn check(
        &self,
        nodes: usize,
        samples: usize,
        p: usize,
        drift_scale: f64,
        need_samples: bool,
        kernel: &'static str,
    ) -> Result<(), CudaError> {
        if !self.block.len().is_multiple_of(3) || self.points() > BLOCK_POINTS_MAX {
            return Err(invalid(
                kernel,
                format!(
                    "block has {} values: (dx, dy, w) triples, at most {BLOCK_POINTS_MAX}",
                    self.block.len()
                ),
            ));
        }
        check_finite("block", self.block, self.block.len(), kernel)?;
        let Some(nd) = self.node_drift else {
            if self.sample_drift.is_some() {
                return Err(invalid(kernel, "sample drift without the nodes' drift"));
            }
            return check_drift(p, drift_scale, kernel);
        };
        if p > self.stride || self.stride == 0 || self.stride > P_MAX {
            return Err(invalid(
                kernel,
                format!(
                    "p = {p} drift terms from a stride of {} (1..={P_MAX})",
                    self.stride
                ),
            ));
        }
        let len = nodes
            .checked_mul(self.stride)
            .ok_or_else(|| invalid(kernel, "nodes × drift terms overflows"))?;
        check_finite("node drift", nd, len, kernel)?;
        match (need_samples, self.sample_drift) {
            (true, Some(sd)) => check_finite("sample drift", sd, samples * self.stride, kernel),
            (true, None) => Err(invalid(kernel, "the nodes' drift without the samples'")),
            (false, _) => Ok(()),
        }
    }
}
