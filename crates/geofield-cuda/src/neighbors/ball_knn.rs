//! k nearest neighbours in any space on the device (`ball_knn_D` in `kernels/ball.cu`): the
//! radius queries' cell list with a radius of its own per query. The caller (geofield's
//! `neighbors::ball::knn_in`) runs the rounds: [`KnnSearch::counts`] at each query's current
//! radius, until each holds k candidates; then [`KnnSearch::best`] (k ≤ [`BEST_K_MAX`]: the k
//! smallest keys kept on the device) or [`KnnSearch::keys`] (every candidate, selected on the
//! host). Candidates and their values are the CPU's bit for bit (same cells, same arithmetic).

use cudarc::driver::{CudaSlice, PushKernelArg};
use std::sync::MutexGuard;

use super::ball::{BallKernelParams, Cells, Keep, MODULE, Reach, Rows, Staged, cfg};
use super::launch_err;
use crate::context::Gpu;
use crate::error::{CudaError, invalid};

/// Largest k that [`KnnSearch::best`] keeps on the device (`BALL_K_MAX` in ball.cu).
pub const BEST_K_MAX: usize = 64;

/// The staged cell list and queries of one k-NN search; holds the device while it lives.
pub struct KnnSearch<'g> {
    gpu: &'g Gpu,
    _held: MutexGuard<'g, ()>,
    st: Staged,
    p: BallKernelParams,
    nq: usize,
    name: String,
    counts: CudaSlice<u32>,
}

impl<'g> KnnSearch<'g> {
    /// Stages `cells` and `queries` (`dim` coordinates each) for `metric` (0 Euclidean, 1
    /// Manhattan, 2 Chebyshev); `keep` All or NotSelf (the queries are the points).
    pub fn new(
        gpu: &'g Gpu,
        cells: &Cells<'_>,
        queries: &[f64],
        metric: u32,
        keep: Keep,
    ) -> Result<Self, CudaError> {
        if keep == Keep::Above {
            return Err(invalid("ball_knn", "keep = Above is for pairs"));
        }
        let nq = queries.len() / cells.dim.max(1);
        let mut p = cells.params(
            nq,
            Reach {
                metric,
                r: 0.0,
                thr: 0.0,
            },
        )?;
        p.keep = keep as u32;
        let held = gpu.hold();
        let st = Staged::new(gpu, cells, queries)?;
        let counts = gpu.zeros::<u32>(nq, "the candidate counts")?;
        Ok(KnnSearch {
            gpu,
            _held: held,
            st,
            p,
            nq,
            name: format!("ball_knn_{}", cells.dim),
            counts,
        })
    }

    /// Checks `reach` (r, threshold per query) and copies it to the device.
    fn reach(&self, reach: &[f64]) -> Result<CudaSlice<f64>, CudaError> {
        if reach.len() != 2 * self.nq {
            return Err(invalid(
                "ball_knn",
                format!("{} reach values for {} queries", reach.len(), self.nq),
            ));
        }
        self.gpu.upload(reach, "the query radii")
    }

    #[allow(clippy::too_many_arguments)]
    fn launch(
        &mut self,
        mode: u32,
        reach: &CudaSlice<f64>,
        k: u32,
        offsets: &CudaSlice<u64>,
        idx: &mut CudaSlice<u32>,
        val: &mut CudaSlice<f64>,
    ) -> Result<(), CudaError> {
        if self.nq == 0 {
            return Ok(());
        }
        let f = self.gpu.function(MODULE, &self.name)?;
        let mut p = self.p;
        p.mode = mode;
        let mut b = self.gpu.stream().launch_builder(&f);
        b.arg(&p)
            .arg(&self.st.pts)
            .arg(&self.st.ids)
            .arg(&self.st.starts)
            .arg(&self.st.queries)
            .arg(reach)
            .arg(&k)
            .arg(&mut self.counts)
            .arg(offsets)
            .arg(idx)
            .arg(val);
        // SAFETY: ball_knn_D(params, pts, ids, starts, qs (nq·D), reach (2·nq), k, counts (nq),
        // offsets, out_idx, out_v): reads the cell list within its bounds (Cells::params checked
        // the arrays agree) and reach[2 qi..2 qi + 2] for qi < nq; mode 0 writes counts[qi];
        // mode 1 writes query qi's candidates at offsets[qi] .. offsets[qi + 1], which the
        // caller sized from the counts of the same reach (same visit, same tests); mode 2 writes
        // out_idx / out_v[qi·k .. (qi + 1)·k], sized nq·k by the caller.
        unsafe { b.launch(cfg(self.nq, 0)) }.map_err(launch_err(self.name.clone()))?;
        Ok(())
    }

