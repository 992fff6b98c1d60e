//! Host references: random stair-step grids, the WEST half sweep in the kernel's f32
//! arithmetic (rustc never contracts to FMA; the GPU may, so comparisons allow rounding), the
//! f64 divergence, and an f64 z-line multigrid on the device layout (mirroring geofield's
//! `level.rs` and `multigrid.rs`).

use crate::wind::{HostLevel, WestInputs};

pub(super) struct Rng(pub u64);

impl Rng {
    /// Uniform in [0, 1) (splitmix64).
    pub fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.next()
    }
}

/// A stair-step grid: ground layer per column, transparencies as geofield's `Coeffs::new`
/// (open between fluid cells and on the edges of fluid cells, bottom closed, top open).
pub(super) struct Grid {
    pub rows: usize,
    pub cols: usize,
    pub nz: usize,
    pub dx: f64,
    pub dz: Vec<f64>,
    pub alpha: f64,
    pub ground_k: Vec<u32>,
    pub tu: Vec<u8>,
    pub tv: Vec<u8>,
    pub tw: Vec<u8>,
    pub zscale: Vec<f64>,
}

impl Grid {
    pub fn random(rows: usize, cols: usize, nz: usize, seed: u64) -> Self {
        let mut r = Rng(seed);
        let dz: Vec<f64> = (0..nz).map(|_| r.uniform(5.0, 15.0)).collect();
        let ground_k: Vec<u32> = (0..rows * cols)
            .map(|_| (r.next() * (nz / 2 + 1) as f64) as u32)
            .map(|g| g.min(nz as u32 - 1))
            .collect();
        let mut g = Grid {
            rows,
            cols,
            nz,
            dx: 50.0,
            dz,
            alpha: r.uniform(0.5, 2.0),
            ground_k,
            tu: vec![0; nz * rows * (cols + 1)],
            tv: vec![0; nz * (rows + 1) * cols],
            tw: vec![0; (nz + 1) * rows * cols],
            zscale: Vec::new(),
        };
        let fl =
            |g: &Grid, k: usize, row: usize, col: usize| k as u32 >= g.ground_k[row * cols + col];
        for k in 0..nz {
            for row in 0..rows {
                for i in 0..=cols {
                    let lo = i == 0 || fl(&g, k, row, i - 1);
                    let hi = i == cols || fl(&g, k, row, i);
                    let any = (i > 0 && fl(&g, k, row, i - 1)) || (i < cols && fl(&g, k, row, i));
                    g.tu[(k * rows + row) * (cols + 1) + i] = u8::from(lo && hi && any);
                }
            }
            for rr in 0..=rows {
                for col in 0..cols {
                    let lo = rr == 0 || fl(&g, k, rr - 1, col);
                    let hi = rr == rows || fl(&g, k, rr, col);
                    let any =
                        (rr > 0 && fl(&g, k, rr - 1, col)) || (rr < rows && fl(&g, k, rr, col));
                    g.tv[(k * (rows + 1) + rr) * cols + col] = u8::from(lo && hi && any);
                }
            }
        }
        for k in 1..=nz {
            for rc in 0..rows * cols {
                let open = k == nz || fl(&g, k - 1, rc / cols, rc % cols);
                g.tw[k * rows * cols + rc] = u8::from(open);
            }
        }
        let a2 = g.alpha * g.alpha;
        g.zscale = (0..=nz).map(|k| a2 / g.dzc(k)).collect();
        g
    }

    pub fn n(&self) -> usize {
        self.rows * self.cols * self.nz
    }

    pub fn fluid(&self, k: usize, row: usize, col: usize) -> bool {
        k as u32 >= self.ground_k[row * self.cols + col]
    }

    /// Distance between the centres either side of z face k (geofield's `dzc_m`).
    pub fn dzc(&self, k: usize) -> f64 {
        if k == 0 {
            self.dz[0]
        } else if k == self.nz {
            self.dz[self.nz - 1]
        } else {
            0.5 * (self.dz[k - 1] + self.dz[k])
        }
    }

    pub fn inputs<'a>(&'a self, div0: &'a [f64], omega: f64) -> WestInputs<'a> {
        WestInputs {
            rows: self.rows,
            cols: self.cols,
            nz: self.nz,
            dx_m: self.dx,
            dz_m: &self.dz,
            zscale_per_m: &self.zscale,
            tu: &self.tu,
            tv: &self.tv,
            tw: &self.tw,
            ground_k: &self.ground_k,
            div0_per_s: div0,
            omega,
        }
    }

