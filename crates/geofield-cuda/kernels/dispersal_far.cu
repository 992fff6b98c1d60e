#line 2 "dispersal_far.cu"
// The near/far split's far field. Part of the "dispersal" module: dispersal.cu,
// dispersal_multires.cu and dispersal_far.cu are concatenated in that order
// (geofield_cuda::MODULES).

// ---------------------------------------------------------------------------------------------
// Near/far split, far field (geofield::dispersal::nearfar): trees spread to a lattice with
// Lagrange weights (fixed point, exact 128-bit sums), the far kernel G and the bound's envelope sampled on the padded
// lattice, products of their spectra (cuFFT, host), then per cell the Lagrange interpolation of
// the lattice field added to the near field, with the maxima the certificate needs.
// ---------------------------------------------------------------------------------------------
struct DispersalFarParams {
    double origin_u_m;
    double origin_v_m;
    double hx_m;
    double hy_m;
    double cell_size_m;
    double shift_m;     // the bound envelope's shift 2s + sqrt(2) H
    double r1sq;        // blend R1^2, m^2
    double r2sq;        // blend R^2, m^2
    double ka;          // kernel: Weibull D, lognormal X0, 2Dt u
    double kb;          // kernel: Weibull theta, lognormal Xb, 2Dt p
    double c[8];        // S_n(t) = t^n sum_k c_k (1 - t)^k
    u32 nx;
    u32 ny;
    u32 px;
    u32 py;
    u32 order;
    u32 periodic;
    u32 shape;          // 0 Weibull, 1 lognormal, 2 2Dt
    u32 cols;
    u32 rows;
    u32 n_trees;
    u32 table_len;
    u32 pad0;
    double inv_hx;      // 1 / hx_m, 1 / hy_m: multiplications (no division subroutine per cell)
    double inv_hy;
};
GF_CHECK_SIZE(DispersalFarParams, 208);

template <int N>
__device__ __forceinline__ void gf_lagrange(double t, double (&w)[N]) {
#pragma unroll
    for (int k = 0; k < N; ++k) {
        double p = 1.0;
#pragma unroll
        for (int j = 0; j < N; ++j) {
            // A constant reciprocal (folded at compile time): no double division subroutine.
            if (j != k) p *= (t - (double)j) * (1.0 / (double)(k - j));
        }
        w[k] = p;
    }
}

__device__ __forceinline__ long long gf_wrap(long long i, u32 n, u32 periodic) {
    if (!periodic) return i;
    long long m = i % (long long)n;
    return m < 0 ? m + n : m;
}

__device__ __forceinline__ double gf_far_kernel(const DispersalFarParams& p, double r2) {
    if (r2 <= p.r1sq) return 0.0;
    double k;
    if (p.shape == 0) {
        k = exp(-p.ka * pow(r2, 0.5 * p.kb));
    } else if (p.shape == 1) {
        const double z = (0.5 * log(r2) - log(p.ka)) / p.kb;
        k = exp(-0.5 * z * z);
    } else {
        k = pow(1.0 + r2 / p.ka, -(p.kb + 1.0));
    }
    if (r2 >= p.r2sq) return k;
    const double t = (r2 - p.r1sq) / (p.r2sq - p.r1sq), u = 1.0 - t;
    double acc = 0.0, tn = 1.0;
    for (int j = (int)p.order - 1; j >= 0; --j) acc = acc * u + p.c[j];
    for (u32 j = 0; j < p.order; ++j) tn *= t;
    return k * tn * acc;
}

// One thread per tree; N = the stencil's points per axis (the blend's order), fixed at compile
// time so the stencil stays in registers. Each term w·l_i·l_j is rounded once to units of
// 2^-F (`scale` = 2^F, geofield::dispersal::nearfar::Fixed) and summed exactly in 128 bits.
template <int N>
__device__ __forceinline__ void gf_far_spread(const DispersalFarParams& p, double scale,
                                              const double* __restrict__ u,
                                              const double* __restrict__ v,
                                              const double* __restrict__ w,
                                              unsigned long long* __restrict__ wl,
                                              unsigned long long* __restrict__ wb) {
    const u32 k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= p.n_trees) return;
    const double a = (u[k] - p.origin_u_m) * p.inv_hx, b = (v[k] - p.origin_v_m) * p.inv_hy;
    const double ba = floor(a) - (double)(N / 2 - 1), bb = floor(b) - (double)(N / 2 - 1);
    double lx[N], ly[N];
    gf_lagrange<N>(a - ba, lx);
    gf_lagrange<N>(b - bb, ly);
    const double wk = w[k];
