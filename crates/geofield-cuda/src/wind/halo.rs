//! A band's halo rows on the device (the split solve, [`super::GpuSherman::assemble_band`]):
//! the band's first and last rows of a vector go to the neighbouring bands through
//! [`Exchange`], theirs come back into a buffer that the kernels read beyond row 0 and the last
//! row ([`WindParams::halo`] says which sides have one).

use cudarc::driver::{
    CudaFunction, CudaSlice, CudaView, DeviceRepr, PushKernelArg, ValidAsZeroBits,
};

use super::exchange::Exchange;
use super::params::{HALO_NORTH, HALO_SOUTH, WindParams};
use super::{MODULE, cfg_1d, launch_err};
use crate::context::Gpu;
use crate::error::{CudaError, DriverResultExt};

/// A value the halos carry: f32 (the V-cycle) or f64 (the finest level), both exact in f64.
pub(crate) trait HaloValue:
    DeviceRepr + ValidAsZeroBits + Copy + Default + Send + Sync + 'static
{
    const EDGE_KERNEL: &'static str;
    fn to_f64(self) -> f64;
    fn from_f64(x: f64) -> Self;
}

impl HaloValue for f32 {
    const EDGE_KERNEL: &'static str = "wind_edge_rows_f32";
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn from_f64(x: f64) -> Self {
        // Exact: the value came from an f32.
        x as f32
    }
}

impl HaloValue for f64 {
    const EDGE_KERNEL: &'static str = "wind_edge_rows_f64";
    fn to_f64(self) -> f64 {
        self
    }
    fn from_f64(x: f64) -> Self {
        x
    }
}

/// The edge rows sent and the halo rows received, `nz · cols` values per row.
pub(crate) struct HaloRows<T> {
    line: usize,
    edge: CudaSlice<T>,
    /// North halo row then south halo row, `[k][col]` each.
    halo: CudaSlice<T>,
    /// `HALO_NORTH | HALO_SOUTH` as the last exchange found neighbours.
    flags: u32,
    f: CudaFunction,
}

impl<T: HaloValue> HaloRows<T> {
    pub(crate) fn new(gpu: &Gpu, nz: usize, cols: usize) -> Result<Self, CudaError> {
        let line = nz * cols;
        Ok(Self {
            line,
            edge: gpu.zeros::<T>(2 * line, "a band's edge rows")?,
            halo: gpu.zeros::<T>(2 * line, "a band's halo rows")?,
            flags: 0,
            f: gpu.function(MODULE, T::EDGE_KERNEL)?,
        })
    }

    /// Sends the first and last rows of `x` (a vector of the level `p` describes) to the
    /// neighbouring bands and uploads theirs; returns `p` with its `halo` flags set.
    pub(crate) fn exchange(
        &mut self,
        gpu: &Gpu,
        p: WindParams,
        x: &CudaSlice<T>,
        ex: &dyn Exchange,
    ) -> Result<WindParams, CudaError> {
        {
            let mut lb = gpu.stream().launch_builder(&self.f);
            lb.arg(&p).arg(x).arg(&mut self.edge);
            // SAFETY: wind_edge_rows_{f32,f64}(WindParams, const T* x, T* out): t < 2·nz·cols
            // reads x at (k, row 0 or rows − 1, col < cols), inside the level's n cells, and
            // writes out[t] (edge holds 2·nz·cols values for this level's nz and cols).
            unsafe { lb.launch(cfg_1d(2 * self.line)) }.map_err(launch_err(T::EDGE_KERNEL))?;
        }
        let doing = "exchanging a band's halo rows";
        let edge: Vec<f64> = gpu
            .stream()
            .clone_dtoh(&self.edge)
            .doing(doing)?
            .into_iter()
            .map(T::to_f64)
            .collect();
        let (north, south) = ex.halo(&edge[..self.line], &edge[self.line..]);
        let mut host = vec![T::default(); 2 * self.line];
        self.flags = 0;
        for (side, got, flag) in [(0, north, HALO_NORTH), (1, south, HALO_SOUTH)] {
            if let Some(row) = got {
                if row.len() != self.line {
                    return Err(crate::error::invalid(
                        "wind_split",
                        format!("a halo row of {} values, expected {}", row.len(), self.line),
                    ));
                }
                for (h, v) in host[side * self.line..].iter_mut().zip(row) {
                    *h = T::from_f64(v);
                }
                self.flags |= flag;
            }
        }
        gpu.stream()
            .memcpy_htod(&host, &mut self.halo)
            .doing(doing)?;
        Ok(WindParams {
            halo: self.flags,
            ..p
        })
    }

    /// The kernels' halo arguments (north row, south row): `halo`'s rows, or where a level
    /// has none (the whole domain) any valid pointer, `x`'s first value, which the kernels do
    /// not read (`WindParams::halo` is 0).
    pub(crate) fn args<'a>(
        halo: Option<&'a Self>,
        x: &'a CudaSlice<T>,
    ) -> (CudaView<'a, T>, CudaView<'a, T>) {
        match halo {
            Some(h) => (h.halo.slice(0..h.line), h.halo.slice(h.line..2 * h.line)),
            None => (x.slice(0..1), x.slice(0..1)),
        }
    }
}
