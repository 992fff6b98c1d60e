#line 2 "kriging_local.cu"
// Local kriging and the paper's per-node systems. Part of the "kriging" module: kriging.cu,
// kriging_global.cu and kriging_local.cu are concatenated in that order (geofield_cuda::MODULES).

// ---------------------------------------------------------------------------------------------
// Local kriging.
// ---------------------------------------------------------------------------------------------
#if GF_WANTED(kriging_nodes)
extern "C" __global__ void kriging_nodes(KrNodesParams P, double* __restrict__ q) {
    const u64 jl = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (jl >= P.m) return;
    double x, y;
    kr_node(P.grid, P.j0 + jl, x, y);
    q[2 * jl] = x;
    q[2 * jl + 1] = y;
}
#endif

template <typename T> __device__ __forceinline__ T kr_nan();
template <> __device__ __forceinline__ float kr_nan<float>() { return __int_as_float(0x7fffffff); }
template <> __device__ __forceinline__ double kr_nan<double>() {
    return __longlong_as_double(0x7ff8000000000000LL);
}

// |a|^2 of a D-vector (D = 2: dx dx + dy dy, as the 2-D kernel always wrote it).
template <int D> __device__ __forceinline__ double kr_norm2(const double* a);
template <> __device__ __forceinline__ double kr_norm2<2>(const double* a) {
    return a[0] * a[0] + a[1] * a[1];
}
template <> __device__ __forceinline__ double kr_norm2<3>(const double* a) {
    return a[0] * a[0] + a[1] * a[1] + a[2] * a[2];
}

// The 3-D drift (1, u, v, w) on kriging-space q / s (kriging/volume/solve.rs `Space::drift`).
__device__ __forceinline__ void kr_drift3(const double* q, double s, double* f) {
#pragma unroll
    for (int l = 0; l < KR_PMAX; ++l) f[l] = 0.0;
    f[0] = 1.0;
    f[1] = q[0] / s;
    f[2] = q[1] / s;
    f[3] = q[2] / s;
}

// One warp per node. Shared memory per warp (T elements, ld = k + 1): A (k x ld, lower), B
// (k x KR_BSTRIDE: column 0 = k then w then u, columns 1..p = F then G), LAM (k), S (32
// small sums), then k ints of neighbour indices in a separate region after all warps' T data.
// D = 2: the samples are (x, y), the nodes those of P.grid (qpts null), the drift polynomial,
// the host's or a block's (sup). D = 3: the samples are (x, y, z) in kriging space, node jl of
// the tile is qpts[3 jl ..], the drift (1, u, v, w) (p <= 4), points only (sup.nb = 0).
template <typename T, int D>
__device__ __forceinline__ void kr_local(const KrLocalParams& P, const KrCov& cov_p,
                                         const double* __restrict__ sxy, const T* __restrict__ z,
                                         const double* __restrict__ mean,
                                         const long long* __restrict__ nbr, T* __restrict__ pred,
                                         T* __restrict__ var, const KrSupportArgs& sup,
                                         const double* __restrict__ qpts) {
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
    double xq[D];
    if (D == 2 && qpts == nullptr) {
        kr_node(P.grid, j, xq[0], xq[1]);
    } else {
#pragma unroll
        for (int c = 0; c < D; ++c) xq[c] = qpts[(u64)D * jl + c];
    }
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
                double d[D];
#pragma unroll
                for (int e = 0; e < D; ++e) d[e] = sxy[D * ia + e] - sxy[D * ib + e];
                c = KrCovT<T, false>::eval(cov, (T)sqrt(kr_norm2<D>(d)));
            }
            A[a * ld + b] = c;
        }
        for (u32 a = lane; a < m; a += 32) {
            const int ia = id[a];
            double d[D];
#pragma unroll
            for (int e = 0; e < D; ++e) d[e] = sxy[D * ia + e] - xq[e];
            if (D == 3 || sup.nb == 0) {
                B[a * KR_BSTRIDE] = KrCovT<T, false>::eval(cov, (T)sqrt(kr_norm2<D>(d)));
            } else {
                // a block: the weighted mean of C(|x_i - (x + d_b)|) over its points
                double c = 0.0;
                for (u32 b = 0; b < sup.nb; ++b) {
                    const double ex = d[0] - sup.boff[3 * b], ey = d[1] - sup.boff[3 * b + 1];
                    c += sup.boff[3 * b + 2] * (double)KrCovT<T, false>::eval(cov, (T)sqrt(ex * ex + ey * ey));
                }
                B[a * KR_BSTRIDE] = (T)c;
            }
            double f[KR_PMAX];
            // the samples' drift: the host's (external drift) or the polynomial one
            if (D == 3)
                kr_drift3(&sxy[D * ia], P.drift_scale, f);
            else
                kr_node_drift(sxy[D * ia], sxy[D * ia + 1], P.drift_scale, p, sup.sdrift, sup.fstride,
                              (u64)ia, f);
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
        if (D == 3)
            kr_drift3(xq, P.drift_scale, f);
        else
            kr_node_drift(xq[0], xq[1], P.drift_scale, p, sup.fnode, sup.fstride, j, f);
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
#if GF_WANTED(kriging_local_f32)
extern "C" __global__ void kriging_local_f32(KrLocalParams P, KrCov cov, const double* __restrict__ sxy,
                                             const float* __restrict__ z, const double* __restrict__ mean,
                                             const long long* __restrict__ nbr, float* __restrict__ pred,
                                             float* __restrict__ var, KrSupportArgs sup) {
    kr_local<float, 2>(P, cov, sxy, z, mean, nbr, pred, var, sup, nullptr);
}
#endif
#if GF_WANTED(kriging_local_f64)
extern "C" __global__ void kriging_local_f64(KrLocalParams P, KrCov cov, const double* __restrict__ sxy,
                                             const double* __restrict__ z, const double* __restrict__ mean,
                                             const long long* __restrict__ nbr, double* __restrict__ pred,
                                             double* __restrict__ var, KrSupportArgs sup) {
    kr_local<double, 2>(P, cov, sxy, z, mean, nbr, pred, var, sup, nullptr);
}
#endif
// 3-D local kriging (f64): node jl of the tile at qpts[3 jl ..] in kriging space.
#if GF_WANTED(kriging_local3_f64)
extern "C" __global__ void kriging_local3_f64(KrLocalParams P, KrCov cov, const double* __restrict__ sxyz,
                                              const double* __restrict__ z, const double* __restrict__ mean,
                                              const long long* __restrict__ nbr, double* __restrict__ pred,
                                              double* __restrict__ var, KrSupportArgs sup,
                                              const double* __restrict__ qpts) {
    kr_local<double, 3>(P, cov, sxyz, z, mean, nbr, pred, var, sup, qpts);
}
#endif

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
    GF_KERNEL_IF(NAME)(extern "C" __global__ void NAME(KrPaperParams P, KrCov cov, const T* __restrict__ sxy, \
                                    const T* __restrict__ z, const T* __restrict__ amat,         \
                                    T* __restrict__ out) {                                       \
        kr_paper<T, NM>(P, cov, sxy, z, amat, out);                                              \
    })
KR_PAPER(float, kriging_paper_f32_n16, 16)
KR_PAPER(float, kriging_paper_f32_n64, 64)
KR_PAPER(double, kriging_paper_f64_n16, 16)
KR_PAPER(double, kriging_paper_f64_n64, 64)
