#line 2 "forest_draws.cu"
// forest_draws.cu: the random draws of the forest's yearly loop on the device (forest_year.cu's
// kernels; crates/geofield/src/forest/rng.rs and seed_counts.rs on the CPU), and the constants
// the kernels share. Every draw is the CPU's, to the bit:
//
//   * FyStream mirrors rng.rs's Stream (Philox4x32-10 keyed by the run seed; counter = [block,
//     id low 32 bits, id bits 32..48 | species << 16 | purpose << 24, year]) and its draws:
//     uniform, normal (Box-Muller with exact_math's cos_2pi), Poisson (inversion below 10, PTRS
//     above), gamma (Marsaglia-Tsang), negative binomial, lognormal, binomial (order-statistic
//     split above 256 trials, then geometric skips), random rounding.
//   * Every f64 +, -, *, / is an explicit .rn instruction (gf_*_rn: never contracted into an
//     FMA), FMAs are explicit where the Rust code calls mul_add, square roots are __dsqrt_rn, and
//     ln, exp, ln_1p and cos_2pi are exact_math's polynomials (forest.cu's fo_ln and fo_exp
//     and the two below), so each outcome is the same integer on both sides.
//

#define FY_THREADS 256
// Values per block of the scans: 16 per thread.
#define FY_PER_THREAD 16
#define FY_CHUNK (FY_THREADS * FY_PER_THREAD)
#define FY_MAX_ID 0xFFFFFFFFFFFFull

// rng.rs's Purpose.
#define FY_SEED_COUNT 3u
#define FY_ESTABLISHMENT 5u
#define FY_MORTALITY 7u

// f32 -> f64 exactly, subnormals kept (a plain conversion flushes them under --use_fast_math).
__device__ __forceinline__ double fy_widen(float x) {
    double r;
    asm("cvt.f64.f32 %0, %1;" : "=d"(r) : "f"(x));
    return r;
}

// ---------------------------------------------------------------------------------------------
// exact_math's ln_1p and cos_2pi.
// ---------------------------------------------------------------------------------------------
__device__ __forceinline__ double fy_ln_1p(double x) {
    const double u = gf_add_rn(1.0, x);
    if (u == 1.0) return x;
    return gf_mul_rn(fo_ln(u), gf_div_rn(x, gf_sub_rn(u, 1.0)));
}

__device__ __forceinline__ double fy_cos_2pi(double u) {
    if (!isfinite(u)) return __longlong_as_double(0x7FF8000000000000ll);
    const double w = gf_mul_rn(4.0, u);
    const double k = floor(gf_add_rn(w, 0.5));
    const double a = gf_mul_rn(gf_sub_rn(w, k), 0x1.921fb54442d18p+0);
    const double a2 = gf_mul_rn(a, a);
    // k.rem_euclid(4) (k a small whole number; two's complement & 3 is the Euclidean remainder).
    const int quarter = (int)((long long)k & 3ll);
    if ((quarter & 1) == 0) {
        double p = 0x1.ae7f3e733b81fp-45;           // 1/16!
        p = gf_fma_rn(p, a2, -0x1.93974a8c07c9dp-37);  // -1/14!
        p = gf_fma_rn(p, a2, 0x1.1eed8eff8d898p-29);   // 1/12!
        p = gf_fma_rn(p, a2, -0x1.27e4fb7789f5cp-22);  // -1/10!
        p = gf_fma_rn(p, a2, 0x1.a01a01a01a01ap-16);   // 1/8!
        p = gf_fma_rn(p, a2, -0x1.6c16c16c16c17p-10);  // -1/6!
        p = gf_fma_rn(p, a2, 0x1.5555555555555p-5);    // 1/4!
        p = gf_fma_rn(p, a2, -0.5);                    // -1/2!
        const double c = gf_fma_rn(p, a2, 1.0);
        return quarter == 0 ? c : -c;
    }
    double p = 0x1.952c77030ad4ap-49;           // 1/17!
    p = gf_fma_rn(p, a2, -0x1.ae7f3e733b81fp-41);  // -1/15!
    p = gf_fma_rn(p, a2, 0x1.6124613a86d09p-33);   // 1/13!
    p = gf_fma_rn(p, a2, -0x1.ae64567f544e4p-26);  // -1/11!
    p = gf_fma_rn(p, a2, 0x1.71de3a556c734p-19);   // 1/9!
    p = gf_fma_rn(p, a2, -0x1.a01a01a01a01ap-13);  // -1/7!
    p = gf_fma_rn(p, a2, 0x1.1111111111111p-7);    // 1/5!
    p = gf_fma_rn(p, a2, -0x1.5555555555555p-3);   // -1/3!
    const double s = gf_fma_rn(gf_mul_rn(a, a2), p, a);
    return quarter == 1 ? -s : s;
}

// ---------------------------------------------------------------------------------------------
// rng.rs's Stream and its draws.
// ---------------------------------------------------------------------------------------------
struct FyStream {
    u32 k0, k1, c0, c1, c2, c3;
    uint4 b;
    int used;
};

