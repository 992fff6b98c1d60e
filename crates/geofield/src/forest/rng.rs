//! Counter-based random numbers: Philox4x32-10 and the draws the forest model needs.
//!
//! **Philox4x32-10** (Salmon, Moraes, Dror and Shaw 2011, "Parallel random numbers: as easy as
//! 1, 2, 3", SC11) maps a 128-bit counter and a 64-bit key to 128 random bits by ten rounds of
//! two 32 × 32 → 64-bit multiplications (by 0xD2511F53 and 0xCD9E8D57) in a Feistel-like network,
//! the key bumped by the Weyl constants (0x9E3779B9, 0xBB67AE85) before every round after the
//! first. It passes TestU01's BigCrush and is cuRAND's `curand_Philox4x32_10`. Written here from
//! the paper's definition; checked against the Random123 distribution's known-answer vectors.
//!
//! A [`Stream`] is the sequence of one (run seed, year, species, id, purpose): the key is the
//! run seed, the counter holds the id (a cell or tree, up to 2⁴⁸), the species and the purpose
//! (one byte each), the year (32 bits) and the draw's block index (32 bits, four u32 per block).
//! Two different tuples never share a counter, so their draws are independent; the same tuple
//! always gives the same draws, whichever thread or device asks.
//!
//! Distributions (each consumes a variable number of u32 from its stream, so a draw is
//! reproducible as long as the stream's earlier draws are):
//! - uniform ([`Stream::uniform`]): 53 random bits in the open interval (0, 1);
//! - normal ([`Stream::normal`]): Box–Muller;
//! - Poisson ([`Stream::poisson`]): inversion of the CDF (one uniform) below λ = 10, Hörmann's
//!   (1993) transformed rejection with squeeze (PTRS) from 10 up;
//! - gamma ([`Stream::gamma`]): Marsaglia and Tsang (2000), with the U^(1/a) boost below shape 1;
//! - negative binomial ([`Stream::negative_binomial`]): a Poisson of a gamma-distributed mean
//!   (mean m, clumping k: variance m + m²/k, SORTIE-ND's parameterisation);
//! - lognormal ([`Stream::lognormal`]): exp of a normal.
//!
//! Their logarithms, exponentials and cosines are [`super::exact_math`]'s (FMA polynomials,
//! correctly rounded basic operations only), so the GPU's mirror of these draws
//! (`geofield-cuda/kernels/forest_year.cu`) gives the same integers to the bit.

use super::exact_math::{cos_2pi, exp, ln, ln_1p};

/// Philox4x32's multipliers and key increments.
const M0: u64 = 0xD251_1F53;
const M1: u64 = 0xCD9E_8D57;
const W0: u32 = 0x9E37_79B9;
const W1: u32 = 0xBB67_AE85;

/// Philox4x32 with `rounds` rounds of `ctr` under `key` (10 rounds is Philox4x32-10).
pub fn philox4x32(rounds: u32, ctr: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let (mut x, mut k) = (ctr, key);
    for r in 0..rounds {
        if r > 0 {
            k = [k[0].wrapping_add(W0), k[1].wrapping_add(W1)];
        }
        let p0 = M0 * u64::from(x[0]);
        let p1 = M1 * u64::from(x[2]);
        x = [
            (p1 >> 32) as u32 ^ x[1] ^ k[0],
            p1 as u32,
            (p0 >> 32) as u32 ^ x[3] ^ k[1],
            p0 as u32,
        ];
    }
    x
}

/// Philox4x32-10.
pub fn philox4x32_10(ctr: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    philox4x32(10, ctr, key)
}

