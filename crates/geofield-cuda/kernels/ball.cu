// ball.cu: radius queries on a cell list built by the host (geofield::neighbors::ball): rows
// counted and written (CSR), pair counts at several radii, Ripley's K sums.
//
// One thread per query visits the cells of [q - r - slack, q + r + slack] per axis (wrapped on
// periodic axes) in the CPU's order (axis 0 fastest), and tests every stored point there with
// the CPU's arithmetic: per axis d = |p - q| (L - d beyond L/2 on a periodic axis), combined as
// sum d^2 (Euclidean), sum d (Manhattan) or max d (Chebyshev), every operation rounded to
// nearest without contraction (gf_*_rn), compared <= the threshold. So the rows, their order
// and every count equal the CPU's bit for bit. Sums of weights are 128-bit fixed point
// (gf_add_i128), independent of the order the threads add in. Ripley's isotropic weight uses
// the device's acos, whose last bit may differ from the host's: that estimate alone is equal to
// a few ulps rather than bit for bit.

struct BallKernelParams {
    double period[3];
    double origin[3];
    double width[3];
    double r;      // the visited radius
    double thr;    // the threshold of the combined value
    double scale;  // 2^F of the fixed-point weights
    double win[4]; // Ripley: the window x0, y0, x1, y1
    u32 dims[3];
    u32 n_queries;
    u32 metric;    // 0 Euclidean, 1 Manhattan, 2 Chebyshev
    u32 keep;      // 0 every point, 1 not the query's own index, 2 only indices above it
    u32 n_bins;
    u32 weighted;  // bins: 1 weighted sums, | 2 with w1, | 4 with w2 (else weights of 1)
    u32 mode;      // rows: 0 count, 1 write
    u32 flags;     // Ripley: 1 translate, 2 isotropic
};
GF_CHECK_SIZE(BallKernelParams, 168);

template <int D>
__device__ __forceinline__ double ball_value(const BallKernelParams& p, const double* q,
                                             const double* x) {
    double v = 0.0;
#pragma unroll
    for (int a = 0; a < D; ++a) {
        double d = fabs(gf_sub_rn(x[a], q[a]));
        if (p.period[a] > 0.0 && d > 0.5 * p.period[a]) d = gf_sub_rn(p.period[a], d);
        if (p.metric == 0) {
            v = gf_add_rn(v, gf_mul_rn(d, d));
        } else if (p.metric == 1) {
            v = gf_add_rn(v, d);
        } else {
            v = fmax(v, d);
        }
    }
    return v;
}

__device__ __forceinline__ long long ball_cell(const BallKernelParams& p, int a, double x) {
    return (long long)floor(gf_div_rn(gf_sub_rn(x, p.origin[a]), p.width[a]));
}

// The cells to visit along axis a: first (unwrapped) and count, as the CPU's axis_range.
__device__ __forceinline__ void ball_range(const BallKernelParams& p, int a, double q, double r,
                                           long long* first, long long* count) {
    const double eps = 2.220446049250313e-16, tiny = 2.2250738585072014e-308;
    const double slack =
        gf_add_rn(gf_mul_rn(8.0 * eps, gf_add_rn(gf_add_rn(fabs(q), r), fabs(p.origin[a]))), tiny);
    const long long lo = ball_cell(p, a, gf_sub_rn(gf_sub_rn(q, r), slack));
    const long long hi = ball_cell(p, a, gf_add_rn(gf_add_rn(q, r), slack));
    const long long n = (long long)p.dims[a];
    if (p.period[a] > 0.0) {
        // hi - lo + 1 >= n, saturating as the CPU's.
        const bool all = (lo < 0 && hi > 9223372036854775807LL + lo) || hi - lo >= n - 1;
        if (all) {
            *first = 0;
            *count = n;
        } else {
            *first = lo;
            *count = hi - lo + 1;
        }
    } else {
        const long long l = lo < 0 ? 0 : (lo > n - 1 ? n - 1 : lo);
        const long long h = hi < 0 ? 0 : (hi > n - 1 ? n - 1 : hi);
        *first = l;
        *count = h - l + 1;
    }
}

