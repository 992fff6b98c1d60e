// common.cuh: device helpers shared by every geofield kernel module.
//
// NVRTC has no include path to this file: the host concatenates it in front of each module's
// source (src/compile.rs), so it must stay self-contained and free of host-only headers.
//
// Contents:
//   * integer typedefs and the parameter-struct size check macro;
//   * SFU intrinsics as inline PTX (ex2, lg2, sqrt, rcp: one MUFU instruction each on sm_80 and
//     sm_90, independent of --use_fast_math);
//   * a range-reduced log2 whose absolute error stays ~2^-22 for every positive normal input;
//   * Kahan-compensated f32 accumulation;
//   * the seed-dispersal kernel shapes K(r) as compile-time policies (GfShape<S>) plus a run-time
//     switch (gf_eval_shape) for kernels that are not throughput-critical.
#ifndef GEOFIELD_COMMON_CUH
#define GEOFIELD_COMMON_CUH

typedef unsigned int u32;
typedef unsigned long long u64;

// Every #[repr(C)] parameter struct has a Rust mirror; both sides check the size.
#define GF_CHECK_SIZE(T, N) static_assert(sizeof(T) == (N), #T " must match its Rust mirror")

// ---------------------------------------------------------------------------------------------
// Kernel selection. The host compiles only the kernels a run needs (src/compile.rs): it puts
// `#define GF_SELECT 1` and one `#define GF_WANT_<kernel> 1` per wanted kernel in front of the
// module, and every kernel of a module is guarded, so NVRTC never sees the others:
//   plain kernels:            #if GF_WANTED(name) ... #endif
//   macro-generated kernels:  GF_KERNEL_IF(name)(extern "C" __global__ void name(...) {...})
// Without GF_SELECT (compile checks, the ptxas report) every kernel is compiled.
// GF_WANTED(name) is 0 or 1 in #if as in macros: GF_BOOL(x) is 1 when x expands to exactly 1
// (GF_PROBE_1 then supplies a second argument), else 0.
// ---------------------------------------------------------------------------------------------
#define GF_CAT_(a, b) a##b
#define GF_CAT(a, b) GF_CAT_(a, b)
#define GF_SECOND_(a, b, ...) b
#define GF_SECOND(...) GF_SECOND_(__VA_ARGS__, 0, ~)
#define GF_PROBE_1 ~, 1
#define GF_BOOL(x) GF_SECOND(GF_CAT(GF_PROBE_, x))
#define GF_OR_00 0
#define GF_OR_01 1
#define GF_OR_10 1
#define GF_OR_11 1
#define GF_OR(a, b) GF_CAT(GF_OR_, GF_CAT(a, b))
#ifdef GF_SELECT
#define GF_ALL_KERNELS 0
#else
#define GF_ALL_KERNELS 1
#endif
#define GF_WANTED(name) GF_OR(GF_ALL_KERNELS, GF_BOOL(GF_WANT_##name))
#define GF_IF_0(...)
#define GF_IF_1(...) __VA_ARGS__
#define GF_KERNEL_IF(name) GF_CAT(GF_IF_, GF_WANTED(name))

