// flock.cu: OpenSteer's boids flock (crates/geofield/src/flock) with the whole step on the device.
//
// State (per agent, storage order, ping-pong between two buffer sets): pos4 = (x, y, z, id bits),
// vel4 = (forward x, y, z, speed), acc4 = (smoothed acceleration x, y, z, 0). `id` is the agent's
// stable id; the storage order is the uniform grid's cell order of the previous step (grid
// search) or id order (brute force).
//
// One grid step (no host round trip; every kernel reads the device-side plan):
//   flock_bounds      min / max of the positions (order-preserving integer encodings, block
//                     reduction + atomics); the last block to finish writes the plan (cell size,
//                     origin, dims, conservative cell-edge margins) and resets the accumulators.
//   flock_count       cell of each agent, per-cell counts (warp-aggregated atomics; the returned
//                     value is the agent's rank in its cell) and per-tile totals for the scan.
//   flock_scan        exclusive scan of the counts (tiles of 4096 cells; each tile adds up the
//                     totals of the tiles before it), zeroing the counts for the next step.
//   flock_scatter     the state into cell order (slot = start[cell] + rank); slot_of[id] = slot.
//   flock_sort_cells  (radius mode only) each cell's agents into ascending id order, so that the
//                     radius-mode sums run in a deterministic order.
//   flock_step_grid_* search + steering + integration + wrap, one thread per storage slot,
//                     reading state t and writing state t + 1 at the same slot of the other set.
// Brute force: flock_step_brute_* alone (candidates tiled through shared memory).
//
// Exactness. All f32 arithmetic of the model is inline PTX with round-to-nearest and without
// .ftz (add.rn, sub.rn, mul.rn, div.rn, sqrt.rn, setp without .ftz): no FMA contraction, no
// approximate division or square root and no flush-to-zero, whatever the module's options
// (--use_fast_math). The operation order mirrors crates/geofield/src/flock/steer.rs, so from the
// same state and neighbour lists the CPU and the GPU produce the same bits. The module's PTX has
// no .ftz, .approx or f32 fma instruction at all (checked by a test).
//
// Search. Nearest mode keeps the k best keys (bits(d2) << 32 | id), a single integer compare
// being the (d2, id) tie-break. The grid search visits Chebyshev shells around the query's
// cell, skips cells and stops with lower bounds computed in f64 from conservative cell edges:
// a point binned into cell c on an axis lies in [o + c h - mu, o + (c + 1) h + mu], where
// mu = 1e-6 (|o| + dims h) exceeds the binning's error (t = fl(fl(p - o) fl(1/h)): three
// roundings, at most 3 2^-24 relative on p - o <= dims h, plus the f32 clamp threshold dims - 1)
// and the f64 evaluation error; and a computed d2 is never below (1 - 1e-6) times the exact one
// (minus 2^-140 for subnormal results: five roundings of non-negative terms). A cell is
// skipped, or the search stops, only when such a bound is strictly above the current bound (the
// k-th key's d2 when k are held, else r2), so no candidate that could enter is ever missed; the
// result does not depend on the storage order or the choice of cell size.
// Radius mode visits the cells overlapping [q - r, q + r] (with a margin) in z, y, x order and
// each cell's agents in ascending id (flock_sort_cells), accumulating as it goes.

#define FL_THREADS 128
#define FL_AUX 256
#define FL_TILE 4096
#define FL_TILE_LOG2 12
static_assert(FL_TILE == GF_TILE && FL_AUX * 16 == FL_TILE, "scan tiles: common.cuh's");
#define FL_NONE 0xFFFFFFFFu

struct FlockConstants {
    float world_radius;
    float max_force;
    float max_speed;
    float mass;
    float near2;
    float sep_r2;
    float sep_cos;
    float sep_weight;
    float ali_r2;
    float ali_cos;
    float ali_weight;
    float coh_r2;
    float coh_cos;
    float coh_weight;
};
GF_CHECK_SIZE(FlockConstants, 56);

