// grid.cu: a grid over a point set built on the device, without a host round trip, for the
// exact neighbour search of neighbors.cu. Layout (GfGridPlan, common.cuh): points counting-sorted
// into cells (CSR: starts[c]..starts[c + 1] in storage order, with each stored point's original
// index) and, per axis, the exact minimum and maximum coordinate of the points binned into each
// slab (all cells with one coordinate on that axis). The search prunes with those coordinates
// only, so the binning (f64 arithmetic, clamped) may put a point on either side of a cell face
// without changing any result.
//
// Kinds:
//   uniform  cells of size h ~ (V m / N)^(1/d') (m = per_cell points per cell), doubled while
//            there are more than min(max(4N, 64), capacity) cells, or a size given by the host
//            (validated there); prefix max / suffix min of the slab ranges for the stopping rule.
//   Morton   2^L cells of size h = max extent / 2^L per used axis with 2^(d L) <= min(max(4N, 64),
//            capacity), stored in Morton (bit-interleaved) order, so every aligned block of 2^(d j)
//            cells (a node of the implicit 2^d-ary tree) is one contiguous run of points; the slab
//            ranges are kept as a per-axis pyramid (level l: 2^l aligned blocks of slabs).
//
// Kernels of one build (all read the plan the first one writes):
//   grid_bounds_*  min / max per axis (order-preserving integer encodings; block reduction, then
//                  atomics); the last block writes the plan and resets the accumulators.
//   grid_clear     zeroes the counts, tile totals and slab accumulators the plan uses.
//   grid_count_*   cell of each point, counts (warp-aggregated atomics: the returned value is the
//                  point's rank in its cell) and per-tile totals for the scan.
//   grid_scan      exclusive scan of the counts into starts (tiles of GF_TILE cells; each tile adds
//                  the totals of the tiles before it).
//   grid_scatter_* points and indices into storage order (slot = start[cell] + rank); slab
//                  ranges by integer atomics (max of enc for the maximum, max of ~enc for the
//                  minimum, so that zero is "empty" for both).
//   grid_slabs_*   decodes the slab ranges (empty: +inf / -inf), then prefix max / suffix min
//                  (uniform) or the pyramid (Morton). One block per axis.
// The order of points inside a cell depends on atomic timing; results do not (every search keeps
// the k smallest keys (d2, index) of a total order).

#define GB_THREADS 256
#define GB_NONE 0xFFFFFFFFu

struct GridBuildParams {
    u32 n;
    u32 dim;
    u32 kind;      // 0 uniform, 1 Morton
    u32 cell_cap;  // cells allocated (counts and starts hold ntiles * GF_TILE >= cells + 1)
    u32 slab_cap;  // entries allocated per slab array
    u32 pad;
    double cell;      // uniform: the cell size asked for (0: automatic)
    double per_cell;  // uniform, automatic: mean points per cell aimed at
};
GF_CHECK_SIZE(GridBuildParams, 40);

// Most levels per axis of a Morton grid (cell ids stay below 2^26).
__device__ __forceinline__ u32 gb_max_levels(u32 dim) { return dim == 3 ? 8u : 13u; }