// ---------------------------------------------------------------------------------------------
// SFU intrinsics. Inline PTX pins each to one MUFU op (checked with nvdisasm: MUFU.EX2,
// MUFU.LG2, MUFU.SQRT, MUFU.RCP). .ftz: denormal inputs/outputs flush to zero.
// ---------------------------------------------------------------------------------------------
__device__ __forceinline__ float gf_ex2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
__device__ __forceinline__ float gf_lg2(float x) {
    float y;
    asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
__device__ __forceinline__ float gf_sqrt(float x) {
    float y;
    asm("sqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
__device__ __forceinline__ float gf_rcp(float x) {
    float y;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// log2(x) for a positive normal x with absolute error ~2^-22 whatever the magnitude: the exponent
// is split off exactly (bit tricks, no I2F conversion, which would compete with the SFU) and
// lg2.approx only sees the mantissa m in [1, 2), where its absolute error bound holds.
__device__ __forceinline__ float gf_log2_rr(float x) {
    const u32 bits = __float_as_uint(x);
    // 2^23 + biased exponent, as a float, minus (2^23 + 127) = unbiased exponent, exactly.
    const float e = __uint_as_float(0x4B000000u | (bits >> 23)) - 8388735.0f;
    const float m = __uint_as_float((bits & 0x007FFFFFu) | 0x3F800000u);
    return e + gf_lg2(m);
}

// ---------------------------------------------------------------------------------------------
// Compensated accumulation. Kahan: the running sum is s - c (c holds the negated lost low part).
// CUDA never reassociates floating-point code, not even with --use_fast_math, and there is no
// multiply here for FMA contraction to merge, so the compensation survives compilation.
// ---------------------------------------------------------------------------------------------
__device__ __forceinline__ void gf_kahan_add(float& s, float& c, float x) {
    const float y = x - c;
    const float t = s + y;
    c = (t - s) - y;
    s = t;
}
__device__ __forceinline__ double gf_kahan_value(float s, float c) {
    return (double)s - (double)c;
}

// Stores v at out[idx] as double (out_f64 != 0) or float.
__device__ __forceinline__ void gf_store(void* out, u64 idx, double v, u32 out_f64) {
    if (out_f64) {
        static_cast<double*>(out)[idx] = v;
    } else {
        static_cast<float*>(out)[idx] = (float)v;
    }
}

// ---------------------------------------------------------------------------------------------
// Seed-dispersal kernel shapes. Distances enter as x = (s r)^2 (+ BIAS), with the coordinate
// scale s chosen on the host so that no per-pair multiply by a shape constant remains:
//   GF_W3   exp(-D r^3)            s = (D log2 e)^(1/3)   K = 2^-(x sqrt x)
//   GF_W2   exp(-D r^2)            s = (D log2 e)^(1/2)   K = 2^-x
//   GF_W1   exp(-D r)              s = D log2 e           K = 2^-sqrt(x)
//   GF_WGEN exp(-D r^theta)        s = (D log2 e)^(1/th)  K = 2^-(2^(b log2 x)), b = theta/2; K(0) = 1
//   GF_LOGN exp(-(ln(r/X0)/Xb)^2/2) s = 1/X0              K = 2^-((a log2 x)^2), a^2 = ln2/(8 Xb^2); K(0) = 0
//   GF_T1   (1 + r^2/u)^-2         s = 1/sqrt(u)          K = (1/(1+x))^2
//   GF_TGEN (1 + r^2/u)^-(p+1)     s = 1/sqrt(u)          K = 2^-(a log2(1+x)), a = p + 1
// SFU ops per evaluation: W2, T1: 1; W3, W1, LOGN, TGEN: 2; WGEN: 3.
// eval_b takes x + BIAS (BIAS = 1 for 2Dt), so tiled loops can fold the bias into a per-tree
// term; eval takes the plain x.
// ---------------------------------------------------------------------------------------------
enum GfShapeId : u32 {
    GF_W3 = 0,
    GF_W2 = 1,
    GF_W1 = 2,
    GF_WGEN = 3,
    GF_LOGN = 4,
    GF_T1 = 5,
    GF_TGEN = 6,
};

template <u32 S> struct GfShape;

template <> struct GfShape<GF_W3> {
    static constexpr float BIAS = 0.0f;
    static __device__ __forceinline__ float eval_b(float x, float, float) {
        return gf_ex2(-(x * gf_sqrt(x)));
    }
};
template <> struct GfShape<GF_W2> {
    static constexpr float BIAS = 0.0f;
    static __device__ __forceinline__ float eval_b(float x, float, float) { return gf_ex2(-x); }
};
template <> struct GfShape<GF_W1> {
    static constexpr float BIAS = 0.0f;
    static __device__ __forceinline__ float eval_b(float x, float, float) {
        return gf_ex2(-gf_sqrt(x));
    }
};
template <> struct GfShape<GF_WGEN> {
    static constexpr float BIAS = 0.0f;
    static __device__ __forceinline__ float eval_b(float x, float, float b) {
        // x > 0 is false for 0 and (ftz) denormals: K = 1 there, the limit at r = 0.
        const float k = gf_ex2(-gf_ex2(b * gf_log2_rr(fmaxf(x, 1e-30f))));
        return x > 0.0f ? k : 1.0f;
    }
};
template <> struct GfShape<GF_LOGN> {
    static constexpr float BIAS = 0.0f;
    static __device__ __forceinline__ float eval_b(float x, float a, float) {
        // log2 never sees 0: the argument is clamped and r = 0 selects K = 0 (the limit).
        const float t = a * gf_log2_rr(fmaxf(x, 1e-30f));
        const float k = gf_ex2(-(t * t));
        return x > 0.0f ? k : 0.0f;
    }
};
template <> struct GfShape<GF_T1> {
    static constexpr float BIAS = 1.0f;
    static __device__ __forceinline__ float eval_b(float xb, float, float) {
        const float q = gf_rcp(xb);
        return q * q;
    }
};
template <> struct GfShape<GF_TGEN> {
    static constexpr float BIAS = 1.0f;
    static __device__ __forceinline__ float eval_b(float xb, float a, float) {
        return gf_ex2(-(a * gf_log2_rr(xb)));
    }
};

template <u32 S> __device__ __forceinline__ float gf_eval(float x, float a, float b) {
    if constexpr (GfShape<S>::BIAS != 0.0f) {
        return GfShape<S>::eval_b(x + GfShape<S>::BIAS, a, b);
    } else {
        return GfShape<S>::eval_b(x, a, b);
    }
}

// Run-time dispatch (uniform branch) for kernels that are not SFU-bound.
__device__ __forceinline__ float gf_eval_shape(u32 shape, float x, float a, float b) {
    switch (shape) {
    case GF_W3: return gf_eval<GF_W3>(x, a, b);
    case GF_W2: return gf_eval<GF_W2>(x, a, b);
    case GF_W1: return gf_eval<GF_W1>(x, a, b);
    case GF_WGEN: return gf_eval<GF_WGEN>(x, a, b);
    case GF_LOGN: return gf_eval<GF_LOGN>(x, a, b);
    case GF_T1: return gf_eval<GF_T1>(x, a, b);
    default: return gf_eval<GF_TGEN>(x, a, b);
    }
}


// ---------------------------------------------------------------------------------------------
// Exact arithmetic: round to nearest, no FMA contraction (.rn forbids it), no flush-to-zero (no
// .ftz), whatever the module's options (--use_fast_math). The neighbour searches and the flock
// use these so that the GPU's d2 and steering bits equal the CPU's.
// ---------------------------------------------------------------------------------------------
#define GF_RN_OP(NAME, OP)                                                                       \
    __device__ __forceinline__ float NAME(float a, float b) {                                    \
        float r;                                                                                 \
        asm(OP ".rn.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));                                \
        return r;                                                                                \
    }                                                                                            \
    __device__ __forceinline__ double NAME(double a, double b) {                                 \
        double r;                                                                                \
        asm(OP ".rn.f64 %0, %1, %2;" : "=d"(r) : "d"(a), "d"(b));                                \
        return r;                                                                                \
    }
GF_RN_OP(gf_add_rn, "add")
GF_RN_OP(gf_sub_rn, "sub")
GF_RN_OP(gf_mul_rn, "mul")
GF_RN_OP(gf_div_rn, "div")

// A whole number of units (|d| < 2^126, integral) added to the 128-bit two's-complement sum
// at acc[0] (low half), acc[1] (high half): the low halves' carries go to the high half, so the
// sum is exact, and the same whatever order the threads add in.
__device__ __forceinline__ void gf_add_i128(unsigned long long* acc, double d) {
    const double two64 = 18446744073709551616.0;
    const double hi = floor(d / two64);          // exact: a power-of-two division, then floor
    const double lo = d - hi * two64;            // exact: d's bits below 2^64, in [0, 2^64)
    const unsigned long long l = (unsigned long long)lo;
    const unsigned long long old = atomicAdd(&acc[0], l);
    const unsigned long long carry = (old + l < old) ? 1ull : 0ull;
    atomicAdd(&acc[1], (unsigned long long)(long long)hi + carry);
}

// An explicit fused multiply-add, as inline PTX: the module's PTX brackets it with "begin inline
// asm" / "end inline asm" comments, so a test tells it from an FMA the compiler contracted.
__device__ __forceinline__ double gf_fma_rn(double a, double b, double c) {
    double r;
    asm("fma.rn.f64 %0, %1, %2, %3;" : "=d"(r) : "d"(a), "d"(b), "d"(c));
    return r;
}

// ---------------------------------------------------------------------------------------------
// Order-preserving integer encodings of finite floats (a < b iff enc(a) < enc(b); -0 < +0), for
// min / max reductions with integer atomics.
// ---------------------------------------------------------------------------------------------
__device__ __forceinline__ u64 gf_enc(float f) {
    const u32 b = __float_as_uint(f);
    return (u64)((b & 0x80000000u) ? ~b : (b | 0x80000000u));
}
__device__ __forceinline__ u64 gf_enc(double f) {
    const u64 b = (u64)__double_as_longlong(f);
    return (b & 0x8000000000000000ull) ? ~b : (b | 0x8000000000000000ull);
}
__device__ __forceinline__ float gf_dec(u64 e, float) {
    const u32 v = (u32)e;
    return __uint_as_float((v & 0x80000000u) ? (v & 0x7FFFFFFFu) : ~v);
}
__device__ __forceinline__ double gf_dec(u64 e, double) {
    return __longlong_as_double(
        (long long)((e & 0x8000000000000000ull) ? (e & 0x7FFFFFFFFFFFFFFFull) : ~e));
}

// ---------------------------------------------------------------------------------------------
// Warp and block scans (u32 sums; NT threads per block, a multiple of 32, at most 1024).
// ---------------------------------------------------------------------------------------------
__device__ __forceinline__ u32 gf_warp_incl_scan(u32 v, u32 lane) {
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const u32 t = __shfl_up_sync(0xFFFFFFFFu, v, o);
        if (lane >= (u32)o) v += t;
    }
    return v;
}
// Exclusive scan of v over the block; *total (shared) gets the block's sum. Two uses in a row
// must be separated by a __syncthreads() (the helper's shared array is reused).
template <int NT>
__device__ __forceinline__ u32 gf_block_excl_scan(u32 v, u32* total) {
    __shared__ u32 warp_tot[NT / 32];
    const u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    const u32 incl = gf_warp_incl_scan(v, lane);
    if (lane == 31u) warp_tot[warp] = incl;
    __syncthreads();
    if (warp == 0) {
        const u32 w = lane < NT / 32 ? warp_tot[lane] : 0u;
        const u32 wi = gf_warp_incl_scan(w, lane);
        __syncwarp();
        if (lane < NT / 32) warp_tot[lane] = wi - w;
        if (lane == NT / 32 - 1) *total = wi;
    }
    __syncthreads();
    return warp_tot[warp] + incl - v;
}

// ---------------------------------------------------------------------------------------------
// The point grid built on the device (grid.cu) and searched by neighbors.cu. Mirrored in Rust
// (geofield_cuda::neighbors::GridPlan).
//   kind 0, uniform: cells of size h, dims[a] = floor(ext_a / h) + 1, cell id x fastest;
//     slabs: per axis a, dims[a] entries at slab_off[a] (min / max coordinate of the points
//     binned there, then prefix max / suffix min in the search arrays).
//   kind 1, Morton: 2^levels cells of size h per used axis, cell id = the cells' coordinates
//     bit-interleaved (x lowest); slabs: per axis a, the pyramid of levels 0..=levels, level l
//     holding 2^l entries at slab_off[a] + 2^l - 1 (min / max over the aligned block of 2^(levels-l)
//     finest slabs).
// ---------------------------------------------------------------------------------------------
struct GfGridPlan {
    double origin[3];
    double h;
    double inv_h;
    u32 dims[3];
    u32 ncells;
    u32 ntiles;     // scan tiles of GF_TILE cells covering cells 0..=ncells
    u32 levels;     // Morton only
    u32 slab_off[3];
    u32 nslabs;
    u32 kind;
    u32 pad;
};
GF_CHECK_SIZE(GfGridPlan, 88);
#define GF_TILE 4096
#define GF_TILE_LOG2 12


// ---------------------------------------------------------------------------------------------
// Counting-sort pieces shared by the grid builds (grid.cu, flock.cu).
// ---------------------------------------------------------------------------------------------
// Called by every lane of a warp: counts[cell] += the lanes with that cell (one atomic per group)
// and returns this lane's rank in its cell (lane order inside the group); tile_sums[cell >>
// GF_TILE_LOG2] likewise. Lanes with valid = false pass any cell and get 0.
__device__ __forceinline__ u32 gf_count_rank(bool valid, u32 cell, u32* counts, u32* tile_sums) {
    const u32 key = valid ? cell : 0xFFFFFFFFu;
    const u32 lane = threadIdx.x & 31u;
    const u32 below = (1u << lane) - 1u;
    const u32 peers = __match_any_sync(0xFFFFFFFFu, key);
    const u32 leader = __ffs(peers) - 1u;
    u32 base = 0u;
    if (valid && lane == leader) base = atomicAdd(&counts[cell], (u32)__popc(peers));
    base = __shfl_sync(0xFFFFFFFFu, base, leader);
    const u32 tile = valid ? cell >> GF_TILE_LOG2 : 0xFFFFFFFFu;
    const u32 tpeers = __match_any_sync(0xFFFFFFFFu, tile);
    if (valid && lane == __ffs(tpeers) - 1u) atomicAdd(&tile_sums[tile], (u32)__popc(tpeers));
    return valid ? base + (u32)__popc(peers & below) : 0u;
}

// Block b (NT threads, NT * 16 = GF_TILE) writes starts[c] = sum of counts[0..c) for the cells
// of tile b, adding the totals of the tiles before it; with zero_counts the counts go back to 0.
template <int NT>
__device__ __forceinline__ void gf_tile_scan(u32 b, u32* counts, const u32* __restrict__ tile_sums,
                                             u32* starts, bool zero_counts) {
    static_assert(NT * 16 == GF_TILE, "one tile per block, 16 cells per thread");
    __shared__ u32 s_off;
    __shared__ u32 s_tot;
    u32 a = 0u;
    for (u32 t = threadIdx.x; t < b; t += NT) a += tile_sums[t];
    (void)gf_block_excl_scan<NT>(a, &s_off);
    const size_t base = (size_t)b * GF_TILE + (size_t)threadIdx.x * 16;
    uint4* c4 = reinterpret_cast<uint4*>(counts + base);
    u32 v[16];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        const uint4 x = c4[q];
        v[4 * q] = x.x;
        v[4 * q + 1] = x.y;
        v[4 * q + 2] = x.z;
        v[4 * q + 3] = x.w;
        if (zero_counts) c4[q] = make_uint4(0u, 0u, 0u, 0u);
    }
    u32 sum = 0u;
#pragma unroll
    for (int j = 0; j < 16; ++j) sum += v[j];
    __syncthreads();
    const u32 off = s_off;
    u32 run = off + gf_block_excl_scan<NT>(sum, &s_tot);
    uint4* s4 = reinterpret_cast<uint4*>(starts + base);
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        uint4 y;
        y.x = run;
        run += v[4 * q];
        y.y = run;
        run += v[4 * q + 1];
        y.z = run;
        run += v[4 * q + 2];
        y.w = run;
        run += v[4 * q + 3];
        s4[q] = y;
    }
}


// Bounds reduction shared by the grid builds (grid.cu, flock.cu). Every thread passes its
// per-axis minima and maxima of order-preserving encodings (W = u32 or u64); the block reduces
// them, merges them into sync[0..3) (minima) and sync[3..6) (maxima) with atomics and counts
// itself done in sync[6]. Returns true in every thread of the last block to finish (after a
// fence: every block's atomics are visible); there, gf_minmax_take (one thread) reads the totals
// and resets sync for the next launch (minima to all ones, the rest to 0).
template <int NT, typename W>
__device__ __forceinline__ bool gf_minmax_last_block(W* mn, W* mx, W* sync) {
    __shared__ W red[NT / 32][6];
    __shared__ u32 is_last;
    const u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
#pragma unroll
    for (int a = 0; a < 3; ++a) {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            mn[a] = min(mn[a], __shfl_xor_sync(0xFFFFFFFFu, mn[a], o));
            mx[a] = max(mx[a], __shfl_xor_sync(0xFFFFFFFFu, mx[a], o));
        }
    }
    if (lane == 0) {
#pragma unroll
        for (int a = 0; a < 3; ++a) {
            red[warp][a] = mn[a];
            red[warp][3 + a] = mx[a];
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (u32 w = 1; w < NT / 32; ++w) {
#pragma unroll
            for (int a = 0; a < 3; ++a) {
                red[0][a] = min(red[0][a], red[w][a]);
                red[0][3 + a] = max(red[0][3 + a], red[w][3 + a]);
            }
        }
#pragma unroll
        for (int a = 0; a < 3; ++a) {
            atomicMin(&sync[a], red[0][a]);
            atomicMax(&sync[3 + a], red[0][3 + a]);
        }
        __threadfence();
        const W ticket = atomicAdd(&sync[6], (W)1);
        is_last = ticket == (W)gridDim.x - (W)1 ? 1u : 0u;
    }
    __syncthreads();
    if (is_last) __threadfence();
    return is_last != 0u;
}
template <typename W>
__device__ __forceinline__ void gf_minmax_take(W* sync, W* lo, W* hi) {
#pragma unroll
    for (int a = 0; a < 3; ++a) {
        lo[a] = atomicOr(&sync[a], (W)0);
        hi[a] = atomicOr(&sync[3 + a], (W)0);
        atomicExch(&sync[a], ~(W)0);
        atomicExch(&sync[3 + a], (W)0);
    }
    atomicExch(&sync[6], (W)0);
}

// Bits of v (< 2^13) spread to every second / third bit.
__device__ __forceinline__ u32 gf_spread2(u32 v) {
    v &= 0x0000FFFFu;
    v = (v | (v << 8)) & 0x00FF00FFu;
    v = (v | (v << 4)) & 0x0F0F0F0Fu;
    v = (v | (v << 2)) & 0x33333333u;
    v = (v | (v << 1)) & 0x55555555u;
    return v;
}
__device__ __forceinline__ u32 gf_spread3(u32 v) {
    v &= 0x000003FFu;
    v = (v | (v << 16)) & 0x030000FFu;
    v = (v | (v << 8)) & 0x0300F00Fu;
    v = (v | (v << 4)) & 0x030C30C3u;
    v = (v | (v << 2)) & 0x09249249u;
    return v;
}
__device__ __forceinline__ u32 gf_compact2(u32 v) {
    v &= 0x55555555u;
    v = (v | (v >> 1)) & 0x33333333u;
    v = (v | (v >> 2)) & 0x0F0F0F0Fu;
    v = (v | (v >> 4)) & 0x00FF00FFu;
    v = (v | (v >> 8)) & 0x0000FFFFu;
    return v;
}
__device__ __forceinline__ u32 gf_compact3(u32 v) {
    v &= 0x09249249u;
    v = (v | (v >> 2)) & 0x030C30C3u;
    v = (v | (v >> 4)) & 0x0300F00Fu;
    v = (v | (v >> 8)) & 0x030000FFu;
    v = (v | (v >> 16)) & 0x000003FFu;
    return v;
}

#endif // GEOFIELD_COMMON_CUH
