//! The CPU flock: each step builds the chosen neighbour index over the positions, then answers
//! every agent's query, steers and integrates in parallel (rayon) into a second state buffer.
//!
//! The state is stored in the index's storage order (cell order for the uniform grid, leaf
//! order for the dynamic grid), re-sorted at the start of every step, with each slot's stable
//! agent id: neighbouring agents then sit together in memory, so an agent's neighbours are read
//! from cache. Indexes key and tie-break results by agent id, and every agent's new state
//! depends only on state t, so the output does not depend on the storage order, the thread
//! count or rayon's splitting. [`CpuFlock::state`] returns the agents in id order.

use rayon::prelude::*;

use super::scene::Compiled;
use super::steer::{self, Agent, Sums};
use super::{FlockIndex, FlockParams, FlockState, NeighborMode};
use crate::bench::flock::StepDetail;
use crate::neighbors::Search;
use crate::neighbors::brute::Brute;
use crate::neighbors::dynamic::DynamicGrid;
use crate::neighbors::kbest::KBest;
use crate::neighbors::uniform::UniformGrid;

/// Leaf size of the dynamic grid in flock steps.
pub(super) const DYNAMIC_LEAF: usize = 16;

pub(super) struct CpuFlock {
    params: FlockParams,
    /// Obstacles and predator limits (empty: plain flocking).
    scene: Compiled,
    /// The predators' state.
    preds: FlockState,
    /// The state in storage order.
    st: FlockState,
    /// Agent id of each storage slot.
    ids: Vec<u32>,
}

/// Cells no wider than the neighbour radius: the 27 cells around an agent then cover its ball
/// with about 27·r³·ρ candidates, whatever the flock's extent.
fn cell_cap(p: &FlockParams) -> Option<f64> {
    Some(f64::from(p.radius))
}

fn gather<T: Copy + Send + Sync>(v: &[T], order: &[u32]) -> Vec<T> {
    order.par_iter().map(|&s| v[s as usize]).collect()
}

/// Per slot: neighbour agent ids (nearest mode, k per slot), count and raw force.
type Detail = (Vec<u32>, Vec<u32>, Vec<[f32; 3]>);

impl CpuFlock {
    pub(super) fn new(
        params: FlockParams,
        state: FlockState,
        scene: Compiled,
        preds: FlockState,
    ) -> Self {
        let n = state.len() as u32;
        CpuFlock {
            params,
            scene,
            preds,
            st: state,
            ids: (0..n).collect(),
        }
    }

    /// The state in agent-id order.
    pub(super) fn state(&self) -> FlockState {
        let n = self.st.len();
        let mut inv = vec![0u32; n];
        for (s, &id) in self.ids.iter().enumerate() {
            inv[id as usize] = s as u32;
        }
        FlockState {
            pos: gather(&self.st.pos, &inv),
            fwd: gather(&self.st.fwd, &inv),
            speed: gather(&self.st.speed, &inv),
            acc: gather(&self.st.acc, &inv),
        }
    }

    pub(super) fn step(&mut self, steps: usize) {
        for _ in 0..steps {
            self.advance(false);
        }
    }

    /// Seconds to build the index alone, then seconds of one whole step (which builds it again).
    pub(super) fn profile_step(&mut self) -> Vec<(&'static str, f64)> {
        let t = std::time::Instant::now();
        let pts = &self.st.pos;
        let size = match self.params.index {
            FlockIndex::Brute => 0,
            FlockIndex::Uniform => UniformGrid::build_capped(pts, None, cell_cap(&self.params))
                .map_or(0, |g| g.dims()[0]),
            FlockIndex::Dynamic => DynamicGrid::build(pts, DYNAMIC_LEAF).leaves(),
        };
        let build = t.elapsed().as_secs_f64();
        std::hint::black_box(size);
        let t = std::time::Instant::now();
        self.advance(false);
        let step = t.elapsed().as_secs_f64();
        vec![("build", build * 1e3), ("step", step * 1e3)]
    }

