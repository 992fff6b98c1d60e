//! The volume-weighted (symmetric positive definite) operator on one multigrid level, stored
//! column by column: index `(row * cols + col) * nz + k`, so a z line is contiguous.
//!
//! A'φ_c = Σ_f K_f (φ_c − φ_nb), with conductances K_f = c_f · area_f / Δ_f (m) and φ_nb = 0
//! beyond open faces (their K counts in the diagonal only). On the finest level
//! K = c_f Δy Δz_k / Δx on x faces, c_f Δx Δz_k / Δy on y faces, c_f Δx Δy / Δz_{k±½} on z faces;
//! A' = V A where V_c = Δx Δy Δz_k, and the residual b' − A'φ over V_c is the divergence.
//!
//! Coarse levels halve the columns and rows (horizontal semicoarsening, every layer kept): a
//! coarse face's conductance is the sum of the fine conductances it covers, halved on x and y
//! faces (the distance between centres doubles), so closed walls stay closed.

use rayon::prelude::*;

use super::grid::WindGrid;
use super::ops::Coeffs;

#[derive(Debug, Clone)]
pub struct Level {
    pub rows: usize,
    pub cols: usize,
    pub nz: usize,
    /// x faces, `(row * (cols + 1) + i) * nz + k`.
    pub kx: Vec<f64>,
    /// y faces, `(r * cols + col) * nz + k`, face r the north edge of row r.
    pub ky: Vec<f64>,
    /// z faces, `(row * cols + col) * (nz + 1) + k`, face k the bottom of layer k.
    pub kz: Vec<f64>,
    /// Σ K over the cell's faces; 0 for cells with every face closed (solid).
    pub diag: Vec<f64>,
    /// Column width over the finest level's (1, 2, 4, …).
    pub scale: usize,
}

impl Level {
    pub fn n(&self) -> usize {
        self.rows * self.cols * self.nz
    }

    /// A cell vector from this level's column layout `(row·cols + col)·nz + k` to
    /// `[k][row][col]` (the grid's cell order).
    pub fn to_cells(&self, v: &[f64]) -> Vec<f64> {
        let (plane, nz) = (self.rows * self.cols, self.nz);
        let mut out = vec![0.0; v.len()];
        out.par_chunks_mut(plane).enumerate().for_each(|(k, p)| {
            for (rc, x) in p.iter_mut().enumerate() {
                *x = v[rc * nz + k];
            }
        });
        out
    }

    /// The finest level from the grid's face coefficients.
    pub fn finest(grid: &WindGrid, coeffs: &Coeffs) -> Self {
        let (rows, cols, nz) = (grid.rows(), grid.cols(), grid.nz);
        let dx = grid.dx_m();
        let mut kx = vec![0.0; rows * (cols + 1) * nz];
        let mut ky = vec![0.0; (rows + 1) * cols * nz];
        let mut kz = vec![0.0; rows * cols * (nz + 1)];
        kx.par_chunks_mut((cols + 1) * nz)
            .enumerate()
            .for_each(|(row, line)| {
                for i in 0..=cols {
                    for k in 0..nz {
                        line[i * nz + k] =
                            coeffs.cu[(k * rows + row) * (cols + 1) + i] * grid.dz_m(k);
                    }
                }
            });
        ky.par_chunks_mut(cols * nz)
            .enumerate()
            .for_each(|(r, line)| {
                for col in 0..cols {
                    for k in 0..nz {
                        line[col * nz + k] =
                            coeffs.cv[(k * (rows + 1) + r) * cols + col] * grid.dz_m(k);
                    }
                }
            });
        kz.par_chunks_mut(nz + 1).enumerate().for_each(|(rc, col)| {
            for (k, c) in col.iter_mut().enumerate().skip(1) {
                *c = coeffs.cw[k * rows * cols + rc] * dx * dx / coeffs.dzc_m[k];
            }
        });
        let mut level = Self {
            rows,
            cols,
            nz,
            kx,
            ky,
            kz,
            diag: Vec::new(),
            scale: 1,
        };
        level.diag = level.diagonal();
        level
    }

