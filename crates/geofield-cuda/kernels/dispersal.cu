// dispersal.cu: seed-dispersal density R(c) = sum_k w_k K(d(k, c)) at every cell centre c.
// (common.cuh is prepended by the host; dispersal_multires.cu, the paper's multi-resolution kernel,
// and dispersal_far.cu, the near/far split's far field, follow.)
//
// Coordinates are grid-relative metres: u = x - x_min (east), v = y_max - y (south). Cell (row,
// col) has its centre at u = (col + 0.5) h, v = (row + 0.5) h; output is row-major, row 0 north.
//
// Thread mapping (exact and cutoff): a 256-thread block is 32 x 8 threads; lane = column, so each
// warp stores 32 consecutive cells of one row (coalesced). A thread owns C cells of one column,
// rows ty, ty + 8, ..., so per staged tree the column offset du and du^2 are computed once and
// each of the C cells costs only dv, one FMA and the kernel evaluation.
//
// Coordinates in f32 are relative to the centre of the block's output tile (of its cells inside
// the grid), scaled by the shape's
// s (see common.cuh); each tree is shifted in f64 while it is staged into shared memory (once per
// tree per block). Rounding error of a distance is then ~ulp(tile half-width + d), independent of
// how far the tile is from the grid origin (a 10 km grid would otherwise cost ~1e-3 m).
//
// Accumulation (deterministic, no atomics): per cell, trees are taken in a fixed order in groups
// of GF_GROUP; each group is summed in f32 registers, then folded into a Kahan (s, c) pair. The
// group sum's error is <= 7 u of the group (u = 2^-24), the Kahan fold adds ~2 u of the total: the
// result agrees with an f64 sum to ~1e-7 relative (plus the SFU evaluation error, ~2e-7 x |ln K|),
// at 4 FADD per 8 pairs instead of a per-pair f32->f64 conversion (SFU-rate on recent GPUs).
//
// Throughput model (H100 SXM: 132 SMs x 16 SFU results/clk x 1.98 GHz = 4.18e12 SFU ops/s):
// the inner loop of Weibull theta = 3 is per pair FADD (dv), FFMA (x), MUFU.SQRT, FMUL, MUFU.EX2,
// FFMA (w K), plus per tree and thread one LDS.128, FADD, FFMA (amortised over C cells) and per
// group 4 FADD: ~5 non-SFU issue slots per 2 SFU ops, under the 14 slots an SM sub-partition can
// issue while its SFU retires the 2 warp-wide SFU instructions (16 cycles). SFU-bound, so the
// ceiling is 4.18e12 / 2 = 2.09e12 pairs/s; expected 1.5-1.8e12 pairs/s (75-85 % of it) for the
// exact kernel, i.e. the paper's 5e5 cells x 1e5 trees (5e10 pairs) in ~30 ms. theta = 2 and 2Dt
// p = 1 need 1 SFU op (ceiling 4.2e12 pairs/s), general theta 3 (1.4e12 pairs/s).
// The cutoff kernel adds FSETP + FSEL per pair (still SFU-bound): the note's S10 case (1.05e8
// cells, 3.1 M trees, R = 60 m, 32 m source tiles, ~768 visited trees per cell) is ~8e10 pairs,
// ~55 ms.

#define GF_TX 32
#define GF_TY 8
#define GF_THREADS (GF_TX * GF_TY)
#define GF_GROUP 8

// ---------------------------------------------------------------------------------------------
// Parameter structs (mirrored in src/dispersal/params.rs).
// ---------------------------------------------------------------------------------------------
struct DispersalExactParams {
    double cell_size_m;   // h
    double scale;         // s: coordinates are multiplied by s before the shape (1/m)
    double torus_lx_m;    // torus period along u (torus kernels only)
    double torus_ly_m;    // torus period along v
    u64 slice_stride;     // elements between the outputs of consecutive tree slices
    float a;              // shape constant (see common.cuh)
    float b;              // shape constant
    u32 cols;
    u32 rows;
    u32 n_trees;
    u32 trees_per_slice;  // trees handled by one blockIdx.z
    u32 out_f64;          // 1: out is double*, 0: float*
    u32 pad0;
};
GF_CHECK_SIZE(DispersalExactParams, 72);