    pub(super) fn step_detail(&mut self) -> StepDetail {
        let k = match self.params.mode {
            NeighborMode::Nearest { k } => k,
            NeighborMode::Radius => 0,
        };
        let (nb, counts, force) = self.advance(true);
        // Slot order (of the step's sorted state) to id order.
        let ids = &self.ids;
        let n = ids.len();
        let mut out = StepDetail {
            neighbors: vec![u32::MAX; n * k],
            counts: vec![0; n],
            force: vec![[0.0; 3]; n],
        };
        for (s, &id) in ids.iter().enumerate() {
            let id = id as usize;
            out.counts[id] = counts[s];
            out.force[id] = force[s];
            out.neighbors[id * k..(id + 1) * k].copy_from_slice(&nb[s * k..(s + 1) * k]);
        }
        out
    }

    /// The predators' state.
    pub(super) fn predators(&self) -> FlockState {
        self.preds.clone()
    }

    /// One step. With `detail`, also returns per slot the neighbour rows, counts and forces.
    fn advance(&mut self, detail: bool) -> Detail {
        // The predators' step t -> t + 1 reads the boids at t; the boids read the predators at t.
        let next_preds = (!self.preds.is_empty() && !self.st.is_empty()).then(|| {
            super::predator::step_predators(
                &self.scene,
                &self.params.constants,
                self.params.dt,
                &self.st,
                &self.ids,
                &self.preds,
            )
        });
        let d = self.advance_boids(detail);
        if let Some(np) = next_preds {
            self.preds = np;
        }
        d
    }

    fn advance_boids(&mut self, detail: bool) -> Detail {
        let p = self.params;
        let cap = cell_cap(&p);
        let sc = Some((&self.scene, &self.preds)).filter(|_| !self.scene_is_empty());
        match p.index {
            FlockIndex::Brute => {
                let mut b = Brute::new(&self.st.pos);
                b.relabel(&self.ids);
                let (st, d) = advance_with(&p, sc, &self.st, &self.ids, &b, detail);
                self.st = st;
                d
            }
            FlockIndex::Uniform => match UniformGrid::build_capped(&self.st.pos, None, cap) {
                Ok(g) => self.sorted_step(g, detail),
                // The default cell size never exceeds the cell cap; brute force is the exact
                // equivalent should it ever.
                Err(_) => {
                    let mut b = Brute::new(&self.st.pos);
                    b.relabel(&self.ids);
                    let (st, d) = advance_with(&p, sc, &self.st, &self.ids, &b, detail);
                    self.st = st;
                    d
                }
            },
            FlockIndex::Dynamic => {
                let g = DynamicGrid::build(&self.st.pos, DYNAMIC_LEAF);
                self.sorted_step(g, detail)
            }
        }
    }

    fn scene_is_empty(&self) -> bool {
        self.scene.obstacles.is_empty() && self.preds.is_empty()
    }

    /// Re-sort the state into the index's storage order, then step.
    fn sorted_step<S: Search<f32, 3> + Relabel>(&mut self, mut index: S, detail: bool) -> Detail {
        // The index stores old storage slots; key it by agent id instead.
        index.relabel_by(&self.ids);
        if let Some(order) = index.storage_order().map(<[u32]>::to_vec)
            && order.len() == self.st.len()
        {
            // storage_order() now gives agent ids: map them to the old slots to gather.
            let mut slot = vec![0u32; order.len()];
            for (s, &id) in self.ids.iter().enumerate() {
                slot[id as usize] = s as u32;
            }
            let from: Vec<u32> = order.iter().map(|&id| slot[id as usize]).collect();
            self.st = FlockState {
                pos: gather(&self.st.pos, &from),
                fwd: gather(&self.st.fwd, &from),
                speed: gather(&self.st.speed, &from),
                acc: gather(&self.st.acc, &from),
            };
            self.ids = order;
        }
        let sc = Some((&self.scene, &self.preds)).filter(|_| !self.scene_is_empty());
        let (st, d) = advance_with(&self.params, sc, &self.st, &self.ids, &index, detail);
        self.st = st;
        d
    }
}

/// The indexes whose stored point indices can be replaced by labels.
trait Relabel {
    fn relabel_by(&mut self, labels: &[u32]);
}

