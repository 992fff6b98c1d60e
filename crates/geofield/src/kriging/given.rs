//! Universal kriging with drift variables given by value: any number of secondary variables
//! known at every sample and at every prediction node (PyKrige's `specified` drift; its
//! `functional` drift is the same once the functions are evaluated at both). The mean is
//! a₀ + (polynomial in the coordinates) + Σₖ bₖ gₖ(x).
//!
//! The system is global and dense, [[C, F], [Fᵀ, 0]], solved in f64 by LU with partial
//! pivoting, C the covariance of [`super::space::Covariance`] (a pseudo-covariance for a
//! variogram without a sill: the constant term is always in F, so the result is the variogram
//! form's) and F the drift basis of [`Basis::row`] at the samples; the same function gives the
//! nodes' basis. Each given column is divided by its largest |value| at the samples, and the
//! polynomial uses the kriging-space coordinates over their largest |value|: neither changes the
//! predictions or variances (the basis spans the same space), only the conditioning. Before
//! solving, F's columns are checked independent over the samples; an error names the first term
//! that is not. Samples at the same place are refused (no merging: their drift values could
//! differ).
//!
//! Prediction by dual kriging, Σ αᵢ C(xᵢ, x₀) + Σ βₖ fₖ(x₀) with [[C, F], [Fᵀ, 0]] [α; β] = [z; 0];
//! variance σ² = C(0) − λ·c − μ·f with [[C, F], [Fᵀ, 0]] [λ; μ] = [c; f] solved per node.
//!
//! On a CUDA backend ([`krige_on`]) the same system is factored on the host the way the other
//! global systems are ([`super::dual::DualSystem`]: the Cholesky factor of C, then the drift's
//! p × p system) and the GPU evaluates every node (`geofield_cuda::kriging::points_eval`: the
//! covariances to the samples, cᵀα + fᵀβ and the variance from L⁻¹ and R⁻¹), the nodes' drift
//! terms computed on the host. The variance kernel holds at most 6 drift terms: with more and a
//! variance, the CPU's LU path runs (the label says so).

use faer::Mat;
use faer::linalg::solvers::Solve;
use rayon::prelude::*;

use super::space::Covariance;
use crate::GeofieldError;

#[path = "given_gpu.rs"]
mod gpu;

/// Drift variables given by value at the samples and at the prediction nodes.
#[derive(Clone, Debug, PartialEq)]
pub struct GivenDrift {
    /// One name per variable, for messages.
    pub names: Vec<String>,
    /// `at_samples[k][i]`: variable k at sample i (the samples' input order).
    pub at_samples: Vec<Vec<f64>>,
    /// `at_nodes[k][j]`: variable k at node j (the target's node order).
    pub at_nodes: Vec<Vec<f64>>,
}

impl GivenDrift {
    /// Checks the counts (at least one variable, the same number at the samples and the nodes)
    /// and that every value is finite; errors name the variable.
    pub fn new(
        names: Vec<String>,
        at_samples: Vec<Vec<f64>>,
        at_nodes: Vec<Vec<f64>>,
    ) -> Result<Self, GeofieldError> {
        if at_samples.is_empty() {
            return Err(GeofieldError::Invalid(
                "a given drift needs at least one drift variable".into(),
            ));
        }
        if names.len() != at_samples.len() || at_nodes.len() != at_samples.len() {
            return Err(GeofieldError::Invalid(format!(
                "{} drift variable names, {} variables at the samples and {} at the nodes: \
                 the counts differ",
                names.len(),
                at_samples.len(),
                at_nodes.len()
            )));
        }
        let d = GivenDrift {
            names,
            at_samples,
            at_nodes,
        };
        for (k, name) in d.names.iter().enumerate() {
            for (what, v) in [("sample", &d.at_samples[k]), ("node", &d.at_nodes[k])] {
                if let Some(i) = v.iter().position(|x| !x.is_finite()) {
                    return Err(GeofieldError::Invalid(format!(
                        "drift variable {name}: the value at {what} {i} is {} (must be finite)",
                        v[i]
                    )));
                }
            }
        }
        Ok(d)
    }

    /// The variables' counts against `samples` samples and `nodes` nodes.
    pub fn check_counts(&self, samples: usize, nodes: usize) -> Result<(), GeofieldError> {
        for (k, name) in self.names.iter().enumerate() {
            for (what, v, want) in [
                ("samples", &self.at_samples[k], samples),
                ("nodes", &self.at_nodes[k], nodes),
            ] {
                if v.len() != want {
                    return Err(GeofieldError::Invalid(format!(
                        "drift variable {name}: {} values for {want} {what}",
                        v.len()
                    )));
                }
            }
        }
        Ok(())
    }
}

