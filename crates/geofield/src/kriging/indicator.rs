//! Indicator kriging: maps of P(Z(x) ≤ t) for thresholds t₁ < … < t_K (gstat's kriging of
//! `I(z <= t) ~ 1`, GSLIB's ik3d).
//!
//! Each threshold's indicator i_k = 1 if z ≤ t_k, else 0 (a missing value stays missing), is
//! kriged as a surface of its own ([`indicator_set`], then [`super::krige`]: any kind,
//! neighbourhood, anisotropy, one variogram for all thresholds or one each, e.g. fitted per
//! indicator). The estimates are then made a distribution function at every node
//! ([`OrderCorrection`], gstat's `set = list(order = …)`): kriging weights may be negative, so
//! raw estimates can leave [0, 1] or decrease with the threshold.

use serde::Serialize;

use super::samples::{SampleSet, Surface};
use crate::GeofieldError;

/// How the estimates are made a distribution function at each node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OrderCorrection {
    /// The kriged indicators as they are (gstat `order = 0`).
    None,
    /// Each clipped to [0, 1] (gstat `order = 1`).
    Clip,
    /// Clipped, then the average of an upward pass (each at least the one below) and a
    /// downward pass (each at most the one above): GSLIB ik3d's correction, gstat `order = 4`.
    /// The result is non-decreasing in the threshold and within [0, 1].
    Cdf,
}

impl OrderCorrection {
    /// From the command line's word: `none`, `clip` or `cdf`.
    pub fn parse(s: &str) -> Result<Self, GeofieldError> {
        match s {
            "none" => Ok(Self::None),
            "clip" => Ok(Self::Clip),
            "cdf" => Ok(Self::Cdf),
            _ => Err(GeofieldError::Invalid(format!(
                "order correction `{s}`: none, clip or cdf"
            ))),
        }
    }

    /// Corrects `p[k][node]` (thresholds ascending) in place at every node; NaN nodes (local
    /// kriging without samples) stay NaN.
    pub fn apply(self, p: &mut [Vec<f64>]) {
        if self == Self::None || p.is_empty() {
            return;
        }
        let nodes = p[0].len();
        let k = p.len();
        let mut up = vec![0.0; k];
        let mut down = vec![0.0; k];
        for j in 0..nodes {
            if p.iter().any(|b| b[j].is_nan()) {
                continue;
            }
            for b in p.iter_mut() {
                b[j] = b[j].clamp(0.0, 1.0);
            }
            if self == Self::Clip {
                continue;
            }
            for i in 0..k {
                up[i] = if i == 0 {
                    p[0][j]
                } else {
                    p[i][j].max(up[i - 1])
                };
            }
            for i in (0..k).rev() {
                down[i] = if i + 1 == k {
                    p[i][j]
                } else {
                    p[i][j].min(down[i + 1])
                };
            }
            for i in 0..k {
                p[i][j] = 0.5 * (up[i] + down[i]);
            }
        }
    }
}

/// Checks that `thresholds` are finite and strictly increasing (at least one).
pub fn check_thresholds(thresholds: &[f64]) -> Result<(), GeofieldError> {
    if thresholds.is_empty() {
        return Err(GeofieldError::Invalid("no threshold".into()));
    }
    if let Some(t) = thresholds.iter().find(|t| !t.is_finite()) {
        return Err(GeofieldError::Invalid(format!(
            "threshold {t} is not finite"
        )));
    }
    if let Some(w) = thresholds.windows(2).find(|w| w[1] <= w[0]) {
        return Err(GeofieldError::Invalid(format!(
            "thresholds must increase: {} then {}",
            w[0], w[1]
        )));
    }
    Ok(())
}

/// The indicator surfaces of the one surface of `samples`: surface k is named `<name><=t_k`
/// and holds 1 where the value is ≤ t_k, 0 where it is above, NaN where it is missing.
pub fn indicator_set(samples: &SampleSet, thresholds: &[f64]) -> Result<SampleSet, GeofieldError> {
    let [surface] = samples.surfaces.as_slice() else {
        return Err(GeofieldError::Invalid(format!(
            "indicator kriging takes one surface; the samples hold {}",
            samples.surfaces.len()
        )));
    };
    check_thresholds(thresholds)?;
    let surfaces = thresholds
        .iter()
        .map(|&t| Surface {
            name: format!("{}<={t}", surface.name),
            values: surface
                .values
                .iter()
                .map(|&z| {
                    if z.is_nan() {
                        f64::NAN
                    } else if z <= t {
                        1.0
                    } else {
                        0.0
                    }
                })
                .collect(),
        })
        .collect();
    Ok(SampleSet {
        surfaces,
        ..samples.clone()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corrections_match_hand_computed_values() {
        // Raw: −0.1, 0.5, 0.4, 1.2 → clipped 0, .5, .4, 1; up 0, .5, .5, 1; down 0, .4, .4, 1.
        let raw = vec![vec![-0.1], vec![0.5], vec![0.4], vec![1.2]];
        let mut c = raw.clone();
        OrderCorrection::Clip.apply(&mut c);
        assert_eq!(c, vec![vec![0.0], vec![0.5], vec![0.4], vec![1.0]]);
        let mut c = raw.clone();
        OrderCorrection::Cdf.apply(&mut c);
        assert_eq!(c, vec![vec![0.0], vec![0.45], vec![0.45], vec![1.0]]);
        let mut c = raw.clone();
        OrderCorrection::None.apply(&mut c);
        assert_eq!(c, raw);
        let mut n = vec![vec![f64::NAN], vec![0.3]];
        OrderCorrection::Cdf.apply(&mut n);
        assert!(n[0][0].is_nan() && n[1][0] == 0.3);
    }

    #[test]
    #[allow(clippy::needless_range_loop)]
    fn cdf_correction_gives_distribution_functions() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64::seed_from_u64(1);
        let mut p: Vec<Vec<f64>> = (0..6)
            .map(|_| (0..500).map(|_| rng.random_range(-0.3..1.3)).collect())
            .collect();
        OrderCorrection::Cdf.apply(&mut p);
        for j in 0..500 {
            for k in 0..6 {
                assert!((0.0..=1.0).contains(&p[k][j]));
                if k > 0 {
                    assert!(p[k][j] >= p[k - 1][j], "node {j}");
                }
            }
        }
    }

    #[test]
    fn indicators_and_bad_thresholds() {
        let set = SampleSet::new(
            vec![0.0, 1.0, 2.0],
            vec![0.0; 3],
            vec![vec![1.0, f64::NAN, 5.0]],
        );
        let i = indicator_set(&set, &[1.0, 4.0]).unwrap();
        assert_eq!(i.surfaces[0].values[0], 1.0);
        assert!(i.surfaces[0].values[1].is_nan());
        assert_eq!(i.surfaces[0].values[2], 0.0);
        assert_eq!(i.surfaces[1].values[2], 0.0);
        assert_eq!(i.surfaces[0].name, "surface1<=1");
        for bad in [&[][..], &[2.0, 1.0], &[1.0, 1.0], &[f64::NAN]] {
            assert!(indicator_set(&set, bad).is_err());
        }
    }
}
