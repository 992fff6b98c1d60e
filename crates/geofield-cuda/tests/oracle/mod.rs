//! f64 CPU oracles and input builders for the GPU dispersal tests (slow, obviously correct).
#![allow(dead_code)]

use geofield_cuda::CudaError;
use geofield_cuda::dispersal::{GridDims, HostOut, KernelShape, OutPrecision, Pyramid, TileBins};

/// SplitMix64: a tiny seeded generator (no rand dependency).
pub struct SplitMix(pub u64);

impl SplitMix {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [lo, hi).
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
    }
}

/// Trees in grid-relative metres with f32 weights.
pub struct Trees {
    pub u: Vec<f64>,
    pub v: Vec<f64>,
    pub w: Vec<f32>,
}

impl Trees {
    /// `n` trees uniform over the grid extended by `margin` m on every side (so some lie
    /// outside: negative u, v beyond the south edge); with `coincident`, trees 0..5 share the
    /// position of tree 5.
    pub fn random(
        rng: &mut SplitMix,
        n: usize,
        g: &GridDims,
        margin: f64,
        coincident: bool,
    ) -> Trees {
        let (wu, wv) = (
            f64::from(g.cols) * g.cell_size_m,
            f64::from(g.rows) * g.cell_size_m,
        );
        let mut t = Trees {
            u: Vec::new(),
            v: Vec::new(),
            w: Vec::new(),
        };
        for _ in 0..n {
            t.u.push(rng.uniform(-margin, wu + margin));
            t.v.push(rng.uniform(-margin, wv + margin));
            t.w.push(rng.uniform(0.5, 2.0) as f32);
        }
        if coincident && n > 5 {
            for k in 0..5 {
                t.u[k] = t.u[5];
                t.v[k] = t.v[5];
            }
        }
        t
    }
}

/// The model's K(r), written independently of the library.
pub fn k_of(shape: &KernelShape, r: f64) -> f64 {
    match *shape {
        KernelShape::Weibull { d, theta } => (-d * r.powf(theta)).exp(),
        KernelShape::Lognormal { x0, xb } => {
            if r > 0.0 {
                let t = (r / x0).ln() / xb;
                (-0.5 * t * t).exp()
            } else {
                0.0
            }
        }
        KernelShape::TwoDt { u, p } => (1.0 + r * r / u).powf(-(p + 1.0)),
    }
}

pub fn sfu_ops_per_pair(shape: &KernelShape) -> f64 {
    match *shape {
        KernelShape::Weibull { theta: 2.0, .. } => 1.0,
        KernelShape::Weibull { theta, .. } if theta == 3.0 || theta == 1.0 => 2.0,
        KernelShape::Weibull { .. } => 3.0,
        KernelShape::Lognormal { .. } => 2.0,
        KernelShape::TwoDt { p: 1.0, .. } => 1.0,
        KernelShape::TwoDt { .. } => 2.0,
    }
}

/// Per-cell relative tolerance: 1e-5, 2e-5 for general θ (three chained SFU approximations).
pub fn cell_tol(shape: &KernelShape) -> f64 {
    match *shape {
        KernelShape::Weibull { theta, .. } if ![1.0, 2.0, 3.0].contains(&theta) => 2e-5,
        _ => 1e-5,
    }
}

/// Fills `out[row * cols + col]` with f(row, col) on all cores.
fn par_cells(g: &GridDims, f: impl Fn(u32, u32) -> f64 + Sync) -> Vec<f64> {
    let (cols, rows) = (g.cols as usize, g.rows as usize);
    let mut out = vec![0.0; cols * rows];
    let threads = std::thread::available_parallelism().map_or(4, |n| n.get());
    let per = rows.div_ceil(threads).max(1);
    std::thread::scope(|s| {
        for (b, chunk) in out.chunks_mut((per * cols).max(1)).enumerate() {
            let f = &f;
            s.spawn(move || {
                for (i, x) in chunk.iter_mut().enumerate() {
                    *x = f((b * per + i / cols) as u32, (i % cols) as u32);
                }
            });
        }
    });
    out
}

fn centre(g: &GridDims, i: u32) -> f64 {
    (f64::from(i) + 0.5) * g.cell_size_m
}

/// Direct f64 double loop; torus: minimum image per axis.
pub fn oracle_exact(
    g: &GridDims,
    shape: &KernelShape,
    torus: Option<(f64, f64)>,
    t: &Trees,
) -> Vec<f64> {
    par_cells(g, |row, col| {
        let (cu, cv) = (centre(g, col), centre(g, row));
        let mut acc = 0.0;
        for k in 0..t.u.len() {
            let (mut du, mut dv) = (t.u[k] - cu, t.v[k] - cv);
            if let Some((lx, ly)) = torus {
                du -= lx * (du / lx).round();
                dv -= ly * (dv / ly).round();
            }
            acc += f64::from(t.w[k]) * k_of(shape, (du * du + dv * dv).sqrt());
        }
        acc
    })
}

