//! Conditional Gaussian simulation: N realisations of a surface that honour the samples and
//! reproduce the variogram (gstat's `krige(nsim = N)`, GSTools' `CondSRF`).
//!
//! # Method
//!
//! Conditioning by kriging (Journel 1974; Journel & Huijbregts 1978, §VII; GSTools ≤ 1.2's
//! `condition.ordinary`): for each realisation,
//!
//! Z_c(x) = Z_u(x) + K[z − Z_u](x),
//!
//! Z_u an unconditional field with the variogram's covariance ([`spectral`]: the randomisation
//! method, [`SimParams::modes`] modes per structure, GSTools' `RandMeth` default of 1000), and
//! K[·] the kriging of [`super::krige`] (any kind, neighbourhood and anisotropy) applied to the
//! residuals z_i − Z_u(x_i) at the samples. The kriging is linear, so Z_c − K[z] = Z_u − K[Z_u]:
//! the realisations' mean is the kriging prediction, their variance the kriging variance, and
//! their covariance the conditional one (not only its diagonal, unlike GSTools ≥ 1.3's
//! `CondSRF`, which scales an unconditional field by the kriging standard deviation). With
//! [`NuggetMode::Exact`] a realisation equals the datum at every sample.
//!
//! All N realisations share the kriging system: their residuals are N surfaces at the same
//! wells, kriged together (on the GPU, as many surfaces of one factor).
//!
//! The nugget: with [`NuggetMode::Exact`] (the nugget is part of Z) every sample and node gets
//! its own N(0, c₀) draw added to Z_u, except that a node at a sample's exact location (a grid
//! node centre, or a target point, equal to the sample's coordinates) takes that sample's draw,
//! so the datum is honoured there; with [`NuggetMode::MeasurementError`] the realisations are of
//! the noise-free signal: only the samples get the N(0, c₀) noise.
//!
//! # Reproducibility
//!
//! Realisation i draws its modes from PCG-64 stream 2i and its nugget noise from stream 2i + 1
//! of the generator seeded by [`SimParams::seed`], so a realisation does not depend on how many
//! others are drawn, on the thread count, or on the backend: on the GPU the unconditional field
//! at the grid nodes is the CPU's bit for bit (`kernels/sim.cu`), and the kriging of the
//! residuals is the kriging's own on that backend (in f64 within 1e-9 of the CPU's, relative
//! to the values' size: `tests/kriging_backends.rs`). Points are evaluated on the CPU.

pub mod spectral;
pub mod tabulated;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::time::Instant;

use geofield_core::{GridSpec, Raster, RasterData};
use rand_distr::{Distribution, StandardNormal};
use rand_pcg::Pcg64;
use rayon::prelude::*;

use super::params::{KrigeParams, NuggetMode, Precision, Target};
use super::samples::{SampleSet, Surface};
use super::space::Frame;
use crate::{Backend, Cancel, GeofieldError};

/// Most realisations one call draws.
pub const MAX_REALISATIONS: usize = 100_000;
/// Most modes per structure.
pub const MAX_MODES: usize = 1 << 20;

/// How many realisations, from which seed, with how many modes.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct SimParams {
    /// N ≥ 1.
    pub realisations: usize,
    pub seed: u64,
    /// Modes per variogram structure (GSTools' `mode_no`, default 1000).
    pub modes: usize,
}

impl Default for SimParams {
    fn default() -> Self {
        SimParams {
            realisations: 1,
            seed: 0,
            modes: 1000,
        }
    }
}

/// N realisations at the target's nodes.
#[derive(Clone, Debug)]
pub struct Simulated {
    /// Realisation-major: realisation i's node j (row-major over a grid, or target point j)
    /// at `values[i·nodes + j]`; see [`Simulated::realisation`].
    pub values: Vec<f64>,
    /// Nodes per realisation.
    pub nodes: usize,
    /// The grid (a grid target).
    pub grid: Option<GridSpec>,
    /// `sim_1` … `sim_N`.
    pub names: Vec<String>,
    pub params: SimParams,
    pub precision: Precision,
    /// What evaluated the unconditional fields and the kriging, e.g. "cuda f64".
    pub evaluated: String,
    /// Drawing the modes and the unconditional fields at the samples and the nodes.
    pub seconds_unconditional: f64,
    /// The kriging of the residuals.
    pub seconds_conditioning: f64,
    /// GPU: seconds in kernels (CUDA events), fields and kriging.
    pub device_seconds: Option<f64>,
}