/// [`philox4x32_10`] of eight counters at once (AVX2): lane i of `x[k]` is word k of counter i,
/// all under `key`; returns the eight blocks the same way. The very same integer operations
/// lane by lane (the 32 × 32 → 64-bit products by `_mm256_mul_epu32` on the even and odd lanes),
/// so the same bits.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(crate) fn philox4x32_10_x8(
    x: [std::arch::x86_64::__m256i; 4],
    key: [u32; 2],
) -> [std::arch::x86_64::__m256i; 4] {
    use std::arch::x86_64::*;
    // `_mm256_mul_epu32` multiplies the low 32 bits of each 64-bit lane.
    let (m0, m1) = (_mm256_set1_epi64x(M0 as i64), _mm256_set1_epi64x(M1 as i64));
    let [mut x0, mut x1, mut x2, mut x3] = x;
    let mut k = key;
    for r in 0..10 {
        if r > 0 {
            k = [k[0].wrapping_add(W0), k[1].wrapping_add(W1)];
        }
        let (hi0, lo0) = mul_hi_lo(x0, m0);
        let (hi1, lo1) = mul_hi_lo(x2, m1);
        let k0 = _mm256_set1_epi32(k[0] as i32);
        let k1 = _mm256_set1_epi32(k[1] as i32);
        x0 = _mm256_xor_si256(_mm256_xor_si256(hi1, x1), k0);
        x1 = lo1;
        x2 = _mm256_xor_si256(_mm256_xor_si256(hi0, x3), k1);
        x3 = lo0;
    }
    [x0, x1, x2, x3]
}

/// [`philox4x32_10_x8`] on sixteen counters (AVX-512F).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(crate) fn philox4x32_10_x16(
    x: [std::arch::x86_64::__m512i; 4],
    key: [u32; 2],
) -> [std::arch::x86_64::__m512i; 4] {
    use std::arch::x86_64::*;
    let (m0, m1) = (_mm512_set1_epi64(M0 as i64), _mm512_set1_epi64(M1 as i64));
    let mul_hi_lo = |x: __m512i, m: __m512i| {
        let even = _mm512_mul_epu32(x, m);
        let odd = _mm512_mul_epu32(_mm512_srli_epi64::<32>(x), m);
        let hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64::<32>(even), odd);
        let lo = _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64::<32>(odd));
        (hi, lo)
    };
    let [mut x0, mut x1, mut x2, mut x3] = x;
    let mut k = key;
    for r in 0..10 {
        if r > 0 {
            k = [k[0].wrapping_add(W0), k[1].wrapping_add(W1)];
        }
        let (hi0, lo0) = mul_hi_lo(x0, m0);
        let (hi1, lo1) = mul_hi_lo(x2, m1);
        x0 = _mm512_xor_si512(_mm512_xor_si512(hi1, x1), _mm512_set1_epi32(k[0] as i32));
        x1 = lo1;
        x2 = _mm512_xor_si512(_mm512_xor_si512(hi0, x3), _mm512_set1_epi32(k[1] as i32));
        x3 = lo0;
    }
    [x0, x1, x2, x3]
}

/// The high and low 32 bits of the eight products x · m (m in the low half of each 64-bit lane).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn mul_hi_lo(
    x: std::arch::x86_64::__m256i,
    m: std::arch::x86_64::__m256i,
) -> (std::arch::x86_64::__m256i, std::arch::x86_64::__m256i) {
    use std::arch::x86_64::*;
    let even = _mm256_mul_epu32(x, m);
    let odd = _mm256_mul_epu32(_mm256_srli_epi64::<32>(x), m);
    let hi = _mm256_blend_epi32::<0xAA>(_mm256_srli_epi64::<32>(even), odd);
    let lo = _mm256_blend_epi32::<0xAA>(even, _mm256_slli_epi64::<32>(odd));
    (hi, lo)
}

/// What a stream's draws are for (one byte of the counter), so that two sub-models drawing for
/// the same cell, species and year never share numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Purpose {
    Masting = 1,
    Fecundity = 2,
    SeedCount = 3,
    SeedPlacement = 4,
    Establishment = 5,
    Growth = 6,
    Mortality = 7,
    /// A seed landing under the other cover (gap or canopy) surviving.
    Survival = 8,
}

/// Largest id a stream takes (48 bits).
pub const MAX_ID: u64 = (1 << 48) - 1;

/// The draws of one (run seed, year, species, id, purpose); see the [module docs](self).
#[derive(Debug, Clone)]
pub struct Stream {
    key: [u32; 2],
    ctr: [u32; 4],
    block: [u32; 4],
    used: usize,
}

