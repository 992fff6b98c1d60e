//! The volume-weighted (symmetric positive definite) operator on one multigrid level, stored
//! column by column: index `(row * cols + col) * nz + k`, so a z line is contiguous.
//!
//! A'φ_c = Σ_f K_f (φ_c − φ_nb), with conductances K_f = c_f · area_f / Δ_f (m) and φ_nb = 0
//! beyond open faces (their K counts in the diagonal only). On the finest level
//! K = c_f Δy Δz_k / Δx on x faces, c_f Δx Δz_k / Δy on y faces, c_f Δx Δy / Δz_{k±½} on z faces;
//! A' = V A where V_c = Δx Δy Δz_k, and the residual b' − A'φ over V_c is the divergence.
//!
//! Coarse levels pair the columns and rows (horizontal semicoarsening, every layer kept; ⌈n/2⌉
//! groups, see `geofield_cuda::wind::coarsening`, the one copy of the rule that the device's
//! assembly uses too): a coarse face's conductance is the sum of the fine conductances it
//! covers times d_fine/d_coarse, the distances between the centres either side in finest
//! columns ((a + b)/2 between columns of widths a and b; w/2 + ½ on the domain's boundary
//! faces, so that φ = 0 stays half a finest column outside the boundary on every level, where
//! the finest level puts it), so closed walls stay closed. With widths 2^l this is ½ on
//! interior faces and (s + 1)/(2s + 1) on boundary faces. Halving the boundary faces too moved
//! φ = 0 outward level by level (~0.4 per V-cycle on 512² × 128 instead of ~0.1); treating the
//! single last column of an odd count as full width made its conductances wrong by up to 2^l,
//! and a real 257² DEM diverged.

use std::ops::Range;

use rayon::prelude::*;

use geofield_cuda::wind::coarsening;

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
    /// Width of each column in finest columns (1 on the finest level), `cols`.
    pub col_w: Vec<u32>,
    /// Height of each row in finest rows, `rows`.
    pub row_w: Vec<u32>,
    /// `Some` when this level holds a band of rows of the whole level (the split solve, see
    /// `wind::split`).
    pub part: Option<Part>,
}

/// Where a band of rows lies in the whole level: the band's faces at its edges inside the
/// domain are interior faces, whose coarsening factors need the neighbours' row heights.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    /// The whole level's row of this band's row 0 (even on every level the band is coarsened
    /// from, so that rows pair up as in the whole level).
    pub first: usize,
    /// Every row's height on the whole level, in finest rows.
    pub all_row_w: Vec<u32>,
}

/// The rows of φ beyond a band's first and last rows, when the domain goes on there (held by
/// the neighbouring bands: the split solve's halo rows, `cols · nz` values each). The whole
/// level has none.
#[derive(Debug, Clone, Copy, Default)]
pub struct Halo<'a> {
    pub north: Option<&'a [f64]>,
    pub south: Option<&'a [f64]>,
}

/// A cell vector from column layout `(row·cols + col)·nz + k` (`plane` = rows · cols columns)
/// to `[k][row][col]` (the grid's cell order).
pub fn columns_to_cells(plane: usize, nz: usize, v: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; v.len()];
    if plane == 0 {
        return out;
    }
    out.par_chunks_mut(plane).enumerate().for_each(|(k, p)| {
        for (rc, x) in p.iter_mut().enumerate() {
            *x = v[rc * nz + k];
        }
    });
    out
}

/// Row `row`'s neighbouring rows of φ: from φ itself, or the halo at a band's edges.
#[derive(Clone, Copy)]
struct Around<'a> {
    north: Option<&'a [f64]>,
    here: &'a [f64],
    south: Option<&'a [f64]>,
}

impl Level {
    pub fn n(&self) -> usize {
        self.rows * self.cols * self.nz
    }

    /// A cell vector from this level's column layout `(row·cols + col)·nz + k` to
    /// `[k][row][col]` (the grid's cell order).
    pub fn to_cells(&self, v: &[f64]) -> Vec<f64> {
        columns_to_cells(self.rows * self.cols, self.nz, v)
    }

    /// The finest level from the grid's face coefficients.
    pub fn finest(grid: &WindGrid, coeffs: &Coeffs) -> Self {
        Self::finest_rows(grid, coeffs, 0..grid.rows())
    }

