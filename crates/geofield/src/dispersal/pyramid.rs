//! The 2012 paper's quadtree pyramid (Fan et al., §4-5): leaves are the raster's cells on a grid
//! padded to 2^K × 2^K; each node holds NODE = Σ w of its trees and their **unweighted** mean
//! position; a parent sums its four children.

use geofield_core::GridSpec;

use crate::GeofieldError;

use super::sources::Sources;

/// Largest pyramid side exponent accepted (2^13 = 8192 cells a side; ~1.1e8 nodes, 1.3 GB).
pub const MAX_LEVEL: u32 = 13;

/// Dense per-level node arrays; node (i, j) of level q is at `level_offset[q] + i·side_q + j`,
/// side_q = 2^(K−q). Positions are grid-relative metres.
#[derive(Debug, Clone, PartialEq)]
pub struct Pyramid {
    /// K + 1.
    pub levels: u32,
    pub level_offset: Vec<u32>,
    pub node_u: Vec<f64>,
    pub node_v: Vec<f64>,
    pub node_w: Vec<f64>,
}

impl Pyramid {
    pub fn side(&self, q: u32) -> usize {
        1usize << (self.levels - 1 - q)
    }

    /// Build over `inside` (trees within the grid rectangle; the caller handles the rest).
    pub fn build(grid: &GridSpec, inside: &Sources) -> Result<Self, GeofieldError> {
        let n = grid.cols.max(grid.rows).max(1);
        let k = usize::BITS - (n - 1).leading_zeros(); // smallest K with 2^K >= n
        let k = if n == 1 { 0 } else { k };
        if k > MAX_LEVEL {
            return Err(GeofieldError::Unsupported(format!(
                "the multi-resolution method's dense pyramid covers at most {0} x {0} cells; this grid is {1} x {2} (use the cutoff or exact method)",
                1u64 << MAX_LEVEL,
                grid.cols,
                grid.rows
            )));
        }
        let levels = k + 1;
        let mut level_offset = Vec::with_capacity(levels as usize);
        let mut total = 0usize;
        for q in 0..levels {
            level_offset.push(total as u32);
            let s = 1usize << (k - q);
            total += s * s;
        }
        let mut cnt = vec![0u32; total];
        let (mut su, mut sv, mut sw) = (vec![0.0; total], vec![0.0; total], vec![0.0; total]);
        let h = grid.cell_size_m;
        let side0 = 1usize << k;
        for t in 0..inside.len() {
            let c = ((inside.u[t] / h).floor() as usize).min(grid.cols - 1);
            let r = ((inside.v[t] / h).floor() as usize).min(grid.rows - 1);
            let i = r * side0 + c;
            cnt[i] += 1;
            su[i] += inside.u[t];
            sv[i] += inside.v[t];
            sw[i] += inside.w[t];
        }
        for q in 1..levels {
            let s = 1usize << (k - q);
            let (o, oc) = (
                level_offset[q as usize] as usize,
                level_offset[q as usize - 1] as usize,
            );
            for i in 0..s {
                for j in 0..s {
                    let p = o + i * s + j;
                    for (di, dj) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
                        let ch = oc + (2 * i + di) * (2 * s) + 2 * j + dj;
                        cnt[p] += cnt[ch];
                        su[p] += su[ch];
                        sv[p] += sv[ch];
                        sw[p] += sw[ch];
                    }
                }
            }
        }
        for i in 0..total {
            if cnt[i] > 0 {
                su[i] /= cnt[i] as f64;
                sv[i] /= cnt[i] as f64;
            }
        }
        Ok(Self {
            levels,
            level_offset,
            node_u: su,
            node_v: sv,
            node_w: sw,
        })
    }
}

/// Per-level opening distances ρ_q: variant A (default) ρ·2^(q−1), constant node size over
/// distance; variant B ρ at every level (the literal reading). Level 0 (leaves) is unused.
pub fn opening_distances(levels: u32, rho_m: f64, variant_b: bool) -> Vec<f64> {
    (0..levels)
        .map(|q| {
            if q == 0 {
                0.0
            } else if variant_b {
                rho_m
            } else {
                rho_m * 2f64.powi(q as i32 - 1)
            }
        })
        .collect()
}
