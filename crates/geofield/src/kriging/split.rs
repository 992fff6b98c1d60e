//! Kriging split over MPI ranks (feature `mpi`): [`krige_split`].

use std::ops::Range;

use super::params::{KrigeParams, Target};
use super::samples::SampleSet;
use super::{Kriged, finish, run_window};
use crate::mpi::Ranks;
use crate::{Backend, Cancel, GeofieldError};

/// The target's units (grid rows, or points) of rank `r` of `n`: consecutive, as even as can be.
fn share(units: usize, r: usize, n: usize) -> Range<usize> {
    let at = |k: usize| (units as u128 * k as u128 / n.max(1) as u128) as usize;
    at(r)..at(r + 1)
}

/// [`super::krige_with_progress`] split over the job's ranks: every rank builds and factors the
/// systems (the same bits on every rank: the factorisation does not depend on the thread count)
/// and evaluates its share of the target (a band of grid rows, or of points; its GPU's under
/// `Backend::Cuda`); rank 0 gathers the shares and checks and clips the whole prediction.
/// Returns, on rank 0, exactly what one process's [`super::krige`] returns (the timings aside:
/// `seconds_grid` is the slowest rank's, `device_seconds` every rank's together) and `None` on
/// the others. A rank failing ends it on every rank with "rank R: cause" (a rank's own error
/// where it failed itself); `progress` gets the fraction of this rank's share done.
///
/// Why every rank factors instead of rank 0 factoring and broadcasting the factor: the ranks
/// would wait for rank 0's factorisation anyway, so the wall time is the same, and sending the
/// factor (8·n² bytes) to every rank costs memory and time that recomputing does not.
pub fn krige_split(
    backend: &Backend,
    samples: &SampleSet,
    params: &KrigeParams,
    ranks: &Ranks,
    progress: &(dyn Fn(f64) + Sync),
    cancel: &Cancel,
) -> Result<Option<Kriged>, GeofieldError> {
    let (units, per_unit) = match &params.target {
        Target::Grid(g) => (g.rows, g.cols),
        Target::Points { xs, .. } => (xs.len(), 1),
    };
    let n = ranks.size();
    let mine = share(units, ranks.rank(), n);
    let k = run_window(backend, samples, params, Some(mine), Some(progress), cancel);
    let seconds = k
        .as_ref()
        .map(|k| [k.seconds_grid, k.prediction.device_seconds.unwrap_or(0.0)]);
    let [seconds_grid, device] = match ranks.combine(seconds.map_err(|e| e.to_string())) {
        Ok(s) => s,
        Err(agreed) => return Err(k.err().unwrap_or(agreed)),
    };
    let mut k = k?;
    // Each rank's values, band after band (surfaces, then variances), gathered as they are.
    let p = &k.prediction;
    let hc = p.values.len();
    let bands: Vec<&Vec<f64>> = p.values.iter().chain(p.variance.iter().flatten()).collect();
    let mut whole: Vec<Vec<f64>> = Vec::with_capacity(bands.len());
    // Every band is gathered before rank 0 reports a bad one (the others wait in the gathers).
    let mut bad = None;
    for band in bands {
        let Some(parts) = ranks.gather(band) else {
            continue;
        };
        let mut all = Vec::with_capacity(units * per_unit);
        for (r, part) in parts.iter().enumerate() {
            let len = share(units, r, n).len() * per_unit;
            if part.len() != len {
                bad = Some(GeofieldError::Invalid(format!(
                    "MPI: rank {r} sent {} kriging values, not {len}",
                    part.len()
                )));
            }
            all.extend_from_slice(part);
        }
        whole.push(all);
    }
    if ranks.rank() != 0 {
        return Ok(None);
    }
    if let Some(e) = bad {
        return Err(e);
    }
    let variance = whole.split_off(hc);
    k.prediction.values = whole;
    if let Some(v) = k.prediction.variance.as_mut() {
        *v = variance;
    }
    k.prediction.device_seconds = k.prediction.device_seconds.map(|_| device);
    k.seconds_grid = seconds_grid;
    finish(k, samples, params).map(Some)
}

#[cfg(test)]
mod tests {
    use super::share;

    #[test]
    fn shares_cover_the_units_once_in_order() {
        for units in [0usize, 1, 5, 7, 1000] {
            for n in 1..=9 {
                let mut next = 0;
                for r in 0..n {
                    let s = share(units, r, n);
                    assert_eq!(s.start, next);
                    assert!(s.len() <= units.div_ceil(n));
                    next = s.end;
                }
                assert_eq!(next, units);
            }
        }
    }
}
