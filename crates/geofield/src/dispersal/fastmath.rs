//! Branch-free kernel evaluation for the CPU inner loops, written so that LLVM vectorises them
//! (SSE2 on any x86-64): a Cody-Waite exp with a degree-13 polynomial, and four fixed lanes of
//! accumulation so the summation order is fixed (bitwise reproducible) yet vectorisable.

use super::params::Kernel;

const LOG2E: f64 = std::f64::consts::LOG2_E;
const LN2_HI: f64 = 6.931_471_803_691_238e-1;
const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
/// 1.5 · 2^52: adding it rounds to an integer held in the low mantissa bits.
const MAGIC: f64 = 6_755_399_441_055_744.0;

/// e^x for x ≤ 0, relative error ≲ 4e-16 (|r| ≤ ln2/2, degree-13 Taylor: remainder 1.7e-16);
/// exactly 0 below −708 (where e^x < 3.3e-308). Branch-free.
#[inline(always)]
pub fn exp_neg(x: f64) -> f64 {
    let xc = x.max(-708.0);
    let t = xc.mul_add(LOG2E, MAGIC);
    let n = t - MAGIC;
    let r = (xc - n * LN2_HI) - n * LN2_LO;
    let mut p: f64 = 1.0 / 6_227_020_800.0;
    p = p.mul_add(r, 1.0 / 479_001_600.0);
    p = p.mul_add(r, 1.0 / 39_916_800.0);
    p = p.mul_add(r, 1.0 / 3_628_800.0);
    p = p.mul_add(r, 1.0 / 362_880.0);
    p = p.mul_add(r, 1.0 / 40_320.0);
    p = p.mul_add(r, 1.0 / 5_040.0);
    p = p.mul_add(r, 1.0 / 720.0);
    p = p.mul_add(r, 1.0 / 120.0);
    p = p.mul_add(r, 1.0 / 24.0);
    p = p.mul_add(r, 1.0 / 6.0);
    p = p.mul_add(r, 0.5);
    p = p.mul_add(r, 1.0);
    p = p.mul_add(r, 1.0);
    let k = (t.to_bits() as i64).wrapping_sub(MAGIC.to_bits() as i64);
    let scale = f64::from_bits((k.wrapping_add(1023) << 52) as u64);
    let v = p * scale;
    if x < -708.0 { 0.0 } else { v }
}

/// ln x for finite x > 0 (normal numbers), absolute error ≲ 3e-16 · max(1, |ln x|). Branch-free
/// and vectorisable: x = m·2^e with m in [√½, √2), ln m = 2 atanh(s) for s = (m − 1)/(m + 1),
/// |s| ≤ 0.172, summed to s²¹ (the next term is < 3e-18). Any value for x ≤ 0.
#[inline(always)]
pub fn ln_pos(x: f64) -> f64 {
    let bits = x.to_bits();
    // The exponent as a float without an integer conversion: 2^52 + e_biased, less the bias.
    let e_biased =
        f64::from_bits(((bits >> 52) & 0x7ff) | 0x4330_0000_0000_0000) - 4_503_599_627_370_496.0;
    let m = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
    let big = m > std::f64::consts::SQRT_2;
    let m = if big { 0.5 * m } else { m };
    let e = e_biased - 1023.0 + if big { 1.0 } else { 0.0 };
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    let mut p: f64 = 1.0 / 21.0;
    p = p.mul_add(s2, 1.0 / 19.0);
    p = p.mul_add(s2, 1.0 / 17.0);
    p = p.mul_add(s2, 1.0 / 15.0);
    p = p.mul_add(s2, 1.0 / 13.0);
    p = p.mul_add(s2, 1.0 / 11.0);
    p = p.mul_add(s2, 1.0 / 9.0);
    p = p.mul_add(s2, 1.0 / 7.0);
    p = p.mul_add(s2, 1.0 / 5.0);
    p = p.mul_add(s2, 1.0 / 3.0);
    p = p.mul_add(s2, 1.0);
    e.mul_add(LN2_HI, e.mul_add(LN2_LO, 2.0 * s * p))
}

/// The blend's smoothstep S_n(s) = sⁿ Σ_k C(n−1+k, k)(1 − s)ᵏ (n = 4 or 6) for s clamped to
/// [0, 1]: the near kernel's share is S_n(1 − t) (`Blend::near_factor`). Branch-free.
#[inline(always)]
pub fn smoothstep<const N: usize>(s: f64) -> f64 {
    let s = s.clamp(0.0, 1.0);
    let u = 1.0 - s;
    let coef: &[f64] = if N == 4 {
        &[1.0, 4.0, 10.0, 20.0]
    } else {
        &[1.0, 6.0, 21.0, 56.0, 126.0, 252.0]
    };
    let mut inner = 0.0;
    for &c in coef.iter().rev() {
        inner = inner * u + c;
    }
    let mut p = 1.0;
    for _ in 0..N {
        p *= s;
    }
    p * inner
}

