// wind.cu: the mass-consistent wind field (src/wind/ has the wrappers and the cost model).
// The "wind" module is this file (layouts, parameters, reductions, WEST), wind_multigrid.cu
// (the f32 V-cycle) and wind_solve.cu (f64 operator, SOR, CG, assembly), concatenated in that
// order (geofield_cuda::MODULES).
//
// Layouts, all [k][row][col] with col fastest (row 0 north, k = 0 at the bottom):
//   cells    (k*rows + row)*cols + col           n = nz*rows*cols
//   x faces  (k*rows + row)*(cols+1) + i         face i = west edge of column i (positive east)
//   y faces  (k*(rows+1) + r)*cols + col         face r = NORTH edge of row r (positive north)
//   z faces  (k*rows + row)*cols + col, k<=nz    face k = bottom of layer k (positive up)
//
// Kernels (wind.cu):
//   wind_west_{compact,parity}_f32  one colour of the paper's velocity-form sweep (Fig. 2)
//   wind_divmax_f32                 per-block max |div u| over fluid cells, in f64
//   wind_reduce_{max,sum}_f64       partials -> one scalar slot (single block, fixed tree)
// (wind_multigrid.cu):
//   wind_factor_f32                 each column's Thomas pivots, once per level
//   wind_line_rhs_f32, wind_thomas_f32   z-line Gauss-Seidel on one checkerboard colour of
//                                   columns: right-hand sides, then the factored column solves
//   wind_coarsest_f32               every sweep of the coarsest level in one block (Thomas with
//                                   the pivots on the fly)
//   wind_restrict_f32               fused residual + sum of 2x2 children
//   wind_prolong_f32                x_fine += x_parent where diag != 0
//   wind_edge_rows_{f32,f64}        a band's first and last rows (the split solve's halos)
// (wind_solve.cu):
//   wind_op_f64                     A x or b - A x, with a partial dot or max |r/V|
//   wind_sor_f64                    one colour of phi-form red-black SOR (compact mapping)
//   wind_cg_{update,dir}_f64, wind_dot_z_f64, wind_to_f32, wind_add_f64   CG and refinement
//   wind_assemble_f64, wind_coarsen_f64   the problem and its hierarchy built on the device
//
// Reductions are deterministic: kernels that produce partials run a fixed grid (a function of
// n only), each thread accumulates its grid-stride elements in index order, the block reduces
// in a fixed binary tree, and wind_reduce_* combines the partials in a fixed tree too. Maxima
// propagate NaN, so a field that blew up never passes a stop test.

#define WIND_THREADS 256   // 1-D kernels and the reductions' blocks (a power of two)
#define WIND_PARTS 1024    // most partials (blocks of a reducing kernel); the final block size
#define WIND_FLT_MIN 1.17549435e-38f
#define WIND_SLOT_PAP 1u   // scalar slot of p . Ap (CG)

enum WindMode : u32 {
    WIND_OP_APPLY_DOT = 0,  // out = A x, partial sum of x * out
    WIND_OP_RESID_MAX = 1,  // out = b - A x, partial max |out * inv_vol|
    WIND_DIR_NEXT = 0,      // p = z + beta p
    WIND_DIR_RESTART = 1,   // p = z
};

// One parameter block for every kernel; fields a kernel does not use are ignored.
struct WindParams {
    u32 rows, cols, nz, colour;     // level dimensions; active colour of a sweep
    u32 crows, ccols, slot, slot2;  // coarse dimensions (restrict/prolong); scalar slots
    u32 n, mode, sweeps, parts;     // cells; kernel mode; coarsest sweeps; partials to reduce
    float inv_dx_f, omega_f;        // 1/dx and omega for the f32 kernels
    u32 halo, pad1;                 // a band's halo rows: bit 0 north, bit 1 south (WindHalo)
    double inv_dx, omega;           // 1/dx (1/m) and omega for the f64 kernels
};
GF_CHECK_SIZE(WindParams, 80);

__device__ __forceinline__ double wind_max(double a, double b) {
    return (a > b || a != a) ? a : b;
}