    /// Random faces of up to `speed` m/s, 0 on closed faces.
    pub fn faces(&self, speed: f64, seed: u64) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
        let mut r = Rng(seed);
        let mut f = |t: &[u8]| -> Vec<f32> {
            t.iter()
                .map(|&t| {
                    if t == 1 {
                        r.uniform(-speed, speed) as f32
                    } else {
                        0.0
                    }
                })
                .collect()
        };
        (f(&self.tu), f(&self.tv), f(&self.tw))
    }

    /// Random divergence on fluid cells (s⁻¹).
    pub fn div0(&self, scale: f64, seed: u64) -> Vec<f64> {
        let mut r = Rng(seed);
        let plane = self.rows * self.cols;
        (0..self.n())
            .map(|i| {
                let (k, rc) = (i / plane, i % plane);
                let v = r.uniform(-scale, scale);
                if k as u32 >= self.ground_k[rc] {
                    v
                } else {
                    0.0
                }
            })
            .collect()
    }

    /// One colour of the kernel's sweep in f32, in place.
    #[allow(clippy::too_many_arguments)]
    pub fn west_half(
        &self,
        d0: &[f64],
        omega: f64,
        colour: usize,
        u: &mut [f32],
        v: &mut [f32],
        w: &mut [f32],
    ) {
        let (rows, cols) = (self.rows, self.cols);
        let idx = (1.0 / self.dx) as f32;
        let om = omega as f32;
        for k in 0..self.nz {
            let idz = (1.0 / self.dz[k]) as f32;
            let (zs0, zs1) = (self.zscale[k] as f32, self.zscale[k + 1] as f32);
            for row in 0..rows {
                for col in 0..cols {
                    if (col + row + k) % 2 != colour {
                        continue;
                    }
                    let iu = (k * rows + row) * (cols + 1) + col;
                    let iv = (k * (rows + 1) + row) * cols + col;
                    let ib = (k * rows + row) * cols + col;
                    let it = ib + rows * cols;
                    let gw_ = f32::from(self.tu[iu]) * idx;
                    let ge = f32::from(self.tu[iu + 1]) * idx;
                    let gn = f32::from(self.tv[iv]) * idx;
                    let gs = f32::from(self.tv[iv + cols]) * idx;
                    let gb = f32::from(self.tw[ib]) * zs0;
                    let gt = f32::from(self.tw[it]) * zs1;
                    let s = (gw_ + ge) * idx + (gn + gs) * idx + (gb + gt) * idz;
                    if s.is_nan() || s <= 0.0 {
                        continue;
                    }
                    let d = d0[ib] as f32
                        + ((u[iu + 1] - u[iu]) * idx
                            + (v[iv] - v[iv + cols]) * idx
                            + (w[it] - w[ib]) * idz);
                    let delta = (om / s) * d;
                    u[iu] += gw_ * delta;
                    u[iu + 1] -= ge * delta;
                    v[iv + cols] += gs * delta;
                    v[iv] -= gn * delta;
                    w[ib] += gb * delta;
                    w[it] -= gt * delta;
                }
            }
        }
    }

    /// max |d0 + div(faces)| over fluid cells, in f64.
    pub fn max_div(&self, d0: &[f64], u: &[f32], v: &[f32], w: &[f32]) -> f64 {
        let (rows, cols) = (self.rows, self.cols);
        let inv_dx = 1.0 / self.dx;
        let mut m = 0.0f64;
        for k in 0..self.nz {
            let inv_dz = 1.0 / self.dz[k];
            for row in 0..rows {
                for col in 0..cols {
                    if !self.fluid(k, row, col) {
                        continue;
                    }
                    let iu = (k * rows + row) * (cols + 1) + col;
                    let iv = (k * (rows + 1) + row) * cols + col;
                    let ib = (k * rows + row) * cols + col;
                    let f = |x: f32| f64::from(x);
                    let d = d0[ib]
                        + ((f(u[iu + 1]) - f(u[iu])) * inv_dx
                            + (f(v[iv]) - f(v[iv + cols])) * inv_dx
                            + (f(w[ib + rows * cols]) - f(w[ib])) * inv_dz);
                    m = m.max(d.abs());
                }
            }
        }
        m
    }

    /// The finest level: K = T·weight·(area/distance), weights in [0.5, 2] (closed faces stay
    /// closed), z faces α²·Δx²/Δz_c (so z couples more strongly when Δz ≪ Δx).
    pub fn level(&self, seed: u64) -> HostLevel {
        let mut r = Rng(seed);
        let (rows, cols, nz) = (self.rows, self.cols, self.nz);
        let mut wt = |t: u8| f64::from(t) * r.uniform(0.5, 2.0);
        let mut kx = vec![0.0; self.tu.len()];
        let mut ky = vec![0.0; self.tv.len()];
        let mut kz = vec![0.0; self.tw.len()];
        for k in 0..nz {
            let plane_u = rows * (cols + 1);
            let plane_v = (rows + 1) * cols;
            for i in 0..plane_u {
                kx[k * plane_u + i] = wt(self.tu[k * plane_u + i]) * self.dz[k];
            }
            for i in 0..plane_v {
                ky[k * plane_v + i] = wt(self.tv[k * plane_v + i]) * self.dz[k];
            }
        }
        for k in 0..=nz {
            let g = self.alpha * self.alpha * self.dx * self.dx / self.dzc(k);
            for rc in 0..rows * cols {
                kz[k * rows * cols + rc] = wt(self.tw[k * rows * cols + rc]) * g;
            }
        }
        with_diag(rows, cols, nz, kx, ky, kz)
    }

    /// 1/V for fluid cells, 0 for solid ones.
    pub fn inv_vol(&self) -> Vec<f64> {
        let plane = self.rows * self.cols;
        (0..self.n())
            .map(|i| {
                let k = i / plane;
                if k as u32 >= self.ground_k[i % plane] {
                    1.0 / (self.dx * self.dx * self.dz[k])
                } else {
                    0.0
                }
            })
            .collect()
    }
}

