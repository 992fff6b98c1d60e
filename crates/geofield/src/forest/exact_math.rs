//! The logarithm and exponential of a seed's flight, in additions, multiplications, fused
//! multiply-adds and one division only: IEEE 754 rounds each of those exactly, on the CPU
//! (`f64::mul_add` is the FMA instruction on x86-64-v3, and a correctly rounded software fma
//! elsewhere) and on the GPU (`fma`, `/` in double precision), so the CUDA mirror in
//! `geofield-cuda/kernels/forest.cu` computes the very same bits and a seed lands in the same
//! cell on both. Library `ln`/`exp` differ between platforms in the last bit.
//!
//! - [`ln`]: x = m 2^e with m in [√½, √2); ln m = 2 atanh s, s = (m − 1)/(m + 1), |s| ≤ 0.1716,
//!   by its odd series to s²¹ (the next term is below 1e-17 of the sum); ln x = e ln 2 + ln m
//!   with ln 2 in two parts. Relative error ≤ 4e-16 on every positive normal x.
//! - [`exp`]: n = ⌊x / ln 2 + ½⌋, r = x − n ln 2 (two-part ln 2, |r| ≤ 0.3466), e^r by its
//!   Taylor series to r¹³ (the next term is below 2e-17), times 2^n by the exponent bits. For
//!   x in [−700, 700]; relative error ≤ 4e-16.
//!
//! - [`ln_1p`]: ln(1 + x) as ln u · x / (u − 1), u = 1 + x rounded (Goldberg 1991, "What every
//!   computer scientist should know about floating-point arithmetic", Theorem 4): accurate for
//!   small |x| too.
//! - [`cos_2pi`]: cos 2πu by the quarter turn k nearest to 4u (4u − k exact) and the Taylor
//!   series of cos or sin on [−π/4, π/4] (to a¹⁶ and a¹⁷; the next terms are below 3e-18).
//!
//! The forest's random draws ([`super::rng`]) use these too, so that the per-cell counts and
//! per-tree outcomes of the GPU's yearly loop (`geofield-cuda/kernels/forest_year.cu`) are the
//! CPU's to the bit. Accuracy is far beyond the flight tables' own (1e-6 of the median
//! distance); what matters is that both sides agree to the bit.

/// ln 2 in two parts (fdlibm's): the high part has its last 32 bits zero, so n · LN2_HI is
/// exact for |n| < 2^20; the low part carries the next 53 bits.
const LN2_HI: f64 = f64::from_bits(0x3FE6_2E42_FEE0_0000);
const LN2_LO: f64 = f64::from_bits(0x3DEA_39EF_3579_3C76);

/// ln x for a positive normal finite x (other inputs: NaN).
#[inline]
pub fn ln(x: f64) -> f64 {
    if !(x > 0.0 && x.is_finite() && x.is_normal()) {
        return f64::NAN;
    }
    let bits = x.to_bits();
    let mut e = ((bits >> 52) & 0x7FF) as i64 - 1023;
    // m in [1, 2).
    let mut m = f64::from_bits((bits & 0x000F_FFFF_FFFF_FFFF) | 0x3FF0_0000_0000_0000);
    if m > std::f64::consts::SQRT_2 {
        m *= 0.5;
        e += 1;
    }
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    // 2 (s + s³/3 + ... + s²¹/21) = 2 s (1 + s² (1/3 + s² (1/5 + ...))).
    let mut p: f64 = 1.0 / 21.0;
    for k in [19.0, 17.0, 15.0, 13.0, 11.0, 9.0, 7.0, 5.0, 3.0] {
        p = p.mul_add(s2, 1.0 / k);
    }
    let q = p * s2;
    let lnm = (2.0 * s).mul_add(q, 2.0 * s);
    let ef = e as f64;
    ef.mul_add(LN2_HI, ef.mul_add(LN2_LO, lnm))
}