/// The polynomial part of the drift.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Poly {
    /// 1.
    Constant,
    /// 1 and each coordinate.
    Linear,
    /// 1, u, v, u², uv, v² (2-D only).
    Quadratic,
}

/// The drift basis at a place: one rule for the samples and the nodes.
pub(crate) struct Basis {
    poly: Poly,
    dims: usize,
    /// The polynomial's coordinates are kriging-space coordinates over this.
    scale: f64,
    /// Each given variable is divided by this.
    given_scale: Vec<f64>,
    /// Every term's name, for messages.
    names: Vec<String>,
}

impl Basis {
    /// The basis of `poly` in `dims` dimensions (2 or 3) over samples at kriging-space `pts`
    /// with the given variables `given` (their values at the samples).
    pub(crate) fn new(poly: Poly, dims: usize, pts: &[[f64; 3]], given: &GivenDrift) -> Basis {
        let scale = pts
            .iter()
            .flat_map(|p| p[..dims].iter().map(|c| c.abs()))
            .fold(0.0f64, f64::max);
        let given_scale = given
            .at_samples
            .iter()
            .map(|v| {
                let m = v.iter().fold(0.0f64, |m, x| m.max(x.abs()));
                if m > 0.0 { m } else { 1.0 }
            })
            .collect();
        let axes = ["x", "y", "z"];
        let mut names = vec!["1".to_string()];
        if poly != Poly::Constant {
            names.extend(axes[..dims].iter().map(|a| a.to_string()));
        }
        if poly == Poly::Quadratic {
            names.extend(["x²", "xy", "y²"].map(String::from));
        }
        names.extend(given.names.iter().map(|n| format!("drift variable {n}")));
        Basis {
            poly,
            dims,
            scale: if scale > 0.0 { scale } else { 1.0 },
            given_scale,
            names,
        }
    }

    /// Terms of the basis.
    pub(crate) fn len(&self) -> usize {
        self.names.len()
    }

    /// The basis at kriging-space `p` where the given variables are `given(k)`.
    pub(crate) fn row(&self, p: &[f64; 3], given: &dyn Fn(usize) -> f64, out: &mut [f64]) {
        let u: Vec<f64> = p[..self.dims].iter().map(|c| c / self.scale).collect();
        let mut q = 0;
        let mut put = |v: f64| {
            out[q] = v;
            q += 1;
        };
        put(1.0);
        if self.poly != Poly::Constant {
            u.iter().for_each(|&c| put(c));
        }
        if self.poly == Poly::Quadratic {
            put(u[0] * u[0]);
            put(u[0] * u[1]);
            put(u[1] * u[1]);
        }
        for (k, s) in self.given_scale.iter().enumerate() {
            put(given(k) / s);
        }
    }
}

/// Refuses a drift matrix (`f[i·p + k]`, n rows) whose columns are dependent, naming the first
/// term that is a combination of the ones before it (modified Gram–Schmidt).
fn check_rank(f: &[f64], n: usize, basis: &Basis) -> Result<(), GeofieldError> {
    let p = basis.len();
    if n < p {
        return Err(GeofieldError::Invalid(format!(
            "the drift has {p} terms ({}) but there are only {n} samples",
            basis.names.join(", ")
        )));
    }
    let mut q: Vec<Vec<f64>> = vec![];
    for k in 0..p {
        let mut c: Vec<f64> = (0..n).map(|i| f[i * p + k]).collect();
        let norm0 = c.iter().map(|v| v * v).sum::<f64>().sqrt();
        for b in &q {
            let d: f64 = c.iter().zip(b).map(|(x, y)| x * y).sum();
            c.iter_mut().zip(b).for_each(|(x, y)| *x -= d * y);
        }
        let norm = c.iter().map(|v| v * v).sum::<f64>().sqrt();
        if !(norm > 1e-10 * norm0.max(f64::MIN_POSITIVE) && norm0 > 0.0) {
            let before = &basis.names[..k];
            return Err(GeofieldError::Invalid(format!(
                "the drift term {} is {} over the {n} samples: the drift cannot be \
                 estimated (remove that term)",
                basis.names[k],
                if norm0 == 0.0 {
                    "zero".to_string()
                } else {
                    format!("a combination of {}", before.join(", "))
                }
            )));
        }
        c.iter_mut().for_each(|x| *x /= norm);
        q.push(c);
    }
    Ok(())
}

