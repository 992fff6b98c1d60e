//! The f32 multigrid pieces and the f64 operator against the f64 host reference; the host
//! reference itself is checked to converge (no GPU needed).

use super::mgref;
use super::reference::{Grid, Rng, hierarchy};
use crate::test_gpu;
use crate::wind::{CycleShape, GpuSherman, HostLevel, ShermanInputs};

pub(super) const SIZES: &[(usize, usize, usize)] =
    &[(1, 9, 6), (7, 5, 1), (2, 2, 4), (13, 11, 8), (30, 37, 10)];

pub(super) const SHAPE: CycleShape = CycleShape {
    smooth: 2,
    coarsest_sweeps: 40,
};

/// A random problem: the hierarchy of a random stair-step level, 1/V and b (fluid cells only).
pub(super) struct Problem {
    pub levels: Vec<HostLevel>,
    pub inv_vol: Vec<f64>,
    pub b: Vec<f64>,
}

pub(super) fn problem(rows: usize, cols: usize, nz: usize, seed: u64) -> Problem {
    let g = Grid::random(rows, cols, nz, seed);
    let inv_vol = g.inv_vol();
    let mut r = Rng(seed ^ 0xABCD);
    let b = inv_vol
        .iter()
        .map(|&iv| {
            if iv > 0.0 {
                r.uniform(-1.0, 1.0) / iv * 1e-2
            } else {
                0.0
            }
        })
        .collect();
    Problem {
        levels: hierarchy(g.level(seed + 1)),
        inv_vol,
        b,
    }
}

impl Problem {
    pub fn inputs(&self) -> ShermanInputs<'_> {
        ShermanInputs {
            levels: &self.levels,
            inv_vol: &self.inv_vol,
            b: &self.b,
        }
    }
}

fn max_abs(v: &[f64]) -> f64 {
    v.iter().map(|x| x.abs()).fold(0.0, f64::max)
}

/// The host V-cycle, used as iterative refinement, reduces the residual by ≥ 3× per cycle on
/// every test problem: the references (operator, coarsening, line smoother) are consistent.
#[test]
fn host_reference_multigrid_converges() {
    for (i, &(rows, cols, nz)) in SIZES.iter().enumerate() {
        let p = problem(rows, cols, nz, 10 + i as u64);
        let fine = &p.levels[0];
        let mut x = vec![0.0; p.b.len()];
        let mut r = p.b.clone();
        let d0 = mgref::max_div(&r, &p.inv_vol);
        let mut d = d0;
        for _ in 0..6 {
            let e = mgref::vcycle(&p.levels, 0, &r, SHAPE.smooth, SHAPE.coarsest_sweeps);
            x.iter_mut().zip(&e).for_each(|(x, e)| *x += e);
            r = mgref::residual(fine, &x, &p.b);
            let dn = mgref::max_div(&r, &p.inv_vol);
            assert!(
                dn < d / 3.0 || dn < 1e-12 * d0,
                "{rows}x{cols}x{nz}: {d:e} -> {dn:e}"
            );
            d = dn;
        }
        eprintln!(
            "{rows}x{cols}x{nz}: 6 host V-cycles reduce max |r/V| by {:.1e}",
            d / d0
        );
    }
}

/// max |A'||x| / V: the size of the residual's terms, whose f32 rounding is the noise floor
/// of an f32 residual. |A'||x| = 2 diag |x| − A'|x| (the off-diagonals are −K ≤ 0).
fn term_scale(l: &HostLevel, x: &[f64], inv_vol: &[f64]) -> f64 {
    let ax: Vec<f64> = x.iter().map(|v| v.abs()).collect();
    let a = mgref::apply(l, &ax);
    a.iter()
        .zip(&ax)
        .zip(&l.diag)
        .zip(inv_vol)
        .map(|(((a, x), d), iv)| (2.0 * d * x - a) * iv)
        .fold(0.0, f64::max)
}

/// After one colour of line relaxation, the active columns solve their tridiagonal systems
/// (with the other colour fixed) to f32 backward error: Thomas without pivoting is backward
/// stable for these diagonally dominant columns, |residual| ≤ c·ε·(|b| + |A'||x|) with c a
/// small constant (32 here, conductances rounded to f32 included); the other colour is
/// untouched, bit for bit.
fn check_line(lv: &HostLevel, colour: usize, x_old: &[f32], b: &[f32], got: &[f32], what: &str) {
    let (rows, cols, nz) = (lv.rows, lv.cols, lv.nz);
    let f = |v: &[f32]| v.iter().map(|&x| f64::from(x)).collect::<Vec<f64>>();
    let (bb, xn) = (f(b), f(got));
    let ax = mgref::apply(lv, &xn);
    let xa: Vec<f64> = xn.iter().map(|v| v.abs()).collect();
    let axa = mgref::apply(lv, &xa);
    for row in 0..rows {
        for col in 0..cols {
            let active = (row + col) % 2 == colour;
            for k in 0..nz {
                let i = (k * rows + row) * cols + col;
                if !active {
                    assert_eq!(
                        got[i].to_bits(),
                        x_old[i].to_bits(),
                        "{what}: inactive cell changed"
                    );
                    continue;
                }
                if lv.diag[i] == 0.0 {
                    assert_eq!(got[i], 0.0, "{what}: a solid cell got a value");
                    continue;
                }
                let r = bb[i] - ax[i];
                let scale = bb[i].abs() + 2.0 * lv.diag[i] * xa[i] - axa[i];
                assert!(
                    r.abs() <= 32.0 * f64::from(f32::EPSILON) * scale,
                    "{what}: row {row} col {col} k {k}: residual {r:e}, scale {scale:e}"
                );
            }
        }
    }
}