struct DispersalCutoffParams {
    double cell_size_m;
    double scale;
    double tile_size_m;    // T
    double origin_u_m;     // corner of source tile (0, 0)
    double origin_v_m;
    double visit_radius_m; // R plus a rounding margin: source tiles within it are visited
    float a;
    float b;
    float cut2;            // (s R)^2: pairs with x > cut2 are excluded
    u32 cols;
    u32 rows;              // the grid's rows computed end here (the strip's end)
    u32 tiles_x;
    u32 tiles_y;
    u32 out_f64;
    u32 row_offset;        // first grid row computed (a strip's start): out holds rows from it
    u32 pad0;
};
GF_CHECK_SIZE(DispersalCutoffParams, 88);

// Near/far split's near factor 1 - S_n(t) = S_n(1 - t), t = (x - x1) inv_w clamped to [0, 1]
// (x the scaled squared distance), S_n(t) = t^n sum_k c_k (1 - t)^k with c_k > 0: all terms
// positive, so f32 keeps a few ulps.
struct DispersalBlendParams {
    float x1;
    float inv_w;
    u32 order;
    u32 pad0;
    float c[8];
};
GF_CHECK_SIZE(DispersalBlendParams, 48);

template <int N>
__device__ __forceinline__ float gf_near_factor(const DispersalBlendParams& bl, float x) {
    const float t = fminf(fmaxf((x - bl.x1) * bl.inv_w, 0.0f), 1.0f);
    const float u = 1.0f - t; // S_N(u) = u^N sum_k c_k t^k, N fixed at compile time
    float acc = bl.c[N - 1], un = u;
#pragma unroll
    for (int k = N - 2; k >= 0; --k) acc = fmaf(acc, t, bl.c[k]);
#pragma unroll
    for (int k = 1; k < N; ++k) un *= u;
    return un * acc;
}

#define GF_MR_MAX_LEVELS 16
struct DispersalMultiresParams {
    double cell_size_m;
    float scale2;          // s^2, multiplies a squared distance in m^2
    float a;
    float b;
    u32 shape;             // GfShapeId
    u32 cols;
    u32 rows;
    u32 levels;            // K + 1
    u32 out_f64;
    u32 level_offset[GF_MR_MAX_LEVELS];
    float rho_m[GF_MR_MAX_LEVELS];
};
GF_CHECK_SIZE(DispersalMultiresParams, 168);

struct DispersalFinalizeParams {
    u64 n_cells;
    u32 slices;
    u32 out_f64;
};
GF_CHECK_SIZE(DispersalFinalizeParams, 16);

// ---------------------------------------------------------------------------------------------
// Inner loops. n is a multiple of GF_GROUP; padding entries have w = 0.
// ---------------------------------------------------------------------------------------------

// Open plot. sm[j] = (u, v, w, -) in scaled tile-centre coordinates. With CUT, pairs with
// x = (s d)^2 > cut2 are masked by a select (no divergent branch).
template <u32 S, int C, bool CUT, int BLN = 0>
__device__ __forceinline__ void gf_acc_open(const float4* __restrict__ sm, int n, float cx,
                                            const float (&cy)[C], float (&s)[C], float (&c)[C],
                                            float a, float b, float cut2,
                                            const DispersalBlendParams* bl = nullptr) {
    // Without a cut the shape's bias (1 for 2Dt) is folded into the per-tree du^2 term.
    constexpr float B = CUT ? 0.0f : GfShape<S>::BIAS;
#pragma unroll 1
    for (int j = 0; j < n; j += GF_GROUP) {
        float g[C];
#pragma unroll
        for (int i = 0; i < C; ++i) g[i] = 0.0f;
#pragma unroll
        for (int jj = 0; jj < GF_GROUP; ++jj) {
            const float4 t = sm[j + jj];
            const float du = t.x - cx;
            const float du2 = fmaf(du, du, B);
#pragma unroll
            for (int i = 0; i < C; ++i) {
                const float dv = t.y - cy[i];
                const float x = fmaf(dv, dv, du2);
                float k;
                if constexpr (CUT) {
                    k = gf_eval<S>(x, a, b);
                    if constexpr (BLN > 0) k *= gf_near_factor<BLN>(*bl, x);
                    k = (x <= cut2) ? k : 0.0f;
                } else {
                    k = GfShape<S>::eval_b(x, a, b);
                }
                g[i] = fmaf(t.z, k, g[i]);
            }
        }
#pragma unroll
        for (int i = 0; i < C; ++i) gf_kahan_add(s[i], c[i], g[i]);
    }
}

