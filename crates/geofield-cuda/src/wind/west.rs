//! [`GpuWest`]: the paper's velocity-form sweeps on f32 faces resident on the device.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, PushKernelArg};

use super::params::WindParams;
use super::reduce::{Reducer, SLOT_DIV};
use super::{MODULE, cfg_planes, cfg_reduce, check_dims, check_finite, launch_err};
use crate::context::Gpu;
use crate::error::{CudaError, DriverResultExt, invalid};

const K: &str = "wind_west";

/// The x, y and z faces of a grid.
pub type Faces = (Vec<f32>, Vec<f32>, Vec<f32>);

/// Thread mapping of a WEST half sweep (the bits computed are the same).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum SweepVariant {
    /// Threads for the active colour only: col = 2t + ((row + k + c) mod 2) (paper's GPU2).
    Compact,
    /// One thread per cell, idle unless (col + row + k) mod 2 = c (paper's GPU1).
    Parity,
}

impl SweepVariant {
    pub fn name(self) -> &'static str {
        match self {
            SweepVariant::Compact => "compact",
            SweepVariant::Parity => "parity",
        }
    }
}

/// The grid and coefficients of a WEST run (layouts in the module docs). The device faces are
/// either the wind itself (`div0_per_s` all 0: the plain form) or corrections to a first guess
/// whose cell divergence is `div0_per_s` (the sweep sees D = div0 + div(faces)); geofield uses
/// the latter, so that f32 rounds the corrections rather than the wind.
#[derive(Clone, Copy, Debug)]
pub struct WestInputs<'a> {
    pub rows: usize,
    pub cols: usize,
    pub nz: usize,
    /// Horizontal spacing Δx = Δy (m).
    pub dx_m: f64,
    /// Layer thicknesses Δz_k (m), `nz`.
    pub dz_m: &'a [f64],
    /// α²/Δz_{k−½} (1/m) at z face k (distance between the centres either side), `nz + 1`.
    pub zscale_per_m: &'a [f64],
    /// Transparencies (0 closed, 1 open) of the x, y and z faces.
    pub tu: &'a [u8],
    pub tv: &'a [u8],
    pub tw: &'a [u8],
    /// First fluid layer of each column, `rows · cols` (for the divergence check).
    pub ground_k: &'a [u32],
    /// Divergence added to every cell's (s⁻¹), `rows · cols · nz`.
    pub div0_per_s: &'a [f64],
    /// Over-relaxation factor ω, in (0, 2).
    pub omega: f64,
}

impl WestInputs<'_> {
    /// (cells, x faces, y faces, z faces) after checking every input.
    fn check(&self) -> Result<(usize, usize, usize, usize), CudaError> {
        let (rows, cols, nz) = (self.rows, self.cols, self.nz);
        let n = check_dims(K, rows, cols, nz)?;
        let (nu, nv, nw) = (
            nz * rows * (cols + 1),
            nz * (rows + 1) * cols,
            (nz + 1) * rows * cols,
        );
        if !(self.dx_m.is_finite() && self.dx_m > 0.0) {
            return Err(invalid(K, format!("dx = {} m must be positive", self.dx_m)));
        }
        check_finite(K, "dz_m", self.dz_m, nz)?;
        if self.dz_m.iter().any(|&d| d <= 0.0) {
            return Err(invalid(K, "every layer thickness must be positive"));
        }
        check_finite(K, "zscale_per_m", self.zscale_per_m, nz + 1)?;
        if self.zscale_per_m.iter().any(|&s| s < 0.0) {
            return Err(invalid(K, "zscale_per_m must be ≥ 0"));
        }
        for (what, t, len) in [
            ("tu", self.tu, nu),
            ("tv", self.tv, nv),
            ("tw", self.tw, nw),
        ] {
            if t.len() != len {
                return Err(invalid(
                    K,
                    format!("{what} has {} values, expected {len}", t.len()),
                ));
            }
            if let Some(i) = t.iter().position(|&x| x > 1) {
                return Err(invalid(K, format!("{what}[{i}] = {} is not 0 or 1", t[i])));
            }
        }
        if self.ground_k.len() != rows * cols {
            return Err(invalid(
                K,
                format!(
                    "ground_k has {} values, expected {}",
                    self.ground_k.len(),
                    rows * cols
                ),
            ));
        }
        check_finite(K, "div0_per_s", self.div0_per_s, n)?;
        if !(self.omega.is_finite() && self.omega > 0.0 && self.omega < 2.0) {
            return Err(invalid(
                K,
                format!("omega = {} must be in (0, 2)", self.omega),
            ));
        }
        Ok((n, nu, nv, nw))
    }
}