// Fixed-order tree reduction over a block of T threads (T a power of two); every thread calls it.
template <bool MAX, u32 T> __device__ __forceinline__ double wind_block_reduce(double v) {
    __shared__ double sh[T];
    sh[threadIdx.x] = v;
    __syncthreads();
#pragma unroll
    for (u32 s = T / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            const double a = sh[threadIdx.x], b = sh[threadIdx.x + s];
            sh[threadIdx.x] = MAX ? wind_max(a, b) : a + b;
        }
        __syncthreads();
    }
    return sh[0];
}

#define WIND_GRID_STRIDE(i, n)                                                                     \
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += gridDim.x * blockDim.x)

// ---------------------------------------------------------------------------------------------
// WEST (paper Fig. 2), velocity form, f32 faces updated in place. Coefficients on the fly from
// u8 transparencies T and per-layer scalars: g = T/dx on x and y faces, T * zscale[k] on z face
// k (zscale = alpha^2 / dz between centres), S = (gW + gE)/dx + (gN + gS)/dx + (gB + gT)/dz_k;
// delta = (omega/S) D with D the cell divergence; uW += gW delta, uE -= gE delta, vS += gS delta,
// vN -= gN delta, wB += gB delta, wT -= gT delta. Cells with S = 0 (solid, or every face closed)
// are skipped. Same arithmetic as geofield's west.rs.
//
// The faces may hold corrections to a first guess u0 whose cell divergence is d0: then
// D = d0 + div(faces), and f32 rounds the corrections (~0.1-1 m/s) instead of the wind (~10 m/s).
// With d0 = 0 and the faces = u0 this is the plain form.
// ---------------------------------------------------------------------------------------------
__device__ __forceinline__ void wind_west_cell(const WindParams& p, u32 k, u32 row, u32 col,
                                               float* __restrict__ u, float* __restrict__ v,
                                               float* __restrict__ w,
                                               const float* __restrict__ d0,
                                               const unsigned char* __restrict__ tu,
                                               const unsigned char* __restrict__ tv,
                                               const unsigned char* __restrict__ tw,
                                               const float* __restrict__ inv_dz,
                                               const float* __restrict__ zscale) {
    const u32 rows = p.rows, cols = p.cols;
    const float idx = p.inv_dx_f;
    const u32 iu = (k * rows + row) * (cols + 1) + col;
    const u32 iv = (k * (rows + 1) + row) * cols + col;
    const u32 ib = (k * rows + row) * cols + col;
    const u32 it = ib + rows * cols;
    const float gW = (float)tu[iu] * idx, gE = (float)tu[iu + 1] * idx;
    const float gN = (float)tv[iv] * idx, gS = (float)tv[iv + cols] * idx;
    const float gB = (float)tw[ib] * zscale[k], gT = (float)tw[it] * zscale[k + 1];
    const float idz = inv_dz[k];
    const float s = (gW + gE) * idx + (gN + gS) * idx + (gB + gT) * idz;
    if (!(s > 0.0f)) return;
    const float uW = u[iu], uE = u[iu + 1], vN = v[iv], vS = v[iv + cols], wB = w[ib], wT = w[it];
    const float d = d0[ib] + ((uE - uW) * idx + (vN - vS) * idx + (wT - wB) * idz);
    const float delta = (p.omega_f / s) * d;
    u[iu] = uW + gW * delta;
    u[iu + 1] = uE - gE * delta;
    v[iv + cols] = vS + gS * delta;
    v[iv] = vN - gN * delta;
    w[ib] = wB + gB * delta;
    w[it] = wT - gT * delta;
}

