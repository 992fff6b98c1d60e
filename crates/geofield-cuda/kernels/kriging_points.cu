#line 2 "kriging_points.cu"
// Evaluations at nodes the host lists, in 2 or 3 dimensions (3-D kriging, cokriging). Part of the
// "kriging" module (after kriging_local.cu). The host gives kriging-space coordinates of the
// samples and of a tile of nodes, and per sample which covariance applies (cokriging: C_{0v} of the
// sample's variable v; one covariance otherwise). The prediction's covariance part is K^T alpha;
// the variance runs kriging_var_fused on the same K tile with the host's drift terms.
#define KR_PTS_MAXCOV 4

struct KrPtsParams {
    u64 j0;    // first node of the tile (index into out)
    u32 m;     // nodes in the tile
    u32 n;     // samples
    u32 dim;   // 2 or 3
    u32 ncov;  // covariances, 1..KR_PTS_MAXCOV
};
GF_CHECK_SIZE(KrPtsParams, 24);

// K[jl*n + i] = C_{cid[i]}(|s_i - q_jl|), f64: one block per node of the tile, threads over the
// samples.
#if GF_WANTED(kriging_pts_k_f64)
extern "C" __global__ void kriging_pts_k_f64(KrPtsParams P, const KrCov* __restrict__ covs,
                                             const u32* __restrict__ cid,
                                             const double* __restrict__ s,
                                             const double* __restrict__ q,
                                             double* __restrict__ K) {
    __shared__ KrCov s_cov[KR_PTS_MAXCOV];
    for (u32 c = threadIdx.x; c < P.ncov; c += blockDim.x) s_cov[c] = covs[c];
    __syncthreads();
    const u64 jl = blockIdx.x;
    if (jl >= P.m) return;
    const u32 d = P.dim;
    const double qx = q[jl * d], qy = q[jl * d + 1], qz = d == 3 ? q[jl * d + 2] : 0.0;
    for (u32 i = threadIdx.x; i < P.n; i += blockDim.x) {
        const double dx = s[(size_t)i * d] - qx, dy = s[(size_t)i * d + 1] - qy;
        const double dz = d == 3 ? s[(size_t)i * d + 2] - qz : 0.0;
        K[jl * P.n + i] = kr_cov(s_cov[cid[i]], sqrt(dx * dx + dy * dy + dz * dz));
    }
}
#endif

// out[j0 + jl] = sum_i K[jl*n + i] alpha[i]: one warp per node.
#if GF_WANTED(kriging_pts_dot_f64)
extern "C" __global__ void kriging_pts_dot_f64(KrPtsParams P, const double* __restrict__ K,
                                               const double* __restrict__ alpha,
                                               double* __restrict__ out) {
    const u32 lane = threadIdx.x & 31u;
    const u64 jl = (u64)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (jl >= P.m) return;
    double s = 0.0;
    for (u32 i = lane; i < P.n; i += 32) s += K[jl * P.n + i] * alpha[i];
    s = kr_warp_sum(s);
    if (lane == 0) out[P.j0 + jl] = s;
}
#endif
