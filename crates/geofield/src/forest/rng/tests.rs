//! The generator's tests: known answers, the laws' moments, edge cases.

use super::*;

/// Random123's known-answer vectors for Philox4x32-10 (its `kat_vectors` file).
#[test]
fn philox_matches_the_known_answers() {
    assert_eq!(
        philox4x32_10([0; 4], [0; 2]),
        [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]
    );
    assert_eq!(
        philox4x32_10([u32::MAX; 4], [u32::MAX; 2]),
        [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]
    );
    assert_eq!(
        philox4x32_10(
            [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344],
            [0xa4093822, 0x299f31d0]
        ),
        [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1]
    );
}

/// Eight lanes of the AVX2 Philox equal the scalar one, bit for bit.
#[cfg(target_arch = "x86_64")]
#[test]
#[allow(unsafe_code)]
fn philox_x8_matches_the_scalar_philox() {
    use std::arch::x86_64::*;
    if !std::arch::is_x86_feature_detected!("avx2") {
        return;
    }
    #[target_feature(enable = "avx2")]
    fn run(c: &[[u32; 4]; 8], key: [u32; 2]) -> [[u32; 4]; 8] {
        let word = |k: usize| {
            let w = |i: usize| c[i][k] as i32;
            _mm256_setr_epi32(w(0), w(1), w(2), w(3), w(4), w(5), w(6), w(7))
        };
        let y = philox4x32_10_x8([word(0), word(1), word(2), word(3)], key);
        let mut out = [[0u32; 4]; 8];
        for (k, v) in y.iter().enumerate() {
            let lanes = [
                _mm256_extract_epi32::<0>(*v),
                _mm256_extract_epi32::<1>(*v),
                _mm256_extract_epi32::<2>(*v),
                _mm256_extract_epi32::<3>(*v),
                _mm256_extract_epi32::<4>(*v),
                _mm256_extract_epi32::<5>(*v),
                _mm256_extract_epi32::<6>(*v),
                _mm256_extract_epi32::<7>(*v),
            ];
            for (i, x) in lanes.into_iter().enumerate() {
                out[i][k] = x as u32;
            }
        }
        out
    }
    let mut s = Stream::new(1, 0, 0, 0, Purpose::Growth);
    for _ in 0..1000 {
        let mut c = [[0u32; 4]; 8];
        for w in c.iter_mut().flatten() {
            *w = s.next_u32();
        }
        c[0] = [u32::MAX; 4];
        let key = [s.next_u32(), s.next_u32()];
        // SAFETY: AVX2 was detected above.
        let got = unsafe { run(&c, key) };
        for i in 0..8 {
            assert_eq!(got[i], philox4x32_10(c[i], key));
        }
    }
}

/// Sixteen lanes of the AVX-512 Philox equal the scalar one, bit for bit.
#[cfg(target_arch = "x86_64")]
#[test]
#[allow(unsafe_code)]
fn philox_x16_matches_the_scalar_philox() {
    use std::arch::x86_64::*;
    if !std::arch::is_x86_feature_detected!("avx512f") {
        return;
    }
    #[target_feature(enable = "avx512f,avx2")]
    fn run(c: &[[u32; 4]; 16], key: [u32; 2]) -> [[u32; 4]; 16] {
        let word = |k: usize| {
            let w = |i: usize| c[i][k] as i32;
            _mm512_setr_epi32(
                w(0),
                w(1),
                w(2),
                w(3),
                w(4),
                w(5),
                w(6),
                w(7),
                w(8),
                w(9),
                w(10),
                w(11),
                w(12),
                w(13),
                w(14),
                w(15),
            )
        };
        let y = philox4x32_10_x16([word(0), word(1), word(2), word(3)], key);
        let mut out = [[0u32; 4]; 16];
        for (k, v) in y.iter().enumerate() {
            for (h, half) in [
                _mm512_castsi512_si256(*v),
                _mm512_extracti64x4_epi64::<1>(*v),
            ]
            .into_iter()
            .enumerate()
            {
                let lanes = [
                    _mm256_extract_epi32::<0>(half),
                    _mm256_extract_epi32::<1>(half),
                    _mm256_extract_epi32::<2>(half),
                    _mm256_extract_epi32::<3>(half),
                    _mm256_extract_epi32::<4>(half),
                    _mm256_extract_epi32::<5>(half),
                    _mm256_extract_epi32::<6>(half),
                    _mm256_extract_epi32::<7>(half),
                ];
                for (i, x) in lanes.into_iter().enumerate() {
                    out[8 * h + i][k] = x as u32;
                }
            }
        }
        out
    }
    let mut s = Stream::new(3, 0, 0, 0, Purpose::Growth);
    for _ in 0..1000 {
        let mut c = [[0u32; 4]; 16];
        for w in c.iter_mut().flatten() {
            *w = s.next_u32();
        }
        c[15] = [u32::MAX; 4];
        let key = [s.next_u32(), s.next_u32()];
        // SAFETY: AVX-512F was detected above (and implies AVX2).
        let got = unsafe { run(&c, key) };
        for i in 0..16 {
            assert_eq!(got[i], philox4x32_10(c[i], key));
        }
    }
}

