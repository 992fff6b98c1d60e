// neighbors.cu: exact k-nearest-neighbour search (k <= 64), 2-D and 3-D, f32 and f64.
//
// Semantics (identical to the CPU backend, crates/geofield/src/neighbors): for each query the up
// to k points with the smallest keys (d2, index), lexicographic, among points with d2 <= r2 and,
// with exclusion, index != the query's own index; rows ascending, padded with index -1, d2 NaN.
//
// Precision: d2 = ((p0 - q0)^2 + (p1 - q1)^2) + (p2 - q2)^2 in T, each operation rounded to
// nearest, no FMA contraction and no flush-to-zero, whatever the module's options
// (--use_fast_math): every operation is inline PTX `sub.rn`, `mul.rn`, `add.rn` without `.ftz`
// (`.rn` forbids contraction into fma). Comparisons of squared distances (all >= +0, never NaN
// because coordinates are finite) are done on their bit patterns as unsigned integers, which
// order non-negative IEEE values exactly like the values themselves, denormals included.
//
// Kernels (one thread per query, 128 threads per block; __launch_bounds__(128, 4) lets ptxas use
// up to 128 registers: with the default heuristic the grid kernel spilled at 48):
//   neighbors_brute_{f32,f64}: every point, staged through shared memory in tiles of 128;
//   neighbors_grid_{f32,f64}:  a uniform grid built on the device (grid.cu: counting-sorted
//     cells, per-axis slab ranges and their prefix max / suffix min), searched shell by shell
//     outwards with the CPU grid's exact stopping rule;
//   neighbors_tree_{f32,f64}:  a Morton-ordered grid built on the device (grid.cu), searched as
//     the implicit 2^d-ary tree of its aligned cell blocks: depth first, nearer children first,
//     a node with at most max_leaf points (or a single cell) scanned as a leaf, a node skipped
//     when the lower bound of its slab box is strictly above the current bound (the paper's
//     dynamic grid: cells split until they hold at most max points).
// The geometry (origin, cell size, dims, slab offsets) is read from the device-side plan.

#define NB_THREADS 128
#define NB_K_MAX 64

struct NeighborsBruteParams {
    u32 n_points;
    u32 n_queries;
    u32 k;
    u32 dim;
    u32 exclude_self;  // skip point j == query index
    u32 idx32;         // out_idx holds u32 (missing: 0xFFFFFFFF), else long long (missing: -1)
    double r2;  // the radius threshold already rounded to T, widened exactly (inf: none)
};
GF_CHECK_SIZE(NeighborsBruteParams, 32);

struct NeighborsGridParams {
    u32 n_points;
    u32 n_queries;
    u32 k;
    u32 dim;
    u32 exclude_self;  // skip the query's own index (self_query only)
    u32 self_query;    // queries are the grid's points in storage order
    double r2;
    u32 max_leaf;  // Morton tree: a node of at most this many points is searched as a leaf
    u32 idx32;     // out_idx holds u32 (missing: 0xFFFFFFFF), else long long (missing: -1)
};
GF_CHECK_SIZE(NeighborsGridParams, 40);
#define NB_STACK 64

// Exact arithmetic (round to nearest, no contraction, no FTZ): gf_add_rn / gf_sub_rn /
// gf_mul_rn from common.cuh.
#define nb_add gf_add_rn
#define nb_sub gf_sub_rn
#define nb_mul gf_mul_rn

// Order key of a non-negative value: its bits as an unsigned integer.
__device__ __forceinline__ u32 nb_key(float v) { return __float_as_uint(v); }
__device__ __forceinline__ u64 nb_key(double v) { return (u64)__double_as_longlong(v); }

