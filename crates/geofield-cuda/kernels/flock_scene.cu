#line 2 "flock_scene.cu"
// The flock's scene: OpenSteer's obstacle avoidance and the predators. Part of the "flock"
// module (after flock_search.cu, before flock_step.cu). Mirrors, operation for operation,
// crates/geofield/src/flock/avoid.rs and predator.rs (fl_* arithmetic: round to nearest, no
// FMA, no flush-to-zero), so both backends steer the same bits.

#define FL_OBS_SPHERE 0u
#define FL_OBS_RECTANGLE 1u
#define FL_OBS_PLANE 2u
#define FL_OBS_BOX_FACE 3u
#define FL_SEEN_OUTSIDE 0u
#define FL_SEEN_INSIDE 1u
#define FL_SEEN_BOTH 2u

// geofield_cuda::flock::FlockObstacle (20 four-byte words).
struct FlObstacle {
    u32 kind;
    u32 seen_from;
    float radius;
    float half_w;
    float half_h;
    float centre[3];
    float side[3];
    float up[3];
    float normal[3];
    float origin[3];
};
GF_CHECK_SIZE(FlObstacle, 80);

struct FlHit {
    float distance;
    V3 hint;
    V3 surface;
    bool outside;
};

__device__ __forceinline__ V3 v_load3(const float* a) { return v3(a[0], a[1], a[2]); }
// -a and |a| as sign-bit operations (Rust's; no neg/abs instruction that could flush to zero).
__device__ __forceinline__ float fl_neg(float a) { return __uint_as_float(__float_as_uint(a) ^ 0x80000000u); }
__device__ __forceinline__ float fl_abs(float a) { return __uint_as_float(__float_as_uint(a) & 0x7FFFFFFFu); }
__device__ __forceinline__ V3 v_neg(V3 a) { return v3(fl_neg(a.x), fl_neg(a.y), fl_neg(a.z)); }
__device__ __forceinline__ bool v_is_zero(V3 a) {
    return fl_eq(a.x, 0.0f) && fl_eq(a.y, 0.0f) && fl_eq(a.z, 0.0f);
}

// avoid::sphere_hit
__device__ __forceinline__ bool fl_sphere_hit(const FlObstacle& o, float body, V3 p, V3 f,
                                              FlHit* h) {
    const V3 c = v_load3(o.centre);
    const V3 lc = v_sub(c, p);
    const float dl = v_length(lc);
    const bool outside = fl_gt(dl, o.radius);
    if (outside && o.seen_from == FL_SEEN_INSIDE) {
        h->distance = 0.0f;
        h->hint = v_unit(lc);
        h->surface = p;
        h->outside = outside;
        return true;
    }
    const bool grow = o.seen_from == FL_SEEN_OUTSIDE || (o.seen_from != FL_SEEN_INSIDE && outside);
    const float r = grow ? fl_add(o.radius, body) : fl_sub(o.radius, body);
    if (!outside && o.seen_from != FL_SEEN_OUTSIDE && fl_gt(dl, r)) {
        // Inside a container but within a body radius of its wall: steer back at once.
        h->distance = 0.0f;
        h->hint = v_unit(lc);
        h->surface = p;
        h->outside = outside;
        return true;
    }
    const float t = v_dot(lc, f);
    const float disc = fl_sub(fl_mul(t, t), fl_sub(v_dot(lc, lc), fl_mul(r, r)));
    if (fl_lt(disc, 0.0f)) return false;
    const float s = fl_sqrt(disc);
    const float far = fl_add(t, s);
    const float near = fl_sub(t, s);
    if (fl_lt(far, 0.0f) && fl_lt(near, 0.0f)) return false;
    float distance;
    if (fl_gt(far, 0.0f) && fl_gt(near, 0.0f)) {
        distance = fl_lt(near, far) ? near : far;
    } else if (o.seen_from == FL_SEEN_OUTSIDE) {
        distance = 0.0f;
    } else if (fl_gt(far, 0.0f)) {
        distance = far;
    } else {
        distance = near;
    }
    const V3 surface = v_add(p, v_scale(f, distance));
    const V3 normal = v_unit(v_sub(surface, c));
    V3 hint;
    if (o.seen_from == FL_SEEN_OUTSIDE) {
        hint = normal;
    } else if (o.seen_from == FL_SEEN_INSIDE) {
        hint = v_neg(normal);
    } else {
        hint = outside ? normal : v_neg(normal);
    }
    h->distance = distance;
    h->hint = hint;
    h->surface = surface;
    h->outside = outside;
    return true;
}