/// WEST faces and coefficients on the device.
pub struct GpuWest {
    gpu: Arc<Gpu>,
    params: WindParams,
    sizes: (usize, usize, usize),
    u: CudaSlice<f32>,
    v: CudaSlice<f32>,
    w: CudaSlice<f32>,
    d0_32: CudaSlice<f32>,
    d0_64: CudaSlice<f64>,
    tu: CudaSlice<u8>,
    tv: CudaSlice<u8>,
    tw: CudaSlice<u8>,
    inv_dz32: CudaSlice<f32>,
    zscale32: CudaSlice<f32>,
    inv_dz64: CudaSlice<f64>,
    ground_k: CudaSlice<u32>,
    reducer: Reducer,
    compact: CudaFunction,
    parity: CudaFunction,
    divmax: CudaFunction,
}

impl GpuWest {
    /// Uploads the coefficients and the faces (u, v, w as f32).
    pub fn new(
        gpu: &Arc<Gpu>,
        inp: &WestInputs,
        u: &[f32],
        v: &[f32],
        w: &[f32],
    ) -> Result<Self, CudaError> {
        let (n, nu, nv, nw) = inp.check()?;
        check_faces(u, v, w, (nu, nv, nw))?;
        // f32 faces (12), D0 in f32 and f64 (12), u8 transparencies (3), per cell.
        gpu.ensure_free(
            &format!("WEST on {} × {} × {} cells", inp.rows, inp.cols, inp.nz),
            28 * n as u64,
        )?;
        let mut params = WindParams::level(inp.rows, inp.cols, inp.nz, 1.0 / inp.dx_m);
        params.omega = inp.omega;
        params.omega_f = inp.omega as f32;
        let inv_dz: Vec<f64> = inp.dz_m.iter().map(|d| 1.0 / d).collect();
        let inv_dz32: Vec<f32> = inv_dz.iter().map(|&x| x as f32).collect();
        let zscale32: Vec<f32> = inp.zscale_per_m.iter().map(|&x| x as f32).collect();
        let d0_32: Vec<f32> = inp.div0_per_s.iter().map(|&x| x as f32).collect();
        let compact = gpu.function(MODULE, "wind_west_compact_f32")?;
        let parity = gpu.function(MODULE, "wind_west_parity_f32")?;
        let divmax = gpu.function(MODULE, "wind_divmax_f32")?;
        let _held = gpu.hold();
        Ok(Self {
            gpu: Arc::clone(gpu),
            params,
            sizes: (nu, nv, nw),
            u: gpu.upload(u, "the x-face velocities")?,
            v: gpu.upload(v, "the y-face velocities")?,
            w: gpu.upload(w, "the z-face velocities")?,
            d0_32: gpu.upload(&d0_32, "the first-guess divergence")?,
            d0_64: gpu.upload(inp.div0_per_s, "the first-guess divergence")?,
            tu: gpu.upload(inp.tu, "the x-face transparencies")?,
            tv: gpu.upload(inp.tv, "the y-face transparencies")?,
            tw: gpu.upload(inp.tw, "the z-face transparencies")?,
            inv_dz32: gpu.upload(&inv_dz32, "the layer spacings")?,
            zscale32: gpu.upload(&zscale32, "the z-face scales")?,
            inv_dz64: gpu.upload(&inv_dz, "the layer spacings")?,
            ground_k: gpu.upload(inp.ground_k, "the ground layers")?,
            reducer: Reducer::new(gpu)?,
            compact,
            parity,
            divmax,
        })
    }

    /// Number of cells.
    pub fn cells(&self) -> usize {
        self.params.n as usize
    }

    /// Replaces the faces (same sizes as at construction).
    pub fn set_faces(&mut self, u: &[f32], v: &[f32], w: &[f32]) -> Result<(), CudaError> {
        check_faces(u, v, w, self.sizes)?;
        let gpu = Arc::clone(&self.gpu);
        let _held = gpu.hold();
        let s = gpu.stream();
        s.memcpy_htod(u, &mut self.u).doing("copying the x faces")?;
        s.memcpy_htod(v, &mut self.v).doing("copying the y faces")?;
        s.memcpy_htod(w, &mut self.w).doing("copying the z faces")?;
        Ok(())
    }