template <typename T> struct NbTypes;
template <> struct NbTypes<float> {
    typedef u32 Key;
    static __device__ __forceinline__ float nan() { return __int_as_float(0x7fffffff); }
    static __device__ __forceinline__ float inf() { return __int_as_float(0x7f800000); }
};
template <> struct NbTypes<double> {
    typedef u64 Key;
    static __device__ __forceinline__ double nan() { return __longlong_as_double(0x7ff8000000000000LL); }
    static __device__ __forceinline__ double inf() { return __longlong_as_double(0x7ff0000000000000LL); }
};

// d2 = ((0 + d0*d0) + d1*d1) + d2*d2 with d = p - q, exactly as the CPU's dist2.
template <typename T, int D>
__device__ __forceinline__ T nb_dist2(const T* q, const T* p) {
    T s = (T)0;
#pragma unroll
    for (int a = 0; a < D; ++a) {
        const T d = nb_sub(p[a], q[a]);
        s = nb_add(s, nb_mul(d, d));
    }
    return s;
}

// The k best keys so far, ascending; keys compared as (bits of d2, index).
template <typename T>
struct NbBest {
    typedef typename NbTypes<T>::Key Key;
    Key d[NB_K_MAX];
    u32 id[NB_K_MAX];
    int len;
    int k;
    Key r2;
    Key bound;  // candidates with key above this can never enter

    __device__ __forceinline__ void init(int k_, Key r2_) {
        len = 0;
        k = k_;
        r2 = r2_;
        bound = r2_;
    }
    __device__ __forceinline__ void push(Key dk, u32 i) {
        int pos;
        if (len == k) {
            const Key wd = d[k - 1];
            if (!(dk < wd || (dk == wd && i < id[k - 1]))) return;
            pos = k - 1;
        } else {
            pos = len;
            ++len;
        }
        while (pos > 0) {
            const Key pd = d[pos - 1];
            const u32 pi = id[pos - 1];
            if (dk < pd || (dk == pd && i < pi)) {
                d[pos] = pd;
                id[pos] = pi;
                --pos;
            } else {
                break;
            }
        }
        d[pos] = dk;
        id[pos] = i;
        if (len == k) {
            const Key w = d[k - 1];
            bound = w < r2 ? w : r2;
        }
    }
    __device__ __forceinline__ void offer(Key dk, u32 i, bool skip) {
        if (dk <= bound && !skip) push(dk, i);
    }
};

// r2 arrives widened to f64 from a T value: narrow it back exactly (no FTZ, denormals kept).
__device__ __forceinline__ float nb_narrow(double v, float) {
    float r;
    asm("cvt.rn.f32.f64 %0, %1;" : "=f"(r) : "d"(v));
    return r;
}
__device__ __forceinline__ double nb_narrow(double v, double) { return v; }
__device__ __forceinline__ float nb_val(u32 k, float) { return __uint_as_float(k); }
__device__ __forceinline__ double nb_val(u64 k, double) { return __longlong_as_double((long long)k); }

// Writes row `row` (all k entries: the outputs need no clearing). out_idx is u32 when idx32
// (the number of points is below 0xFFFFFFFF, so the padding never names a point), else long long.
template <typename T>
__device__ __forceinline__ void nb_write(const NbBest<T>& b, u32 row, u32 k, u32 idx32,
                                         void* out_idx, T* out_d2) {
    const size_t base = (size_t)row * k;
    u32* o32 = (u32*)out_idx;
    long long* o64 = (long long*)out_idx;
    for (int j = 0; j < (int)k; ++j) {
        const bool has = j < b.len;
        const u32 id = has ? b.id[j] : 0xFFFFFFFFu;
        if (idx32) o32[base + j] = id;
        else o64[base + j] = has ? (long long)id : -1LL;
        out_d2[base + j] = has ? nb_val(b.d[j], (T)0) : NbTypes<T>::nan();
    }
}