struct FlockParams {
    FlockConstants c;
    u32 n;         // agents
    u32 k;         // 1..=64: nearest mode; 0: radius mode
    float r2;      // neighbour iff d2 <= r2 (+0 or positive, finite)
    float dt;
    float rate;    // clamp(9 dt, 0.15, 0.4), computed on the host exactly as the CPU does
    u32 detail;    // write neighbour rows, counts and forces
    u32 cell_cap;  // cells allocated (the plan never uses more)
    u32 tile_cap;  // scan tiles allocated
    u32 tree;      // dynamic grid: Morton-ordered cells searched as an implicit octree
    u32 max_leaf;  // tree: a node of at most this many agents is scanned as a leaf
};
GF_CHECK_SIZE(FlockParams, 96);

// Written by the last block of flock_bounds, read by every later kernel of the step.
struct FlockPlan {
    double o[3];   // origin (minimum of the positions), exact
    double h;      // cell size (= h32 exactly)
    double mu[3];  // per-axis margin of the conservative cell edges
    float of[3];   // origin in f32
    float h32;
    float inv32;   // 1 / h32 rounded to nearest
    u32 dims[3];
    u32 ncells;
    u32 ntiles;    // scan tiles covering cells 0..=ncells
    u32 single;    // degenerate input: one cell, no pruning
    u32 levels;    // tree: 2^levels cells per axis, Morton order (0: uniform grid)
};
static_assert(sizeof(FlockPlan) <= 128, "FlockPlan must fit the 128-byte host buffer");

// ---- exact f32 arithmetic: round to nearest, no contraction, no flush-to-zero ----------------
// fl_add / fl_sub / fl_mul / fl_div: common.cuh's gf_*_rn (round to nearest, no FMA, no FTZ).
#define fl_add gf_add_rn
#define fl_sub gf_sub_rn
#define fl_mul gf_mul_rn
#define fl_div gf_div_rn
__device__ __forceinline__ float fl_sqrt(float a) {
    float r;
    asm("sqrt.rn.f32 %0, %1;" : "=f"(r) : "f"(a));
    return r;
}
#define FL_CMP(NAME, OP)                                                                         \
    __device__ __forceinline__ bool NAME(float a, float b) {                                     \
        u32 r;                                                                                   \
        asm("{\n\t.reg .pred p;\n\tsetp." OP ".f32 p, %1, %2;\n\tselp.u32 %0, 1, 0, p;\n\t}"     \
            : "=r"(r)                                                                            \
            : "f"(a), "f"(b));                                                                   \
        return r != 0u;                                                                          \
    }
FL_CMP(fl_lt, "lt")
FL_CMP(fl_le, "le")
FL_CMP(fl_gt, "gt")
FL_CMP(fl_ge, "ge")
FL_CMP(fl_eq, "eq")
// u32 -> f32 (Rust's `n as f32`: round to nearest).
__device__ __forceinline__ float fl_u2f(u32 v) {
    float r;
    asm("cvt.rn.f32.u32 %0, %1;" : "=f"(r) : "r"(v));
    return r;
}
// Exact widening and round-to-nearest narrowing, without flushing subnormals.
__device__ __forceinline__ double fl_f2d(float v) {
    double r;
    asm("cvt.f64.f32 %0, %1;" : "=d"(r) : "f"(v));
    return r;
}
__device__ __forceinline__ float fl_d2f(double v) {
    float r;
    asm("cvt.rn.f32.f64 %0, %1;" : "=f"(r) : "d"(v));
    return r;
}
// floor(v) as an int (v finite and within int range).
__device__ __forceinline__ int fl_floor_i(float v) {
    int r;
    asm("cvt.rmi.s32.f32 %0, %1;" : "=r"(r) : "f"(v));
    return r;
}

