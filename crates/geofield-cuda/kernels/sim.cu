// sim.cu: unconditional Gaussian fields on a grid by the randomisation method (geofield's
// kriging::simulate::spectral, whose CPU code is the oracle): for each realisation, the row
// table A[row][j] = amp_j e^{i k_j . node(row, 0)} and the column table B[j][col] =
// e^{i col (k_j . col_step)} (sim_tables), then Z[row][col] = sum_j Re(A[row][j] B[j][col])
// as a tiled complex matrix product (sim_field). Every operation is rounded to nearest without
// contraction (gf_*_rn) and sim_sincos is the CPU's own reduction and polynomials, so each
// value equals the CPU's bit for bit.

struct SimKernelParams {
    double origin[2];
    double col_step[2];
    double row_step[2];
    u32 rows;
    u32 cols;
    u32 modes;  // M: modes per realisation (all structures)
    u32 reals;  // realisations in this launch
};
GF_CHECK_SIZE(SimKernelParams, 64);

// (sin t, cos t): t = n pi/2 + r, Cody-Waite with three parts of pi/2, Taylor to r^15 / r^16.
__device__ __forceinline__ void sim_sincos(double t, double* s_out, double* c_out) {
    const double pio2_1 = __longlong_as_double(0x3FF921FB54400000LL);
    const double pio2_2 = __longlong_as_double(0x3DD0B4611A600000LL);
    const double pio2_3 = __longlong_as_double(0x3BA3198A2E037073LL);
    const double n = round(gf_mul_rn(t, 0.6366197723675814));
    const double quadrant = gf_sub_rn(n, gf_mul_rn(4.0, floor(gf_mul_rn(n, 0.25))));
    double r = gf_sub_rn(gf_sub_rn(gf_sub_rn(t, gf_mul_rn(n, pio2_1)), gf_mul_rn(n, pio2_2)),
                         gf_mul_rn(n, pio2_3));
    r = fmin(fmax(r, -0.8), 0.8);
    const double r2 = gf_mul_rn(r, r);
    double s = -7.647163731819816e-13;
    s = gf_add_rn(1.6059043836821613e-10, gf_mul_rn(r2, s));
    s = gf_add_rn(-2.505210838544172e-08, gf_mul_rn(r2, s));
    s = gf_add_rn(2.7557319223985893e-06, gf_mul_rn(r2, s));
    s = gf_add_rn(-0.0001984126984126984, gf_mul_rn(r2, s));
    s = gf_add_rn(0.008333333333333333, gf_mul_rn(r2, s));
    s = gf_add_rn(-0.16666666666666666, gf_mul_rn(r2, s));
    const double sin_r = gf_add_rn(r, gf_mul_rn(gf_mul_rn(r, r2), s));
    double c = 4.779477332387385e-14;
    c = gf_add_rn(-1.1470745597729725e-11, gf_mul_rn(r2, c));
    c = gf_add_rn(2.08767569878681e-09, gf_mul_rn(r2, c));
    c = gf_add_rn(-2.755731922398589e-07, gf_mul_rn(r2, c));
    c = gf_add_rn(2.48015873015873e-05, gf_mul_rn(r2, c));
    c = gf_add_rn(-0.001388888888888889, gf_mul_rn(r2, c));
    c = gf_add_rn(0.041666666666666664, gf_mul_rn(r2, c));
    c = gf_add_rn(-0.5, gf_mul_rn(r2, c));
    const double cos_r = gf_add_rn(1.0, gf_mul_rn(r2, c));
    if (quadrant == 0.0) {
        *s_out = sin_r;
        *c_out = cos_r;
    } else if (quadrant == 1.0) {
        *s_out = cos_r;
        *c_out = -sin_r;
    } else if (quadrant == 2.0) {
        *s_out = -sin_r;
        *c_out = -cos_r;
    } else {
        *s_out = -cos_r;
        *c_out = sin_r;
    }
}

