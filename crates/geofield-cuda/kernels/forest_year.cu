#line 2 "forest_year.cu"
// forest_year.cu: the forest's yearly loop on the device (crates/geofield/src/forest/simulate.rs,
// `simulate` on the CUDA backend in expected mode), with the stand and the per-cell maps kept in
// device memory; its draws are forest_draws.cu's (the CPU's, to the bit).
//
// Kernels (one thread per cell or per tree, grid-stride loops):
//   forest_occupancy    trees and adults per coarse cell (atomic adds of ones)
//   forest_cells        each cell's expected seeds (the covers' f32 maps times the cell area and
//                       the survival to the landing cover, the torus' far tail, the rain), its
//                       count by the species' seed distribution, and its establishments
//                       (binomial; the count of new seedlings, written to est)
//   forest_block_sums / forest_block_scan   exclusive prefix sums of u32 values (the host scans
//                       the per-block sums in between)
//   forest_place        each cell's new seedlings at the positions the CPU draws, in cell order
//   forest_survive      mortality by the stage at the start of the year, then growth
//   forest_select       flags of a species' trees at or above a DBH
//   forest_compact      the flagged trees, in order, into other arrays
//   forest_census       per-block partial sums of one species' stages and basal areas

// ---------------------------------------------------------------------------------------------
// Geometry: trees.rs CoarseCells::of.
// ---------------------------------------------------------------------------------------------
struct FyCoarse {
    double x_min_m;
    double y_max_m;
    double cell_m;
    double cols_f;
    double rows_f;
    u64 cols;
    u64 n_cells;
    u64 pad;
};
GF_CHECK_SIZE(FyCoarse, 64);

// The coarse cell holding (x, y), or -1.
__device__ __forceinline__ long long fy_coarse_of(const FyCoarse& C, double x, double y) {
    const double c = floor(gf_div_rn(gf_sub_rn(x, C.x_min_m), C.cell_m));
    const double r = floor(gf_div_rn(gf_sub_rn(C.y_max_m, y), C.cell_m));
    if (c >= 0.0 && r >= 0.0 && c < C.cols_f && r < C.rows_f) {
        return (long long)((u64)r * C.cols + (u64)c);
    }
    return -1ll;
}

// One species' demography (params.rs): stage thresholds, mortality and growth per stage
// (growth kind 0: constant radial g0 mm/yr; 1: size-dependent, max g0, peak g1, min g2).
struct FySpecies {
    double sapling_dbh_cm;
    double adult_dbh_cm;
    double annual[3];
    double per_neighbour[3];
    double g0[3];
    double g1[3];
    double g2[3];
    u32 growth_kind[3];
    u32 pad;
};
GF_CHECK_SIZE(FySpecies, 152);

__device__ __forceinline__ int fy_stage(const FySpecies& sp, double d) {
    return d < sp.sapling_dbh_cm ? 0 : (d < sp.adult_dbh_cm ? 1 : 2);
}

__device__ __forceinline__ double fy_increment(const FySpecies& sp, int st, double d) {
    if (sp.growth_kind[st] == 0u) return gf_mul_rn(0.2, sp.g0[st]);
    const double q = gf_div_rn(d, sp.g1[st]);
    const double v = gf_mul_rn(gf_mul_rn(sp.g0[st], q), fo_exp(gf_sub_rn(1.0, q)));
    return fmax(v, sp.g2[st]);
}

#if GF_WANTED(forest_occupancy)
extern "C" __global__ void __launch_bounds__(FY_THREADS)
    forest_occupancy(FyCoarse C, const double* __restrict__ x, const double* __restrict__ y,
                     const double* __restrict__ dbh, const u32* __restrict__ sp,
                     const FySpecies* __restrict__ species, u64 n, u32* all, u32* adults) {
    const u64 stride = (u64)gridDim.x * FY_THREADS;
    for (u64 i = (u64)blockIdx.x * FY_THREADS + threadIdx.x; i < n; i += stride) {
        const long long c = fy_coarse_of(C, x[i], y[i]);
        if (c < 0) continue;
        atomicAdd(&all[c], 1u);
        if (fy_stage(species[sp[i]], dbh[i]) == 2) atomicAdd(&adults[c], 1u);
    }
}
#endif