// ---- vectors, as steer.rs ---------------------------------------------------------------------
struct V3 {
    float x, y, z;
};
__device__ __forceinline__ V3 v3(float x, float y, float z) {
    V3 r;
    r.x = x;
    r.y = y;
    r.z = z;
    return r;
}
__device__ __forceinline__ V3 v_zero() { return v3(0.0f, 0.0f, 0.0f); }
__device__ __forceinline__ V3 v_add(V3 a, V3 b) {
    return v3(fl_add(a.x, b.x), fl_add(a.y, b.y), fl_add(a.z, b.z));
}
__device__ __forceinline__ V3 v_sub(V3 a, V3 b) {
    return v3(fl_sub(a.x, b.x), fl_sub(a.y, b.y), fl_sub(a.z, b.z));
}
__device__ __forceinline__ V3 v_scale(V3 a, float s) {
    return v3(fl_mul(a.x, s), fl_mul(a.y, s), fl_mul(a.z, s));
}
__device__ __forceinline__ V3 v_div(V3 a, float s) {
    return v3(fl_div(a.x, s), fl_div(a.y, s), fl_div(a.z, s));
}
// (a0 b0 + a1 b1) + a2 b2
__device__ __forceinline__ float v_dot(V3 a, V3 b) {
    return fl_add(fl_add(fl_mul(a.x, b.x), fl_mul(a.y, b.y)), fl_mul(a.z, b.z));
}
__device__ __forceinline__ float v_length(V3 a) { return fl_sqrt(v_dot(a, a)); }
__device__ __forceinline__ V3 v_unit(V3 a) {
    const float m = v_length(a);
    return fl_gt(m, 0.0f) ? v_div(a, m) : v_zero();
}
__device__ __forceinline__ V3 v_truncate(V3 a, float mx) {
    const float l2 = v_dot(a, a);
    if (fl_le(l2, fl_mul(mx, mx))) return a;
    return v_scale(a, fl_div(mx, fl_sqrt(l2)));
}
__device__ __forceinline__ V3 v_of(float4 v) { return v3(v.x, v.y, v.z); }

// d2 = ((0 + dx dx) + dy dy) + dz dz with d = p - q (the neighbour search's, as the CPU's).
__device__ __forceinline__ float fl_dist2(V3 q, float4 p) {
    const float dx = fl_sub(p.x, q.x);
    const float dy = fl_sub(p.y, q.y);
    const float dz = fl_sub(p.z, q.z);
    return fl_add(fl_add(fl_add(0.0f, fl_mul(dx, dx)), fl_mul(dy, dy)), fl_mul(dz, dz));
}

// ---- steering and integration: steer.rs, operation for operation ------------------------------
struct FlSums {
    V3 sep, ali, coh;
    u32 n_sep, n_ali, n_coh;
};
__device__ __forceinline__ void fl_sums_init(FlSums& s) {
    s.sep = v_zero();
    s.ali = v_zero();
    s.coh = v_zero();
    s.n_sep = 0;
    s.n_ali = 0;
    s.n_coh = 0;
}

// steer::accumulate
__device__ __forceinline__ void fl_accumulate(const FlockConstants& c, FlSums& s, V3 pi, V3 fi,
                                              V3 pj, V3 fj, float d2) {
    const V3 off = v_sub(pj, pi);
    const bool near = fl_lt(d2, c.near2);
    float fwd = 0.0f;
    if (!near) {
        const float d = fl_sqrt(d2);
        fwd = v_dot(fi, v_div(off, d));
    }
    if (near || (fl_le(d2, c.sep_r2) && fl_gt(fwd, c.sep_cos))) {
        if (fl_gt(d2, 0.0f)) s.sep = v_add(s.sep, v_div(v_sub(pi, pj), d2));
        s.n_sep += 1;
    }
    if (near || (fl_le(d2, c.ali_r2) && fl_gt(fwd, c.ali_cos))) {
        s.ali = v_add(s.ali, fj);
        s.n_ali += 1;
    }
    if (near || (fl_le(d2, c.coh_r2) && fl_gt(fwd, c.coh_cos))) {
        s.coh = v_add(s.coh, pj);
        s.n_coh += 1;
    }
}

// steer::force
__device__ __forceinline__ V3 fl_force(const FlockConstants& c, const FlSums& s, V3 pi, V3 fi) {
    const V3 sep = v_unit(s.sep);
    const V3 ali = s.n_ali > 0 ? v_unit(v_sub(v_div(s.ali, fl_u2f(s.n_ali)), fi)) : v_zero();
    const V3 coh = s.n_coh > 0 ? v_unit(v_sub(v_div(s.coh, fl_u2f(s.n_coh)), pi)) : v_zero();
    return v_add(v_add(v_scale(sep, c.sep_weight), v_scale(ali, c.ali_weight)),
                 v_scale(coh, c.coh_weight));
}

