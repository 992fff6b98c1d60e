//! Scalars on the device: the partials of the reducing kernels, their final fixed-order
//! reduction into a slot, and the one readback per convergence check.

use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};

use super::exchange::Exchange;
use super::params::WindParams;
use super::{MODULE, PARTS, launch_err};
use crate::context::Gpu;
use crate::error::{CudaError, DriverResultExt};

/// Slot of max |div| (s⁻¹).
pub(crate) const SLOT_DIV: u32 = 0;
/// Slot of p·Ap (`WIND_SLOT_PAP`).
pub(crate) const SLOT_PAP: u32 = 1;
/// The two alternating slots of r·z.
pub(crate) const SLOT_RZ: [u32; 2] = [2, 3];
const SLOTS: usize = 4;

pub(crate) struct Reducer {
    /// One partial per block of a reducing kernel.
    pub(crate) partial: CudaSlice<f64>,
    /// The scalar slots.
    pub(crate) scal: CudaSlice<f64>,
    max: CudaFunction,
    sum: CudaFunction,
}

impl Reducer {
    pub(crate) fn new(gpu: &Gpu) -> Result<Self, CudaError> {
        Ok(Self {
            partial: gpu.zeros::<f64>(PARTS, "the reduction partials")?,
            scal: gpu.zeros::<f64>(SLOTS, "the solver scalars")?,
            max: gpu.function(MODULE, "wind_reduce_max_f64")?,
            sum: gpu.function(MODULE, "wind_reduce_sum_f64")?,
        })
    }

    /// scal[slot] = max (or sum) of the first `parts` partials.
    pub(crate) fn finish(
        &mut self,
        gpu: &Gpu,
        parts: u32,
        slot: u32,
        max: bool,
        ex: Option<&dyn Exchange>,
    ) -> Result<(), CudaError> {
        let p = WindParams {
            parts,
            slot,
            ..Default::default()
        };
        let (f, name) = if max {
            (&self.max, "wind_reduce_max_f64")
        } else {
            (&self.sum, "wind_reduce_sum_f64")
        };
        let mut lb = gpu.stream().launch_builder(f);
        lb.arg(&p).arg(&self.partial).arg(&mut self.scal);
        let cfg = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (PARTS as u32, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: wind_reduce_*_f64(WindParams, const double* partial (PARTS), double* scal
        // (SLOTS)): one block of PARTS threads reads partial[t] for t < parts ≤ PARTS and thread
        // 0 writes scal[slot], slot < SLOTS (the callers pass the SLOT_* constants).
        unsafe { lb.launch(cfg) }.map_err(launch_err(name))?;
        // A band's value combined over every band (the split solve): max, or the bands' sums
        // added in part order, the same bits on every part.
        if let Some(ex) = ex {
            let mut v = self.read(gpu)?;
            let mine = v[slot as usize];
            v[slot as usize] = if max { ex.max(mine) } else { ex.sum(mine) };
            gpu.stream()
                .memcpy_htod(&v, &mut self.scal)
                .doing("combining the bands' solver scalars")?;
        }
        Ok(())
    }

    /// Every slot (waits for the queued work): [max div, p·Ap, r·z, r·z].
    pub(crate) fn read(&self, gpu: &Gpu) -> Result<[f64; SLOTS], CudaError> {
        let v = gpu.download(&self.scal, SLOTS, "the solver scalars")?;
        let mut out = [0.0; SLOTS];
        for (o, x) in out.iter_mut().zip(v) {
            *o = x;
        }
        Ok(out)
    }
}