__device__ void gb_make_plan(const GridBuildParams& P, const double* lo_in, const double* hi_in,
                             GfGridPlan* out) {
    const u32 D = P.dim;
    GfGridPlan G;
    double ext[3];
    double vol = 1.0, maxext = 0.0;
    int dpos = 0;
    bool huge = false;
    for (int a = 0; a < 3; ++a) {
        const bool used = a < (int)D && P.n > 0;
        G.origin[a] = used ? lo_in[a] : 0.0;
        ext[a] = used ? hi_in[a] - lo_in[a] : 0.0;
        if (!(ext[a] <= 1e300)) huge = true;
        if (ext[a] > 0.0) {
            vol *= ext[a];
            ++dpos;
            maxext = fmax(maxext, ext[a]);
        }
    }
    const double n = (double)P.n;
    double limit = fmax(4.0 * n, 64.0);
    if (limit > (double)P.cell_cap || (P.kind == 0 && P.cell > 0.0)) limit = (double)P.cell_cap;
    bool single = huge;
    double h = 1.0;
    u32 nd[3] = {1u, 1u, 1u};
    u32 levels = 0;
    if (P.kind == 1) {
        u32 L = 0;
        while (L < gb_max_levels(D) && ldexp(1.0, (int)(D * (L + 1))) <= limit) ++L;
        levels = L;
        h = maxext > 0.0 ? ldexp(maxext, -(int)L) : 1.0;
        if (!(h > 0.0 && h <= 1e300) || huge) single = true;
        for (int a = 0; a < (int)D; ++a) nd[a] = 1u << L;
    } else {
        if (P.cell > 0.0) {
            h = P.cell;
        } else if (dpos > 0) {
            h = pow(vol * P.per_cell / fmax(n, 1.0), 1.0 / (double)dpos);
        }
        if (!(h > 0.0 && h <= 1e300)) {
            h = maxext;
            if (!(h > 0.0 && h <= 1e300)) h = 1.0;
        }
        bool fits = false;
        for (int it = 0; it < 4200 && !single; ++it) {
            double total = 1.0;
            for (int a = 0; a < 3; ++a) {
                double d = floor(ext[a] / h) + 1.0;
                if (!(d >= 1.0 && d <= 1e12)) d = 1e12;
                nd[a] = (u32)fmin(d, 4294967295.0);
                total *= d;
            }
            if (total <= limit) {
                fits = true;
                break;
            }
            h *= 2.0;
        }
        if (!fits) single = true;
    }
    if (single) {
        // Degenerate extents: one cell (brute force, still exact).
        h = 1.0;
        levels = 0;
        for (int a = 0; a < 3; ++a) nd[a] = 1u;
    }
    G.h = h;
    G.inv_h = single ? 0.0 : 1.0 / h;
    for (int a = 0; a < 3; ++a) G.dims[a] = nd[a];
    G.ncells = nd[0] * nd[1] * nd[2];
    G.ntiles = (G.ncells >> GF_TILE_LOG2) + 1u;
    G.levels = levels;
    G.kind = P.kind;
    if (P.kind == 1) {
        const u32 per = (2u << levels) - 1u;
        for (int a = 0; a < 3; ++a) G.slab_off[a] = (u32)a * per;
        G.nslabs = D * per;
    } else {
        G.slab_off[0] = 0u;
        G.slab_off[1] = nd[0];
        G.slab_off[2] = nd[0] + nd[1];
        G.nslabs = nd[0] + nd[1] + nd[2];
    }
    G.pad = 0u;
    *out = G;
}

// ---- cells --------------------------------------------------------------------------------------
template <typename T, int D>
__device__ __forceinline__ void gb_coords(const GfGridPlan& G, const T* p, u32* c) {
#pragma unroll
    for (int a = 0; a < 3; ++a) {
        c[a] = 0u;
        if (a < D) {
            const double f = floor(__dmul_rn(__dsub_rn((double)p[a], G.origin[a]), G.inv_h));
            const double last = (double)(G.dims[a] - 1u);
            c[a] = f >= 0.0 ? (f >= last ? G.dims[a] - 1u : (u32)f) : 0u;
        }
    }
}

template <int D>
__device__ __forceinline__ u32 gb_cell_id(const GfGridPlan& G, const u32* c) {
    if (G.kind == 1) {
        return D == 3 ? (gf_spread3(c[0]) | (gf_spread3(c[1]) << 1) | (gf_spread3(c[2]) << 2))
                      : (gf_spread2(c[0]) | (gf_spread2(c[1]) << 1));
    }
    return (c[2] * G.dims[1] + c[1]) * G.dims[0] + c[0];
}