// steer::pow20
__device__ __forceinline__ float fl_pow20(float x) {
    const float x2 = fl_mul(x, x);
    const float x4 = fl_mul(x2, x2);
    const float x8 = fl_mul(x4, x4);
    const float x16 = fl_mul(x8, x8);
    return fl_mul(x16, x4);
}

// steer::adjust_low_speed
__device__ __forceinline__ V3 fl_adjust_low_speed(const FlockConstants& c, V3 f, float speed,
                                                  V3 fwd) {
    const float max_adj = fl_mul(c.max_speed, 0.2f);
    if (fl_gt(speed, max_adj) || (fl_eq(f.x, 0.0f) && fl_eq(f.y, 0.0f) && fl_eq(f.z, 0.0f)))
        return f;
    const float range = fl_div(speed, max_adj);
    const float cosine = fl_add(1.0f, fl_mul(-2.0f, fl_pow20(range)));
    const float len = v_length(f);
    if (fl_eq(len, 0.0f)) return f;
    const V3 dir = v_div(f, len);
    if (fl_ge(v_dot(dir, fwd), cosine)) return f;
    const V3 perp = v_sub(f, v_scale(fwd, v_dot(f, fwd)));
    const V3 uperp = v_unit(perp);
    const float perp_dist = fl_sqrt(fl_sub(1.0f, fl_mul(cosine, cosine)));
    const V3 c0 = v_scale(fwd, cosine);
    const V3 c1 = v_scale(uperp, perp_dist);
    return v_scale(v_add(c0, c1), len);
}

struct FlAgent {
    V3 pos, fwd, acc;
    float speed;
};

// steer::integrate (rate = clamp(9 dt, 0.15, 0.4) from the host).
__device__ __forceinline__ FlAgent fl_integrate(const FlockConstants& c, const FlAgent& a,
                                                V3 force, float dt, float rate) {
    const V3 adjusted = fl_adjust_low_speed(c, force, a.speed, a.fwd);
    const V3 clipped = v_truncate(adjusted, c.max_force);
    const V3 new_acc = v_div(clipped, c.mass);
    V3 acc = a.acc;
    if (fl_gt(dt, 0.0f)) acc = v_add(acc, v_scale(v_sub(new_acc, acc), rate));
    V3 vel = v_add(v_scale(a.fwd, a.speed), v_scale(acc, dt));
    vel = v_truncate(vel, c.max_speed);
    const float speed = v_length(vel);
    V3 pos = v_add(a.pos, v_scale(vel, dt));
    const V3 fwd = fl_gt(speed, 0.0f) ? v_div(vel, speed) : a.fwd;
    const float r = v_length(pos);
    if (fl_gt(r, c.world_radius))
        pos = v_add(pos, v_scale(v_scale(v_div(pos, r), c.world_radius), -2.0f));
    FlAgent out;
    out.pos = pos;
    out.fwd = fwd;
    out.acc = acc;
    out.speed = speed;
    return out;
}

// ---- grid plan and binning ------------------------------------------------------------------
// Order-preserving u32 encoding of a float (for atomicMin / atomicMax), and its inverse.
__device__ __forceinline__ u32 fl_enc(float f) { return (u32)gf_enc(f); }
__device__ __forceinline__ float fl_dec(u32 e) { return gf_dec((u64)e, 0.0f); }

