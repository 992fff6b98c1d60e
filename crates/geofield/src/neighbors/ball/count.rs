//! Pair counts at several radii (scipy's `count_neighbors`): plain and weighted.
//!
//! Each pair within the largest radius is put in the bin of the smallest radius it is within
//! (by value against the radii's thresholds, as [`super::within`] tests one), the bins are
//! summed in integers and the running sums give the cumulative counts. Weighted counts round
//! every term w₁·w₂ once to a fixed point (units 2^−F, the total of |w₁|·|w₂| over all pairs
//! scaled within 2^124, [`Fixed::for_bound`]) and add them in 128-bit integers: the sums do not
//! depend on the order of the pairs (threads, devices) and err by at most half a unit per
//! pair, about 2^−125 of Σ|w₁|·Σ|w₂| each.

use rayon::prelude::*;

use super::cells::{CellList, period_of};
use super::{Space, check_shape, stored_points, value};
use crate::dispersal::nearfar::Fixed;
use crate::neighbors::Coord;
use crate::{Backend, GeofieldError};

/// The radii's thresholds, sorted and without repeats, and each radius's place among them.
pub(crate) struct Bins {
    pub(crate) thresholds: Vec<f64>,
    pub(crate) slot: Vec<usize>,
    pub(crate) r_max: f64,
}

impl Bins {
    pub(crate) fn new(
        radii: &[f64],
        metric: super::Metric,
        cumulative: bool,
    ) -> Result<Self, GeofieldError> {
        if radii.is_empty() {
            return Err(GeofieldError::Invalid("no radii given".into()));
        }
        if let Some(r) = radii.iter().find(|r| r.is_nan()) {
            return Err(GeofieldError::InvalidParameter {
                name: "r".into(),
                value: format!("{r}"),
                expected: "numbers".into(),
            });
        }
        if !cumulative && radii.windows(2).any(|w| w[1] < w[0]) {
            return Err(GeofieldError::Invalid(
                "r must be non-decreasing when the counts are not cumulative (bin edges)".into(),
            ));
        }
        let t: Vec<f64> = radii.iter().map(|&r| metric.threshold(r)).collect();
        let mut thresholds = t.clone();
        thresholds.sort_by(f64::total_cmp);
        thresholds.dedup();
        let slot = t
            .iter()
            .map(|x| thresholds.partition_point(|y| y < x))
            .collect();
        let r_max = radii.iter().fold(0.0f64, |m, &r| m.max(r));
        Ok(Bins {
            thresholds,
            slot,
            r_max,
        })
    }

    /// The bin of a pair's value (the first threshold ≥ it), or None beyond the last.
    #[inline]
    pub(crate) fn bin(&self, v: f64) -> Option<usize> {
        let k = self.thresholds.partition_point(|&t| t < v);
        (k < self.thresholds.len()).then_some(k)
    }

    /// The answer per radius from the per-bin sums: running sums, then the radius's entry
    /// (cumulative) or the difference from the previous radius's (bins).
    pub(crate) fn answer<S>(&self, per_bin: &[S], cumulative: bool) -> Vec<S>
    where
        S: Copy + Default + std::ops::Add<Output = S> + std::ops::Sub<Output = S>,
    {
        let mut run = Vec::with_capacity(per_bin.len());
        let mut acc = S::default();
        for &b in per_bin {
            acc = acc + b;
            run.push(acc);
        }
        let cum: Vec<S> = self.slot.iter().map(|&k| run[k]).collect();
        if cumulative {
            return cum;
        }
        let mut out = cum.clone();
        for i in 1..out.len() {
            out[i] = cum[i] - cum[i - 1];
        }
        out
    }
}

/// Pairs (x₁ from `points`, x₂ from `others`) within each radius of `radii` (scipy's
/// `count_neighbors`): with `others` None, the points against themselves, each point with
/// itself and each pair both ways (as scipy). `cumulative`: the count within r (else `radii`
/// are non-decreasing bin edges and entry i counts r[i−1] < d ≤ r[i], the first from −∞).
///
/// ```
/// use geofield::Backend;
/// use geofield::neighbors::ball::{self, Space};
///
/// let pts = [0.0, 0.0, 1.0, 0.0, 3.0, 0.0];
/// let c = ball::count_pairs(&Backend::Cpu, &pts[..], None, 2, &[0.0, 1.0, 2.0], &Space::default(), true)?;
/// assert_eq!(c, vec![3, 5, 7]);
/// # Ok::<(), geofield::GeofieldError>(())
/// ```
pub fn count_pairs<T: Coord>(
    backend: &Backend,
    points: &[T],
    others: Option<&[T]>,
    dim: usize,
    radii: &[f64],
    space: &Space,
    cumulative: bool,
) -> Result<Vec<u64>, GeofieldError> {
    check_shape(points, others, dim, space)?;
    let bins = Bins::new(radii, space.metric, cumulative)?;
    let per_bin = if dim == 2 {
        binned::<T, 2, u64>(backend, points, others, &bins, space, None, &|_, _| 1)?
    } else {
        binned::<T, 3, u64>(backend, points, others, &bins, space, None, &|_, _| 1)?
    };
    Ok(bins.answer(&per_bin, cumulative))
}

