// kriging.cu: evaluation kernels of geofield's kriging (the host solves everything in f64).
//
// Coordinates are in "kriging space" (centred, anisotropy already applied by the host). Kernels:
//   kriging_dual_<prec>_<model>_h<HT>   dual predictions z*(x) = sum_i C(|x - x_i|) alpha_ih + f(x)^T beta_h
//   kriging_var_k_<T>                   a tile of covariance vectors k(x_j) (input of the GEMM)
//   kriging_var_reduce_<T>              sigma^2 from W = [Linv; G^T Linv] K (output of the GEMM)
//   kriging_nodes                       f64 node coordinates of a tile (queries of the k-NN search)
//   kriging_local_<T>                   local kriging, one warp per node, system in shared memory
//   kriging_paper_<T>_n<NM>             the paper's per-node bordered system, Gauss without pivoting
//
// Node grid: x = (ox + col*cx) + row*rx, y = (oy + col*cy) + row*ry in f64, each operation rounded
// to nearest without FMA (gf_add_rn / gf_mul_rn), so the CPU's node coordinates match bit for bit.
// Output layout: surface-major, out[h*N + row*cols + col].

#define KR_MAX_STRUCT 4
#define KR_PMAX 6
#define KR_TS 256        // samples staged in shared memory per step of the dual kernel
#define KR_THREADS 256   // threads per block of the dual and paper kernels
#define KR_BSTRIDE 9     // row stride of the right-hand sides [k, F] in the local kernel

enum KrModel : u32 {
    KR_EXP = 0,
    KR_GAU = 1,
    KR_SPH = 2,
    KR_CUB = 3,
    KR_STAB = 4,
    KR_MAT = 5,
    KR_POW = 6,
    KR_LIN = 7,
    KR_MAT05 = 8,
    KR_MAT15 = 9,
    KR_MAT25 = 10,
};

// One nested structure. Matern constants (mu = nu - round(nu), the Temme coefficients and the
// normalisation) are computed on the host from nu.
struct KrStructure {
    u32 model;
    u32 pad0;
    double sill;      // partial sill c (power: scale, linear: slope)
    double range;     // practical range a (unused by power and linear)
    double param;     // stable alpha, matern nu, power exponent
    double scale;     // matern s_nu
    double mu;        // matern: nu - n_up
    u32 n_up;         // matern: round(nu), upward recurrence steps
    u32 pad1;
    double g1;        // Temme Gamma1(mu) = (1/Gamma(1-mu) - 1/Gamma(1+mu)) / (2 mu)
    double g2;        // Temme Gamma2(mu) = (1/Gamma(1-mu) + 1/Gamma(1+mu)) / 2
    double gp;        // Gamma(1+mu)
    double gm;        // Gamma(1-mu)
    double fact;      // mu pi / sin(mu pi)
    double log_norm;  // (1-nu) ln 2 - ln Gamma(nu)
};
GF_CHECK_SIZE(KrStructure, 104);

// C(h) = c_zero            if exact and h <= eps
//      = offset + sum_s sill_s rho_s(h)   otherwise
// (bounded: offset = 0, c_zero = nugget + sum sill; pseudo-covariance B - gamma: offset = B - nugget,
// c_zero = B, rho = -h^w for power and -h for linear). The system diagonal is always c_zero; the
// variance uses var_zero.
struct KrCov {
    KrStructure s[KR_MAX_STRUCT];
    double nugget;
    double c_zero;
    double offset;
    double var_zero;
    double eps;
    u32 n_struct;
    u32 exact;
};
GF_CHECK_SIZE(KrCov, 464);

struct KrGrid {
    double ox, oy;   // node (0, 0)
    double cx, cy;   // step per column
    double rx, ry;   // step per row
    u32 rows, cols;
};
GF_CHECK_SIZE(KrGrid, 56);

struct KrDualParams {
    KrGrid grid;
    double drift_scale;
    u64 n_nodes;
    u32 n;        // samples
    u32 h;        // surfaces
    u32 p;        // drift terms 0, 1, 3, 6
    u32 pad0;
    double k1;    // fast path: EXP -3 log2(e)/a (f32) or -3/a (f64); GAU the same over a^2; SPH 1/a
    double eps2;  // exact: eps^2, else -1
    double czero; // fast path: c_zero / sill (alpha is pre-scaled by the sill)
    double alpha_scale;  // sill (fast paths) or 1 (generic)
};
GF_CHECK_SIZE(KrDualParams, 120);

struct KrVarParams {
    KrGrid grid;
    double drift_scale;
    u64 j0;       // first node of the tile
    u32 m;        // nodes in the tile
    u32 n;        // samples
    u32 p;        // drift terms of the variance (0, 1, 3, 6)
    u32 ldw;      // rows of W (n + p)
    double rinv[KR_PMAX * KR_PMAX];  // p x p lower, row-major (stride p)
};
GF_CHECK_SIZE(KrVarParams, 376);

struct KrNodesParams {
    KrGrid grid;
    u64 j0;
    u32 m;
    u32 pad0;
};
GF_CHECK_SIZE(KrNodesParams, 72);

struct KrLocalParams {
    KrGrid grid;
    double drift_scale;
    u64 j0;        // first node of the tile
    u64 n_nodes;   // all nodes (output stride per surface)
    u32 m;         // nodes in the tile
    u32 k;         // neighbours per node (row length of nbr)
    u32 n;         // samples
    u32 h;         // surfaces
    u32 p;         // drift terms 0 (simple), 1, 3, 6
    u32 want_var;
    u32 region;    // elements of T per warp in shared memory
    u32 pad0;
};
GF_CHECK_SIZE(KrLocalParams, 112);