impl Stream {
    /// The stream of `id` (a cell or tree index, at most [`MAX_ID`]; larger ids are folded into
    /// range, which a caller must not rely on) for `species` (< 256) in `year`.
    pub fn new(seed: u64, year: u32, species: u8, id: u64, purpose: Purpose) -> Self {
        let id = id & MAX_ID;
        Stream {
            key: [seed as u32, (seed >> 32) as u32],
            ctr: [
                0,
                id as u32,
                ((id >> 32) as u32) | (u32::from(species) << 16) | ((purpose as u32) << 24),
                year,
            ],
            block: [0; 4],
            used: 4,
        }
    }

    /// The counter of the stream's next block and its key (Philox's inputs).
    pub(crate) fn counter_and_key(&self) -> ([u32; 4], [u32; 2]) {
        (self.ctr, self.key)
    }

    /// The next 32 random bits.
    pub fn next_u32(&mut self) -> u32 {
        if self.used == 4 {
            self.block = philox4x32_10(self.ctr, self.key);
            // 2³² blocks (2³⁴ values) per stream before the index wraps: far more than any draw
            // of a cell or tree in a year takes.
            self.ctr[0] = self.ctr[0].wrapping_add(1);
            self.used = 0;
        }
        let v = self.block[self.used];
        self.used += 1;
        v
    }

    /// Uniform in the open interval (0, 1), 53 random bits.
    pub fn uniform(&mut self) -> f64 {
        let a = u64::from(self.next_u32() >> 5); // 27 bits
        let b = u64::from(self.next_u32() >> 6); // 26 bits
        (((a << 26) | b) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64)
    }

    /// Standard normal (Box–Muller, one value per two uniforms).
    pub fn normal(&mut self) -> f64 {
        let (u1, u2) = (self.uniform(), self.uniform());
        (-2.0 * ln(u1)).sqrt() * cos_2pi(u2)
    }

    /// exp(μ + σ Z), Z standard normal.
    pub fn lognormal(&mut self, mu: f64, sigma: f64) -> f64 {
        exp(mu + sigma * self.normal())
    }

    /// Poisson with mean `lambda` (0 for λ ≤ 0 or not finite).
    pub fn poisson(&mut self, lambda: f64) -> u64 {
        if !(lambda > 0.0 && lambda.is_finite()) {
            return 0;
        }
        if lambda < 10.0 {
            // Inversion: the smallest k with F(k) ≥ u, summing P(k) = P(k−1) λ/k upwards from
            // e^{−λ}; one uniform (Knuth's product method takes k + 1). Where rounding leaves
            // F(k) a few ulps below 1 (u above it: probability ~1e-16), the tail is cut at
            // k = 200, where P(k) < 1e-160 for every λ < 10.
            let u = self.uniform();
            let (mut k, mut p) = (0u64, exp(-lambda));
            let mut f = p;
            while u > f && k < 200 {
                k += 1;
                p *= lambda / k as f64;
                f += p;
            }
            return k;
        }
        // PTRS: Hörmann (1993), Insurance: Mathematics and Economics 12, 39-45, with his
        // constants; the acceptance test with ln k! from `ln_factorial`.
        let slam = lambda.sqrt();
        let loglam = ln(lambda);
        let b = 0.931 + 2.53 * slam;
        let a = -0.059 + 0.02483 * b;
        let inv_alpha = 1.1239 + 1.1328 / (b - 3.4);
        let vr = 0.9277 - 3.6224 / (b - 2.0);
        loop {
            let u = self.uniform() - 0.5;
            let v = self.uniform();
            let us = 0.5 - u.abs();
            let k = ((2.0 * a / us + b) * u + lambda + 0.43).floor();
            if us >= 0.07 && v <= vr {
                return k as u64;
            }
            if k < 0.0 || (us < 0.013 && v > us) {
                continue;
            }
            let lhs = ln(v) + ln(inv_alpha) - ln(a / (us * us) + b);
            if lhs <= -lambda + k * loglam - ln_factorial(k as u64) {
                return k as u64;
            }
        }
    }