/// The line-relaxation criterion accepts the kernel's f32 arithmetic (emulated on the host) on
/// every level of every test problem, and rejects a solve that skipped a column.
#[test]
fn line_criterion_accepts_f32_thomas() {
    for (i, &(rows, cols, nz)) in SIZES.iter().enumerate() {
        let p = problem(rows, cols, nz, 20 + i as u64);
        let mut r = Rng(99 + i as u64);
        for (l, lv) in p.levels.iter().enumerate() {
            let n = lv.rows * lv.cols * lv.nz;
            let x32: Vec<f32> = (0..n).map(|_| r.uniform(-1.0, 1.0) as f32).collect();
            let b32: Vec<f32> = (0..n)
                .map(|_| (r.uniform(-1.0, 1.0) * 10.0) as f32)
                .collect();
            for colour in [0, 1] {
                let mut got = x32.clone();
                mgref::line_f32(lv, &mut got, &b32, colour);
                let what = format!("{rows}x{cols}x{nz} level {l} colour {colour}");
                check_line(lv, colour, &x32, &b32, &got, &what);
            }
        }
    }
    let p = problem(6, 6, 5, 5);
    let lv = &p.levels[0];
    let n = lv.rows * lv.cols * lv.nz;
    let x32 = vec![0.5f32; n];
    let b32 = vec![1.0f32; n];
    let mut got = x32.clone();
    mgref::line_f32(lv, &mut got, &b32, 0);
    got[(lv.nz - 1) * lv.rows * lv.cols] = 0.5; // column (0, 0), top cell: not solved
    let bad = std::panic::catch_unwind(|| check_line(lv, 0, &x32, &b32, &got, "skipped"));
    assert!(bad.is_err(), "a skipped cell must fail the criterion");
}

/// One colour of line relaxation on every level (backward error, above), one V-cycle and the
/// f64 residual, each on the device against the host.
///
/// V-cycle: the f32 cycle's residual b − A'x may exceed the f64 cycle's by the f32 rounding of
/// its terms, 1e3·ε·max(|A'||x|/V) (~10 roundings per level, a few levels, margin); and x
/// agrees to 1e-2 relative (forward error ≤ cond × backward error, cond ≲ 1e3 for these
/// columns), which still catches a wrong colour order or a missing correction.
/// f64 residual: FMA contraction only, 1e-14 of the largest term.
#[test]
fn multigrid_pieces_match_the_host() {
    let Some(gpu) = test_gpu() else { return };
    for (i, &(rows, cols, nz)) in SIZES.iter().enumerate() {
        let p = problem(rows, cols, nz, 20 + i as u64);
        let mut dev = GpuSherman::new(&gpu, &p.inputs(), SHAPE).unwrap();
        let mut r = Rng(99 + i as u64);
        for (l, lv) in p.levels.iter().enumerate() {
            let n = lv.rows * lv.cols * lv.nz;
            let x32: Vec<f32> = (0..n).map(|_| r.uniform(-1.0, 1.0) as f32).collect();
            let b32: Vec<f32> = (0..n)
                .map(|_| (r.uniform(-1.0, 1.0) * 10.0) as f32)
                .collect();
            for colour in [0, 1] {
                let got = dev.line_relax(l, colour, &x32, &b32).unwrap();
                let what = format!("{rows}x{cols}x{nz} level {l} colour {colour}");
                check_line(lv, colour as usize, &x32, &b32, &got, &what);
            }
        }
        let fine = &p.levels[0];
        let b32: Vec<f32> = p.b.iter().map(|&v| v as f32).collect();
        let bw: Vec<f64> = b32.iter().map(|&v| f64::from(v)).collect();
        let got: Vec<f64> = dev
            .vcycle(&b32)
            .unwrap()
            .iter()
            .map(|&v| f64::from(v))
            .collect();
        let want = mgref::vcycle(&p.levels, 0, &bw, SHAPE.smooth, SHAPE.coarsest_sweeps);
        let rg = mgref::max_div(&mgref::residual(fine, &got, &bw), &p.inv_vol);
        let rh = mgref::max_div(&mgref::residual(fine, &want, &bw), &p.inv_vol);
        let noise = 1e3 * f64::from(f32::EPSILON) * term_scale(fine, &want, &p.inv_vol);
        let e = got
            .iter()
            .zip(&want)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        eprintln!(
            "{rows}x{cols}x{nz}: V-cycle residual gpu {rg:.3e} host {rh:.3e} (noise {noise:.1e}), \
             |x gpu - x host| = {e:.2e} of {:.2e}",
            max_abs(&want)
        );
        assert!(
            rg <= rh + noise,
            "{rows}x{cols}x{nz}: V-cycle residual {rg:e} vs {rh:e}"
        );
        assert!(
            e <= 1e-2 * max_abs(&want),
            "{rows}x{cols}x{nz}: V-cycle x differs by {e:e}"
        );
        let phi: Vec<f64> = (0..p.b.len()).map(|_| r.uniform(-1.0, 1.0)).collect();
        let (res, d) = dev.residual_of(&phi).unwrap();
        let want = mgref::residual(fine, &phi, &p.b);
        let scale = max_abs(&fine.diag) * 2.0 + max_abs(&p.b);
        let e = res
            .iter()
            .zip(&want)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(e <= 1e-14 * scale, "{rows}x{cols}x{nz}: residual {e:e}");
        let dw = mgref::max_div(&want, &p.inv_vol);
        assert!(
            (d - dw).abs() <= 1e-12 * dw,
            "{rows}x{cols}x{nz}: max div {d:e} vs {dw:e}"
        );
    }
}
