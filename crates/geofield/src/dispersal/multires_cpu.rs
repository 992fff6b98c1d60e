//! The paper's multi-resolution traversal on the CPU. Per cell, depth-first from the root: empty
//! nodes are skipped; a node of level q ≥ 1 farther than ρ_q adds NODE·K(d) at its unweighted
//! mean position; otherwise its children (in the fixed order (2i,2j), (2i,2j+1), (2i+1,2j),
//! (2i+1,2j+1)) are visited; leaves always add NODE·K(d).

use geofield_core::GridSpec;
use rayon::prelude::*;

use super::params::Kernel;
use super::pyramid::Pyramid;
use crate::Cancel;

/// The multi-resolution sum at the grid rows `rows` (row-major; each cell's traversal is its own,
/// so the values are the whole grid's). Rows not started when `cancel` is set are skipped (left
/// at zero): the caller checks the token afterwards.
pub fn multires_rows(
    grid: &GridSpec,
    kernel: &Kernel,
    pyr: &Pyramid,
    rho: &[f64],
    cancel: &Cancel,
    rows: &std::ops::Range<usize>,
) -> Vec<f64> {
    let mut out = vec![0.0; rows.len() * grid.cols];
    if grid.cols == 0 {
        return out;
    }
    let h = grid.cell_size_m;
    out.par_chunks_mut(grid.cols)
        .enumerate()
        .for_each(|(i, line)| {
            let row = rows.start + i;
            if cancel.is_cancelled() {
                return;
            }
            let mut stack: Vec<(u32, usize)> = Vec::with_capacity(64);
            for (col, cell) in line.iter_mut().enumerate() {
                let (cu, cv) = ((col as f64 + 0.5) * h, (row as f64 + 0.5) * h);
                *cell = traverse(kernel, pyr, rho, cu, cv, &mut stack);
            }
        });
    out
}

/// One cell's traversal; `stack` holds (level, index within level).
pub fn traverse(
    kernel: &Kernel,
    pyr: &Pyramid,
    rho: &[f64],
    cu: f64,
    cv: f64,
    stack: &mut Vec<(u32, usize)>,
) -> f64 {
    let mut acc = 0.0;
    stack.clear();
    stack.push((pyr.levels - 1, 0));
    while let Some((q, idx)) = stack.pop() {
        let node = pyr.level_offset[q as usize] as usize + idx;
        let w = pyr.node_w[node];
        if w == 0.0 {
            continue;
        }
        let (du, dv) = (pyr.node_u[node] - cu, pyr.node_v[node] - cv);
        let d2 = du * du + dv * dv;
        if q == 0 || d2 > rho[q as usize] * rho[q as usize] {
            acc += w * kernel.eval_r2(d2);
        } else {
            let s = pyr.side(q);
            let (i, j) = (idx / s, idx % s);
            let cs = 2 * s;
            // Pushed in reverse so that they pop in the documented order.
            let child_base = pyr.level_offset[q as usize - 1] as usize;
            for (di, dj) in [(1, 1), (1, 0), (0, 1), (0, 0)] {
                let c = (2 * i + di) * cs + 2 * j + dj;
                if pyr.node_w[child_base + c] != 0.0 {
                    stack.push((q - 1, c));
                }
            }
        }
    }
    acc
}