    /// Gamma with shape `shape` and scale 1 (0 for shape ≤ 0 or not finite).
    pub fn gamma(&mut self, shape: f64) -> f64 {
        if !(shape > 0.0 && shape.is_finite()) {
            return 0.0;
        }
        if shape < 1.0 {
            // G(a) = G(a + 1) · U^{1/a}.
            let g = self.gamma(shape + 1.0);
            return g * exp(ln(self.uniform()) / shape);
        }
        let d = shape - 1.0 / 3.0;
        let c = 1.0 / (9.0 * d).sqrt();
        loop {
            let x = self.normal();
            let t = 1.0 + c * x;
            if t <= 0.0 {
                continue;
            }
            let v = t * t * t;
            let u = self.uniform();
            if u < 1.0 - 0.0331 * x * x * x * x {
                return d * v;
            }
            if ln(u) < 0.5 * x * x + d * (1.0 - v + ln(v)) {
                return d * v;
            }
        }
    }

    /// Negative binomial with mean `mean` and clumping `k` (variance mean + mean²/k): a Poisson
    /// whose mean is gamma distributed with shape k and scale mean/k. k = ∞ is the Poisson.
    pub fn negative_binomial(&mut self, mean: f64, k: f64) -> u64 {
        if !(mean > 0.0 && mean.is_finite()) {
            return 0;
        }
        if k.is_infinite() && k > 0.0 {
            return self.poisson(mean);
        }
        let lambda = self.gamma(k) * mean / k;
        self.poisson(lambda)
    }
    /// Binomial: successes of `n` trials of probability `p` (0 for p ≤ 0 or NaN, n for p ≥ 1).
    /// Above 256 trials, the order-statistic split (Knuth, TAOCP vol. 2, §3.4.1 F): the a-th of
    /// n uniforms, a = 1 + n/2, is Beta(a, n + 1 − a); if it is ≥ p the successes are among
    /// the a − 1 below it with probability p/X, else a plus those among the n − a above it with
    /// (p − X)/(1 − X); each step halves n. Then geometric skips between successes (ln U /
    /// ln(1 − p), with p ≤ ½ by symmetry): about n·p + 1 uniforms. Exact in distribution.
    pub fn binomial(&mut self, n: u64, p: f64) -> u64 {
        if n == 0 || p.is_nan() || p <= 0.0 {
            return 0;
        }
        if p >= 1.0 {
            return n;
        }
        let (mut n, mut p, mut acc) = (n, p, 0u64);
        while n > 256 {
            let a = 1 + n / 2;
            let ga = self.gamma(a as f64);
            let gb = self.gamma((n + 1 - a) as f64);
            let x = ga / (ga + gb);
            if x >= p {
                n = a - 1;
                p /= x;
            } else {
                acc += a;
                n -= a;
                p = (p - x) / (1.0 - x);
            }
        }
        let flip = p > 0.5;
        let q = if flip { 1.0 - p } else { p };
        let mut k = 0u64;
        if q > 0.0 {
            let ln_miss = ln_1p(-q);
            let mut i = 0.0f64; // trials used
            loop {
                i += (ln(self.uniform()) / ln_miss).floor() + 1.0;
                if i > n as f64 {
                    break;
                }
                k += 1;
            }
        }
        acc + if flip { n - k } else { k }
    }
}

/// ln n!: exact sums below 20 (a table), Stirling's series with three terms above (error below
/// 1e-14 relative there).
pub fn ln_factorial(n: u64) -> f64 {
    const SMALL: usize = 20;
    if (n as usize) < SMALL {
        return (2..=n).map(|i| ln(i as f64)).sum();
    }
    let x = n as f64 + 1.0; // ln Γ(x)
    let (x2, x3) = (x * x, x * x * x);
    (x - 0.5) * ln(x) - x + 0.5 * ln(std::f64::consts::TAU) + 1.0 / (12.0 * x) - 1.0 / (360.0 * x3)
        + 1.0 / (1260.0 * (x3 * x2))
}

#[cfg(test)]
mod tests;
