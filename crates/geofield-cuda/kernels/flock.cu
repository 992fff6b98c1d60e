// flock.cu: OpenSteer's boids flock (crates/geofield/src/flock) with the whole step on the device.
// The "flock" module is this file followed by flock_grid.cu, flock_search.cu, flock_scene.cu
// and flock_step.cu, concatenated (geofield_cuda::MODULES).
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
    // The scene (flock_scene.cu): obstacle records and predators; 0 and 0: plain flocking.
    u32 n_obstacles;
    u32 n_predators;
    float body_radius;   // agents' body radius: spheres grow and rectangles widen by it
    float avoid_time;    // OpenSteer's minTimeToCollision (s)
    float evade_r2;      // boids evade the predators with d2 <= evade_r2
    float evade_weight;  // weight of the unit evasion term added to the flocking force
    float evade_time;    // longest prediction of a predator's position (s)
    u32 pad;
};
GF_CHECK_SIZE(FlockParams, 128);

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