/// e^x for x in [−700, 700] (below: 0; above: +∞; NaN: NaN).
#[inline]
pub fn exp(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    if x < -700.0 {
        return 0.0;
    }
    if x > 700.0 {
        return f64::INFINITY;
    }
    let n = (x * std::f64::consts::LOG2_E + 0.5).floor();
    let r = (-n).mul_add(LN2_LO, (-n).mul_add(LN2_HI, x));
    // Σ r^k / k!, k = 0..13, by Horner.
    let mut p: f64 = 1.0 / 6_227_020_800.0; // 1/13!
    for k in (1..=12).rev() {
        p = p.mul_add(r, 1.0 / FACTORIALS[k]);
    }
    let y = p.mul_add(r, 1.0);
    // 2^n by the exponent bits (n in [−1010, 1010]: two steps keep both factors normal).
    let n = n as i64;
    let (a, b) = (n / 2, n - n / 2);
    y * f64::from_bits(((a + 1023) as u64) << 52) * f64::from_bits(((b + 1023) as u64) << 52)
}

/// [`ln`] and [`exp`] on four lanes (AVX2 and FMA): the same operations in the same order lane by
/// lane, so the same bits.
#[cfg(target_arch = "x86_64")]
pub(crate) mod x4 {
    use std::arch::x86_64::*;

    use super::{FACTORIALS, LN2_HI, LN2_LO};

    /// 2⁵², whose ulp is 1: adding it to an integer-valued f64 in [0, 2⁵²) puts the integer in
    /// the low mantissa bits.
    const TWO52: f64 = 4_503_599_627_370_496.0;

    /// [`super::ln`] of four positive normal finite values (other inputs: undefined).
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    pub(crate) fn ln(x: __m256d) -> __m256d {
        let bits = _mm256_castpd_si256(x);
        // The biased exponent (the sign bit is 0) as an f64, exactly.
        let magic = _mm256_set1_pd(TWO52);
        let biased = _mm256_sub_pd(
            _mm256_castsi256_pd(_mm256_or_si256(
                _mm256_srli_epi64::<52>(bits),
                _mm256_castpd_si256(magic),
            )),
            magic,
        );
        let mut e = _mm256_sub_pd(biased, _mm256_set1_pd(1023.0));
        let mut m = _mm256_castsi256_pd(_mm256_or_si256(
            _mm256_and_si256(bits, _mm256_set1_epi64x(0x000F_FFFF_FFFF_FFFF)),
            _mm256_set1_epi64x(0x3FF0_0000_0000_0000),
        ));
        let big = _mm256_cmp_pd::<_CMP_GT_OQ>(m, _mm256_set1_pd(std::f64::consts::SQRT_2));
        m = _mm256_blendv_pd(m, _mm256_mul_pd(m, _mm256_set1_pd(0.5)), big);
        e = _mm256_add_pd(e, _mm256_and_pd(big, _mm256_set1_pd(1.0)));
        let one = _mm256_set1_pd(1.0);
        let s = _mm256_div_pd(_mm256_sub_pd(m, one), _mm256_add_pd(m, one));
        let s2 = _mm256_mul_pd(s, s);
        let mut p = _mm256_set1_pd(1.0 / 21.0);
        for k in [19.0, 17.0, 15.0, 13.0, 11.0, 9.0, 7.0, 5.0, 3.0] {
            p = _mm256_fmadd_pd(p, s2, _mm256_set1_pd(1.0 / k));
        }
        let q = _mm256_mul_pd(p, s2);
        let two_s = _mm256_mul_pd(_mm256_set1_pd(2.0), s);
        let lnm = _mm256_fmadd_pd(two_s, q, two_s);
        _mm256_fmadd_pd(
            e,
            _mm256_set1_pd(LN2_HI),
            _mm256_fmadd_pd(e, _mm256_set1_pd(LN2_LO), lnm),
        )
    }