    /// Queues `count` sweeps (colour 1, then 0, each), without waiting for them.
    pub fn sweeps(&mut self, count: usize, variant: SweepVariant) -> Result<(), CudaError> {
        let gpu = Arc::clone(&self.gpu);
        let _held = gpu.hold();
        for _ in 0..count {
            for colour in [1, 0] {
                self.half_sweep(&gpu, colour, variant)?;
            }
        }
        Ok(())
    }

    fn half_sweep(
        &mut self,
        gpu: &Gpu,
        colour: u32,
        variant: SweepVariant,
    ) -> Result<(), CudaError> {
        let p = WindParams {
            colour,
            ..self.params
        };
        let (rows, cols, nz) = (p.rows as usize, p.cols as usize, p.nz as usize);
        let (f, name, span) = match variant {
            SweepVariant::Compact => (&self.compact, "wind_west_compact_f32", cols.div_ceil(2)),
            SweepVariant::Parity => (&self.parity, "wind_west_parity_f32", cols),
        };
        let mut lb = gpu.stream().launch_builder(f);
        lb.arg(&p)
            .arg(&mut self.u)
            .arg(&mut self.v)
            .arg(&mut self.w)
            .arg(&self.d0_32)
            .arg(&self.tu)
            .arg(&self.tv)
            .arg(&self.tw)
            .arg(&self.inv_dz32)
            .arg(&self.zscale32);
        // SAFETY: wind_west_*_f32(WindParams, float* u, v, w, const float* d0 (n), const u8* tu,
        // tv, tw, const float* inv_dz (nz), zscale (nz + 1)): the thread of cell (k < nz,
        // row < rows, col < cols) reads d0 at its cell and touches
        // u[(k·rows + row)·(cols+1) + col + {0,1}] < nu, v[(k·(rows+1) + row + {0,1})·cols + col]
        // < nv, w[((k + {0,1})·rows + row)·cols + col] < nw and the masks at the same indices,
        // all sized by the constructor's checks; cells of one colour share no face.
        unsafe { lb.launch(cfg_planes(span, rows, nz)) }.map_err(launch_err(name))?;
        Ok(())
    }

    /// max |div0 + div(faces)| over fluid cells in s⁻¹ (f64 from the f32 faces); waits for the
    /// device.
    pub fn max_div(&mut self) -> Result<f64, CudaError> {
        let gpu = Arc::clone(&self.gpu);
        let _held = gpu.hold();
        let (cfg, parts) = cfg_reduce(self.cells());
        let mut lb = gpu.stream().launch_builder(&self.divmax);
        lb.arg(&self.params)
            .arg(&self.u)
            .arg(&self.v)
            .arg(&self.w)
            .arg(&self.d0_64)
            .arg(&self.ground_k)
            .arg(&self.inv_dz64)
            .arg(&mut self.reducer.partial);
        // SAFETY: wind_divmax_f32(WindParams, const float* u, v, w, const double* d0 (n), const
        // u32* ground_k (rows·cols), const double* inv_dz (nz), double* partial (PARTS)): cell
        // i < n reads d0[i], the six faces of its cell (in bounds as in the sweeps) and ground_k[i mod rows·cols];
        // block b < parts ≤ PARTS writes partial[b].
        unsafe { lb.launch(cfg) }.map_err(launch_err("wind_divmax_f32"))?;
        self.reducer.finish(&gpu, parts, SLOT_DIV, true, None)?;
        Ok(self.reducer.read(&gpu)?[SLOT_DIV as usize])
    }

    /// The faces (u, v, w); waits for the device.
    pub fn faces(&self) -> Result<Faces, CudaError> {
        let _held = self.gpu.hold();
        let (nu, nv, nw) = self.sizes;
        Ok((
            self.gpu.download(&self.u, nu, "the x-face velocities")?,
            self.gpu.download(&self.v, nv, "the y-face velocities")?,
            self.gpu.download(&self.w, nw, "the z-face velocities")?,
        ))
    }
}

fn check_faces(
    u: &[f32],
    v: &[f32],
    w: &[f32],
    (nu, nv, nw): (usize, usize, usize),
) -> Result<(), CudaError> {
    for (what, f, len) in [("u", u, nu), ("v", v, nv), ("w", w, nw)] {
        if f.len() != len {
            return Err(invalid(
                K,
                format!("{what} has {} faces, expected {len}", f.len()),
            ));
        }
        if let Some(i) = f.iter().position(|x| !x.is_finite()) {
            return Err(invalid(K, format!("{what}[{i}] is not finite")));
        }
    }
    Ok(())
}
