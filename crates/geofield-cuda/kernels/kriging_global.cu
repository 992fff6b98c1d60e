#line 2 "kriging_global.cu"
// Dual predictions and the global variance. Part of the "kriging" module: kriging.cu,
// kriging_global.cu and kriging_local.cu are concatenated in that order (geofield_cuda::MODULES).

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
    GF_KERNEL_IF(NAME)(extern "C" __global__ void __launch_bounds__(KR_THREADS, 1) NAME(            \
        KrDualParams P, KrCov cov, const T* __restrict__ sxy, const T* __restrict__ alpha,      \
        const double* __restrict__ beta, T* __restrict__ out) {                                  \
        kr_dual<T, MODEL, HT, KR_NPT(HT), FAST>(P, cov, sxy, alpha, beta, out);                  \
    })
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
// A block (nb > 0 points boff = (dx, dy, w)): K is the weighted mean of C(|x_i - (x_j + d_b)|).
template <typename T>
__device__ __forceinline__ void kr_var_k(const KrVarParams& P, const KrCov& cov_p,
                                         const T* __restrict__ sxy, T* __restrict__ K,
                                         const double* __restrict__ boff, u32 nb) {
    KR_STAGE_COV(cov_p)
    const u64 jl = blockIdx.x;
    if (jl >= P.m) return;
    double xd, yd;
    kr_node(P.grid, P.j0 + jl, xd, yd);
    const T x = (T)xd, y = (T)yd;
    for (u32 i = threadIdx.x; i < P.n; i += blockDim.x) {
        const T dx = sxy[2 * (size_t)i] - x, dy = sxy[2 * (size_t)i + 1] - y;
        T c;
        if (nb == 0) {
            c = KrCovT<T, true>::eval(cov, kr_sqrt_p<true>(dx * dx + dy * dy));
        } else {
            double s = 0.0;
            for (u32 b = 0; b < nb; ++b) {
                const T ex = dx - (T)boff[3 * b], ey = dy - (T)boff[3 * b + 1];
                s += boff[3 * b + 2] * (double)KrCovT<T, true>::eval(cov, kr_sqrt_p<true>(ex * ex + ey * ey));
            }
            c = (T)s;
        }
        K[jl * P.n + i] = c;
    }
}
#if GF_WANTED(kriging_var_k_f32)
extern "C" __global__ void kriging_var_k_f32(KrVarParams P, KrCov cov, const float* __restrict__ sxy,
                                             float* __restrict__ K, const double* __restrict__ boff,
                                             u32 nb) {
    kr_var_k<float>(P, cov, sxy, K, boff, nb);
}
#endif
#if GF_WANTED(kriging_var_k_f64)
extern "C" __global__ void kriging_var_k_f64(KrVarParams P, KrCov cov, const double* __restrict__ sxy,
                                             double* __restrict__ K, const double* __restrict__ boff,
                                             u32 nb) {
    kr_var_k<double>(P, cov, sxy, K, boff, nb);
}
#endif

__device__ __forceinline__ double kr_warp_sum(double v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, o);
    return v;
}