// Calls f(stored position s) for every stored point in the cells within r of the query, in the
// CPU's order: each row of cells along axis 0 is contiguous in storage, one span (two where it
// wraps).
template <int D, typename F>
__device__ __forceinline__ void ball_visit_r(const BallKernelParams& p, const double* q, double r,
                                             const u32* __restrict__ starts, F f) {
    long long first[3] = {0, 0, 0}, count[3] = {1, 1, 1};
#pragma unroll
    for (int a = 0; a < D; ++a) ball_range(p, a, q[a], r, &first[a], &count[a]);
    const long long n0 = (long long)p.dims[0];
    long long f0 = first[0] % n0;
    if (f0 < 0) f0 += n0;
    const long long e0 = f0 + count[0];
    const long long a0 = f0, b0 = e0 <= n0 ? e0 : n0, a1 = 0, b1 = e0 <= n0 ? 0 : e0 - n0;
    for (long long s2 = 0; s2 < (D == 3 ? count[2] : 1); ++s2) {
        long long c2 = 0;
        if (D == 3) {
            c2 = (first[2] + s2) % (long long)p.dims[2];
            if (c2 < 0) c2 += p.dims[2];
        }
        for (long long s1 = 0; s1 < count[1]; ++s1) {
            long long c1 = (first[1] + s1) % (long long)p.dims[1];
            if (c1 < 0) c1 += p.dims[1];
            const unsigned long long row =
                ((unsigned long long)c2 * p.dims[1] + (unsigned long long)c1) * p.dims[0];
            if (a0 < b0) {
                const u32 s = starts[row + a0], e = starts[row + b0];
                for (u32 k = s; k < e; ++k) f(k);
            }
            if (a1 < b1) {
                const u32 s = starts[row + a1], e = starts[row + b1];
                for (u32 k = s; k < e; ++k) f(k);
            }
        }
    }
}

// ball_visit_r at the kernel's radius p.r.
template <int D, typename F>
__device__ __forceinline__ void ball_visit(const BallKernelParams& p, const double* q,
                                           const u32* __restrict__ starts, F f) {
    ball_visit_r<D>(p, q, p.r, starts, f);
}

// Rows: mode 0 writes each query's count to counts[qi]; mode 1 writes its neighbours' indices
// and distances from offsets[qi] on.
template <int D>
__device__ void ball_rows(const BallKernelParams p, const double* __restrict__ pts,
                          const u32* __restrict__ ids, const u32* __restrict__ starts,
                          const double* __restrict__ qs, u32* __restrict__ counts,
                          const unsigned long long* __restrict__ offsets,
                          u32* __restrict__ out_idx, double* __restrict__ out_d) {
    const u32 qi = blockIdx.x * blockDim.x + threadIdx.x;
    if (qi >= p.n_queries) return;
    double q[D];
#pragma unroll
    for (int a = 0; a < D; ++a) q[a] = qs[(size_t)qi * D + a];
    unsigned long long at = p.mode == 1 ? offsets[qi] : 0;
    u32 c = 0;
    ball_visit<D>(p, q, starts, [&](u32 s) {
        const u32 j = ids[s];
        if ((p.keep == 1 && j == qi) || (p.keep == 2 && j <= qi)) return;
        const double v = ball_value<D>(p, q, pts + (size_t)s * D);
        if (!(v <= p.thr)) return;
        if (p.mode == 1) {
            out_idx[at] = j;
            out_d[at] = p.metric == 0 ? __dsqrt_rn(v) : v;
            ++at;
        } else {
            ++c;
        }
    });
    if (p.mode == 0) counts[qi] = c;
}

#if GF_WANTED(ball_rows_2)
extern "C" __global__ void ball_rows_2(const BallKernelParams p, const double* pts, const u32* ids,
                                       const u32* starts, const double* qs, u32* counts,
                                       const unsigned long long* offsets, u32* out_idx,
                                       double* out_d) {
    ball_rows<2>(p, pts, ids, starts, qs, counts, offsets, out_idx, out_d);
}
#endif
#if GF_WANTED(ball_rows_3)
extern "C" __global__ void ball_rows_3(const BallKernelParams p, const double* pts, const u32* ids,
                                       const u32* starts, const double* qs, u32* counts,
                                       const unsigned long long* offsets, u32* out_idx,
                                       double* out_d) {
    ball_rows<3>(p, pts, ids, starts, qs, counts, offsets, out_idx, out_d);
}
#endif

// ---- k nearest in any space (geofield's neighbors::ball::knn_in) ---------------------------
// Each query has its own reach: reach[2 qi] = r (the visited radius; < 0: the query is left
// alone), reach[2 qi + 1] = the threshold of the combined value. The candidates are the points
// within it, keyed (bits of the value, index) as the CPU's; mode 0 counts them into
// counts[qi]; mode 1 writes every candidate (index, raw value) from offsets[qi] on; mode 2
// keeps the k <= BALL_K_MAX smallest keys in registers and writes row qi of out_idx / out_v
// (k entries, ascending; missing: index 0xFFFFFFFF, value NaN).
#define BALL_K_MAX 64

