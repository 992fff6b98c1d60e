//! [`GpuFlock`]'s kernel parameters and the launch sequence of one step.

use super::*;

impl GpuFlock {
    pub(super) fn params(&self, detail: bool) -> FlockKernelParams {
        // −0 would not be the smallest key of its value.
        let r2 = if self.cfg.r2 == 0.0 { 0.0 } else { self.cfg.r2 };
        FlockKernelParams {
            constants: self.cfg.constants,
            n: self.n as u32,
            k: self.cfg.k,
            r2,
            dt: self.cfg.dt,
            rate: self.cfg.rate(),
            detail: u32::from(detail),
            cell_cap: self.cells_cap as u32,
            tile_cap: self.tiles_cap as u32,
            tree: u32::from(matches!(self.cfg.search, FlockSearch::Tree { .. })),
            max_leaf: match self.cfg.search {
                FlockSearch::Tree { max_leaf } => max_leaf,
                _ => 0,
            },
            n_obstacles: self.scene.n_obstacles as u32,
            n_predators: self.scene.n_predators as u32,
            body_radius: self.scene.constants.body_radius,
            avoid_time: self.scene.constants.avoid_time,
            evade_r2: self.scene.constants.evade_r2,
            evade_weight: self.scene.constants.evade_weight,
            evade_time: self.scene.constants.evade_time,
            pad: 0,
        }
    }