    /// [`super::exp`] of four values in [−700, 700] (other inputs: undefined).
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    pub(crate) fn exp(x: __m256d) -> __m256d {
        let n = _mm256_floor_pd(_mm256_add_pd(
            _mm256_mul_pd(x, _mm256_set1_pd(std::f64::consts::LOG2_E)),
            _mm256_set1_pd(0.5),
        ));
        let minus_n = _mm256_xor_pd(n, _mm256_set1_pd(-0.0));
        let r = _mm256_fmadd_pd(
            minus_n,
            _mm256_set1_pd(LN2_LO),
            _mm256_fmadd_pd(minus_n, _mm256_set1_pd(LN2_HI), x),
        );
        let mut p = _mm256_set1_pd(1.0 / 6_227_020_800.0);
        for k in (1..=12).rev() {
            p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0 / FACTORIALS[k]));
        }
        let y = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0));
        // a = n / 2 rounded toward zero (the integer division), b = n − a.
        let a = _mm256_round_pd::<{ _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC }>(_mm256_mul_pd(
            n,
            _mm256_set1_pd(0.5),
        ));
        let b = _mm256_sub_pd(n, a);
        _mm256_mul_pd(_mm256_mul_pd(y, pow2(a)), pow2(b))
    }

    /// 2^k for integer-valued k in [−1022, 1023]: (k + 1023) in the exponent bits.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn pow2(k: __m256d) -> __m256d {
        let biased = _mm256_add_pd(k, _mm256_set1_pd(1023.0 + TWO52));
        _mm256_castsi256_pd(_mm256_slli_epi64::<52>(_mm256_castpd_si256(biased)))
    }
}

/// [`ln`] and [`exp`] on eight lanes (AVX-512F), as [`x4`].
#[cfg(target_arch = "x86_64")]
pub(crate) mod x8 {
    use std::arch::x86_64::*;

    use super::{FACTORIALS, LN2_HI, LN2_LO};

    const TWO52: f64 = 4_503_599_627_370_496.0;

    /// [`super::ln`] of eight positive normal finite values (other inputs: undefined).
    #[target_feature(enable = "avx512f")]
    #[inline]
    pub(crate) fn ln(x: __m512d) -> __m512d {
        let bits = _mm512_castpd_si512(x);
        let magic = _mm512_set1_pd(TWO52);
        let biased = _mm512_sub_pd(
            _mm512_castsi512_pd(_mm512_or_si512(
                _mm512_srli_epi64::<52>(bits),
                _mm512_castpd_si512(magic),
            )),
            magic,
        );
        let e = _mm512_sub_pd(biased, _mm512_set1_pd(1023.0));
        let m = _mm512_castsi512_pd(_mm512_or_si512(
            _mm512_and_si512(bits, _mm512_set1_epi64(0x000F_FFFF_FFFF_FFFF)),
            _mm512_set1_epi64(0x3FF0_0000_0000_0000),
        ));
        let big = _mm512_cmp_pd_mask::<_CMP_GT_OQ>(m, _mm512_set1_pd(std::f64::consts::SQRT_2));
        let m = _mm512_mask_mul_pd(m, big, m, _mm512_set1_pd(0.5));
        let e = _mm512_mask_add_pd(e, big, e, _mm512_set1_pd(1.0));
        let one = _mm512_set1_pd(1.0);
        let s = _mm512_div_pd(_mm512_sub_pd(m, one), _mm512_add_pd(m, one));
        let s2 = _mm512_mul_pd(s, s);
        let mut p = _mm512_set1_pd(1.0 / 21.0);
        for k in [19.0, 17.0, 15.0, 13.0, 11.0, 9.0, 7.0, 5.0, 3.0] {
            p = _mm512_fmadd_pd(p, s2, _mm512_set1_pd(1.0 / k));
        }
        let q = _mm512_mul_pd(p, s2);
        let two_s = _mm512_mul_pd(_mm512_set1_pd(2.0), s);
        let lnm = _mm512_fmadd_pd(two_s, q, two_s);
        _mm512_fmadd_pd(
            e,
            _mm512_set1_pd(LN2_HI),
            _mm512_fmadd_pd(e, _mm512_set1_pd(LN2_LO), lnm),
        )
    }