// Torus: each tree is staged as two images per axis, p = (u0, u1, v0, v1), weight in wt[j]; the
// minimum image per axis is the one with the smaller square (see the exact kernel for why two
// images suffice).
template <u32 S, int C>
__device__ __forceinline__ void gf_acc_torus(const float4* __restrict__ sm,
                                             const float* __restrict__ wt, int n, float cx,
                                             const float (&cy)[C], float (&s)[C], float (&c)[C],
                                             float a, float b) {
    constexpr float B = GfShape<S>::BIAS;
#pragma unroll 1
    for (int j = 0; j < n; j += GF_GROUP) {
        float g[C];
#pragma unroll
        for (int i = 0; i < C; ++i) g[i] = 0.0f;
#pragma unroll
        for (int jj = 0; jj < GF_GROUP; ++jj) {
            const float4 t = sm[j + jj];
            const float wk = wt[j + jj];
            const float d0 = t.x - cx;
            const float d1 = t.y - cx;
            const float du2 = fminf(d0 * d0, d1 * d1) + B;
#pragma unroll
            for (int i = 0; i < C; ++i) {
                const float e0 = t.z - cy[i];
                const float e1 = t.w - cy[i];
                const float x = fminf(fmaf(e0, e0, du2), fmaf(e1, e1, du2));
                g[i] = fmaf(wk, GfShape<S>::eval_b(x, a, b), g[i]);
            }
        }
#pragma unroll
        for (int i = 0; i < C; ++i) gf_kahan_add(s[i], c[i], g[i]);
    }
}

// ---------------------------------------------------------------------------------------------
// Exact: every tree to every cell. Block = output tile of 32 x 64 cells (8 cells per thread) and
// one slice of the trees (blockIdx.z); with several slices the host sums the f64 partials in
// slice order (dispersal_finalize), so the result stays bitwise reproducible.
//
// Torus, minimum image per axis: in f64, each tree's offset a from the frame origin m (the
// centre of the tile's cell-centre span) is wrapped to the nearest image t0 = a - L rint(a / L),
// and the other candidate t1 = t0 - L sign(t0) is formed. Cells lie within span/2 <= L/2 of m
// (the host checks span <= L), so t0 - x lies in (-L, L) and the minimum image is t0 - x or
// t1 - x. Both are small numbers for near pairs, so the f32 values keep full relative accuracy:
// wrapping in f32 after the fact would cost ulp(L) ~ 1e-3 m at L = 10 km.
// ---------------------------------------------------------------------------------------------
#define EX_C 8
#define EX_ROWS (GF_TY * EX_C)
#define EX_CHUNK 512

