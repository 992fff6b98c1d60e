//! The f32 multigrid hierarchy on the device and its V-cycle.

use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};

use super::coarsening;
use super::exchange::Exchange;
use super::halo::HaloRows;
use super::params::WindParams;
use super::sherman::CycleShape;
use super::{MODULE, THREADS, cfg_1d, cfg_planes, launch_err};
use crate::context::Gpu;
use crate::error::{CudaError, DriverResultExt, invalid};

/// One level: its f32 operator and work vectors (x, b, the Thomas scratch).
pub(crate) struct DevLevel {
    pub(crate) rows: usize,
    pub(crate) cols: usize,
    pub(crate) nz: usize,
    kx: CudaSlice<f32>,
    ky: CudaSlice<f32>,
    kz: CudaSlice<f32>,
    diag: CudaSlice<f32>,
    pub(crate) x: CudaSlice<f32>,
    pub(crate) b: CudaSlice<f32>,
    /// Scratch: the line solves' right-hand sides; the coarsest level's Thomas super-diagonal.
    cp: CudaSlice<f32>,
    /// The columns' Thomas factors (`wind_factor_f32`): 1/pivot and super-diagonal/pivot.
    ip: CudaSlice<f32>,
    cpf: CudaSlice<f32>,
    /// A band's halo rows of x (the split solve's band levels above the gathered one).
    halo: Option<HaloRows<f32>>,
}

impl DevLevel {
    pub(crate) fn n(&self) -> usize {
        self.rows * self.cols * self.nz
    }

    fn params(&self) -> WindParams {
        WindParams::level(self.rows, self.cols, self.nz, 0.0)
    }
}

/// One level's f32 operator on the device: conductances of the x faces ([k][row][col+1]),
/// y faces ([k][row+1][col]) and z faces ([k][row][col], k ≤ nz), and the diagonal.
pub(crate) struct LevelOp {
    pub(crate) rows: usize,
    pub(crate) cols: usize,
    pub(crate) nz: usize,
    pub(crate) kx: CudaSlice<f32>,
    pub(crate) ky: CudaSlice<f32>,
    pub(crate) kz: CudaSlice<f32>,
    pub(crate) diag: CudaSlice<f32>,
}

struct Kernels {
    rhs: CudaFunction,
    thomas: CudaFunction,
    coarsest: CudaFunction,
    restrict: CudaFunction,
    prolong: CudaFunction,
}

/// Every level, finest first, with the cycle's shape.
pub(crate) struct Hierarchy {
    pub(crate) levels: Vec<DevLevel>,
    shape: CycleShape,
    k: Kernels,
    /// The split solve: `levels` are a band's, the last of them (level m) gathered whole.
    coarse: Option<Box<Coarse>>,
}

/// A band's link to the whole level m and its coarser levels (the same on every part): the
/// band's right-hand side of level m is gathered into the whole level, the whole V-cycle runs
/// from there, and the band keeps its rows of the correction.
pub(crate) struct Coarse {
    pub(crate) whole: Hierarchy,
    /// Every part's rows on level m, in part order.
    pub(crate) part_rows: Vec<usize>,
    /// This part's index.
    pub(crate) part: usize,
}