// One species' cells in one year (see forest_cells).
struct FyCells {
    FyCoarse coarse;
    double x_min_m;      // grid's west edge
    double y_max_m;      // grid's north edge
    double cell_m;       // h
    double area;         // h * h
    double keep[4];      // survival from cover f (0 canopy, 1 gap) landing in cover t: keep[2f + t]
    double tail[2];      // the torus' far tail per m2 of each cover's parents (0: none)
    double rain;         // the rain's expected seeds per cell
    double dist_a;       // the seed distribution's parameter
    double p_est;        // establishment probability
    double seedling_dbh_cm;
    u64 cols;
    u64 n_cells;
    u32 key0, key1, year, species;
    u32 dist_kind;
    u32 has_map0;        // the canopy parents' map is given
    u32 has_map1;        // the gap parents' map
    u32 has_landing;     // the species has gap parameters: the landing cover matters
    u32 has_rain;
    u32 has_suit;
    u32 max_gap_density;
    u32 pad;
};
GF_CHECK_SIZE(FyCells, 240);

__device__ __forceinline__ double fy_suit(const FyCells& P, const float* suit, u64 i) {
    if (!P.has_suit) return 1.0;
    const double v = fy_widen(suit[i]);
    if (isnan(v)) return 0.0;
    return fmin(fmax(v, 0.0), 1.0);
}

#if GF_WANTED(forest_cells)
extern "C" __global__ void __launch_bounds__(FY_THREADS)
    forest_cells(FyCells P, const float* __restrict__ map0, const float* __restrict__ map1,
                 const u32* __restrict__ adults, const float* __restrict__ suit,
                 u32* counts, u32* est) {
    const u64 stride = (u64)gridDim.x * FY_THREADS;
    for (u64 i = (u64)blockIdx.x * FY_THREADS + threadIdx.x; i < P.n_cells; i += stride) {
        // landing.rs landing_cover: the cover of the coarse cell holding the cell's centre.
        int to = 0;
        if (P.has_landing) {
            const u64 r = i / P.cols, c = i - r * P.cols;
            const double xc = gf_add_rn(P.x_min_m, gf_mul_rn(gf_add_rn((double)c, 0.5), P.cell_m));
            const double yc = gf_sub_rn(P.y_max_m, gf_mul_rn(gf_add_rn((double)r, 0.5), P.cell_m));
            const long long cc = fy_coarse_of(P.coarse, xc, yc);
            to = (cc >= 0 && adults[cc] <= P.max_gap_density) ? 1 : 0;
        }
        // landing.rs expected_seeds, in its order: canopy map, canopy tail, gap map, gap tail;
        // then add_rain.
        double e = 0.0;
        if (P.has_map0) {
            const double f = P.has_landing ? gf_mul_rn(P.area, P.keep[to]) : P.area;
            e = gf_add_rn(e, gf_mul_rn(fy_widen(map0[i]), f));
            if (P.tail[0] > 0.0) e = gf_add_rn(e, gf_mul_rn(P.tail[0], f));
        }
        if (P.has_map1) {
            const double f = P.has_landing ? gf_mul_rn(P.area, P.keep[2 + to]) : P.area;
            e = gf_add_rn(e, gf_mul_rn(fy_widen(map1[i]), f));
            if (P.tail[1] > 0.0) e = gf_add_rn(e, gf_mul_rn(P.tail[1], f));
        }
        if (P.has_rain) e = gf_add_rn(e, P.rain);
        FyStream s = fy_stream(P.key0, P.key1, P.year, P.species, i, FY_SEED_COUNT);
        const u64 n = fy_count(s, P.dist_kind, P.dist_a, e);
        const u32 n32 = n > 0xFFFFFFFFull ? 0xFFFFFFFFu : (u32)n;
        counts[i] = n32;
        // establishment.rs establish: Binomial(n, p q).
        u32 k = 0u;
        if (n32 != 0u) {
            FyStream t = fy_stream(P.key0, P.key1, P.year, P.species, i, FY_ESTABLISHMENT);
            k = (u32)fy_binomial(t, (u64)n32, gf_mul_rn(P.p_est, fy_suit(P, suit, i)));
        }
        est[i] = k;
    }
}
#endif