    /// [`super::exp`] of eight values in [−700, 700] (other inputs: undefined).
    #[target_feature(enable = "avx512f")]
    #[inline]
    pub(crate) fn exp(x: __m512d) -> __m512d {
        // Rounding control 0x09: toward −∞ (floor); 0x0B: toward zero.
        let n = _mm512_roundscale_pd::<0x09>(_mm512_add_pd(
            _mm512_mul_pd(x, _mm512_set1_pd(std::f64::consts::LOG2_E)),
            _mm512_set1_pd(0.5),
        ));
        let minus_n = _mm512_castsi512_pd(_mm512_xor_si512(
            _mm512_castpd_si512(n),
            _mm512_set1_epi64(i64::MIN),
        ));
        let r = _mm512_fmadd_pd(
            minus_n,
            _mm512_set1_pd(LN2_LO),
            _mm512_fmadd_pd(minus_n, _mm512_set1_pd(LN2_HI), x),
        );
        let mut p = _mm512_set1_pd(1.0 / 6_227_020_800.0);
        for k in (1..=12).rev() {
            p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(1.0 / FACTORIALS[k]));
        }
        let y = _mm512_fmadd_pd(p, r, _mm512_set1_pd(1.0));
        let a = _mm512_roundscale_pd::<0x0B>(_mm512_mul_pd(n, _mm512_set1_pd(0.5)));
        let b = _mm512_sub_pd(n, a);
        let pow2 = |k: __m512d| {
            let biased = _mm512_add_pd(k, _mm512_set1_pd(1023.0 + TWO52));
            _mm512_castsi512_pd(_mm512_slli_epi64::<52>(_mm512_castpd_si512(biased)))
        };
        _mm512_mul_pd(_mm512_mul_pd(y, pow2(a)), pow2(b))
    }
}

/// ln(1 + x) for x > −1 (NaN below; x itself where 1 + x rounds to 1).
#[inline]
pub fn ln_1p(x: f64) -> f64 {
    let u = 1.0 + x;
    if u == 1.0 {
        return x;
    }
    ln(u) * (x / (u - 1.0))
}

/// cos 2πu for finite u (NaN otherwise).
#[inline]
pub fn cos_2pi(u: f64) -> f64 {
    if !u.is_finite() {
        return f64::NAN;
    }
    let w = 4.0 * u;
    let k = (w + 0.5).floor();
    // w − k is exact (Sterbenz for k ≥ 1; w itself for k = 0); a in [−π/4, π/4].
    let a = (w - k) * std::f64::consts::FRAC_PI_2;
    let a2 = a * a;
    let quarter = (k.rem_euclid(4.0)) as u8;
    if quarter.is_multiple_of(2) {
        // cos a = 1 − a²/2! + a⁴/4! − … + a¹⁶/16!.
        let mut p: f64 = 1.0 / 20_922_789_888_000.0; // 1/16!
        for (i, f) in [
            87_178_291_200.0,
            479_001_600.0,
            3_628_800.0,
            40_320.0,
            720.0,
            24.0,
            2.0,
        ]
        .into_iter()
        .enumerate()
        {
            let c = if i % 2 == 0 { -1.0 / f } else { 1.0 / f };
            p = p.mul_add(a2, c);
        }
        let c = p.mul_add(a2, 1.0);
        if quarter == 0 { c } else { -c }
    } else {
        // sin a = a − a³/3! + … + a¹⁷/17!.
        let mut p: f64 = 1.0 / 355_687_428_096_000.0; // 1/17!
        for (i, f) in [
            1_307_674_368_000.0,
            6_227_020_800.0,
            39_916_800.0,
            362_880.0,
            5_040.0,
            120.0,
            6.0,
        ]
        .into_iter()
        .enumerate()
        {
            let c = if i % 2 == 0 { -1.0 / f } else { 1.0 / f };
            p = p.mul_add(a2, c);
        }
        let s = (a * a2).mul_add(p, a);
        if quarter == 1 { -s } else { s }
    }
}