/// Nodes per block of right-hand sides of the variance solves.
const NODE_BLOCK: usize = 256;

/// The samples of one given-drift system, in kriging space.
pub(crate) struct System<'a> {
    pub cov: &'a Covariance,
    pub pts: &'a [[f64; 3]],
    pub basis: &'a Basis,
    pub given: &'a GivenDrift,
    /// Describes sample i in messages.
    pub describe: &'a (dyn Fn(usize) -> String + Sync),
}

/// Predictions of every value vector of `values` (one per surface, at the samples) and, when
/// `variance`, the variance (the same for all) at the `nodes` (kriging space; node j has the
/// given variables' `at_nodes[k][j]`).
pub(crate) fn krige(
    sys: &System<'_>,
    values: &[&[f64]],
    nodes: &[[f64; 3]],
    variance: bool,
) -> Result<super::systems::Evaluated, GeofieldError> {
    let (n, p) = (sys.pts.len(), sys.basis.len());
    let m = n + p;
    let (c, f) = sample_system(sys)?;
    let mut a = vec![0.0; m * m];
    for i in 0..n {
        a[i * m..i * m + n].copy_from_slice(&c[i * n..(i + 1) * n]);
        for k in 0..p {
            a[i * m + n + k] = f[i * p + k];
            a[(n + k) * m + i] = f[i * p + k];
        }
    }
    let singular = || {
        GeofieldError::Invalid(format!(
            "the kriging system of {n} samples with a {p}-term drift is singular"
        ))
    };
    // LU with partial pivoting (faer): the system is symmetric but indefinite. C is positive
    // definite for a valid model and distinct samples, and F has full column rank
    // (check_rank), so it is nonsingular; a non-finite solution still reports it.
    let lu = Mat::from_fn(m, m, |i, j| a[i * m + j]).partial_piv_lu();
    let mut z = Mat::from_fn(
        m,
        values.len(),
        |i, h| if i < n { values[h][i] } else { 0.0 },
    );
    lu.solve_in_place(z.as_mut());
    if !z.col_iter().all(|c| c.iter().all(|v| v.is_finite())) {
        return Err(singular());
    }
    // Per block of nodes: the right-hand sides b (covariances to the samples, then the drift
    // terms), the predictions dᵀb, and with variance w = A⁻¹b solved for the whole block at
    // once, σ² = c₀ − wᵀb.
    let blocks: Vec<Vec<(Vec<f64>, f64)>> = nodes
        .par_chunks(NODE_BLOCK)
        .enumerate()
        .map(|(bi, chunk)| {
            let j0 = bi * NODE_BLOCK;
            let mut b = Mat::<f64>::zeros(m, chunk.len());
            let mut row = vec![0.0; p];
            for (c, x0) in chunk.iter().enumerate() {
                for (i, pt) in sys.pts.iter().enumerate() {
                    b[(i, c)] = sys.cov.at(dist(x0, pt));
                }
                sys.basis
                    .row(x0, &|k| sys.given.at_nodes[k][j0 + c], &mut row);
                for (k, v) in row.iter().enumerate() {
                    b[(n + k, c)] = *v;
                }
            }
            let preds: Vec<Vec<f64>> = (0..chunk.len())
                .map(|c| {
                    (0..values.len())
                        .map(|h| (0..m).map(|i| z[(i, h)] * b[(i, c)]).sum())
                        .collect()
                })
                .collect();
            let vars: Vec<f64> = if variance {
                let mut w = b.clone();
                lu.solve_in_place(w.as_mut());
                (0..chunk.len())
                    .map(|c| sys.cov.c0 - (0..m).map(|i| w[(i, c)] * b[(i, c)]).sum::<f64>())
                    .collect()
            } else {
                vec![f64::NAN; chunk.len()]
            };
            preds.into_iter().zip(vars).collect()
        })
        .collect();
    let per_node: Vec<(Vec<f64>, f64)> = blocks.into_iter().flatten().collect();
    let preds = (0..values.len())
        .map(|h| per_node.iter().map(|(p, _)| p[h]).collect())
        .collect();
    let var = variance.then(|| per_node.iter().map(|(_, v)| v.max(0.0)).collect());
    Ok((preds, var))
}