/// Trees with d² ≤ R² only. Also returns, per cell, Σ w K(R) over trees within 1e-3 m of the
/// radius: f32 rounding may legitimately decide those pairs either way.
pub fn oracle_cutoff(
    g: &GridDims,
    shape: &KernelShape,
    t: &Trees,
    radius: f64,
) -> (Vec<f64>, Vec<f64>) {
    let one = |row: u32, col: u32, slack: bool| {
        let (cu, cv) = (centre(g, col), centre(g, row));
        let mut acc = 0.0;
        for k in 0..t.u.len() {
            let (du, dv) = (t.u[k] - cu, t.v[k] - cv);
            let d2 = du * du + dv * dv;
            let d = d2.sqrt();
            if slack {
                if (d - radius).abs() < 1e-3 {
                    acc += f64::from(t.w[k]) * k_of(shape, radius);
                }
            } else if d2 <= radius * radius {
                acc += f64::from(t.w[k]) * k_of(shape, d);
            }
        }
        acc
    };
    (
        par_cells(g, |r, c| one(r, c, false)),
        par_cells(g, |r, c| one(r, c, true)),
    )
}

/// Host binning into square tiles (what the library's host side does before the cutoff kernel).
pub struct Bins {
    pub tile: f64,
    pub tiles_x: u32,
    pub tiles_y: u32,
    pub origin_u: f64,
    pub origin_v: f64,
    pub start: Vec<u32>,
    pub du: Vec<f32>,
    pub dv: Vec<f32>,
    pub w: Vec<f32>,
}

impl Bins {
    pub fn build(t: &Trees, tile: f64, g: &GridDims) -> Bins {
        let min = |x: &[f64]| x.iter().copied().fold(0.0f64, f64::min);
        let max = |x: &[f64], e: f64| x.iter().copied().fold(e, f64::max);
        let origin_u = (min(&t.u) / tile).floor() * tile;
        let origin_v = (min(&t.v) / tile).floor() * tile;
        let ext_u = f64::from(g.cols) * g.cell_size_m;
        let ext_v = f64::from(g.rows) * g.cell_size_m;
        let tiles_x = ((max(&t.u, ext_u) - origin_u) / tile).floor() as u32 + 1;
        let tiles_y = ((max(&t.v, ext_v) - origin_v) / tile).floor() as u32 + 1;
        let idx = |k: usize| {
            let ix = (((t.u[k] - origin_u) / tile).floor() as u32).min(tiles_x - 1);
            let iy = (((t.v[k] - origin_v) / tile).floor() as u32).min(tiles_y - 1);
            (ix, iy, iy * tiles_x + ix)
        };
        let mut order: Vec<usize> = (0..t.u.len()).collect();
        order.sort_by_key(|&k| idx(k).2);
        let mut start = vec![0u32; (tiles_x * tiles_y) as usize + 1];
        for k in 0..t.u.len() {
            start[idx(k).2 as usize + 1] += 1;
        }
        for i in 1..start.len() {
            start[i] += start[i - 1];
        }
        let (mut du, mut dv, mut w) = (Vec::new(), Vec::new(), Vec::new());
        for &k in &order {
            let (ix, iy, _) = idx(k);
            du.push((t.u[k] - (origin_u + f64::from(ix) * tile)) as f32);
            dv.push((t.v[k] - (origin_v + f64::from(iy) * tile)) as f32);
            w.push(t.w[k]);
        }
        Bins {
            tile,
            tiles_x,
            tiles_y,
            origin_u,
            origin_v,
            start,
            du,
            dv,
            w,
        }
    }

