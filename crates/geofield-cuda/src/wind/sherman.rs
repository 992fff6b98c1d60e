//! [`GpuSherman`]: Sherman's problem A'φ = b' resident on the device (the f32 hierarchy and
//! the f64 finest operator and vectors), and the launches the solvers ([`super::solve`]) use.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, PushKernelArg};

use super::exchange::Exchange;
use super::halo::HaloRows;
use super::hierarchy::Hierarchy;
use super::params::{DIR_NEXT, DIR_RESTART, OP_APPLY_DOT, OP_RESID_MAX, WindParams};
use super::reduce::{Reducer, SLOT_DIV, SLOT_PAP};
use super::{MODULE, cfg_1d, cfg_planes, cfg_reduce, launch_err};
use crate::context::Gpu;
use crate::error::{CudaError, DriverResultExt};

/// The V-cycle's shape: sweeps (both colours) before and after the coarse correction, and on
/// the coarsest level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CycleShape {
    pub smooth: usize,
    pub coarsest_sweeps: usize,
}

/// How the problem is solved.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Method {
    /// Iterative refinement: f64 residual, f32 V-cycle correction.
    Multigrid,
    /// CG in f64 preconditioned by one f32 V-cycle.
    MgCg,
    /// Red-black SOR in f64 with this ω (colour 1 first).
    Sor { omega: f64 },
}

/// When to stop: max |r_c/V_c| over fluid cells ≤ `threshold_per_s`, or `max_iterations`
/// (sweeps for SOR, checked every `check_every`; V-cycles; CG iterations).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StopRule {
    pub max_iterations: usize,
    pub threshold_per_s: f64,
    pub check_every: usize,
}

/// What a solve did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeviceSolve {
    /// φ (m²/s) in cell layout.
    pub phi: Vec<f64>,
    pub iterations: usize,
    /// (iteration, max |div u| in s⁻¹) at every check, starting with (0, max |b/V|).
    pub history: Vec<(usize, f64)>,
    pub converged: bool,
    /// Why an unconverged solve stopped before its iteration cap ([`super::stall`]).
    pub stall: Option<super::stall::Stall>,
    /// Device time of the solve (CUDA events; uploads and the final download excluded).
    pub device_seconds: f64,
}

pub(crate) struct Kernels {
    op: CudaFunction,
    sor: CudaFunction,
    update: CudaFunction,
    dot_z: CudaFunction,
    dir: CudaFunction,
    to_f32: CudaFunction,
    add: CudaFunction,
}

/// The finest level in f64 on the device, with 1/V and b' (cell layout).
pub(crate) struct FineOp {
    pub(crate) rows: usize,
    pub(crate) cols: usize,
    pub(crate) nz: usize,
    pub(crate) kx: CudaSlice<f64>,
    pub(crate) ky: CudaSlice<f64>,
    pub(crate) kz: CudaSlice<f64>,
    pub(crate) diag: CudaSlice<f64>,
    pub(crate) b: CudaSlice<f64>,
    pub(crate) inv_vol: CudaSlice<f64>,
}

/// Sherman's problem on the device.
pub struct GpuSherman {
    pub(crate) gpu: Arc<Gpu>,
    pub(crate) params: WindParams,
    pub(crate) mg: Hierarchy,
    kx: CudaSlice<f64>,
    ky: CudaSlice<f64>,
    kz: CudaSlice<f64>,
    diag: CudaSlice<f64>,
    b: CudaSlice<f64>,
    inv_vol: CudaSlice<f64>,
    pub(crate) x: CudaSlice<f64>,
    pub(crate) r: CudaSlice<f64>,
    pv: CudaSlice<f64>,
    ap: CudaSlice<f64>,
    pub(crate) red: Reducer,
    k: Kernels,
    /// A band's halo rows of x and p (the split solve; `None` on the whole domain).
    pub(crate) halo: Option<HaloRows<f64>>,
}

impl GpuSherman {
    /// The solver around a problem already on the device (sizes checked by the caller).
    pub(crate) fn from_device(
        gpu: &Arc<Gpu>,
        fine: FineOp,
        mg: Hierarchy,
    ) -> Result<Self, CudaError> {
        let n = fine.rows * fine.cols * fine.nz;
        let k = Kernels {
            op: gpu.function(MODULE, "wind_op_f64")?,
            sor: gpu.function(MODULE, "wind_sor_f64")?,
            update: gpu.function(MODULE, "wind_cg_update_f64")?,
            dot_z: gpu.function(MODULE, "wind_dot_z_f64")?,
            dir: gpu.function(MODULE, "wind_cg_dir_f64")?,
            to_f32: gpu.function(MODULE, "wind_to_f32")?,
            add: gpu.function(MODULE, "wind_add_f64")?,
        };
        Ok(Self {
            gpu: Arc::clone(gpu),
            params: WindParams::level(fine.rows, fine.cols, fine.nz, 0.0),
            mg,
            kx: fine.kx,
            ky: fine.ky,
            kz: fine.kz,
            diag: fine.diag,
            b: fine.b,
            inv_vol: fine.inv_vol,
            x: gpu.zeros::<f64>(n, "the potential")?,
            r: gpu.zeros::<f64>(n, "the residual")?,
            pv: gpu.zeros::<f64>(n, "the CG direction")?,
            ap: gpu.zeros::<f64>(n, "A times the CG direction")?,
            red: Reducer::new(gpu)?,
            k,
            halo: None,
        })
    }