template <u32 S, bool TORUS>
__device__ __forceinline__ void gf_exact(const DispersalExactParams& p,
                                         const double* __restrict__ u,
                                         const double* __restrict__ v,
                                         const float* __restrict__ w, void* __restrict__ out) {
    __shared__ float4 sm[EX_CHUNK];
    __shared__ float wt[TORUS ? EX_CHUNK : 1];

    const u32 col0 = blockIdx.x * GF_TX;
    const u32 row0 = blockIdx.y * EX_ROWS;
    const int tid = threadIdx.y * GF_TX + threadIdx.x;
    const double h = p.cell_size_m;
    const double sc = p.scale;
    // Origin of the f32 frame: the centre of the tile's existing cells (clipped at the grid's
    // edge), which is also the centre m of their span for the torus wrap.
    const double ncol = (double)min((u32)GF_TX, p.cols - col0);
    const double nrow = (double)min((u32)EX_ROWS, p.rows - row0);
    const double uc = (col0 + 0.5 * ncol) * h;
    const double vc = (row0 + 0.5 * nrow) * h;
    const float cx = (float)(((double)threadIdx.x + 0.5 - 0.5 * ncol) * h * sc);
    float cy[EX_C];
#pragma unroll
    for (int i = 0; i < EX_C; ++i) {
        cy[i] = (float)(((double)(threadIdx.y + GF_TY * i) + 0.5 - 0.5 * nrow) * h * sc);
    }

    float s[EX_C], c[EX_C];
#pragma unroll
    for (int i = 0; i < EX_C; ++i) {
        s[i] = 0.0f;
        c[i] = 0.0f;
    }

    const u32 k_begin = blockIdx.z * p.trees_per_slice;
    const u32 k_end = min(p.n_trees, k_begin + p.trees_per_slice);
    for (u32 kb = k_begin; kb < k_end; kb += EX_CHUNK) {
        const int cnt = (int)min((u32)EX_CHUNK, k_end - kb);
        const int cntp = (cnt + GF_GROUP - 1) & ~(GF_GROUP - 1);
        __syncthreads(); // the previous chunk is consumed
        for (int q = tid; q < cntp; q += GF_THREADS) {
            float4 e = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            float wk = 0.0f;
            if (q < cnt) {
                const u32 k = kb + (u32)q;
                const double du = u[k] - uc;
                const double dv = v[k] - vc;
                wk = w[k];
                if constexpr (TORUS) {
                    const double lx = p.torus_lx_m, ly = p.torus_ly_m;
                    const double u0 = du - lx * rint(du / lx);
                    const double v0 = dv - ly * rint(dv / ly);
                    const double u1 = u0 - (u0 >= 0.0 ? lx : -lx);
                    const double v1 = v0 - (v0 >= 0.0 ? ly : -ly);
                    e = make_float4((float)(u0 * sc), (float)(u1 * sc), (float)(v0 * sc),
                                    (float)(v1 * sc));
                } else {
                    e = make_float4((float)(du * sc), (float)(dv * sc), wk, 0.0f);
                }
            }
            sm[q] = e;
            if constexpr (TORUS) wt[q] = wk;
        }
        __syncthreads();
        if constexpr (TORUS) {
            gf_acc_torus<S, EX_C>(sm, wt, cntp, cx, cy, s, c, p.a, p.b);
        } else {
            gf_acc_open<S, EX_C, false>(sm, cntp, cx, cy, s, c, p.a, p.b, 0.0f);
        }
    }

    const u32 col = col0 + threadIdx.x;
    const u64 base = (u64)blockIdx.z * p.slice_stride;
#pragma unroll
    for (int i = 0; i < EX_C; ++i) {
        const u32 row = row0 + threadIdx.y + GF_TY * i;
        if (row < p.rows && col < p.cols) {
            gf_store(out, base + (u64)row * p.cols + col, gf_kahan_value(s[i], c[i]), p.out_f64);
        }
    }
}

#define GF_EXACT_KERNEL(NAME, S, TORUS)                                                           \
    GF_KERNEL_IF(NAME)(extern "C" __global__ void __launch_bounds__(GF_THREADS, 3)                  \
        NAME(const DispersalExactParams p, const double* __restrict__ u,                         \
             const double* __restrict__ v, const float* __restrict__ w, void* __restrict__ out) { \
        gf_exact<S, TORUS>(p, u, v, w, out);                                                      \
    })

GF_EXACT_KERNEL(dispersal_exact_w3_open, GF_W3, false)
GF_EXACT_KERNEL(dispersal_exact_w2_open, GF_W2, false)
GF_EXACT_KERNEL(dispersal_exact_w1_open, GF_W1, false)
GF_EXACT_KERNEL(dispersal_exact_wgen_open, GF_WGEN, false)
GF_EXACT_KERNEL(dispersal_exact_logn_open, GF_LOGN, false)
GF_EXACT_KERNEL(dispersal_exact_t1_open, GF_T1, false)
GF_EXACT_KERNEL(dispersal_exact_tgen_open, GF_TGEN, false)
GF_EXACT_KERNEL(dispersal_exact_w3_torus, GF_W3, true)
GF_EXACT_KERNEL(dispersal_exact_w2_torus, GF_W2, true)
GF_EXACT_KERNEL(dispersal_exact_w1_torus, GF_W1, true)
GF_EXACT_KERNEL(dispersal_exact_wgen_torus, GF_WGEN, true)
GF_EXACT_KERNEL(dispersal_exact_logn_torus, GF_LOGN, true)
GF_EXACT_KERNEL(dispersal_exact_t1_torus, GF_T1, true)
GF_EXACT_KERNEL(dispersal_exact_tgen_torus, GF_TGEN, true)