// Cell coordinate on one axis: clamp(floor((p - o) * inv), 0, dims - 1), in f32 (NaN -> 0).
__device__ __forceinline__ int fl_cell_axis(float p, float o, float inv, u32 dims) {
    const float t = fl_mul(fl_sub(p, o), inv);
    if (!fl_ge(t, 0.0f)) return 0;
    if (fl_ge(t, fl_u2f(dims - 1u))) return (int)dims - 1;
    const int c = fl_floor_i(t);
    return c < (int)dims - 1 ? c : (int)dims - 1;
}
__device__ __forceinline__ void fl_cell3(const FlockPlan& G, float x, float y, float z, int* c) {
    c[0] = fl_cell_axis(x, G.of[0], G.inv32, G.dims[0]);
    c[1] = fl_cell_axis(y, G.of[1], G.inv32, G.dims[1]);
    c[2] = fl_cell_axis(z, G.of[2], G.inv32, G.dims[2]);
}
__device__ __forceinline__ u32 fl_cell_id(const FlockPlan& G, float4 p) {
    int c[3];
    fl_cell3(G, p.x, p.y, p.z, c);
    if (G.levels > 0u)
        return gf_spread3((u32)c[0]) | (gf_spread3((u32)c[1]) << 1) | (gf_spread3((u32)c[2]) << 2);
    return ((u32)c[2] * G.dims[1] + (u32)c[1]) * G.dims[0] + (u32)c[0];
}

// x^(1/3) for a finite x > 0 by Newton's iteration in f64 (libdevice's cbrt goes through f32
// approximations; any deterministic value would do, this keeps the module free of them).
__device__ double fl_cbrt(double x) {
    const long long bits = __double_as_longlong(x);
    const int e = (int)((bits >> 52) & 0x7FF) - 1023;
    // 2^(e/3) as the starting point (within a factor 2 of the root for normal x); Newton's
    // iteration then converges to full precision in about 7 steps.
    double y = __longlong_as_double((long long)(1023 + e / 3) << 52);
    for (int it = 0; it < 12; ++it) {
        const double next = (2.0 * y + x / (y * y)) / 3.0;
        if (next == y) break;
        y = next;
    }
    return y;
}

// The plan from the bounding box: h = (V 2 / N)^(1/d') over the d' positive extents (1 when
// none), capped at the neighbour radius, doubled while the grid has more than min(max(4N, 64),
// capacity) cells; origin = the minimum; dims = floor(ext / h) + 1. Dynamic grid (P.tree):
// 2^L cells per axis of size h = (1 + 1e-6) max extent / 2^L, 2^(3L) <= that cell limit. Degenerate inputs (extents
// beyond 1e37, cell sizes outside [1e-30, 1e37]) get one cell (brute force, still exact).
__device__ void fl_make_plan(const FlockParams& P, const float* lo32, const float* hi32,
                             FlockPlan* out) {
    double lo[3], ext[3];
    double vol = 1.0;
    int dpos = 0;
    bool huge = false;
    for (int a = 0; a < 3; ++a) {
        lo[a] = fl_f2d(lo32[a]);
        ext[a] = fl_f2d(hi32[a]) - lo[a];
        if (!(ext[a] <= 1e37)) huge = true;
        if (ext[a] > 0.0) {
            vol *= ext[a];
            ++dpos;
        }
    }
    const double n = (double)P.n;
    double h = 1.0;
    if (dpos > 0) {
        const double x = vol * 2.0 / n;
        h = dpos == 3 ? fl_cbrt(x) : (dpos == 2 ? sqrt(x) : x);
    }
    if (!(isfinite(h) && h > 0.0)) {
        h = fmax(fmax(ext[0], ext[1]), ext[2]);
        if (!(isfinite(h) && h > 0.0)) h = 1.0;
    }
    const double rc = sqrt(fl_f2d(P.r2));
    if (rc > 0.0 && rc < h) h = rc;
    if (h < 1e-30) h = 1e-30;
    if (h > 1e37) h = 1e37;
    h = fl_f2d(fl_d2f(h));  // an f32 value (doubling keeps it one)
    double limit = fmax(4.0 * n, 64.0);
    if (limit > (double)P.cell_cap) limit = (double)P.cell_cap;
    double nd[3] = {1.0, 1.0, 1.0};
    bool fits = false;
    for (int it = 0; it < 400 && !huge; ++it) {
        double total = 1.0;
        for (int a = 0; a < 3; ++a) {
            double d = floor(ext[a] / h) + 1.0;
            if (!(d >= 1.0 && d <= 1e12)) d = 1e12;
            nd[a] = d;
            total *= d;
        }
        if (total <= limit) {
            fits = true;
            break;
        }
        h *= 2.0;
    }
    // Dynamic grid: 2^L cube cells per axis (2^(3L) <= the cell limit, L <= 8) covering the
    // largest extent, in Morton order.
    u32 levels = 0u;
    if (P.tree && !huge) {
        u32 L = 0u;
        while (L < 8u && ldexp(1.0, 3 * (int)(L + 1u)) <= limit) ++L;
        const double maxext = fmax(fmax(ext[0], ext[1]), ext[2]);
        // (1 + 1e-6) keeps 2^L h >= the extent after rounding h to f32.
        double ht = maxext > 0.0 ? ldexp(maxext, -(int)L) * (1.0 + 1e-6) : 1.0;
        if (ht < 1e-30) ht = 1e-30;
        ht = fl_f2d(fl_d2f(ht));
        fits = ht <= 1e37;
        if (fits) {
            h = ht;
            levels = L;
            for (int a = 0; a < 3; ++a) nd[a] = ldexp(1.0, (int)L);
        }
    }
    const bool single = huge || !fits || !(h <= 1e37);
    FlockPlan G;
    for (int a = 0; a < 3; ++a) {
        G.o[a] = lo[a];
        G.of[a] = lo32[a];
        G.dims[a] = single ? 1u : (u32)nd[a];
    }
    if (single) h = 1.0;
    G.h = h;
    G.h32 = fl_d2f(h);
    G.inv32 = fl_div(1.0f, G.h32);
    for (int a = 0; a < 3; ++a) G.mu[a] = 1e-6 * (fabs(lo[a]) + (double)G.dims[a] * h);
    G.ncells = G.dims[0] * G.dims[1] * G.dims[2];
    G.ntiles = (G.ncells >> FL_TILE_LOG2) + 1u;
    G.single = single ? 1u : 0u;
    G.levels = single ? 0u : levels;
    *out = G;
}