/// A near/far blend for [`sum_pairs_with`]: R₁², 1/(R² − R₁²) and the order n (4 or 6).
#[derive(Debug, Clone, Copy)]
pub struct NearBlend {
    pub inner2: f64,
    pub inv_span: f64,
    pub order: usize,
}

/// Σ_k w_k K(d_k) over the candidates with d² ≤ `r2`, for a cell at (x, y); `us`, `vs`, `ws`
/// have equal lengths. Four accumulation lanes in a fixed order, then (l0 + l1) + (l2 + l3).
#[inline]
pub fn sum_pairs(
    kernel: &Kernel,
    us: &[f64],
    vs: &[f64],
    ws: &[f64],
    x: f64,
    y: f64,
    r2: f64,
) -> f64 {
    sum_pairs_with(kernel, None, us, vs, ws, x, y, r2)
}

/// [`sum_pairs`], each term times the blend's near share when `blend` is given (the near part
/// of a near/far split). The kernel and the blend are chosen outside the loop, so that each
/// combination is one vectorised loop.
#[allow(clippy::too_many_arguments)]
#[inline]
pub fn sum_pairs_with(
    kernel: &Kernel,
    blend: Option<NearBlend>,
    us: &[f64],
    vs: &[f64],
    ws: &[f64],
    x: f64,
    y: f64,
    r2: f64,
) -> f64 {
    match *kernel {
        Kernel::Weibull { d, theta } if theta == 3.0 => {
            near(blend, us, vs, ws, x, y, r2, |q| exp_neg(-d * q * q.sqrt()))
        }
        Kernel::Weibull { d, theta } if theta == 2.0 => {
            near(blend, us, vs, ws, x, y, r2, |q| exp_neg(-d * q))
        }
        Kernel::Weibull { d, theta } if theta == 1.0 => {
            near(blend, us, vs, ws, x, y, r2, |q| exp_neg(-d * q.sqrt()))
        }
        Kernel::TwoDt { u, p } if p == 1.0 => near(blend, us, vs, ws, x, y, r2, |q| {
            let b = 1.0 + q / u;
            1.0 / (b * b)
        }),
        Kernel::Lognormal { x0, xb } => {
            // exp(−(ln r − ln X0)² / (2 Xb²)) with ln r = ln(q)/2; 0 at q = 0.
            let (lx0, c) = (x0.ln(), -0.5 / (xb * xb));
            near(blend, us, vs, ws, x, y, r2, move |q| {
                let z = 0.5 * ln_pos(q) - lx0;
                let v = exp_neg(c * z * z);
                if q > 0.0 { v } else { 0.0 }
            })
        }
        k => near(blend, us, vs, ws, x, y, r2, |q| k.eval_r2(q)),
    }
}

/// [`lanes`] of `k`, times the blend's near share when there is one.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn near(
    blend: Option<NearBlend>,
    us: &[f64],
    vs: &[f64],
    ws: &[f64],
    x: f64,
    y: f64,
    r2: f64,
    k: impl Fn(f64) -> f64,
) -> f64 {
    match blend {
        None => lanes(us, vs, ws, x, y, r2, k),
        Some(b) if b.order == 4 => lanes(us, vs, ws, x, y, r2, |q| {
            k(q) * smoothstep::<4>(1.0 - (q - b.inner2) * b.inv_span)
        }),
        Some(b) => lanes(us, vs, ws, x, y, r2, |q| {
            k(q) * smoothstep::<6>(1.0 - (q - b.inner2) * b.inv_span)
        }),
    }
}