// Sums the f64 partials of the exact kernel's tree slices in slice order.
#if GF_WANTED(dispersal_finalize)
extern "C" __global__ void __launch_bounds__(GF_THREADS)
    dispersal_finalize(const DispersalFinalizeParams p, const double* __restrict__ partial,
                       void* __restrict__ out) {
    const u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 idx = (u64)blockIdx.x * blockDim.x + threadIdx.x; idx < p.n_cells; idx += stride) {
        double acc = 0.0;
        for (u32 z = 0; z < p.slices; ++z) acc += partial[(u64)z * p.n_cells + idx];
        gf_store(out, idx, acc, p.out_f64);
    }
}
#endif

// ---------------------------------------------------------------------------------------------
// Cutoff: R(c) = sum over trees with d^2 <= R^2 (tested in f32 on the scaled x). Block = output
// tile of 32 x 32 cells (4 per thread). Trees come binned into square source tiles of side T
// (host-built, tile t = ty * tiles_x + tx, positions relative to the tile's corner). The block
// visits, in row-major tile order, every non-empty source tile whose rectangle lies within the
// visit radius of the rectangle spanned by its cell centres. Warp 0 compacts the visible tiles
// of up to CO_LIST candidates into a list (ballot + shuffle scan); the trees of the listed tiles
// are then staged CO_CHUNK at a time, each thread finding its tree's tile by binary search over
// the list's prefix counts, and shifted in f64 by (source corner - output-tile centre).
// ---------------------------------------------------------------------------------------------
#define CO_C 4
#define CO_ROWS (GF_TY * CO_C)
#define CO_CHUNK 512
#define CO_LIST 256

