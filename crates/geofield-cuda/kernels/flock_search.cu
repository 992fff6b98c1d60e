#line 2 "flock_search.cu"
// Grid search, uniform and dynamic. Part of the "flock" module: flock.cu, flock_grid.cu,
// flock_search.cu and flock_step.cu are concatenated in that order (geofield_cuda::MODULES).

// ---- grid search ------------------------------------------------------------------------------
// Conservative per-axis distance from q to cell c's slab (lower edge o + c h - mu, upper edge
// o + (c + 1) h + mu), in f64.
struct FlGridQ {
    double q[3];
    double o[3];
    double mu[3];
    double h;
    int c0[3];
    int dims[3];
    bool prune;
};
__device__ __forceinline__ double fl_gap(const FlGridQ& Q, int a, int c) {
    if (!Q.prune) return 0.0;
    const double lo = Q.o[a] + (double)c * Q.h - Q.mu[a];
    const double hi = Q.o[a] + (double)(c + 1) * Q.h + Q.mu[a];
    return Q.q[a] < lo ? lo - Q.q[a] : (Q.q[a] > hi ? Q.q[a] - hi : 0.0);
}
// Lower bound on the computed f32 d2 of a point whose exact distance is at least sqrt(g2).
__device__ __forceinline__ double fl_lb(double g2) { return g2 * 0.999999 - 0x1p-140; }

__device__ __forceinline__ void fl_grid_query(const FlockPlan& G, V3 q, FlGridQ& Q) {
    Q.q[0] = fl_f2d(q.x);
    Q.q[1] = fl_f2d(q.y);
    Q.q[2] = fl_f2d(q.z);
    fl_cell3(G, q.x, q.y, q.z, Q.c0);
#pragma unroll
    for (int a = 0; a < 3; ++a) {
        Q.o[a] = G.o[a];
        Q.mu[a] = G.mu[a];
        Q.dims[a] = (int)G.dims[a];
    }
    Q.h = G.h;
    Q.prune = G.single == 0u;
}

// Lower bound on the computed d2 of every point outside the block of cells at Chebyshev
// distance < s from c0 (s >= 1); +inf when that block covers the grid. Such a point lies in a
// cell c with c_a >= c0_a + s (so p_a >= the lower edge of cell c0_a + s) or c_a <= c0_a - s
// (p_a <= the upper edge of cell c0_a - s) on some axis a: one-sided gaps, valid for any c0.
__device__ __forceinline__ double fl_outside(const FlGridQ& Q, int s) {
    double g2 = __longlong_as_double(0x7ff0000000000000LL);
    bool any = false;
#pragma unroll
    for (int a = 0; a < 3; ++a) {
        if (Q.c0[a] + s <= Q.dims[a] - 1) {
            const double lo = Q.o[a] + (double)(Q.c0[a] + s) * Q.h - Q.mu[a];
            const double g = Q.prune && lo > Q.q[a] ? lo - Q.q[a] : 0.0;
            g2 = fmin(g2, g * g);
            any = true;
        }
        if (Q.c0[a] - s >= 0) {
            const double hi = Q.o[a] + (double)(Q.c0[a] - s + 1) * Q.h + Q.mu[a];
            const double g = Q.prune && Q.q[a] > hi ? Q.q[a] - hi : 0.0;
            g2 = fmin(g2, g * g);
            any = true;
        }
    }
    return any ? fl_lb(g2) : g2;
}

template <typename Best>
__device__ __forceinline__ void fl_visit_nearest(const u32* __restrict__ starts,
                                                 const float4* __restrict__ pos, u32 cell, V3 q,
                                                 u32 me, Best& best) {
    const u32 s = starts[cell], e = starts[cell + 1u];
    for (u32 t = s; t < e; ++t) {
        const float4 p = pos[t];
        const u32 id = __float_as_uint(p.w);
        const u64 key = fl_key(fl_dist2(q, p), id);
        if (key < best.worst() && id != me) best.offer(key);
    }
}

// Visits cell (x, y, z) unless its conservative box lies beyond the current bound.
template <typename Best>
__device__ __forceinline__ void fl_try_cell(const FlGridQ& Q, const u32* __restrict__ starts,
                                            const float4* __restrict__ pos, u32 row, int x,
                                            double gzy, V3 q, u32 me, Best& best) {
    const double gx = fl_gap(Q, 0, x);
    if (fl_lb(gzy + gx * gx) > fl_f2d(fl_key_d2(best.worst()))) return;
    fl_visit_nearest(starts, pos, row + (u32)x, q, me, best);
}