// avoid::planar_hit
__device__ __forceinline__ bool fl_planar_hit(const FlObstacle& o, float body, V3 p, V3 f,
                                              FlHit* h) {
    const V3 c = v_load3(o.centre);
    const V3 side = v_load3(o.side);
    const V3 up = v_load3(o.up);
    const V3 nrm = v_load3(o.normal);
    const V3 d = v_sub(p, c);
    const float lx = v_dot(d, side), ly = v_dot(d, up), lz = v_dot(d, nrm);
    const float dx = v_dot(f, side), dy = v_dot(f, up), dz = v_dot(f, nrm);
    if (fl_eq(dz, 0.0f) || (fl_gt(lz, 0.0f) && fl_gt(dz, 0.0f)) ||
        (fl_lt(lz, 0.0f) && fl_lt(dz, 0.0f)))
        return false;
    if ((o.seen_from == FL_SEEN_OUTSIDE && fl_lt(lz, 0.0f)) ||
        (o.seen_from == FL_SEEN_INSIDE && fl_gt(lz, 0.0f)))
        return false;
    const bool outside = fl_gt(lz, 0.0f);
    // The plane moved towards the agent by the body radius (0 when already within it).
    const float reach = fl_sub(fl_abs(lz), body);
    float lze = 0.0f;
    if (fl_gt(reach, 0.0f)) lze = fl_gt(lz, 0.0f) ? reach : fl_neg(reach);
    const float ix = fl_sub(lx, fl_div(fl_mul(dx, lze), dz));
    const float iy = fl_sub(ly, fl_div(fl_mul(dy, lze), dz));
    if (o.kind != FL_OBS_PLANE) {
        const float w = fl_add(body, o.half_w);
        const float hh = fl_add(body, o.half_h);
        if (fl_gt(ix, w) || fl_lt(ix, fl_neg(w)) || fl_gt(iy, hh) || fl_lt(iy, fl_neg(hh)))
            return false;
    }
    const V3 radial_local = v_unit(v3(ix, iy, 0.0f));
    const V3 radial = v_add(v_scale(side, radial_local.x), v_scale(up, radial_local.y));
    const float sign = outside ? 1.0f : -1.0f;
    const V3 opposing = v_scale(nrm, sign);
    const float distance = v_length(v3(fl_sub(lx, ix), fl_sub(ly, iy), lze));
    const V3 surface = v_add(c, v_add(v_scale(side, ix), v_scale(up, iy)));
    V3 hint;
    if (o.kind == FL_OBS_BOX_FACE) {
        const V3 away = v_unit(v_sub(surface, v_load3(o.origin)));
        hint = outside ? away : v_neg(away);
    } else if (o.kind == FL_OBS_PLANE) {
        hint = opposing;
    } else {
        hint = v_add(opposing, radial);
    }
    h->distance = distance;
    h->hint = hint;
    h->surface = surface;
    h->outside = outside;
    return true;
}

// avoid::nearest_hit
__device__ __forceinline__ bool fl_nearest_hit(const FlObstacle* __restrict__ obs, u32 n,
                                               float body, V3 p, V3 f, FlHit* best) {
    bool found = false;
    for (u32 i = 0; i < n; ++i) {
        const FlObstacle o = obs[i];
        FlHit h;
        bool hit = false;
        if (o.kind == FL_OBS_SPHERE)
            hit = fl_sphere_hit(o, body, p, f, &h);
        else if (o.kind == FL_OBS_RECTANGLE || o.kind == FL_OBS_PLANE || o.kind == FL_OBS_BOX_FACE)
            hit = fl_planar_hit(o, body, p, f, &h);
        if (hit && (!found || fl_lt(h.distance, best->distance))) {
            *best = h;
            found = true;
        }
    }
    return found;
}