    /// Enqueues the predators' step t -> t + 1 (one block per predator), reading the boids'
    /// state t from `boids` and the predators' from the current set, writing the other set.
    fn enqueue_predators(
        scene: &mut SceneBufs,
        pcur: &mut usize,
        gpu: &Gpu,
        params: &FlockKernelParams,
        boids: &StateBufs,
    ) -> Result<(), CudaError> {
        let Some(f) = &scene.predators else {
            return Ok(());
        };
        let (p0, p1) = scene.preds.split_at_mut(1);
        let (cur, next) = if *pcur == 0 {
            (&p0[0], &mut p1[0])
        } else {
            (&p1[0], &mut p0[0])
        };
        let stream = gpu.stream();
        let mut b = stream.launch_builder(f);
        b.arg(params)
            .arg(&boids.pos)
            .arg(&boids.vel)
            .arg(&scene.obstacles)
            .arg(&cur.pos)
            .arg(&cur.vel)
            .arg(&cur.acc)
            .arg(&scene.limits)
            .arg(&mut next.pos)
            .arg(&mut next.vel)
            .arg(&mut next.acc);
        let cfg = LaunchConfig {
            grid_dim: (scene.n_predators as u32, 1, 1),
            block_dim: (AUX_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: flock_predators(FlockParams, const float4* pos, const float4* vel, const
        // FlObstacle* obs, const float4* ppos, pvel, pacc, const float4* plim, float4* oppos,
        // opvel, opacc) in order and type: the boid buffers hold 4·n words (slots < n read),
        // obs holds n_obstacles records of 20 words, the predator sets and limits 4·n_predators
        // words each; block b < n_predators reads predator b of the current set and writes
        // predator b of the other (distinct) set.
        unsafe { b.launch(cfg) }.map_err(launch_err("flock_predators"))?;
        *pcur ^= 1;
        Ok(())
    }

    /// Enqueues one step (the caller holds the device). With `marks`, records an event before
    /// the first and after each phase; returns the phase names.
    pub(super) fn enqueue_step(
        &mut self,
        detail: bool,
        mut marks: Option<&mut Vec<CudaEvent>>,
    ) -> Result<Vec<&'static str>, CudaError> {
        let params = self.params(detail);
        let n = self.n;
        let Some(kern) = &self.kernels else {
            return Ok(Vec::new());
        };
        let gpu = &self.gpu;
        let stream = gpu.stream();
        let mark = |marks: &mut Option<&mut Vec<CudaEvent>>| -> Result<(), CudaError> {
            if let Some(m) = marks.as_deref_mut() {
                m.push(gpu.mark()?);
            }
            Ok(())
        };
        let (b0, b1) = self.bufs.split_at_mut(1);
        let (cur, other) = if self.cur == 0 {
            (&mut b0[0], &mut b1[0])
        } else {
            (&mut b1[0], &mut b0[0])
        };
        let (det_nb, det_cnt, det_force) = match (&mut self.detail, detail) {
            (Some(d), true) => (&mut d.nb, &mut d.cnt, &mut d.force),
            _ => (
                &mut self.dummy_nb,
                &mut self.dummy_cnt,
                &mut self.dummy_force,
            ),
        };
        let step_cfg = blocks(n, STEP_THREADS, "flock_step")?;
        let aux_cfg = blocks(n, AUX_THREADS, "flock")?;
        mark(&mut marks)?;
        if self.cfg.search == FlockSearch::Brute {
            let mut b = stream.launch_builder(&kern.step);
            let pset = &self.scene.preds[self.pcur];
            b.arg(&params)
                .arg(&cur.pos)
                .arg(&cur.vel)
                .arg(&cur.acc)
                .arg(&self.scene.obstacles)
                .arg(&pset.pos)
                .arg(&pset.vel)
                .arg(&mut other.pos)
                .arg(&mut other.vel)
                .arg(&mut other.acc)
                .arg(det_nb)
                .arg(det_cnt)
                .arg(det_force);
            // SAFETY: flock_step_brute_*(FlockParams, const float4* pos, vel, acc, const
            // FlObstacle* obs, const float4* ppos, pvel, float4* opos, ovel, oacc, u32* det_nb,
            // u32* det_cnt, float* det_force) in order and type (obs: n_obstacles records of 20
            // words, ppos/pvel: 4·n_predators words, or one placeholder record when empty). The
            // state buffers hold 4·n words each (n = params.n), the two sets are distinct; the
            // kernel reads slots < n and writes slot i < n of the other set; the detail buffers
            // (written only when params.detail = 1) hold n·k, n and 3n elements, indexed by the
            // stored ids, which are a permutation of 0..n.
            unsafe { b.launch(step_cfg) }.map_err(launch_err(&kern.step_name))?;
            Self::enqueue_predators(&mut self.scene, &mut self.pcur, gpu, &params, cur)?;
            mark(&mut marks)?;
            self.cur ^= 1;
            return Ok(vec!["search+steer+integrate"]);
        }
        let radius = self.cfg.k == 0;
        {
            let mut b = stream.launch_builder(&kern.bounds);
            b.arg(&params)
                .arg(&cur.pos)
                .arg(&mut self.sync)
                .arg(&mut self.plan)
                .arg(&mut self.tile_sums);
            let cfg = LaunchConfig {
                grid_dim: (self.bounds_blocks, 1, 1),
                block_dim: (AUX_THREADS, 1, 1),
                shared_mem_bytes: 0,
            };
            // SAFETY: flock_bounds(FlockParams, const float4* pos, u32* sync, FlockPlan* plan,
            // u32* tile_sums): pos holds 4·n words, sync 8 (initialised to the identities and
            // reset by the kernel's last block), plan 128 bytes (≥ sizeof(FlockPlan), asserted
            // in C), tile_sums tile_cap entries (the last block zeroes exactly those).
            unsafe { b.launch(cfg) }.map_err(launch_err("flock_bounds"))?;
        }
        mark(&mut marks)?;
        {
            let mut b = stream.launch_builder(&kern.count);
            b.arg(&params)
                .arg(&self.plan)
                .arg(&cur.pos)
                .arg(&mut self.counts)
                .arg(&mut self.tile_sums)
                .arg(&mut self.rank);
            // SAFETY: flock_count(FlockParams, const FlockPlan*, const float4* pos, u32* counts,
            // u32* tile_sums, u32* rank): the plan's cells (< ncells ≤ cell_cap) index counts
            // (tile_cap·4096 > cell_cap entries) and their tiles (< tile_cap) tile_sums; rank
            // holds n entries.
            unsafe { b.launch(aux_cfg) }.map_err(launch_err("flock_count"))?;
        }
        mark(&mut marks)?;
        {
            let mut b = stream.launch_builder(&kern.scan);
            b.arg(&params)
                .arg(&self.plan)
                .arg(&mut self.counts)
                .arg(&self.tile_sums)
                .arg(&mut self.starts);
            let cfg = LaunchConfig {
                grid_dim: (self.tiles_cap as u32, 1, 1),
                block_dim: (AUX_THREADS, 1, 1),
                shared_mem_bytes: 0,
            };
            // SAFETY: flock_scan(FlockParams, const FlockPlan*, u32* counts, const u32*
            // tile_sums, u32* starts): block b < ntiles ≤ tile_cap (= the grid size) reads and
            // zeroes counts[b·4096..(b+1)·4096), writes the same range of starts (both hold
            // tile_cap·4096 entries, 16-byte aligned allocations) and reads tile_sums[..b].
            unsafe { b.launch(cfg) }.map_err(launch_err("flock_scan"))?;
        }
        mark(&mut marks)?;
        {
            let mut b = stream.launch_builder(&kern.scatter);
            b.arg(&params)
                .arg(&self.plan)
                .arg(&self.starts)
                .arg(&self.rank)
                .arg(&cur.pos)
                .arg(&cur.vel)
                .arg(&cur.acc)
                .arg(&mut other.pos)
                .arg(&mut other.vel)
                .arg(&mut other.acc)
                .arg(&mut self.slot_of);
            // SAFETY: flock_scatter(FlockParams, const FlockPlan*, const u32* starts, const u32*
            // rank, const float4* pos, vel, acc, float4* opos, ovel, oacc, u32* slot_of): each
            // agent i < n goes to starts[cell] + rank[i], a permutation of 0..n (counting sort
            // of this step's counts); slot_of has n entries indexed by the stored ids.
            unsafe { b.launch(aux_cfg) }.map_err(launch_err("flock_scatter"))?;
        }
        if radius {
            let mut b = stream.launch_builder(&kern.sort_cells);
            b.arg(&params)
                .arg(&self.plan)
                .arg(&self.starts)
                .arg(&other.pos)
                .arg(&other.vel)
                .arg(&other.acc)
                .arg(&mut cur.pos)
                .arg(&mut cur.vel)
                .arg(&mut cur.acc);
            // SAFETY: flock_sort_cells(FlockParams, const FlockPlan*, const u32* starts, const
            // float4* pos, vel, acc, float4* opos, ovel, oacc): slot i < n moves to its cell's
            // start plus the number of agents of its cell (starts[c]..starts[c+1] ≤ n) with a
            // smaller id: a permutation of 0..n; the two sets are distinct.
            unsafe { b.launch(aux_cfg) }.map_err(launch_err("flock_sort_cells"))?;
        }
        mark(&mut marks)?;
        let (input, output) = if radius {
            (&*cur, &mut *other)
        } else {
            (&*other, &mut *cur)
        };
        {
            let mut b = stream.launch_builder(&kern.step);
            let pset = &self.scene.preds[self.pcur];
            b.arg(&params)
                .arg(&self.plan)
                .arg(&self.starts)
                .arg(&input.pos)
                .arg(&input.vel)
                .arg(&input.acc)
                .arg(&self.slot_of)
                .arg(&self.scene.obstacles)
                .arg(&pset.pos)
                .arg(&pset.vel)
                .arg(&mut output.pos)
                .arg(&mut output.vel)
                .arg(&mut output.acc)
                .arg(det_nb)
                .arg(det_cnt)
                .arg(det_force);
            // SAFETY: flock_step_grid_*(FlockParams, const FlockPlan*, const u32* starts, const
            // float4* pos, vel, acc, const u32* slot_of, const FlObstacle* obs, const float4*
            // ppos, pvel (scene buffers as for the brute force), float4* opos, ovel, oacc, u32* det_nb,
            // u32* det_cnt, float* det_force) in order and type: cells visited are clamped into
            // the plan's dims, starts[c..=c+1] ≤ n index the input set (4·n words per buffer),
            // slot_of maps the stored ids (a permutation of 0..n) to slots < n; thread i < n
            // writes slot i of the other set and the detail rows of its own id (n·k, n, 3n
            // elements; only when params.detail = 1).
            unsafe { b.launch(step_cfg) }.map_err(launch_err(&kern.step_name))?;
        }
        Self::enqueue_predators(&mut self.scene, &mut self.pcur, gpu, &params, input)?;
        mark(&mut marks)?;
        if radius {
            self.cur ^= 1;
        }
        Ok(vec![
            "build/bounds+plan",
            "build/count",
            "build/scan",
            if radius {
                "build/scatter+sort"
            } else {
                "build/scatter"
            },
            "search+steer+integrate",
        ])
    }
}
