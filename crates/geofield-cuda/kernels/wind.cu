// wind.cu: the mass-consistent wind field (src/wind/ has the wrappers and the cost model).
//
// Layouts, all [k][row][col] with col fastest (row 0 north, k = 0 at the bottom):
//   cells    (k*rows + row)*cols + col           n = nz*rows*cols
//   x faces  (k*rows + row)*(cols+1) + i         face i = west edge of column i (positive east)
//   y faces  (k*(rows+1) + r)*cols + col         face r = NORTH edge of row r (positive north)
//   z faces  (k*rows + row)*cols + col, k<=nz    face k = bottom of layer k (positive up)
//
// Kernels:
//   wind_west_{compact,parity}_f32  one colour of the paper's velocity-form sweep (Fig. 2)
//   wind_divmax_f32                 per-block max |div u| over fluid cells, in f64
//   wind_reduce_{max,sum}_f64       partials -> one scalar slot (single block, fixed tree)
//   wind_factor_f32                 each column's Thomas pivots, once per level
//   wind_line_rhs_f32, wind_thomas_f32   z-line Gauss-Seidel on one checkerboard colour of
//                                   columns: right-hand sides, then the factored column solves
//   wind_coarsest_f32               every sweep of the coarsest level in one block (Thomas with
//                                   the pivots on the fly)
//   wind_restrict_f32               fused residual + sum of 2x2 children
//   wind_prolong_f32                x_fine += x_parent where diag != 0
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
    u32 pad0, pad1;
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
    extern "C" __global__ void __launch_bounds__(WIND_THREADS)                                     \
        NAME(const WindParams p, float* u, float* v, float* w, const float* d0,                    \
             const unsigned char* tu, const unsigned char* tv, const unsigned char* tw,            \
             const float* inv_dz, const float* zscale) {                                           \
        wind_west<COMPACT>(p, u, v, w, d0, tu, tv, tw, inv_dz, zscale);                            \
    }
WIND_WEST_KERNEL(wind_west_compact_f32, true)
WIND_WEST_KERNEL(wind_west_parity_f32, false)

// Per-block max |D| over fluid cells (k >= ground_k of the column), D = d0 + the divergence of
// the f32 faces in f64, as the CPU's ops::divergence: (uE - uW)/dx + (vN - vS)/dx + (wT - wB)/dz_k.
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

// scal[slot] = max (or sum) of partial[0 .. parts), one block of WIND_PARTS threads.
extern "C" __global__ void __launch_bounds__(WIND_PARTS)
    wind_reduce_max_f64(const WindParams p, const double* __restrict__ partial, double* scal) {
    const double v = threadIdx.x < p.parts ? partial[threadIdx.x] : 0.0;
    const double m = wind_block_reduce<true, WIND_PARTS>(v);
    if (threadIdx.x == 0) scal[p.slot] = m;
}
extern "C" __global__ void __launch_bounds__(WIND_PARTS)
    wind_reduce_sum_f64(const WindParams p, const double* __restrict__ partial, double* scal) {
    const double v = threadIdx.x < p.parts ? partial[threadIdx.x] : 0.0;
    const double s = wind_block_reduce<false, WIND_PARTS>(v);
    if (threadIdx.x == 0) scal[p.slot] = s;
}

// ---------------------------------------------------------------------------------------------
// Multigrid on the volume-weighted operator A'x = diag x - sum_f K_f x_nb (geofield's level.rs),
// f32. Horizontal neighbours are summed W, E, N, S, as the CPU does.
// ---------------------------------------------------------------------------------------------
template <typename T>
__device__ __forceinline__ T wind_horizontal(const WindParams& p, u32 i, u32 k, u32 row, u32 col,
                                             const T* kx, const T* ky, const T* x) {
    const u32 rows = p.rows, cols = p.cols;
    const u32 ix = (k * rows + row) * (cols + 1) + col;
    const u32 iy = (k * (rows + 1) + row) * cols + col;
    T h = 0;
    if (col > 0) h += kx[ix] * x[i - 1];
    if (col + 1 < cols) h += kx[ix + 1] * x[i + 1];
    if (row > 0) h += ky[iy] * x[i - cols];
    if (row + 1 < rows) h += ky[iy + cols] * x[i + cols];
    return h;
}