/// [`count_pairs`] with each pair counting w₁[i]·w₂[j] (`weights`: of the points and of the
/// others, None for all 1; without `others` the second still weighs the second point of each
/// pair: pass the same array twice for scipy's single-array form). The sums are exact in fixed
/// point (module docs).
#[allow(clippy::too_many_arguments)]
pub fn count_pairs_weighted<T: Coord>(
    backend: &Backend,
    points: &[T],
    others: Option<&[T]>,
    dim: usize,
    radii: &[f64],
    space: &Space,
    weights: (Option<&[f64]>, Option<&[f64]>),
    cumulative: bool,
) -> Result<Vec<f64>, GeofieldError> {
    check_shape(points, others, dim, space)?;
    let bins = Bins::new(radii, space.metric, cumulative)?;
    let n1 = points.len() / dim;
    let n2 = others.map_or(n1, |o| o.len() / dim);
    let check = |w: Option<&[f64]>, n: usize, what: &str| -> Result<(), GeofieldError> {
        if let Some(w) = w {
            if w.len() != n {
                return Err(GeofieldError::Invalid(format!(
                    "{what} has {} entries for {n} points",
                    w.len()
                )));
            }
            if let Some(i) = w.iter().position(|x| !x.is_finite()) {
                return Err(GeofieldError::Invalid(format!(
                    "{what}[{i}] = {} is not finite",
                    w[i]
                )));
            }
        }
        Ok(())
    };
    check(weights.0, n1, "weights of the points")?;
    check(weights.1, n2, "weights of the others")?;
    let (w1, w2) = weights;
    let sum_abs =
        |w: Option<&[f64]>, n: usize| w.map_or(n as f64, |w| w.iter().map(|x| x.abs()).sum());
    let fixed = Fixed::for_bound(sum_abs(w1, n1) * sum_abs(w2, n2));
    let term = |i: usize, j: u32| -> i128 {
        let a = w1.map_or(1.0, |w| w[i]);
        let b = w2.map_or(1.0, |w| w[j as usize]);
        fixed.to_int(a * b)
    };
    let gpu_w = Some((w1, w2, fixed.scale));
    let per_bin = if dim == 2 {
        binned::<T, 2, i128>(backend, points, others, &bins, space, gpu_w, &term)?
    } else {
        binned::<T, 3, i128>(backend, points, others, &bins, space, gpu_w, &term)?
    };
    Ok(bins
        .answer(&per_bin, cumulative)
        .into_iter()
        .map(|x| fixed.to_f64(x))
        .collect())
}

/// Queries per parallel task.
const TASK: usize = 256;

use geofield_cuda::neighbors::ball::Weights as GpuWeights;

/// Per bin, the sum of `term(i, j)` over the pairs (point i, other j) in that bin (on CUDA the
/// device's sums: of 1, or of the weights given as `gpu_w`, the same as `term`'s).
#[allow(clippy::too_many_arguments)]
fn binned<T: Coord, const D: usize, S>(
    backend: &Backend,
    points: &[T],
    others: Option<&[T]>,
    bins: &Bins,
    space: &Space,
    gpu_w: GpuWeights<'_>,
    term: &(dyn Fn(usize, u32) -> S + Sync),
) -> Result<Vec<S>, GeofieldError>
where
    S: Copy + Default + Send + Sync + std::ops::AddAssign + TryFrom<i128>,
{
    let period = period_of::<D>(space);
    let qs = stored_points::<T, D>(points, &period, "point")?;
    let os = match others {
        Some(o) => Some(stored_points::<T, D>(o, &period, "other point")?),
        None => None,
    };
    let list = CellList::build(os.as_deref().unwrap_or(&qs), period, bins.r_max)?;
    let nb = bins.thresholds.len();
    let t_max = *bins.thresholds.last().unwrap_or(&-1.0);
    let metric = space.metric;
    if let Backend::Cuda(g) = backend {
        let flat = super::gpu::Flat::of(&list)?;
        let q: Vec<f64> = qs.iter().flatten().copied().collect();
        let reach = geofield_cuda::neighbors::ball::Reach {
            metric: super::gpu::metric_code(metric),
            r: bins.r_max,
            thr: t_max,
        };
        let v = geofield_cuda::neighbors::ball::ball_bins(
            g,
            &flat.cells(&list),
            &q,
            reach,
            &bins.thresholds,
            gpu_w,
        )?;
        return v
            .into_iter()
            .map(|x| {
                S::try_from(x)
                    .map_err(|_| GeofieldError::Invalid("a pair count out of range".into()))
            })
            .collect();
    }
    Ok((0..qs.len())
        .into_par_iter()
        .with_min_len(TASK)
        .fold(
            || vec![S::default(); nb],
            |mut acc, i| {
                let q = &qs[i];
                list.visit(q, bins.r_max, |pts, ids| {
                    for (p, &j) in pts.iter().zip(ids) {
                        let v = value(metric, &period, q, p);
                        if v <= t_max
                            && let Some(k) = bins.bin(v)
                        {
                            acc[k] += term(i, j);
                        }
                    }
                });
                acc
            },
        )
        .reduce(
            || vec![S::default(); nb],
            |mut a, b| {
                for (x, y) in a.iter_mut().zip(b) {
                    *x += y;
                }
                a
            },
        ))
}
