//! f64 host reference of the multigrid operations on the device layout (geofield's `level.rs`
//! and `multigrid.rs`, [k][row][col]).

use crate::wind::HostLevel;

fn idx(l: &HostLevel, k: usize, row: usize, col: usize) -> usize {
    (k * l.rows + row) * l.cols + col
}

/// Σ K φ over the horizontal neighbours W, E, N, S.
fn horizontal(l: &HostLevel, x: &[f64], k: usize, row: usize, col: usize) -> f64 {
    let (rows, cols) = (l.rows, l.cols);
    let i = idx(l, k, row, col);
    let ix = (k * rows + row) * (cols + 1) + col;
    let iy = (k * (rows + 1) + row) * cols + col;
    let mut h = 0.0;
    if col > 0 {
        h += l.kx[ix] * x[i - 1];
    }
    if col + 1 < cols {
        h += l.kx[ix + 1] * x[i + 1];
    }
    if row > 0 {
        h += l.ky[iy] * x[i - cols];
    }
    if row + 1 < rows {
        h += l.ky[iy + cols] * x[i + cols];
    }
    h
}

/// A'x.
pub(super) fn apply(l: &HostLevel, x: &[f64]) -> Vec<f64> {
    let plane = l.rows * l.cols;
    let mut out = vec![0.0; x.len()];
    for k in 0..l.nz {
        for row in 0..l.rows {
            for col in 0..l.cols {
                let i = idx(l, k, row, col);
                let mut s = l.diag[i] * x[i] - horizontal(l, x, k, row, col);
                if k > 0 {
                    s -= l.kz[i] * x[i - plane];
                }
                if k + 1 < l.nz {
                    s -= l.kz[i + plane] * x[i + plane];
                }
                out[i] = s;
            }
        }
    }
    out
}

pub(super) fn residual(l: &HostLevel, x: &[f64], b: &[f64]) -> Vec<f64> {
    apply(l, x).iter().zip(b).map(|(a, b)| b - a).collect()
}

pub(super) fn max_div(r: &[f64], inv_vol: &[f64]) -> f64 {
    r.iter()
        .zip(inv_vol)
        .map(|(r, v)| (r * v).abs())
        .fold(0.0, f64::max)
}

/// One colour of z-line Gauss–Seidel ((row + col) % 2 == colour), Thomas per column.
#[allow(clippy::needless_range_loop)]
pub(super) fn line(l: &HostLevel, x: &mut [f64], b: &[f64], colour: usize) {
    let (plane, nz) = (l.rows * l.cols, l.nz);
    let mut cp = vec![0.0; nz];
    for row in 0..l.rows {
        for col in ((row + colour) % 2..l.cols).step_by(2) {
            let mut prev_c = 0.0;
            for k in 0..nz {
                let i = idx(l, k, row, col);
                let rhs = b[i] + horizontal(l, x, k, row, col);
                let a = if k > 0 { -l.kz[i] } else { 0.0 };
                let c = if k + 1 < nz { -l.kz[i + plane] } else { 0.0 };
                let prev_x = if k > 0 { x[i - plane] } else { 0.0 };
                let piv = l.diag[i] - a * prev_c;
                if piv.abs() <= f64::MIN_POSITIVE {
                    cp[k] = 0.0;
                    x[i] = 0.0;
                    prev_c = 0.0;
                    continue;
                }
                cp[k] = c / piv;
                x[i] = (rhs - a * prev_x) / piv;
                prev_c = cp[k];
            }
            for k in (0..nz.saturating_sub(1)).rev() {
                let i = idx(l, k, row, col);
                x[i] -= cp[k] * x[i + plane];
            }
        }
    }
}

/// Coarse b = Σ of the 2 × 2 children's residuals.
fn restrict(f: &HostLevel, r: &[f64], c: &HostLevel) -> Vec<f64> {
    let mut cb = vec![0.0; c.rows * c.cols * c.nz];
    for k in 0..f.nz {
        for row in 0..f.rows {
            for col in 0..f.cols {
                cb[idx(c, k, row / 2, col / 2)] += r[idx(f, k, row, col)];
            }
        }
    }
    cb
}