// avoid::any_perpendicular
__device__ __forceinline__ V3 fl_any_perpendicular(V3 f) {
    const float ax = fl_abs(f.x), ay = fl_abs(f.y), az = fl_abs(f.z);
    V3 c;
    if (fl_le(ax, ay) && fl_le(ax, az))
        c = v3(0.0f, f.z, fl_neg(f.y));
    else if (fl_le(ay, az))
        c = v3(fl_neg(f.z), 0.0f, f.x);
    else
        c = v3(f.y, fl_neg(f.x), 0.0f);
    return v_unit(c);
}

// avoid::steer_to_avoid
__device__ __forceinline__ V3 fl_steer_to_avoid(const FlObstacle* __restrict__ obs, u32 n,
                                                float body, float avoid_time, float max_force,
                                                V3 p, V3 f, float speed) {
    FlHit h;
    if (!fl_nearest_hit(obs, n, body, p, f, &h)) return v_zero();
    if (!fl_lt(h.distance, fl_mul(avoid_time, speed))) return v_zero();
    const V3 lateral = v_sub(h.hint, v_scale(f, v_dot(h.hint, f)));
    V3 u = v_unit(lateral);
    if (v_is_zero(u)) u = fl_any_perpendicular(f);
    return v_scale(u, max_force);
}

// predator::flee
__device__ __forceinline__ V3 fl_flee(const FlAgent& a, V3 mpos, V3 mfwd, float mspeed,
                                      float evade_time) {
    const float distance = v_length(v_sub(mpos, a.pos));
    float t = 0.0f;
    if (fl_gt(mspeed, 0.0f)) {
        const float rough = fl_div(distance, mspeed);
        t = fl_gt(rough, evade_time) ? evade_time : rough;
    }
    const V3 target = v_add(mpos, v_scale(v_scale(mfwd, mspeed), t));
    return v_sub(v_sub(a.pos, target), v_scale(a.fwd, a.speed));
}

// predator::boid_force: obstacle avoidance, else flocking plus the evasion of the predators
// within reach.
__device__ __forceinline__ V3 fl_scene_force(const FlockParams& P,
                                             const FlObstacle* __restrict__ obs,
                                             const float4* __restrict__ ppos,
                                             const float4* __restrict__ pvel, const FlAgent& a,
                                             V3 flocking) {
    if (P.n_obstacles > 0u) {
        const V3 avoid = fl_steer_to_avoid(obs, P.n_obstacles, P.body_radius, P.avoid_time,
                                           P.c.max_force, a.pos, a.fwd, a.speed);
        if (!v_is_zero(avoid)) return avoid;
    }
    V3 sum = v_zero();
    u32 seen = 0u;
    for (u32 j = 0; j < P.n_predators; ++j) {
        const V3 mp = v_of(ppos[j]);
        const float4 mv = pvel[j];
        const V3 off = v_sub(mp, a.pos);
        if (fl_le(v_dot(off, off), P.evade_r2)) {
            sum = v_add(sum, fl_flee(a, mp, v_of(mv), mv.w, P.evade_time));
            ++seen;
        }
    }
    if (seen == 0u) return flocking;
    return v_add(flocking, v_scale(v_unit(sum), P.evade_weight));
}

// predator::interval and time_factor
__device__ __forceinline__ int fl_interval(float x) {
    if (fl_lt(x, -0.707f)) return -1;
    if (fl_gt(x, 0.707f)) return 1;
    return 0;
}
__device__ __forceinline__ float fl_time_factor(int f, int par) {
    if (f == 1) return par == 1 ? 4.0f : (par == 0 ? 1.8f : 0.85f);
    if (f == 0) return par == 1 ? 1.0f : (par == 0 ? 0.8f : 4.0f);
    return par == 1 ? 0.5f : 2.0f;
}