impl Simulated {
    /// Realisation `i` (0-based).
    pub fn realisation(&self, i: usize) -> &[f64] {
        &self.values[i * self.nodes..(i + 1) * self.nodes]
    }

    /// The number of realisations.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The realisations as one raster of N bands (a grid target), in the kriging's precision.
    pub fn to_raster(&self) -> Result<Raster, GeofieldError> {
        let grid = self.grid.ok_or_else(|| {
            GeofieldError::Invalid("the simulation was at points, not on a grid".into())
        })?;
        let data = match self.precision {
            Precision::F64 => RasterData::F64(self.values.clone()),
            Precision::F32 => RasterData::F32(self.values.par_iter().map(|&v| v as f32).collect()),
        };
        Ok(Raster::new(grid, self.names.clone(), data)?)
    }
}

/// N conditional realisations of the one surface of `samples` at `params.target`, with the
/// kriging of `params` (its `variance` and `resolve_crossings` are not used). Errors: more than
/// one surface, a structure without a stationary field (power, linear: see [`spectral`]), N
/// or the modes out of range, or the output too large to hold.
pub fn simulate(
    backend: &Backend,
    samples: &SampleSet,
    params: &KrigeParams,
    sim: &SimParams,
) -> Result<Simulated, GeofieldError> {
    simulate_with_progress(backend, samples, params, sim, &|_| {}, &Cancel::new())
}