fn dist(a: &[f64; 3], b: &[f64; 3]) -> f64 {
    ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2) + (a[2] - b[2]).powi(2)).sqrt()
}

/// The samples' covariance matrix C (n × n, row-major) and drift basis F (n × p, row-major),
/// F's columns checked independent; samples at the same place refused.
pub(super) fn sample_system(sys: &System<'_>) -> Result<(Vec<f64>, Vec<f64>), GeofieldError> {
    let (n, p) = (sys.pts.len(), sys.basis.len());
    let mut c = vec![0.0; n * n];
    for i in 0..n {
        c[i * n + i] = sys.cov.c0;
        for j in 0..i {
            let h = dist(&sys.pts[i], &sys.pts[j]);
            if h <= sys.cov.eps {
                return Err(GeofieldError::Invalid(format!(
                    "{} and {} are at the same place: kriging with a given drift does not \
                     merge samples (their drift values could differ); remove or average them",
                    (sys.describe)(j),
                    (sys.describe)(i)
                )));
            }
            let v = sys.cov.between_samples(h);
            c[i * n + j] = v;
            c[j * n + i] = v;
        }
    }
    let mut f = vec![0.0; n * p];
    for i in 0..n {
        sys.basis.row(
            &sys.pts[i],
            &|k| sys.given.at_samples[k][i],
            &mut f[i * p..(i + 1) * p],
        );
    }
    check_rank(&f, n, sys.basis)?;
    Ok((c, f))
}

/// [`krige`] on `backend`: on a GPU by [`krige_gpu`] (unless a variance needs more drift terms
/// than its kernel holds), else on the CPU; with the label of what evaluated it. `dims`: the
/// kriging-space coordinates used (2 or 3).
pub(crate) fn krige_on(
    backend: &crate::Backend,
    sys: &System<'_>,
    values: &[&[f64]],
    nodes: &[[f64; 3]],
    variance: bool,
    dims: usize,
) -> Result<(super::systems::Evaluated, String), GeofieldError> {
    let n = sys.pts.len();
    if let crate::Backend::Cuda(gpu) = backend
        && (!variance || sys.basis.len() <= geofield_cuda::kriging::P_MAX)
    {
        let out = gpu::krige_gpu(gpu, sys, values, nodes, variance, dims)?;
        return Ok((
            out,
            format!("CUDA, global with a given drift ({n} samples, f64)"),
        ));
    }
    Ok((krige(sys, values, nodes, variance)?, cpu_label(backend, n)))
}

/// The result of [`krige_given`]: predictions per surface and the variance per surface, in the
/// target's node order (a grid: row-major from the north-west cell).
#[derive(Clone, Debug, PartialEq)]
pub struct GivenKriged {
    pub values: Vec<Vec<f64>>,
    pub variance: Option<Vec<Vec<f64>>>,
    /// What evaluated it (the GPU on a CUDA backend, see the module docs).
    pub evaluated: String,
}

/// The polynomial part of `kind`'s drift with a given drift: ordinary kriging adds the given
/// variables to the constant, universal kriging to its polynomial.
pub(crate) fn poly_of(kind: super::Kind) -> Result<Poly, GeofieldError> {
    use super::{Drift, Kind};
    match kind {
        Kind::Ordinary => Ok(Poly::Constant),
        Kind::Universal {
            drift: Drift::Linear,
        } => Ok(Poly::Linear),
        Kind::Universal {
            drift: Drift::Quadratic,
        } => Ok(Poly::Quadratic),
        k => Err(GeofieldError::Unsupported(format!(
            "a given drift with {} kriging: use ordinary (constant + the given variables) or \
             universal with a linear or quadratic drift",
            k.name()
        ))),
    }
}

/// Label of an evaluation on the CPU whatever `backend` is.
pub(crate) fn cpu_label(backend: &crate::Backend, n: usize) -> String {
    let on = match backend {
        crate::Backend::Cpu => "CPU".to_string(),
        b => format!(
            "CPU (a given drift is evaluated on the CPU only, not on {})",
            b.label()
        ),
    };
    format!("{on}, global with a given drift ({n} samples, f64)")
}