template <typename T>
__device__ __forceinline__ void kr_var_reduce(const KrVarParams& P, const KrCov& cov,
                                              const T* __restrict__ W, T* __restrict__ out,
                                              const double* __restrict__ fnode, u32 fstride) {
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
    kr_node_drift(xd, yd, P.drift_scale, P.p, fnode, fstride, P.j0 + jl, f);
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
#if GF_WANTED(kriging_var_reduce_f32)
extern "C" __global__ void kriging_var_reduce_f32(KrVarParams P, KrCov cov, const float* __restrict__ W,
                                                  float* __restrict__ out,
                                                  const double* __restrict__ fnode, u32 fstride) {
    kr_var_reduce<float>(P, cov, W, out, fnode, fstride);
}
#endif
#if GF_WANTED(kriging_var_reduce_f64)
extern "C" __global__ void kriging_var_reduce_f64(KrVarParams P, KrCov cov, const double* __restrict__ W,
                                                  double* __restrict__ out,
                                                  const double* __restrict__ fnode, u32 fstride) {
    kr_var_reduce<double>(P, cov, W, out, fnode, fstride);
}
#endif

// ---------------------------------------------------------------------------------------------
// Global variance without cuBLAS: W = A K and the reduction in one kernel. A = [L^-1; G^T L^-1]
// ((n+p) x n, column-major a[r + c*ldw]); rows r < n are lower triangular, so a row tile
// [r0, r0+128) only needs columns c < r0+128 (about half the flops of a dense GEMM). A block owns
// 64 nodes of the K tile (K[jl*n + i], the kriging_var_k output) and walks every row tile; a
// thread computes 8 rows x 4 nodes (rows ty + 16 i, nodes tx + 16 j: broadcast or conflict-free
// shared reads, 12 loads per 32 FMAs), each dot product summed in T over the columns, then |w|^2
// summed in f64 in a fixed order (the result does not depend on scheduling). The p drift rows are
// kept for the reduction: sigma^2 = var_zero - |w|^2 + |Rinv (f(x) - G^T w)|^2, clamped at 0
// (as kriging_var_reduce).
// ---------------------------------------------------------------------------------------------
#define KR_VF_R 128     // rows of A per tile
#define KR_VF_N 64      // nodes per block
#define KR_VF_K 16      // columns per shared-memory step
#define KR_VF_THREADS 256

template <typename T>
__device__ __forceinline__ void kr_var_fused(const KrVarParams& P, const KrCov& cov,
                                             const T* __restrict__ A, const T* __restrict__ K,
                                             T* __restrict__ out, const double* __restrict__ fnode,
                                             u32 fstride) {
    __shared__ T sA[KR_VF_K][KR_VF_R];
    __shared__ T sK[KR_VF_K][KR_VF_N + 1];  // +1: the transposing stores hit distinct banks
    __shared__ double sS[16][KR_VF_N];
    __shared__ double sU[KR_PMAX][KR_VF_N];
    const u32 tid = threadIdx.x, tx = tid & 15u, ty = tid >> 4;
    const u32 n = P.n, p = P.p, rows = n + p, ldw = P.ldw;
    const u64 jb = (u64)blockIdx.x * KR_VF_N;  // first node of this block within the tile
    // Loading: A by consecutive rows (a warp reads 128 contiguous bytes of a column), K by
    // consecutive columns of a node; the next step's values are fetched into registers while
    // the current step computes.
    const u32 a_row = tid & 127u, a_col = tid >> 7;  // columns a_col + 2q, q < 8
    const u32 k_col = tid & 15u, k_node = tid >> 4;  // nodes k_node + 16q, q < 4
    double s[4] = {0.0, 0.0, 0.0, 0.0};
    for (u32 r0 = 0; r0 < rows; r0 += KR_VF_R) {
        const u32 cend = min(n, r0 + KR_VF_R);  // triangular: later columns are 0 in these rows
        T acc[8][4];
#pragma unroll
        for (int i = 0; i < 8; ++i)
#pragma unroll
            for (int j = 0; j < 4; ++j) acc[i][j] = (T)0;
        T ra[8], rk[4];
        auto fetch = [&](u32 c0) {
            const u32 r = r0 + a_row;
#pragma unroll
            for (int q = 0; q < 8; ++q) {
                const u32 c = c0 + a_col + 2 * q;
                ra[q] = (c < cend && r < rows) ? A[(size_t)c * ldw + r] : (T)0;
            }
            const u32 c = c0 + k_col;
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const u64 jl = jb + k_node + 16 * q;
                rk[q] = (jl < P.m && c < cend) ? K[jl * n + c] : (T)0;
            }
        };
        fetch(0);
        for (u32 c0 = 0; c0 < cend; c0 += KR_VF_K) {
            __syncthreads();
#pragma unroll
            for (int q = 0; q < 8; ++q) sA[a_col + 2 * q][a_row] = ra[q];
#pragma unroll
            for (int q = 0; q < 4; ++q) sK[k_col][k_node + 16 * q] = rk[q];
            __syncthreads();
            if (c0 + KR_VF_K < cend) fetch(c0 + KR_VF_K);
#pragma unroll
            for (int kk = 0; kk < KR_VF_K; ++kk) {
                T a[8], b[4];
#pragma unroll
                for (int i = 0; i < 8; ++i) a[i] = sA[kk][ty + 16 * i];
#pragma unroll
                for (int j = 0; j < 4; ++j) b[j] = sK[kk][tx + 16 * j];
#pragma unroll
                for (int i = 0; i < 8; ++i)
#pragma unroll
                    for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * b[j];
            }
        }
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            const u32 r = r0 + ty + 16 * i;
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const double w = (double)acc[i][j];
                if (r < n) {
                    s[j] += w * w;
                } else if (r < rows) {
                    sU[r - n][tx + 16 * j] = w;
                }
            }
        }
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) sS[ty][tx + 16 * j] = s[j];
    __syncthreads();
    if (tid < KR_VF_N) {
        const u64 jl = jb + tid;
        if (jl < P.m) {
            double ss = 0.0;
            for (int q = 0; q < 16; ++q) ss += sS[q][tid];
            double xd, yd;
            kr_node(P.grid, P.j0 + jl, xd, yd);
            double f[KR_PMAX], rr[KR_PMAX];
            kr_node_drift(xd, yd, P.drift_scale, P.p, fnode, fstride, P.j0 + jl, f);
#pragma unroll
            for (int l = 0; l < KR_PMAX; ++l) rr[l] = l < (int)p ? f[l] - sU[l][tid] : 0.0;
            double t2 = 0.0;
#pragma unroll
            for (int a = 0; a < KR_PMAX; ++a) {
                if (a < (int)p) {
                    double t = 0.0;
#pragma unroll
                    for (int b = 0; b <= a; ++b) t += P.rinv[a * p + b] * rr[b];
                    t2 += t * t;
                }
            }
            out[P.j0 + jl] = (T)fmax(0.0, cov.var_zero - ss + t2);
        }
    }
}
#if GF_WANTED(kriging_var_fused_f32)
extern "C" __global__ void __launch_bounds__(KR_VF_THREADS)
    kriging_var_fused_f32(KrVarParams P, KrCov cov, const float* __restrict__ A,
                          const float* __restrict__ K, float* __restrict__ out,
                          const double* __restrict__ fnode, u32 fstride) {
    kr_var_fused<float>(P, cov, A, K, out, fnode, fstride);
}
#endif
#if GF_WANTED(kriging_var_fused_f64)
extern "C" __global__ void __launch_bounds__(KR_VF_THREADS)
    kriging_var_fused_f64(KrVarParams P, KrCov cov, const double* __restrict__ A,
                          const double* __restrict__ K, double* __restrict__ out,
                          const double* __restrict__ fnode, u32 fstride) {
    kr_var_fused<double>(P, cov, A, K, out, fnode, fstride);
}
#endif
