use super::*;

/// Bins at h = 50, 100, ..., 50·n on `v` exactly, with pair counts that vary (so the weights do).
fn exact_bins(v: &Variogram, n: usize) -> Vec<LagBin> {
    (1..=n)
        .map(|k| {
            let h = 50.0 * k as f64;
            LagBin {
                lo: h - 25.0,
                hi: h + 25.0,
                distance: h,
                gamma: v.gamma(h),
                pairs: 40 + (k as u64 * 37) % 90,
            }
        })
        .collect()
}

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs().max(1e-300)
}

// Noise-free bins: the criterion is 0 at the truth and (the structures being distinguishable
// over these lags) nowhere else, so the fit must land on it. Nelder–Mead stops when the
// simplex spans < 1e-9 in t (1e-9 · ln(hi/lo) ≈ 1e-8 relative in a range); sills follow
// linearly. 1e-5 leaves three orders for the conditioning of sill against range.
const EXACT_TOL: f64 = 1e-5;

#[test]
fn recovers_an_exact_nested_variogram() -> Result<(), GeofieldError> {
    let truth = Variogram::nested(
        &[Model::Spherical, Model::Exponential],
        &[1.0, 0.5],
        &[300.0, 2000.0],
        0.1,
    )?;
    let f = fit_models(
        &[Model::Spherical, Model::Exponential],
        &exact_bins(&truth, 60),
        true,
    )?;
    let (s, t) = (&f.variogram.structures, &truth.structures);
    assert!(rel(s[0].range, t[0].range) < EXACT_TOL, "{}", f.variogram);
    assert!(rel(s[1].range, t[1].range) < EXACT_TOL, "{}", f.variogram);
    assert!(rel(s[0].sill, t[0].sill) < EXACT_TOL, "{}", f.variogram);
    assert!(rel(s[1].sill, t[1].sill) < EXACT_TOL, "{}", f.variogram);
    assert!(
        (f.variogram.nugget - 0.1).abs() < EXACT_TOL,
        "{}",
        f.variogram
    );
    Ok(())
}

#[test]
fn recovers_gaussian_plus_linear_without_a_nugget() -> Result<(), GeofieldError> {
    let truth = Variogram::nested(
        &[Model::Gaussian, Model::Linear],
        &[2.0, 1e-3],
        &[400.0],
        0.0,
    )?;
    let f = fit_models(
        &[Model::Gaussian, Model::Linear],
        &exact_bins(&truth, 40),
        false,
    )?;
    let (s, t) = (&f.variogram.structures, &truth.structures);
    assert_eq!(f.variogram.nugget, 0.0);
    assert!(rel(s[0].range, t[0].range) < EXACT_TOL, "{}", f.variogram);
    assert!(rel(s[0].sill, t[0].sill) < EXACT_TOL, "{}", f.variogram);
    assert!(rel(s[1].sill, t[1].sill) < EXACT_TOL, "{}", f.variogram);
    Ok(())
}

/// A noisy empirical variogram (deterministic ±15 % perturbations of a nested truth).
fn noisy_bins() -> Result<Vec<LagBin>, GeofieldError> {
    let truth = Variogram::nested(
        &[Model::Spherical, Model::Gaussian],
        &[0.7, 1.2],
        &[250.0, 1500.0],
        0.05,
    )?;
    let mut b = exact_bins(&truth, 30);
    for (k, bin) in b.iter_mut().enumerate() {
        bin.gamma *= 1.0 + 0.15 * ((k as f64 * 2.399).sin());
    }
    Ok(b)
}

// One structure is the nested model with the other's sill at 0, so the nested optimum can be no
// worse than either one-structure optimum; a search that stalls in a poor local optimum fails.
#[test]
fn nested_fit_is_no_worse_than_either_single_structure() -> Result<(), GeofieldError> {
    let bins = noisy_bins()?;
    let nested = fit_models(&[Model::Spherical, Model::Gaussian], &bins, true)?;
    for m in [Model::Spherical, Model::Gaussian] {
        let single = fit(m, &bins, true)?;
        assert!(
            nested.wrss <= single.wrss * (1.0 + 1e-9),
            "nested {} ({}) worse than {} ({})",
            nested.variogram,
            nested.wrss,
            single.variogram,
            single.wrss
        );
    }
    Ok(())
}

// The non-negative least-squares coefficients satisfy the KKT conditions: the gradient of the
// criterion vanishes in every positive coefficient and is >= 0 in every zero one.
#[test]
fn sills_satisfy_the_kkt_conditions() -> Result<(), GeofieldError> {
    let bins = noisy_bins()?;
    let pts = fit_points(&bins, 1)?;
    let s1 = Structure::new(Model::Spherical, 1.0, 250.0);
    let s2 = Structure::new(Model::Exponential, 1.0, 60.0);
    let cols = vec![
        vec![1.0; pts.len()],
        pts.iter().map(|p| s1.gamma(p.0)).collect::<Vec<_>>(),
        pts.iter().map(|p| s2.gamma(p.0)).collect::<Vec<_>>(),
    ];
    let (_, c) = nnls(&cols, &pts);
    let scale: f64 = pts.iter().map(|p| p.2 * p.1 * p.1).sum();
    for j in 0..3 {
        // d/dc_j of Σ w r² = −2 Σ w r col_j.
        let g: f64 = pts
            .iter()
            .enumerate()
            .map(|(k, &(_, y, w))| {
                let r = y - (0..3).map(|i| c[i] * cols[i][k]).sum::<f64>();
                -2.0 * w * r * cols[j][k]
            })
            .sum();
        if c[j] > 0.0 {
            assert!(
                g.abs() < 1e-9 * scale,
                "coefficient {j} = {}: gradient {g}",
                c[j]
            );
        } else {
            assert!(g >= -1e-9 * scale, "coefficient {j} = 0: gradient {g} < 0");
        }
    }
    Ok(())
}

#[test]
fn refuses_too_many_structures_and_too_few_bins() -> Result<(), GeofieldError> {
    let bins = noisy_bins()?;
    let five = [Model::Spherical; 5];
    assert!(fit_models(&five, &bins, true).is_err());
    assert!(fit_models(&[], &bins, true).is_err());
    // Two ranges, two sills and a nugget: 5 unknowns need at least 5 bins.
    let r = fit_models(&[Model::Spherical, Model::Exponential], &bins[..4], true);
    assert!(r.is_err_and(|e| e.to_string().contains("at least 5")));
    assert!(Model::parse_nested("spherical++exponential").is_err());
    assert!(Model::parse_nested("sph+exp+gau+cubic+lin").is_err());
    assert_eq!(
        Model::parse_nested("sph + matern:1.5")?,
        vec![Model::Spherical, Model::Matern { nu: 1.5 }]
    );
    Ok(())
}

#[test]
fn nested_variograms_check_their_counts() -> Result<(), GeofieldError> {
    let m = [Model::Spherical, Model::Linear];
    // One range per bounded structure, or one per structure.
    let a = Variogram::nested(&m, &[1.0, 0.1], &[300.0], 0.0)?;
    let b = Variogram::nested(&m, &[1.0, 0.1], &[300.0, 0.0], 0.0)?;
    assert_eq!(a.gamma(123.0), b.gamma(123.0));
    assert!(Variogram::nested(&m, &[1.0], &[300.0], 0.0).is_err());
    assert!(Variogram::nested(&m, &[1.0, 0.1], &[300.0, 1.0, 2.0], 0.0).is_err());
    assert_eq!(a.models_name(), "spherical+linear");
    Ok(())
}
