#line 2 "flock_grid.cu"
// Grid build kernels and neighbour buffers. Part of the "flock" module: flock.cu, flock_grid.cu,
// flock_search.cu and flock_step.cu are concatenated in that order (geofield_cuda::MODULES).

// ---- build kernels ----------------------------------------------------------------------------
// sync[0..3): encoded minima, sync[3..6): encoded maxima, sync[6]: blocks done.
#if GF_WANTED(flock_bounds)
extern "C" __global__ void __launch_bounds__(FL_AUX) flock_bounds(FlockParams P,
                                                                   const float4* __restrict__ pos,
                                                                   u32* sync, FlockPlan* plan,
                                                                   u32* tile_sums) {
    u32 mn[3] = {FL_NONE, FL_NONE, FL_NONE}, mx[3] = {0u, 0u, 0u};
    for (u32 i = blockIdx.x * FL_AUX + threadIdx.x; i < P.n; i += gridDim.x * FL_AUX) {
        const float4 p = pos[i];
        const u32 e[3] = {fl_enc(p.x), fl_enc(p.y), fl_enc(p.z)};
#pragma unroll
        for (int a = 0; a < 3; ++a) {
            mn[a] = min(mn[a], e[a]);
            mx[a] = max(mx[a], e[a]);
        }
    }
    if (!gf_minmax_last_block<FL_AUX>(mn, mx, sync)) return;
    // The last block: zero the scan tile totals, thread 0 writes the plan.
    for (u32 t = threadIdx.x; t < P.tile_cap; t += FL_AUX) tile_sums[t] = 0u;
    if (threadIdx.x == 0) {
        u32 elo[3], ehi[3];
        gf_minmax_take(sync, elo, ehi);
        float lo[3], hi[3];
#pragma unroll
        for (int a = 0; a < 3; ++a) {
            lo[a] = fl_dec(elo[a]);
            hi[a] = fl_dec(ehi[a]);
        }
        fl_make_plan(P, lo, hi, plan);
    }
}
#endif

// Cell of every agent; rank in its cell (warp-aggregated atomics); per-tile totals.
#if GF_WANTED(flock_count)
extern "C" __global__ void __launch_bounds__(FL_AUX)
    flock_count(FlockParams P, const FlockPlan* __restrict__ plan, const float4* __restrict__ pos,
                u32* counts, u32* tile_sums, u32* rank) {
    const FlockPlan G = *plan;
    const u32 i = blockIdx.x * FL_AUX + threadIdx.x;
    const bool valid = i < P.n;
    const u32 cell = valid ? fl_cell_id(G, pos[i]) : FL_NONE;
    const u32 r = gf_count_rank(valid, cell, counts, tile_sums);
    if (valid) rank[i] = r;
}
#endif

// starts[c] = sum of counts[0..c) for c <= ncells; counts back to zero. Block b scans tile b.
#if GF_WANTED(flock_scan)
extern "C" __global__ void __launch_bounds__(FL_AUX) flock_scan(FlockParams P,
                                                                 const FlockPlan* __restrict__ plan,
                                                                 u32* counts,
                                                                 const u32* __restrict__ tile_sums,
                                                                 u32* starts) {
    if (blockIdx.x >= plan->ntiles) return;
    gf_tile_scan<FL_AUX>(blockIdx.x, counts, tile_sums, starts, true);
    (void)P;
}
#endif

// The state into cell order: slot = starts[cell] + rank; slot_of[id] = slot.
#if GF_WANTED(flock_scatter)
extern "C" __global__ void __launch_bounds__(FL_AUX) flock_scatter(
    FlockParams P, const FlockPlan* __restrict__ plan, const u32* __restrict__ starts,
    const u32* __restrict__ rank, const float4* __restrict__ pos, const float4* __restrict__ vel,
    const float4* __restrict__ acc, float4* __restrict__ opos, float4* __restrict__ ovel,
    float4* __restrict__ oacc, u32* __restrict__ slot_of) {
    const u32 i = blockIdx.x * FL_AUX + threadIdx.x;
    if (i >= P.n) return;
    const FlockPlan G = *plan;
    const float4 p = pos[i];
    const u32 dst = starts[fl_cell_id(G, p)] + rank[i];
    opos[dst] = p;
    ovel[dst] = vel[i];
    oacc[dst] = acc[i];
    slot_of[__float_as_uint(p.w)] = dst;
}
#endif

