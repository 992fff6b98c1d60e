//! The kriging systems: surfaces grouped by (variogram, wells present), each group's samples
//! merged and its system built (global: factored once; local: kept for per-node solves), after
//! the memory of global kriging is checked against the machine's.

use std::collections::BTreeMap;

use super::global::GlobalKriging;
use super::local::LocalKriging;
use super::params::{KrigeOptions, Neighbourhood};
use super::samples::{self, SampleSet};
use super::space;
use super::variogram::Variogram;
use crate::{Cancel, GeofieldError};

/// Predictions per surface and, when asked, the variance, at a set of nodes.
pub type Evaluated = (Vec<Vec<f64>>, Option<Vec<f64>>);

/// One system: global or local.
pub enum System {
    Global(GlobalKriging),
    Local(LocalKriging),
}

impl System {
    pub fn frame(&self) -> &space::Frame {
        match self {
            System::Global(g) => &g.frame,
            System::Local(l) => &l.frame,
        }
    }

    pub fn samples(&self) -> usize {
        match self {
            System::Global(g) => g.samples(),
            System::Local(l) => l.samples(),
        }
    }

    fn merged(&self) -> &[Vec<usize>] {
        match self {
            System::Global(g) => &g.merged,
            System::Local(l) => &l.merged,
        }
    }

    /// Predictions (`pred[h][j]`) and variances at kriging-space nodes, on the CPU.
    pub fn eval_nodes(
        &self,
        nx: &[f64],
        ny: &[f64],
        variance: bool,
    ) -> Result<Evaluated, GeofieldError> {
        self.eval_nodes_until(nx, ny, variance, &Cancel::new())
    }

    /// [`Self::eval_nodes`] that returns [`GeofieldError::Cancelled`] soon after `cancel` is
    /// set (the tiles of nodes not started are skipped).
    pub fn eval_nodes_until(
        &self,
        nx: &[f64],
        ny: &[f64],
        variance: bool,
        cancel: &Cancel,
    ) -> Result<Evaluated, GeofieldError> {
        cancel.check()?;
        let out = match self {
            System::Global(g) => g.eval_nodes_until(nx, ny, variance, cancel),
            System::Local(l) => l.eval_nodes(nx, ny, variance, cancel)?,
        };
        cancel.check()?;
        Ok(out)
    }
}

/// Surfaces kriged together: same variogram, same wells.
pub struct Group {
    /// Indices into the sample set's surfaces.
    pub surfaces: Vec<usize>,
    pub system: System,
}

/// What the kriging did, per group of surfaces.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct GroupReport {
    pub surfaces: Vec<String>,
    /// Distinct sample locations in the system.
    pub samples: usize,
    /// Samples missing for these surfaces.
    pub missing: usize,
    /// Samples merged into one location (described by file and line).
    pub merged: Vec<Vec<String>>,
}

/// Bytes global kriging of `n` samples holds at most: the covariance matrix and its factor while
/// factoring, 3 n² f64.
pub fn global_memory_bytes(n: usize) -> u128 {
    let n = n as u128;
    3 * n * n * 8
}

/// Refuses global kriging of `n` samples when [`global_memory_bytes`] exceeds the available
/// memory (`MemAvailable`; no check where it cannot be read), rather than abort on allocation.
pub fn check_global_memory(n: usize) -> Result<(), GeofieldError> {
    let need_bytes = global_memory_bytes(n);
    match geofield_core::available_memory_bytes() {
        Some(avail) if need_bytes > u128::from(avail) => Err(GeofieldError::KrigingTooLarge {
            samples: n,
            need_bytes,
            available_bytes: u128::from(avail),
        }),
        _ => Ok(()),
    }
}

/// Builds the systems: surfaces grouped by (variogram, wells present), each group merged and
/// factored. `variograms` has one entry (for every surface) or one per surface. Global kriging
/// that would not fit in memory is refused first ([`check_global_memory`]).
pub fn build(
    set: &SampleSet,
    variograms: &[Variogram],
    opts: &KrigeOptions,
    external: Option<&std::sync::Arc<super::drift::ExternalDrift>>,
) -> Result<(Vec<Group>, Vec<GroupReport>), GeofieldError> {
    if opts.neighbourhood == Neighbourhood::Global {
        check_global_memory(set.len())?;
    }
    set.validate()?;
    opts.validate()?;
    let hc = set.surfaces.len();
    if variograms.len() != 1 && variograms.len() != hc {
        return Err(GeofieldError::Invalid(format!(
            "{} variograms for {hc} surfaces: give one for all or one per surface",
            variograms.len()
        )));
    }
    for v in variograms {
        v.validate()?;
    }
    match (opts.kind.is_external(), external) {
        (true, None) => {
            return Err(GeofieldError::Invalid(
                "an external drift needs the drift variable (a raster, e.g. --drift-raster)".into(),
            ));
        }
        (true, Some(e)) => e.check_points(&set.xs, &set.ys, &|i| set.describe(i))?,
        _ => {}
    }
    let mut keys: BTreeMap<(usize, Vec<usize>), Vec<usize>> = BTreeMap::new();
    for h in 0..hc {
        let present: Vec<usize> = (0..set.len())
            .filter(|&i| !set.surfaces[h].values[i].is_nan())
            .collect();
        let vi = if variograms.len() == 1 { 0 } else { h };
        keys.entry((vi, present)).or_default().push(h);
    }
    let mut groups = vec![];
    let mut reports = vec![];
    for ((vi, present), surfaces) in keys {
        let names: Vec<String> = surfaces
            .iter()
            .map(|&h| set.surfaces[h].name.clone())
            .collect();
        let m = samples::merge(set, &present, &surfaces, &opts.merge)?;
        let frame = space::Frame::new(&m.xs, &m.ys, opts.anisotropy);
        let context = |e: GeofieldError| match e {
            GeofieldError::Invalid(s) => {
                GeofieldError::Invalid(format!("{}: {s}", names.join(", ")))
            }
            e => e,
        };
        let system = match opts.neighbourhood {
            Neighbourhood::Global => System::Global(
                GlobalKriging::from_merged(set, &m, frame, &variograms[vi], opts, external)
                    .map_err(context)?,
            ),
            Neighbourhood::Local { k, radius } => System::Local(
                LocalKriging::from_merged(
                    set,
                    &m,
                    frame,
                    &variograms[vi],
                    opts,
                    k,
                    radius,
                    external,
                )
                .map_err(context)?,
            ),
        };
        reports.push(GroupReport {
            surfaces: names,
            samples: system.samples(),
            missing: set.len() - present.len(),
            merged: system
                .merged()
                .iter()
                .map(|g| g.iter().map(|&i| set.describe(i)).collect())
                .collect(),
        });
        groups.push(Group { surfaces, system });
    }
    // Keep the input order of the surfaces' first appearance.
    let mut order: Vec<usize> = (0..groups.len()).collect();
    order.sort_by_key(|&g| groups[g].surfaces[0]);
    let mut gs: Vec<Option<Group>> = groups.into_iter().map(Some).collect();
    let groups = order.iter().filter_map(|&g| gs[g].take()).collect();
    let reports = order.iter().map(|&g| reports[g].clone()).collect();
    Ok((groups, reports))
}
