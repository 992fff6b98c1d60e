//! [`GpuFlock`]'s public methods: construction and upload, steps, readback, profiling.

use super::*;

impl GpuFlock {
    /// Uploads `state` and prepares a flock of `state.len()` agents (fixed for its life): every
    /// buffer is allocated here, at capacity.
    pub fn new(
        gpu: &Arc<Gpu>,
        cfg: FlockConfig,
        state: &FlockHostState,
    ) -> Result<Self, CudaError> {
        Self::with_scene(gpu, cfg, state, &FlockSceneHost::default())
    }

    /// [`GpuFlock::new`] among the obstacles and predators of `scene`, uploaded once.
    pub fn with_scene(
        gpu: &Arc<Gpu>,
        cfg: FlockConfig,
        state: &FlockHostState,
        scene: &FlockSceneHost,
    ) -> Result<Self, CudaError> {
        const K: &str = "flock";
        cfg.validate()?;
        let n = state.check()?;
        scene.check()?;
        let n_pred = scene.predators.len();
        let grid = cfg.search != FlockSearch::Brute;
        let cells_cap = (4 * n).max(64);
        let tiles_cap = cells_cap / TILE + 1;
        let kernels = if n > 0 {
            let kind = if grid { "grid" } else { "brute" };
            let step_name = format!("flock_step_{kind}_{}", k_suffix(cfg.k));
            gpu.prepare(
                MODULE,
                &[
                    "flock_bounds",
                    "flock_count",
                    "flock_scan",
                    "flock_scatter",
                    "flock_sort_cells",
                    &step_name,
                ],
            )?;
            if n_pred > 0 {
                gpu.prepare(MODULE, &["flock_predators"])?;
            }
            Some(Kernels {
                bounds: gpu.function(MODULE, "flock_bounds")?,
                count: gpu.function(MODULE, "flock_count")?,
                scan: gpu.function(MODULE, "flock_scan")?,
                scatter: gpu.function(MODULE, "flock_scatter")?,
                sort_cells: gpu.function(MODULE, "flock_sort_cells")?,
                step: gpu.function(MODULE, &step_name)?,
                step_name,
            })
        } else {
            None
        };
        let mut pos = Vec::with_capacity(4 * n);
        let mut vel = Vec::with_capacity(4 * n);
        let mut acc = Vec::with_capacity(4 * n);
        for i in 0..n {
            let p = state.pos[i];
            let f = state.fwd[i];
            let a = state.acc[i];
            let id = u32::try_from(i).map_err(|_| invalid(K, "too many agents"))?;
            pos.extend_from_slice(&[p[0].to_bits(), p[1].to_bits(), p[2].to_bits(), id]);
            vel.extend_from_slice(&[
                f[0].to_bits(),
                f[1].to_bits(),
                f[2].to_bits(),
                state.speed[i].to_bits(),
            ]);
            acc.extend_from_slice(&[a[0].to_bits(), a[1].to_bits(), a[2].to_bits(), 0]);
        }
        let grid_len = |len: usize| if grid && n > 0 { len } else { 1 };
        let _held = gpu.hold();
        let set = |what: &str| -> Result<StateBufs, CudaError> {
            Ok(StateBufs {
                pos: gpu.zeros::<u32>(4 * n, &format!("the {what} positions"))?,
                vel: gpu.zeros::<u32>(4 * n, &format!("the {what} velocities"))?,
                acc: gpu.zeros::<u32>(4 * n, &format!("the {what} accelerations"))?,
            })
        };
        let first = StateBufs {
            pos: gpu.upload(&pos, "the agent positions")?,
            vel: gpu.upload(&vel, "the agent velocities")?,
            acc: gpu.upload(&acc, "the agent accelerations")?,
        };
        let second = set("second")?;
        let sync_init: [u32; 8] = [u32::MAX, u32::MAX, u32::MAX, 0, 0, 0, 0, 0];
        let scene_bufs = {
            let mut words: Vec<u32> = scene.obstacles.iter().flat_map(|o| o.words()).collect();
            if words.is_empty() {
                words.push(0);
            }
            let p = &scene.predators;
            let mut pos = Vec::with_capacity(4 * n_pred.max(1));
            let mut vel = Vec::with_capacity(4 * n_pred.max(1));
            let mut acc = Vec::with_capacity(4 * n_pred.max(1));
            let mut limits = Vec::with_capacity(4 * n_pred.max(1));
            for i in 0..n_pred {
                pos.extend_from_slice(&[p.pos[i][0], p.pos[i][1], p.pos[i][2], 0.0]);
                vel.extend_from_slice(&[p.fwd[i][0], p.fwd[i][1], p.fwd[i][2], p.speed[i]]);
                acc.extend_from_slice(&[p.acc[i][0], p.acc[i][1], p.acc[i][2], 0.0]);
                let l = scene.predator_limits[i];
                limits.extend_from_slice(&[l[0], l[1], l[2], 0.0]);
            }
            for v in [&mut pos, &mut vel, &mut acc, &mut limits] {
                if v.is_empty() {
                    v.extend_from_slice(&[0.0; 4]);
                }
            }
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
            let m = pos.len();
            let predators = if n_pred > 0 && n > 0 {
                Some(gpu.function(MODULE, "flock_predators")?)
            } else {
                None
            };
            SceneBufs {
                obstacles: gpu.upload(&words, "the obstacles")?,
                preds: [
                    StateBufs {
                        pos: gpu.upload(&bits(&pos), "the predator positions")?,
                        vel: gpu.upload(&bits(&vel), "the predator velocities")?,
                        acc: gpu.upload(&bits(&acc), "the predator accelerations")?,
                    },
                    StateBufs {
                        pos: gpu.zeros::<u32>(m, "the predator positions")?,
                        vel: gpu.zeros::<u32>(m, "the predator velocities")?,
                        acc: gpu.zeros::<u32>(m, "the predator accelerations")?,
                    },
                ],
                limits: gpu.upload(&limits, "the predator limits")?,
                constants: scene.constants,
                n_obstacles: scene.obstacles.len(),
                n_predators: n_pred,
                predators,
            }
        };
        Ok(GpuFlock {
            gpu: Arc::clone(gpu),
            cfg,
            n,
            cells_cap,
            tiles_cap,
            bounds_blocks: u32::try_from(
                n.div_ceil(AUX_THREADS as usize)
                    .clamp(1, (2 * gpu.info().multiprocessors as usize).max(1)),
            )
            .unwrap_or(1),
            bufs: [first, second],
            cur: 0,
            sync: gpu.upload(&sync_init, "the bounding-box accumulators")?,
            plan: gpu.zeros::<u64>(PLAN_WORDS, "the grid plan")?,
            counts: gpu.zeros::<u32>(grid_len(tiles_cap * TILE), "the cell counts")?,
            starts: gpu.zeros::<u32>(grid_len(tiles_cap * TILE), "the cell starts")?,
            tile_sums: gpu.zeros::<u32>(grid_len(tiles_cap), "the scan tile totals")?,
            rank: gpu.zeros::<u32>(grid_len(n), "the in-cell ranks")?,
            slot_of: gpu.zeros::<u32>(grid_len(n), "the agent slots")?,
            detail: None,
            scene: scene_bufs,
            pcur: 0,
            dummy_nb: gpu.zeros::<u32>(1, "a placeholder")?,
            dummy_cnt: gpu.zeros::<u32>(1, "a placeholder")?,
            dummy_force: gpu.zeros::<f32>(1, "a placeholder")?,
            kernels,
        })
    }

