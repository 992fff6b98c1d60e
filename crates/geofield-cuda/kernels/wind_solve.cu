#line 2 "wind_solve.cu"
// Sherman f64 solvers and the problem assembly, part of the "wind" module: wind.cu,
// wind_multigrid.cu, then this file, compiled as one source (geofield_cuda::MODULES).

// ---------------------------------------------------------------------------------------------
// f64 finest level: operator, SOR, CG and iterative refinement.
// ---------------------------------------------------------------------------------------------

// WIND_OP_APPLY_DOT: out = A'x, partial sum of x * out. WIND_OP_RESID_MAX: out = b - A'x,
// partial max |out * inv_vol| (the divergence, s^-1).
#if GF_WANTED(wind_op_f64)
extern "C" __global__ void __launch_bounds__(WIND_THREADS)
    wind_op_f64(const WindParams p, const double* __restrict__ kx, const double* __restrict__ ky,
                const double* __restrict__ kz, const double* __restrict__ diag,
                const double* __restrict__ x, const double* __restrict__ b,
                const double* __restrict__ inv_vol, double* __restrict__ out,
                double* __restrict__ partial, const double* __restrict__ hn,
                const double* __restrict__ hs) {
    const u32 plane = p.rows * p.cols;
    const bool resid = p.mode == WIND_OP_RESID_MAX;
    double acc = 0.0;
    WIND_GRID_STRIDE(i, p.n) {
        const u32 k = i / plane, rc = i - k * plane;
        const u32 row = rc / p.cols, col = rc - row * p.cols;
        const double ax = wind_apply(p, i, k, row, col, kx, ky, kz, diag, x,
                                     wind_halo(p, hn, hs));
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
#endif

// One colour of red-black SOR in phi form, compact mapping col = 2t + ((row + k + colour) & 1):
// phi = (1 - omega) phi + omega (b + sum K phi_nb) / diag, neighbours W, E, N, S, below, above.
#if GF_WANTED(wind_sor_f64)
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
                double s = b[i] + wind_horizontal(p, i, k, row, col, kx, ky, phi, WindHalo<double>{});
                if (k > 0) s += kz[i] * phi[i - plane];
                if (k + 1 < p.nz) s += kz[i + plane] * phi[i + plane];
                phi[i] = (1.0 - p.omega) * phi[i] + p.omega * s / d;
            }
}
#endif

// CG step: alpha = scal[slot] / scal[PAP] (0 when p.Ap <= 0: the host then stops), x += alpha p,
// r -= alpha Ap, partial max |r * inv_vol|.
#if GF_WANTED(wind_cg_update_f64)
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
#endif

// Partial sums of r . z with z the f32 V-cycle output.
#if GF_WANTED(wind_dot_z_f64)
extern "C" __global__ void __launch_bounds__(WIND_THREADS)
    wind_dot_z_f64(const WindParams p, const double* __restrict__ r,
                   const float* __restrict__ z, double* __restrict__ partial) {
    double s = 0.0;
    WIND_GRID_STRIDE(i, p.n) { s += r[i] * (double)z[i]; }
    s = wind_block_reduce<false, WIND_THREADS>(s);
    if (threadIdx.x == 0) partial[blockIdx.x] = s;
}
#endif

// p = z + beta p with beta = scal[slot] / scal[slot2] (new over old r.z), or p = z on restart.
#if GF_WANTED(wind_cg_dir_f64)
extern "C" __global__ void __launch_bounds__(WIND_THREADS)
    wind_cg_dir_f64(const WindParams p, const float* __restrict__ z, double* __restrict__ pv,
                    const double* __restrict__ scal) {
    const bool restart = p.mode == WIND_DIR_RESTART;
    const double beta = restart ? 0.0 : scal[p.slot] / scal[p.slot2];
    WIND_GRID_STRIDE(i, p.n) { pv[i] = restart ? (double)z[i] : (double)z[i] + beta * pv[i]; }
}
#endif

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
// Cut cells: c holds c_f a_f (the open fraction of each face) and, with p.slot = 1, V is
// frac[i] dx dx dz_k.
#if GF_WANTED(wind_assemble_f64)
extern "C" __global__ void __launch_bounds__(WIND_THREADS)
    wind_assemble_f64(const WindParams p, const double dx, const double* __restrict__ dz,
                      const double* __restrict__ dzc, const u32* __restrict__ ground,
                      const double* __restrict__ frac, double* kx, double* ky, double* kz, double* diag, double* inv_vol,
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
                // Cut cells (slot = 1): the volume fraction of geofield's div_fraction.
                const double vol = dx * dx * dz[k] * (p.slot ? frac[i] : 1.0);
                inv_vol[i] = 1.0 / vol;
                b[i] = vol * b[i];
            } else {
                inv_vol[i] = 0.0;
                b[i] = 0.0;
            }
        }
    }
}
#endif

// The next coarser level (p.rows x p.cols -> p.crows x p.ccols, same layers), by p.mode: 0 x
// faces, 1 y faces: the sum of the fine faces covered times fx[ic] (fy[jr]), the ratio of the
// fine and coarse distances between centres (geofield_cuda::wind::coarsening); 2 z faces: the
// sum over the (up to 2 x 2) children; 3 the coarse diagonal. Products are rounded before the
// sum (no FMA), as on the CPU.
#if GF_WANTED(wind_coarsen_f64)
extern "C" __global__ void __launch_bounds__(WIND_THREADS)
    wind_coarsen_f64(const WindParams p, const double* __restrict__ fx,
                     const double* __restrict__ fy, const double* __restrict__ fkx,
                     const double* __restrict__ fky, const double* __restrict__ fkz, double* ckx,
                     double* cky, double* ckz, double* cdiag) {
    const u32 rows = p.rows, cols = p.cols, rc = p.crows, cc = p.ccols;
    WIND_GRID_STRIDE(i, p.n) {
        if (p.mode == 0) {
            const u32 k = i / (rc * (cc + 1)), t = i - k * rc * (cc + 1);
            const u32 jr = t / (cc + 1), ic = t - jr * (cc + 1);
            const u32 fi = min(2 * ic, cols);
            const double f = fx[ic];
            double s = 0.0;
            for (u32 row = 2 * jr; row < 2 * jr + 2 && row < rows; ++row)
                s += __dmul_rn(f, fkx[(k * rows + row) * (cols + 1) + fi]);
            ckx[i] = s;
        } else if (p.mode == 1) {
            const u32 k = i / ((rc + 1) * cc), t = i - k * (rc + 1) * cc;
            const u32 jr = t / cc, ic = t - jr * cc;
            const u32 fr = min(2 * jr, rows);
            const double f = fy[jr];
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
#endif

// The V-cycle's right-hand side: b32 = (float) r.
#if GF_WANTED(wind_to_f32)
extern "C" __global__ void __launch_bounds__(WIND_THREADS)
    wind_to_f32(const WindParams p, const double* __restrict__ r, float* __restrict__ b32) {
    WIND_GRID_STRIDE(i, p.n) { b32[i] = (float)r[i]; }
}
#endif

// Iterative refinement: phi += (double) x32.
#if GF_WANTED(wind_add_f64)
extern "C" __global__ void __launch_bounds__(WIND_THREADS)
    wind_add_f64(const WindParams p, const float* __restrict__ x32, double* __restrict__ phi) {
    WIND_GRID_STRIDE(i, p.n) { phi[i] += (double)x32[i]; }
}
#endif