struct BallBest {
    unsigned long long d[BALL_K_MAX];
    u32 id[BALL_K_MAX];
    int len;
    int k;
    __device__ __forceinline__ void push(unsigned long long dk, u32 i) {
        int pos;
        if (len == k) {
            const unsigned long long wd = d[k - 1];
            if (!(dk < wd || (dk == wd && i < id[k - 1]))) return;
            pos = k - 1;
        } else {
            pos = len++;
        }
        while (pos > 0) {
            const unsigned long long pd = d[pos - 1];
            const u32 pi = id[pos - 1];
            if (dk < pd || (dk == pd && i < pi)) {
                d[pos] = pd;
                id[pos] = pi;
                --pos;
            } else {
                break;
            }
        }
        d[pos] = dk;
        id[pos] = i;
    }
};

template <int D>
__device__ void ball_knn(const BallKernelParams p, const double* __restrict__ pts,
                         const u32* __restrict__ ids, const u32* __restrict__ starts,
                         const double* __restrict__ qs, const double* __restrict__ reach, u32 k,
                         u32* __restrict__ counts, const unsigned long long* __restrict__ offsets,
                         u32* __restrict__ out_idx, double* __restrict__ out_v) {
    const u32 qi = blockIdx.x * blockDim.x + threadIdx.x;
    if (qi >= p.n_queries) return;
    const double r = reach[2 * (size_t)qi], thr = reach[2 * (size_t)qi + 1];
    double q[D];
#pragma unroll
    for (int a = 0; a < D; ++a) q[a] = qs[(size_t)qi * D + a];
    if (p.mode == 2) {
        BallBest best;
        best.len = 0;
        best.k = (int)k;
        if (r >= 0.0) {
            ball_visit_r<D>(p, q, r, starts, [&](u32 s) {
                const u32 j = ids[s];
                if (p.keep == 1 && j == qi) return;
                const double v = ball_value<D>(p, q, pts + (size_t)s * D);
                if (v <= thr) best.push((unsigned long long)__double_as_longlong(v), j);
            });
        }
        const size_t base = (size_t)qi * k;
        for (int t = 0; t < (int)k; ++t) {
            const bool has = t < best.len;
            out_idx[base + t] = has ? best.id[t] : 0xFFFFFFFFu;
            out_v[base + t] =
                has ? __longlong_as_double((long long)best.d[t]) : __longlong_as_double(0x7ff8000000000000LL);
        }
        return;
    }
    unsigned long long at = p.mode == 1 ? offsets[qi] : 0;
    u32 c = 0;
    if (r >= 0.0) {
        ball_visit_r<D>(p, q, r, starts, [&](u32 s) {
            const u32 j = ids[s];
            if (p.keep == 1 && j == qi) return;
            const double v = ball_value<D>(p, q, pts + (size_t)s * D);
            if (!(v <= thr)) return;
            if (p.mode == 1) {
                out_idx[at] = j;
                out_v[at] = v;
                ++at;
            } else {
                ++c;
            }
        });
    }
    if (p.mode == 0) counts[qi] = c;
}

#if GF_WANTED(ball_knn_2)
extern "C" __global__ void __launch_bounds__(128, 4)
ball_knn_2(const BallKernelParams p, const double* pts, const u32* ids, const u32* starts,
           const double* qs, const double* reach, u32 k, u32* counts,
           const unsigned long long* offsets, u32* out_idx, double* out_v) {
    ball_knn<2>(p, pts, ids, starts, qs, reach, k, counts, offsets, out_idx, out_v);
}
#endif
#if GF_WANTED(ball_knn_3)
extern "C" __global__ void __launch_bounds__(128, 4)
ball_knn_3(const BallKernelParams p, const double* pts, const u32* ids, const u32* starts,
           const double* qs, const double* reach, u32 k, u32* counts,
           const unsigned long long* offsets, u32* out_idx, double* out_v) {
    ball_knn<3>(p, pts, ids, starts, qs, reach, k, counts, offsets, out_idx, out_v);
}
#endif

// The first of the n sorted thresholds t >= v (n when none).
__device__ __forceinline__ u32 ball_bin(const double* t, u32 n, double v) {
    u32 lo = 0, hi = n;
    while (lo < hi) {
        const u32 mid = (lo + hi) >> 1;
        if (t[mid] < v) lo = mid + 1; else hi = mid;
    }
    return lo;
}

// Bins of the shared-memory histograms (larger ones go straight to global memory).
#define BALL_SHARED_BINS 1024

