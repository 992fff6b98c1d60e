//! The solver loops of [`GpuSherman`]: the same iterations, checks and stop rule as geofield's
//! CPU `multigrid::solve` (including the stall rule of [`super::stall`]), with one scalar
//! readback per convergence check.

use std::sync::Arc;

use super::DeviceTimer;
use super::exchange::Exchange;
use super::reduce::{SLOT_DIV, SLOT_PAP, SLOT_RZ};
use super::sherman::{DeviceSolve, GpuSherman, Method, StopRule};
use super::stall::StallRule;
use crate::context::Gpu;
use crate::error::{CudaError, invalid};

impl GpuSherman {
    /// Solves from φ = 0 until max |div| ≤ `stop.threshold_per_s` or the iteration cap;
    /// `progress(iteration, max |div|)` at every check. Multigrid and CG check every iteration,
    /// SOR every `check_every` sweeps and at the last.
    pub fn solve(
        &mut self,
        method: Method,
        stop: StopRule,
        progress: &mut dyn FnMut(usize, f64),
    ) -> Result<DeviceSolve, CudaError> {
        if self.halo.is_some() {
            return Err(invalid(
                "wind_sherman",
                "a band of a split problem is solved with solve_split",
            ));
        }
        self.solve_on(None, method, stop, progress)
    }

    /// [`Self::solve`] on a band of a problem split by rows ([`Self::assemble_band`]), every
    /// part calling it together: the same iterations, checks and stop decisions on every part
    /// (the divergence and the dot products combined over the bands). `phi` is this band's,
    /// in its cell layout. Multigrid and MG-CG only.
    pub fn solve_split(
        &mut self,
        ex: &dyn Exchange,
        method: Method,
        stop: StopRule,
        progress: &mut dyn FnMut(usize, f64),
    ) -> Result<DeviceSolve, CudaError> {
        if self.halo.is_none() {
            return Err(invalid(
                "wind_sherman",
                "solve_split needs a band (assemble_band)",
            ));
        }
        if matches!(method, Method::Sor { .. }) {
            return Err(invalid(
                "wind_sherman",
                "the split solve runs the multigrid and MG-CG solvers, not SOR",
            ));
        }
        // Every error from here is this part's alone (a device fault, a failed copy) while the
        // others wait at the next halo exchange: it abandons the run.
        let run = self.solve_on(Some(ex), method, stop, progress);
        if let Err(e) = &run {
            ex.abandon(&e.to_string());
        }
        run
    }

    fn solve_on(
        &mut self,
        ex: Option<&dyn Exchange>,
        method: Method,
        stop: StopRule,
        progress: &mut dyn FnMut(usize, f64),
    ) -> Result<DeviceSolve, CudaError> {
        if !(stop.threshold_per_s.is_finite() && stop.threshold_per_s >= 0.0) {
            return Err(invalid(
                "wind_sherman",
                format!("threshold {} s⁻¹ must be ≥ 0", stop.threshold_per_s),
            ));
        }
        if let Method::Sor { omega } = method
            && !(omega.is_finite() && omega > 0.0 && omega < 2.0)
        {
            return Err(invalid(
                "wind_sor",
                format!("omega = {omega} must be in (0, 2)"),
            ));
        }
        let gpu = Arc::clone(&self.gpu);
        let _held = gpu.hold();
        let timer = DeviceTimer::start(&gpu)?;
        let mut run = DeviceSolve::default();
        self.start(&gpu, ex)?;
        let d0 = self.red.read(&gpu)?[SLOT_DIV as usize];
        run.history.push((0, d0));
        if d0 <= stop.threshold_per_s {
            run.converged = true;
        } else {
            match method {
                Method::Multigrid => self.refine(&gpu, ex, stop, &mut run, progress)?,
                Method::MgCg => self.cg(&gpu, ex, stop, &mut run, progress)?,
                Method::Sor { omega } => self.sor(&gpu, omega, stop, &mut run, progress)?,
            }
        }
        run.device_seconds = timer.seconds()?;
        run.phi = gpu.download(&self.x, self.n(), "the potential")?;
        Ok(run)
    }

    /// Records a stall of `rule` on the history; true when the solve must stop.
    fn stalled(rule: StallRule, run: &mut DeviceSolve) -> bool {
        run.stall = rule.check(&run.history);
        run.stall.is_some()
    }