    pub fn view(&self) -> TileBins<'_> {
        TileBins {
            tile_size_m: self.tile,
            tiles_x: self.tiles_x,
            tiles_y: self.tiles_y,
            origin_u_m: self.origin_u,
            origin_v_m: self.origin_v,
            tile_start: &self.start,
            du: &self.du,
            dv: &self.dv,
            w: &self.w,
        }
    }

    /// Pairs the cutoff kernel evaluates: per 32 x 32 output tile, its cells times the trees of
    /// the source tiles within R of the tile's cell-centre rectangle.
    pub fn visited_pairs(&self, g: &GridDims, radius: f64) -> f64 {
        let h = g.cell_size_m;
        let mut pairs = 0.0;
        for by in 0..g.rows.div_ceil(32) {
            for bx in 0..g.cols.div_ceil(32) {
                let (nc, nr) = ((g.cols - 32 * bx).min(32), (g.rows - 32 * by).min(32));
                let (ulo, uhi) = (
                    (f64::from(32 * bx) + 0.5) * h,
                    (f64::from(32 * bx + nc) - 0.5) * h,
                );
                let (vlo, vhi) = (
                    (f64::from(32 * by) + 0.5) * h,
                    (f64::from(32 * by + nr) - 0.5) * h,
                );
                let mut trees = 0u64;
                for ty in 0..self.tiles_y {
                    for tx in 0..self.tiles_x {
                        let tu = self.origin_u + f64::from(tx) * self.tile;
                        let tv = self.origin_v + f64::from(ty) * self.tile;
                        let gu = (tu - uhi).max(ulo - (tu + self.tile)).max(0.0);
                        let gv = (tv - vhi).max(vlo - (tv + self.tile)).max(0.0);
                        if gu * gu + gv * gv <= radius * radius {
                            let t = (ty * self.tiles_x + tx) as usize;
                            trees += u64::from(self.start[t + 1] - self.start[t]);
                        }
                    }
                }
                pairs += f64::from(nc * nr) * trees as f64;
            }
        }
        pairs
    }
}

/// The paper's dense pyramid over the grid padded to 2^K x 2^K cells.
pub struct PyramidData {
    pub levels: u32,
    pub offsets: Vec<u32>,
    pub u: Vec<f32>,
    pub v: Vec<f32>,
    pub w: Vec<f32>,
}

impl PyramidData {
    pub fn build(t: &Trees, g: &GridDims) -> PyramidData {
        let side0 = g.cols.max(g.rows).max(1).next_power_of_two();
        let k = side0.trailing_zeros();
        let mut offsets = Vec::new();
        let mut total = 0u32;
        for q in 0..=k {
            offsets.push(total);
            total += (side0 >> q) * (side0 >> q);
        }
        let n = total as usize;
        let (mut su, mut sv, mut sw, mut cnt) =
            (vec![0.0; n], vec![0.0; n], vec![0.0; n], vec![0u32; n]);
        for q in 0..=k {
            let side = side0 >> q;
            let cs = g.cell_size_m * f64::from(1u32 << q);
            for i in 0..t.u.len() {
                let j = ((t.u[i] / cs).floor() as u32).min(side - 1);
                let r = ((t.v[i] / cs).floor() as u32).min(side - 1);
                let o = (offsets[q as usize] + r * side + j) as usize;
                su[o] += t.u[i];
                sv[o] += t.v[i];
                sw[o] += f64::from(t.w[i]);
                cnt[o] += 1;
            }
        }
        let mean = |s: &[f64]| {
            (0..n)
                .map(|o| {
                    if cnt[o] > 0 {
                        (s[o] / f64::from(cnt[o])) as f32
                    } else {
                        0.0
                    }
                })
                .collect()
        };
        PyramidData {
            levels: k + 1,
            offsets,
            u: mean(&su),
            v: mean(&sv),
            w: sw.iter().map(|&x| x as f32).collect(),
        }
    }

    pub fn view<'a>(&'a self, rho: &'a [f32]) -> Pyramid<'a> {
        Pyramid {
            levels: self.levels,
            level_offset: &self.offsets,
            node_u: &self.u,
            node_v: &self.v,
            node_w: &self.w,
            rho_m: rho,
        }
    }
}

/// Recursive traversal with the kernel's rules; the opening decision uses the same f32
/// arithmetic as the kernel (d² = dx·dx + dy·dy and ρ² rounded separately), so decisions match
/// bit for bit; contributions are evaluated in f64.
pub fn oracle_multires(
    g: &GridDims,
    shape: &KernelShape,
    p: &PyramidData,
    rho: &[f32],
) -> Vec<f64> {
    par_cells(g, |row, col| {
        let c = (centre(g, col), centre(g, row));
        let mut acc = 0.0;
        walk(p, shape, rho, (p.levels - 1, 0, 0), c, &mut acc);
        acc
    })
}

fn walk(
    p: &PyramidData,
    shape: &KernelShape,
    rho: &[f32],
    (q, i, j): (u32, u32, u32),
    c: (f64, f64),
    acc: &mut f64,
) {
    let top = p.levels - 1;
    let o = (p.offsets[q as usize] + (i << (top - q)) + j) as usize;
    if p.w[o] == 0.0 {
        return;
    }
    let (cu, cv) = (c.0 as f32, c.1 as f32);
    let (dx, dy) = (p.u[o] - cu, p.v[o] - cv);
    let d2 = dx * dx + dy * dy;
    let rho_q = rho[q as usize];
    let far = d2 > rho_q * rho_q;
    if q > 0 && !far {
        for (a, b) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
            walk(p, shape, rho, (q - 1, 2 * i + a, 2 * j + b), c, acc);
        }
    } else {
        let d = ((f64::from(p.u[o]) - c.0).powi(2) + (f64::from(p.v[o]) - c.1).powi(2)).sqrt();
        *acc += f64::from(p.w[o]) * k_of(shape, d);
    }
}

