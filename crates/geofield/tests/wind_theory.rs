//! The Sherman solution against linear theory (note §7.6–7.7): flow over a low 2-D ridge.
//!
//! Witch of Agnesi h = H L²/(x² + L²), uniform U across, open inflow, outflow and top, closed
//! ground and closed north/south faces (one row: a 2-D problem). Potential-flow linear theory
//! gives the fractional speed-up above the crest ΔS(z) = (H/L) L²/(L + z)² (z above the
//! crest), and with moduli ratio α the substitution Z = z/α gives ΔS(α) = ΔS(1)/α at the
//! surface. H/L = 0.03 keeps second-order terms near 3 %; the stair steps are 0.15 m (20 over
//! H), Δx = 5 m; the domain reaches 20 L upstream, downstream and up.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod wind_common;
use geofield::bench::wind::{
    multigrid::{self, Problem},
    ops::{self, Coeffs},
};
use geofield::wind::{Levels, Solver, Top, WindGrid};
use geofield_core::GridSpec;

const L: f64 = 100.0;
const H: f64 = 3.0;
const U: f64 = 5.0;
const DX: f64 = 5.0;

fn ridge_grid(top_m: f64) -> WindGrid {
    let cols = (40.0 * L / DX) as usize;
    let plan = GridSpec {
        x_min_m: -0.5 * cols as f64 * DX,
        y_max_m: DX,
        cell_size_m: DX,
        cols,
        rows: 1,
    };
    let terrain: Vec<f64> = (0..cols)
        .map(|c| {
            let x = plan.cell_centre(0, c).0;
            H * L * L / (x * x + L * L)
        })
        .collect();
    // 0.15 m layers over the ridge's height, then growing by 15 % per layer.
    let mut tops = Vec::new();
    let mut z = 0.0;
    let mut dz = 0.15;
    while z < top_m {
        z += dz;
        tops.push(z);
        if z > 1.5 * H {
            dz *= 1.15;
        }
    }
    WindGrid::new(plan, terrain, &Levels::Tops(tops)).unwrap()
}

/// (height above the crest (m), fractional speed-up) on the crest's x face, lowest first.
fn crest_speed_up(alpha: f64) -> Vec<(f64, f64)> {
    let g = ridge_grid(20.0 * L * alpha.max(1.0));
    let mut coeffs = Coeffs::new(&g, alpha, Top::Open);
    coeffs.cv.iter_mut().for_each(|c| *c = 0.0); // closed north and south: 2-D
    let (rows, cols, nz) = (g.rows(), g.cols(), g.nz);
    let mut u: Vec<f64> = coeffs
        .cu
        .iter()
        .map(|&c| if c > 0.0 { U } else { 0.0 })
        .collect();
    let mut v = vec![0.0; g.n_v()];
    let mut w = vec![0.0; g.n_w()];
    let div0 = ops::divergence(&g, &u, &v, &w);
    let problem = Problem::new(&g, &coeffs, &div0);
    let (d0, _) = ops::divergence_stats(&g, &div0);
    let run = multigrid::solve(&problem, Solver::MgCg, 1.9, 200, 1e-9 * d0, 1, |_, _| {}).unwrap();
    assert!(run.converged, "{:?}", run.history);
    let phi = problem.to_cells(&run.phi);
    ops::apply_potential(&g, &coeffs, &phi, &mut u, &mut v, &mut w);
    let i = cols / 2; // the face at x = 0
    let mut out = Vec::new();
    for k in 0..nz {
        let f = (k * rows) * (cols + 1) + i;
        if coeffs.cu[f] == 0.0 {
            continue;
        }
        out.push((g.z_centre_m(k) - g.z_faces_m[0] - H, u[f] / U - 1.0));
    }
    out
}

fn at(profile: &[(f64, f64)], z: f64) -> f64 {
    let j = profile
        .partition_point(|p| p.0 < z)
        .clamp(1, profile.len() - 1);
    let ((z0, s0), (z1, s1)) = (profile[j - 1], profile[j]);
    s0 + (s1 - s0) * (z - z0) / (z1 - z0)
}

#[test]
fn ridge_crest_speed_up_follows_linear_theory() {
    let p = crest_speed_up(1.0);
    for z in [2.0, 5.0, 10.0, 20.0, 50.0, 100.0] {
        let theory = (H / L) * L * L / ((L + z) * (L + z));
        let got = at(&p, z);
        eprintln!(
            "z {z:5.1} m: speed-up {got:.5}, linear theory {theory:.5}, ratio {:.3}",
            got / theory
        );
        // First-order stair-step error within a few cells of the surface (it halves when Δx
        // halves: 19 % at 2 m with Δx = 10 m, 9 % with 5 m); 5 % from two cells up.
        let tol = if z >= 2.0 * DX { 0.05 } else { 0.10 };
        assert!((got / theory - 1.0).abs() < tol, "z {z}: {got} vs {theory}");
    }
}