impl Hierarchy {
    /// The hierarchy of operators already on the device (finest first): work vectors
    /// allocated, each level's column factors computed.
    pub(crate) fn from_device(
        gpu: &Gpu,
        ops: Vec<LevelOp>,
        shape: CycleShape,
    ) -> Result<Self, CudaError> {
        let k = Kernels {
            rhs: gpu.function(MODULE, "wind_line_rhs_f32")?,
            thomas: gpu.function(MODULE, "wind_thomas_f32")?,
            coarsest: gpu.function(MODULE, "wind_coarsest_f32")?,
            restrict: gpu.function(MODULE, "wind_restrict_f32")?,
            prolong: gpu.function(MODULE, "wind_prolong_f32")?,
        };
        // Each level must be the coarsening of the one before (the restriction and the
        // prolongation index children and parents by that rule).
        for w in ops.windows(2) {
            let (f, c) = (&w[0], &w[1]);
            if c.nz != f.nz
                || c.rows != coarsening::coarse_count(f.rows)
                || c.cols != coarsening::coarse_count(f.cols)
            {
                return Err(invalid(
                    "wind_hierarchy",
                    format!(
                        "level of {} × {} × {} under {} × {} × {}: not its coarsening",
                        c.rows, c.cols, c.nz, f.rows, f.cols, f.nz
                    ),
                ));
            }
        }
        let mut out = Vec::with_capacity(ops.len());
        for (l, op) in ops.into_iter().enumerate() {
            let n = op.rows * op.cols * op.nz;
            let what = |a: &str| format!("level {l} {a}");
            out.push(DevLevel {
                rows: op.rows,
                cols: op.cols,
                nz: op.nz,
                kx: op.kx,
                ky: op.ky,
                kz: op.kz,
                diag: op.diag,
                x: gpu.zeros::<f32>(n, &what("solution"))?,
                b: gpu.zeros::<f32>(n, &what("right-hand side"))?,
                cp: gpu.zeros::<f32>(n, &what("line scratch"))?,
                ip: gpu.zeros::<f32>(n, &what("Thomas pivots"))?,
                cpf: gpu.zeros::<f32>(n, &what("Thomas super-diagonal"))?,
                halo: None,
            });
        }
        let factor = gpu.function(MODULE, "wind_factor_f32")?;
        for lv in &mut out {
            let p = lv.params();
            let mut lb = gpu.stream().launch_builder(&factor);
            lb.arg(&p)
                .arg(&lv.kz)
                .arg(&lv.diag)
                .arg(&mut lv.ip)
                .arg(&mut lv.cpf);
            // SAFETY: wind_factor_f32(WindParams, const float* kz, diag, float* ip, cpf): column
            // c0 < rows·cols reads kz at k·plane + c0 for k ≤ nz (< (nz+1)·rows·cols) and diag,
            // and writes ip and cpf at k·plane + c0 for k < nz (n floats each).
            unsafe { lb.launch(cfg_1d(lv.rows * lv.cols)) }
                .map_err(launch_err("wind_factor_f32"))?;
        }
        Ok(Self {
            levels: out,
            shape,
            k,
            coarse: None,
        })
    }

    /// A band's levels 0..=m (the band's operators, finest first) linked to the whole level m
    /// and below (`coarse`): the levels above m get halo rows.
    pub(crate) fn band(
        gpu: &Gpu,
        ops: Vec<LevelOp>,
        shape: CycleShape,
        coarse: Coarse,
    ) -> Result<Self, CudaError> {
        let mut h = Self::from_device(gpu, ops, shape)?;
        let last = h.levels.len() - 1;
        for lv in &mut h.levels[..last] {
            lv.halo = Some(HaloRows::new(gpu, lv.nz, lv.cols)?);
        }
        let m = &h.levels[last];
        let whole = &coarse.whole.levels[0];
        if coarse.part >= coarse.part_rows.len()
            || coarse.part_rows[coarse.part] != m.rows
            || coarse.part_rows.iter().sum::<usize>() != whole.rows
            || (whole.cols, whole.nz) != (m.cols, m.nz)
        {
            return Err(invalid(
                "wind_hierarchy",
                format!(
                    "band level of {} × {} × {} (part {} of rows {:?}) and whole level of {} ×                      {} × {} do not match",
                    m.rows,
                    m.cols,
                    m.nz,
                    coarse.part,
                    coarse.part_rows,
                    whole.rows,
                    whole.cols,
                    whole.nz
                ),
            ));
        }
        h.coarse = Some(Box::new(coarse));
        Ok(h)
    }

    /// levels[0].x = V(levels[0].b), starting from x = 0 on every level: pre-smoothing colours
    /// (0, 1) × smooth, residual restricted, the coarse correction, prolongation, post-smoothing
    /// (1, 0) × smooth; the coarsest level gets `coarsest_sweeps` sweeps (0, 1). A band's
    /// cycle (`ex`) exchanges halo rows before every half sweep and restriction, and takes the
    /// coarse correction of level m from the whole level's cycle.
    pub(crate) fn cycle(&mut self, gpu: &Gpu, ex: Option<&dyn Exchange>) -> Result<(), CudaError> {
        let last = self.levels.len() - 1;
        for l in 0..last {
            self.zero_x(gpu, l)?;
            for _ in 0..self.shape.smooth {
                self.line(gpu, l, 0, ex)?;
                self.line(gpu, l, 1, ex)?;
            }
            self.restrict(gpu, l, ex)?;
        }
        match ex {
            Some(ex) if self.coarse.is_some() => self.gathered(gpu, ex)?,
            _ => {
                self.zero_x(gpu, last)?;
                self.coarsest(gpu, last)?;
            }
        }
        for l in (0..last).rev() {
            self.prolong(gpu, l)?;
            for _ in 0..self.shape.smooth {
                self.line(gpu, l, 1, ex)?;
                self.line(gpu, l, 0, ex)?;
            }
        }
        Ok(())
    }