    /// The number of candidates of each query within its reach (`reach`: r, threshold per
    /// query; r < 0 leaves the query out with 0).
    pub fn counts(&mut self, reach: &[f64]) -> Result<Vec<u32>, CudaError> {
        let d = self.reach(reach)?;
        let (off, mut i, mut v) = self.dummies()?;
        self.launch(0, &d, 0, &off, &mut i, &mut v)?;
        self.gpu
            .download(&self.counts, self.nq, "the candidate counts")
    }

    /// One-element stand-ins for the row buffers a count launch does not touch.
    #[allow(clippy::type_complexity)]
    fn dummies(&self) -> Result<(CudaSlice<u64>, CudaSlice<u32>, CudaSlice<f64>), CudaError> {
        Ok((
            self.gpu.zeros::<u64>(1, "the row offsets")?,
            self.gpu.zeros::<u32>(1, "the neighbour indices")?,
            self.gpu.zeros::<f64>(1, "the neighbour values")?,
        ))
    }

    /// Each query's k (1..=[`BEST_K_MAX`]) smallest keys (value bits, index) within its reach,
    /// ascending, row-major (nq × k): indices (`u32::MAX` where fewer) and raw values (the
    /// metric's combined value, NaN where fewer).
    pub fn best(&mut self, reach: &[f64], k: usize) -> Result<(Vec<u32>, Vec<f64>), CudaError> {
        if k == 0 || k > BEST_K_MAX {
            return Err(invalid("ball_knn", format!("k = {k} (1..={BEST_K_MAX})")));
        }
        let d = self.reach(reach)?;
        let n = self.nq * k;
        self.gpu
            .ensure_free("the neighbour rows", (n * 12) as u64)?;
        let off = self.gpu.zeros::<u64>(1, "the row offsets")?;
        let mut i = self.gpu.zeros::<u32>(n, "the neighbour indices")?;
        let mut v = self.gpu.zeros::<f64>(n, "the neighbour values")?;
        self.launch(2, &d, k as u32, &off, &mut i, &mut v)?;
        Ok((
            self.gpu.download(&i, n, "the neighbour indices")?,
            self.gpu.download(&v, n, "the neighbour values")?,
        ))
    }

    /// Every candidate of each query within its reach, as CSR rows in the cells' order:
    /// (offsets, indices, raw values). `counts` are [`KnnSearch::counts`] of the same `reach`.
    pub fn keys(&mut self, reach: &[f64], counts: &[u32]) -> Result<Rows, CudaError> {
        if counts.len() != self.nq {
            return Err(invalid("ball_knn", "one count per query"));
        }
        let d = self.reach(reach)?;
        let mut offsets = Vec::with_capacity(self.nq + 1);
        let mut total = 0u64;
        offsets.push(0);
        for &c in counts {
            total += u64::from(c);
            offsets.push(total);
        }
        let total =
            usize::try_from(total).map_err(|_| invalid("ball_knn", "too many candidates"))?;
        self.gpu
            .ensure_free("the candidates", (total * 12 + offsets.len() * 8) as u64)?;
        let off = self.gpu.upload(&offsets, "the row offsets")?;
        let mut i = self.gpu.zeros::<u32>(total, "the candidate indices")?;
        let mut v = self.gpu.zeros::<f64>(total, "the candidate values")?;
        self.launch(1, &d, 0, &off, &mut i, &mut v)?;
        Ok((
            offsets,
            self.gpu.download(&i, total, "the candidate indices")?,
            self.gpu.download(&v, total, "the candidate values")?,
        ))
    }
}