// (A'x)_i, the CPU's order: diag x - horizontal, - kzB x_below, - kzT x_above.
template <typename T>
__device__ __forceinline__ T wind_apply(const WindParams& p, u32 i, u32 k, u32 row, u32 col,
                                        const T* kx, const T* ky, const T* kz, const T* diag,
                                        const T* x) {
    const u32 plane = p.rows * p.cols;
    T s = diag[i] * x[i] - wind_horizontal(p, i, k, row, col, kx, ky, x);
    if (k > 0) s -= kz[i] * x[i - plane];
    if (k + 1 < p.nz) s -= kz[i + plane] * x[i + plane];
    return s;
}

// Solves column (row, col) exactly with its horizontal neighbours fixed (Thomas; cp holds the
// eliminated super-diagonal). Singular pivots (solid cells) give x = 0, as on the CPU.
__device__ __forceinline__ void wind_line(const WindParams& p, u32 row, u32 col,
                                          const float* kx, const float* ky, const float* kz,
                                          const float* diag, float* x, const float* b,
                                          float* cp) {
    const u32 plane = p.rows * p.cols, c0 = row * p.cols + col;
    float prev_c = 0.0f, prev_x = 0.0f;
    for (u32 k = 0; k < p.nz; ++k) {
        const u32 i = k * plane + c0;
        const float rhs = b[i] + wind_horizontal(p, i, k, row, col, kx, ky, x);
        const float a = k > 0 ? -kz[i] : 0.0f;
        const float c = k + 1 < p.nz ? -kz[i + plane] : 0.0f;
        const float piv = diag[i] - a * prev_c;
        if (fabsf(piv) <= WIND_FLT_MIN) {
            cp[i] = 0.0f;
            x[i] = 0.0f;
            prev_c = 0.0f;
            prev_x = 0.0f;
            continue;
        }
        prev_c = c / piv;
        prev_x = (rhs - a * prev_x) / piv;
        cp[i] = prev_c;
        x[i] = prev_x;
    }
    float next = prev_x;
    for (u32 k = p.nz - 1; k-- > 0;) {
        const u32 i = k * plane + c0;
        next = x[i] - cp[i] * next;
        x[i] = next;
    }
}

// The z-line solve's constant part, once per level: the Thomas pivots of each column's
// tridiagonal (diag, -kz) as ip = 1/pivot and cpf = super-diagonal / pivot. Singular pivots
// (solid cells) give ip = cpf = 0, so those cells solve to x = 0, as on the CPU.
extern "C" __global__ void __launch_bounds__(WIND_THREADS)
    wind_factor_f32(const WindParams p, const float* __restrict__ kz,
                    const float* __restrict__ diag, float* __restrict__ ip,
                    float* __restrict__ cpf) {
    const u32 plane = p.rows * p.cols;
    WIND_GRID_STRIDE(c0, plane) {
        float prev_c = 0.0f;
        for (u32 k = 0; k < p.nz; ++k) {
            const u32 i = k * plane + c0;
            const float a = k > 0 ? -kz[i] : 0.0f;
            const float c = k + 1 < p.nz ? -kz[i + plane] : 0.0f;
            const float piv = diag[i] - a * prev_c;
            if (fabsf(piv) <= WIND_FLT_MIN) {
                ip[i] = 0.0f;
                cpf[i] = 0.0f;
                prev_c = 0.0f;
                continue;
            }
            prev_c = c / piv;
            ip[i] = 1.0f / piv;
            cpf[i] = prev_c;
        }
    }
}

// One colour of z-line relaxation, step 1: g = b + sum_h K x_nb on the colour's columns (every
// cell in parallel; the neighbours are the other colour).
extern "C" __global__ void __launch_bounds__(WIND_THREADS)
    wind_line_rhs_f32(const WindParams p, const float* __restrict__ kx,
                      const float* __restrict__ ky, const float* __restrict__ x,
                      const float* __restrict__ b, float* __restrict__ g) {
    const u32 span = (p.cols + 1) / 2, m = p.rows * span;
    WIND_GRID_STRIDE(t, p.nz * m) {
        const u32 k = t / m, rt = t - k * m;
        const u32 row = rt / span, col = 2 * (rt - row * span) + ((row + p.colour) & 1u);
        if (col >= p.cols) continue;
        const u32 i = (k * p.rows + row) * p.cols + col;
        g[i] = b[i] + wind_horizontal(p, i, k, row, col, kx, ky, x);
    }
}