struct KrPaperParams {
    KrGrid grid;
    u64 n_nodes;
    u32 n;         // samples (<= NM)
    u32 h;         // surfaces
    u32 mode;      // 1: A and B per node, one surface; 2: A from the host, one surface; 4: all surfaces
    u32 surface;   // modes 1, 2
};
GF_CHECK_SIZE(KrPaperParams, 80);

// ---------------------------------------------------------------------------------------------
// Nodes and drift.
// ---------------------------------------------------------------------------------------------
__device__ __forceinline__ void kr_node(const KrGrid& g, u64 j, double& x, double& y) {
    const u64 row = j / g.cols;
    const u64 col = j - row * g.cols;
    const double c = (double)col, r = (double)row;
    x = gf_add_rn(gf_add_rn(g.ox, gf_mul_rn(c, g.cx)), gf_mul_rn(r, g.rx));
    y = gf_add_rn(gf_add_rn(g.oy, gf_mul_rn(c, g.cy)), gf_mul_rn(r, g.ry));
}

// f = [1, u, v, u^2, u v, v^2] on (u, v) = (x / s, y / s); first p terms written.
__device__ __forceinline__ void kr_drift(double x, double y, double s, u32 p, double* f) {
    const double u = x / s, v = y / s;
    f[0] = 1.0;
    f[1] = u;
    f[2] = v;
    f[3] = u * u;
    f[4] = u * v;
    f[5] = v * v;
    (void)p;
}

// ---------------------------------------------------------------------------------------------
// Matern, general nu: rho(x) = 2^(1-nu)/Gamma(nu) x^nu K_nu(x). K_mu and K_mu+1 (|mu| <= 1/2) from
// Temme's series for x <= 2 and from the trapezoidal rule on e^x K_mu(x) = int_0^inf
// exp(-x (cosh t - 1)) cosh(mu t) dt for x > 2 (step min(0.2, 0.5/sqrt(x)): the discretisation
// error is below e^-49 relative), then the upward recurrence on G_j = x^j K_j:
// G_{j+1} = 2 j G_j + x^2 G_{j-1}, rescaled to stay finite. Relative error ~1e-14.
// ---------------------------------------------------------------------------------------------
__device__ __noinline__ double kr_matern_gen(const KrStructure& s, double x) {
    if (!(x > 0.0)) return 1.0;
    const double mu = s.mu;
    double g0, g1, lsc;
    if (x <= 2.0) {
        const double lnh = -log(0.5 * x);  // ln(2/x)
        const double sig = mu * lnh;
        const double shs = sig == 0.0 ? 1.0 : sinh(sig) / sig;
        double f = s.fact * (s.g1 * cosh(sig) + s.g2 * shs * lnh);
        double pp = 0.5 * exp(sig) * s.gp;
        double qq = 0.5 * exp(-sig) * s.gm;
        double c = 1.0, sum = f, sum1 = pp;
        const double q4 = 0.25 * x * x;
        for (int k = 1; k < 200; ++k) {
            const double dk = (double)k;
            f = (dk * f + pp + qq) / (dk * dk - mu * mu);
            c *= q4 / dk;
            pp /= dk - mu;
            qq /= dk + mu;
            const double t = c * f;
            sum += t;
            sum1 += c * (pp - dk * f);
            if (fabs(t) < 1e-17 * fabs(sum)) break;
        }
        const double xm = exp(mu * log(x));
        g0 = xm * sum;          // x^mu K_mu
        g1 = xm * 2.0 * sum1;   // x^(mu+1) K_mu+1 = x^mu x (2/x) sum1
        lsc = 0.0;
    } else {
        const double h = fmin(0.2, 0.5 / sqrt(x));
        double s0 = 0.5, s1 = 0.5;
        for (int j = 1; j < 400; ++j) {
            const double t = h * (double)j;
            const double sh = sinh(0.5 * t);
            const double e = exp(-2.0 * x * sh * sh);
            const double a0 = e * cosh(mu * t);
            const double a1 = e * cosh((mu + 1.0) * t);
            s0 += a0;
            s1 += a1;
            if (a1 < 1e-18 * s1) break;
        }
        const double xm = exp(mu * log(x));
        g0 = xm * h * s0;
        g1 = xm * x * h * s1;
        lsc = -x;
    }
    double g = g0;
    if (s.n_up > 0) {
        double gp = g0;
        g = g1;
        const double x2 = x * x;
        for (u32 i = 1; i < s.n_up; ++i) {
            const double gn = 2.0 * (mu + (double)i) * g + x2 * gp;
            gp = g;
            g = gn;
            if (g > 1e250) {
                g *= 1e-250;
                gp *= 1e-250;
                lsc += 575.6462732485114;  // 250 ln 10
            }
        }
    }
    if (!(g > 0.0)) return 0.0;
    return fmin(1.0, exp(s.log_norm + log(g) + lsc));
}

