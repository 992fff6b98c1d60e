//! Samples of one or many surfaces at shared locations, their checks, and the merging of samples
//! that share a location.
//!
//! **Duplicates.** Samples closer than the merge distance (default 1e-9 of the bounding-box
//! diagonal, i.e. identical up to rounding, or of four times the diagonal of the median absolute
//! deviations when that is smaller, so that one outlier far away does not widen it;
//! transitively, by single linkage) are one location,
//! at the position of the first of them in the input, holding per surface the mean of the
//! values present. If, for a surface, the values of one location differ by more than the merge
//! tolerance (default a tenth of that surface's standard deviation), that is an error naming the
//! samples: such a disagreement is more often a data error than noise. A wider `distance_m` merges
//! near-duplicates, which otherwise make the system singular (an error that names the closest
//! pair and suggests a nugget or a merge distance).

use super::params::MergeRule;
use crate::GeofieldError;

/// One surface (a value column): its name and one value per sample, NaN where missing.
#[derive(Clone, Debug, PartialEq)]
pub struct Surface {
    pub name: String,
    pub values: Vec<f64>,
}

/// Sample locations (world metres) and the surfaces sampled there.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct SampleSet {
    pub xs: Vec<f64>,
    pub ys: Vec<f64>,
    pub surfaces: Vec<Surface>,
    /// Where each sample came from, for messages: `source` and the 1-based line of each sample
    /// (empty: messages say "sample i", 0-based).
    pub source: Option<String>,
    pub lines: Vec<u64>,
    /// Optional names of the samples (a CSV `id` column), for maps and sections.
    pub labels: Vec<String>,
}

impl SampleSet {
    /// Samples without provenance; `values[h][i]` is surface h at sample i.
    pub fn new(xs: Vec<f64>, ys: Vec<f64>, values: Vec<Vec<f64>>) -> SampleSet {
        let surfaces = values
            .into_iter()
            .enumerate()
            .map(|(h, values)| Surface {
                name: format!("surface{}", h + 1),
                values,
            })
            .collect();
        SampleSet {
            xs,
            ys,
            surfaces,
            source: None,
            lines: vec![],
            labels: vec![],
        }
    }

    /// "file.csv line 7" or "sample 6".
    pub fn describe(&self, i: usize) -> String {
        match (self.source.as_deref(), self.lines.get(i)) {
            (Some(src), Some(l)) => format!("{src} line {l}"),
            (None, Some(l)) => format!("line {l}"),
            _ => format!("sample {i}"),
        }
    }

    pub fn len(&self) -> usize {
        self.xs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.xs.is_empty()
    }

    /// Shapes agree, coordinates finite, values finite or NaN (missing), at least one surface.
    pub fn validate(&self) -> Result<(), GeofieldError> {
        let n = self.xs.len();
        if self.ys.len() != n || self.surfaces.iter().any(|s| s.values.len() != n) {
            return Err(GeofieldError::Invalid(
                "the coordinates and every surface's values must have one entry per sample".into(),
            ));
        }
        if self.surfaces.is_empty() {
            return Err(GeofieldError::Invalid("no surface to krige".into()));
        }
        for i in 0..n {
            if !(self.xs[i].is_finite() && self.ys[i].is_finite()) {
                return Err(GeofieldError::Invalid(format!(
                    "{}: the coordinates ({}, {}) are not finite",
                    self.describe(i),
                    self.xs[i],
                    self.ys[i]
                )));
            }
            for s in &self.surfaces {
                if s.values[i].is_infinite() {
                    return Err(GeofieldError::Invalid(format!(
                        "{}: {} = {} is not finite",
                        self.describe(i),
                        s.name,
                        s.values[i]
                    )));
                }
            }
        }
        Ok(())
    }
}

/// Samples after merging, for one set of surfaces.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Merged {
    pub xs: Vec<f64>,
    pub ys: Vec<f64>,
    /// `values[h][j]` for merged location j (finite).
    pub values: Vec<Vec<f64>>,
    /// Input index of each location's first sample.
    pub first: Vec<usize>,
    /// Groups of input indices merged into one location (only groups of two or more).
    pub merged: Vec<Vec<usize>>,
}

/// The diagonal of the samples' bounding box, or, when smaller, four times the diagonal of their
/// median absolute deviations (about the extent of the bulk of the samples): one outlier far
/// away must not make the bulk "one location".
fn robust_diagonal(points: impl Iterator<Item = (f64, f64)>) -> f64 {
    let (mut px, mut py): (Vec<f64>, Vec<f64>) = points.unzip();
    if px.is_empty() {
        return 0.0;
    }
    let spread = |v: &mut Vec<f64>| -> (f64, f64) {
        v.sort_by(f64::total_cmp);
        let range = v[v.len() - 1] - v[0];
        let med = v[v.len() / 2];
        let mut dev: Vec<f64> = v.iter().map(|x| (x - med).abs()).collect();
        dev.sort_by(f64::total_cmp);
        (range, dev[dev.len() / 2])
    };
    let ((rx, mx), (ry, my)) = (spread(&mut px), spread(&mut py));
    rx.hypot(ry).min(4.0 * mx.hypot(my))
}