#define WIND_CHUNK 8

// Step 2: each column of the colour solved with the level's factors: forward
// y_k = (g_k + kz_k y_{k-1}) ip_k, backward x_k = y_k - cpf_k x_{k+1}. The loads of WIND_CHUNK
// layers are issued together, so a column waits for memory once per chunk, not once per layer.
extern "C" __global__ void __launch_bounds__(WIND_THREADS)
    wind_thomas_f32(const WindParams p, const float* __restrict__ kz,
                    const float* __restrict__ ip, const float* __restrict__ cpf,
                    const float* __restrict__ g, float* __restrict__ x) {
    const u32 span = (p.cols + 1) / 2, plane = p.rows * p.cols;
    for (u32 row = blockIdx.y * blockDim.y + threadIdx.y; row < p.rows;
         row += gridDim.y * blockDim.y)
        for (u32 t = blockIdx.x * blockDim.x + threadIdx.x; t < span;
             t += gridDim.x * blockDim.x) {
            const u32 col = 2 * t + ((row + p.colour) & 1u);
            if (col >= p.cols) continue;
            const u32 c0 = row * p.cols + col;
            float y = 0.0f;
            for (u32 k0 = 0; k0 < p.nz; k0 += WIND_CHUNK) {
                float gv[WIND_CHUNK], kv[WIND_CHUNK], iv[WIND_CHUNK];
#pragma unroll
                for (u32 j = 0; j < WIND_CHUNK; ++j) {
                    const u32 k = k0 + j, i = k * plane + c0;
                    const bool in = k < p.nz;
                    gv[j] = in ? g[i] : 0.0f;
                    kv[j] = in && k > 0 ? kz[i] : 0.0f;
                    iv[j] = in ? ip[i] : 0.0f;
                }
#pragma unroll
                for (u32 j = 0; j < WIND_CHUNK; ++j) {
                    y = (gv[j] + kv[j] * y) * iv[j];
                    if (k0 + j < p.nz) x[(k0 + j) * plane + c0] = y;
                }
            }
            float nx = 0.0f;
            for (u32 top = p.nz; top > 0;) {
                const u32 lo = top > WIND_CHUNK ? top - WIND_CHUNK : 0;
                float yv[WIND_CHUNK], cv[WIND_CHUNK];
#pragma unroll
                for (u32 j = 0; j < WIND_CHUNK; ++j) {
                    const bool in = top >= j + 1 && top - 1 - j >= lo;
                    const u32 i = (top - 1 - j) * plane + c0;
                    yv[j] = in ? x[i] : 0.0f;
                    cv[j] = in ? cpf[i] : 0.0f;
                }
#pragma unroll
                for (u32 j = 0; j < WIND_CHUNK; ++j) {
                    if (top >= j + 1 && top - 1 - j >= lo) {
                        nx = yv[j] - cv[j] * nx;
                        x[(top - 1 - j) * plane + c0] = nx;
                    }
                }
                top = lo;
            }
        }
}

// p.sweeps sweeps (colour 0 then 1) of the coarsest level in one block.
extern "C" __global__ void __launch_bounds__(WIND_THREADS)
    wind_coarsest_f32(const WindParams p, const float* kx, const float* ky, const float* kz,
                      const float* diag, float* x, const float* b, float* cp) {
    const u32 span = (p.cols + 1) / 2, m = p.rows * span;
    for (u32 s = 0; s < p.sweeps; ++s)
        for (u32 colour = 0; colour < 2; ++colour) {
            for (u32 j = threadIdx.x; j < m; j += blockDim.x) {
                const u32 row = j / span, col = 2 * (j - row * span) + ((row + colour) & 1u);
                if (col < p.cols) wind_line(p, row, col, kx, ky, kz, diag, x, b, cp);
            }
            __syncthreads();
        }
}

