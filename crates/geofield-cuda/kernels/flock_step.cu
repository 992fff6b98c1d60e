#line 2 "flock_step.cu"
// Step kernels and entry points. Part of the "flock" module: flock.cu, flock_grid.cu,
// flock_search.cu, flock_scene.cu and flock_step.cu are concatenated in that order
// (geofield_cuda::MODULES).

// ---- step kernels ------------------------------------------------------------------------------
struct FlDetail {
    u32* nb;
    u32* cnt;
    float* force;
};

// The scene the steps read: obstacle records and the predators' state t.
struct FlScene {
    const FlObstacle* obs;
    const float4* ppos;
    const float4* pvel;
};

// Steering from the sums, integration, output at slot i and the detail rows.
__device__ __forceinline__ void fl_finish(const FlockParams& P, u32 i, u32 me, const FlAgent& a,
                                          const FlSums& sums, u32 count, float4* __restrict__ opos,
                                          float4* __restrict__ ovel, float4* __restrict__ oacc,
                                          const FlDetail& D, const FlScene& S) {
    V3 force = fl_force(P.c, sums, a.pos, a.fwd);
    if (P.n_obstacles > 0u || P.n_predators > 0u)
        force = fl_scene_force(P, S.obs, S.ppos, S.pvel, a, force);
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
                                             float4* __restrict__ oacc, const FlDetail& D,
                                             const FlScene& S) {
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
    fl_finish(P, i, me, a, sums, count, opos, ovel, oacc, D, S);
}

// Brute force: every agent a candidate, tiled through shared memory; storage order = id order.
template <int K>
__device__ __forceinline__ void fl_step_brute(const FlockParams& P, const float4* __restrict__ pos,
                                              const float4* __restrict__ vel,
                                              const float4* __restrict__ acc,
                                              float4* __restrict__ opos, float4* __restrict__ ovel,
                                              float4* __restrict__ oacc, const FlDetail& D,
                                              const FlScene& S) {
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
    fl_finish(P, i, me, a, sums, count, opos, ovel, oacc, D, S);
}

// ---- entry points ------------------------------------------------------------------------------
#define FL_GRID_ENTRY(SUF, K)                                                                    \
    GF_KERNEL_IF(flock_step_grid_##SUF)(extern "C" __global__ void __launch_bounds__(FL_THREADS, 4) flock_step_grid_##SUF( \
        FlockParams P, const FlockPlan* plan, const u32* starts, const float4* pos,              \
        const float4* vel, const float4* acc, const u32* slot_of, const FlObstacle* obs,         \
        const float4* ppos, const float4* pvel, float4* opos, float4* ovel, float4* oacc,        \
        u32* det_nb, u32* det_cnt, float* det_force) {                                           \
        const FlDetail D = {det_nb, det_cnt, det_force};                                         \
        const FlScene S = {obs, ppos, pvel};                                                     \
        fl_step_grid<K>(P, plan, starts, pos, vel, acc, slot_of, opos, ovel, oacc, D, S);        \
    })
FL_GRID_ENTRY(r, 0)
FL_GRID_ENTRY(k8, 8)
FL_GRID_ENTRY(k16, 16)
FL_GRID_ENTRY(k64, 64)

#define FL_BRUTE_ENTRY(SUF, K)                                                                   \
    GF_KERNEL_IF(flock_step_brute_##SUF)(extern "C" __global__ void __launch_bounds__(FL_THREADS, 4) flock_step_brute_##SUF( \
        FlockParams P, const float4* pos, const float4* vel, const float4* acc,                  \
        const FlObstacle* obs, const float4* ppos, const float4* pvel, float4* opos,             \
        float4* ovel, float4* oacc, u32* det_nb, u32* det_cnt, float* det_force) {               \
        const FlDetail D = {det_nb, det_cnt, det_force};                                         \
        const FlScene S = {obs, ppos, pvel};                                                     \
        fl_step_brute<K>(P, pos, vel, acc, opos, ovel, oacc, D, S);                              \
    })
FL_BRUTE_ENTRY(r, 0)
FL_BRUTE_ENTRY(k8, 8)
FL_BRUTE_ENTRY(k16, 16)
FL_BRUTE_ENTRY(k64, 64)