fn with_diag(
    rows: usize,
    cols: usize,
    nz: usize,
    kx: Vec<f64>,
    ky: Vec<f64>,
    kz: Vec<f64>,
) -> HostLevel {
    let mut diag = vec![0.0; rows * cols * nz];
    for k in 0..nz {
        for row in 0..rows {
            for col in 0..cols {
                let ix = (k * rows + row) * (cols + 1) + col;
                let iy = (k * (rows + 1) + row) * cols + col;
                let i = (k * rows + row) * cols + col;
                diag[i] =
                    kx[ix] + kx[ix + 1] + ky[iy] + ky[iy + cols] + kz[i] + kz[i + rows * cols];
            }
        }
    }
    HostLevel {
        rows,
        cols,
        nz,
        kx,
        ky,
        kz,
        diag,
    }
}

/// The next coarser level (geofield's `Level::coarsen` on the device layout); `scale` is the
/// fine level's column width in finest columns (boundary faces keep φ = 0 half a finest column
/// outside the domain).
pub(super) fn coarsen(f: &HostLevel, scale: usize) -> HostLevel {
    let (rows, cols, nz) = (f.rows, f.cols, f.nz);
    let (rc, cc) = (rows.div_ceil(2), cols.div_ceil(2));
    let s = scale as f64;
    let edge = (s + 1.0) / (2.0 * s + 1.0);
    let mut kx = vec![0.0; nz * rc * (cc + 1)];
    let mut ky = vec![0.0; nz * (rc + 1) * cc];
    let mut kz = vec![0.0; (nz + 1) * rc * cc];
    for k in 0..nz {
        for jr in 0..rc {
            for ic in 0..=cc {
                let fi = (2 * ic).min(cols);
                let w = if ic == 0 || ic == cc { edge } else { 0.5 };
                for row in [2 * jr, 2 * jr + 1].into_iter().filter(|&r| r < rows) {
                    kx[(k * rc + jr) * (cc + 1) + ic] +=
                        w * f.kx[(k * rows + row) * (cols + 1) + fi];
                }
            }
        }
        for jr in 0..=rc {
            let fr = (2 * jr).min(rows);
            let w = if jr == 0 || jr == rc { edge } else { 0.5 };
            for ic in 0..cc {
                for col in [2 * ic, 2 * ic + 1].into_iter().filter(|&c| c < cols) {
                    ky[(k * (rc + 1) + jr) * cc + ic] +=
                        w * f.ky[(k * (rows + 1) + fr) * cols + col];
                }
            }
        }
    }
    for k in 0..=nz {
        for row in 0..rows {
            for col in 0..cols {
                kz[(k * rc + row / 2) * cc + col / 2] += f.kz[(k * rows + row) * cols + col];
            }
        }
    }
    with_diag(rc, cc, nz, kx, ky, kz)
}

/// Levels down to at most 2 × 2 columns (geofield's `Problem::new`).
pub(super) fn hierarchy(fine: HostLevel) -> Vec<HostLevel> {
    let mut levels = vec![fine];
    while let Some(last) = levels.last() {
        if last.rows.max(last.cols) <= 2 {
            break;
        }
        let c = coarsen(last, 1 << (levels.len() - 1));
        levels.push(c);
    }
    levels
}