    /// Rows `band` of the finest level (all rows: the whole level, `part` `None`).
    pub fn finest_rows(grid: &WindGrid, coeffs: &Coeffs, band: Range<usize>) -> Self {
        let (all_rows, cols, nz) = (grid.rows(), grid.cols(), grid.nz);
        let (r0, rows) = (band.start, band.len());
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
                            coeffs.cu[(k * all_rows + r0 + row) * (cols + 1) + i] * grid.dz_m(k);
                    }
                }
            });
        ky.par_chunks_mut(cols * nz)
            .enumerate()
            .for_each(|(r, line)| {
                for col in 0..cols {
                    for k in 0..nz {
                        line[col * nz + k] =
                            coeffs.cv[(k * (all_rows + 1) + r0 + r) * cols + col] * grid.dz_m(k);
                    }
                }
            });
        kz.par_chunks_mut(nz + 1).enumerate().for_each(|(rc, col)| {
            for (k, c) in col.iter_mut().enumerate().skip(1) {
                *c = coeffs.cw[k * all_rows * cols + r0 * cols + rc] * dx * dx / coeffs.dzc_m[k];
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
            col_w: vec![1; cols],
            row_w: vec![1; rows],
            part: (rows != all_rows).then(|| Part {
                first: r0,
                all_row_w: vec![1; all_rows],
            }),
        };
        level.diag = level.diagonal();
        level
    }

    /// The whole level from its bands in order (each band's level as `finest_rows` or
    /// `coarsen` made it): the same values as the whole level built at once.
    pub fn join(bands: &[Level]) -> Self {
        let first = &bands[0];
        let (cols, nz) = (first.cols, first.nz);
        let mut kx = Vec::new();
        let mut ky = Vec::new();
        let mut kz = Vec::new();
        let mut row_w = Vec::new();
        for (i, b) in bands.iter().enumerate() {
            kx.extend_from_slice(&b.kx);
            // A band's first face is the last face of the band above.
            ky.extend_from_slice(&b.ky[if i == 0 { 0 } else { cols * nz }..]);
            kz.extend_from_slice(&b.kz);
            row_w.extend_from_slice(&b.row_w);
        }
        let mut level = Self {
            rows: row_w.len(),
            cols,
            nz,
            kx,
            ky,
            kz,
            diag: Vec::new(),
            col_w: first.col_w.clone(),
            row_w,
            part: None,
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

    /// The next coarser level: ⌈cols/2⌉ × ⌈rows/2⌉ columns (`geofield_cuda::wind::coarsening`),
    /// the same layers.
    pub fn coarsen(&self) -> Self {
        let (rows, cols, nz) = (self.rows, self.cols, self.nz);
        let (rc, cc) = (
            coarsening::coarse_count(rows),
            coarsening::coarse_count(cols),
        );
        let col_w = coarsening::coarse_widths(&self.col_w);
        let row_w = coarsening::coarse_widths(&self.row_w);
        let fx = coarsening::face_factors(&self.col_w, &col_w);
        // A band's faces take the whole level's factors (its edges inside the domain are
        // interior faces there).
        let (fy, part) = match &self.part {
            None => (coarsening::face_factors(&self.row_w, &row_w), None),
            Some(p) => {
                let all = coarsening::coarse_widths(&p.all_row_w);
                let f = coarsening::face_factors(&p.all_row_w, &all);
                let first = p.first / 2;
                (
                    f[first..=first + rc].to_vec(),
                    Some(Part {
                        first,
                        all_row_w: all,
                    }),
                )
            }
        };
        let mut kx = vec![0.0; rc * (cc + 1) * nz];
        let mut ky = vec![0.0; (rc + 1) * cc * nz];
        let mut kz = vec![0.0; rc * cc * (nz + 1)];
        kx.par_chunks_mut((cc + 1) * nz)
            .enumerate()
            .for_each(|(jr, line)| {
                for ic in 0..=cc {
                    let fi = (2 * ic).min(cols);
                    let f = fx[ic];
                    for row in coarsening::children(rows, jr) {
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
                let f = fy[jr];
                for ic in 0..cc {
                    for col in coarsening::children(cols, ic) {
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
                for row in coarsening::children(rows, jr) {
                    for col in 0..cols {
                        let p = col / 2;
                        let src = &self.kz[(row * cols + col) * (nz + 1)..][..nz + 1];
                        let dst = &mut line[p * (nz + 1)..(p + 1) * (nz + 1)];
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
            col_w,
            row_w,
            part,
        };
        level.diag = level.diagonal();
        level
    }

    /// The whole level's row of this level's row 0.
    pub fn first_row(&self) -> usize {
        self.part.as_ref().map_or(0, |p| p.first)
    }

    /// Row `row` of φ and its neighbouring rows (the halo's beyond the band's edges).
    #[inline]
    fn around<'a>(&self, phi: &'a [f64], halo: Halo<'a>, row: usize) -> Around<'a> {
        let line = self.cols * self.nz;
        Around {
            north: if row > 0 {
                Some(&phi[(row - 1) * line..row * line])
            } else {
                halo.north
            },
            here: &phi[row * line..(row + 1) * line],
            south: if row + 1 < self.rows {
                Some(&phi[(row + 1) * line..(row + 2) * line])
            } else {
                halo.south
            },
        }
    }

    /// Σ_h K_h φ_nb over the four horizontal neighbours of cell (row, col, k).
    #[inline]
    fn horizontal(&self, a: &Around<'_>, row: usize, col: usize, k: usize) -> f64 {
        let (cols, nz) = (self.cols, self.nz);
        let mut s = 0.0;
        if col > 0 {
            s += self.kx[(row * (cols + 1) + col) * nz + k] * a.here[(col - 1) * nz + k];
        }
        if col + 1 < cols {
            s += self.kx[(row * (cols + 1) + col + 1) * nz + k] * a.here[(col + 1) * nz + k];
        }
        if let Some(n) = a.north {
            s += self.ky[(row * cols + col) * nz + k] * n[col * nz + k];
        }
        if let Some(south) = a.south {
            s += self.ky[((row + 1) * cols + col) * nz + k] * south[col * nz + k];
        }
        s
    }

    /// out = A' φ.
    pub fn apply(&self, phi: &[f64], out: &mut [f64]) {
        self.apply_with(phi, Halo::default(), out);
    }

    /// out = A' φ on a band with its halo rows.
    pub fn apply_with(&self, phi: &[f64], halo: Halo<'_>, out: &mut [f64]) {
        let (cols, nz) = (self.cols, self.nz);
        out.par_chunks_mut(cols * nz)
            .enumerate()
            .for_each(|(row, line)| {
                let around = self.around(phi, halo, row);
                for col in 0..cols {
                    let c0 = (row * cols + col) * nz;
                    let zb = (row * cols + col) * (nz + 1);
                    for k in 0..nz {
                        let mut s =
                            self.diag[c0 + k] * phi[c0 + k] - self.horizontal(&around, row, col, k);
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
        self.residual_with(phi, Halo::default(), b, r);
    }

    /// r = b − A' φ on a band with its halo rows.
    pub fn residual_with(&self, phi: &[f64], halo: Halo<'_>, b: &[f64], r: &mut [f64]) {
        self.apply_with(phi, halo, r);
        r.par_iter_mut()
            .zip(b.par_iter())
            .for_each(|(r, b)| *r = b - *r);
    }

    /// One z-line Gauss–Seidel half sweep over the columns with (row + col) % 2 == colour:
    /// each such column is solved exactly (Thomas) with its horizontal neighbours fixed.
    /// `scratch` (len n) holds the new columns before they are copied into `phi`.
    pub fn line_relax(&self, phi: &mut [f64], b: &[f64], colour: usize, scratch: &mut [f64]) {
        self.line_relax_with(phi, Halo::default(), b, colour, scratch);
    }

    /// [`Level::line_relax`] on a band with its halo rows (the colours are the whole level's:
    /// by the row in the whole level).
    pub fn line_relax_with(
        &self,
        phi: &mut [f64],
        halo: Halo<'_>,
        b: &[f64],
        colour: usize,
        scratch: &mut [f64],
    ) {
        let (cols, nz) = (self.cols, self.nz);
        let first = self.first_row();
        {
            let phi_r: &[f64] = phi;
            scratch
                .par_chunks_mut(cols * nz)
                .enumerate()
                .for_each(|(row, line)| {
                    let mut cp = vec![0.0; nz];
                    let around = self.around(phi_r, halo, row);
                    for col in ((first + row + colour) % 2..cols).step_by(2) {
                        let c0 = (row * cols + col) * nz;
                        let zb = (row * cols + col) * (nz + 1);
                        let x = &mut line[col * nz..(col + 1) * nz];
                        // Forward elimination: x holds the modified right-hand side.
                        let mut prev_c = 0.0;
                        for k in 0..nz {
                            let d = self.diag[c0 + k];
                            let rhs = b[c0 + k] + self.horizontal(&around, row, col, k);
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
                for col in ((first + row + colour) % 2..cols).step_by(2) {
                    p[col * nz..(col + 1) * nz].copy_from_slice(&s[col * nz..(col + 1) * nz]);
                }
            });
    }

    /// Sum the fine residual over each coarse column's children into the coarse right-hand side.
    pub fn restrict(&self, fine_r: &[f64], coarse: &Level, coarse_b: &mut [f64]) {
        let nz = self.nz;
        let (cols, cc) = (self.cols, coarse.cols);
        coarse_b
            .par_chunks_mut(cc * nz)
            .enumerate()
            .for_each(|(jr, line)| {
                line.fill(0.0);
                for row in coarsening::children(self.rows, jr) {
                    for col in 0..cols {
                        let dst = &mut line[(col / 2) * nz..(col / 2 + 1) * nz];
                        let src = &fine_r[(row * cols + col) * nz..(row * cols + col + 1) * nz];
                        for (d, s) in dst.iter_mut().zip(src) {
                            *d += s;
                        }
                    }
                }
            });
    }

    /// φ_fine += φ_coarse of the parent column (piecewise constant).
    pub fn prolong_add(&self, coarse: &Level, coarse_x: &[f64], phi: &mut [f64]) {
        let (cols, nz, cc) = (self.cols, self.nz, coarse.cols);
        phi.par_chunks_mut(cols * nz)
            .enumerate()
            .for_each(|(row, line)| {
                for col in 0..cols {
                    let p = ((row / 2) * cc + col / 2) * nz;
                    for k in 0..nz {
                        if self.diag[(row * cols + col) * nz + k] != 0.0 {
                            line[col * nz + k] += coarse_x[p + k];
                        }
                    }
                }
            });
    }
}