impl Relabel for UniformGrid<f32, 3> {
    fn relabel_by(&mut self, labels: &[u32]) {
        self.relabel(labels);
    }
}

impl Relabel for DynamicGrid<f32, 3> {
    fn relabel_by(&mut self, labels: &[u32]) {
        self.relabel(labels);
    }
}

/// One step of every agent (state `st` in storage order, `ids` the agents' ids, `index` keyed
/// by agent id and holding the points in the same storage order).
fn advance_with<S: Search<f32, 3>>(
    p: &FlockParams,
    scene: Option<(&Compiled, &FlockState)>,
    st: &FlockState,
    ids: &[u32],
    index: &S,
    detail: bool,
) -> (FlockState, Detail) {
    let n = st.len();
    let r2 = p.r2_inclusive();
    let kk = match p.mode {
        NeighborMode::Nearest { k } => k,
        NeighborMode::Radius => 0,
    };
    // Storage slot of every agent id.
    let mut slot = vec![0u32; n];
    for (s, &id) in ids.iter().enumerate() {
        slot[id as usize] = s as u32;
    }
    let c = p.constants;
    let dt = p.dt;
    let one = |s: usize, row: &mut [u32]| -> (Agent, [f32; 3], u32) {
        let me = st.agent(s);
        let my_id = ids[s];
        let mut sums = Sums::default();
        let count;
        match p.mode {
            NeighborMode::Nearest { k } => {
                let mut best = KBest::new(k);
                index.search(&me.pos, Some(my_id), r2, &mut best);
                let mut m = 0;
                for (d2, j) in best.items() {
                    let js = slot[j as usize] as usize;
                    steer::accumulate(&c, &mut sums, me.pos, me.fwd, st.pos[js], st.fwd[js], d2);
                    if let Some(x) = row.get_mut(m) {
                        *x = j;
                    }
                    m += 1;
                }
                count = m as u32;
            }
            NeighborMode::Radius => {
                let mut list = Vec::new();
                index.within(&me.pos, Some(my_id), r2, &mut list);
                list.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                for &(d2, j) in &list {
                    let js = slot[j as usize] as usize;
                    steer::accumulate(&c, &mut sums, me.pos, me.fwd, st.pos[js], st.fwd[js], d2);
                }
                count = list.len() as u32;
            }
        }
        let mut force = steer::force(&c, &sums, me.pos, me.fwd);
        if let Some((sc, preds)) = scene {
            force = super::predator::boid_force(sc, &c, &me, force, preds);
        }
        (steer::integrate(&c, &me, force, dt), force, count)
    };

    let mut next = FlockState {
        pos: vec![[0.0; 3]; n],
        fwd: vec![[0.0; 3]; n],
        speed: vec![0.0; n],
        acc: vec![[0.0; 3]; n],
    };
    let rows_k = if detail { kk } else { 0 };
    let mut rows = vec![u32::MAX; n * rows_k];
    let mut counts = vec![0u32; if detail { n } else { 0 }];
    let mut forces = vec![[0.0f32; 3]; if detail { n } else { 0 }];
    const CHUNK: usize = 256;
    next.pos
        .par_chunks_mut(CHUNK)
        .zip(next.fwd.par_chunks_mut(CHUNK))
        .zip(next.speed.par_chunks_mut(CHUNK))
        .zip(next.acc.par_chunks_mut(CHUNK))
        .enumerate()
        .for_each(|(ci, (((np, nf), ns), na))| {
            let mut empty: [u32; 0] = [];
            for o in 0..np.len() {
                let s = ci * CHUNK + o;
                let (a, _, _) = one(s, &mut empty);
                np[o] = a.pos;
                nf[o] = a.fwd;
                ns[o] = a.speed;
                na[o] = a.acc;
            }
        });
    if detail {
        // A second, serial-order pass for the diagnostics (same arithmetic, same results).
        for s in 0..n {
            let row: &mut [u32] = if rows_k > 0 {
                &mut rows[s * rows_k..(s + 1) * rows_k]
            } else {
                &mut []
            };
            let (_, f, m) = one(s, row);
            forces[s] = f;
            counts[s] = m;
        }
    }
    (next, (rows, counts, forces))
}