// Shell-by-shell nearest search (exact: see the header).
template <typename Best>
__device__ __forceinline__ void fl_search_grid(const FlockPlan& G, const u32* __restrict__ starts,
                                               const float4* __restrict__ pos, V3 q, u32 me,
                                               Best& best) {
    FlGridQ Q;
    fl_grid_query(G, q, Q);
    int smax = 0;
#pragma unroll
    for (int a = 0; a < 3; ++a) smax = max(smax, max(Q.c0[a], Q.dims[a] - 1 - Q.c0[a]));
    const u32 dx = (u32)Q.dims[0], dy = (u32)Q.dims[1];
    for (int s = 0; s <= smax; ++s) {
        if (s > 0 && fl_outside(Q, s) > fl_f2d(fl_key_d2(best.worst()))) break;
        const int zlo = max(Q.c0[2] - s, 0), zhi = min(Q.c0[2] + s, Q.dims[2] - 1);
        const int ylo = max(Q.c0[1] - s, 0), yhi = min(Q.c0[1] + s, Q.dims[1] - 1);
        const int xlo = max(Q.c0[0] - s, 0), xhi = min(Q.c0[0] + s, Q.dims[0] - 1);
        for (int z = zlo; z <= zhi; ++z) {
            const bool onz = z == Q.c0[2] - s || z == Q.c0[2] + s;
            const double gz = fl_gap(Q, 2, z);
            for (int y = ylo; y <= yhi; ++y) {
                const bool on = onz || y == Q.c0[1] - s || y == Q.c0[1] + s;
                const double gy = fl_gap(Q, 1, y);
                const double gzy = gz * gz + gy * gy;
                if (fl_lb(gzy) > fl_f2d(fl_key_d2(best.worst()))) continue;
                const u32 row = ((u32)z * dy + (u32)y) * dx;
                // A face row of the shell: every cell; an inner row: its two ends (s >= 1
                // there, as at s = 0 every row is a face row). One call site keeps code small.
                const int x0 = on ? xlo : Q.c0[0] - s;
                const int x1 = on ? xhi : Q.c0[0] + s;
                const int xstep = on ? 1 : 2 * s;
                for (int x = x0; x <= x1; x += xstep) {
                    if (x < 0 || x >= Q.dims[0]) continue;
                    fl_try_cell(Q, starts, pos, row, x, gzy, q, me, best);
                }
            }
        }
    }
}

// Radius search over the grid: cells overlapping [q - r, q + r] in z, y, x order, agents of a
// cell in ascending id; accumulates every j != me with d2 <= r2 as it goes.
__device__ __forceinline__ u32 fl_radius_grid(const FlockParams& P, const FlockPlan& G,
                                              const u32* __restrict__ starts,
                                              const float4* __restrict__ pos,
                                              const float4* __restrict__ vel, V3 q, V3 f, u32 me,
                                              FlSums& sums) {
    FlGridQ Q;
    fl_grid_query(G, q, Q);
    const u32 r2b = __float_as_uint(P.r2);
    const double r2d = fl_f2d(P.r2);
    const double rr = sqrt(r2d) * 1.000001 + 1e-30;
    int lo[3], hi[3];
#pragma unroll
    for (int a = 0; a < 3; ++a) {
        lo[a] = 0;
        hi[a] = Q.dims[a] - 1;
        if (Q.prune) {
            const double last = (double)(Q.dims[a] - 1);
            double l = floor((Q.q[a] - rr - Q.o[a] - Q.mu[a]) / Q.h) - 1.0;
            double u = floor((Q.q[a] + rr - Q.o[a] + Q.mu[a]) / Q.h) + 1.0;
            l = l > 0.0 ? (l < last ? l : last) : 0.0;
            u = u > 0.0 ? (u < last ? u : last) : 0.0;
            lo[a] = (int)l;
            hi[a] = (int)u;
        }
    }
    u32 count = 0u;
    const u32 dx = (u32)Q.dims[0], dy = (u32)Q.dims[1];
    for (int z = lo[2]; z <= hi[2]; ++z) {
        const double gz = fl_gap(Q, 2, z);
        for (int y = lo[1]; y <= hi[1]; ++y) {
            const double gy = fl_gap(Q, 1, y);
            const double gzy = gz * gz + gy * gy;
            if (fl_lb(gzy) > r2d) continue;
            const u32 row = ((u32)z * dy + (u32)y) * dx;
            for (int x = lo[0]; x <= hi[0]; ++x) {
                const double gx = fl_gap(Q, 0, x);
                if (fl_lb(gzy + gx * gx) > r2d) continue;
                const u32 cell = row + (u32)x;
                const u32 s = starts[cell], e = starts[cell + 1u];
                for (u32 t = s; t < e; ++t) {
                    const float4 p = pos[t];
                    const u32 id = __float_as_uint(p.w);
                    const float d2 = fl_dist2(q, p);
                    if (__float_as_uint(d2) <= r2b && id != me) {
                        fl_accumulate(P.c, sums, q, f, v_of(p), v_of(vel[t]), d2);
                        ++count;
                    }
                }
            }
        }
    }
    return count;
}