template <u32 S, int BLN = 0>
__device__ __forceinline__ void gf_cutoff(const DispersalCutoffParams& p,
                                          const u32* __restrict__ tile_start,
                                          const float* __restrict__ tdu,
                                          const float* __restrict__ tdv,
                                          const float* __restrict__ tw, void* __restrict__ out,
                                          const DispersalBlendParams* bl = nullptr) {
    __shared__ float4 sm[CO_CHUNK];
    __shared__ double l_cdu[CO_LIST];
    __shared__ double l_cdv[CO_LIST];
    __shared__ u32 l_start[CO_LIST];
    __shared__ u32 l_prefix[CO_LIST + 1];
    __shared__ u32 l_count;

    const u32 col0 = blockIdx.x * GF_TX;
    const u32 row0 = p.row_offset + blockIdx.y * CO_ROWS;
    const int tid = threadIdx.y * GF_TX + threadIdx.x;
    const double h = p.cell_size_m;
    const double sc = p.scale;
    // f32 frame centred on the tile's existing cells; their centres span [ulo, uhi] x [vlo, vhi].
    const u32 ncol = min((u32)GF_TX, p.cols - col0);
    const u32 nrow = min((u32)CO_ROWS, p.rows - row0);
    const double uc = (col0 + 0.5 * ncol) * h;
    const double vc = (row0 + 0.5 * nrow) * h;
    const float cx = (float)(((double)threadIdx.x + 0.5 - 0.5 * ncol) * h * sc);
    float cy[CO_C];
#pragma unroll
    for (int i = 0; i < CO_C; ++i) {
        cy[i] = (float)(((double)(threadIdx.y + GF_TY * i) + 0.5 - 0.5 * nrow) * h * sc);
    }
    const double ulo = (col0 + 0.5) * h, uhi = (col0 + ncol - 0.5) * h;
    const double vlo = (row0 + 0.5) * h, vhi = (row0 + nrow - 0.5) * h;
    const double rv = p.visit_radius_m, t = p.tile_size_m;
    const double fx0 = fmax(floor((ulo - rv - p.origin_u_m) / t), 0.0);
    const double fx1 = fmin(floor((uhi + rv - p.origin_u_m) / t), (double)p.tiles_x - 1.0);
    const double fy0 = fmax(floor((vlo - rv - p.origin_v_m) / t), 0.0);
    const double fy1 = fmin(floor((vhi + rv - p.origin_v_m) / t), (double)p.tiles_y - 1.0);
    const bool any = fx0 <= fx1 && fy0 <= fy1;
    const u32 tx0 = any ? (u32)fx0 : 0u, ty0 = any ? (u32)fy0 : 0u;
    const u32 bw = any ? (u32)(fx1 - fx0) + 1u : 0u;
    const u32 ncand = any ? bw * ((u32)(fy1 - fy0) + 1u) : 0u;

    float s[CO_C], c[CO_C];
#pragma unroll
    for (int i = 0; i < CO_C; ++i) {
        s[i] = 0.0f;
        c[i] = 0.0f;
    }

    for (u32 cb = 0; cb < ncand; cb += CO_LIST) {
        __syncthreads(); // the previous batch's list and chunk are consumed
        if (threadIdx.y == 0) {
            const u32 lane = threadIdx.x;
            const u32 cend = min(ncand, cb + CO_LIST);
            u32 nl = 0, tot = 0;
            for (u32 base = cb; base < cend; base += 32) {
                const u32 ci = base + lane;
                bool vis = false;
                u32 st = 0, cnt = 0;
                double cdu = 0.0, cdv = 0.0;
                if (ci < cend) {
                    const u32 tx = tx0 + ci % bw, ty = ty0 + ci / bw;
                    const double tu = p.origin_u_m + tx * t, tv = p.origin_v_m + ty * t;
                    const double gu = fmax(0.0, fmax(tu - uhi, ulo - (tu + t)));
                    const double gv = fmax(0.0, fmax(tv - vhi, vlo - (tv + t)));
                    if (gu * gu + gv * gv <= rv * rv) {
                        const u32 ti = ty * p.tiles_x + tx;
                        st = tile_start[ti];
                        cnt = tile_start[ti + 1] - st;
                        vis = cnt > 0;
                        cdu = tu - uc;
                        cdv = tv - vc;
                    }
                }
                if (!vis) cnt = 0;
                const u32 bal = __ballot_sync(0xffffffffu, vis);
                u32 inc = cnt;
#pragma unroll
                for (int o = 1; o < 32; o <<= 1) {
                    const u32 y = __shfl_up_sync(0xffffffffu, inc, o);
                    if ((int)lane >= o) inc += y;
                }
                if (vis) {
                    const u32 pos = nl + __popc(bal & ((1u << lane) - 1u));
                    l_start[pos] = st;
                    l_prefix[pos] = tot + inc - cnt;
                    l_cdu[pos] = cdu;
                    l_cdv[pos] = cdv;
                }
                nl += __popc(bal);
                tot += __shfl_sync(0xffffffffu, inc, 31);
            }
            if (lane == 0) {
                l_count = nl;
                l_prefix[nl] = tot;
            }
        }
        __syncthreads();
        const u32 nl = l_count;
        const u32 total = l_prefix[nl];
        for (u32 q0 = 0; q0 < total; q0 += CO_CHUNK) {
            const int cnt = (int)min((u32)CO_CHUNK, total - q0);
            const int cntp = (cnt + GF_GROUP - 1) & ~(GF_GROUP - 1);
            if (q0 > 0) __syncthreads(); // the previous chunk is consumed
            for (int q = tid; q < cntp; q += GF_THREADS) {
                float4 e = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                if (q < cnt) {
                    const u32 gq = q0 + (u32)q;
                    u32 lo = 0, hi = nl; // l_prefix[lo] <= gq < l_prefix[hi]
                    while (hi - lo > 1u) {
                        const u32 mid = (lo + hi) >> 1;
                        if (l_prefix[mid] <= gq) lo = mid; else hi = mid;
                    }
                    const u32 k = l_start[lo] + (gq - l_prefix[lo]);
                    e = make_float4((float)((l_cdu[lo] + (double)tdu[k]) * sc),
                                    (float)((l_cdv[lo] + (double)tdv[k]) * sc), tw[k], 0.0f);
                }
                sm[q] = e;
            }
            __syncthreads();
            gf_acc_open<S, CO_C, true, BLN>(sm, cntp, cx, cy, s, c, p.a, p.b, p.cut2, bl);
        }
    }

    const u32 col = col0 + threadIdx.x;
#pragma unroll
    for (int i = 0; i < CO_C; ++i) {
        const u32 row = row0 + threadIdx.y + GF_TY * i;
        if (row < p.rows && col < p.cols) {
            gf_store(out, (u64)(row - p.row_offset) * p.cols + col, gf_kahan_value(s[i], c[i]),
                     p.out_f64);
        }
    }
}