    fn diagonal(&self) -> Vec<f64> {
        let (cols, nz) = (self.cols, self.nz);
        let mut d = vec![0.0; self.n()];
        d.par_chunks_mut(cols * nz)
            .enumerate()
            .for_each(|(row, line)| {
                for col in 0..cols {
                    for k in 0..nz {
                        line[col * nz + k] = self.kx[(row * (cols + 1) + col) * nz + k]
                            + self.kx[(row * (cols + 1) + col + 1) * nz + k]
                            + self.ky[(row * cols + col) * nz + k]
                            + self.ky[((row + 1) * cols + col) * nz + k]
                            + self.kz[(row * cols + col) * (nz + 1) + k]
                            + self.kz[(row * cols + col) * (nz + 1) + k + 1];
                    }
                }
            });
        d
    }

    /// The next coarser level: ⌈cols/2⌉ × ⌈rows/2⌉ columns, the same layers.
    pub fn coarsen(&self) -> Self {
        let (rows, cols, nz) = (self.rows, self.cols, self.nz);
        let (rc, cc) = (rows.div_ceil(2), cols.div_ceil(2));
        let mut kx = vec![0.0; rc * (cc + 1) * nz];
        let mut ky = vec![0.0; (rc + 1) * cc * nz];
        let mut kz = vec![0.0; rc * cc * (nz + 1)];
        // Interior faces: the distance between centres doubles. Boundary faces: φ = 0 stays
        // half a finest column beyond the boundary, so the distance goes from (s + 1)/2 to
        // (2s + 1)/2 finest columns (s = this level's scale).
        let s = self.scale as f64;
        let edge = (s + 1.0) / (2.0 * s + 1.0);
        kx.par_chunks_mut((cc + 1) * nz)
            .enumerate()
            .for_each(|(jr, line)| {
                for ic in 0..=cc {
                    let fi = (2 * ic).min(cols);
                    let f = if ic == 0 || ic == cc { edge } else { 0.5 };
                    for row in [2 * jr, 2 * jr + 1] {
                        if row >= rows {
                            continue;
                        }
                        let src = &self.kx[(row * (cols + 1) + fi) * nz..][..nz];
                        for (d, s) in line[ic * nz..(ic + 1) * nz].iter_mut().zip(src) {
                            *d += f * s;
                        }
                    }
                }
            });
        ky.par_chunks_mut(cc * nz)
            .enumerate()
            .for_each(|(jr, line)| {
                let fr = (2 * jr).min(rows);
                let f = if jr == 0 || jr == rc { edge } else { 0.5 };
                for ic in 0..cc {
                    for col in [2 * ic, 2 * ic + 1] {
                        if col >= cols {
                            continue;
                        }
                        let src = &self.ky[(fr * cols + col) * nz..][..nz];
                        for (d, s) in line[ic * nz..(ic + 1) * nz].iter_mut().zip(src) {
                            *d += f * s;
                        }
                    }
                }
            });
        kz.par_chunks_mut(cc * (nz + 1))
            .enumerate()
            .for_each(|(jr, line)| {
                for row in [2 * jr, 2 * jr + 1] {
                    if row >= rows {
                        continue;
                    }
                    for col in 0..cols {
                        let src = &self.kz[(row * cols + col) * (nz + 1)..][..nz + 1];
                        let dst = &mut line[(col / 2) * (nz + 1)..(col / 2 + 1) * (nz + 1)];
                        for (d, s) in dst.iter_mut().zip(src) {
                            *d += s;
                        }
                    }
                }
            });
        let mut level = Self {
            rows: rc,
            cols: cc,
            nz,
            kx,
            ky,
            kz,
            diag: Vec::new(),
            scale: 2 * self.scale,
        };
        level.diag = level.diagonal();
        level
    }

    /// Σ_h K_h φ_nb over the four horizontal neighbours of cell (row, col, k).
    #[inline]
    fn horizontal(&self, phi: &[f64], row: usize, col: usize, k: usize) -> f64 {
        let (rows, cols, nz) = (self.rows, self.cols, self.nz);
        let mut s = 0.0;
        if col > 0 {
            s += self.kx[(row * (cols + 1) + col) * nz + k] * phi[(row * cols + col - 1) * nz + k];
        }
        if col + 1 < cols {
            s += self.kx[(row * (cols + 1) + col + 1) * nz + k]
                * phi[(row * cols + col + 1) * nz + k];
        }
        if row > 0 {
            s += self.ky[(row * cols + col) * nz + k] * phi[((row - 1) * cols + col) * nz + k];
        }
        if row + 1 < rows {
            s +=
                self.ky[((row + 1) * cols + col) * nz + k] * phi[((row + 1) * cols + col) * nz + k];
        }
        s
    }