// Pair counts per bin: bins[k] (u64) or, weighted, the 128-bit sums of rint(w1*w2*scale) at
// bins[2k], bins[2k + 1]. Each block adds into shared memory, then once into the global sums.
template <int D>
__device__ void ball_bins(const BallKernelParams p, const double* __restrict__ pts,
                          const u32* __restrict__ ids, const u32* __restrict__ starts,
                          const double* __restrict__ qs, const double* __restrict__ thr,
                          const double* __restrict__ w1, const double* __restrict__ w2,
                          unsigned long long* __restrict__ bins) {
    extern __shared__ unsigned long long ball_sh[];
    const u32 words = (p.weighted & 1) ? 2 * p.n_bins : p.n_bins;
    const bool shared = p.n_bins <= BALL_SHARED_BINS;
    unsigned long long* acc = shared ? ball_sh : bins;
    if (shared) {
        for (u32 k = threadIdx.x; k < words; k += blockDim.x) ball_sh[k] = 0;
        __syncthreads();
    }
    const u32 qi = blockIdx.x * blockDim.x + threadIdx.x;
    if (qi < p.n_queries) {
        double q[D];
#pragma unroll
        for (int a = 0; a < D; ++a) q[a] = qs[(size_t)qi * D + a];
        const double wq = (p.weighted & 2) ? w1[qi] : 1.0;
        ball_visit<D>(p, q, starts, [&](u32 s) {
            const double v = ball_value<D>(p, q, pts + (size_t)s * D);
            if (!(v <= p.thr)) return;
            const u32 k = ball_bin(thr, p.n_bins, v);
            if (k >= p.n_bins) return;
            if (p.weighted & 1) {
                const double wj = (p.weighted & 4) ? w2[ids[s]] : 1.0;
                gf_add_i128(&acc[2 * k], rint(gf_mul_rn(gf_mul_rn(wq, wj), p.scale)));
            } else {
                atomicAdd(&acc[k], 1ull);
            }
        });
    }
    if (shared) {
        __syncthreads();
        if (p.weighted & 1) {
            for (u32 k = threadIdx.x; k < p.n_bins; k += blockDim.x) {
                const unsigned long long l = ball_sh[2 * k], h = ball_sh[2 * k + 1];
                if (l == 0 && h == 0) continue;
                const unsigned long long old = atomicAdd(&bins[2 * k], l);
                atomicAdd(&bins[2 * k + 1], h + ((old + l < old) ? 1ull : 0ull));
            }
        } else {
            for (u32 k = threadIdx.x; k < p.n_bins; k += blockDim.x) {
                if (ball_sh[k]) atomicAdd(&bins[k], ball_sh[k]);
            }
        }
    }
}

#if GF_WANTED(ball_bins_2)
extern "C" __global__ void ball_bins_2(const BallKernelParams p, const double* pts, const u32* ids,
                                       const u32* starts, const double* qs, const double* thr,
                                       const double* w1, const double* w2,
                                       unsigned long long* bins) {
    ball_bins<2>(p, pts, ids, starts, qs, thr, w1, w2, bins);
}
#endif
#if GF_WANTED(ball_bins_3)
extern "C" __global__ void ball_bins_3(const BallKernelParams p, const double* pts, const u32* ids,
                                       const u32* starts, const double* qs, const double* thr,
                                       const double* w1, const double* w2,
                                       unsigned long long* bins) {
    ball_bins<3>(p, pts, ids, starts, qs, thr, w1, w2, bins);
}
#endif

// Ripley's K sums over ordered pairs (the points are the queries), per radius bin (radii
// thresholds r*r, non-decreasing, n_bins of them): counts (u64), the border correction's
// difference array (n_bins + 1, two's complement), and the translate and isotropic weights'
// 128-bit fixed-point sums. Layout of `out`: counts | border | trans (2 words a bin) | iso.
// The weights are geofield::neighbors::ripley's, capped at 100.
__device__ __forceinline__ double ball_translate(const BallKernelParams& p, double dx, double dy) {
    const double w = gf_sub_rn(p.win[2], p.win[0]), h = gf_sub_rn(p.win[3], p.win[1]);
    const double inside = gf_mul_rn(gf_sub_rn(w, fabs(dx)), gf_sub_rn(h, fabs(dy)));
    if (inside > 0.0) return fmin(gf_div_rn(gf_mul_rn(w, h), inside), 100.0);
    return 100.0;
}