#[test]
fn streams_are_reproducible_and_distinct() {
    let draw = |s: &mut Stream| (0..9).map(|_| s.next_u32()).collect::<Vec<_>>();
    let a = draw(&mut Stream::new(7, 3, 1, 42, Purpose::SeedCount));
    assert_eq!(a, draw(&mut Stream::new(7, 3, 1, 42, Purpose::SeedCount)));
    for other in [
        Stream::new(8, 3, 1, 42, Purpose::SeedCount),
        Stream::new(7, 4, 1, 42, Purpose::SeedCount),
        Stream::new(7, 3, 2, 42, Purpose::SeedCount),
        Stream::new(7, 3, 1, 43, Purpose::SeedCount),
        Stream::new(7, 3, 1, 42 + (1 << 32), Purpose::SeedCount),
        Stream::new(7, 3, 1, 42, Purpose::Growth),
    ] {
        assert_ne!(a, draw(&mut other.clone()), "{other:?}");
    }
}

#[test]
fn ln_factorial_is_exact_to_rounding() {
    // Against a running sum of logs (exact to rounding) across the table's edge.
    let mut sum = 0.0f64;
    for n in 1..200u64 {
        sum += (n as f64).ln();
        let got = ln_factorial(n);
        assert!(
            (got - sum).abs() <= 1e-12 * sum.max(1.0),
            "{n}: {got} vs {sum}"
        );
    }
    assert_eq!(ln_factorial(0), 0.0);
}

/// Mean and variance of `n` draws; |z| of each against the expected moments must stay
/// below 5 (a false failure has probability ~6e-7 per check at these sample sizes, where the
/// sample variance is near normal).
fn check_moments(name: &str, xs: &[f64], mean: f64, var: f64, kurtosis_excess: f64) {
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    let v = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0);
    let z_mean = (m - mean) / (var / n).sqrt();
    // Var of the sample variance ≈ σ⁴ (2/(n-1) + κ/n), κ the excess kurtosis.
    let z_var = (v - var) / (var * var * (2.0 / (n - 1.0) + kurtosis_excess / n)).sqrt();
    assert!(
        z_mean.abs() < 5.0,
        "{name}: mean {m} vs {mean} (z {z_mean:.2})"
    );
    assert!(
        z_var.abs() < 5.0,
        "{name}: variance {v} vs {var} (z {z_var:.2})"
    );
}

#[test]
fn uniform_and_normal_have_their_moments() {
    let mut s = Stream::new(1, 0, 0, 0, Purpose::Growth);
    let u: Vec<f64> = (0..200_000).map(|_| s.uniform()).collect();
    assert!(u.iter().all(|&x| x > 0.0 && x < 1.0));
    check_moments("uniform", &u, 0.5, 1.0 / 12.0, -1.2);
    // 100 bins, chi-square with 99 degrees of freedom: mean 99, sd 14; < 99 + 5 sd.
    let mut bins = [0u32; 100];
    for &x in &u {
        bins[(x * 100.0) as usize] += 1;
    }
    let e = u.len() as f64 / 100.0;
    let chi2: f64 = bins.iter().map(|&b| (f64::from(b) - e).powi(2) / e).sum();
    assert!(chi2 < 99.0 + 5.0 * 14.07, "chi-square {chi2}");
    let z: Vec<f64> = (0..200_000).map(|_| s.normal()).collect();
    check_moments("normal", &z, 0.0, 1.0, 0.0);
}