// ---- brute force ------------------------------------------------------------------------------
template <typename T, int D>
__device__ __forceinline__ void nb_brute(const NeighborsBruteParams& P, const T* __restrict__ pts,
                                         const T* __restrict__ qs, void* __restrict__ out_idx,
                                         T* __restrict__ out_d2) {
    __shared__ T tile[D][NB_THREADS];
    const u32 qi = blockIdx.x * NB_THREADS + threadIdx.x;
    const bool active = qi < P.n_queries;
    T q[D];
#pragma unroll
    for (int a = 0; a < D; ++a) q[a] = active ? qs[(size_t)qi * D + a] : (T)0;
    NbBest<T> best;
    best.init((int)P.k, nb_key(nb_narrow(P.r2, (T)0)));
    for (u32 t0 = 0; t0 < P.n_points; t0 += NB_THREADS) {
        const u32 j = t0 + threadIdx.x;
        __syncthreads();
        if (j < P.n_points) {
#pragma unroll
            for (int a = 0; a < D; ++a) tile[a][threadIdx.x] = pts[(size_t)j * D + a];
        }
        __syncthreads();
        const u32 m = min((u32)NB_THREADS, P.n_points - t0);
        if (active) {
            for (u32 t = 0; t < m; ++t) {
                T p[D];
#pragma unroll
                for (int a = 0; a < D; ++a) p[a] = tile[a][t];
                const T dd = nb_dist2<T, D>(q, p);
                const u32 jj = t0 + t;
                best.offer(nb_key(dd), jj, P.exclude_self && jj == qi);
            }
        }
    }
    if (active) nb_write(best, qi, P.k, P.idx32, out_idx, out_d2);
}

// ---- uniform grid -----------------------------------------------------------------------------
// Slab arrays are concatenated per axis: axis a's slab s is at off[a] + s, off = (0, dx, dx+dy).
template <typename T>
struct NbGrid {
    const u32* starts;  // ncells + 1
    const T* pts;       // storage order, D per point
    const u32* ids;     // original index of each stored point
    const T* slab_lo;
    const T* slab_hi;
    const T* pre_max;
    const T* suf_min;
};

// Lower bound on the computed d2 of every point inside the box [lo, hi] (a cell's slab ranges),
// as the CPU's box_dist2: rounding is monotone, so it never exceeds such a point's d2. Floating
// comparisons may be FTZ under fast math; FTZ is monotone, so a taken branch is always right and
// a missed one only lowers the bound (g = 0).
template <typename T, int D>
__device__ __forceinline__ T nb_box2(const T* q, const T* lo, const T* hi) {
    T s = (T)0;
#pragma unroll
    for (int a = 0; a < D; ++a) {
        T g = (T)0;
        if (q[a] < lo[a]) g = nb_sub(lo[a], q[a]);
        else if (q[a] > hi[a]) g = nb_sub(q[a], hi[a]);
        s = nb_add(s, nb_mul(g, g));
    }
    return s;
}

// Offers the stored points s..e (one cell, or a tree leaf) to `best`.
template <typename T, int D>
__device__ __forceinline__ void nb_scan(const NbGrid<T>& G, u32 s, u32 e, const T* q,
                                        bool has_skip, u32 skip, NbBest<T>& best) {
    for (u32 t = s; t < e; ++t) {
        T p[D];
#pragma unroll
        for (int a = 0; a < D; ++a) p[a] = G.pts[(size_t)t * D + a];
        const u32 j = G.ids[t];
        best.offer(nb_key(nb_dist2<T, D>(q, p)), j, has_skip && j == skip);
    }
}

template <typename T, int D>
__device__ __forceinline__ void nb_visit(const GfGridPlan& P, const NbGrid<T>& G,
                                         const T* q, int x, int y, int z, bool has_skip, u32 skip,
                                         NbBest<T>& best) {
    const u32 id = ((u32)z * P.dims[1] + (u32)y) * P.dims[0] + (u32)x;
    const u32 s = G.starts[id], e = G.starts[id + 1];
    if (s == e) return;
    const int c[3] = {x, y, z};
    const u32* off = P.slab_off;
    T lo[D], hi[D];
#pragma unroll
    for (int a = 0; a < D; ++a) {
        lo[a] = G.slab_lo[off[a] + c[a]];
        hi[a] = G.slab_hi[off[a] + c[a]];
    }
    if (nb_key(nb_box2<T, D>(q, lo, hi)) > best.bound) return;
    nb_scan<T, D>(G, s, e, q, has_skip, skip, best);
}