// ---- dynamic grid (Morton-ordered cells searched as an implicit octree) ------------------------
// Node (l, m): the aligned block of 8^(L - l) cells with Morton prefix m, agents starts[m << 3(L -
// l)] .. starts[(m + 1) << 3(L - l)]; its box on axis a spans cells [c << (L - l), (c + 1) << (L -
// l)) with c the node's coordinate on that axis, with the conservative edges of the grid search.
// A node of at most max_leaf agents (or a single cell) is scanned as a leaf.
#define FL_STACK 64
__device__ __forceinline__ double fl_node_gap2(const FlGridQ& Q, u32 levels, u32 l, u32 m) {
    if (!Q.prune) return 0.0;
    double g2 = 0.0;
#pragma unroll
    for (int a = 0; a < 3; ++a) {
        const u32 c = gf_compact3(m >> a);
        const u32 sh = levels - l;
        const double lo = Q.o[a] + (double)(c << sh) * Q.h - Q.mu[a];
        const double hi = Q.o[a] + (double)((c + 1u) << sh) * Q.h + Q.mu[a];
        const double g = Q.q[a] < lo ? lo - Q.q[a] : (Q.q[a] > hi ? Q.q[a] - hi : 0.0);
        g2 += g * g;
    }
    return g2;
}

// Depth first over the octree. Nearest mode (RADIUS = false): children nearest first, a node
// skipped when fl_lb(its gap2) is above the k-th key's d2. Radius mode: children in Morton order
// (deterministic sum order), skipped when above r2; every agent j != me with d2 <= r2 accumulated.
template <bool RADIUS, typename Best>
__device__ __forceinline__ u32 fl_search_tree(const FlockParams& P, const FlockPlan& G,
                                              const u32* __restrict__ starts,
                                              const float4* __restrict__ pos,
                                              const float4* __restrict__ vel, V3 q, V3 f, u32 me,
                                              Best& best, FlSums& sums) {
    FlGridQ Q;
    fl_grid_query(G, q, Q);
    const u32 L = G.levels;
    const u32 r2b = __float_as_uint(P.r2);
    const double r2d = fl_f2d(P.r2);
    u32 st_node[FL_STACK];
    double st_lb[FL_STACK];
    int sp = 1;
    st_node[0] = 0u;
    st_lb[0] = 0.0;
    u32 count = 0u;
    while (sp > 0) {
        --sp;
        const double bound = RADIUS ? r2d : fl_f2d(fl_key_d2(best.worst()));
        if (st_lb[sp] > bound) continue;
        const u32 l = st_node[sp] >> 27, m = st_node[sp] & 0x07FFFFFFu;
        const u32 shift = 3u * (L - l);
        const u32 s = starts[m << shift], e = starts[(m + 1u) << shift];
        if (l == L || e - s <= P.max_leaf) {
            for (u32 t = s; t < e; ++t) {
                const float4 p = pos[t];
                const u32 id = __float_as_uint(p.w);
                const float d2 = fl_dist2(q, p);
                if constexpr (RADIUS) {
                    if (__float_as_uint(d2) <= r2b && id != me) {
                        fl_accumulate(P.c, sums, q, f, v_of(p), v_of(vel[t]), d2);
                        ++count;
                    }
                } else {
                    const u64 key = fl_key(d2, id);
                    if (key < best.worst() && id != me) best.offer(key);
                }
            }
            continue;
        }
        const u32 cs = shift - 3u;
        u32 cn[8];
        double cl[8];
        int nc = 0;
        u32 b0 = s;
#pragma unroll
        for (u32 c = 0; c < 8u; ++c) {
            const u32 cm = (m << 3) | c;
            const u32 b1 = c == 7u ? e : starts[(cm + 1u) << cs];
            if (b1 > b0) {
                const double lb = fl_lb(fl_node_gap2(Q, L, l + 1u, cm));
                if (lb <= bound) {
                    int p = nc++;
                    // Nearest: farthest first on the stack; radius: Morton order when popped.
                    while (p > 0 && (RADIUS ? true : cl[p - 1] < lb)) {
                        cl[p] = cl[p - 1];
                        cn[p] = cn[p - 1];
                        --p;
                    }
                    cl[p] = lb;
                    cn[p] = ((l + 1u) << 27) | cm;
                }
            }
            b0 = b1;
        }
        // At most 7 L + 1 <= 57 entries are live (depth first), within FL_STACK.
        for (int c = 0; c < nc && sp < FL_STACK; ++c) {
            st_node[sp] = cn[c];
            st_lb[sp] = cl[c];
            ++sp;
        }
    }
    return count;
}