#if GF_WANTED(forest_place)
// Each cell's new seedlings (off: the exclusive prefix sums of est) at x0 + U h, y1 - U h, with
// DBH seedling_dbh_cm and ids first_id + their index, written from index `base` on.
extern "C" __global__ void __launch_bounds__(FY_THREADS)
    forest_place(FyCells P, const u32* __restrict__ counts, const u32* __restrict__ off,
                 const float* __restrict__ suit, u64 base, u64 first_id, double* x, double* y,
                 double* dbh, u32* sp, u64* id) {
    const u64 stride = (u64)gridDim.x * FY_THREADS;
    for (u64 i = (u64)blockIdx.x * FY_THREADS + threadIdx.x; i < P.n_cells; i += stride) {
        const u32 n = counts[i];
        if (n == 0u) continue;
        FyStream t = fy_stream(P.key0, P.key1, P.year, P.species, i, FY_ESTABLISHMENT);
        const u64 k = fy_binomial(t, (u64)n, gf_mul_rn(P.p_est, fy_suit(P, suit, i)));
        const u64 r = i / P.cols, c = i - r * P.cols;
        const double x0 = gf_add_rn(P.x_min_m, gf_mul_rn((double)c, P.cell_m));
        const double y1 = gf_sub_rn(P.y_max_m, gf_mul_rn((double)r, P.cell_m));
        const u64 o = (u64)off[i];
        for (u64 j = 0; j < k; ++j) {
            const double xx = gf_add_rn(x0, gf_mul_rn(fy_uniform(t), P.cell_m));
            const double yy = gf_sub_rn(y1, gf_mul_rn(fy_uniform(t), P.cell_m));
            const u64 at = base + o + j;
            x[at] = xx;
            y[at] = yy;
            dbh[at] = P.seedling_dbh_cm;
            sp[at] = P.species;
            id[at] = first_id + o + j;
        }
    }
}
#endif

#if GF_WANTED(forest_block_sums)
// sums[b] = the u64 sum of v's values in block b's chunk of FY_CHUNK.
extern "C" __global__ void __launch_bounds__(FY_THREADS)
    forest_block_sums(const u32* __restrict__ v, u64 n, u64* sums) {
    __shared__ u64 part[FY_THREADS];
    const u64 start = (u64)blockIdx.x * FY_CHUNK;
    u64 acc = 0ull;
    for (u32 j = 0; j < FY_PER_THREAD; ++j) {
        const u64 i = start + (u64)j * FY_THREADS + threadIdx.x;
        if (i < n) acc += (u64)v[i];
    }
    part[threadIdx.x] = acc;
    __syncthreads();
    for (u32 w = FY_THREADS / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) sums[blockIdx.x] = part[0];
}
#endif

