#line 2 "dispersal_multires.cu"
// The paper's multi-resolution kernel. Part of the "dispersal" module: dispersal.cu,
// dispersal_multires.cu and dispersal_far.cu are concatenated in that order
// (geofield_cuda::MODULES); its parameters are declared in dispersal.cu.

// ---------------------------------------------------------------------------------------------
// Multi-resolution (Fan et al. 2012, note section 3): one thread per cell walks the quadtree
// depth-first without a stack. Node (q, i, j) lives at level_offset[q] + i * 2^(K-q) + j. Empty
// nodes (w = 0) are skipped; a node of level q >= 1 farther than rho_q from the cell centre adds
// w K(d) at its mean position, a nearer one is opened; leaves (q = 0) always add. Children are
// visited in the order (2i,2j), (2i,2j+1), (2i+1,2j), (2i+1,2j+1): child index b = 2(i&1) + (j&1),
// so "next sibling" and "climb when b = 3" replace the stack. The opening test uses f32
// d^2 = dx*dx + dy*dy and rho^2 = rho*rho, each rounded separately (no FMA), so a CPU oracle can
// reproduce every decision bit for bit. Accumulation: Kahan per contribution.
// ---------------------------------------------------------------------------------------------
#if GF_WANTED(dispersal_multires)
extern "C" __global__ void __launch_bounds__(GF_THREADS)
    dispersal_multires(const DispersalMultiresParams p, const float* __restrict__ nu,
                       const float* __restrict__ nv, const float* __restrict__ nw,
                       void* __restrict__ out) {
    __shared__ u32 s_off[GF_MR_MAX_LEVELS];
    __shared__ float s_rho2[GF_MR_MAX_LEVELS];
    const int tid = threadIdx.y * GF_TX + threadIdx.x;
    if (tid < GF_MR_MAX_LEVELS) {
        s_off[tid] = p.level_offset[tid];
        s_rho2[tid] = __fmul_rn(p.rho_m[tid], p.rho_m[tid]);
    }
    __syncthreads();
    const u32 col = blockIdx.x * GF_TX + threadIdx.x;
    const u32 row = blockIdx.y * GF_TY + threadIdx.y;
    if (col >= p.cols || row >= p.rows) return;

    const float cu = (float)((col + 0.5) * p.cell_size_m);
    const float cv = (float)((row + 0.5) * p.cell_size_m);
    const u32 top = p.levels - 1u;
    float s = 0.0f, c = 0.0f;
    u32 q = top, i = 0, j = 0;
    for (;;) {
        const u32 off = s_off[q] + (i << (top - q)) + j;
        const float wn = __ldg(nw + off);
        bool open = false;
        if (wn != 0.0f) {
            const float dx = __fsub_rn(__ldg(nu + off), cu);
            const float dy = __fsub_rn(__ldg(nv + off), cv);
            const float d2 = __fadd_rn(__fmul_rn(dx, dx), __fmul_rn(dy, dy));
            if (q > 0u && !(d2 > s_rho2[q])) {
                open = true;
            } else {
                gf_kahan_add(s, c, wn * gf_eval_shape(p.shape, d2 * p.scale2, p.a, p.b));
            }
        }
        if (open) {
            --q;
            i <<= 1;
            j <<= 1;
            continue;
        }
        bool done = false;
        for (;;) {
            if (q == top) {
                done = true;
                break;
            }
            const u32 b = ((i & 1u) << 1) | (j & 1u);
            if (b == 3u) {
                i >>= 1;
                j >>= 1;
                ++q;
                continue;
            }
            if (b == 1u) {
                j -= 1u;
                i += 1u;
            } else {
                j += 1u;
            }
            break;
        }
        if (done) break;
    }
    gf_store(out, (u64)row * p.cols + col, gf_kahan_value(s, c), p.out_f64);
}
#endif