    /// Number of finest cells.
    pub fn cells(&self) -> usize {
        self.params.n as usize
    }

    pub(crate) fn n(&self) -> usize {
        self.params.n as usize
    }

    /// x = 0 (the start of every solve).
    pub(crate) fn zero_x(&mut self, gpu: &Gpu) -> Result<(), CudaError> {
        gpu.stream()
            .memset_zeros(&mut self.x)
            .doing("zeroing the potential")
    }

    /// r = b − A'x and scal[DIV] = max |r/V| (queued; a band's: over every band).
    pub(crate) fn residual(
        &mut self,
        gpu: &Gpu,
        ex: Option<&dyn Exchange>,
    ) -> Result<(), CudaError> {
        self.op(gpu, OP_RESID_MAX, false, ex)
    }

    /// ap = A'p and scal[PAP] = p·Ap (queued; a band's: over every band).
    pub(crate) fn apply_p(
        &mut self,
        gpu: &Gpu,
        ex: Option<&dyn Exchange>,
    ) -> Result<(), CudaError> {
        self.op(gpu, OP_APPLY_DOT, true, ex)
    }

    /// The finest f64 operator in `mode`: on x into r (residual, max |r/V| into scal[DIV]) or
    /// on p into ap (p·Ap into scal[PAP]).
    fn op(
        &mut self,
        gpu: &Gpu,
        mode: u32,
        on_p: bool,
        ex: Option<&dyn Exchange>,
    ) -> Result<(), CudaError> {
        let (cfg, parts) = cfg_reduce(self.n());
        let mut p = WindParams {
            mode,
            ..self.params
        };
        let (input, out) = if on_p {
            (&self.pv, &mut self.ap)
        } else {
            (&self.x, &mut self.r)
        };
        if let (Some(h), Some(ex)) = (self.halo.as_mut(), ex) {
            p = h.exchange(gpu, p, input, ex)?;
        }
        let (hn, hs) = HaloRows::args(self.halo.as_ref(), input);
        let mut lb = gpu.stream().launch_builder(&self.k.op);
        lb.arg(&p)
            .arg(&self.kx)
            .arg(&self.ky)
            .arg(&self.kz)
            .arg(&self.diag)
            .arg(input)
            .arg(&self.b)
            .arg(&self.inv_vol)
            .arg(out)
            .arg(&mut self.red.partial)
            .arg(&hn)
            .arg(&hs);
        // SAFETY: wind_op_f64(WindParams, const double* kx, ky, kz, diag, in, b, inv_vol, double*
        // out, double* partial, const double* hn, hs): cell i < n reads its faces and neighbours
        // inside the finest level's arrays (sizes checked in new) and the halo rows at
        // [k·cols + col] only where p.halo says they exist (nz·cols values each), writes out[i]
        // (out is r or ap, never the input x or p) and block b < parts ≤ PARTS writes
        // partial[b].
        unsafe { lb.launch(cfg) }.map_err(launch_err("wind_op_f64"))?;
        if on_p {
            self.red.finish(gpu, parts, SLOT_PAP, false, ex)
        } else {
            self.red.finish(gpu, parts, SLOT_DIV, true, ex)
        }
    }

    /// levels[0].x = V((f32) r) (queued).
    pub(crate) fn precondition(
        &mut self,
        gpu: &Gpu,
        ex: Option<&dyn Exchange>,
    ) -> Result<(), CudaError> {
        let n = self.n();
        {
            let mut lb = gpu.stream().launch_builder(&self.k.to_f32);
            lb.arg(&self.params)
                .arg(&self.r)
                .arg(&mut self.mg.levels[0].b);
            // SAFETY: wind_to_f32(WindParams, const double* r, float* b32): i < n on both, the
            // finest level having n cells.
            unsafe { lb.launch(cfg_1d(n)) }.map_err(launch_err("wind_to_f32"))?;
        }
        self.mg.cycle(gpu, ex)
    }

