// kriging.cu: evaluation kernels of geofield's kriging (the host solves everything in f64).
// The "kriging" module is this file followed by kriging_global.cu and kriging_local.cu,
// concatenated (geofield_cuda::MODULES).
//
// Coordinates are in "kriging space" (centred, anisotropy already applied by the host). Kernels:
//   kriging_dual_<prec>_<model>_h<HT>   dual predictions z*(x) = sum_i C(|x - x_i|) alpha_ih + f(x)^T beta_h
//   kriging_var_k_<T>                   a tile of covariance vectors k(x_j) (input of the GEMM)
//   kriging_var_reduce_<T>              sigma^2 from W = [Linv; G^T Linv] K (output of the GEMM)
//   kriging_nodes                       f64 node coordinates of a tile (queries of the k-NN search)
//   kriging_local_<T>                   local kriging, one warp per node, system in shared memory
//   kriging_paper_<T>_n<NM>             the paper's per-node bordered system, Gauss without pivoting
//
// Node grid: x = (ox + col*cx) + r*rx, y = (oy + col*cy) + r*ry in f64, r = row0 + row, rounded
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
    u32 row0, pad;   // grid row of row 0 (a window of a larger grid places its nodes exactly)
};
GF_CHECK_SIZE(KrGrid, 64);

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
GF_CHECK_SIZE(KrDualParams, 128);

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
GF_CHECK_SIZE(KrVarParams, 384);

struct KrNodesParams {
    KrGrid grid;
    u64 j0;
    u32 m;
    u32 pad0;
};
GF_CHECK_SIZE(KrNodesParams, 80);

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
GF_CHECK_SIZE(KrLocalParams, 120);

struct KrPaperParams {
    KrGrid grid;
    u64 n_nodes;
    u32 n;         // samples (<= NM)
    u32 h;         // surfaces
    u32 mode;      // 1: A and B per node, one surface; 2: A from the host, one surface; 4: all surfaces
    u32 surface;   // modes 1, 2
};
GF_CHECK_SIZE(KrPaperParams, 88);

// ---------------------------------------------------------------------------------------------
// Nodes and drift.
// ---------------------------------------------------------------------------------------------
__device__ __forceinline__ void kr_node(const KrGrid& g, u64 j, double& x, double& y) {
    const u64 row = j / g.cols;
    const u64 col = j - row * g.cols;
    const double c = (double)col, r = (double)(row + g.row0);
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

// Local kriging's support arguments (see kr_node_drift): block points, and with fstride > 0 the
// host's drift terms of the samples (sdrift, n x fstride) and of the nodes (fnode).
struct KrSupportArgs {
    const double* boff;
    const double* sdrift;
    const double* fnode;
    u32 nb;
    u32 fstride;
};
GF_CHECK_SIZE(KrSupportArgs, 32);

// The prediction's support (kriging/space.rs `Support`): nb > 0 block points boff[3b..3b+3] =
// (dx, dy, w) in kriging space (nb = 0: a point); fstride > 0: the drift terms of node j are the
// host's fnode[j * fstride + l] (block means, external drift), else kr_drift at the node.
__device__ __forceinline__ void kr_node_drift(double x, double y, double s, u32 p,
                                              const double* __restrict__ fnode, u32 fstride, u64 j,
                                              double* f) {
    if (fstride == 0) {
        kr_drift(x, y, s, p, f);
        return;
    }
#pragma unroll
    for (int l = 0; l < KR_PMAX; ++l) f[l] = l < (int)p ? fnode[j * fstride + l] : 0.0;
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
