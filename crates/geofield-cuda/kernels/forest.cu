// forest.cu: per-seed seed placement (crates/geofield/src/forest/per_seed.rs, `place`) on the
// device, bit for bit the CPU's.
//
// forest_place_seeds: one thread per seed (grid-stride loop over every seed of every parent).
//   * The parent: binary search of the seed's index g in the parents' exclusive prefix offsets
//     of their seed counts n_i (u64; offsets[parents] = the total). The host draws each n_i with
//     the CPU's `random_round` on the parent's stream (its u32 #0 and #1), so the device never
//     draws a count.
//   * Seed j of a parent takes u32 #(2 + 2j) (distance) and #(3 + 2j) (direction) of the
//     parent's Philox4x32-10 stream (crates/geofield/src/forest/rng.rs: key = run seed, counter
//     = [block, id low 32 bits, id bits 32..48 | species << 16 | purpose << 24, year]): both are
//     lanes of block (2 + 2j) / 4, lanes 2, 3 for even j and 0, 1 for odd j.
//   * Distance: Flight::distance_at (u = (x + 0.5) 2^-32; ln r interpolated in the near or far
//     quantile table at (x - ln 2) inv_step, x = -ln u or -ln(1 - u); r = exp of it), with
//     exact_math's ln and exp mirrored below. Direction: Flight::direction (12 bits pick the
//     interval of the unit-vector table, 20 interpolate). Position: the parent's grid-relative
//     position plus r (cos, -sin), wrapped on a torus (per_seed.rs `wrap`); cell = floor(u / h),
//     floor(v / h); a seed inside the grid adds one to its cell's u32 count (atomicAdd: the
//     counts are sums of ones, the same in any order).
//   * A u beyond the quantile tables (pos >= table or NaN; impossible for a 32-bit draw) is
//     where the CPU falls back to bisection: here it is counted in *beyond and the seed dropped;
//     the host turns a nonzero count into an error.
//   * With P.record, thread g also writes (r, u, v) to record[3g..3g+3) (the parity tests).
//
// Exactness. Every f64 addition, subtraction, multiplication and division is common.cuh's
// inline PTX with an explicit .rn (gf_add_rn, gf_sub_rn, gf_mul_rn, gf_div_rn): such an
// instruction is never contracted into an FMA, whatever the module's options (--use_fast_math
// implies --fmad=true, and per-module options are not available); fused operations are explicit
// __fma_rn exactly where the Rust code calls mul_add. No library log/exp: fo_ln and fo_exp use
// FMA, add, mul and one division only, each correctly rounded, in the CPU's order; floor, fmin,
// fmax and fmod are exact. Constants are the CPU's values as hex literals (1/k correctly
// rounded, as Rust computes them). The module's PTX has no f64 add/sub/mul/div without .rn and
// no .approx (checked by a test).

#define FO_THREADS 256
// Directions' table: 2^12 intervals, picked by the top 12 bits of the draw.
#define FO_DIRECTIONS 4096
#define FO_DIR_SHIFT 20

struct ForestPlaceParams {
    double x_min_m;        // grid's west edge
    double y_max_m;        // grid's north edge
    double cell_m;         // cell size h
    double width_m;        // cols h (the torus' periods)
    double height_m;       // rows h
    double width_below_m;  // the double just below width_m
    double height_below_m;
    double cols_f;         // cols as f64
    double rows_f;
    double inv_step;       // quantile tables: 1 / interval in x
    u64 seeds;             // seeds in all (offsets[parents])
    u64 cols;
    u32 parents;           // >= 1
    u32 table;             // intervals of each quantile table (entries: table + 1)
    u32 key0;              // run seed, low and high 32 bits
    u32 key1;
    u32 year;
    u32 tag;               // species << 16 | purpose << 24 (counter word 2's high bits)
    u32 torus;
    u32 record;
};
GF_CHECK_SIZE(ForestPlaceParams, 128);

// Philox4x32-10 of counter (c0, c1, c2, c3) under key (k0, k1).
__device__ __forceinline__ uint4 fo_philox(u32 c0, u32 c1, u32 c2, u32 c3, u32 k0, u32 k1) {
#pragma unroll
    for (int r = 0; r < 10; ++r) {
        if (r > 0) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        const u32 hi0 = __umulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
        const u32 hi1 = __umulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
        const u32 n0 = hi1 ^ c1 ^ k0;
        const u32 n2 = hi0 ^ c3 ^ k1;
        c0 = n0;
        c1 = lo1;
        c2 = n2;
        c3 = lo0;
    }
    return make_uint4(c0, c1, c2, c3);
}

__device__ __forceinline__ bool fo_isnan(double x) {
    return ((u64)__double_as_longlong(x) & 0x7FFFFFFFFFFFFFFFull) > 0x7FF0000000000000ull;
}