    /// The band's last level's x = its rows of V(b) on the whole level, b gathered from every
    /// band (f32 values, exact through f64).
    fn gathered(&mut self, gpu: &Gpu, ex: &dyn Exchange) -> Result<(), CudaError> {
        let last = self.levels.len() - 1;
        let (Some(c), band) = (self.coarse.as_mut(), &mut self.levels[last]) else {
            return Ok(());
        };
        let (rows, cols, nz) = (band.rows, band.cols, band.nz);
        let mine: Vec<f64> = gpu
            .download(&band.b, band.n(), "a band's coarse right-hand side")?
            .into_iter()
            .map(f64::from)
            .collect();
        let all = ex.all_gather(&mine);
        let whole_rows = c.whole.levels[0].rows;
        let mut whole = vec![0.0f32; nz * whole_rows * cols];
        let (mut at, mut row0) = (0, 0);
        for &r in &c.part_rows {
            for k in 0..nz {
                let src = &all[at + k * r * cols..at + (k + 1) * r * cols];
                let dst = &mut whole[(k * whole_rows + row0) * cols..][..r * cols];
                for (d, s) in dst.iter_mut().zip(src) {
                    *d = *s as f32;
                }
            }
            at += nz * r * cols;
            row0 += r;
        }
        let doing = "moving the gathered coarse level";
        gpu.stream()
            .memcpy_htod(&whole, &mut c.whole.levels[0].b)
            .doing(doing)?;
        c.whole.cycle(gpu, None)?;
        let first: usize = c.part_rows[..c.part].iter().sum();
        let xw = &c.whole.levels[0].x;
        for k in 0..nz {
            let src =
                xw.slice((k * whole_rows + first) * cols..(k * whole_rows + first + rows) * cols);
            let mut dst = band.x.slice_mut(k * rows * cols..(k + 1) * rows * cols);
            gpu.stream().memcpy_dtod(&src, &mut dst).doing(doing)?;
        }
        Ok(())
    }

    fn zero_x(&mut self, gpu: &Gpu, l: usize) -> Result<(), CudaError> {
        gpu.stream()
            .memset_zeros(&mut self.levels[l].x)
            .doing("zeroing a multigrid correction")
    }

    /// One colour of z-line relaxation on level `l`: the right-hand sides of the colour's
    /// columns (with the other colour's x), then the factored column solves.
    pub(crate) fn line(
        &mut self,
        gpu: &Gpu,
        l: usize,
        colour: u32,
        ex: Option<&dyn Exchange>,
    ) -> Result<(), CudaError> {
        let lv = &mut self.levels[l];
        let mut p = WindParams {
            colour,
            ..lv.params()
        };
        let span = lv.cols.div_ceil(2);
        let (nz, rows) = (lv.nz, lv.rows);
        let DevLevel {
            kx,
            ky,
            kz,
            x,
            b,
            cp,
            ip,
            cpf,
            halo,
            ..
        } = lv;
        if let (Some(h), Some(ex)) = (halo.as_mut(), ex) {
            p = h.exchange(gpu, p, x, ex)?;
        }
        {
            let (hn, hs) = HaloRows::args(halo.as_ref(), x);
            let mut lb = gpu.stream().launch_builder(&self.k.rhs);
            lb.arg(&p)
                .arg(&*kx)
                .arg(&*ky)
                .arg(&*x)
                .arg(&*b)
                .arg(&mut *cp)
                .arg(&hn)
                .arg(&hs);
            // SAFETY: wind_line_rhs_f32(WindParams, const float* kx, ky, x, b, float* g, const
            // float* hn, hs): thread t < nz·rows·⌈cols/2⌉ takes cell (k, row, col < cols) of the
            // colour, reads its x and y faces (within nz·rows·(cols+1) and nz·(rows+1)·cols,
            // checked at construction), x of its horizontal neighbours and b, the halo rows at
            // [k·cols + col] only where p.halo says they exist (then hn and hs hold nz·cols
            // values each, HaloRows::new), and writes g (cp, n floats) at the cell.
            unsafe { lb.launch(cfg_1d(nz * rows * span)) }
                .map_err(launch_err("wind_line_rhs_f32"))?;
        }
        let mut lb = gpu.stream().launch_builder(&self.k.thomas);
        lb.arg(&p)
            .arg(&*kz)
            .arg(&*ip)
            .arg(&*cpf)
            .arg(&*cp)
            .arg(&mut *x);
        // SAFETY: wind_thomas_f32(WindParams, const float* kz, ip, cpf, g, float* x): the thread of
        // column (row < rows, col < cols) of the colour reads kz, ip, cpf and g and writes x at
        // k·rows·cols + row·cols + col for k < nz only (inside every array).
        unsafe { lb.launch(cfg_planes(span, rows, 1)) }.map_err(launch_err("wind_thomas_f32"))?;
        Ok(())
    }