/// 2-D universal kriging of every surface of `samples` with the given drift variables `drift`
/// (values at the samples in their order, and at `params.target`'s nodes): `params.options.kind`
/// ordinary (the mean is a constant plus the given variables) or universal linear / quadratic
/// (plus the polynomial in x, y). Global, point support only; anisotropy and the nugget mode as
/// [`super::krige`]; on a CUDA backend the nodes are evaluated on the GPU. Every surface needs a
/// value at every sample.
pub fn krige_given(
    backend: &crate::Backend,
    samples: &super::SampleSet,
    params: &super::KrigeParams,
    drift: &GivenDrift,
) -> Result<GivenKriged, GeofieldError> {
    use super::{Neighbourhood, Target};
    samples.validate()?;
    let opts = &params.options;
    opts.validate()?;
    let poly = poly_of(opts.kind)?;
    if opts.neighbourhood != Neighbourhood::Global {
        return Err(GeofieldError::Unsupported(
            "a given drift with local kriging: it is global only".into(),
        ));
    }
    if opts.block.is_some() {
        return Err(GeofieldError::Unsupported(
            "a given drift with block kriging: its drift at a block is not known".into(),
        ));
    }
    if params.resolve_crossings {
        return Err(GeofieldError::Unsupported(
            "resolving crossings with a given drift".into(),
        ));
    }
    let hc = samples.surfaces.len();
    let vs = &params.variograms;
    if vs.len() != 1 && vs.len() != hc {
        return Err(GeofieldError::Invalid(format!(
            "{} variograms for {hc} surfaces: give one for all or one per surface",
            vs.len()
        )));
    }
    for v in vs {
        v.validate()?;
    }
    let (nx, ny): (Vec<f64>, Vec<f64>) = match &params.target {
        Target::Points { xs, ys } => {
            if xs.len() != ys.len() {
                return Err(GeofieldError::Invalid(format!(
                    "{} x and {} y point coordinates: the lengths differ",
                    xs.len(),
                    ys.len()
                )));
            }
            (xs.clone(), ys.clone())
        }
        Target::Grid(g) => (0..g.rows)
            .flat_map(|r| {
                (0..g.cols).map(move |c| {
                    (
                        g.x_min_m + (c as f64 + 0.5) * g.cell_size_m,
                        g.y_max_m - (r as f64 + 0.5) * g.cell_size_m,
                    )
                })
            })
            .unzip(),
    };
    if let Some(j) = (0..nx.len()).find(|&j| !(nx[j].is_finite() && ny[j].is_finite())) {
        return Err(GeofieldError::Invalid(format!(
            "point {j} has a non-finite coordinate ({}, {})",
            nx[j], ny[j]
        )));
    }
    drift.check_counts(samples.len(), nx.len())?;
    let frame = super::space::Frame::new(&samples.xs, &samples.ys, opts.anisotropy);
    let to3 = |x: f64, y: f64| {
        let (u, v) = frame.apply(x, y);
        [u, v, 0.0]
    };
    let pts: Vec<[f64; 3]> = (0..samples.len())
        .map(|i| to3(samples.xs[i], samples.ys[i]))
        .collect();
    let nodes: Vec<[f64; 3]> = (0..nx.len()).map(|j| to3(nx[j], ny[j])).collect();
    let basis = Basis::new(poly, 2, &pts, drift);
    let diag = pts
        .iter()
        .flat_map(|a| pts.iter().map(move |b| (a[0] - b[0]).hypot(a[1] - b[1])))
        .fold(0.0f64, f64::max);
    let mut values = vec![];
    let mut variance = vec![];
    let mut evaluated = cpu_label(backend, samples.len());
    for (h, s) in samples.surfaces.iter().enumerate() {
        if let Some(i) = s.values.iter().position(|v| v.is_nan()) {
            return Err(GeofieldError::Invalid(format!(
                "{}: no value at {} (kriging with a given drift needs every surface at every \
                 sample)",
                s.name,
                samples.describe(i)
            )));
        }
        let v = &vs[if vs.len() == 1 { 0 } else { h }];
        let cov = Covariance::new(v, super::space::eps_for(diag), opts.nugget, v.gamma(diag));
        let sys = System {
            cov: &cov,
            pts: &pts,
            basis: &basis,
            given: drift,
            describe: &|i| samples.describe(i),
        };
        let ((p, var), label) = krige_on(backend, &sys, &[&s.values], &nodes, params.variance, 2)
            .map_err(|e| match e {
            GeofieldError::Invalid(m) => GeofieldError::Invalid(format!("{}: {m}", s.name)),
            e => e,
        })?;
        values.extend(p);
        variance.extend(var);
        evaluated = label;
    }
    Ok(GivenKriged {
        values,
        variance: params.variance.then_some(variance),
        evaluated,
    })
}