#pragma unroll
    for (int j = 0; j < N; ++j) {
        const long long row = gf_wrap((long long)bb + j, p.ny, p.periodic) * (long long)p.nx;
#pragma unroll
        for (int i = 0; i < N; ++i) {
            const long long at = row + gf_wrap((long long)ba + i, p.nx, p.periodic);
            gf_add_i128(&wl[2 * at], rint(__dmul_rn(__dmul_rn(wk, lx[i]), ly[j]) * scale));
        }
    }
    const long long ix = gf_wrap((long long)floor(a + 0.5), p.nx, p.periodic);
    const long long iy = gf_wrap((long long)floor(b + 0.5), p.ny, p.periodic);
    gf_add_i128(&wb[2 * (iy * (long long)p.nx + ix)], rint(wk * scale));
}

#define GF_FAR_SPREAD(NAME, N)                                                                    \
    GF_KERNEL_IF(NAME)(extern "C" __global__ void NAME(                                           \
        const DispersalFarParams p, double scale, const double* __restrict__ u,                  \
        const double* __restrict__ v, const double* __restrict__ w,                               \
        unsigned long long* __restrict__ wl, unsigned long long* __restrict__ wb) {               \
        gf_far_spread<N>(p, scale, u, v, w, wl, wb);                                              \
    })
GF_FAR_SPREAD(dispersal_far_spread4, 4)
GF_FAR_SPREAD(dispersal_far_spread6, 6)

#if GF_WANTED(dispersal_far_unfix)
// Node i = j nx + k of the nx x ny lattice: out[j px + k] (the zero-padded px x py array) = the
// 128-bit sum at acc[2i], acc[2i + 1] as a double, rounded once to the nearest (ties to even,
// as Rust's `i128 as f64`), times `unit` = 2^-F (exact).
extern "C" __global__ void dispersal_far_unfix(const DispersalFarParams p, double unit,
                                               const unsigned long long* __restrict__ acc,
                                               double* __restrict__ out) {
    const u64 n = (u64)p.nx * p.ny;
    const u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        unsigned long long lo = acc[2 * i], hi = acc[2 * i + 1];
        const bool neg = (long long)hi < 0;
        if (neg) {  // the magnitude (2^127 stays 2^127, read unsigned)
            lo = ~lo + 1ull;
            hi = ~hi + (lo == 0ull ? 1ull : 0ull);
        }
        double d;
        if (hi == 0ull) {
            d = __ull2double_rn(lo);
        } else {
            // The top 64 bits, the bits below them folded into the last (sticky: they decide
            // a tie, never a rounding past bit 11), converted once and scaled exactly.
            const int lz = __clzll((long long)hi);
            unsigned long long top = lz ? ((hi << lz) | (lo >> (64 - lz))) : hi;
            const unsigned long long rest = lo << lz;
            top |= (rest != 0ull) ? 1ull : 0ull;
            d = ldexp(__ull2double_rn(top), 64 - lz);
        }
        out[(i / p.nx) * p.px + i % p.nx] = (neg ? -d : d) * unit;
    }
}
#endif

#if GF_WANTED(dispersal_far_fill)
// g = G at each padded index's offset; e = the bound's envelope D(|offset| - shift) from the
// sampled table (the last sample at or below the distance: the envelope is non-increasing).
extern "C" __global__ void dispersal_far_fill(const DispersalFarParams p,
                                              const double* __restrict__ tab_r,
                                              const double* __restrict__ tab_d,
                                              double* __restrict__ g, double* __restrict__ e) {
    const u64 n = (u64)p.px * p.py;
    const u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 idx = (u64)blockIdx.x * blockDim.x + threadIdx.x; idx < n; idx += stride) {
        const u32 i = (u32)(idx % p.px), j = (u32)(idx / p.px);
        double dx, dy;
        bool ok = true;
        if (p.periodic) {
            dx = ((double)i - (double)p.nx * rint((double)i / (double)p.nx)) * p.hx_m;
            dy = ((double)j - (double)p.ny * rint((double)j / (double)p.ny)) * p.hy_m;
        } else {
            if (i < p.nx) dx = (double)i * p.hx_m;
            else if (i > p.px - p.nx) dx = ((double)i - (double)p.px) * p.hx_m;
            else { dx = 0.0; ok = false; }
            if (j < p.ny) dy = (double)j * p.hy_m;
            else if (j > p.py - p.ny) dy = ((double)j - (double)p.py) * p.hy_m;
            else { dy = 0.0; ok = false; }
        }
        double gv = 0.0, ev = 0.0;
        if (ok) {
            const double r2 = dx * dx + dy * dy;
            gv = gf_far_kernel(p, r2);
            const double x = sqrt(r2) - p.shift_m;
            u32 lo = 0;
            if (x > tab_r[0]) {
                u32 hi = p.table_len; // tab_r[lo] <= x < tab_r[hi]
                while (hi - lo > 1u) {
                    const u32 mid = (lo + hi) >> 1;
                    if (tab_r[mid] <= x) lo = mid; else hi = mid;
                }
            }
            ev = tab_d[lo];
        }
        g[idx] = gv;
        e[idx] = ev;
    }
}
#endif

