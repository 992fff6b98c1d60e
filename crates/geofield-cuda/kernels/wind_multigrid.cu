#line 2 "wind_multigrid.cu"
// Sherman multigrid (f32), part of the "wind" module: wind.cu, then this file, then
// wind_solve.cu, compiled as one source (geofield_cuda::MODULES).

// ---------------------------------------------------------------------------------------------
// Multigrid on the volume-weighted operator A'x = diag x - sum_f K_f x_nb (geofield's level.rs),
// f32. Horizontal neighbours are summed W, E, N, S, as the CPU does.
// ---------------------------------------------------------------------------------------------
// A band's halo rows (the split solve, geofield_cuda::wind::GpuSherman::assemble_band): the
// neighbouring bands' rows of x beyond row 0 (hn) and beyond row rows-1 (hs), [k][col] each;
// null where the domain ends there (the whole domain has neither; wind_halo reads p.halo). The y faces at a band's
// edges are the whole level's interior faces, so a halo cell counts exactly as the whole
// level's neighbour does, in the same order.
template <typename T> struct WindHalo {
    const T* n;
    const T* s;
};

template <typename T>
__device__ __forceinline__ WindHalo<T> wind_halo(const WindParams& p, const T* hn, const T* hs) {
    return WindHalo<T>{(p.halo & 1u) ? hn : nullptr, (p.halo & 2u) ? hs : nullptr};
}

template <typename T>
__device__ __forceinline__ T wind_horizontal(const WindParams& p, u32 i, u32 k, u32 row, u32 col,
                                             const T* kx, const T* ky, const T* x,
                                             const WindHalo<T> halo) {
    const u32 rows = p.rows, cols = p.cols;
    const u32 ix = (k * rows + row) * (cols + 1) + col;
    const u32 iy = (k * (rows + 1) + row) * cols + col;
    T h = 0;
    if (col > 0) h += kx[ix] * x[i - 1];
    if (col + 1 < cols) h += kx[ix + 1] * x[i + 1];
    if (row > 0) h += ky[iy] * x[i - cols];
    else if (halo.n) h += ky[iy] * halo.n[k * cols + col];
    if (row + 1 < rows) h += ky[iy + cols] * x[i + cols];
    else if (halo.s) h += ky[iy + cols] * halo.s[k * cols + col];
    return h;
}

// (A'x)_i, the CPU's order: diag x - horizontal, - kzB x_below, - kzT x_above.
template <typename T>
__device__ __forceinline__ T wind_apply(const WindParams& p, u32 i, u32 k, u32 row, u32 col,
                                        const T* kx, const T* ky, const T* kz, const T* diag,
                                        const T* x, const WindHalo<T> halo) {
    const u32 plane = p.rows * p.cols;
    T s = diag[i] * x[i] - wind_horizontal(p, i, k, row, col, kx, ky, x, halo);
    if (k > 0) s -= kz[i] * x[i - plane];
    if (k + 1 < p.nz) s -= kz[i + plane] * x[i + plane];
    return s;
}

// Rows 0 and rows-1 of every layer of x into out ([k][col] each, the first row then the last):
// the rows a band sends to its neighbours.
template <typename T>
__device__ __forceinline__ void wind_edge_rows(const WindParams& p, const T* x, T* out) {
    const u32 line = p.nz * p.cols;
    WIND_GRID_STRIDE(t, 2 * line) {
        const u32 last = t >= line, j = t - last * line, k = j / p.cols, col = j - k * p.cols;
        out[t] = x[(k * p.rows + (last ? p.rows - 1 : 0)) * p.cols + col];
    }
}
#if GF_WANTED(wind_edge_rows_f32)
extern "C" __global__ void __launch_bounds__(WIND_THREADS)
    wind_edge_rows_f32(const WindParams p, const float* __restrict__ x, float* __restrict__ out) {
    wind_edge_rows(p, x, out);
}
#endif
#if GF_WANTED(wind_edge_rows_f64)
extern "C" __global__ void __launch_bounds__(WIND_THREADS)
    wind_edge_rows_f64(const WindParams p, const double* __restrict__ x, double* __restrict__ out) {
    wind_edge_rows(p, x, out);
}
#endif

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
        const float rhs = b[i] + wind_horizontal(p, i, k, row, col, kx, ky, x, WindHalo<float>{});
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
#if GF_WANTED(wind_factor_f32)
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
#endif

// One colour of z-line relaxation, step 1: g = b + sum_h K x_nb on the colour's columns (every
// cell in parallel; the neighbours are the other colour).
#if GF_WANTED(wind_line_rhs_f32)
extern "C" __global__ void __launch_bounds__(WIND_THREADS)
    wind_line_rhs_f32(const WindParams p, const float* __restrict__ kx,
                      const float* __restrict__ ky, const float* __restrict__ x,
                      const float* __restrict__ b, float* __restrict__ g,
                      const float* __restrict__ hn, const float* __restrict__ hs) {
    const u32 span = (p.cols + 1) / 2, m = p.rows * span;
    WIND_GRID_STRIDE(t, p.nz * m) {
        const u32 k = t / m, rt = t - k * m;
        const u32 row = rt / span, col = 2 * (rt - row * span) + ((row + p.colour) & 1u);
        if (col >= p.cols) continue;
        const u32 i = (k * p.rows + row) * p.cols + col;
        g[i] = b[i] + wind_horizontal(p, i, k, row, col, kx, ky, x, wind_halo(p, hn, hs));
    }
}
#endif

#define WIND_CHUNK 8

// Step 2: each column of the colour solved with the level's factors: forward
// y_k = (g_k + kz_k y_{k-1}) ip_k, backward x_k = y_k - cpf_k x_{k+1}. The loads of WIND_CHUNK
// layers are issued together, so a column waits for memory once per chunk, not once per layer.
#if GF_WANTED(wind_thomas_f32)
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
#endif

// p.sweeps sweeps (colour 0 then 1) of the coarsest level in one block.
#if GF_WANTED(wind_coarsest_f32)
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
#endif

// cb = sum over the 2x2 children (row-major) of the fine residual b - A'x.
#if GF_WANTED(wind_restrict_f32)
extern "C" __global__ void __launch_bounds__(WIND_THREADS)
    wind_restrict_f32(const WindParams p, const float* __restrict__ kx,
                      const float* __restrict__ ky, const float* __restrict__ kz,
                      const float* __restrict__ diag, const float* __restrict__ x,
                      const float* __restrict__ b, float* __restrict__ cb,
                      const float* __restrict__ hn, const float* __restrict__ hs) {
    const u32 cplane = p.crows * p.ccols;
    WIND_GRID_STRIDE(ci, p.n) {
        const u32 k = ci / cplane, rc = ci - k * cplane;
        const u32 jr = rc / p.ccols, ic = rc - jr * p.ccols;
        float s = 0.0f;
        for (u32 row = 2 * jr; row < 2 * jr + 2 && row < p.rows; ++row)
            for (u32 col = 2 * ic; col < 2 * ic + 2 && col < p.cols; ++col) {
                const u32 i = (k * p.rows + row) * p.cols + col;
                s += b[i] - wind_apply(p, i, k, row, col, kx, ky, kz, diag, x,
                                       wind_halo(p, hn, hs));
            }
        cb[ci] = s;
    }
}
#endif

// x += x_coarse of the parent column (piecewise constant) on cells with diag != 0.
#if GF_WANTED(wind_prolong_f32)
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
#endif
