//! What comes back from the device stand: the census, the trees and the seed counts.

use cudarc::driver::{LaunchConfig, PushKernelArg};

use super::mirror::FyCensus;
use super::{CENSUS_BLOCKS, Census, DeviceStand, HostTrees, MODULE, THREADS, launch_err};
use crate::error::{CudaError, DriverResultExt, invalid};

impl DeviceStand<'_> {
    /// Every species' census of the current stand; the reproductive basal area counts trees of
    /// DBH ≥ `min_dbh_cm[s]` inside the plot [x0, x1) × [y0, y1).
    pub fn census(
        &self,
        min_dbh_cm: &[f64],
        plot: (f64, f64, f64, f64),
    ) -> Result<Vec<Census>, CudaError> {
        let gpu = self.gpu;
        let _held = gpu.hold();
        let blocks = self.n.div_ceil(THREADS as usize).clamp(1, CENSUS_BLOCKS);
        let mut cnt = gpu.zeros::<u64>(3 * blocks, "census counts")?;
        let mut ba = gpu.zeros::<f64>(2 * blocks, "census basal areas")?;
        let f = gpu.function(MODULE, "forest_census")?;
        let mut out = Vec::with_capacity(self.n_species);
        for s in 0..self.n_species {
            let p = FyCensus {
                x0: plot.0,
                x1: plot.1,
                y0: plot.2,
                y1: plot.3,
                min_dbh_cm: min_dbh_cm.get(s).copied().unwrap_or(f64::INFINITY),
                n: self.n as u64,
                s: s as u32,
                pad: 0,
            };
            let mut b = gpu.stream().launch_builder(&f);
            b.arg(&p)
                .arg(&self.trees.x)
                .arg(&self.trees.y)
                .arg(&self.trees.dbh)
                .arg(&self.trees.sp)
                .arg(&self.species)
                .arg(&mut cnt)
                .arg(&mut ba);
            let cfg = LaunchConfig {
                grid_dim: (blocks as u32, 1, 1),
                block_dim: (THREADS, 1, 1),
                shared_mem_bytes: 0,
            };
            // SAFETY: forest_census(FyCensus, const double* x, y, dbh, const u32* sp, const
            // FySpecies*, u64* cnt, double* ba); the columns hold ≥ n entries, s < the table's
            // length, cnt 3 and ba 2 values per block.
            unsafe { b.launch(cfg) }.map_err(launch_err("forest_census"))?;
            let c = gpu
                .stream()
                .clone_dtoh(&cnt)
                .doing("copying the census back")?;
            let a = gpu
                .stream()
                .clone_dtoh(&ba)
                .doing("copying the census back")?;
            let mut row = Census::default();
            for k in 0..blocks {
                for st in 0..3 {
                    row.stages[st] += c[3 * k + st];
                }
                row.basal_m2 += a[2 * k];
                row.reproductive_basal_m2 += a[2 * k + 1];
            }
            out.push(row);
        }
        Ok(out)
    }

    /// The stand, copied to the host.
    pub fn trees(&self) -> Result<HostTrees, CudaError> {
        let gpu = self.gpu;
        let _held = gpu.hold();
        let n = self.n;
        if n == 0 {
            return Ok(HostTrees::default());
        }
        Ok(HostTrees {
            x_m: gpu.download(&self.trees.x, n, "tree x")?,
            y_m: gpu.download(&self.trees.y, n, "tree y")?,
            dbh_cm: gpu.download(&self.trees.dbh, n, "tree DBH")?,
            species: gpu.download(&self.trees.sp, n, "tree species")?,
            id: gpu.download(&self.trees.id, n, "tree ids")?,
        })
    }

    /// Species `s`' seed counts per cell from its last [`Self::cells`].
    pub fn counts(&self, s: usize) -> Result<Vec<u32>, CudaError> {
        let Some(c) = self.counts.get(s) else {
            return Err(invalid("forest_cells", format!("species {s}")));
        };
        let _held = self.gpu.hold();
        self.gpu.download(c, self.n_cells(), "seed counts")
    }
}