    /// Reads the scalars and records a check.
    fn check(
        &self,
        gpu: &Gpu,
        it: usize,
        run: &mut DeviceSolve,
        progress: &mut dyn FnMut(usize, f64),
    ) -> Result<f64, CudaError> {
        let d = self.red.read(gpu)?[SLOT_DIV as usize];
        run.history.push((it, d));
        progress(it, d);
        Ok(d)
    }

    fn refine(
        &mut self,
        gpu: &Gpu,
        ex: Option<&dyn Exchange>,
        stop: StopRule,
        run: &mut DeviceSolve,
        progress: &mut dyn FnMut(usize, f64),
    ) -> Result<(), CudaError> {
        for it in 1..=stop.max_iterations {
            self.precondition(gpu, ex)?;
            self.add_correction(gpu)?;
            self.residual(gpu, ex)?;
            run.iterations = it;
            if self.check(gpu, it, run, progress)? <= stop.threshold_per_s {
                run.converged = true;
                break;
            }
            if Self::stalled(StallRule::CYCLES, run) {
                break;
            }
        }
        Ok(())
    }

    fn sor(
        &mut self,
        gpu: &Gpu,
        omega: f64,
        stop: StopRule,
        run: &mut DeviceSolve,
        progress: &mut dyn FnMut(usize, f64),
    ) -> Result<(), CudaError> {
        let every = stop.check_every.max(1);
        let rule = StallRule::sweeps(every);
        for it in 1..=stop.max_iterations {
            self.sor_half(gpu, 1, omega)?;
            self.sor_half(gpu, 0, omega)?;
            run.iterations = it;
            if it % every == 0 || it == stop.max_iterations {
                self.residual(gpu, None)?;
                if self.check(gpu, it, run, progress)? <= stop.threshold_per_s {
                    run.converged = true;
                    break;
                }
                if Self::stalled(rule, run) {
                    break;
                }
            }
        }
        Ok(())
    }

    /// CG on A'φ = b' with z = V(r); r·z alternates between two slots so that no kernel reads
    /// a slot another writes. The recurrence residual's test is confirmed with the true
    /// residual, and CG restarts from it when rounding drifted.
    fn cg(
        &mut self,
        gpu: &Gpu,
        ex: Option<&dyn Exchange>,
        stop: StopRule,
        run: &mut DeviceSolve,
        progress: &mut dyn FnMut(usize, f64),
    ) -> Result<(), CudaError> {
        let mut cur = 0usize;
        self.precondition(gpu, ex)?;
        self.dot_z(gpu, SLOT_RZ[cur], ex)?;
        self.direction(gpu, true, SLOT_RZ[cur], SLOT_RZ[cur])?;
        for it in 1..=stop.max_iterations {
            self.apply_p(gpu, ex)?;
            self.cg_update(gpu, SLOT_RZ[cur], ex)?;
            let s = self.red.read(gpu)?;
            let pap = s[SLOT_PAP as usize];
            if pap.is_nan() || pap <= 0.0 {
                // The update used α = 0: nothing moved. As on the CPU, stop unconverged.
                run.stall = Some(super::stall::Stall::Stagnated);
                break;
            }
            run.iterations = it;
            if s[SLOT_DIV as usize] <= stop.threshold_per_s {
                self.residual(gpu, ex)?;
                if self.check(gpu, it, run, progress)? <= stop.threshold_per_s {
                    run.converged = true;
                    break;
                }
                if Self::stalled(StallRule::CYCLES, run) {
                    break;
                }
                self.precondition(gpu, ex)?;
                self.dot_z(gpu, SLOT_RZ[cur], ex)?;
                self.direction(gpu, true, SLOT_RZ[cur], SLOT_RZ[cur])?;
                continue;
            }
            let d = s[SLOT_DIV as usize];
            run.history.push((it, d));
            progress(it, d);
            if Self::stalled(StallRule::CYCLES, run) {
                break;
            }
            let next = 1 - cur;
            self.precondition(gpu, ex)?;
            self.dot_z(gpu, SLOT_RZ[next], ex)?;
            self.direction(gpu, false, SLOT_RZ[next], SLOT_RZ[cur])?;
            cur = next;
        }
        Ok(())
    }
}