#if GF_WANTED(dispersal_far_mul)
// a <- a * b * scale over n complex values.
extern "C" __global__ void dispersal_far_mul(u64 n, double scale, double2* __restrict__ a,
                                             const double2* __restrict__ b) {
    const u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const double2 x = a[i], y = b[i];
        a[i] = make_double2((x.x * y.x - x.y * y.y) * scale, (x.x * y.y + x.y * y.x) * scale);
    }
}
#endif

__device__ __forceinline__ void gf_atomic_max_nonneg(unsigned long long* m, double v) {
    // Non-negative doubles order like their bit patterns.
    atomicMax(m, (unsigned long long)__double_as_longlong(fmax(v, 0.0)));
}

// Per cell: near (in out) + the Lagrange interpolation of phi; maxima[0] = max near,
// maxima[1] = max of the bound field at the cell's nearest node.
template <int N>
__device__ __forceinline__ void gf_far_interp(const DispersalFarParams& p,
                                              const double* __restrict__ phi,
                                              const double* __restrict__ bound,
                                              float* __restrict__ out,
                                              unsigned long long* __restrict__ maxima) {
    const u64 n = (u64)p.cols * p.rows;
    const u64 stride = (u64)gridDim.x * blockDim.x;
    double mnear = 0.0, mbound = 0.0;
    for (u64 idx = (u64)blockIdx.x * blockDim.x + threadIdx.x; idx < n; idx += stride) {
        const u32 col = (u32)(idx % p.cols), row = (u32)(idx / p.cols);
        const double uu = ((double)col + 0.5) * p.cell_size_m;
        const double vv = ((double)row + 0.5) * p.cell_size_m;
        const double a = (uu - p.origin_u_m) * p.inv_hx, b = (vv - p.origin_v_m) * p.inv_hy;
        const double ba = floor(a) - (double)(N / 2 - 1), bb = floor(b) - (double)(N / 2 - 1);
        double lx[N];
        gf_lagrange<N>(a - ba, lx);
        const double tb = b - bb;
        double acc = 0.0;
#pragma unroll
        for (int j = 0; j < N; ++j) {
            // l_j(tb) formed here: one stencil array in registers, not two.
            double lyj = 1.0;
#pragma unroll
            for (int m = 0; m < N; ++m) {
                if (m != j) lyj *= (tb - (double)m) * (1.0 / (double)(j - m));
            }
            const long long r = gf_wrap((long long)bb + j, p.ny, p.periodic) * (long long)p.px;
            double line = 0.0;
#pragma unroll
            for (int i = 0; i < N; ++i) {
                line += lx[i] * phi[r + gf_wrap((long long)ba + i, p.nx, p.periodic)];
            }
            acc += lyj * line;
        }
        const long long ix = gf_wrap((long long)floor(a + 0.5), p.nx, p.periodic);
        const long long iy = gf_wrap((long long)floor(b + 0.5), p.ny, p.periodic);
        mbound = fmax(mbound, bound[iy * (long long)p.px + ix]);
        const float near = out[idx];
        mnear = fmax(mnear, (double)near);
        out[idx] = (float)((double)near + acc);
    }
    // Block maxima by warp shuffles, one atomic per warp.
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        mnear = fmax(mnear, __shfl_down_sync(0xffffffffu, mnear, off));
        mbound = fmax(mbound, __shfl_down_sync(0xffffffffu, mbound, off));
    }
    if ((threadIdx.x & 31) == 0) {
        gf_atomic_max_nonneg(&maxima[0], mnear);
        gf_atomic_max_nonneg(&maxima[1], mbound);
    }
}

#define GF_FAR_INTERP(NAME, N)                                                                    \
    GF_KERNEL_IF(NAME)(extern "C" __global__ void __launch_bounds__(256, 1) NAME(                 \
        const DispersalFarParams p, const double* __restrict__ phi,                              \
        const double* __restrict__ bound, float* __restrict__ out,                               \
        unsigned long long* __restrict__ maxima) {                                                \
        gf_far_interp<N>(p, phi, bound, out, maxima);                                             \
    })
GF_FAR_INTERP(dispersal_far_interp4, 4)
GF_FAR_INTERP(dispersal_far_interp6, 6)