// ---- build kernels ----------------------------------------------------------------------------
// sync[0..3): encoded minima, sync[3..6): encoded maxima, sync[6]: blocks done.
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

// Cell of every agent; rank in its cell (warp-aggregated atomics); per-tile totals.
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

// starts[c] = sum of counts[0..c) for c <= ncells; counts back to zero. Block b scans tile b.
extern "C" __global__ void __launch_bounds__(FL_AUX) flock_scan(FlockParams P,
                                                                 const FlockPlan* __restrict__ plan,
                                                                 u32* counts,
                                                                 const u32* __restrict__ tile_sums,
                                                                 u32* starts) {
    if (blockIdx.x >= plan->ntiles) return;
    gf_tile_scan<FL_AUX>(blockIdx.x, counts, tile_sums, starts, true);
    (void)P;
}

// The state into cell order: slot = starts[cell] + rank; slot_of[id] = slot.
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

// Radius mode: each cell's agents into ascending id order (slot = start + number of agents of
// the cell with a smaller id), from the scattered set into the other one.
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

// ---- step kernels ------------------------------------------------------------------------------
struct FlDetail {
    u32* nb;
    u32* cnt;
    float* force;
};

// Steering from the sums, integration, output at slot i and the detail rows.
__device__ __forceinline__ void fl_finish(const FlockParams& P, u32 i, u32 me, const FlAgent& a,
                                          const FlSums& sums, u32 count, float4* __restrict__ opos,
                                          float4* __restrict__ ovel, float4* __restrict__ oacc,
                                          const FlDetail& D) {
    const V3 force = fl_force(P.c, sums, a.pos, a.fwd);
    const FlAgent b = fl_integrate(P.c, a, force, P.dt, P.rate);
    opos[i] = make_float4(b.pos.x, b.pos.y, b.pos.z, __uint_as_float(me));
    ovel[i] = make_float4(b.fwd.x, b.fwd.y, b.fwd.z, b.speed);
    oacc[i] = make_float4(b.acc.x, b.acc.y, b.acc.z, 0.0f);
    if (P.detail) {
        D.cnt[me] = count;
        D.force[(size_t)me * 3] = force.x;
        D.force[(size_t)me * 3 + 1] = force.y;
        D.force[(size_t)me * 3 + 2] = force.z;
    }
}