#if GF_WANTED(sim_tables)
// One thread per table entry of each realisation: first rows x M entries of A (double2: re,
// im), then M x cols entries of B (double2: cos, sin). modes: reals x M x (kx, ky, sa, sb).
extern "C" __global__ void sim_tables(const SimKernelParams p, const double* __restrict__ modes,
                                      double2* __restrict__ a, double2* __restrict__ b) {
    const u64 na = (u64)p.rows * p.modes;
    const u64 nb = (u64)p.modes * p.cols;
    const u64 per = na + nb;
    const u64 total = per * p.reals;
    for (u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x; t < total;
         t += (u64)gridDim.x * blockDim.x) {
        const u64 real = t / per;
        const u64 e = t - real * per;
        if (e < na) {
            const u64 row = e / p.modes;
            const u64 j = e - row * p.modes;
            const double* m = modes + (real * p.modes + j) * 4;
            // node(row, 0), as NodeGrid::node: (origin + 0 * col_step) + row * row_step.
            const double rr = (double)row;
            const double x0 = gf_add_rn(gf_add_rn(p.origin[0], gf_mul_rn(0.0, p.col_step[0])),
                                        gf_mul_rn(rr, p.row_step[0]));
            const double y0 = gf_add_rn(gf_add_rn(p.origin[1], gf_mul_rn(0.0, p.col_step[1])),
                                        gf_mul_rn(rr, p.row_step[1]));
            double s, c;
            sim_sincos(gf_add_rn(gf_mul_rn(m[0], x0), gf_mul_rn(m[1], y0)), &s, &c);
            a[real * na + e] = make_double2(gf_add_rn(gf_mul_rn(m[2], c), gf_mul_rn(m[3], s)),
                                            gf_sub_rn(gf_mul_rn(m[2], s), gf_mul_rn(m[3], c)));
        } else {
            const u64 f = e - na;
            const u64 j = f / p.cols;
            const u64 col = f - j * p.cols;
            const double* m = modes + (real * p.modes + j) * 4;
            const double psi =
                gf_add_rn(gf_mul_rn(m[0], p.col_step[0]), gf_mul_rn(m[1], p.col_step[1]));
            double s, c;
            sim_sincos(gf_mul_rn((double)col, psi), &s, &c);
            b[real * nb + f] = make_double2(c, s);
        }
    }
}
#endif

#define SIM_TILE 64
#define SIM_KC 16

#if GF_WANTED(sim_field)
// Z of one 64 x 64 tile of realisation blockIdx.z: 16 x 16 threads, 4 x 4 nodes each (rows
// ty + 16 i, cols tx + 16 k), the modes in chunks of 16 through shared memory, each node's sum
// over j ascending: z = z + (A.re B.cos - A.im B.sin), the CPU's order.
extern "C" __global__ void __launch_bounds__(256, 2)
    sim_field(const SimKernelParams p, const double2* __restrict__ a,
              const double2* __restrict__ b, double* __restrict__ z) {
    __shared__ double2 sa[SIM_TILE][SIM_KC + 1];
    __shared__ double2 sb[SIM_KC][SIM_TILE];
    const u32 tx = threadIdx.x, ty = threadIdx.y;
    const u32 tid = ty * 16 + tx;
    const u32 row0 = blockIdx.y * SIM_TILE, col0 = blockIdx.x * SIM_TILE;
    const u64 real = blockIdx.z;
    const double2* A = a + real * (u64)p.rows * p.modes;
    const double2* B = b + real * (u64)p.modes * p.cols;
    double acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int k = 0; k < 4; ++k) acc[i][k] = 0.0;
    for (u32 j0 = 0; j0 < p.modes; j0 += SIM_KC) {
        const u32 kc = min((u32)SIM_KC, p.modes - j0);
        // 64 x 16 entries of A and 16 x 64 of B, 4 per thread.
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            const u32 e = tid + 256 * q;
            const u32 r = e / SIM_KC, jj = e % SIM_KC;
            sa[r][jj] = (row0 + r < p.rows && jj < kc)
                            ? A[(u64)(row0 + r) * p.modes + j0 + jj]
                            : make_double2(0.0, 0.0);
            const u32 jb = e / SIM_TILE, cc = e % SIM_TILE;
            sb[jb][cc] = (col0 + cc < p.cols && jb < kc) ? B[(u64)(j0 + jb) * p.cols + col0 + cc]
                                                          : make_double2(0.0, 0.0);
        }
        __syncthreads();
        for (u32 jj = 0; jj < kc; ++jj) {
            double2 bv[4];
#pragma unroll
            for (int k = 0; k < 4; ++k) bv[k] = sb[jj][tx + 16 * k];
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const double2 av = sa[ty + 16 * i][jj];
#pragma unroll
                for (int k = 0; k < 4; ++k)
                    acc[i][k] = gf_add_rn(acc[i][k], gf_sub_rn(gf_mul_rn(av.x, bv[k].x),
                                                               gf_mul_rn(av.y, bv[k].y)));
            }
        }
        __syncthreads();
    }
    double* Z = z + real * (u64)p.rows * p.cols;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const u32 r = row0 + ty + 16 * i;
        if (r >= p.rows) continue;
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const u32 c = col0 + tx + 16 * k;
            if (c < p.cols) Z[(u64)r * p.cols + c] = acc[i][k];
        }
    }
}
#endif