// Slab entry of axis a for cell coordinate c (the finest pyramid level for Morton).
__device__ __forceinline__ u32 gb_slab(const GfGridPlan& G, int a, u32 c) {
    return G.kind == 1 ? G.slab_off[a] + (1u << G.levels) - 1u + c : G.slab_off[a] + c;
}

// ---- kernels ------------------------------------------------------------------------------------
// sync[0..3): encoded minima, sync[3..6): encoded maxima, sync[6]: blocks done.
template <typename T, int D>
__device__ __forceinline__ void gb_bounds(const GridBuildParams& P, const T* __restrict__ pts,
                                          u64* sync, GfGridPlan* plan) {
    u64 mn[3] = {~0ull, ~0ull, ~0ull}, mx[3] = {0ull, 0ull, 0ull};
    for (u32 i = blockIdx.x * GB_THREADS + threadIdx.x; i < P.n; i += gridDim.x * GB_THREADS) {
#pragma unroll
        for (int a = 0; a < D; ++a) {
            const u64 e = gf_enc(pts[(size_t)i * D + a]);
            mn[a] = min(mn[a], e);
            mx[a] = max(mx[a], e);
        }
    }
    if (!gf_minmax_last_block<GB_THREADS>(mn, mx, sync) || threadIdx.x != 0) return;
    u64 elo[3], ehi[3];
    gf_minmax_take(sync, elo, ehi);
    double lo[3], hi[3];
#pragma unroll
    for (int a = 0; a < 3; ++a) {
        lo[a] = (double)gf_dec(elo[a], (T)0);
        hi[a] = (double)gf_dec(ehi[a], (T)0);
    }
    gb_make_plan(P, lo, hi, plan);
}

#if GF_WANTED(grid_clear)
extern "C" __global__ void __launch_bounds__(GB_THREADS)
    grid_clear(GridBuildParams P, const GfGridPlan* __restrict__ plan, u32* counts,
               u32* tile_sums, u64* enc_lo, u64* enc_hi) {
    const GfGridPlan G = *plan;
    const u32 nc = G.ntiles * GF_TILE;
    const u32 m = max(nc, G.nslabs);
    for (u32 i = blockIdx.x * GB_THREADS + threadIdx.x; i < m; i += gridDim.x * GB_THREADS) {
        if (i < nc) counts[i] = 0u;
        if (i < G.ntiles) tile_sums[i] = 0u;
        if (i < G.nslabs) {
            enc_lo[i] = 0ull;
            enc_hi[i] = 0ull;
        }
    }
    (void)P;
}
#endif

template <typename T, int D>
__device__ __forceinline__ void gb_count(const GridBuildParams& P, const GfGridPlan* plan,
                                         const T* __restrict__ pts, u32* counts, u32* tile_sums,
                                         u32* rank) {
    const GfGridPlan G = *plan;
    const u32 i = blockIdx.x * GB_THREADS + threadIdx.x;
    const bool valid = i < P.n;
    u32 cell = GB_NONE;
    if (valid) {
        u32 c[3];
        gb_coords<T, D>(G, pts + (size_t)i * D, c);
        cell = gb_cell_id<D>(G, c);
    }
    const u32 r = gf_count_rank(valid, cell, counts, tile_sums);
    if (valid) rank[i] = r;
}

// starts[c] = sum of counts[0..c) for c <= ncells. Block b scans tile b.
#if GF_WANTED(grid_scan)
extern "C" __global__ void __launch_bounds__(GB_THREADS)
    grid_scan(GridBuildParams P, const GfGridPlan* __restrict__ plan, u32* counts,
              const u32* __restrict__ tile_sums, u32* starts) {
    if (blockIdx.x >= plan->ntiles) return;
    gf_tile_scan<GB_THREADS>(blockIdx.x, counts, tile_sums, starts, false);
    (void)P;
}
#endif