fn prolong(f: &HostLevel, c: &HostLevel, xc: &[f64], x: &mut [f64]) {
    for k in 0..f.nz {
        for row in 0..f.rows {
            for col in 0..f.cols {
                let i = idx(f, k, row, col);
                if f.diag[i] != 0.0 {
                    x[i] += xc[idx(c, k, row / 2, col / 2)];
                }
            }
        }
    }
}

/// x = V(b) from x = 0 on level `l` (geofield's `vcycle`).
pub(super) fn vcycle(
    levels: &[HostLevel],
    l: usize,
    b: &[f64],
    smooth: usize,
    coarsest: usize,
) -> Vec<f64> {
    let lv = &levels[l];
    let mut x = vec![0.0; b.len()];
    if l + 1 == levels.len() {
        for _ in 0..coarsest {
            line(lv, &mut x, b, 0);
            line(lv, &mut x, b, 1);
        }
        return x;
    }
    for _ in 0..smooth {
        line(lv, &mut x, b, 0);
        line(lv, &mut x, b, 1);
    }
    let cb = restrict(lv, &residual(lv, &x, b), &levels[l + 1]);
    let xc = vcycle(levels, l + 1, &cb, smooth, coarsest);
    prolong(lv, &levels[l + 1], &xc, &mut x);
    for _ in 0..smooth {
        line(lv, &mut x, b, 1);
        line(lv, &mut x, b, 0);
    }
    x
}

/// One colour ((col + row + k) % 2 == colour) of φ-form SOR.
pub(super) fn sor_half(l: &HostLevel, x: &mut [f64], b: &[f64], colour: usize, omega: f64) {
    let plane = l.rows * l.cols;
    for k in 0..l.nz {
        for row in 0..l.rows {
            for col in 0..l.cols {
                if (col + row + k) % 2 != colour {
                    continue;
                }
                let i = idx(l, k, row, col);
                let d = l.diag[i];
                if d == 0.0 {
                    continue;
                }
                let mut s = b[i] + horizontal(l, x, k, row, col);
                if k > 0 {
                    s += l.kz[i] * x[i - plane];
                }
                if k + 1 < l.nz {
                    s += l.kz[i + plane] * x[i + plane];
                }
                x[i] = (1.0 - omega) * x[i] + omega * s / d;
            }
        }
    }
}

/// The kernel's f32 line relaxation on the host (conductances rounded to f32), to check the
/// test's acceptance criterion without a GPU.
#[allow(clippy::needless_range_loop)]
pub(super) fn line_f32(l: &HostLevel, x: &mut [f32], b: &[f32], colour: usize) {
    let (rows, cols, nz) = (l.rows, l.cols, l.nz);
    let plane = rows * cols;
    let f = |v: f64| v as f32;
    for row in 0..rows {
        for col in ((row + colour) % 2..cols).step_by(2) {
            let (mut prev_c, mut prev_x) = (0.0f32, 0.0f32);
            let mut cp = vec![0.0f32; nz];
            for k in 0..nz {
                let i = idx(l, k, row, col);
                let ix = (k * rows + row) * (cols + 1) + col;
                let iy = (k * (rows + 1) + row) * cols + col;
                let mut h = 0.0f32;
                if col > 0 {
                    h += f(l.kx[ix]) * x[i - 1];
                }
                if col + 1 < cols {
                    h += f(l.kx[ix + 1]) * x[i + 1];
                }
                if row > 0 {
                    h += f(l.ky[iy]) * x[i - cols];
                }
                if row + 1 < rows {
                    h += f(l.ky[iy + cols]) * x[i + cols];
                }
                let rhs = b[i] + h;
                let a = if k > 0 { -f(l.kz[i]) } else { 0.0 };
                let c = if k + 1 < nz { -f(l.kz[i + plane]) } else { 0.0 };
                let piv = f(l.diag[i]) - a * prev_c;
                if piv.abs() <= f32::MIN_POSITIVE {
                    cp[k] = 0.0;
                    x[i] = 0.0;
                    prev_c = 0.0;
                    prev_x = 0.0;
                    continue;
                }
                prev_c = c / piv;
                prev_x = (rhs - a * prev_x) / piv;
                cp[k] = prev_c;
                x[i] = prev_x;
            }
            let mut next = prev_x;
            for k in (0..nz.saturating_sub(1)).rev() {
                let i = idx(l, k, row, col);
                next = x[i] - cp[k] * next;
                x[i] = next;
            }
        }
    }
}