__device__ __forceinline__ double ball_isotropic(const BallKernelParams& p, double x, double y,
                                                 double d) {
    if (d <= 0.0) return 1.0;
    const double half_pi = 1.5707963267948966, two_pi = 6.283185307179586;
    const double e[4] = {gf_sub_rn(p.win[2], x), gf_sub_rn(p.win[3], y), gf_sub_rn(x, p.win[0]),
                         gf_sub_rn(y, p.win[1])};
    double al[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) al[k] = e[k] < d ? acos(gf_div_rn(fmax(e[k], 0.0), d)) : 0.0;
    double outside = gf_mul_rn(2.0, gf_add_rn(gf_add_rn(gf_add_rn(al[0], al[1]), al[2]), al[3]));
#pragma unroll
    for (int k = 0; k < 4; ++k)
        outside = gf_sub_rn(outside, fmax(gf_sub_rn(gf_add_rn(al[k], al[(k + 1) % 4]), half_pi), 0.0));
    const double frac = gf_sub_rn(1.0, gf_div_rn(outside, two_pi));
    if (frac > 0.0) return fmin(gf_div_rn(1.0, frac), 100.0);
    return 100.0;
}

#if GF_WANTED(ball_ripley)
extern "C" __global__ void ball_ripley(const BallKernelParams p, const double* __restrict__ pts,
                                       const u32* __restrict__ ids,
                                       const u32* __restrict__ starts,
                                       const double* __restrict__ qs,
                                       const double* __restrict__ thr,
                                       const double* __restrict__ radii,
                                       unsigned long long* __restrict__ out) {
    extern __shared__ unsigned long long ball_sh[];
    const u32 nb = p.n_bins;
    const u32 words = nb + (nb + 1) + 4 * nb;
    const bool shared = nb <= BALL_SHARED_BINS / 2;
    unsigned long long* acc = shared ? ball_sh : out;
    if (shared) {
        for (u32 k = threadIdx.x; k < words; k += blockDim.x) ball_sh[k] = 0;
        __syncthreads();
    }
    unsigned long long* cnt = acc;
    unsigned long long* bord = acc + nb;
    unsigned long long* tr = acc + 2 * nb + 1;
    unsigned long long* is = acc + 4 * nb + 1;
    const u32 qi = blockIdx.x * blockDim.x + threadIdx.x;
    if (qi < p.n_queries) {
        const double q[2] = {qs[2 * (size_t)qi], qs[2 * (size_t)qi + 1]};
        const double b = fmin(fmin(gf_sub_rn(q[0], p.win[0]), gf_sub_rn(p.win[2], q[0])),
                              fmin(gf_sub_rn(q[1], p.win[1]), gf_sub_rn(p.win[3], q[1])));
        // deep: the radii r <= b (partition point).
        u32 lo = 0, hi = nb;
        while (lo < hi) {
            const u32 mid = (lo + hi) >> 1;
            if (radii[mid] <= b) lo = mid + 1; else hi = mid;
        }
        const u32 deep = lo;
        ball_visit<2>(p, q, starts, [&](u32 s) {
            if (ids[s] == qi) return;
            const double* x = pts + (size_t)s * 2;
            const double v = ball_value<2>(p, q, x);
            if (!(v <= p.thr)) return;
            const u32 m = ball_bin(thr, nb, v);
            atomicAdd(&cnt[m], 1ull);
            if (m < deep) {
                atomicAdd(&bord[m], 1ull);
                atomicAdd(&bord[deep], ~0ull);  // -1
            }
            if (p.flags & 1)
                gf_add_i128(&tr[2 * m], rint(gf_mul_rn(ball_translate(p, gf_sub_rn(x[0], q[0]),
                                                                      gf_sub_rn(x[1], q[1])),
                                                       p.scale)));
            if (p.flags & 2)
                gf_add_i128(&is[2 * m],
                            rint(gf_mul_rn(ball_isotropic(p, q[0], q[1], __dsqrt_rn(v)), p.scale)));
        });
    }
    if (shared) {
        __syncthreads();
        for (u32 k = threadIdx.x; k < 2 * nb + 1; k += blockDim.x)
            if (ball_sh[k]) atomicAdd(&out[k], ball_sh[k]);
        for (u32 k = threadIdx.x; k < 2 * nb; k += blockDim.x) {
            const u32 base = 2 * nb + 1 + 2 * k;  // trans bins, then iso bins
            const unsigned long long l = ball_sh[base], h = ball_sh[base + 1];
            if (l == 0 && h == 0) continue;
            const unsigned long long old = atomicAdd(&out[base], l);
            atomicAdd(&out[base + 1], h + ((old + l < old) ? 1ull : 0ull));
        }
    }
}
#endif