/// k! for k = 0..=12.
const FACTORIALS: [f64; 13] = [
    1.0,
    1.0,
    2.0,
    6.0,
    24.0,
    120.0,
    720.0,
    5040.0,
    40320.0,
    362_880.0,
    3_628_800.0,
    39_916_800.0,
    479_001_600.0,
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Against the platform's ln and exp (within 1 ulp of the true values) over the range a
    /// flight uses and beyond: the relative difference stays below 1e-15.
    #[test]
    fn ln_and_exp_agree_with_the_platforms_to_a_few_ulps() {
        let mut s =
            crate::forest::rng::Stream::new(1, 0, 0, 0, crate::forest::rng::Purpose::Growth);
        for _ in 0..200_000 {
            let u = s.uniform();
            for x in [
                u,
                u * 1e-9,
                1.0 - u * 0.5,
                1.0 + u * 1e6,
                f64::from(s.next_u32()) + 0.5,
            ] {
                let (a, b) = (ln(x), x.ln());
                assert!(
                    (a - b).abs() <= 1e-15 * b.abs().max(1e-300) + 1e-300,
                    "ln {x}: {a} vs {b}"
                );
            }
            for y in [-60.0 * u, 30.0 * u - 10.0, 700.0 * (2.0 * u - 1.0)] {
                let (a, b) = (exp(y), y.exp());
                assert!((a - b).abs() <= 1e-15 * b, "exp {y}: {a} vs {b}");
            }
        }
        assert_eq!(ln(1.0), 0.0);
        assert_eq!(exp(0.0), 1.0);
        assert!(ln(0.0).is_nan() && ln(-1.0).is_nan() && exp(f64::NAN).is_nan());
        assert_eq!(exp(-800.0), 0.0);
    }

    /// ln_1p against the platform's to 8e-16 relative (tiny x included: ln's 4e-16, two more
    /// roundings of 1.1e-16 each in x / (u − 1) and the product, the platform's own half ulp);
    /// cos_2pi against cos of the exact angle to 1e-15 absolute over (0, 1) and at the quarter
    /// turns.
    #[test]
    fn ln_1p_and_cos_2pi_agree_with_the_platforms() {
        let mut s =
            crate::forest::rng::Stream::new(2, 0, 0, 0, crate::forest::rng::Purpose::Growth);
        for _ in 0..200_000 {
            let u = s.uniform();
            for x in [-u * 0.5, -u * 1e-12, u, -0.999 * u] {
                let (a, b) = (ln_1p(x), x.ln_1p());
                assert!((a - b).abs() <= 8e-16 * b.abs(), "ln_1p {x}: {a} vs {b}");
            }
            let (a, b) = (cos_2pi(u), (std::f64::consts::TAU * u).cos());
            // TAU · u itself is rounded (≤ 4e-16 absolute near 2π): the tolerance covers it.
            assert!((a - b).abs() <= 1e-15, "cos_2pi {u}: {a} vs {b}");
        }
        for (u, c) in [
            (0.0, 1.0),
            (0.25, 0.0),
            (0.5, -1.0),
            (0.75, 0.0),
            (1.0, 1.0),
        ] {
            assert!((cos_2pi(u) - c).abs() < 1e-16, "{u}");
        }
        assert_eq!(ln_1p(0.0), 0.0);
    }

    /// The four- and eight-lane ln and exp give the scalar ones' bits.
    #[cfg(target_arch = "x86_64")]
    #[test]
    #[allow(unsafe_code)]
    fn four_lanes_give_the_scalar_bits() {
        use std::arch::x86_64::*;
        if !(std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma"))
        {
            return;
        }
        let wide = std::arch::is_x86_feature_detected!("avx512f");
        #[target_feature(enable = "avx512f,avx2")]
        fn both8(x: [f64; 4], y: [f64; 4]) -> ([f64; 4], [f64; 4]) {
            // The four values in lanes 0-3 and again in 4-7.
            let v = |a: [f64; 4]| _mm512_setr_pd(a[0], a[1], a[2], a[3], a[0], a[1], a[2], a[3]);
            let out = |v: __m512d| {
                let (lo, hi) = (_mm512_castpd512_pd256(v), _mm512_extractf64x4_pd::<1>(v));
                let pick = |h: __m256d, k: usize| {
                    let (a, b) = (_mm256_castpd256_pd128(h), _mm256_extractf128_pd::<1>(h));
                    [
                        _mm_cvtsd_f64(a),
                        _mm_cvtsd_f64(_mm_unpackhi_pd(a, a)),
                        _mm_cvtsd_f64(b),
                        _mm_cvtsd_f64(_mm_unpackhi_pd(b, b)),
                    ][k]
                };
                // Both copies must agree.
                let l = [0, 1, 2, 3].map(|k| pick(lo, k));
                let h = [0, 1, 2, 3].map(|k| pick(hi, k));
                if l.map(f64::to_bits) == h.map(f64::to_bits) {
                    l
                } else {
                    [f64::NAN; 4]
                }
            };
            (out(x8::ln(v(x))), out(x8::exp(v(y))))
        }
        #[target_feature(enable = "avx2,fma")]
        fn both(x: [f64; 4], y: [f64; 4]) -> ([f64; 4], [f64; 4]) {
            let out = |v: __m256d| {
                let (lo, hi) = (_mm256_castpd256_pd128(v), _mm256_extractf128_pd::<1>(v));
                [
                    _mm_cvtsd_f64(lo),
                    _mm_cvtsd_f64(_mm_unpackhi_pd(lo, lo)),
                    _mm_cvtsd_f64(hi),
                    _mm_cvtsd_f64(_mm_unpackhi_pd(hi, hi)),
                ]
            };
            let a = x4::ln(_mm256_setr_pd(x[0], x[1], x[2], x[3]));
            let b = x4::exp(_mm256_setr_pd(y[0], y[1], y[2], y[3]));
            (out(a), out(b))
        }
        let mut s =
            crate::forest::rng::Stream::new(2, 0, 0, 0, crate::forest::rng::Purpose::Growth);
        let mut specials = vec![
            f64::MIN_POSITIVE,
            f64::MAX,
            1.0,
            std::f64::consts::SQRT_2,
            std::f64::consts::SQRT_2.next_up(),
            0.5,
            2f64.powi(-33),
        ];
        specials.resize(8, 1.0);
        for i in 0..400_000 {
            let u = s.uniform();
            let x = if i < 2 {
                [0, 1, 2, 3].map(|k| specials[4 * i + k])
            } else {
                [u, u * 1e-9, 1.0 + u * 1e6, f64::from(s.next_u32()) + 0.5]
            };
            let y = if i == 0 {
                [-700.0, 700.0, 0.0, -0.0]
            } else {
                [
                    -60.0 * u,
                    30.0 * u - 10.0,
                    700.0 * (2.0 * u - 1.0),
                    s.uniform() - 0.5,
                ]
            };
            // SAFETY: AVX2 and FMA were detected above.
            let (a, b) = unsafe { both(x, y) };
            for k in 0..4 {
                assert_eq!(a[k].to_bits(), ln(x[k]).to_bits(), "ln {}", x[k]);
                assert_eq!(b[k].to_bits(), exp(y[k]).to_bits(), "exp {}", y[k]);
            }
            if wide {
                // SAFETY: AVX-512F was detected above (and implies AVX2).
                let (a, b) = unsafe { both8(x, y) };
                for k in 0..4 {
                    assert_eq!(a[k].to_bits(), ln(x[k]).to_bits(), "ln8 {}", x[k]);
                    assert_eq!(b[k].to_bits(), exp(y[k]).to_bits(), "exp8 {}", y[k]);
                }
            }
        }
    }
}
