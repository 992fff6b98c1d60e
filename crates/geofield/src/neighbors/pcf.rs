//! The pair-correlation function g(r) of a 2-D point pattern in a rectangular window: spatstat's
//! `pcf` (`pcf.ppp`), the kernel estimate of K'(r) / (2πr).
//!
//! Every ordered pair (i, j ≠ i) at distance d_ij adds its edge weight e_ij (1, the translation
//! or Ripley's isotropic weight, as [`super::ripley`], capped at 100) times an Epanechnikov
//! kernel κ_h(r − d_ij) = 3/(4h) · (1 − ((r − d_ij)/h)²) for |r − d_ij| < h:
//!
//! g(r) = Σ e_ij κ_h(r − d_ij) / (2π r · n(n−1)/|W|)   (divisor "r", spatstat's default), or
//! g(r) = Σ (e_ij / d_ij) κ_h(r − d_ij) / (2π · n(n−1)/|W|)   (divisor "d").
//!
//! The half-width h is √5 times spatstat's `bw` (the kernel's standard deviation); by default
//! h = 0.15/√λ (Stoyan and Stoyan 1994, spatstat's `stoyan = 0.15`), λ = n/|W|. Under complete
//! spatial randomness g = 1 (`theo`); g > 1 is clustering at that distance, g < 1 regularity.
//!
//! The sums are exact kernel sums over the pairs: spatstat evaluates the same sum through R's
//! `density()`, which bins the distances onto a grid first, so the two agree to that binning's
//! error (about (δ/h)², δ its grid spacing; `python/tests/test_spatstat.py`). g(0) is NaN with
//! divisor "r" (0/0 or x/0). Points are taken in fixed chunks and the chunks' sums added in
//! order, so the result does not depend on the number of threads. Runs on the CPU's threads
//! whatever the backend ([`super::ripley::ripley_k`] has the GPU path for K).

use rayon::prelude::*;

use super::Coord;
use super::ball::cells::CellList;
use super::ball::{Metric, stored_points, value};
use super::ripley::{Correction, Window, isotropic_weight, translate_weight};
use crate::GeofieldError;

/// spatstat's default Stoyan coefficient of the bandwidth.
pub const STOYAN: f64 = 0.15;
/// Points per chunk of the deterministic reduction.
const CHUNK: usize = 512;

/// What g(r) is divided by (spatstat's `divisor`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Divisor {
    /// The kernel sum at r divided by r (spatstat's default).
    R,
    /// Each pair's term divided by its distance d_ij (less bias near r = 0).
    D,
}

/// g(r) per correction (None where not asked).
#[derive(Clone, Debug, PartialEq)]
pub struct PairCorrelation {
    pub r: Vec<f64>,
    /// 1 at every r.
    pub theo: Vec<f64>,
    pub none: Option<Vec<f64>>,
    pub translate: Option<Vec<f64>>,
    pub isotropic: Option<Vec<f64>>,
    /// The kernel's standard deviation (spatstat's `bw`) and its half-width h = √5 bw.
    pub bw: f64,
    pub half_width: f64,
    pub n: usize,
    pub area: f64,
}

impl PairCorrelation {
    /// The estimates computed, with their correction.
    pub fn columns(&self) -> Vec<(Correction, &[f64])> {
        [
            (Correction::None, &self.none),
            (Correction::Translate, &self.translate),
            (Correction::Isotropic, &self.isotropic),
        ]
        .into_iter()
        .filter_map(|(c, v)| v.as_deref().map(|v| (c, v)))
        .collect()
    }
}