// COMPACT: thread t of row (row, k) takes col = 2t + ((row + k + colour) & 1) (note §1.4, the
// relocation of idle threads on the contiguous axis). Otherwise one thread per column and a
// parity test (the paper's GPU1). Grid-stride in all three dimensions.
template <bool COMPACT>
__device__ __forceinline__ void wind_west(const WindParams& p, float* u, float* v, float* w,
                                          const float* d0, const unsigned char* tu,
                                          const unsigned char* tv,
                                          const unsigned char* tw, const float* inv_dz,
                                          const float* zscale) {
    const u32 span = COMPACT ? (p.cols + 1) / 2 : p.cols;
    for (u32 k = blockIdx.z; k < p.nz; k += gridDim.z)
        for (u32 row = blockIdx.y * blockDim.y + threadIdx.y; row < p.rows;
             row += gridDim.y * blockDim.y)
            for (u32 t = blockIdx.x * blockDim.x + threadIdx.x; t < span;
                 t += gridDim.x * blockDim.x) {
                u32 col;
                if (COMPACT) {
                    col = 2 * t + ((row + k + p.colour) & 1u);
                    if (col >= p.cols) continue;
                } else {
                    col = t;
                    if (((col + row + k) & 1u) != p.colour) continue;
                }
                wind_west_cell(p, k, row, col, u, v, w, d0, tu, tv, tw, inv_dz, zscale);
            }
}

#define WIND_WEST_KERNEL(NAME, COMPACT)                                                            \
    GF_KERNEL_IF(NAME)(extern "C" __global__ void __launch_bounds__(WIND_THREADS)                   \
        NAME(const WindParams p, float* u, float* v, float* w, const float* d0,                    \
             const unsigned char* tu, const unsigned char* tv, const unsigned char* tw,            \
             const float* inv_dz, const float* zscale) {                                           \
        wind_west<COMPACT>(p, u, v, w, d0, tu, tv, tw, inv_dz, zscale);                            \
    })
WIND_WEST_KERNEL(wind_west_compact_f32, true)
WIND_WEST_KERNEL(wind_west_parity_f32, false)

// Per-block max |D| over fluid cells (k >= ground_k of the column), D = d0 + the divergence of
// the f32 faces in f64, as the CPU's ops::divergence: (uE - uW)/dx + (vN - vS)/dx + (wT - wB)/dz_k.
#if GF_WANTED(wind_divmax_f32)
extern "C" __global__ void __launch_bounds__(WIND_THREADS)
    wind_divmax_f32(const WindParams p, const float* __restrict__ u, const float* __restrict__ v,
                    const float* __restrict__ w, const double* __restrict__ d0,
                    const u32* __restrict__ ground_k,
                    const double* __restrict__ inv_dz, double* __restrict__ partial) {
    const u32 plane = p.rows * p.cols;
    double m = 0.0;
    WIND_GRID_STRIDE(i, p.n) {
        const u32 k = i / plane, rc = i - k * plane;
        if (k < ground_k[rc]) continue;
        const u32 row = rc / p.cols, col = rc - row * p.cols;
        const u32 iu = (k * p.rows + row) * (p.cols + 1) + col;
        const u32 iv = (k * (p.rows + 1) + row) * p.cols + col;
        const double d = d0[i] + (((double)u[iu + 1] - (double)u[iu]) * p.inv_dx +
                                  ((double)v[iv] - (double)v[iv + p.cols]) * p.inv_dx +
                                  ((double)w[i + plane] - (double)w[i]) * inv_dz[k]);
        m = wind_max(m, fabs(d));
    }
    m = wind_block_reduce<true, WIND_THREADS>(m);
    if (threadIdx.x == 0) partial[blockIdx.x] = m;
}
#endif

// scal[slot] = max (or sum) of partial[0 .. parts), one block of WIND_PARTS threads.
#if GF_WANTED(wind_reduce_max_f64)
extern "C" __global__ void __launch_bounds__(WIND_PARTS)
    wind_reduce_max_f64(const WindParams p, const double* __restrict__ partial, double* scal) {
    const double v = threadIdx.x < p.parts ? partial[threadIdx.x] : 0.0;
    const double m = wind_block_reduce<true, WIND_PARTS>(v);
    if (threadIdx.x == 0) scal[p.slot] = m;
}
#endif
#if GF_WANTED(wind_reduce_sum_f64)
extern "C" __global__ void __launch_bounds__(WIND_PARTS)
    wind_reduce_sum_f64(const WindParams p, const double* __restrict__ partial, double* scal) {
    const double v = threadIdx.x < p.parts ? partial[threadIdx.x] : 0.0;
    const double s = wind_block_reduce<false, WIND_PARTS>(v);
    if (threadIdx.x == 0) scal[p.slot] = s;
}
#endif