// Lower bound on d2 of every point outside the block of cells at Chebyshev distance <= t of c0
// (inf when the block covers the grid), as the CPU's outside_bound.
template <typename T, int D>
__device__ __forceinline__ T nb_outside(const GfGridPlan& P, const NbGrid<T>& G,
                                        const T* q, const int* c0, int t) {
    T lb = NbTypes<T>::inf();
    const u32* off = P.slab_off;
#pragma unroll
    for (int a = 0; a < D; ++a) {
        if (c0[a] > t) {
            const T m = G.pre_max[off[a] + (u32)(c0[a] - t - 1)];
            const T g = q[a] > m ? nb_sub(q[a], m) : (T)0;
            const T g2 = nb_mul(g, g);
            if (nb_key(g2) < nb_key(lb)) lb = g2;
        }
        const int up = c0[a] + t + 1;
        if (up < (int)P.dims[a]) {
            const T m = G.suf_min[off[a] + (u32)up];
            const T g = m > q[a] ? nb_sub(m, q[a]) : (T)0;
            const T g2 = nb_mul(g, g);
            if (nb_key(g2) < nb_key(lb)) lb = g2;
        }
    }
    return lb;
}

// Query r: a stored point (self query; its row is its original index, skipped when excluding
// self) or qs[r]. Returns whether `skip` is to be skipped.
template <typename T, int D>
__device__ __forceinline__ bool nb_load_query(const NeighborsGridParams& P, const NbGrid<T>& G,
                                              const T* __restrict__ qs, u32 r, T* q, u32* row,
                                              u32* skip) {
    *row = r;
    *skip = 0u;
    if (P.self_query) {
#pragma unroll
        for (int a = 0; a < D; ++a) q[a] = G.pts[(size_t)r * D + a];
        *row = G.ids[r];
        *skip = *row;
        return P.exclude_self != 0;
    }
#pragma unroll
    for (int a = 0; a < D; ++a) q[a] = qs[(size_t)r * D + a];
    return false;
}

template <typename T, int D>
__device__ __forceinline__ void nb_grid(const NeighborsGridParams& P, const GfGridPlan* plan,
                                        const NbGrid<T>& G, const T* __restrict__ qs,
                                        void* __restrict__ out_idx, T* __restrict__ out_d2) {
    const u32 r = blockIdx.x * NB_THREADS + threadIdx.x;
    if (r >= P.n_queries) return;
    const GfGridPlan Q = *plan;
    T q[D];
    u32 row, skip;
    const bool has_skip = nb_load_query<T, D>(P, G, qs, r, q, &row, &skip);
    NbBest<T> best;
    best.init((int)P.k, nb_key(nb_narrow(P.r2, (T)0)));
    if (P.n_points > 0) {
        // Home cell: any cell is correct (the bounds use the real slab ranges); this one is
        // floor((q - origin) / h) (times 1/h: no division subroutine), clamped into the grid.
        int c0[3] = {0, 0, 0};
        int smax = 0;
#pragma unroll
        for (int a = 0; a < 3; ++a) {
            const int n = (int)Q.dims[a];
            if (a < D) {
                const double f = floor(__dmul_rn(__dsub_rn((double)q[a], Q.origin[a]), Q.inv_h));
                c0[a] = f >= 0.0 ? (f >= (double)(n - 1) ? n - 1 : (int)f) : 0;
            }
            smax = max(smax, max(c0[a], n - 1 - c0[a]));
        }
        const int dx = (int)Q.dims[0], dy = (int)Q.dims[1], dz = (int)Q.dims[2];
        for (int s = 0; s <= smax; ++s) {
            if (s > 0 && nb_key(nb_outside<T, D>(Q, G, q, c0, s - 1)) > best.bound) break;
            const int zlo = max(c0[2] - s, 0), zhi = min(c0[2] + s, dz - 1);
            const int ylo = max(c0[1] - s, 0), yhi = min(c0[1] + s, dy - 1);
            const int xlo = max(c0[0] - s, 0), xhi = min(c0[0] + s, dx - 1);
            for (int z = zlo; z <= zhi; ++z) {
                const bool onz = z == c0[2] - s || z == c0[2] + s;
                for (int y = ylo; y <= yhi; ++y) {
                    const bool on = onz || y == c0[1] - s || y == c0[1] + s;
                    if (on) {
                        for (int x = xlo; x <= xhi; ++x)
                            nb_visit<T, D>(Q, G, q, x, y, z, has_skip, skip, best);
                    } else {
                        if (c0[0] - s >= 0)
                            nb_visit<T, D>(Q, G, q, c0[0] - s, y, z, has_skip, skip, best);
                        if (s > 0 && c0[0] + s < dx)
                            nb_visit<T, D>(Q, G, q, c0[0] + s, y, z, has_skip, skip, best);
                    }
                }
            }
        }
    }
    nb_write(best, row, P.k, P.idx32, out_idx, out_d2);
}