#define GF_CUTOFF_KERNEL(NAME, S)                                                                 \
    GF_KERNEL_IF(NAME)(extern "C" __global__ void __launch_bounds__(GF_THREADS, 4)                  \
        NAME(const DispersalCutoffParams p, const u32* __restrict__ tile_start,                  \
             const float* __restrict__ du, const float* __restrict__ dv,                         \
             const float* __restrict__ w, void* __restrict__ out) {                              \
        gf_cutoff<S>(p, tile_start, du, dv, w, out);                                              \
    })

GF_CUTOFF_KERNEL(dispersal_cutoff_w3, GF_W3)
GF_CUTOFF_KERNEL(dispersal_cutoff_w2, GF_W2)
GF_CUTOFF_KERNEL(dispersal_cutoff_w1, GF_W1)
GF_CUTOFF_KERNEL(dispersal_cutoff_wgen, GF_WGEN)
GF_CUTOFF_KERNEL(dispersal_cutoff_logn, GF_LOGN)
GF_CUTOFF_KERNEL(dispersal_cutoff_t1, GF_T1)
GF_CUTOFF_KERNEL(dispersal_cutoff_tgen, GF_TGEN)

// The near part of the near/far split: the cutoff with the blend's near factor per pair, one
// kernel per blend order (4 or 6: the planner's), so the polynomial is fully unrolled.
#define GF_CUTOFF_BLEND_KERNEL(NAME, S, N)                                                        \
    GF_KERNEL_IF(NAME)(extern "C" __global__ void __launch_bounds__(GF_THREADS, 2)                  \
        NAME(const DispersalCutoffParams p, const DispersalBlendParams bl,                       \
             const u32* __restrict__ tile_start, const float* __restrict__ du,                   \
             const float* __restrict__ dv, const float* __restrict__ w,                          \
             void* __restrict__ out) {                                                            \
        gf_cutoff<S, N>(p, tile_start, du, dv, w, out, &bl);                                      \
    })

GF_CUTOFF_BLEND_KERNEL(dispersal_cutoff_blend4_w3, GF_W3, 4)
GF_CUTOFF_BLEND_KERNEL(dispersal_cutoff_blend4_w2, GF_W2, 4)
GF_CUTOFF_BLEND_KERNEL(dispersal_cutoff_blend4_w1, GF_W1, 4)
GF_CUTOFF_BLEND_KERNEL(dispersal_cutoff_blend4_wgen, GF_WGEN, 4)
GF_CUTOFF_BLEND_KERNEL(dispersal_cutoff_blend4_logn, GF_LOGN, 4)
GF_CUTOFF_BLEND_KERNEL(dispersal_cutoff_blend4_t1, GF_T1, 4)
GF_CUTOFF_BLEND_KERNEL(dispersal_cutoff_blend4_tgen, GF_TGEN, 4)
GF_CUTOFF_BLEND_KERNEL(dispersal_cutoff_blend6_w3, GF_W3, 6)
GF_CUTOFF_BLEND_KERNEL(dispersal_cutoff_blend6_w2, GF_W2, 6)
GF_CUTOFF_BLEND_KERNEL(dispersal_cutoff_blend6_w1, GF_W1, 6)
GF_CUTOFF_BLEND_KERNEL(dispersal_cutoff_blend6_wgen, GF_WGEN, 6)
GF_CUTOFF_BLEND_KERNEL(dispersal_cutoff_blend6_logn, GF_LOGN, 6)
GF_CUTOFF_BLEND_KERNEL(dispersal_cutoff_blend6_t1, GF_T1, 6)
GF_CUTOFF_BLEND_KERNEL(dispersal_cutoff_blend6_tgen, GF_TGEN, 6)