// cb = sum over the 2x2 children (row-major) of the fine residual b - A'x.
extern "C" __global__ void __launch_bounds__(WIND_THREADS)
    wind_restrict_f32(const WindParams p, const float* __restrict__ kx,
                      const float* __restrict__ ky, const float* __restrict__ kz,
                      const float* __restrict__ diag, const float* __restrict__ x,
                      const float* __restrict__ b, float* __restrict__ cb) {
    const u32 cplane = p.crows * p.ccols;
    WIND_GRID_STRIDE(ci, p.n) {
        const u32 k = ci / cplane, rc = ci - k * cplane;
        const u32 jr = rc / p.ccols, ic = rc - jr * p.ccols;
        float s = 0.0f;
        for (u32 row = 2 * jr; row < 2 * jr + 2 && row < p.rows; ++row)
            for (u32 col = 2 * ic; col < 2 * ic + 2 && col < p.cols; ++col) {
                const u32 i = (k * p.rows + row) * p.cols + col;
                s += b[i] - wind_apply(p, i, k, row, col, kx, ky, kz, diag, x);
            }
        cb[ci] = s;
    }
}

// x += x_coarse of the parent column (piecewise constant) on cells with diag != 0.
extern "C" __global__ void __launch_bounds__(WIND_THREADS)
    wind_prolong_f32(const WindParams p, const float* __restrict__ diag,
                     const float* __restrict__ xc, float* __restrict__ x) {
    const u32 plane = p.rows * p.cols;
    WIND_GRID_STRIDE(i, p.n) {
        if (diag[i] == 0.0f) continue;
        const u32 k = i / plane, rc = i - k * plane;
        const u32 row = rc / p.cols, col = rc - row * p.cols;
        x[i] += xc[(k * p.crows + row / 2) * p.ccols + col / 2];
    }
}

// ---------------------------------------------------------------------------------------------
// f64 finest level: operator, SOR, CG and iterative refinement.
// ---------------------------------------------------------------------------------------------