/// Merges the samples `subset` (input indices, every surface of `surfaces` present at each)
/// under `rule`; see the module docs.
pub(crate) fn merge(
    set: &SampleSet,
    subset: &[usize],
    surfaces: &[usize],
    rule: &MergeRule,
) -> Result<Merged, GeofieldError> {
    let (xs, ys) = (&set.xs, &set.ys);
    let dist = match rule.distance_m {
        Some(d) => d,
        None => 1e-9 * robust_diagonal(subset.iter().map(|&i| (xs[i], ys[i]))),
    };
    // Single-linkage clusters of the pairs within `dist` (sweep in x, union-find).
    let m = subset.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| xs[subset[a]].total_cmp(&xs[subset[b]]));
    let mut parent: Vec<usize> = (0..m).collect();
    fn find(p: &mut [usize], mut i: usize) -> usize {
        while p[i] != i {
            p[i] = p[p[i]];
            i = p[i];
        }
        i
    }
    for a in 0..m {
        let ia = subset[order[a]];
        for &ob in &order[a + 1..] {
            let ib = subset[ob];
            if xs[ib] - xs[ia] > dist {
                break;
            }
            let d = (xs[ib] - xs[ia]).hypot(ys[ib] - ys[ia]);
            if d <= dist {
                let (ra, rb) = (find(&mut parent, order[a]), find(&mut parent, ob));
                if ra != rb {
                    parent[ra.max(rb)] = ra.min(rb);
                }
            }
        }
    }
    let mut groups: Vec<Vec<usize>> = vec![];
    let mut slot = vec![usize::MAX; m];
    for (j, &input) in subset.iter().enumerate() {
        let r = find(&mut parent, j);
        if slot[r] == usize::MAX {
            slot[r] = groups.len();
            groups.push(vec![]);
        }
        groups[slot[r]].push(input);
    }
    for g in &mut groups {
        g.sort_unstable();
    }
    groups.sort_by_key(|g| g[0]);

    let mut out = Merged {
        xs: groups.iter().map(|g| xs[g[0]]).collect(),
        ys: groups.iter().map(|g| ys[g[0]]).collect(),
        values: vec![],
        first: groups.iter().map(|g| g[0]).collect(),
        merged: groups.iter().filter(|g| g.len() > 1).cloned().collect(),
    };
    for &h in surfaces {
        let v = &set.surfaces[h].values;
        let tol = match rule.tolerance {
            Some(t) => t,
            None => {
                let mean = subset.iter().map(|&i| v[i]).sum::<f64>() / m.max(1) as f64;
                let var =
                    subset.iter().map(|&i| (v[i] - mean).powi(2)).sum::<f64>() / m.max(1) as f64;
                0.1 * var.sqrt()
            }
        };
        let mut col = Vec::with_capacity(groups.len());
        for g in &groups {
            let (lo, hi) = g.iter().fold((f64::MAX, f64::MIN), |(a, b), &i| {
                (a.min(v[i]), b.max(v[i]))
            });
            if hi - lo > tol {
                let list: Vec<String> = g
                    .iter()
                    .map(|&i| format!("{} ({} = {})", set.describe(i), set.surfaces[h].name, v[i]))
                    .collect();
                return Err(GeofieldError::Invalid(format!(
                    "samples at the same location disagree: {}; the values differ by {:.6e}, \
                     more than the merge tolerance {:.6e}: fix the data, or raise the tolerance \
                     to average them",
                    list.join(", "),
                    hi - lo,
                    tol
                )));
            }
            col.push(g.iter().map(|&i| v[i]).sum::<f64>() / g.len() as f64);
        }
        out.values.push(col);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_outlier_does_not_merge_the_others() {
        // Twelve wells 10 m apart on a line and one far outlier (a typo in its x).
        let mut xs: Vec<f64> = (0..12).map(|i| 10.0 * i as f64).collect();
        let mut ys = vec![0.0; 12];
        xs.insert(1, 1e12);
        ys.insert(1, 5.0);
        // An exact duplicate of well 0 at the end.
        xs.push(0.0);
        ys.push(0.0);
        let values: Vec<f64> = (0..xs.len()).map(|i| i as f64 * 0.0 + 1.0).collect();
        let set = SampleSet::new(xs.clone(), ys, vec![values]);
        let all: Vec<usize> = (0..xs.len()).collect();
        let m = merge(&set, &all, &[0], &MergeRule::default()).unwrap();
        assert_eq!(
            m.merged,
            vec![vec![0, 13]],
            "only the exact duplicate is merged"
        );
        assert_eq!(m.xs.len(), xs.len() - 1);
    }
}
