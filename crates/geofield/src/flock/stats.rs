//! Model-level measures of a flock state (polarisation, local alignment, nearest-neighbour
//! distance, speed, radius fraction).

use serde::Serialize;

use super::{FlockState, steer};

/// Model-level measures of a flock state.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FlockStats {
    pub agents: usize,
    /// |Σ f_i| / N: about 1/√N for random headings, near 1 when all fly the same way.
    pub polarisation: f64,
    /// Mean over agents of f_i · u(Σ f_j) over its 7 nearest others: about 0 for random
    /// headings, near 1 when neighbours fly together (even if separate flocks do not).
    pub local_alignment: f64,
    /// Mean distance to the nearest other agent (NaN below 2 agents).
    pub mean_nn_distance: f64,
    pub mean_speed: f64,
    /// Mean |p| over the world radius.
    pub mean_radius_fraction: f64,
}

/// Polarisation, local alignment, mean speed and the mean nearest-neighbour distance (exact, on
/// the CPU).
pub fn stats(state: &FlockState, world_radius: f32) -> FlockStats {
    let n = state.len();
    let mut sf = [0.0f64; 3];
    let mut sp = 0.0f64;
    let mut sr = 0.0f64;
    for i in 0..n {
        for (acc, v) in sf.iter_mut().zip(state.fwd[i]) {
            *acc += f64::from(v);
        }
        sp += f64::from(state.speed[i]);
        sr += f64::from(steer::length(state.pos[i]));
    }
    let nf = n.max(1) as f64;
    let pol = (sf[0] * sf[0] + sf[1] * sf[1] + sf[2] * sf[2]).sqrt() / nf;
    let (nn, local) = if n >= 2 {
        let flat: Vec<f32> = state.pos.iter().flatten().copied().collect();
        let q = crate::neighbors::KnnQuery {
            k: 7,
            radius: None,
            exclude_self: true,
        };
        let index = crate::neighbors::IndexKind::Uniform { cell_size: None };
        match crate::neighbors::knn_cpu(&flat, None, 3, &q, index) {
            Ok(nb) => {
                let mut snn = 0.0;
                let mut sal = 0.0;
                for i in 0..n {
                    let (idx, d2) = nb.row(i);
                    snn += d2[0].sqrt();
                    let mut m = [0.0f64; 3];
                    for &j in idx.iter().filter(|&&j| j >= 0) {
                        for (acc, v) in m.iter_mut().zip(state.fwd[j as usize]) {
                            *acc += f64::from(v);
                        }
                    }
                    let l = (m[0] * m[0] + m[1] * m[1] + m[2] * m[2]).sqrt();
                    if l > 0.0 {
                        let f = state.fwd[i];
                        sal += (m[0] * f64::from(f[0])
                            + m[1] * f64::from(f[1])
                            + m[2] * f64::from(f[2]))
                            / l;
                    }
                }
                (snn / n as f64, sal / n as f64)
            }
            Err(_) => (f64::NAN, f64::NAN),
        }
    } else {
        (f64::NAN, f64::NAN)
    };
    FlockStats {
        agents: n,
        polarisation: pol,
        local_alignment: local,
        mean_nn_distance: nn,
        mean_speed: sp / nf,
        mean_radius_fraction: sr / nf / f64::from(world_radius),
    }
}