// WIND_OP_APPLY_DOT: out = A'x, partial sum of x * out. WIND_OP_RESID_MAX: out = b - A'x,
// partial max |out * inv_vol| (the divergence, s^-1).
extern "C" __global__ void __launch_bounds__(WIND_THREADS)
    wind_op_f64(const WindParams p, const double* __restrict__ kx, const double* __restrict__ ky,
                const double* __restrict__ kz, const double* __restrict__ diag,
                const double* __restrict__ x, const double* __restrict__ b,
                const double* __restrict__ inv_vol, double* __restrict__ out,
                double* __restrict__ partial) {
    const u32 plane = p.rows * p.cols;
    const bool resid = p.mode == WIND_OP_RESID_MAX;
    double acc = 0.0;
    WIND_GRID_STRIDE(i, p.n) {
        const u32 k = i / plane, rc = i - k * plane;
        const u32 row = rc / p.cols, col = rc - row * p.cols;
        const double ax = wind_apply(p, i, k, row, col, kx, ky, kz, diag, x);
        if (resid) {
            const double r = b[i] - ax;
            out[i] = r;
            acc = wind_max(acc, fabs(r * inv_vol[i]));
        } else {
            out[i] = ax;
            acc += x[i] * ax;
        }
    }
    acc = resid ? wind_block_reduce<true, WIND_THREADS>(acc)
                : wind_block_reduce<false, WIND_THREADS>(acc);
    if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

// One colour of red-black SOR in phi form, compact mapping col = 2t + ((row + k + colour) & 1):
// phi = (1 - omega) phi + omega (b + sum K phi_nb) / diag, neighbours W, E, N, S, below, above.
extern "C" __global__ void __launch_bounds__(WIND_THREADS)
    wind_sor_f64(const WindParams p, const double* __restrict__ kx,
                 const double* __restrict__ ky, const double* __restrict__ kz,
                 const double* __restrict__ diag, double* phi, const double* __restrict__ b) {
    const u32 span = (p.cols + 1) / 2, plane = p.rows * p.cols;
    for (u32 k = blockIdx.z; k < p.nz; k += gridDim.z)
        for (u32 row = blockIdx.y * blockDim.y + threadIdx.y; row < p.rows;
             row += gridDim.y * blockDim.y)
            for (u32 t = blockIdx.x * blockDim.x + threadIdx.x; t < span;
                 t += gridDim.x * blockDim.x) {
                const u32 col = 2 * t + ((row + k + p.colour) & 1u);
                if (col >= p.cols) continue;
                const u32 i = (k * p.rows + row) * p.cols + col;
                const double d = diag[i];
                if (d == 0.0) continue;
                double s = b[i] + wind_horizontal(p, i, k, row, col, kx, ky, phi);
                if (k > 0) s += kz[i] * phi[i - plane];
                if (k + 1 < p.nz) s += kz[i + plane] * phi[i + plane];
                phi[i] = (1.0 - p.omega) * phi[i] + p.omega * s / d;
            }
}

// CG step: alpha = scal[slot] / scal[PAP] (0 when p.Ap <= 0: the host then stops), x += alpha p,
// r -= alpha Ap, partial max |r * inv_vol|.
extern "C" __global__ void __launch_bounds__(WIND_THREADS)
    wind_cg_update_f64(const WindParams p, double* __restrict__ x, double* __restrict__ r,
                       const double* __restrict__ pv, const double* __restrict__ ap,
                       const double* __restrict__ inv_vol, const double* __restrict__ scal,
                       double* __restrict__ partial) {
    const double rz = scal[p.slot], pap = scal[WIND_SLOT_PAP];
    const double a = pap > 0.0 ? rz / pap : 0.0;
    double m = 0.0;
    WIND_GRID_STRIDE(i, p.n) {
        x[i] += a * pv[i];
        const double ri = r[i] - a * ap[i];
        r[i] = ri;
        m = wind_max(m, fabs(ri * inv_vol[i]));
    }
    m = wind_block_reduce<true, WIND_THREADS>(m);
    if (threadIdx.x == 0) partial[blockIdx.x] = m;
}

// Partial sums of r . z with z the f32 V-cycle output.
extern "C" __global__ void __launch_bounds__(WIND_THREADS)
    wind_dot_z_f64(const WindParams p, const double* __restrict__ r,
                   const float* __restrict__ z, double* __restrict__ partial) {
    double s = 0.0;
    WIND_GRID_STRIDE(i, p.n) { s += r[i] * (double)z[i]; }
    s = wind_block_reduce<false, WIND_THREADS>(s);
    if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

// p = z + beta p with beta = scal[slot] / scal[slot2] (new over old r.z), or p = z on restart.
extern "C" __global__ void __launch_bounds__(WIND_THREADS)
    wind_cg_dir_f64(const WindParams p, const float* __restrict__ z, double* __restrict__ pv,
                    const double* __restrict__ scal) {
    const bool restart = p.mode == WIND_DIR_RESTART;
    const double beta = restart ? 0.0 : scal[p.slot] / scal[p.slot2];
    WIND_GRID_STRIDE(i, p.n) { pv[i] = restart ? (double)z[i] : (double)z[i] + beta * pv[i]; }
}

// ---------------------------------------------------------------------------------------------
// Assembly of Sherman's problem on the device (geofield's Level::finest, Level::coarsen and
// Problem::new, in the same floating-point order).
// ---------------------------------------------------------------------------------------------

// diag of cell (k, row, col) of a rows x cols level: W + E + N + S + bottom + top conductances.
__device__ __forceinline__ double wind_diag_of(u32 rows, u32 cols, u32 k, u32 row, u32 col,
                                               const double* kx, const double* ky,
                                               const double* kz) {
    const u32 ix = (k * rows + row) * (cols + 1) + col;
    const u32 iy = (k * (rows + 1) + row) * cols + col;
    const u32 i = (k * rows + row) * cols + col;
    return kx[ix] + kx[ix + 1] + ky[iy] + ky[iy + cols] + kz[i] + kz[i + rows * cols];
}

// The finest operator in place from the face coefficients c (T on x and y faces, alpha^2 T on z
// faces), by p.mode: 0 x faces K = c dz_k; 1 y faces K = c dz_k; 2 z faces K = c dx dx / dzc_k
// (0 at the bottom); 3 cells: diag = sum of the six K, and where k >= ground (fluid)
// 1/V and b = V div0 (b holds div0 on entry), else 0. p.n is the count of the mode's items.
extern "C" __global__ void __launch_bounds__(WIND_THREADS)
    wind_assemble_f64(const WindParams p, const double dx, const double* __restrict__ dz,
                      const double* __restrict__ dzc, const u32* __restrict__ ground,
                      double* kx, double* ky, double* kz, double* diag, double* inv_vol,
                      double* b) {
    const u32 rows = p.rows, cols = p.cols, plane = rows * cols;
    WIND_GRID_STRIDE(i, p.n) {
        if (p.mode == 0) {
            kx[i] = kx[i] * dz[i / (rows * (cols + 1))];
        } else if (p.mode == 1) {
            ky[i] = ky[i] * dz[i / ((rows + 1) * cols)];
        } else if (p.mode == 2) {
            const u32 k = i / plane;
            kz[i] = k == 0 ? 0.0 : kz[i] * dx * dx / dzc[k];
        } else {
            const u32 k = i / plane, rc = i - k * plane;
            const u32 row = rc / cols, col = rc - row * cols;
            diag[i] = wind_diag_of(rows, cols, k, row, col, kx, ky, kz);
            if (k >= ground[rc]) {
                const double vol = dx * dx * dz[k];
                inv_vol[i] = 1.0 / vol;
                b[i] = vol * b[i];
            } else {
                inv_vol[i] = 0.0;
                b[i] = 0.0;
            }
        }
    }
}

// The next coarser level (p.rows x p.cols -> p.crows x p.ccols, same layers), by p.mode: 0 x
// faces, 1 y faces: half the sum of the two fine faces covered (edge, not 1/2, on the domain's
// boundary faces); 2 z faces: the sum over the four children; 3 the coarse diagonal. Products
// are rounded before the sum (no FMA), as on the CPU.
extern "C" __global__ void __launch_bounds__(WIND_THREADS)
    wind_coarsen_f64(const WindParams p, const double edge, const double* __restrict__ fkx,
                     const double* __restrict__ fky, const double* __restrict__ fkz, double* ckx,
                     double* cky, double* ckz, double* cdiag) {
    const u32 rows = p.rows, cols = p.cols, rc = p.crows, cc = p.ccols;
    WIND_GRID_STRIDE(i, p.n) {
        if (p.mode == 0) {
            const u32 k = i / (rc * (cc + 1)), t = i - k * rc * (cc + 1);
            const u32 jr = t / (cc + 1), ic = t - jr * (cc + 1);
            const u32 fi = min(2 * ic, cols);
            const double f = (ic == 0 || ic == cc) ? edge : 0.5;
            double s = 0.0;
            for (u32 row = 2 * jr; row < 2 * jr + 2 && row < rows; ++row)
                s += __dmul_rn(f, fkx[(k * rows + row) * (cols + 1) + fi]);
            ckx[i] = s;
        } else if (p.mode == 1) {
            const u32 k = i / ((rc + 1) * cc), t = i - k * (rc + 1) * cc;
            const u32 jr = t / cc, ic = t - jr * cc;
            const u32 fr = min(2 * jr, rows);
            const double f = (jr == 0 || jr == rc) ? edge : 0.5;
            double s = 0.0;
            for (u32 col = 2 * ic; col < 2 * ic + 2 && col < cols; ++col)
                s += __dmul_rn(f, fky[(k * (rows + 1) + fr) * cols + col]);
            cky[i] = s;
        } else if (p.mode == 2) {
            const u32 k = i / (rc * cc), t = i - k * rc * cc;
            const u32 jr = t / cc, ic = t - jr * cc;
            double s = 0.0;
            for (u32 row = 2 * jr; row < 2 * jr + 2 && row < rows; ++row)
                for (u32 col = 2 * ic; col < 2 * ic + 2 && col < cols; ++col)
                    s += fkz[(k * rows + row) * cols + col];
            ckz[i] = s;
        } else {
            const u32 k = i / (rc * cc), t = i - k * rc * cc;
            const u32 jr = t / cc, ic = t - jr * cc;
            cdiag[i] = wind_diag_of(rc, cc, k, jr, ic, ckx, cky, ckz);
        }
    }
}

// The V-cycle's right-hand side: b32 = (float) r.
extern "C" __global__ void __launch_bounds__(WIND_THREADS)
    wind_to_f32(const WindParams p, const double* __restrict__ r, float* __restrict__ b32) {
    WIND_GRID_STRIDE(i, p.n) { b32[i] = (float)r[i]; }
}

// Iterative refinement: phi += (double) x32.
extern "C" __global__ void __launch_bounds__(WIND_THREADS)
    wind_add_f64(const WindParams p, const float* __restrict__ x32, double* __restrict__ phi) {
    WIND_GRID_STRIDE(i, p.n) { phi[i] += (double)x32[i]; }
}