#if GF_WANTED(forest_block_scan)
// out[i] = block_off[b] + the sum of v's values before i in block b's chunk (exclusive; the host
// checked that every result fits in u32). out may be v.
extern "C" __global__ void __launch_bounds__(FY_THREADS)
    forest_block_scan(const u32* v, u64 n, const u64* __restrict__ block_off, u32* out) {
    __shared__ u64 part[FY_THREADS];
    const u64 start = (u64)blockIdx.x * FY_CHUNK + (u64)threadIdx.x * FY_PER_THREAD;
    u32 vals[FY_PER_THREAD];
    u64 acc = 0ull;
    for (u32 j = 0; j < FY_PER_THREAD; ++j) {
        const u64 i = start + j;
        vals[j] = i < n ? v[i] : 0u;
        acc += (u64)vals[j];
    }
    part[threadIdx.x] = acc;
    __syncthreads();
    // Inclusive scan of the threads' sums (Hillis-Steele).
    for (u32 w = 1; w < FY_THREADS; w <<= 1) {
        const u64 add = threadIdx.x >= w ? part[threadIdx.x - w] : 0ull;
        __syncthreads();
        part[threadIdx.x] += add;
        __syncthreads();
    }
    u64 run = block_off[blockIdx.x] + part[threadIdx.x] - acc;
    for (u32 j = 0; j < FY_PER_THREAD; ++j) {
        const u64 i = start + j;
        if (i < n) out[i] = (u32)run;
        run += (u64)vals[j];
    }
}
#endif

// Mortality and growth of one year.
struct FySurvive {
    FyCoarse coarse;
    u64 n;
    u64 existing;   // trees counted in `all` (the first ones)
    u32 key0, key1, year, pad;
};
GF_CHECK_SIZE(FySurvive, 96);

#if GF_WANTED(forest_survive)
// demography.rs survivors and grow: keep[i] = 1 if tree i survives (p = min(1, annual +
// per_neighbour n), n the other trees in its coarse cell at the start of the year), and its DBH
// grown by its stage's increment (the stage at the start of the year).
extern "C" __global__ void __launch_bounds__(FY_THREADS)
    forest_survive(FySurvive P, const double* __restrict__ x, const double* __restrict__ y,
                   double* dbh, const u32* __restrict__ sp, const u64* __restrict__ id,
                   const u32* __restrict__ all, const FySpecies* __restrict__ species,
                   u32* keep) {
    const u64 stride = (u64)gridDim.x * FY_THREADS;
    for (u64 i = (u64)blockIdx.x * FY_THREADS + threadIdx.x; i < P.n; i += stride) {
        const u32 s = sp[i];
        const FySpecies& q = species[s];
        const double d = dbh[i];
        const int st = fy_stage(q, d);
        const long long c = fy_coarse_of(P.coarse, x[i], y[i]);
        u32 nb = 0u;
        if (c >= 0) {
            const u32 a = all[c];
            const u32 self = i < P.existing ? 1u : 0u;
            nb = a >= self ? a - self : 0u;
        }
        const double p = fmin(gf_add_rn(q.annual[st], gf_mul_rn(q.per_neighbour[st], (double)nb)), 1.0);
        bool alive = true;
        if (p > 0.0) {
            FyStream t = fy_stream(P.key0, P.key1, P.year, s, id[i], FY_MORTALITY);
            alive = fy_uniform(t) >= p;
        }
        keep[i] = alive ? 1u : 0u;
        if (alive) dbh[i] = gf_add_rn(d, fy_increment(q, st, d));
    }
}
#endif

#if GF_WANTED(forest_select)
// flag[i] = 1 for the trees of species s with DBH >= min_dbh.
extern "C" __global__ void __launch_bounds__(FY_THREADS)
    forest_select(const double* __restrict__ dbh, const u32* __restrict__ sp, u64 n, u32 s,
                  double min_dbh, u32* flag) {
    const u64 stride = (u64)gridDim.x * FY_THREADS;
    for (u64 i = (u64)blockIdx.x * FY_THREADS + threadIdx.x; i < n; i += stride) {
        flag[i] = (sp[i] == s && dbh[i] >= min_dbh) ? 1u : 0u;
    }
}
#endif