// predator::pursuit
__device__ __forceinline__ V3 fl_pursuit(const FlAgent& a, V3 qpos, V3 qfwd, float qspeed,
                                         float max_prediction) {
    const V3 offset = v_sub(qpos, a.pos);
    const float distance = v_length(offset);
    const V3 unit_offset = v_unit(offset);
    const float parallelness = v_dot(a.fwd, qfwd);
    const float forwardness = v_dot(a.fwd, unit_offset);
    const float factor = fl_time_factor(fl_interval(forwardness), fl_interval(parallelness));
    float t = max_prediction;
    if (fl_gt(a.speed, 0.0f)) {
        const float et = fl_mul(fl_div(distance, a.speed), factor);
        t = fl_gt(et, max_prediction) ? max_prediction : et;
    }
    const V3 target = v_add(qpos, v_scale(v_scale(qfwd, qspeed), t));
    return v_sub(v_sub(target, a.pos), v_scale(a.fwd, a.speed));
}

// One block per predator: the nearest boid (smallest key (bits(d2) << 32 | id) over all slots,
// a block reduction that does not depend on the order), then avoidance or pursuit and the
// integration with the predator's own limits (predator::step_predators).
GF_KERNEL_IF(flock_predators)(extern "C" __global__ void __launch_bounds__(FL_AUX) flock_predators(
    FlockParams P, const float4* __restrict__ pos, const float4* __restrict__ vel,
    const FlObstacle* __restrict__ obs, const float4* __restrict__ ppos,
    const float4* __restrict__ pvel, const float4* __restrict__ pacc,
    const float4* __restrict__ plim, float4* __restrict__ oppos, float4* __restrict__ opvel,
    float4* __restrict__ opacc) {
    __shared__ u64 skey[FL_AUX];
    __shared__ u32 sslot[FL_AUX];
    const u32 j = blockIdx.x;
    if (j >= P.n_predators) return;
    FlAgent a;
    {
        const float4 p = ppos[j], v = pvel[j], c = pacc[j];
        a.pos = v_of(p);
        a.fwd = v_of(v);
        a.speed = v.w;
        a.acc = v_of(c);
    }
    u64 best = ~0ull;
    u32 bslot = FL_NONE;
    for (u32 s = threadIdx.x; s < P.n; s += FL_AUX) {
        const float4 q = pos[s];
        const u64 key = fl_key(fl_dist2(a.pos, q), __float_as_uint(q.w));
        if (key < best) {
            best = key;
            bslot = s;
        }
    }
    skey[threadIdx.x] = best;
    sslot[threadIdx.x] = bslot;
    __syncthreads();
    for (u32 w = FL_AUX / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w && skey[threadIdx.x + w] < skey[threadIdx.x]) {
            skey[threadIdx.x] = skey[threadIdx.x + w];
            sslot[threadIdx.x] = sslot[threadIdx.x + w];
        }
        __syncthreads();
    }
    if (threadIdx.x != 0) return;
    const float4 lim = plim[j];
    FlockConstants c = P.c;
    c.max_speed = lim.x;
    c.max_force = lim.y;
    V3 force = v_zero();
    if (P.n_obstacles > 0u)
        force = fl_steer_to_avoid(obs, P.n_obstacles, P.body_radius, P.avoid_time, lim.y, a.pos,
                                  a.fwd, a.speed);
    const u32 qs = sslot[0];
    if (v_is_zero(force) && qs != FL_NONE) {
        const float4 qv = vel[qs];
        force = fl_pursuit(a, v_of(pos[qs]), v_of(qv), qv.w, lim.z);
    }
    const FlAgent b = fl_integrate(c, a, force, P.dt, P.rate);
    oppos[j] = make_float4(b.pos.x, b.pos.y, b.pos.z, 0.0f);
    opvel[j] = make_float4(b.fwd.x, b.fwd.y, b.fwd.z, b.speed);
    opacc[j] = make_float4(b.acc.x, b.acc.y, b.acc.z, 0.0f);
})