// ---- Morton tree ------------------------------------------------------------------------------
// Node (l, m): the aligned block of 2^(d (L - l)) cells with Morton prefix m at level l, points
// starts[m << d(L - l)] .. starts[(m + 1) << d(L - l)]. Its box on axis a is the pyramid entry of
// level l at the node's coordinate on that axis (the exact coordinate range of the points binned
// into that block of slabs), so the lower bound never exceeds a member's computed d2.
template <typename T, int D>
__device__ __forceinline__ T nb_node_box2(const GfGridPlan& Q, const NbGrid<T>& G, const T* q,
                                          u32 l, u32 m) {
    T lo[D], hi[D];
#pragma unroll
    for (int a = 0; a < D; ++a) {
        const u32 c = D == 3 ? gf_compact3(m >> a) : gf_compact2(m >> a);
        const u32 e = Q.slab_off[a] + (1u << l) - 1u + c;
        lo[a] = G.slab_lo[e];
        hi[a] = G.slab_hi[e];
    }
    return nb_box2<T, D>(q, lo, hi);
}

template <typename T, int D>
__device__ __forceinline__ void nb_tree(const NeighborsGridParams& P, const GfGridPlan* plan,
                                        const NbGrid<T>& G, const T* __restrict__ qs,
                                        void* __restrict__ out_idx, T* __restrict__ out_d2) {
    typedef typename NbTypes<T>::Key Key;
    const u32 r = blockIdx.x * NB_THREADS + threadIdx.x;
    if (r >= P.n_queries) return;
    const GfGridPlan Q = *plan;
    T q[D];
    u32 row, skip;
    const bool has_skip = nb_load_query<T, D>(P, G, qs, r, q, &row, &skip);
    NbBest<T> best;
    best.init((int)P.k, nb_key(nb_narrow(P.r2, (T)0)));
    // Stack of (level << 27 | prefix, lower bound key); depth-first, at most L (2^d - 1) + 1 live.
    u32 st_node[NB_STACK];
    Key st_lb[NB_STACK];
    int sp = 0;
    const u32 L = Q.levels;
    if (P.n_points > 0) {
        st_node[0] = 0u;
        st_lb[0] = nb_key(nb_node_box2<T, D>(Q, G, q, 0u, 0u));
        sp = 1;
    }
    while (sp > 0) {
        --sp;
        if (st_lb[sp] > best.bound) continue;
        const u32 l = st_node[sp] >> 27, m = st_node[sp] & 0x07FFFFFFu;
        const u32 shift = (u32)D * (L - l);
        const u32 s = G.starts[m << shift], e = G.starts[(m + 1u) << shift];
        if (l == L || e - s <= P.max_leaf) {
            nb_scan<T, D>(G, s, e, q, has_skip, skip, best);
            continue;
        }
        // Children: non-empty and not pruned, pushed farthest first (nearest popped first).
        const u32 cs = shift - (u32)D;
        u32 cn[1 << D];
        Key cl[1 << D];
        int nc = 0;
        u32 b0 = s;
#pragma unroll
        for (u32 c = 0; c < (1u << D); ++c) {
            const u32 cm = (m << D) | c;
            const u32 b1 = c + 1u == (1u << D) ? e : G.starts[(cm + 1u) << cs];
            if (b1 > b0) {
                const Key lb = nb_key(nb_node_box2<T, D>(Q, G, q, l + 1u, cm));
                if (lb <= best.bound) {
                    int pos = nc++;
                    while (pos > 0 && cl[pos - 1] < lb) {
                        cl[pos] = cl[pos - 1];
                        cn[pos] = cn[pos - 1];
                        --pos;
                    }
                    cl[pos] = lb;
                    cn[pos] = ((l + 1u) << 27) | cm;
                }
            }
            b0 = b1;
        }
        for (int c = 0; c < nc && sp < NB_STACK; ++c) {
            st_node[sp] = cn[c];
            st_lb[sp] = cl[c];
            ++sp;
        }
    }
    nb_write(best, row, P.k, P.idx32, out_idx, out_d2);
}