template <typename T, int D>
__device__ __forceinline__ void gb_scatter(const GridBuildParams& P, const GfGridPlan* plan,
                                           const u32* __restrict__ starts,
                                           const u32* __restrict__ rank,
                                           const T* __restrict__ pts, T* __restrict__ out_pts,
                                           u32* __restrict__ out_ids, u64* enc_lo, u64* enc_hi) {
    const u32 i = blockIdx.x * GB_THREADS + threadIdx.x;
    if (i >= P.n) return;
    const GfGridPlan G = *plan;
    T p[D];
#pragma unroll
    for (int a = 0; a < D; ++a) p[a] = pts[(size_t)i * D + a];
    u32 c[3];
    gb_coords<T, D>(G, p, c);
    const u32 dst = starts[gb_cell_id<D>(G, c)] + rank[i];
#pragma unroll
    for (int a = 0; a < D; ++a) {
        out_pts[(size_t)dst * D + a] = p[a];
        const u32 s = gb_slab(G, a, c[a]);
        const u64 e = gf_enc(p[a]);
        atomicMax(&enc_hi[s], e);
        atomicMax(&enc_lo[s], ~e);
    }
    out_ids[dst] = i;
}

// Inclusive max (or min) scan of one value per thread over the block, through shared memory.
template <typename T, bool MAX>
__device__ __forceinline__ T gb_block_incl(T v, T* sh) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (u32 o = 1; o < GB_THREADS; o <<= 1) {
        const T w = threadIdx.x >= o ? sh[threadIdx.x - o] : v;
        __syncthreads();
        v = MAX ? (w > v ? w : v) : (w < v ? w : v);
        sh[threadIdx.x] = v;
        __syncthreads();
    }
    return v;
}

// One block per used axis.
template <typename T>
__device__ __forceinline__ void gb_slabs(const GridBuildParams& P, const GfGridPlan* plan,
                                         const u64* __restrict__ enc_lo,
                                         const u64* __restrict__ enc_hi, T* slab_lo, T* slab_hi,
                                         T* pre_max, T* suf_min) {
    const u32 a = blockIdx.x;
    if (a >= P.dim) return;
    const GfGridPlan G = *plan;
    const T inf = (T)__longlong_as_double(0x7ff0000000000000LL);
    const u32 fine = G.kind == 1 ? (1u << G.levels) : G.dims[a];
    const u32 base = G.kind == 1 ? G.slab_off[a] + fine - 1u : G.slab_off[a];
    for (u32 s = threadIdx.x; s < fine; s += GB_THREADS) {
        const u64 l = enc_lo[base + s], h = enc_hi[base + s];
        slab_lo[base + s] = l == 0ull ? inf : gf_dec(~l, (T)0);
        slab_hi[base + s] = h == 0ull ? -inf : gf_dec(h, (T)0);
    }
    __syncthreads();
    if (G.kind == 1) {
        // Pyramid: level l entry j covers level l + 1 entries 2j and 2j + 1.
        for (int l = (int)G.levels - 1; l >= 0; --l) {
            const u32 cur = G.slab_off[a] + (1u << l) - 1u;
            const u32 below = G.slab_off[a] + (2u << l) - 1u;
            for (u32 j = threadIdx.x; j < (1u << l); j += GB_THREADS) {
                const T l0 = slab_lo[below + 2u * j], l1 = slab_lo[below + 2u * j + 1u];
                const T h0 = slab_hi[below + 2u * j], h1 = slab_hi[below + 2u * j + 1u];
                slab_lo[cur + j] = l1 < l0 ? l1 : l0;
                slab_hi[cur + j] = h1 > h0 ? h1 : h0;
            }
            __syncthreads();
        }
        return;
    }
    // Prefix maximum of slab_hi and suffix minimum of slab_lo: contiguous chunks per thread.
    __shared__ T sh[GB_THREADS];
    const u32 chunk = (fine + GB_THREADS - 1u) / GB_THREADS;
    const u32 s0 = min(threadIdx.x * chunk, fine), s1 = min(s0 + chunk, fine);
    T m = -inf;
    for (u32 s = s0; s < s1; ++s) m = slab_hi[base + s] > m ? slab_hi[base + s] : m;
    T run = gb_block_incl<T, true>(m, sh);
    // Exclusive: the maximum of the chunks before this one.
    run = threadIdx.x > 0 ? sh[threadIdx.x - 1] : -inf;
    __syncthreads();
    for (u32 s = s0; s < s1; ++s) {
        run = slab_hi[base + s] > run ? slab_hi[base + s] : run;
        pre_max[base + s] = run;
    }
    // Suffix minimum: the same over the reversed index.
    const u32 r0 = min(threadIdx.x * chunk, fine), r1 = min(r0 + chunk, fine);
    T mn = inf;
    for (u32 r = r0; r < r1; ++r) {
        const T v = slab_lo[base + fine - 1u - r];
        mn = v < mn ? v : mn;
    }
    (void)gb_block_incl<T, false>(mn, sh);
    T rm = threadIdx.x > 0 ? sh[threadIdx.x - 1] : inf;
    __syncthreads();
    for (u32 r = r0; r < r1; ++r) {
        const u32 s = base + fine - 1u - r;
        rm = slab_lo[s] < rm ? slab_lo[s] : rm;
        suf_min[s] = rm;
    }
}