#[test]
fn poisson_has_its_moments_on_both_algorithms() {
    for (i, &lambda) in [0.05, 1.0, 3.7, 9.99, 10.0, 57.3, 1e4].iter().enumerate() {
        let mut s = Stream::new(2, 0, 0, i as u64, Purpose::SeedCount);
        let x: Vec<f64> = (0..200_000).map(|_| s.poisson(lambda) as f64).collect();
        check_moments(
            &format!("poisson {lambda}"),
            &x,
            lambda,
            lambda,
            1.0 / lambda,
        );
        // P(0) = e^{-λ}: binomial count of zeros within 5 sd.
        let p0 = (-lambda).exp();
        let zeros = x.iter().filter(|&&k| k == 0.0).count() as f64;
        let sd = (x.len() as f64 * p0 * (1.0 - p0)).sqrt().max(1.0);
        assert!(
            (zeros - x.len() as f64 * p0).abs() < 5.0 * sd + 1.0,
            "poisson {lambda}: {zeros} zeros"
        );
    }
    let mut s = Stream::new(2, 0, 0, 99, Purpose::SeedCount);
    assert_eq!(s.poisson(0.0), 0);
    assert_eq!(s.poisson(f64::NAN), 0);
}

#[test]
fn gamma_and_negative_binomial_have_their_moments() {
    for (i, &a) in [0.3, 1.0, 2.5, 40.0].iter().enumerate() {
        let mut s = Stream::new(3, 0, 0, i as u64, Purpose::Fecundity);
        let x: Vec<f64> = (0..200_000).map(|_| s.gamma(a)).collect();
        assert!(x.iter().all(|&g| g > 0.0));
        check_moments(&format!("gamma {a}"), &x, a, a, 6.0 / a);
    }
    for (i, &(m, k)) in [(0.5, 0.8), (4.0, 2.0), (30.0, 5.0)].iter().enumerate() {
        let mut s = Stream::new(4, 0, 0, i as u64, Purpose::SeedCount);
        let x: Vec<f64> = (0..200_000)
            .map(|_| s.negative_binomial(m, k) as f64)
            .collect();
        let var = m + m * m / k;
        // Excess kurtosis of the negative binomial with r = k, p = k/(k+m): 6/r + p²/(r(1-p)).
        let p = k / (k + m);
        let kurt = 6.0 / k + p * p / (k * (1.0 - p));
        check_moments(&format!("negative binomial {m}, {k}"), &x, m, var, kurt);
    }
}
/// Both paths of the binomial (geometric skips ≤ 256 trials, with p above and below ½;
/// the order-statistic split above), against the law's mean, variance and excess kurtosis
/// (1 − 6pq)/(npq); P(0) = qⁿ as a binomial count within 5 sd.
#[test]
fn binomial_has_its_moments_on_both_paths() {
    let cases = [
        (10u64, 0.3),
        (64, 0.02),
        (200, 0.93),
        (300, 0.7),
        (1_000_000, 0.013),
        (5, 0.999),
    ];
    for (i, &(n, p)) in cases.iter().enumerate() {
        let mut s = Stream::new(6, 0, 0, i as u64, Purpose::Establishment);
        let x: Vec<f64> = (0..200_000).map(|_| s.binomial(n, p) as f64).collect();
        assert!(x.iter().all(|&k| k <= n as f64));
        let nf = n as f64;
        let (m, v) = (nf * p, nf * p * (1.0 - p));
        check_moments(
            &format!("binomial {n}, {p}"),
            &x,
            m,
            v,
            (1.0 - 6.0 * p * (1.0 - p)) / v,
        );
        let p0 = (1.0 - p).powf(nf);
        let zeros = x.iter().filter(|&&k| k == 0.0).count() as f64;
        let sd = (x.len() as f64 * p0 * (1.0 - p0)).sqrt().max(1.0);
        assert!(
            (zeros - x.len() as f64 * p0).abs() < 5.0 * sd + 1.0,
            "binomial {n}, {p}: {zeros} zeros"
        );
    }
    let mut s = Stream::new(6, 0, 0, 99, Purpose::Establishment);
    assert_eq!(s.binomial(0, 0.5), 0);
    assert_eq!(s.binomial(7, 0.0), 0);
    assert_eq!(s.binomial(7, 1.0), 7);
    assert_eq!(s.binomial(7, f64::NAN), 0);
}