// ---------------------------------------------------------------------------------------------
// Correlations and covariance, f64.
// ---------------------------------------------------------------------------------------------
__device__ __forceinline__ double kr_rho64(const KrStructure& s, double h) {
    const double r = h / s.range;
    switch (s.model) {
    case KR_EXP: return exp(-3.0 * r);
    case KR_GAU: return exp(-3.0 * r * r);
    case KR_SPH: return r < 1.0 ? 1.0 - r * (1.5 - 0.5 * r * r) : 0.0;
    case KR_CUB: {
        const double r2 = r * r;
        return r < 1.0 ? 1.0 - r2 * (7.0 - r * (8.75 - r2 * (3.5 - 0.75 * r2))) : 0.0;
    }
    case KR_STAB: return r > 0.0 ? exp(-3.0 * pow(r, s.param)) : 1.0;
    case KR_MAT05: return exp(-s.scale * r);
    case KR_MAT15: {
        const double x = s.scale * r;
        return (1.0 + x) * exp(-x);
    }
    case KR_MAT25: {
        const double x = s.scale * r;
        return (1.0 + x + x * x / 3.0) * exp(-x);
    }
    case KR_MAT: return kr_matern_gen(s, s.scale * r);
    case KR_POW: return h > 0.0 ? -pow(h, s.param) : 0.0;
    default: return -h;  // KR_LIN
    }
}

__device__ __forceinline__ double kr_cov(const KrCov& c, double h) {
    if (c.exact && h <= c.eps) return c.c_zero;
    double s = c.offset;
    for (u32 i = 0; i < c.n_struct; ++i) s += c.s[i].sill * kr_rho64(c.s[i], h);
    return s;
}

// ---------------------------------------------------------------------------------------------
// f32. exp: FAST = one MUFU.EX2 (relative error ~2^-22); otherwise 2^x = 2^n 2^f with n the
// nearest integer (magic-number rounding, FMA pipe only) and a degree-7 Taylor polynomial for
// 2^f, |f| <= 1/2 (truncation 5e-9; a few ulp overall).
// ---------------------------------------------------------------------------------------------
__device__ __forceinline__ float kr_exp2_acc(float x) {
    x = fmaxf(x, -127.0f);
    const float magic = 12582912.0f;  // 1.5 * 2^23
    const float t = gf_add_rn(x, magic);
    const float n = gf_sub_rn(t, magic);
    const float f = x - n;
    const int ni = __float_as_int(t) - 0x4B400000;
    const float y = f * 0.693147180559945f;
    float q = 1.0f / 5040.0f;
    q = fmaf(q, y, 1.0f / 720.0f);
    q = fmaf(q, y, 1.0f / 120.0f);
    q = fmaf(q, y, 1.0f / 24.0f);
    q = fmaf(q, y, 1.0f / 6.0f);
    q = fmaf(q, y, 0.5f);
    q = fmaf(q, y, 1.0f);
    q = fmaf(q, y, 1.0f);
    return q * __int_as_float((ni + 127) << 23);
}
template <bool FAST> __device__ __forceinline__ float kr_exp2f(float x) {
    if constexpr (FAST) {
        return gf_ex2(x);
    } else {
        return kr_exp2_acc(x);
    }
}
template <bool FAST> __device__ __forceinline__ float kr_sqrtf(float x) {
    if constexpr (FAST) {
        return gf_sqrt(x);
    } else {
        return __fsqrt_rn(x);
    }
}
#define KR_LOG2E 1.4426950408889634f

template <bool FAST> __device__ __forceinline__ float kr_powf(float r, float a) {
    if (!(r > 0.0f)) return 0.0f;
    return kr_exp2f<FAST>(a * gf_log2_rr(r));
}

template <bool FAST> __device__ __forceinline__ float kr_rho32(const KrStructure& s, float h) {
    const float r = h / (float)s.range;
    switch (s.model) {
    case KR_EXP: return kr_exp2f<FAST>(-3.0f * KR_LOG2E * r);
    case KR_GAU: return kr_exp2f<FAST>(-3.0f * KR_LOG2E * r * r);
    case KR_SPH: return r < 1.0f ? 1.0f - r * (1.5f - 0.5f * r * r) : 0.0f;
    case KR_CUB: {
        const float r2 = r * r;
        return r < 1.0f ? 1.0f - r2 * (7.0f - r * (8.75f - r2 * (3.5f - 0.75f * r2))) : 0.0f;
    }
    case KR_STAB: return r > 0.0f ? kr_exp2f<FAST>(-3.0f * KR_LOG2E * kr_powf<FAST>(r, (float)s.param)) : 1.0f;
    case KR_MAT05: return kr_exp2f<FAST>(-KR_LOG2E * (float)s.scale * r);
    case KR_MAT15: {
        const float x = (float)s.scale * r;
        return (1.0f + x) * kr_exp2f<FAST>(-KR_LOG2E * x);
    }
    case KR_MAT25: {
        const float x = (float)s.scale * r;
        return (1.0f + x + x * x * (1.0f / 3.0f)) * kr_exp2f<FAST>(-KR_LOG2E * x);
    }
    case KR_MAT: return (float)kr_matern_gen(s, s.scale * (double)r);
    case KR_POW: return -kr_powf<FAST>(h, (float)s.param);
    default: return -h;
    }
}

template <bool FAST> __device__ __forceinline__ float kr_cov32(const KrCov& c, float h) {
    if (c.exact && h <= (float)c.eps) return (float)c.c_zero;
    float s = (float)c.offset;
    for (u32 i = 0; i < c.n_struct; ++i) s += (float)c.s[i].sill * kr_rho32<FAST>(c.s[i], h);
    return s;
}