// exact_math's constants: ln 2 in two parts (fdlibm's), √2, log2 e, ln 2 (Rust's consts).
#define FO_LN2_HI 0x1.62e42fee00000p-1
#define FO_LN2_LO 0x1.a39ef35793c76p-33
#define FO_SQRT2 0x1.6a09e667f3bcdp+0
#define FO_LOG2E 0x1.71547652b82fep+0
#define FO_LN2 0x1.62e42fefa39efp-1

// exact_math::ln: x = m 2^e, m in [√½, √2); ln m = 2 atanh s by its odd series to s^21.
__device__ __forceinline__ double fo_ln(double x) {
    const u64 bits = (u64)__double_as_longlong(x);
    const u64 ex = (bits >> 52) & 0x7FFull;
    // x > 0, finite and normal.
    if ((bits >> 63) != 0ull || ex == 0ull || ex == 0x7FFull) return __longlong_as_double(0x7FF8000000000000ll);
    long long e = (long long)ex - 1023;
    double m = __longlong_as_double((long long)((bits & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull));
    if (m > FO_SQRT2) {
        m = gf_mul_rn(m, 0.5);
        e += 1;
    }
    const double s = gf_div_rn(gf_sub_rn(m, 1.0), gf_add_rn(m, 1.0));
    const double s2 = gf_mul_rn(s, s);
    double p = 0x1.8618618618618p-5;        // 1/21
    p = gf_fma_rn(p, s2, 0x1.af286bca1af28p-5);  // 1/19
    p = gf_fma_rn(p, s2, 0x1.e1e1e1e1e1e1ep-5);  // 1/17
    p = gf_fma_rn(p, s2, 0x1.1111111111111p-4);  // 1/15
    p = gf_fma_rn(p, s2, 0x1.3b13b13b13b14p-4);  // 1/13
    p = gf_fma_rn(p, s2, 0x1.745d1745d1746p-4);  // 1/11
    p = gf_fma_rn(p, s2, 0x1.c71c71c71c71cp-4);  // 1/9
    p = gf_fma_rn(p, s2, 0x1.2492492492492p-3);  // 1/7
    p = gf_fma_rn(p, s2, 0x1.999999999999ap-3);  // 1/5
    p = gf_fma_rn(p, s2, 0x1.5555555555555p-2);  // 1/3
    const double q = gf_mul_rn(p, s2);
    const double two_s = gf_mul_rn(2.0, s);
    const double lnm = gf_fma_rn(two_s, q, two_s);
    const double ef = (double)e;
    return gf_fma_rn(ef, FO_LN2_HI, gf_fma_rn(ef, FO_LN2_LO, lnm));
}

// exact_math::exp: n = floor(x log2 e + 1/2), r = x - n ln 2, e^r by Taylor to r^13, times 2^n.
__device__ __forceinline__ double fo_exp(double x) {
    if (fo_isnan(x)) return x;
    if (x < -700.0) return 0.0;
    if (x > 700.0) return __longlong_as_double(0x7FF0000000000000ll);
    const double n = floor(gf_add_rn(gf_mul_rn(x, FO_LOG2E), 0.5));
    const double r = gf_fma_rn(-n, FO_LN2_LO, gf_fma_rn(-n, FO_LN2_HI, x));
    double p = 0x1.6124613a86d09p-33;       // 1/13!
    p = gf_fma_rn(p, r, 0x1.1eed8eff8d898p-29);  // 1/12!
    p = gf_fma_rn(p, r, 0x1.ae64567f544e4p-26);  // 1/11!
    p = gf_fma_rn(p, r, 0x1.27e4fb7789f5cp-22);  // 1/10!
    p = gf_fma_rn(p, r, 0x1.71de3a556c734p-19);  // 1/9!
    p = gf_fma_rn(p, r, 0x1.a01a01a01a01ap-16);  // 1/8!
    p = gf_fma_rn(p, r, 0x1.a01a01a01a01ap-13);  // 1/7!
    p = gf_fma_rn(p, r, 0x1.6c16c16c16c17p-10);  // 1/6!
    p = gf_fma_rn(p, r, 0x1.1111111111111p-7);   // 1/5!
    p = gf_fma_rn(p, r, 0x1.5555555555555p-5);   // 1/4!
    p = gf_fma_rn(p, r, 0x1.5555555555555p-3);   // 1/3!
    p = gf_fma_rn(p, r, 0.5);                    // 1/2!
    p = gf_fma_rn(p, r, 1.0);                    // 1/1!
    const double y = gf_fma_rn(p, r, 1.0);
    const long long ni = (long long)n;
    const long long a = ni / 2, b = ni - ni / 2;
    const double pa = __longlong_as_double((a + 1023) << 52);
    const double pb = __longlong_as_double((b + 1023) << 52);
    return gf_mul_rn(gf_mul_rn(y, pa), pb);
}

// f64::rem_euclid: fmod (exact), plus |period| when negative.
__device__ __forceinline__ double fo_rem_euclid(double x, double period) {
    const double r = fmod(x, period);
    return r < 0.0 ? gf_add_rn(r, fabs(period)) : r;
}

// per_seed.rs `wrap`: x into [0, period).
__device__ __forceinline__ double fo_wrap(double x, double period, double below) {
    if (x < 0.0) {
        const double y = gf_add_rn(x, period);
        return y >= 0.0 ? fmin(y, below) : fo_rem_euclid(x, period);
    }
    if (x >= period) {
        const double y = gf_sub_rn(x, period);
        return y < period ? y : fo_rem_euclid(x, period);
    }
    return x;
}

#if GF_WANTED(forest_place_seeds)
extern "C" __global__ void __launch_bounds__(FO_THREADS)
    forest_place_seeds(ForestPlaceParams P, const double* __restrict__ px,
                       const double* __restrict__ py, const u64* __restrict__ pid,
                       const u64* __restrict__ offsets, const double* __restrict__ near_tab,
                       const double* __restrict__ far_tab, const double2* __restrict__ dir,
                       u32* counts, u64* beyond, double* record) {
    const u64 stride = (u64)gridDim.x * FO_THREADS;
    for (u64 g = (u64)blockIdx.x * FO_THREADS + threadIdx.x; g < P.seeds; g += stride) {
        // The parent: the last i < parents with offsets[i] <= g (offsets[0] = 0 <= g <
        // offsets[parents]).
        u32 lo = 0u, hi = P.parents;
        while (hi - lo > 1u) {
            const u32 mid = lo + ((hi - lo) >> 1);
            if (offsets[mid] <= g) lo = mid;
            else hi = mid;
        }
        const u64 j = g - offsets[lo];
        const u64 id = pid[lo];
        // u32 #(2 + 2j) and #(3 + 2j) of the stream: block (2 + 2j) / 4 (the CPU's 32-bit block
        // index wraps the same way).
        const u64 t = 2ull + 2ull * j;
        const uint4 b = fo_philox((u32)(t >> 2), (u32)id, ((u32)(id >> 32) & 0xFFFFu) | P.tag,
                                  P.year, P.key0, P.key1);
        const bool upper = (t & 2ull) != 0ull;
        const u32 xd = upper ? b.z : b.x;
        const u32 xa = upper ? b.w : b.y;

        // Flight::distance, Flight::distance_at.
        const double u = gf_mul_rn(gf_add_rn((double)xd, 0.5), 0x1p-32);
        const bool near_side = u < 0.5;
        const double* tab = near_side ? near_tab : far_tab;
        const double xl = -fo_ln(near_side ? u : gf_sub_rn(1.0, u));
        const double pos = gf_mul_rn(gf_sub_rn(xl, FO_LN2), P.inv_step);
        if (fo_isnan(pos) || pos >= (double)P.table) {
            atomicAdd(beyond, 1ull);
            continue;
        }
        u64 jt = (u64)fmax(pos, 0.0);
        if (jt > (u64)(P.table - 1u)) jt = (u64)(P.table - 1u);
        const double f = gf_sub_rn(pos, (double)jt);
        const double t0 = tab[jt], t1 = tab[jt + 1];
        const double r = fo_exp(gf_fma_rn(f, gf_sub_rn(t1, t0), t0));

        // Flight::direction.
        const u32 k = xa >> FO_DIR_SHIFT;
        const double fa = gf_mul_rn((double)(xa & ((1u << FO_DIR_SHIFT) - 1u)), 0x1p-20);
        const double2 d0 = dir[k], d1 = dir[k + 1];
        const double cs = gf_add_rn(d0.x, gf_mul_rn(fa, gf_sub_rn(d1.x, d0.x)));
        const double sn = gf_add_rn(d0.y, gf_mul_rn(fa, gf_sub_rn(d1.y, d0.y)));

        // place: grid-relative u east, v south; the torus; the cell.
        const double u0 = gf_sub_rn(px[lo], P.x_min_m);
        const double v0 = gf_sub_rn(P.y_max_m, py[lo]);
        double uu = gf_add_rn(u0, gf_mul_rn(r, cs));
        double vv = gf_sub_rn(v0, gf_mul_rn(r, sn));
        if (P.torus) {
            uu = fo_wrap(uu, P.width_m, P.width_below_m);
            vv = fo_wrap(vv, P.height_m, P.height_below_m);
        }
        if (P.record) {
            record[3 * g] = r;
            record[3 * g + 1] = uu;
            record[3 * g + 2] = vv;
        }
        const double c = floor(gf_div_rn(uu, P.cell_m));
        const double rr = floor(gf_div_rn(vv, P.cell_m));
        if (c >= 0.0 && c < P.cols_f && rr >= 0.0 && rr < P.rows_f) {
            atomicAdd(&counts[(u64)rr * P.cols + (u64)c], 1u);
        }
    }
}
#endif