__device__ __forceinline__ FyStream fy_stream(u32 k0, u32 k1, u32 year, u32 species, u64 id,
                                              u32 purpose) {
    id &= FY_MAX_ID;
    FyStream s;
    s.k0 = k0;
    s.k1 = k1;
    s.c0 = 0u;
    s.c1 = (u32)id;
    s.c2 = ((u32)(id >> 32)) | (species << 16) | (purpose << 24);
    s.c3 = year;
    s.b = make_uint4(0u, 0u, 0u, 0u);
    s.used = 4;
    return s;
}

__device__ __forceinline__ u32 fy_next(FyStream& s) {
    if (s.used == 4) {
        s.b = fo_philox(s.c0, s.c1, s.c2, s.c3, s.k0, s.k1);
        s.c0 += 1u;
        s.used = 0;
    }
    const int i = s.used++;
    return i == 0 ? s.b.x : i == 1 ? s.b.y : i == 2 ? s.b.z : s.b.w;
}

__device__ __forceinline__ double fy_uniform(FyStream& s) {
    const u64 a = (u64)(fy_next(s) >> 5);
    const u64 b = (u64)(fy_next(s) >> 6);
    return gf_mul_rn(gf_add_rn((double)((a << 26) | b), 0.5), 0x1p-53);
}

__device__ __forceinline__ double fy_normal(FyStream& s) {
    const double u1 = fy_uniform(s);
    const double u2 = fy_uniform(s);
    return gf_mul_rn(__dsqrt_rn(gf_mul_rn(-2.0, fo_ln(u1))), fy_cos_2pi(u2));
}

__device__ __forceinline__ double fy_lognormal(FyStream& s, double mu, double sigma) {
    return fo_exp(gf_add_rn(mu, gf_mul_rn(sigma, fy_normal(s))));
}

// rng.rs ln_factorial.
__device__ __forceinline__ double fy_ln_factorial(u64 n) {
    if (n < 20ull) {
        double sum = -0.0;
        for (u64 i = 2; i <= n; ++i) sum = gf_add_rn(sum, fo_ln((double)i));
        return sum;
    }
    const double x = gf_add_rn((double)n, 1.0);
    const double x2 = gf_mul_rn(x, x);
    const double x3 = gf_mul_rn(gf_mul_rn(x, x), x);
    double r = gf_mul_rn(gf_sub_rn(x, 0.5), fo_ln(x));
    r = gf_sub_rn(r, x);
    r = gf_add_rn(r, gf_mul_rn(0.5, fo_ln(0x1.921fb54442d18p+2)));
    r = gf_add_rn(r, gf_div_rn(1.0, gf_mul_rn(12.0, x)));
    r = gf_sub_rn(r, gf_div_rn(1.0, gf_mul_rn(360.0, x3)));
    r = gf_add_rn(r, gf_div_rn(1.0, gf_mul_rn(1260.0, gf_mul_rn(x3, x2))));
    return r;
}

// f64 -> u64 as Rust's `as` (saturating; NaN -> 0).
__device__ __forceinline__ u64 fy_to_u64(double k) {
    if (!(k > 0.0)) return 0ull;
    if (k >= 18446744073709551616.0) return 0xFFFFFFFFFFFFFFFFull;
    return (u64)k;
}

__device__ u64 fy_poisson(FyStream& s, double lambda) {
    if (!(lambda > 0.0 && isfinite(lambda))) return 0ull;
    if (lambda < 10.0) {
        const double u = fy_uniform(s);
        u64 k = 0ull;
        double p = fo_exp(-lambda);
        double f = p;
        while (u > f && k < 200ull) {
            k += 1ull;
            p = gf_mul_rn(p, gf_div_rn(lambda, (double)k));
            f = gf_add_rn(f, p);
        }
        return k;
    }
    const double slam = __dsqrt_rn(lambda);
    const double loglam = fo_ln(lambda);
    const double b = gf_add_rn(0.931, gf_mul_rn(2.53, slam));
    const double a = gf_add_rn(-0.059, gf_mul_rn(0.02483, b));
    const double inv_alpha = gf_add_rn(1.1239, gf_div_rn(1.1328, gf_sub_rn(b, 3.4)));
    const double vr = gf_sub_rn(0.9277, gf_div_rn(3.6224, gf_sub_rn(b, 2.0)));
    for (;;) {
        const double u = gf_sub_rn(fy_uniform(s), 0.5);
        const double v = fy_uniform(s);
        const double us = gf_sub_rn(0.5, fabs(u));
        const double t = gf_add_rn(gf_div_rn(gf_mul_rn(2.0, a), us), b);
        const double k = floor(gf_add_rn(gf_add_rn(gf_mul_rn(t, u), lambda), 0.43));
        if (us >= 0.07 && v <= vr) return fy_to_u64(k);
        if (k < 0.0 || (us < 0.013 && v > us)) continue;
        const double lhs = gf_sub_rn(gf_add_rn(fo_ln(v), fo_ln(inv_alpha)),
                                     fo_ln(gf_add_rn(gf_div_rn(a, gf_mul_rn(us, us)), b)));
        const double rhs = gf_sub_rn(gf_add_rn(-lambda, gf_mul_rn(k, loglam)),
                                     fy_ln_factorial(fy_to_u64(k)));
        if (lhs <= rhs) return fy_to_u64(k);
    }
}