#[inline(always)]
pub(crate) fn lanes(
    us: &[f64],
    vs: &[f64],
    ws: &[f64],
    x: f64,
    y: f64,
    r2: f64,
    k: impl Fn(f64) -> f64,
) -> f64 {
    let n = ws.len().min(us.len()).min(vs.len());
    let (us, vs, ws) = (&us[..n], &vs[..n], &ws[..n]);
    // Blocks of B pairs: a plain loop the vectoriser handles fills `tmp`, then four fixed lanes
    // (element i goes to lane i mod 4) accumulate it.
    const B: usize = 64;
    let mut acc = [0.0f64; 4];
    let mut tmp = [0.0f64; B];
    for ((u, v), w) in us.chunks(B).zip(vs.chunks(B)).zip(ws.chunks(B)) {
        let m = u.len().min(v.len()).min(w.len()).min(B);
        let (u, v, w) = (&u[..m], &v[..m], &w[..m]);
        for i in 0..m {
            let (du, dv) = (u[i] - x, v[i] - y);
            let q = du * du + dv * dv;
            let kq = w[i] * k(q);
            tmp[i] = if q <= r2 { kq } else { 0.0 };
        }
        tmp[m..].fill(0.0);
        for c in tmp.chunks_exact(4) {
            for j in 0..4 {
                acc[j] += c[j];
            }
        }
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_neg_is_accurate() {
        let mut worst = 0.0f64;
        let mut x = 0.0;
        while x > -708.0 {
            let (a, b) = (exp_neg(x), x.exp());
            worst = worst.max(((a - b) / b).abs());
            x -= 0.0137;
        }
        assert!(worst < 1e-15, "worst relative error {worst}");
        assert_eq!(exp_neg(0.0), 1.0);
        assert_eq!(exp_neg(-800.0), 0.0);
        assert_eq!(exp_neg(f64::NEG_INFINITY), 0.0);
    }

    #[test]
    fn ln_pos_is_accurate() {
        let mut worst = 0.0f64;
        let mut x = 1e-300f64;
        while x < 1e300 {
            for f in [
                1.0,
                1.0 + 1e-9,
                1.2345,
                std::f64::consts::SQRT_2,
                1.41422,
                1.9999999,
            ] {
                let v = x * f;
                let (a, b) = (ln_pos(v), v.ln());
                worst = worst.max((a - b).abs() / b.abs().max(1.0));
            }
            x *= 3.7;
        }
        assert!(worst < 5e-16, "worst error {worst}");
        assert_eq!(ln_pos(1.0), 0.0);
    }

    #[test]
    fn smoothstep_is_the_blends_near_share() {
        use super::super::nearfar::Blend;
        for n in [4usize, 6] {
            let b = Blend::new(3.0, 10.0, n);
            let (a, inv) = (9.0, 1.0 / 91.0);
            for i in 0..=120 {
                let q = i as f64;
                let s = match n {
                    4 => smoothstep::<4>(1.0 - (q - a) * inv),
                    _ => smoothstep::<6>(1.0 - (q - a) * inv),
                };
                assert!((s - b.near_factor(q)).abs() <= 1e-14, "n={n} q={q}");
            }
        }
    }

    #[test]
    fn blended_sums_match_the_direct_near_sum() {
        use super::super::nearfar::Blend;
        let us: Vec<f64> = (0..53).map(|i| (i as f64 * 7.3) % 50.0).collect();
        let vs: Vec<f64> = (0..53).map(|i| (i as f64 * 3.1) % 40.0).collect();
        let ws: Vec<f64> = (0..53).map(|i| 1.0 + i as f64).collect();
        for k in [
            Kernel::Weibull {
                d: 1e-3,
                theta: 3.0,
            },
            Kernel::Lognormal { x0: 5.0, xb: 0.7 },
            Kernel::TwoDt { u: 20.0, p: 1.0 },
            Kernel::TwoDt { u: 20.0, p: 0.5 },
        ] {
            for n in [4usize, 6] {
                let b = Blend::new(6.0, 20.0, n);
                let nb = NearBlend {
                    inner2: 36.0,
                    inv_span: 1.0 / (400.0 - 36.0),
                    order: n,
                };
                let want: f64 = (0..53)
                    .map(|i| {
                        let q = (us[i] - 10.0f64).powi(2) + (vs[i] - 20.0f64).powi(2);
                        if q <= 400.0 {
                            ws[i] * k.eval(q.sqrt()) * b.near_factor(q)
                        } else {
                            0.0
                        }
                    })
                    .sum();
                let got = sum_pairs_with(&k, Some(nb), &us, &vs, &ws, 10.0, 20.0, 400.0);
                assert!(
                    want > 0.0 && (got - want).abs() <= 1e-13 * want,
                    "{k:?} n={n}: {got} vs {want}"
                );
            }
        }
    }

    #[test]
    fn sum_pairs_matches_direct_sum() {
        let us: Vec<f64> = (0..37).map(|i| (i as f64 * 7.3) % 50.0).collect();
        let vs: Vec<f64> = (0..37).map(|i| (i as f64 * 3.1) % 40.0).collect();
        let ws: Vec<f64> = (0..37).map(|i| 1.0 + i as f64).collect();
        for k in [
            Kernel::Weibull {
                d: 1e-3,
                theta: 3.0,
            },
            Kernel::Weibull {
                d: 1e-2,
                theta: 2.0,
            },
            Kernel::Weibull { d: 0.1, theta: 1.0 },
            Kernel::Weibull {
                d: 0.05,
                theta: 1.3,
            },
            Kernel::TwoDt { u: 20.0, p: 1.0 },
            Kernel::Lognormal { x0: 5.0, xb: 0.7 },
        ] {
            for r2 in [f64::INFINITY, 400.0] {
                let want: f64 = (0..37)
                    .map(|i| {
                        let q = (us[i] - 10.0f64).powi(2) + (vs[i] - 20.0f64).powi(2);
                        if q <= r2 {
                            ws[i] * k.eval(q.sqrt())
                        } else {
                            0.0
                        }
                    })
                    .sum();
                let got = sum_pairs(&k, &us, &vs, &ws, 10.0, 20.0, r2);
                assert!((got - want).abs() <= 1e-14 * want, "{k:?}: {got} vs {want}");
            }
        }
    }
}