__device__ __forceinline__ FlAgent fl_load(const float4* __restrict__ pos,
                                           const float4* __restrict__ vel,
                                           const float4* __restrict__ acc, u32 i, u32* me) {
    const float4 p = pos[i], v = vel[i], c = acc[i];
    *me = __float_as_uint(p.w);
    FlAgent a;
    a.pos = v_of(p);
    a.fwd = v_of(v);
    a.speed = v.w;
    a.acc = v_of(c);
    return a;
}

// Accumulates the held neighbours in ascending key order (slot_of = null: slot = id).
template <typename Best, int K>
__device__ __forceinline__ u32 fl_accumulate_best(const FlockParams& P, const Best& best, u64 sent,
                                                  const FlAgent& a, u32 me,
                                                  const float4* __restrict__ pos,
                                                  const float4* __restrict__ vel,
                                                  const u32* __restrict__ slot_of, FlSums& sums,
                                                  const FlDetail& D) {
    u32 m = 0u;
    const int k = (int)P.k;
    // The held keys are slots K - k .. K - 1, ascending, empty ones (the sentinel) last.
    for (int t = 0; t < k; ++t) {
        const u64 key = best.at(K - k + t);
        if (key == sent) break;
        const u32 id = (u32)key;
        const u32 slot = slot_of ? slot_of[id] : id;
        fl_accumulate(P.c, sums, a.pos, a.fwd, v_of(pos[slot]), v_of(vel[slot]), fl_key_d2(key));
        if (P.detail) D.nb[(size_t)me * P.k + m] = id;
        ++m;
    }
    if (P.detail)
        for (u32 j = m; j < P.k; ++j) D.nb[(size_t)me * P.k + j] = FL_NONE;
    return m;
}

template <int K>
__device__ __forceinline__ void fl_step_grid(const FlockParams& P,
                                             const FlockPlan* __restrict__ plan,
                                             const u32* __restrict__ starts,
                                             const float4* __restrict__ pos,
                                             const float4* __restrict__ vel,
                                             const float4* __restrict__ acc,
                                             const u32* __restrict__ slot_of,
                                             float4* __restrict__ opos, float4* __restrict__ ovel,
                                             float4* __restrict__ oacc, const FlDetail& D) {
    const u32 i = blockIdx.x * FL_THREADS + threadIdx.x;
    if (i >= P.n) return;
    const FlockPlan G = *plan;
    u32 me;
    const FlAgent a = fl_load(pos, vel, acc, i, &me);
    FlSums sums;
    fl_sums_init(sums);
    u32 count;
    if constexpr (K == 0) {
        if (P.tree) {
            FlBestReg<1> none;
            count = fl_search_tree<true>(P, G, starts, pos, vel, a.pos, a.fwd, me, none, sums);
        } else {
            count = fl_radius_grid(P, G, starts, pos, vel, a.pos, a.fwd, me, sums);
        }
    } else {
        typedef typename FlBestFor<K>::T Best;
        const u64 sent = ((u64)__float_as_uint(P.r2) << 32) | (u64)FL_NONE;
        Best best;
        best.init((int)P.k, sent);
        if (P.tree)
            (void)fl_search_tree<false>(P, G, starts, pos, vel, a.pos, a.fwd, me, best, sums);
        else
            fl_search_grid(G, starts, pos, a.pos, me, best);
        count = fl_accumulate_best<Best, FlBestFor<K>::SLOTS>(P, best, sent, a, me, pos, vel,
                                                              slot_of, sums, D);
    }
    fl_finish(P, i, me, a, sums, count, opos, ovel, oacc, D);
}