// Marsaglia-Tsang for shape >= 1.
__device__ double fy_gamma_ge1(FyStream& s, double shape) {
    const double d = gf_sub_rn(shape, 0x1.5555555555555p-2);  // 1/3
    const double c = gf_div_rn(1.0, __dsqrt_rn(gf_mul_rn(9.0, d)));
    for (;;) {
        const double x = fy_normal(s);
        const double t = gf_add_rn(1.0, gf_mul_rn(c, x));
        if (t <= 0.0) continue;
        const double v = gf_mul_rn(gf_mul_rn(t, t), t);
        const double u = fy_uniform(s);
        const double x4 = gf_mul_rn(gf_mul_rn(gf_mul_rn(gf_mul_rn(0.0331, x), x), x), x);
        if (u < gf_sub_rn(1.0, x4)) return gf_mul_rn(d, v);
        const double rhs = gf_add_rn(gf_mul_rn(gf_mul_rn(0.5, x), x),
                                     gf_mul_rn(d, gf_add_rn(gf_sub_rn(1.0, v), fo_ln(v))));
        if (fo_ln(u) < rhs) return gf_mul_rn(d, v);
    }
}

__device__ double fy_gamma(FyStream& s, double shape) {
    if (!(shape > 0.0 && isfinite(shape))) return 0.0;
    if (shape < 1.0) {
        const double g = fy_gamma_ge1(s, gf_add_rn(shape, 1.0));
        return gf_mul_rn(g, fo_exp(gf_div_rn(fo_ln(fy_uniform(s)), shape)));
    }
    return fy_gamma_ge1(s, shape);
}

__device__ u64 fy_negative_binomial(FyStream& s, double mean, double k) {
    if (!(mean > 0.0 && isfinite(mean))) return 0ull;
    if (isinf(k) && k > 0.0) return fy_poisson(s, mean);
    const double lambda = gf_div_rn(gf_mul_rn(fy_gamma(s, k), mean), k);
    return fy_poisson(s, lambda);
}

__device__ u64 fy_binomial(FyStream& s, u64 n, double p) {
    if (n == 0ull || isnan(p) || p <= 0.0) return 0ull;
    if (p >= 1.0) return n;
    u64 acc = 0ull;
    while (n > 256ull) {
        const u64 a = 1ull + n / 2ull;
        const double ga = fy_gamma(s, (double)a);
        const double gb = fy_gamma(s, (double)(n + 1ull - a));
        const double x = gf_div_rn(ga, gf_add_rn(ga, gb));
        if (x >= p) {
            n = a - 1ull;
            p = gf_div_rn(p, x);
        } else {
            acc += a;
            n -= a;
            p = gf_div_rn(gf_sub_rn(p, x), gf_sub_rn(1.0, x));
        }
    }
    const bool flip = p > 0.5;
    const double q = flip ? gf_sub_rn(1.0, p) : p;
    u64 k = 0ull;
    if (q > 0.0) {
        const double ln_miss = fy_ln_1p(-q);
        const double nf = (double)n;
        double i = 0.0;
        for (;;) {
            i = gf_add_rn(i, gf_add_rn(floor(gf_div_rn(fo_ln(fy_uniform(s)), ln_miss)), 1.0));
            if (i > nf) break;
            k += 1ull;
        }
    }
    return acc + (flip ? n - k : k);
}

__device__ __forceinline__ u64 fy_random_round(FyStream& s, double x) {
    if (!(x > 0.0 && isfinite(x))) return 0ull;
    const double whole = floor(x);
    return fy_to_u64(whole) + (fy_uniform(s) < gf_sub_rn(x, whole) ? 1ull : 0ull);
}

// seed_counts.rs SeedDistribution (kind: 0 deterministic, 1 Poisson, 2 negative binomial with
// clumping a, 3 normal with sd a, 4 lognormal with sigma a).
__device__ u64 fy_count(FyStream& s, u32 kind, double a, double lambda) {
    if (!(lambda > 0.0 && isfinite(lambda))) return 0ull;
    switch (kind) {
        case 0u: return fy_random_round(s, lambda);
        case 1u: return fy_poisson(s, lambda);
        case 2u: return fy_negative_binomial(s, lambda, a);
        case 3u: {
            const double x = gf_add_rn(lambda, gf_mul_rn(a, fy_normal(s)));
            return fy_random_round(s, fmax(x, 0.0));
        }
        default: {
            const double mu = gf_sub_rn(fo_ln(lambda), gf_mul_rn(gf_mul_rn(0.5, a), a));
            return fy_random_round(s, fy_lognormal(s, mu, a));
        }
    }
}