// ---- entry points ---------------------------------------------------------------------------------
#define GB_ENTRY(SUF, T)                                                                         \
    GF_KERNEL_IF(grid_bounds_##SUF)(extern "C" __global__ void __launch_bounds__(GB_THREADS)        \
        grid_bounds_##SUF(GridBuildParams P, const T* pts, u64* sync, GfGridPlan* plan) {        \
        if (P.dim == 3) gb_bounds<T, 3>(P, pts, sync, plan);                                     \
        else gb_bounds<T, 2>(P, pts, sync, plan);                                                \
    })                                                                                            \
    GF_KERNEL_IF(grid_count_##SUF)(extern "C" __global__ void __launch_bounds__(GB_THREADS)         \
        grid_count_##SUF(GridBuildParams P, const GfGridPlan* plan, const T* pts, u32* counts,   \
                         u32* tile_sums, u32* rank) {                                            \
        if (P.dim == 3) gb_count<T, 3>(P, plan, pts, counts, tile_sums, rank);                   \
        else gb_count<T, 2>(P, plan, pts, counts, tile_sums, rank);                              \
    })                                                                                            \
    GF_KERNEL_IF(grid_scatter_##SUF)(extern "C" __global__ void __launch_bounds__(GB_THREADS) grid_scatter_##SUF( \
        GridBuildParams P, const GfGridPlan* plan, const u32* starts, const u32* rank,           \
        const T* pts, T* out_pts, u32* out_ids, u64* enc_lo, u64* enc_hi) {                      \
        if (P.dim == 3)                                                                          \
            gb_scatter<T, 3>(P, plan, starts, rank, pts, out_pts, out_ids, enc_lo, enc_hi);      \
        else gb_scatter<T, 2>(P, plan, starts, rank, pts, out_pts, out_ids, enc_lo, enc_hi);     \
    })                                                                                            \
    GF_KERNEL_IF(grid_slabs_##SUF)(extern "C" __global__ void __launch_bounds__(GB_THREADS)         \
        grid_slabs_##SUF(GridBuildParams P, const GfGridPlan* plan, const u64* enc_lo,           \
                         const u64* enc_hi, T* slab_lo, T* slab_hi, T* pre_max, T* suf_min) {    \
        gb_slabs<T>(P, plan, enc_lo, enc_hi, slab_lo, slab_hi, pre_max, suf_min);                \
    })
GB_ENTRY(f32, float)
GB_ENTRY(f64, double)