    /// out = A' φ.
    pub fn apply(&self, phi: &[f64], out: &mut [f64]) {
        let (cols, nz) = (self.cols, self.nz);
        out.par_chunks_mut(cols * nz)
            .enumerate()
            .for_each(|(row, line)| {
                for col in 0..cols {
                    let c0 = (row * cols + col) * nz;
                    let zb = (row * cols + col) * (nz + 1);
                    for k in 0..nz {
                        let mut s =
                            self.diag[c0 + k] * phi[c0 + k] - self.horizontal(phi, row, col, k);
                        if k > 0 {
                            s -= self.kz[zb + k] * phi[c0 + k - 1];
                        }
                        if k + 1 < nz {
                            s -= self.kz[zb + k + 1] * phi[c0 + k + 1];
                        }
                        line[col * nz + k] = s;
                    }
                }
            });
    }

    /// r = b − A' φ.
    pub fn residual(&self, phi: &[f64], b: &[f64], r: &mut [f64]) {
        self.apply(phi, r);
        r.par_iter_mut()
            .zip(b.par_iter())
            .for_each(|(r, b)| *r = b - *r);
    }

    /// One z-line Gauss–Seidel half sweep over the columns with (row + col) % 2 == colour:
    /// each such column is solved exactly (Thomas) with its horizontal neighbours fixed.
    /// `scratch` (len n) holds the new columns before they are copied into `phi`.
    pub fn line_relax(&self, phi: &mut [f64], b: &[f64], colour: usize, scratch: &mut [f64]) {
        let (cols, nz) = (self.cols, self.nz);
        {
            let phi_r: &[f64] = phi;
            scratch
                .par_chunks_mut(cols * nz)
                .enumerate()
                .for_each(|(row, line)| {
                    let mut cp = vec![0.0; nz];
                    for col in ((row + colour) % 2..cols).step_by(2) {
                        let c0 = (row * cols + col) * nz;
                        let zb = (row * cols + col) * (nz + 1);
                        let x = &mut line[col * nz..(col + 1) * nz];
                        // Forward elimination: x holds the modified right-hand side.
                        let mut prev_c = 0.0;
                        for k in 0..nz {
                            let d = self.diag[c0 + k];
                            let rhs = b[c0 + k] + self.horizontal(phi_r, row, col, k);
                            let a = if k > 0 { -self.kz[zb + k] } else { 0.0 };
                            let c = if k + 1 < nz {
                                -self.kz[zb + k + 1]
                            } else {
                                0.0
                            };
                            let prev_x = if k > 0 { x[k - 1] } else { 0.0 };
                            let piv = d - a * prev_c;
                            if piv.abs() <= f64::MIN_POSITIVE {
                                cp[k] = 0.0;
                                x[k] = 0.0;
                                prev_c = 0.0;
                                continue;
                            }
                            cp[k] = c / piv;
                            x[k] = (rhs - a * prev_x) / piv;
                            prev_c = cp[k];
                        }
                        for k in (0..nz.saturating_sub(1)).rev() {
                            x[k] -= cp[k] * x[k + 1];
                        }
                    }
                });
        }
        phi.par_chunks_mut(cols * nz)
            .zip(scratch.par_chunks(cols * nz))
            .enumerate()
            .for_each(|(row, (p, s))| {
                for col in ((row + colour) % 2..cols).step_by(2) {
                    p[col * nz..(col + 1) * nz].copy_from_slice(&s[col * nz..(col + 1) * nz]);
                }
            });
    }

