//! The CPU flock: each step builds the chosen neighbour index over the positions, then answers
//! every agent's query, steers and integrates in parallel (rayon) into a second state buffer.
//!
//! Agents are processed in the index's storage order (neighbouring agents together, so their
//! cells stay in cache) and their new states scattered back to id order; every agent's result
//! depends only on state t, so the output does not depend on the order or on rayon's splitting.

use rayon::prelude::*;

use super::steer::{self, Agent, Sums};
use super::{FlockIndex, FlockParams, FlockState, NeighborMode, StepDetail};
use crate::neighbors::Search;
use crate::neighbors::brute::Brute;
use crate::neighbors::dynamic::DynamicGrid;
use crate::neighbors::kbest::KBest;
use crate::neighbors::uniform::UniformGrid;

/// Leaf size of the dynamic grid in flock steps.
const DYNAMIC_LEAF: usize = 16;

pub(super) struct CpuFlock {
    params: FlockParams,
    state: FlockState,
}

/// One agent's outcome: its new state, force and neighbours (when asked for).
struct Outcome {
    agent: Agent,
    force: [f32; 3],
    count: u32,
}

impl CpuFlock {
    pub(super) fn new(params: FlockParams, state: FlockState) -> Self {
        CpuFlock { params, state }
    }

    pub(super) fn state(&self) -> &FlockState {
        &self.state
    }

    pub(super) fn step(&mut self, steps: usize) {
        for _ in 0..steps {
            self.advance(None);
        }
    }

    /// Seconds to build the index alone, then seconds of one whole step (which builds it again).
    pub(super) fn profile_step(&mut self) -> Vec<(&'static str, f64)> {
        let t = std::time::Instant::now();
        let pts = &self.state.pos;
        let leaves = match self.params.index {
            FlockIndex::Brute => 0,
            FlockIndex::Uniform => UniformGrid::build(pts, None).map_or(0, |g| g.dims()[0]),
            FlockIndex::Dynamic => DynamicGrid::build(pts, DYNAMIC_LEAF).leaves(),
        };
        let build = t.elapsed().as_secs_f64();
        std::hint::black_box(leaves);
        let t = std::time::Instant::now();
        self.advance(None);
        let step = t.elapsed().as_secs_f64();
        vec![("build", build * 1e3), ("step", step * 1e3)]
    }

    pub(super) fn step_detail(&mut self) -> StepDetail {
        let k = match self.params.mode {
            NeighborMode::Nearest { k } => k,
            NeighborMode::Radius => 0,
        };
        let mut nb = vec![u32::MAX; self.state.len() * k];
        let (force, counts) = self.advance(Some(&mut nb));
        StepDetail {
            neighbors: nb,
            counts,
            force,
        }
    }

    /// One step; with `nb`, also the neighbour rows (nearest mode). Returns forces and counts
    /// (empty without `nb`).
    fn advance(&mut self, nb: Option<&mut [u32]>) -> (Vec<[f32; 3]>, Vec<u32>) {
        let (p, st) = (&self.params, &self.state);
        let pts = &st.pos;
        let (next, forces, counts) = match p.index {
            FlockIndex::Brute => advance_with(p, st, &Brute::new(pts), nb),
            FlockIndex::Uniform => match UniformGrid::build(pts, None) {
                Ok(g) => advance_with(p, st, &g, nb),
                // The default cell size never exceeds the cell cap; brute force is the exact
                // equivalent should it ever.
                Err(_) => advance_with(p, st, &Brute::new(pts), nb),
            },
            FlockIndex::Dynamic => advance_with(p, st, &DynamicGrid::build(pts, DYNAMIC_LEAF), nb),
        };
        self.state = next;
        (forces, counts)
    }
}

type Advanced = (FlockState, Vec<[f32; 3]>, Vec<u32>);

fn advance_with<S: Search<f32, 3>>(
    p: &FlockParams,
    st: &FlockState,
    index: &S,
    nb: Option<&mut [u32]>,
) -> Advanced {
    {
        let n = st.len();
        let r2 = p.r2_inclusive();
        let detail = nb.is_some();
        let kk = match p.mode {
            NeighborMode::Nearest { k } => k,
            NeighborMode::Radius => 0,
        };
        let order: Vec<u32> = match index.storage_order() {
            Some(o) if o.len() == n => o.to_vec(),
            _ => (0..n as u32).collect(),
        };
        let c = p.constants;
        let dt = p.dt;
        let one = |i: usize, row: Option<&mut [u32]>| -> Outcome {
            let me = st.agent(i);
            let mut sums = Sums::default();
            let count;
            match p.mode {
                NeighborMode::Nearest { k } => {
                    let mut best = KBest::new(k);
                    index.search(&me.pos, Some(i as u32), r2, &mut best);
                    let mut m = 0;
                    for (d2, j) in best.items() {
                        let j = j as usize;
                        steer::accumulate(&c, &mut sums, me.pos, me.fwd, st.pos[j], st.fwd[j], d2);
                        m += 1;
                    }
                    if let Some(row) = row {
                        for (slot, (_, j)) in row.iter_mut().zip(best.items()) {
                            *slot = j;
                        }
                    }
                    count = m;
                }
                NeighborMode::Radius => {
                    let mut list = Vec::new();
                    index.within(&me.pos, Some(i as u32), r2, &mut list);
                    list.sort_unstable_by(|a, b| {
                        a.0.partial_cmp(&b.0)
                            .unwrap_or(std::cmp::Ordering::Equal)
                            .then(a.1.cmp(&b.1))
                    });
                    for &(d2, j) in &list {
                        let j = j as usize;
                        steer::accumulate(&c, &mut sums, me.pos, me.fwd, st.pos[j], st.fwd[j], d2);
                    }
                    count = list.len() as u32;
                }
            }
            let force = steer::force(&c, &sums, me.pos, me.fwd);
            Outcome {
                agent: steer::integrate(&c, &me, force, dt),
                force,
                count,
            }
        };

        let outcomes: Vec<Outcome> = match nb {
            Some(rows) if kk > 0 => {
                // Rows are indexed by agent id: answer in id order so each row is written once.
                rows.par_chunks_mut(kk)
                    .enumerate()
                    .with_min_len(256)
                    .map(|(i, row)| one(i, Some(row)))
                    .collect()
            }
            _ => {
                let mut by_slot: Vec<(u32, Outcome)> = order
                    .par_iter()
                    .with_min_len(256)
                    .map(|&i| (i, one(i as usize, None)))
                    .collect();
                // Back to id order (a permutation, so every slot is written once).
                let mut out: Vec<Option<Outcome>> = (0..n).map(|_| None).collect();
                for (i, o) in by_slot.drain(..) {
                    out[i as usize] = Some(o);
                }
                out.into_iter().flatten().collect()
            }
        };
        let mut next = FlockState {
            pos: Vec::with_capacity(n),
            fwd: Vec::with_capacity(n),
            speed: Vec::with_capacity(n),
            acc: Vec::with_capacity(n),
        };
        let mut forces = Vec::new();
        let mut counts = Vec::new();
        for o in outcomes {
            next.pos.push(o.agent.pos);
            next.fwd.push(o.agent.fwd);
            next.speed.push(o.agent.speed);
            next.acc.push(o.agent.acc);
            if detail {
                forces.push(o.force);
                counts.push(o.count);
            }
        }
        (next, forces, counts)
    }
}