// ---- entry points -----------------------------------------------------------------------------
#define NB_BRUTE(SUF, T)                                                                         \
    GF_KERNEL_IF(neighbors_brute_##SUF)(extern "C" __global__ void __launch_bounds__(NB_THREADS, 4) neighbors_brute_##SUF( \
        NeighborsBruteParams P, const T* pts, const T* qs, void* out_idx, T* out_d2) {      \
        if (P.dim == 3) nb_brute<T, 3>(P, pts, qs, out_idx, out_d2);                             \
        else nb_brute<T, 2>(P, pts, qs, out_idx, out_d2);                                        \
    })
NB_BRUTE(f32, float)
NB_BRUTE(f64, double)

#define NB_GRID(SUF, T)                                                                          \
    GF_KERNEL_IF(neighbors_grid_##SUF)(extern "C" __global__ void __launch_bounds__(NB_THREADS, 4) neighbors_grid_##SUF( \
        NeighborsGridParams P, const GfGridPlan* plan, const u32* starts, const T* pts,          \
        const u32* ids, const T* slab_lo, const T* slab_hi, const T* pre_max, const T* suf_min,  \
        const T* qs, void* out_idx, T* out_d2) {                                            \
        NbGrid<T> G = {starts, pts, ids, slab_lo, slab_hi, pre_max, suf_min};                    \
        if (P.dim == 3) nb_grid<T, 3>(P, plan, G, qs, out_idx, out_d2);                          \
        else nb_grid<T, 2>(P, plan, G, qs, out_idx, out_d2);                                     \
    })                                                                                            \
    GF_KERNEL_IF(neighbors_tree_##SUF)(extern "C" __global__ void __launch_bounds__(NB_THREADS, 4) neighbors_tree_##SUF( \
        NeighborsGridParams P, const GfGridPlan* plan, const u32* starts, const T* pts,          \
        const u32* ids, const T* slab_lo, const T* slab_hi, const T* qs, void* out_idx,     \
        T* out_d2) {                                                                             \
        NbGrid<T> G = {starts, pts, ids, slab_lo, slab_hi, slab_lo, slab_hi};                    \
        if (P.dim == 3) nb_tree<T, 3>(P, plan, G, qs, out_idx, out_d2);                          \
        else nb_tree<T, 2>(P, plan, G, qs, out_idx, out_d2);                                     \
    })
NB_GRID(f32, float)
NB_GRID(f64, double)