/// [`simulate`], calling `progress` with the fraction done and stopping with
/// [`GeofieldError::Cancelled`] soon after `cancel` is set.
pub fn simulate_with_progress(
    backend: &Backend,
    samples: &SampleSet,
    params: &KrigeParams,
    sim: &SimParams,
    progress: &(dyn Fn(f64) + Sync),
    cancel: &Cancel,
) -> Result<Simulated, GeofieldError> {
    let [surface] = samples.surfaces.as_slice() else {
        return Err(GeofieldError::Invalid(format!(
            "simulation takes one surface at a time; the samples hold {}",
            samples.surfaces.len()
        )));
    };
    let n_real = sim.realisations;
    if !(1..=MAX_REALISATIONS).contains(&n_real) {
        return Err(GeofieldError::Invalid(format!(
            "realisations = {n_real}: must be 1 to {MAX_REALISATIONS}"
        )));
    }
    if !(1..=MAX_MODES).contains(&sim.modes) {
        return Err(GeofieldError::Invalid(format!(
            "modes = {}: must be 1 to {MAX_MODES}",
            sim.modes
        )));
    }
    if params.options.block.is_some() {
        return Err(GeofieldError::Invalid(
            "simulation draws point values: block kriging (a block) is not simulated; average \
             the realisations over blocks instead"
                .into(),
        ));
    }
    let vg = params
        .variograms
        .first()
        .ok_or_else(|| GeofieldError::Invalid("no variogram".into()))?
        .clone();
    vg.validate()?;
    spectral::check_variogram(&vg)?;
    let nodes = match &params.target {
        Target::Grid(g) => g.rows.checked_mul(g.cols),
        Target::Points { xs, ys } => (xs.len() == ys.len()).then_some(xs.len()),
    }
    .ok_or_else(|| GeofieldError::Invalid("the target's size is not valid".into()))?;
    let total = nodes
        .checked_mul(n_real)
        .filter(|&t| t <= isize::MAX as usize / 8);
    let total = total.ok_or_else(|| {
        GeofieldError::Invalid(format!(
            "{n_real} realisations of {nodes} nodes are too many"
        ))
    })?;
    let mut probe: Vec<f64> = Vec::new();
    probe.try_reserve_exact(total).map_err(|_| {
        GeofieldError::Invalid(format!(
            "{n_real} realisations of {nodes} nodes need {:.1} GiB for the result alone; \
             draw fewer at a time",
            total as f64 * 8.0 / (1u64 << 30) as f64
        ))
    })?;
    drop(probe);
    cancel.check()?;

    // Modes and the unconditional field at the samples, in kriging space.
    let t0 = Instant::now();
    let frame = Frame::new(&samples.xs, &samples.ys, params.options.anisotropy);
    let (sx, sy): (Vec<f64>, Vec<f64>) = samples
        .xs
        .iter()
        .zip(&samples.ys)
        .map(|(&x, &y)| frame.apply(x, y))
        .unzip();
    let c0 = vg.nugget;
    let exact_nugget = c0 > 0.0 && params.options.nugget == NuggetMode::Exact;
    let n = samples.xs.len();
    let drawn: Vec<Drawn> = (0..n_real)
        .into_par_iter()
        .map(|i| {
            let mut rng = stream(sim.seed, 2 * i as u128);
            let modes = spectral::draw_modes(&vg, sim.modes, &mut rng)?;
            let mut noise_rng = stream(sim.seed, 2 * i as u128 + 1);
            let mut zu = spectral::field_points(&sx, &sy, &modes);
            let mut noise = vec![];
            if c0 > 0.0 {
                let sd = c0.sqrt();
                noise = (0..n).map(|_| sd * normal(&mut noise_rng)).collect();
                for (z, e) in zu.iter_mut().zip(&noise) {
                    *z += e;
                }
            }
            Ok(Drawn {
                modes,
                zu,
                noise,
                rng: noise_rng,
            })
        })
        .collect::<Result<_, GeofieldError>>()?;
    let secs_samples = t0.elapsed().as_secs_f64();
    progress(0.05);
    cancel.check()?;

    // Kriging of the residuals: N surfaces at the same wells.
    let t1 = Instant::now();
    let residuals = SampleSet {
        xs: samples.xs.clone(),
        ys: samples.ys.clone(),
        surfaces: drawn
            .iter()
            .enumerate()
            .map(|(i, d)| Surface {
                name: format!("sim_{}", i + 1),
                values: surface
                    .values
                    .iter()
                    .zip(&d.zu)
                    .map(|(&z, &u)| z - u)
                    .collect(),
            })
            .collect(),
        source: samples.source.clone(),
        lines: samples.lines.clone(),
        labels: samples.labels.clone(),
    };
    let kp = KrigeParams {
        variograms: vec![vg.clone()],
        options: params.options,
        target: params.target.clone(),
        variance: false,
        resolve_crossings: false,
        external_drift: params.external_drift.clone(),
    };
    let half = |f: f64| progress(0.05 + 0.45 * f);
    let kriged = super::krige_with_progress(backend, &residuals, &kp, &half, cancel)?;
    drop(residuals);
    let seconds_conditioning = t1.elapsed().as_secs_f64();
    let mut device_seconds = kriged.prediction.device_seconds;
    let evaluated = kriged.prediction.evaluated.clone();
    let mut kriged = kriged.prediction.values;
    cancel.check()?;

    // The unconditional fields at the nodes plus the kriged residuals, into one realisation-
    // major array (each kriged band freed as it is used).
    let t2 = Instant::now();
    let mut values: Vec<f64> = Vec::new();
    values.try_reserve_exact(total).map_err(|_| {
        GeofieldError::Invalid(format!(
            "{n_real} realisations of {nodes} nodes do not fit in memory"
        ))
    })?;
    // Zeroed in parallel: 0.8 GB of fresh pages fault on every core, not on one.
    values.par_extend(rayon::iter::repeat_n(0.0, total));
    let modes: Vec<&[spectral::Mode]> = drawn.iter().map(|d| d.modes.as_slice()).collect();
    let stride = nodes.max(1);
    let mut combine = |i: usize, z: &[f64]| {
        let k = std::mem::take(&mut kriged[i]);
        sum_into(&mut values[i * nodes..(i + 1) * nodes], &k, z);
        // Unmapping a band takes a millisecond: off the critical path.
        rayon::spawn(move || drop(k));
    };
    match &params.target {
        Target::Grid(g) => {
            let map = frame.node_grid(g);
            if let Backend::Cuda(gpu) = backend {
                let flat: Vec<f64> = modes.iter().copied().flatten().flatten().copied().collect();
                let secs = geofield_cuda::kriging::sim::field_grid(
                    gpu,
                    &map,
                    &flat,
                    n_real,
                    &mut combine,
                )?;
                *device_seconds.get_or_insert(0.0) += secs;
            } else {
                for (i, m) in modes.iter().enumerate() {
                    cancel.check()?;
                    combine(i, &spectral::field_grid(&map, m));
                    progress(0.5 + 0.5 * (i + 1) as f64 / n_real as f64);
                }
            }
        }
        Target::Points { xs, ys } => {
            let (px, py): (Vec<f64>, Vec<f64>) =
                xs.iter().zip(ys).map(|(&x, &y)| frame.apply(x, y)).unzip();
            for (i, m) in modes.iter().enumerate() {
                cancel.check()?;
                combine(i, &spectral::field_points(&px, &py, m));
                progress(0.5 + 0.5 * (i + 1) as f64 / n_real as f64);
            }
        }
    }
    if exact_nugget {
        let at = coincident(samples, &params.target);
        let sd = c0.sqrt();
        values
            .par_chunks_mut(stride)
            .zip(drawn.into_par_iter())
            .for_each(|(v, mut d)| {
                for (node, z) in v.iter_mut().enumerate() {
                    let own = sd * normal(&mut d.rng);
                    // A node at a sample takes that sample's draw, so the datum is honoured.
                    *z += at.get(&node).map_or(own, |&s| d.noise[s]);
                }
            });
    }
    if let Some(at) = values.par_iter().position_first(|z| z.is_infinite()) {
        return Err(GeofieldError::NonFinite {
            what: format!("realisation {} at node {}", at / stride + 1, at % stride),
            cause: "the sample values are too large for the sums: rescale them".into(),
        });
    }
    let seconds_unconditional = secs_samples + t2.elapsed().as_secs_f64();
    progress(1.0);
    Ok(Simulated {
        names: (1..=n_real).map(|i| format!("sim_{i}")).collect(),
        values,
        nodes,
        grid: match &params.target {
            Target::Grid(g) => Some(*g),
            Target::Points { .. } => None,
        },
        params: *sim,
        precision: params.options.precision,
        evaluated,
        seconds_unconditional,
        seconds_conditioning,
        device_seconds,
    })
}