// Radius mode: each cell's agents into ascending id order (slot = start + number of agents of
// the cell with a smaller id), from the scattered set into the other one.
#if GF_WANTED(flock_sort_cells)
extern "C" __global__ void __launch_bounds__(FL_AUX) flock_sort_cells(
    FlockParams P, const FlockPlan* __restrict__ plan, const u32* __restrict__ starts,
    const float4* __restrict__ pos, const float4* __restrict__ vel,
    const float4* __restrict__ acc, float4* __restrict__ opos, float4* __restrict__ ovel,
    float4* __restrict__ oacc) {
    const u32 i = blockIdx.x * FL_AUX + threadIdx.x;
    if (i >= P.n) return;
    const FlockPlan G = *plan;
    const float4 p = pos[i];
    const u32 cell = fl_cell_id(G, p);
    const u32 s = starts[cell], e = starts[cell + 1u];
    const u32 id = __float_as_uint(p.w);
    u32 r = 0u;
    for (u32 t = s; t < e; ++t) r += __float_as_uint(pos[t].w) < id ? 1u : 0u;
    const u32 dst = s + r;
    opos[dst] = p;
    ovel[dst] = vel[i];
    oacc[dst] = acc[i];
}
#endif

// ---- neighbour buffers ------------------------------------------------------------------------
// The k best keys (bits(d2) << 32 | id), ascending, in registers: K slots, the first K - k
// holding 0 (never displaced), the last k the best so far, empty ones the sentinel
// (bits(r2) << 32 | 0xFFFFFFFF), which every admissible candidate (d2 <= r2, id < 2^32 - 1) is
// below. A candidate enters iff its key is below key[K - 1].
template <int K>
struct FlBestReg {
    u64 key[K];
    __device__ __forceinline__ void init(int k, u64 sent) {
#pragma unroll
        for (int j = 0; j < K; ++j) key[j] = j < K - k ? 0ull : sent;
    }
    __device__ __forceinline__ u64 worst() const { return key[K - 1]; }
    __device__ __forceinline__ void offer(u64 c) {
        if (c >= key[K - 1]) return;
#pragma unroll
        for (int j = K - 1; j > 0; --j) {
            const u64 prev = key[j - 1];
            const u64 cur = key[j];
            key[j] = c < prev ? prev : (c < cur ? c : cur);
        }
        key[0] = c < key[0] ? c : key[0];
    }
    // key[j] for a run-time j, without dynamic register indexing (a select chain).
    __device__ __forceinline__ u64 at(int j) const {
        u64 r = 0ull;
#pragma unroll
        for (int t = 0; t < K; ++t) r = t == j ? key[t] : r;
        return r;
    }
};
#define FL_K_LOCAL 64
// Same contract for k up to 64 (K = 64 slots), in local memory (dynamic indexing); the K - k
// front slots are never read.
struct FlBestLocal {
    u64 key[FL_K_LOCAL];
    int first;
    __device__ __forceinline__ void init(int k, u64 sent) {
        first = FL_K_LOCAL - k;
        for (int j = first; j < FL_K_LOCAL; ++j) key[j] = sent;
    }
    __device__ __forceinline__ u64 worst() const { return key[FL_K_LOCAL - 1]; }
    __device__ __forceinline__ void offer(u64 c) {
        if (c >= key[FL_K_LOCAL - 1]) return;
        int p = FL_K_LOCAL - 1;
        while (p > first && c < key[p - 1]) {
            key[p] = key[p - 1];
            --p;
        }
        key[p] = c;
    }
    __device__ __forceinline__ u64 at(int j) const { return key[j]; }
};
// The buffer for K (0: radius mode, no buffer; 8, 16: registers; 64: local memory).
template <int K> struct FlBestFor {
    typedef FlBestReg<K> T;
    static constexpr int SLOTS = K;
};
template <> struct FlBestFor<0> {
    typedef FlBestReg<1> T;
    static constexpr int SLOTS = 1;
};
template <> struct FlBestFor<64> {
    typedef FlBestLocal T;
    static constexpr int SLOTS = FL_K_LOCAL;
};

__device__ __forceinline__ u64 fl_key(float d2, u32 id) {
    return ((u64)__float_as_uint(d2) << 32) | (u64)id;
}
__device__ __forceinline__ float fl_key_d2(u64 key) { return __uint_as_float((u32)(key >> 32)); }