#[test]
fn speed_up_scales_as_one_over_alpha() {
    let base = at(&crest_speed_up(1.0), 1.0);
    for alpha in [0.5, 2.0] {
        let s = at(&crest_speed_up(alpha), alpha);
        eprintln!(
            "alpha {alpha}: alpha * speed-up {:.5} vs {:.5}",
            alpha * s,
            base
        );
        assert!(
            (alpha * s / base - 1.0).abs() < 0.05,
            "alpha {alpha}: {s} vs {base}"
        );
    }
}

/// Linear theory over an axisymmetric Gaussian hill h = H exp(−r²/2σ²), flow along x:
/// ΔS(z) = (σ²H/2) ∫₀^∞ k² exp(−σ²k²/2 − kz) dk above the crest (note §7.6, from
/// (2π)⁻² ∫ (k_x²/|k|) ĥ(k) e^{−|k|z} d²k), √(π/8) H/σ at the surface.
fn gaussian_theory(h: f64, sigma: f64, z: f64) -> f64 {
    let n = 20_000;
    let k_max = 12.0 / sigma;
    let dk = k_max / n as f64;
    let mut s = 0.0;
    for i in 0..n {
        let k = (i as f64 + 0.5) * dk;
        s += k * k * (-0.5 * sigma * sigma * k * k - k * z).exp();
    }
    0.5 * sigma * sigma * h * s * dk
}

#[test]
fn gaussian_hill_crest_speed_up_follows_linear_theory() {
    let (h, sigma, dx) = (3.0, 100.0, 10.0);
    assert!(
        (gaussian_theory(h, sigma, 0.0) / ((std::f64::consts::PI / 8.0).sqrt() * h / sigma) - 1.0)
            .abs()
            < 1e-6
    );
    let cols = (16.0 * sigma / dx) as usize;
    let (plan, terrain) = wind_common::centred_gaussian(cols, dx, h, sigma);
    let mut tops = Vec::new();
    let (mut z, mut dz) = (0.0, 0.15);
    while z < 8.0 * sigma {
        z += dz;
        tops.push(z);
        if z > 1.5 * h {
            dz *= 1.2;
        }
    }
    let g = WindGrid::new(plan, terrain, &Levels::Tops(tops)).unwrap();
    let coeffs = Coeffs::new(&g, 1.0, Top::Open);
    let (rows, nz) = (g.rows(), g.nz);
    let mut u: Vec<f64> = coeffs
        .cu
        .iter()
        .map(|&c| if c > 0.0 { U } else { 0.0 })
        .collect();
    let mut v = vec![0.0; g.n_v()];
    let mut w = vec![0.0; g.n_w()];
    let div0 = ops::divergence(&g, &u, &v, &w);
    let problem = Problem::new(&g, &coeffs, &div0);
    let (d0, _) = ops::divergence_stats(&g, &div0);
    let run = multigrid::solve(&problem, Solver::MgCg, 1.9, 200, 1e-8 * d0, 1, |_, _| {}).unwrap();
    assert!(run.converged);
    let phi = problem.to_cells(&run.phi);
    ops::apply_potential(&g, &coeffs, &phi, &mut u, &mut v, &mut w);
    // The crest's x face: between the two central columns, averaged over the two central rows.
    let (i, r0) = (cols / 2, rows / 2 - 1);
    let mut profile = Vec::new();
    for k in 0..nz {
        let f0 = (k * rows + r0) * (cols + 1) + i;
        let f1 = f0 + cols + 1;
        if coeffs.cu[f0] == 0.0 || coeffs.cu[f1] == 0.0 {
            continue;
        }
        profile.push((
            g.z_centre_m(k) - g.z_faces_m[0] - h,
            0.5 * (u[f0] + u[f1]) / U - 1.0,
        ));
    }
    let ratios: Vec<(f64, f64)> = [5.0, 10.0, 20.0, 40.0, 80.0, 160.0]
        .iter()
        .map(|&z| {
            let theory = gaussian_theory(h, sigma, z);
            let got = at(&profile, z);
            eprintln!(
                "z {z:5.1} m: speed-up {got:.5}, linear theory {theory:.5}, ratio {:.3}",
                got / theory
            );
            (z, got / theory)
        })
        .collect();
    // Δx = σ/10: the stair steps' first-order error is 14 % at half a cell above the crest,
    // 7 % at two cells and < 5 % from four cells up (as for the ridge, it halves with Δx).
    for (z, r) in ratios {
        let tol = if z >= 4.0 * dx { 0.05 } else { 0.15 };
        assert!((r - 1.0).abs() < tol, "z {z}: ratio {r}");
    }
}