#if GF_WANTED(forest_compact)
// The flagged trees (off: exclusive prefix sums of flag) in order into the d* arrays.
extern "C" __global__ void __launch_bounds__(FY_THREADS)
    forest_compact(u64 n, const u32* __restrict__ flag, const u32* __restrict__ off,
                   const double* __restrict__ x, const double* __restrict__ y,
                   const double* __restrict__ dbh, const u32* __restrict__ sp,
                   const u64* __restrict__ id, double* dx, double* dy, double* ddbh, u32* dsp,
                   u64* did) {
    const u64 stride = (u64)gridDim.x * FY_THREADS;
    for (u64 i = (u64)blockIdx.x * FY_THREADS + threadIdx.x; i < n; i += stride) {
        if (!flag[i]) continue;
        const u64 o = (u64)off[i];
        dx[o] = x[i];
        dy[o] = y[i];
        ddbh[o] = dbh[i];
        dsp[o] = sp[i];
        did[o] = id[i];
    }
}
#endif

// The census of one species.
struct FyCensus {
    double x0, x1, y0, y1;   // the plot (the rain's basal area counts trees inside it)
    double min_dbh_cm;       // reproductive DBH (the rain's basal area)
    u64 n;
    u32 s, pad;
};
GF_CHECK_SIZE(FyCensus, 56);

#if GF_WANTED(forest_census)
// Per block b: cnt[3b + stage] trees of species s by stage; ba[2b] their sum of pi (DBH/200)^2
// (m2), ba[2b + 1] the same over the reproductive trees inside the plot. A fixed launch shape
// and a fixed reduction order: the same sums every run.
extern "C" __global__ void __launch_bounds__(FY_THREADS)
    forest_census(FyCensus P, const double* __restrict__ x, const double* __restrict__ y,
                  const double* __restrict__ dbh, const u32* __restrict__ sp,
                  const FySpecies* __restrict__ species, u64* cnt, double* ba) {
    __shared__ double sb[FY_THREADS], sr[FY_THREADS];
    __shared__ u64 c0[FY_THREADS], c1[FY_THREADS], c2[FY_THREADS];
    const double sap = species[P.s].sapling_dbh_cm, adult = species[P.s].adult_dbh_cm;
    double b = 0.0, r = 0.0;
    u64 n0 = 0, n1 = 0, n2 = 0;
    const u64 stride = (u64)gridDim.x * FY_THREADS;
    for (u64 i = (u64)blockIdx.x * FY_THREADS + threadIdx.x; i < P.n; i += stride) {
        if (sp[i] != P.s) continue;
        const double d = dbh[i];
        if (d < sap) n0 += 1;
        else if (d < adult) n1 += 1;
        else n2 += 1;
        const double rr = gf_div_rn(d, 200.0);
        const double a = gf_mul_rn(0x1.921fb54442d18p+1, gf_mul_rn(rr, rr));
        b = gf_add_rn(b, a);
        const double xx = x[i], yy = y[i];
        if (d >= P.min_dbh_cm && xx >= P.x0 && xx < P.x1 && yy >= P.y0 && yy < P.y1) {
            r = gf_add_rn(r, a);
        }
    }
    sb[threadIdx.x] = b;
    sr[threadIdx.x] = r;
    c0[threadIdx.x] = n0;
    c1[threadIdx.x] = n1;
    c2[threadIdx.x] = n2;
    __syncthreads();
    for (u32 w = FY_THREADS / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w) {
            sb[threadIdx.x] = gf_add_rn(sb[threadIdx.x], sb[threadIdx.x + w]);
            sr[threadIdx.x] = gf_add_rn(sr[threadIdx.x], sr[threadIdx.x + w]);
            c0[threadIdx.x] += c0[threadIdx.x + w];
            c1[threadIdx.x] += c1[threadIdx.x + w];
            c2[threadIdx.x] += c2[threadIdx.x + w];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        cnt[3 * blockIdx.x] = c0[0];
        cnt[3 * blockIdx.x + 1] = c1[0];
        cnt[3 * blockIdx.x + 2] = c2[0];
        ba[2 * blockIdx.x] = sb[0];
        ba[2 * blockIdx.x + 1] = sr[0];
    }
}
#endif