// Covariance at distance h in the precision T.
template <typename T, bool FAST> struct KrCovT;
template <bool FAST> struct KrCovT<double, FAST> {
    static __device__ __forceinline__ double eval(const KrCov& c, double h) { return kr_cov(c, h); }
};
template <bool FAST> struct KrCovT<float, FAST> {
    static __device__ __forceinline__ float eval(const KrCov& c, float h) { return kr_cov32<FAST>(c, h); }
};

__device__ __forceinline__ double kr_sqrt_t(double x) { return sqrt(x); }
template <bool FAST> __device__ __forceinline__ double kr_sqrt_p(double x) { return sqrt(x); }
template <bool FAST> __device__ __forceinline__ float kr_sqrt_p(float x) { return kr_sqrtf<FAST>(x); }

// ---------------------------------------------------------------------------------------------
// Dual predictions. Fast paths (one structure, bounded) return rho and the pre-scaled C0 / c.
// ---------------------------------------------------------------------------------------------
#define KR_M_GEN 0
#define KR_M_EXP 1
#define KR_M_GAU 2
#define KR_M_SPH 3

template <typename T, int MODEL, bool FAST> struct KrPair;
template <int MODEL, bool FAST> struct KrPair<float, MODEL, FAST> {
    static __device__ __forceinline__ float rho(float d2, float k1) {
        if constexpr (MODEL == KR_M_EXP) {
            return kr_exp2f<FAST>(k1 * kr_sqrtf<FAST>(d2));
        } else if constexpr (MODEL == KR_M_GAU) {
            return kr_exp2f<FAST>(k1 * d2);
        } else {
            const float r = kr_sqrtf<FAST>(d2) * k1;
            return r < 1.0f ? 1.0f - r * (1.5f - 0.5f * r * r) : 0.0f;
        }
    }
};
template <int MODEL, bool FAST> struct KrPair<double, MODEL, FAST> {
    static __device__ __forceinline__ double rho(double d2, double k1) {
        if constexpr (MODEL == KR_M_EXP) {
            return exp(k1 * sqrt(d2));
        } else if constexpr (MODEL == KR_M_GAU) {
            return exp(k1 * d2);
        } else {
            const double r = sqrt(d2) * k1;
            return r < 1.0 ? 1.0 - r * (1.5 - 0.5 * r * r) : 0.0;
        }
    }
};

// Kernels copy the covariance description to shared memory once: the evaluation loops index its
// structures at run time, which kernel-parameter space does not allow without a local copy.
#define KR_STAGE_COV(SRC)                                                                        \
    __shared__ KrCov s_cov;                                                                      \
    if (threadIdx.x == 0) s_cov = SRC;                                                           \
    __syncthreads();                                                                             \
    const KrCov& cov = s_cov;

template <typename T> struct KrVec2;
template <> struct KrVec2<float> { typedef float2 V; };
template <> struct KrVec2<double> { typedef double2 V; };

template <typename T, int MODEL, int HT, int NPT, bool FAST>
__device__ __forceinline__ void kr_dual(const KrDualParams& P, const KrCov& cov_p,
                                        const T* __restrict__ sxy, const T* __restrict__ alpha,
                                        const double* __restrict__ beta, T* __restrict__ out) {
    typedef typename KrVec2<T>::V V2;
    __shared__ KrCov s_cov;
    if (MODEL == KR_M_GEN && threadIdx.x == 0) s_cov = cov_p;
    const KrCov& cov = s_cov;
    __shared__ V2 s_xy[KR_TS];
    __shared__ __align__(16) T s_a[KR_TS * HT];
    const u64 N = P.n_nodes;
    double xd[NPT], yd[NPT];
    T xf[NPT], yf[NPT];
    u64 jj[NPT];
#pragma unroll
    for (int q = 0; q < NPT; ++q) {
        jj[q] = ((u64)blockIdx.x * NPT + q) * KR_THREADS + threadIdx.x;
        const u64 jc = jj[q] < N ? jj[q] : 0;
        kr_node(P.grid, jc, xd[q], yd[q]);
        xf[q] = (T)xd[q];
        yf[q] = (T)yd[q];
    }
    double acc[NPT][HT];
#pragma unroll
    for (int q = 0; q < NPT; ++q)
#pragma unroll
        for (int h = 0; h < HT; ++h) acc[q][h] = 0.0;
    const T k1 = (T)P.k1, eps2 = (T)P.eps2, czero = (T)P.czero, ascale = (T)P.alpha_scale;
    for (u32 base = 0; base < P.n; base += KR_TS) {
        const u32 cnt = min((u32)KR_TS, P.n - base);
        __syncthreads();
        for (u32 t = threadIdx.x; t < KR_TS; t += KR_THREADS) {
            V2 v;
            v.x = t < cnt ? sxy[2 * (size_t)(base + t)] : (T)0;
            v.y = t < cnt ? sxy[2 * (size_t)(base + t) + 1] : (T)0;
            s_xy[t] = v;
        }
        for (u32 t = threadIdx.x; t < KR_TS * HT; t += KR_THREADS) {
            const u32 i = t / HT, h = t - i * HT;
            s_a[t] = (i < cnt && h < P.h) ? alpha[(size_t)(base + i) * P.h + h] * ascale : (T)0;
        }
        __syncthreads();
        const u32 cnt4 = (cnt + 3u) & ~3u;
        T part[NPT][HT];
#pragma unroll
        for (int q = 0; q < NPT; ++q)
#pragma unroll
            for (int h = 0; h < HT; ++h) part[q][h] = (T)0;
        constexpr int UNR = MODEL == KR_M_GEN ? 1 : 4;
#pragma unroll 1
        for (u32 i0 = 0; i0 < cnt4; i0 += UNR) {
#pragma unroll
            for (int u = 0; u < UNR; ++u) {
                const V2 p = s_xy[i0 + u];
#pragma unroll
                for (int q = 0; q < NPT; ++q) {
                    const T dx = p.x - xf[q], dy = p.y - yf[q];
                    const T d2 = dx * dx + dy * dy;
                    T c;
                    if constexpr (MODEL == KR_M_GEN) {
                        c = KrCovT<T, FAST>::eval(cov, kr_sqrt_p<FAST>(d2));
                    } else {
                        c = d2 <= eps2 ? czero : KrPair<T, MODEL, FAST>::rho(d2, k1);
                    }
#pragma unroll
                    for (int h = 0; h < HT; ++h) part[q][h] += c * s_a[(i0 + u) * HT + h];
                }
            }
        }
#pragma unroll
        for (int q = 0; q < NPT; ++q)
#pragma unroll
            for (int h = 0; h < HT; ++h) acc[q][h] += (double)part[q][h];
    }
#pragma unroll
    for (int q = 0; q < NPT; ++q) {
        if (jj[q] >= N) continue;
        double f[KR_PMAX];
        kr_drift(xd[q], yd[q], P.drift_scale, P.p, f);
#pragma unroll
        for (int h = 0; h < HT; ++h) {
            if (h < (int)P.h) {
                double v = acc[q][h];
#pragma unroll
                for (int l = 0; l < KR_PMAX; ++l)
                    if (l < (int)P.p) v += f[l] * beta[(size_t)l * P.h + h];
                out[(size_t)h * N + jj[q]] = (T)v;
            }
        }
    }
}