/// What one realisation drew: its modes, Z_u at the samples (noise included), the samples'
/// nugget draws, and its noise generator positioned after them.
struct Drawn {
    modes: Vec<spectral::Mode>,
    zu: Vec<f64>,
    noise: Vec<f64>,
    rng: Pcg64,
}

fn normal(rng: &mut Pcg64) -> f64 {
    StandardNormal.sample(rng)
}

/// Stream `id` of the PCG-64 generator of `seed`.
fn stream(seed: u64, id: u128) -> Pcg64 {
    // The state: the seed spread over 128 bits (splitmix64's constant), so that nearby seeds
    // start far apart.
    let s = u128::from(seed);
    Pcg64::new(
        s.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (s << 64) ^ 0x5851_F42D_4C95_7F2D,
        id,
    )
}

/// out = k + z, element by element, in parallel (the output's pages fault on every core).
fn sum_into(out: &mut [f64], k: &[f64], z: &[f64]) {
    const CHUNK: usize = 1 << 16;
    out.par_chunks_mut(CHUNK)
        .zip(k.par_chunks(CHUNK))
        .zip(z.par_chunks(CHUNK))
        .for_each(|((o, k), z)| {
            for ((o, &k), &z) in o.iter_mut().zip(k).zip(z) {
                *o = k + z;
            }
        });
}

/// Target nodes at a sample's location (with a value): node → sample. A grid node counts when
/// its centre is within 1e-9 cell sizes of the sample; a target point when its coordinates are
/// the sample's exactly.
fn coincident(samples: &SampleSet, target: &Target) -> HashMap<usize, usize> {
    let mut at = HashMap::new();
    let valid = |s: usize| {
        samples
            .surfaces
            .first()
            .is_some_and(|f| !f.values[s].is_nan())
    };
    match target {
        Target::Grid(g) => {
            let cs = g.cell_size_m;
            for (s, (&x, &y)) in samples.xs.iter().zip(&samples.ys).enumerate() {
                let c = ((x - g.x_min_m) / cs - 0.5).round();
                let r = ((g.y_max_m - y) / cs - 0.5).round();
                if !(c >= 0.0 && r >= 0.0 && (c as usize) < g.cols && (r as usize) < g.rows) {
                    continue;
                }
                let cx = g.x_min_m + (c + 0.5) * cs;
                let cy = g.y_max_m - (r + 0.5) * cs;
                if (cx - x).abs() <= 1e-9 * cs && (cy - y).abs() <= 1e-9 * cs && valid(s) {
                    at.entry(r as usize * g.cols + c as usize).or_insert(s);
                }
            }
        }
        Target::Points { xs, ys } => {
            let mut by_bits = HashMap::new();
            for (s, (&x, &y)) in samples.xs.iter().zip(&samples.ys).enumerate() {
                if valid(s) {
                    by_bits.entry((x.to_bits(), y.to_bits())).or_insert(s);
                }
            }
            for (node, (&x, &y)) in xs.iter().zip(ys).enumerate() {
                if let Some(&s) = by_bits.get(&(x.to_bits(), y.to_bits())) {
                    at.insert(node, s);
                }
            }
        }
    }
    at
}