    /// Every sweep of the coarsest level `l` in one launch.
    fn coarsest(&mut self, gpu: &Gpu, l: usize) -> Result<(), CudaError> {
        let lv = &mut self.levels[l];
        let p = WindParams {
            sweeps: self.shape.coarsest_sweeps as u32,
            ..lv.params()
        };
        let cfg = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut lb = gpu.stream().launch_builder(&self.k.coarsest);
        lb.arg(&p)
            .arg(&lv.kx)
            .arg(&lv.ky)
            .arg(&lv.kz)
            .arg(&lv.diag)
            .arg(&mut lv.x)
            .arg(&lv.b)
            .arg(&mut lv.cp);
        // SAFETY: wind_coarsest_f32(WindParams, const float* kx, ky, kz, diag, float* x, const
        // float* b, float* cp) runs one block whose threads take the columns of each colour in
        // turn, with __syncthreads between colours. The thread of column (row < rows, col < cols)
        // reads the faces of its cells (kx < nz·rows·(cols+1), ky < nz·(rows+1)·cols, kz <
        // (nz+1)·rows·cols, sizes the level's constructor checked) and x of its horizontal
        // neighbours (the other colour), and writes x and cp of its own column only.
        unsafe { lb.launch(cfg) }.map_err(launch_err("wind_coarsest_f32"))?;
        Ok(())
    }

    /// levels[l+1].b = Σ over 2 × 2 children of (b − A'x) on level l (a band's halo rows of x
    /// exchanged first).
    fn restrict(
        &mut self,
        gpu: &Gpu,
        l: usize,
        ex: Option<&dyn Exchange>,
    ) -> Result<(), CudaError> {
        let (fine, coarse) = self.levels.split_at_mut(l + 1);
        let (f, c) = (&mut fine[l], &mut coarse[0]);
        let mut p = WindParams {
            crows: c.rows as u32,
            ccols: c.cols as u32,
            n: c.n() as u32,
            ..f.params()
        };
        if let (Some(h), Some(ex)) = (f.halo.as_mut(), ex) {
            p = h.exchange(gpu, p, &f.x, ex)?;
        }
        let (hn, hs) = HaloRows::args(f.halo.as_ref(), &f.x);
        let cfg = cfg_1d(c.n());
        let mut lb = gpu.stream().launch_builder(&self.k.restrict);
        lb.arg(&p)
            .arg(&f.kx)
            .arg(&f.ky)
            .arg(&f.kz)
            .arg(&f.diag)
            .arg(&f.x)
            .arg(&f.b)
            .arg(&mut c.b)
            .arg(&hn)
            .arg(&hs);
        // SAFETY: wind_restrict_f32(WindParams, fine const float* kx, ky, kz, diag, x, b, float*
        // cb, const float* hn, hs): coarse cell ci < crows·ccols·nz (the coarse level's size)
        // sums its children (row < rows, col < cols, checked: crows = coarse_count(rows) =
        // ⌈rows/2⌉, ccols alike, in from_device) read within the fine level's arrays, and the
        // halo rows at [k·cols + col] only where p.halo says they exist (nz·cols values each),
        // and writes cb[ci].
        unsafe { lb.launch(cfg) }.map_err(launch_err("wind_restrict_f32"))?;
        Ok(())
    }

    /// levels[l].x += levels[l+1].x of the parent column, where diag ≠ 0.
    fn prolong(&mut self, gpu: &Gpu, l: usize) -> Result<(), CudaError> {
        let (fine, coarse) = self.levels.split_at_mut(l + 1);
        let (f, c) = (&mut fine[l], &coarse[0]);
        let p = WindParams {
            crows: c.rows as u32,
            ccols: c.cols as u32,
            ..f.params()
        };
        let n = f.n();
        let mut lb = gpu.stream().launch_builder(&self.k.prolong);
        lb.arg(&p).arg(&f.diag).arg(&c.x).arg(&mut f.x);
        // SAFETY: wind_prolong_f32(WindParams, const float* diag, const float* xc, float* x):
        // fine cell i < n reads diag[i], x[i] and xc at its parent (k, row/2, col/2), inside the
        // coarse level (crows = ⌈rows/2⌉, ccols = ⌈cols/2⌉, checked in from_device), and
        // writes x[i].
        unsafe { lb.launch(cfg_1d(n)) }.map_err(launch_err("wind_prolong_f32"))?;
        Ok(())
    }
}