#define KR_NPT(HT) ((HT) <= 4 ? 2 : 1)
#define KR_DUAL_ONE(NAME, T, MODEL, HT, FAST)                                                    \
    extern "C" __global__ void __launch_bounds__(KR_THREADS, 1) NAME(                               \
        KrDualParams P, KrCov cov, const T* __restrict__ sxy, const T* __restrict__ alpha,      \
        const double* __restrict__ beta, T* __restrict__ out) {                                  \
        kr_dual<T, MODEL, HT, KR_NPT(HT), FAST>(P, cov, sxy, alpha, beta, out);                  \
    }
#define KR_DUAL_MODELS(PREC, T, HT, FAST)                                                        \
    KR_DUAL_ONE(kriging_dual_##PREC##_gen_h##HT, T, KR_M_GEN, HT, FAST)                         \
    KR_DUAL_ONE(kriging_dual_##PREC##_exp_h##HT, T, KR_M_EXP, HT, FAST)                         \
    KR_DUAL_ONE(kriging_dual_##PREC##_gau_h##HT, T, KR_M_GAU, HT, FAST)                         \
    KR_DUAL_ONE(kriging_dual_##PREC##_sph_h##HT, T, KR_M_SPH, HT, FAST)
#define KR_DUAL_PRECS(HT)                                                                        \
    KR_DUAL_MODELS(f64, double, HT, false)                                                       \
    KR_DUAL_MODELS(f32, float, HT, false)                                                        \
    KR_DUAL_MODELS(f32fast, float, HT, true)
KR_DUAL_PRECS(1)
KR_DUAL_PRECS(2)
KR_DUAL_PRECS(4)
KR_DUAL_PRECS(8)
KR_DUAL_PRECS(12)
KR_DUAL_PRECS(16)

// ---------------------------------------------------------------------------------------------
// Global variance. K tile: one block per node, threads over samples; K[jl*n + i] = C(|x_j - x_i|)
// (column-major n x m for the GEMM). Reduce: one warp per node over column jl of W ((n+p) x m):
// sigma^2 = var_zero - |w|^2 + |Rinv (f(x) - G^T w)|^2, clamped at 0.
// ---------------------------------------------------------------------------------------------
template <typename T>
__device__ __forceinline__ void kr_var_k(const KrVarParams& P, const KrCov& cov_p,
                                         const T* __restrict__ sxy, T* __restrict__ K) {
    KR_STAGE_COV(cov_p)
    const u64 jl = blockIdx.x;
    if (jl >= P.m) return;
    double xd, yd;
    kr_node(P.grid, P.j0 + jl, xd, yd);
    const T x = (T)xd, y = (T)yd;
    for (u32 i = threadIdx.x; i < P.n; i += blockDim.x) {
        const T dx = sxy[2 * (size_t)i] - x, dy = sxy[2 * (size_t)i + 1] - y;
        K[jl * P.n + i] = KrCovT<T, true>::eval(cov, kr_sqrt_p<true>(dx * dx + dy * dy));
    }
}
extern "C" __global__ void kriging_var_k_f32(KrVarParams P, KrCov cov, const float* __restrict__ sxy,
                                             float* __restrict__ K) {
    kr_var_k<float>(P, cov, sxy, K);
}
extern "C" __global__ void kriging_var_k_f64(KrVarParams P, KrCov cov, const double* __restrict__ sxy,
                                             double* __restrict__ K) {
    kr_var_k<double>(P, cov, sxy, K);
}

__device__ __forceinline__ double kr_warp_sum(double v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, o);
    return v;
}

template <typename T>
__device__ __forceinline__ void kr_var_reduce(const KrVarParams& P, const KrCov& cov,
                                              const T* __restrict__ W, T* __restrict__ out) {
    const u32 lane = threadIdx.x & 31u;
    const u64 jl = (u64)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (jl >= P.m) return;
    const T* col = W + jl * P.ldw;
    double s = 0.0;
    for (u32 r = lane; r < P.n; r += 32) {
        const double w = (double)col[r];
        s += w * w;
    }
    s = kr_warp_sum(s);
    double xd, yd;
    kr_node(P.grid, P.j0 + jl, xd, yd);
    double f[KR_PMAX], rr[KR_PMAX];
    kr_drift(xd, yd, P.drift_scale, P.p, f);
#pragma unroll
    for (int l = 0; l < KR_PMAX; ++l) rr[l] = l < (int)P.p ? f[l] - (double)col[P.n + l] : 0.0;
    double t2 = 0.0;
#pragma unroll
    for (int a = 0; a < KR_PMAX; ++a) {
        if (a < (int)P.p) {
            double t = 0.0;
#pragma unroll
            for (int b = 0; b <= a; ++b) t += P.rinv[a * P.p + b] * rr[b];
            t2 += t * t;
        }
    }
    if (lane == 0) out[P.j0 + jl] = (T)fmax(0.0, cov.var_zero - s + t2);
}
extern "C" __global__ void kriging_var_reduce_f32(KrVarParams P, KrCov cov, const float* __restrict__ W,
                                                  float* __restrict__ out) {
    kr_var_reduce<float>(P, cov, W, out);
}
extern "C" __global__ void kriging_var_reduce_f64(KrVarParams P, KrCov cov, const double* __restrict__ W,
                                                  double* __restrict__ out) {
    kr_var_reduce<double>(P, cov, W, out);
}

// ---------------------------------------------------------------------------------------------
// Local kriging.
// ---------------------------------------------------------------------------------------------
extern "C" __global__ void kriging_nodes(KrNodesParams P, double* __restrict__ q) {
    const u64 jl = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (jl >= P.m) return;
    double x, y;
    kr_node(P.grid, P.j0 + jl, x, y);
    q[2 * jl] = x;
    q[2 * jl + 1] = y;
}

template <typename T> __device__ __forceinline__ T kr_nan();
template <> __device__ __forceinline__ float kr_nan<float>() { return __int_as_float(0x7fffffff); }
template <> __device__ __forceinline__ double kr_nan<double>() {
    return __longlong_as_double(0x7ff8000000000000LL);
}

// One warp per node. Shared memory per warp (T elements, ld = k + 1): A (k x ld, lower), B
// (k x KR_BSTRIDE: column 0 = k then w then u, columns 1..p = F then G), LAM (k), S (32
// small sums), then k ints of neighbour indices in a separate region after all warps' T data.
template <typename T>
__device__ __forceinline__ void kr_local(const KrLocalParams& P, const KrCov& cov_p,
                                         const double* __restrict__ sxy, const T* __restrict__ z,
                                         const double* __restrict__ mean,
                                         const long long* __restrict__ nbr, T* __restrict__ pred,
                                         T* __restrict__ var) {
    KR_STAGE_COV(cov_p)
    extern __shared__ __align__(16) unsigned char kr_smem[];
    const u32 lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    const u32 wpb = blockDim.x >> 5;
    const u64 jl = (u64)blockIdx.x * wpb + warp;
    if (jl >= P.m) return;
    const u32 k = P.k, ld = k + 1, p = P.p;
    T* A = reinterpret_cast<T*>(kr_smem) + (size_t)warp * P.region;
    T* B = A + (size_t)k * ld;
    T* LAM = B + (size_t)k * KR_BSTRIDE;
    T* S = LAM + k;
    int* id = reinterpret_cast<int*>(reinterpret_cast<T*>(kr_smem) + (size_t)wpb * P.region) + warp * k;
    const u64 j = P.j0 + jl;
    const u64 N = P.n_nodes;
    double x, y;
    kr_node(P.grid, j, x, y);
    // neighbours (ascending, padding -1 at the end)
    u32 m = 0;
    for (u32 a0 = 0; a0 < k; a0 += 32) {
        const u32 a = a0 + lane;
        const long long v = a < k ? nbr[jl * k + a] : -1;
        if (a < k) id[a] = (int)v;
        m += __popc(__ballot_sync(0xFFFFFFFFu, v >= 0));
    }
    const u32 need = p > 1 ? p : 1;
    bool ok = m >= need;
    if (ok) {
        __syncwarp();
        // system (lower triangle) and right-hand sides [k, F]
        const u32 tri = m * (m + 1) / 2;
        for (u32 t = lane; t < tri; t += 32) {
            u32 a = (u32)((sqrtf(8.0f * (float)t + 1.0f) - 1.0f) * 0.5f);
            while (a * (a + 1) / 2 > t) --a;
            while ((a + 1) * (a + 2) / 2 <= t) ++a;
            const u32 b = t - a * (a + 1) / 2;
            T c;
            if (a == b) {
                c = (T)cov.c_zero;
            } else {
                const int ia = id[a], ib = id[b];
                const double dx = sxy[2 * ia] - sxy[2 * ib], dy = sxy[2 * ia + 1] - sxy[2 * ib + 1];
                c = KrCovT<T, false>::eval(cov, (T)sqrt(dx * dx + dy * dy));
            }
            A[a * ld + b] = c;
        }
        for (u32 a = lane; a < m; a += 32) {
            const int ia = id[a];
            const double sx = sxy[2 * ia], sy = sxy[2 * ia + 1];
            const double dx = sx - x, dy = sy - y;
            B[a * KR_BSTRIDE] = KrCovT<T, false>::eval(cov, (T)sqrt(dx * dx + dy * dy));
            double f[KR_PMAX];
            kr_drift(sx, sy, P.drift_scale, p, f);
            for (u32 l = 0; l < p; ++l) B[a * KR_BSTRIDE + 1 + l] = (T)f[l];
        }
        __syncwarp();
        // Cholesky A = L L^T with the forward substitution of [k, F] folded in.
        for (u32 c = 0; c < m; ++c) {
            const T d = A[c * ld + c];
            __syncwarp();
            if (!(d > (T)0)) {
                ok = false;
                break;
            }
            const T l = sqrt(d);
            const T il = (T)1 / l;
            for (u32 a = c + 1 + lane; a < m; a += 32) A[a * ld + c] *= il;
            if (lane <= p) B[c * KR_BSTRIDE + lane] *= il;
            if (lane == 0) A[c * ld + c] = l;
            __syncwarp();
            for (u32 a = c + 1 + lane; a < m; a += 32) {
                const T lac = A[a * ld + c];
                for (u32 b = c + 1; b <= a; ++b) A[a * ld + b] -= lac * A[b * ld + c];
                for (u32 q = 0; q <= p; ++q) B[a * KR_BSTRIDE + q] -= lac * B[c * KR_BSTRIDE + q];
            }
            __syncwarp();
        }
    }
    if (ok) {
        // small sums: e = 0: |w|^2; 1..p: (G^T w)_l; then M = G^T G, lower, row by row
        const u32 ne = 1 + p + p * (p + 1) / 2;
        if (lane < ne) {
            u32 c0 = 0, c1 = 0;
            if (lane == 0) {
                c0 = 0; c1 = 0;
            } else if (lane <= p) {
                c0 = lane; c1 = 0;
            } else {
                u32 e = lane - 1 - p, a = 0;
                while (e > a) { e -= a + 1; ++a; }
                c0 = 1 + a; c1 = 1 + e;
            }
            T s = (T)0;
            for (u32 a = 0; a < m; ++a) s += B[a * KR_BSTRIDE + c0] * B[a * KR_BSTRIDE + c1];
            S[lane] = s;
        }
        __syncwarp();
        double f[KR_PMAX];
        kr_drift(x, y, P.drift_scale, p, f);
        double R[KR_PMAX * KR_PMAX], t[KR_PMAX], v[KR_PMAX];
        double vr = cov.var_zero - (double)S[0];
        {
            u32 e = 1 + p;
#pragma unroll
            for (int a = 0; a < KR_PMAX; ++a)
#pragma unroll
                for (int b = 0; b <= a; ++b)
                    if (a < (int)p) R[a * KR_PMAX + b] = (double)S[e++];
        }
        // R = chol(M) (p x p), t = R^-1 r, v = R^-T t = M^-1 r
#pragma unroll
        for (int c = 0; c < KR_PMAX; ++c) {
            if (c < (int)p) {
                const double mcc = R[c * KR_PMAX + c];
                double d = mcc;
#pragma unroll
                for (int b = 0; b < c; ++b) d -= R[c * KR_PMAX + b] * R[c * KR_PMAX + b];
                // The CPU's rule: a drift the neighbours cannot carry (collinear, too few) gives
                // NaN: a pivot under 1e-10 of its diagonal. (An f32 system that still overflows
                // is set to NaN by the wrapper.)
                if (!(d > 1e-10 * fabs(mcc))) ok = false;
                const double l = sqrt(fmax(d, 1e-300));
                R[c * KR_PMAX + c] = l;
#pragma unroll
                for (int a = c + 1; a < KR_PMAX; ++a) {
                    if (a < (int)p) {
                        double s = R[a * KR_PMAX + c];
#pragma unroll
                        for (int b = 0; b < c; ++b) s -= R[a * KR_PMAX + b] * R[c * KR_PMAX + b];
                        R[a * KR_PMAX + c] = s / l;
                    }
                }
            }
        }
#pragma unroll
        for (int a = 0; a < KR_PMAX; ++a) {
            if (a < (int)p) {
                double s = f[a] - (double)S[1 + a];
#pragma unroll
                for (int b = 0; b < a; ++b) s -= R[a * KR_PMAX + b] * t[b];
                t[a] = s / R[a * KR_PMAX + a];
                vr += t[a] * t[a];
            }
        }
#pragma unroll
        for (int a = KR_PMAX - 1; a >= 0; --a) {
            if (a < (int)p) {
                double s = t[a];
#pragma unroll
                for (int b = a + 1; b < KR_PMAX; ++b)
                    if (b < (int)p) s -= R[b * KR_PMAX + a] * v[b];
                v[a] = s / R[a * KR_PMAX + a];
            }
        }
        if (ok) {
            // u = w + G v (column 0), then L^T lambda = u
            for (u32 a = lane; a < m; a += 32) {
                double s = (double)B[a * KR_BSTRIDE];
#pragma unroll
                for (int l = 0; l < KR_PMAX; ++l)
                    if (l < (int)p) s += (double)B[a * KR_BSTRIDE + 1 + l] * v[l];
                B[a * KR_BSTRIDE] = (T)s;
            }
            __syncwarp();
            for (int c = (int)m - 1; c >= 0; --c) {
                const T lam = B[c * KR_BSTRIDE] / A[c * ld + c];
                for (u32 a = lane; a < (u32)c; a += 32) B[a * KR_BSTRIDE] -= A[c * ld + a] * lam;
                if (lane == 0) LAM[c] = lam;
                __syncwarp();
            }
            for (u32 h = lane; h < P.h; h += 32) {
                const double mh = p == 0 ? mean[h] : 0.0;
                T s = (T)0;
                for (u32 a = 0; a < m; ++a) s += LAM[a] * (T)((double)z[(size_t)id[a] * P.h + h] - mh);
                pred[(size_t)h * N + j] = (T)((double)s + mh);
            }
            if (P.want_var && lane == 0) var[j] = (T)fmax(0.0, vr);
        }
    }
    if (!ok) {
        for (u32 h = lane; h < P.h; h += 32) pred[(size_t)h * N + j] = kr_nan<T>();
        if (P.want_var && lane == 0) var[j] = kr_nan<T>();
    }
}
extern "C" __global__ void kriging_local_f32(KrLocalParams P, KrCov cov, const double* __restrict__ sxy,
                                             const float* __restrict__ z, const double* __restrict__ mean,
                                             const long long* __restrict__ nbr, float* __restrict__ pred,
                                             float* __restrict__ var) {
    kr_local<float>(P, cov, sxy, z, mean, nbr, pred, var);
}
extern "C" __global__ void kriging_local_f64(KrLocalParams P, KrCov cov, const double* __restrict__ sxy,
                                             const double* __restrict__ z, const double* __restrict__ mean,
                                             const long long* __restrict__ nbr, double* __restrict__ pred,
                                             double* __restrict__ var) {
    kr_local<double>(P, cov, sxy, z, mean, nbr, pred, var);
}

// ---------------------------------------------------------------------------------------------
// The paper's method (Li & Dong): per node, the (n+1) bordered ordinary-kriging system
// [[C, 1], [1^T, 0]] [lambda; nu] = [k; 1] in a per-thread array, Gaussian elimination without
// pivoting, z* = lambda^T Z. Mode 1: A and B built per node, one surface per launch; mode 2: A
// copied from the host-built matrix (row-major (n+1)^2), one surface per launch; mode 4: mode 2
// solved once per node for all surfaces.
// ---------------------------------------------------------------------------------------------
template <typename T, int NM>
__device__ __forceinline__ void kr_paper(const KrPaperParams& P, const KrCov& cov_p,
                                         const T* __restrict__ sxy, const T* __restrict__ z,
                                         const T* __restrict__ amat, T* __restrict__ out) {
    KR_STAGE_COV(cov_p)
    const u64 j = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= P.n_nodes) return;
    const u32 n = P.n, n1 = n + 1, ld = n1 + 1;
    T A[(NM + 1) * (NM + 2)];
    double xd, yd;
    kr_node(P.grid, j, xd, yd);
    const T x = (T)xd, y = (T)yd;
    for (u32 i = 0; i < n1; ++i) {
        for (u32 c = 0; c < n1; ++c) {
            T v;
            if (P.mode == 1) {
                if (i == n || c == n) {
                    v = (i == n && c == n) ? (T)0 : (T)1;
                } else if (i == c) {
                    v = (T)cov.c_zero;
                } else {
                    const T dx = sxy[2 * i] - sxy[2 * c], dy = sxy[2 * i + 1] - sxy[2 * c + 1];
                    v = KrCovT<T, true>::eval(cov, kr_sqrt_p<true>(dx * dx + dy * dy));
                }
            } else {
                v = amat[i * n1 + c];
            }
            A[i * ld + c] = v;
        }
        if (i < n) {
            const T dx = sxy[2 * i] - x, dy = sxy[2 * i + 1] - y;
            A[i * ld + n1] = KrCovT<T, true>::eval(cov, kr_sqrt_p<true>(dx * dx + dy * dy));
        } else {
            A[i * ld + n1] = (T)1;
        }
    }
    for (u32 c = 0; c < n1; ++c) {
        const T piv = A[c * ld + c];
        for (u32 i = c + 1; i < n1; ++i) {
            const T f = A[i * ld + c] / piv;
            for (u32 b = c + 1; b <= n1; ++b) A[i * ld + b] -= f * A[c * ld + b];
        }
    }
    for (int i = (int)n1 - 1; i >= 0; --i) {
        T s = A[i * ld + n1];
        for (u32 b = i + 1; b < n1; ++b) s -= A[i * ld + b] * A[b * ld + n1];
        A[i * ld + n1] = s / A[i * ld + i];
    }
    const u32 h0 = P.mode == 4 ? 0 : P.surface;
    const u32 h1 = P.mode == 4 ? P.h : P.surface + 1;
    for (u32 h = h0; h < h1; ++h) {
        T s = (T)0;
        for (u32 i = 0; i < n; ++i) s += A[i * ld + n1] * z[(size_t)i * P.h + h];
        out[(size_t)h * P.n_nodes + j] = s;
    }
}
#define KR_PAPER(T, NAME, NM)                                                                    \
    extern "C" __global__ void NAME(KrPaperParams P, KrCov cov, const T* __restrict__ sxy,       \
                                    const T* __restrict__ z, const T* __restrict__ amat,         \
                                    T* __restrict__ out) {                                       \
        kr_paper<T, NM>(P, cov, sxy, z, amat, out);                                              \
    }
KR_PAPER(float, kriging_paper_f32_n16, 16)
KR_PAPER(float, kriging_paper_f32_n64, 64)
KR_PAPER(double, kriging_paper_f64_n16, 16)
KR_PAPER(double, kriging_paper_f64_n64, 64)