pub fn bits(h: &HostOut) -> Vec<u64> {
    match h {
        HostOut::F32(v) => v.iter().map(|x| u64::from(x.to_bits())).collect(),
        HostOut::F64(v) => v.iter().map(|x| x.to_bits()).collect(),
    }
}

/// Compares one result with the oracle (M1, M2; `slack` widens boundary cells of the cutoff);
/// records a self-explaining failure instead of panicking, so one run reports every case.
pub fn check_case(
    label: &str,
    result: Result<(HostOut, f32), CudaError>,
    precision: OutPrecision,
    reference: &[f64],
    slack: Option<&[f64]>,
    tol_cell: f64,
    failures: &mut Vec<String>,
) {
    let (out, ms) = match result {
        Ok(r) => r,
        Err(e) => return failures.push(format!("{label}: error: {e}")),
    };
    let right_type = matches!(
        (&out, precision),
        (HostOut::F32(_), OutPrecision::F32) | (HostOut::F64(_), OutPrecision::F64)
    );
    if !right_type || out.len() != reference.len() {
        return failures.push(format!(
            "{label}: got {} values of the wrong type/length (want {} {precision:?})",
            out.len(),
            reference.len()
        ));
    }
    let got = out.to_f64();
    let max = reference.iter().copied().fold(0.0, f64::max);
    if max == 0.0 {
        if let Some(i) = got.iter().position(|&x| x != 0.0) {
            failures.push(format!(
                "{label}: reference is all zero but cell {i} = {:e}",
                got[i]
            ));
        }
        return;
    }
    let cols = reference.len().max(1);
    let (mut m2, mut worst, mut worst_rel) = (0.0f64, None, 0.0f64);
    for (i, (&g, &r)) in got.iter().zip(reference).enumerate() {
        let s = slack.map_or(0.0, |s| s[i]);
        let err = ((g - r).abs() - s * (1.0 + 1e-6)).max(0.0);
        m2 = m2.max(err / max);
        if r >= 1e-6 * max && err / r > worst_rel {
            worst_rel = err / r;
            worst = Some(i);
        }
    }
    let ok = m2 <= 2e-6 && worst_rel <= tol_cell && got.iter().all(|x| x.is_finite());
    let at = worst.map_or(String::from("-"), |i| {
        format!("cell {i} (gpu {:.9e}, ref {:.9e})", got[i], reference[i])
    });
    let line = format!(
        "{label}: M2 = {m2:.2e}, M1 = {worst_rel:.2e} (tol {tol_cell:.0e}) at {at}, {ms:.3} ms [{cols} cells]"
    );
    eprintln!("{line}");
    if !ok {
        failures.push(line);
    }
}

/// Oracle on 64 sampled cells of a large output.
pub fn spot_check(
    label: &str,
    out: &HostOut,
    g: &GridDims,
    shape: &KernelShape,
    t: &Trees,
    radius: Option<f64>,
    rng: &mut SplitMix,
) {
    let got = out.to_f64();
    let mut worst = 0.0f64;
    for _ in 0..64 {
        let (row, col) = (
            (rng.next_u64() % u64::from(g.rows)) as u32,
            (rng.next_u64() % u64::from(g.cols)) as u32,
        );
        let (cu, cv) = (centre(g, col), centre(g, row));
        let (mut r, mut s) = (0.0, 0.0);
        for k in 0..t.u.len() {
            let d = ((t.u[k] - cu).powi(2) + (t.v[k] - cv).powi(2)).sqrt();
            match radius {
                Some(rad) if (d - rad).abs() < 1e-3 => s += f64::from(t.w[k]) * k_of(shape, rad),
                Some(rad) if d > rad => {}
                _ => r += f64::from(t.w[k]) * k_of(shape, d),
            }
        }
        let g_val = got[(row * g.cols + col) as usize];
        if r > 0.0 {
            worst = worst.max(((g_val - r).abs() - s).max(0.0) / r);
        }
    }
    eprintln!("  {label}: worst relative error on 64 sampled cells {worst:.2e}");
    assert!(
        worst <= 1e-5,
        "{label}: sampled cells differ from the oracle by {worst:.2e}"
    );
}