    /// scal[slot] = r · z with z the last V-cycle's output (queued).
    pub(crate) fn dot_z(
        &mut self,
        gpu: &Gpu,
        slot: u32,
        ex: Option<&dyn Exchange>,
    ) -> Result<(), CudaError> {
        let (cfg, parts) = cfg_reduce(self.n());
        let mut lb = gpu.stream().launch_builder(&self.k.dot_z);
        lb.arg(&self.params)
            .arg(&self.r)
            .arg(&self.mg.levels[0].x)
            .arg(&mut self.red.partial);
        // SAFETY: wind_dot_z_f64(WindParams, const double* r, const float* z, double* partial):
        // i < n on r and z; block b < parts ≤ PARTS writes partial[b].
        unsafe { lb.launch(cfg) }.map_err(launch_err("wind_dot_z_f64"))?;
        self.red.finish(gpu, parts, slot, false, ex)
    }

    /// p = z + (scal[new]/scal[old]) p, or p = z when `restart` (queued).
    pub(crate) fn direction(
        &mut self,
        gpu: &Gpu,
        restart: bool,
        new: u32,
        old: u32,
    ) -> Result<(), CudaError> {
        let p = WindParams {
            mode: if restart { DIR_RESTART } else { DIR_NEXT },
            slot: new,
            slot2: old,
            ..self.params
        };
        let cfg = cfg_1d(self.n());
        let mut lb = gpu.stream().launch_builder(&self.k.dir);
        lb.arg(&p)
            .arg(&self.mg.levels[0].x)
            .arg(&mut self.pv)
            .arg(&self.red.scal);
        // SAFETY: wind_cg_dir_f64(WindParams, const float* z, double* p, const double* scal):
        // i < n on z and p; scal read at slot and slot2 (SLOT_* constants below SLOTS).
        unsafe { lb.launch(cfg) }.map_err(launch_err("wind_cg_dir_f64"))?;
        Ok(())
    }

    /// x += αp, r −= αAp with α = scal[rz]/scal[PAP]; scal[DIV] = max |r/V| (queued).
    pub(crate) fn cg_update(
        &mut self,
        gpu: &Gpu,
        rz: u32,
        ex: Option<&dyn Exchange>,
    ) -> Result<(), CudaError> {
        let (cfg, parts) = cfg_reduce(self.n());
        let p = WindParams {
            slot: rz,
            ..self.params
        };
        let mut lb = gpu.stream().launch_builder(&self.k.update);
        lb.arg(&p)
            .arg(&mut self.x)
            .arg(&mut self.r)
            .arg(&self.pv)
            .arg(&self.ap)
            .arg(&self.inv_vol)
            .arg(&self.red.scal)
            .arg(&mut self.red.partial);
        // SAFETY: wind_cg_update_f64(WindParams, double* x, r, const double* p, ap, inv_vol,
        // scal, double* partial): i < n on the five vectors; scal read at slot and
        // WIND_SLOT_PAP; block b < parts ≤ PARTS writes partial[b].
        unsafe { lb.launch(cfg) }.map_err(launch_err("wind_cg_update_f64"))?;
        self.red.finish(gpu, parts, SLOT_DIV, true, ex)
    }

    /// x += (f64) levels[0].x (queued).
    pub(crate) fn add_correction(&mut self, gpu: &Gpu) -> Result<(), CudaError> {
        let cfg = cfg_1d(self.n());
        let mut lb = gpu.stream().launch_builder(&self.k.add);
        lb.arg(&self.params)
            .arg(&self.mg.levels[0].x)
            .arg(&mut self.x);
        // SAFETY: wind_add_f64(WindParams, const float* x32, double* phi): i < n on both.
        unsafe { lb.launch(cfg) }.map_err(launch_err("wind_add_f64"))?;
        Ok(())
    }

    /// One colour of SOR on x (queued).
    pub(crate) fn sor_half(&mut self, gpu: &Gpu, colour: u32, omega: f64) -> Result<(), CudaError> {
        let p = WindParams {
            colour,
            omega,
            omega_f: omega as f32,
            ..self.params
        };
        let (rows, cols, nz) = (p.rows as usize, p.cols as usize, p.nz as usize);
        let mut lb = gpu.stream().launch_builder(&self.k.sor);
        lb.arg(&p)
            .arg(&self.kx)
            .arg(&self.ky)
            .arg(&self.kz)
            .arg(&self.diag)
            .arg(&mut self.x)
            .arg(&self.b);
        // SAFETY: wind_sor_f64(WindParams, const double* kx, ky, kz, diag, double* phi, const
        // double* b): the thread of cell (k, row, col) of the active colour reads its faces and
        // the other colour's neighbours (not written in this launch) within the finest level's
        // arrays and writes phi at its own cell.
        unsafe { lb.launch(cfg_planes(cols.div_ceil(2), rows, nz)) }
            .map_err(launch_err("wind_sor_f64"))?;
        Ok(())
    }

    /// r = b (the first residual, from x = 0) and scal[DIV] = max |b/V| (queued).
    pub(crate) fn start(&mut self, gpu: &Gpu, ex: Option<&dyn Exchange>) -> Result<(), CudaError> {
        self.zero_x(gpu)?;
        self.residual(gpu, ex)
    }
}