    /// The coarse cells and weights the (bilinear, cell-centred) prolongation draws fine cell
    /// (row, col, k) from: 3/4 from the parent column and 1/4 from the coarse neighbour on the
    /// child's side, per axis (9/16, 3/16, 3/16, 1/16). A neighbour beyond the domain is the
    /// open boundary's φ = 0 (its weight dropped); a solid neighbour mirrors the parent (no
    /// flux), its weight moved onto the cell it stands in for. `None` entries carry no weight.
    /// The restriction is this map's transpose, which keeps the V-cycle symmetric.
    #[inline]
    fn prolong_weights(
        &self,
        coarse: &Level,
        row: usize,
        col: usize,
        k: usize,
    ) -> [(usize, f64); 4] {
        let (cr, cc, nz) = (coarse.rows, coarse.cols, self.nz);
        let (jr, ic) = (row / 2, col / 2);
        let side = |f: usize, c: usize, n: usize| -> Option<usize> {
            if f.is_multiple_of(2) {
                c.checked_sub(1)
            } else if c + 1 < n {
                Some(c + 1)
            } else {
                None
            }
        };
        let fluid = |r: usize, c: usize| coarse.diag[(r * cc + c) * nz + k] != 0.0;
        let idx = |r: usize, c: usize| (r * cc + c) * nz + k;
        let nbx = side(col, ic, cc);
        let nby = side(row, jr, cr);
        // Interpolation along x on coarse row r: (index, weight) for the parent and the side.
        let along_x = |r: usize| -> [(usize, f64); 2] {
            match nbx {
                None => [(idx(r, ic), 0.75), (usize::MAX, 0.0)],
                Some(n) if fluid(r, n) => [(idx(r, ic), 0.75), (idx(r, n), 0.25)],
                Some(_) => [(idx(r, ic), 1.0), (usize::MAX, 0.0)],
            }
        };
        let own = along_x(jr);
        match nby {
            None => [
                (own[0].0, 0.75 * own[0].1),
                (own[1].0, 0.75 * own[1].1),
                (usize::MAX, 0.0),
                (usize::MAX, 0.0),
            ],
            Some(n) if fluid(n, ic) => {
                let o = along_x(n);
                [
                    (own[0].0, 0.75 * own[0].1),
                    (own[1].0, 0.75 * own[1].1),
                    (o[0].0, 0.25 * o[0].1),
                    (o[1].0, 0.25 * o[1].1),
                ]
            }
            Some(_) => [own[0], own[1], (usize::MAX, 0.0), (usize::MAX, 0.0)],
        }
    }

    /// coarse_b = Pᵀ fine_r: the transpose of [`Level::prolong_add`]'s bilinear map, gathered
    /// per coarse cell from the fine columns within one column of its children.
    pub fn restrict(&self, fine_r: &[f64], coarse: &Level, coarse_b: &mut [f64]) {
        let (rows, cols, nz) = (self.rows, self.cols, self.nz);
        let cc = coarse.cols;
        coarse_b
            .par_chunks_mut(cc * nz)
            .enumerate()
            .for_each(|(jr, line)| {
                line.fill(0.0);
                let r0 = (2 * jr).saturating_sub(1);
                let r1 = (2 * jr + 3).min(rows);
                for ic in 0..cc {
                    let c0 = (2 * ic).saturating_sub(1);
                    let c1 = (2 * ic + 3).min(cols);
                    for k in 0..nz {
                        let target = (jr * cc + ic) * nz + k;
                        if coarse.diag[target] == 0.0 {
                            continue;
                        }
                        let mut s = 0.0;
                        for row in r0..r1 {
                            for col in c0..c1 {
                                let f = (row * cols + col) * nz + k;
                                if self.diag[f] == 0.0 {
                                    continue;
                                }
                                for (i, w) in self.prolong_weights(coarse, row, col, k) {
                                    if i == target {
                                        s += w * fine_r[f];
                                    }
                                }
                            }
                        }
                        line[ic * nz + k] = s;
                    }
                }
            });
    }

    /// φ_fine += P φ_coarse (bilinear across columns, [`Level::prolong_weights`]) on fluid
    /// cells.
    pub fn prolong_add(&self, coarse: &Level, coarse_x: &[f64], phi: &mut [f64]) {
        let (cols, nz) = (self.cols, self.nz);
        phi.par_chunks_mut(cols * nz)
            .enumerate()
            .for_each(|(row, line)| {
                for col in 0..cols {
                    for k in 0..nz {
                        if self.diag[(row * cols + col) * nz + k] == 0.0 {
                            continue;
                        }
                        let mut s = 0.0;
                        for (i, w) in self.prolong_weights(coarse, row, col, k) {
                            if w != 0.0 {
                                s += w * coarse_x[i];
                            }
                        }
                        line[col * nz + k] += s;
                    }
                }
            });
    }
}