/// g(r) of the 2-D `points` (flat x, y) in `window` at the radii (finite, ≥ 0,
/// non-decreasing) with the `corrections` asked for (none, translate, isotropic; border has no
/// kernel form and is refused), the kernel's standard deviation `bw` (None: spatstat's default
/// from [`STOYAN`]) and the divisor.
pub fn pair_correlation<T: Coord>(
    points: &[T],
    window: &Window,
    radii: &[f64],
    corrections: &[Correction],
    bw: Option<f64>,
    divisor: Divisor,
) -> Result<PairCorrelation, GeofieldError> {
    window.validate()?;
    if !points.len().is_multiple_of(2) {
        return Err(GeofieldError::Invalid(format!(
            "points has {} values, not a multiple of 2 (x, y)",
            points.len()
        )));
    }
    super::ripley::check_radii(radii)?;
    if corrections.contains(&Correction::Border) {
        return Err(GeofieldError::Invalid(
            "the pair-correlation function has no border correction (spatstat's pcf neither): \
             use none, translate or isotropic"
                .into(),
        ));
    }
    let pts = stored_points::<T, 2>(points, &[0.0, 0.0], "point")?;
    let n = pts.len();
    if n < 2 {
        return Err(GeofieldError::Invalid(format!(
            "g needs at least 2 points, got {n}"
        )));
    }
    super::ripley::check_inside(&pts, window)?;
    let area = window.area();
    let lambda = n as f64 / area;
    let bw = match bw {
        Some(b) if b.is_finite() && b > 0.0 => b,
        Some(b) => {
            return Err(GeofieldError::InvalidParameter {
                name: "bw".into(),
                value: format!("{b}"),
                expected: "a finite number > 0 (the kernel's standard deviation)".into(),
            });
        }
        None => STOYAN / lambda.sqrt() / 5f64.sqrt(),
    };
    let h = 5f64.sqrt() * bw;
    let nr = radii.len();
    let reach = radii[nr - 1] + h;
    let t_max = Metric::Euclidean.threshold(reach);
    let want = |c| corrections.contains(&c);
    let (do_none, do_trans, do_iso) = (
        want(Correction::None),
        want(Correction::Translate),
        want(Correction::Isotropic),
    );
    let list = CellList::build(&pts, [0.0, 0.0], reach)?;
    let by_d = divisor == Divisor::D;
    // Per chunk: [none, translate, isotropic] kernel sums per radius.
    let chunks: Vec<[Vec<f64>; 3]> = pts
        .par_chunks(CHUNK)
        .enumerate()
        .map(|(c, chunk)| {
            let mut s = [vec![0.0; nr], vec![0.0; nr], vec![0.0; nr]];
            for (o, q) in chunk.iter().enumerate() {
                let i = c * CHUNK + o;
                list.visit(q, reach, |ps, ids| {
                    for (p, &j) in ps.iter().zip(ids) {
                        if j as usize == i {
                            continue;
                        }
                        let v = value(Metric::Euclidean, &[0.0, 0.0], q, p);
                        if v > t_max {
                            continue;
                        }
                        let d = v.sqrt();
                        if by_d && d == 0.0 {
                            continue;
                        }
                        let scale = if by_d { 1.0 / d } else { 1.0 };
                        let lo = radii.partition_point(|&r| r <= d - h);
                        let hi = radii.partition_point(|&r| r < d + h);
                        if lo >= hi {
                            continue;
                        }
                        let wt = if do_trans {
                            translate_weight(window, p[0] - q[0], p[1] - q[1])
                        } else {
                            0.0
                        };
                        let wi = if do_iso {
                            isotropic_weight(window, q[0], q[1], d)
                        } else {
                            0.0
                        };
                        for k in lo..hi {
                            let u = (radii[k] - d) / h;
                            let kern = scale * 0.75 / h * (1.0 - u * u);
                            if do_none {
                                s[0][k] += kern;
                            }
                            s[1][k] += wt * kern;
                            s[2][k] += wi * kern;
                        }
                    }
                });
            }
            s
        })
        .collect();
    let mut sums = [vec![0.0; nr], vec![0.0; nr], vec![0.0; nr]];
    for ch in &chunks {
        for (a, b) in sums.iter_mut().zip(ch) {
            for (x, y) in a.iter_mut().zip(b) {
                *x += y;
            }
        }
    }
    let pairs_per_area = n as f64 * (n - 1) as f64 / area;
    let finish = |v: &[f64]| -> Vec<f64> {
        v.iter()
            .zip(radii)
            .map(|(&s, &r)| {
                let den = 2.0 * std::f64::consts::PI * pairs_per_area;
                match divisor {
                    Divisor::D => s / den,
                    Divisor::R if r > 0.0 => s / (den * r),
                    Divisor::R => f64::NAN,
                }
            })
            .collect()
    };
    Ok(PairCorrelation {
        r: radii.to_vec(),
        theo: vec![1.0; nr],
        none: do_none.then(|| finish(&sums[0])),
        translate: do_trans.then(|| finish(&sums[1])),
        isotropic: do_iso.then(|| finish(&sums[2])),
        bw,
        half_width: h,
        n,
        area,
    })
}