    /// Number of agents.
    pub fn len(&self) -> usize {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The configuration the flock was made with.
    pub fn config(&self) -> &FlockConfig {
        &self.cfg
    }

    /// Enqueues `steps` steps on the device stream (returns without waiting for them).
    pub fn step(&mut self, steps: usize) -> Result<(), CudaError> {
        if self.n == 0 {
            return Ok(());
        }
        let gpu = Arc::clone(&self.gpu);
        let _held = gpu.hold();
        for _ in 0..steps {
            self.enqueue_step(false, None)?;
        }
        Ok(())
    }

    /// One step that also returns its neighbours, counts and raw forces (waits for the device).
    pub fn step_detail(&mut self) -> Result<FlockDetail, CudaError> {
        let n = self.n;
        if n == 0 {
            return Ok(FlockDetail::default());
        }
        let k = self.cfg.k as usize;
        let gpu = Arc::clone(&self.gpu);
        let _held = gpu.hold();
        if self.detail.is_none() {
            self.detail = Some(DetailBufs {
                nb: gpu.zeros::<u32>(n * k, "the neighbour rows")?,
                cnt: gpu.zeros::<u32>(n, "the neighbour counts")?,
                force: gpu.zeros::<f32>(3 * n, "the steering forces")?,
            });
        }
        self.enqueue_step(true, None)?;
        let Some(d) = &self.detail else {
            return Err(invalid("flock", "detail buffers missing"));
        };
        let neighbors = if k > 0 {
            gpu.download(&d.nb, n * k, "the neighbour rows")?
        } else {
            Vec::new()
        };
        let counts = gpu.download(&d.cnt, n, "the neighbour counts")?;
        let f = gpu.download(&d.force, 3 * n, "the steering forces")?;
        let force = f.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect();
        Ok(FlockDetail {
            neighbors,
            counts,
            force,
        })
    }

    /// The current state, back in agent-id order (waits for the device).
    pub fn state(&self) -> Result<FlockHostState, CudaError> {
        let n = self.n;
        if n == 0 {
            return Ok(FlockHostState::default());
        }
        let _held = self.gpu.hold();
        let b = &self.bufs[self.cur];
        let pos = self.gpu.download(&b.pos, 4 * n, "the agent positions")?;
        let vel = self.gpu.download(&b.vel, 4 * n, "the agent velocities")?;
        let acc = self
            .gpu
            .download(&b.acc, 4 * n, "the agent accelerations")?;
        let mut out = FlockHostState {
            pos: vec![[0.0; 3]; n],
            fwd: vec![[0.0; 3]; n],
            speed: vec![0.0; n],
            acc: vec![[0.0; 3]; n],
        };
        let mut seen = vec![false; n];
        let f = |w: &[u32]| {
            [
                f32::from_bits(w[0]),
                f32::from_bits(w[1]),
                f32::from_bits(w[2]),
            ]
        };
        for (slot, ((p, v), a)) in pos
            .chunks_exact(4)
            .zip(vel.chunks_exact(4))
            .zip(acc.chunks_exact(4))
            .enumerate()
        {
            let id = p[3] as usize;
            if id >= n || seen[id] {
                return Err(invalid(
                    "flock (state)",
                    format!("device slot {slot} holds agent id {id}: ids are not a permutation"),
                ));
            }
            seen[id] = true;
            out.pos[id] = f(p);
            out.fwd[id] = f(v);
            out.speed[id] = f32::from_bits(v[3]);
            out.acc[id] = f(a);
        }
        Ok(out)
    }

    /// The predators' current state, in scene order (waits for the device).
    pub fn predators(&self) -> Result<FlockHostState, CudaError> {
        let np = self.scene.n_predators;
        if np == 0 {
            return Ok(FlockHostState::default());
        }
        let _held = self.gpu.hold();
        let b = &self.scene.preds[self.pcur];
        let pos = self
            .gpu
            .download(&b.pos, 4 * np, "the predator positions")?;
        let vel = self
            .gpu
            .download(&b.vel, 4 * np, "the predator velocities")?;
        let acc = self
            .gpu
            .download(&b.acc, 4 * np, "the predator accelerations")?;
        let f = |w: &[u32]| {
            [
                f32::from_bits(w[0]),
                f32::from_bits(w[1]),
                f32::from_bits(w[2]),
            ]
        };
        let mut out = FlockHostState::default();
        for ((p, v), a) in pos
            .chunks_exact(4)
            .zip(vel.chunks_exact(4))
            .zip(acc.chunks_exact(4))
        {
            out.pos.push(f(p));
            out.fwd.push(f(v));
            out.speed.push(f32::from_bits(v[3]));
            out.acc.push(f(a));
        }
        Ok(out)
    }

    /// Waits for every queued step.
    pub fn synchronize(&self) -> Result<(), CudaError> {
        self.gpu
            .stream()
            .synchronize()
            .doing("waiting for the flock steps (a kernel fault shows up here)")
    }

    /// One step timed per phase with CUDA events (ms): "build" (grid construction),
    /// "search+steer+integrate", "step" (their sum), then the build's parts as "build/…". The
    /// step counts as taken.
    pub fn profile_step(&mut self) -> Result<Vec<(&'static str, f64)>, CudaError> {
        if self.n == 0 {
            return Ok(vec![
                ("build", 0.0),
                ("search+steer+integrate", 0.0),
                ("step", 0.0),
            ]);
        }
        let gpu = Arc::clone(&self.gpu);
        let _held = gpu.hold();
        let mut marks = Vec::new();
        let names = self.enqueue_step(false, Some(&mut marks))?;
        let mut ms = Vec::with_capacity(names.len());
        for w in marks.windows(2) {
            let t = w[0]
                .elapsed_ms(&w[1])
                .doing("timing the flock step (a kernel fault shows up here)")?;
            ms.push(f64::from(t));
        }
        let total: f64 = ms.iter().sum();
        let search = ms.last().copied().unwrap_or(0.0);
        let mut out = vec![
            ("build", total - search),
            ("search+steer+integrate", search),
            ("step", total),
        ];
        for (name, t) in names.iter().zip(&ms) {
            if *name != "search+steer+integrate" {
                out.push((name, *t));
            }
        }
        Ok(out)
    }
}