// Brute force: every agent a candidate, tiled through shared memory; storage order = id order.
template <int K>
__device__ __forceinline__ void fl_step_brute(const FlockParams& P, const float4* __restrict__ pos,
                                              const float4* __restrict__ vel,
                                              const float4* __restrict__ acc,
                                              float4* __restrict__ opos, float4* __restrict__ ovel,
                                              float4* __restrict__ oacc, const FlDetail& D) {
    __shared__ float4 tp[FL_THREADS];
    __shared__ float4 tv[FL_THREADS];
    const u32 i = blockIdx.x * FL_THREADS + threadIdx.x;
    const bool active = i < P.n;
    u32 me = FL_NONE;
    FlAgent a;
    if (active) {
        a = fl_load(pos, vel, acc, i, &me);
    } else {
        a.pos = v_zero();
        a.fwd = v_zero();
        a.acc = v_zero();
        a.speed = 0.0f;
    }
    FlSums sums;
    fl_sums_init(sums);
    u32 count = 0u;
    const u64 sent = ((u64)__float_as_uint(P.r2) << 32) | (u64)FL_NONE;
    const u32 r2b = __float_as_uint(P.r2);
    typedef typename FlBestFor<K>::T Best;
    Best best;
    if constexpr (K != 0) best.init((int)P.k, sent);
    for (u32 t0 = 0; t0 < P.n; t0 += FL_THREADS) {
        const u32 j = t0 + threadIdx.x;
        __syncthreads();
        if (j < P.n) {
            tp[threadIdx.x] = pos[j];
            if constexpr (K == 0) tv[threadIdx.x] = vel[j];
        }
        __syncthreads();
        const u32 m = min((u32)FL_THREADS, P.n - t0);
        if (active) {
            for (u32 t = 0; t < m; ++t) {
                const float4 p = tp[t];
                const float d2 = fl_dist2(a.pos, p);
                const u32 id = __float_as_uint(p.w);
                if constexpr (K == 0) {
                    if (__float_as_uint(d2) <= r2b && id != me) {
                        fl_accumulate(P.c, sums, a.pos, a.fwd, v_of(p), v_of(tv[t]), d2);
                        ++count;
                    }
                } else {
                    const u64 key = fl_key(d2, id);
                    if (key < best.worst() && id != me) best.offer(key);
                }
            }
        }
    }
    if (!active) return;
    if constexpr (K != 0) {
        count = fl_accumulate_best<Best, FlBestFor<K>::SLOTS>(P, best, sent, a, me, pos, vel,
                                                              nullptr, sums, D);
    }
    fl_finish(P, i, me, a, sums, count, opos, ovel, oacc, D);
}

// ---- entry points ------------------------------------------------------------------------------
#define FL_GRID_ENTRY(SUF, K)                                                                    \
    extern "C" __global__ void __launch_bounds__(FL_THREADS, 4) flock_step_grid_##SUF(           \
        FlockParams P, const FlockPlan* plan, const u32* starts, const float4* pos,              \
        const float4* vel, const float4* acc, const u32* slot_of, float4* opos, float4* ovel,    \
        float4* oacc, u32* det_nb, u32* det_cnt, float* det_force) {                             \
        const FlDetail D = {det_nb, det_cnt, det_force};                                         \
        fl_step_grid<K>(P, plan, starts, pos, vel, acc, slot_of, opos, ovel, oacc, D);           \
    }
FL_GRID_ENTRY(r, 0)
FL_GRID_ENTRY(k8, 8)
FL_GRID_ENTRY(k16, 16)
FL_GRID_ENTRY(k64, 64)

#define FL_BRUTE_ENTRY(SUF, K)                                                                   \
    extern "C" __global__ void __launch_bounds__(FL_THREADS, 4) flock_step_brute_##SUF(          \
        FlockParams P, const float4* pos, const float4* vel, const float4* acc, float4* opos,    \
        float4* ovel, float4* oacc, u32* det_nb, u32* det_cnt, float* det_force) {               \
        const FlDetail D = {det_nb, det_cnt, det_force};                                         \
        fl_step_brute<K>(P, pos, vel, acc, opos, ovel, oacc, D);                                 \
    }
FL_BRUTE_ENTRY(r, 0)
FL_BRUTE_ENTRY(k8, 8)
FL_BRUTE_ENTRY(k16, 16)
FL_BRUTE_ENTRY(k64, 64)
