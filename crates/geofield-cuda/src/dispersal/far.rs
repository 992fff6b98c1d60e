//! The near/far split on the device: the near field (the cutoff kernel with the blend's near
//! factor) and the far field (trees spread to a lattice, two FFT convolutions by cuFFT, the
//! Lagrange interpolation added per cell), with the maxima the host's certificate needs. The
//! rule (lattice, weights, bound) is `geofield::dispersal::nearfar`, whose CPU path is the
//! oracle of this one.

use cudarc::cufft::{CudaFft, sys as fft_sys};
use cudarc::driver::{LaunchConfig, PushKernelArg};

use super::launch::launch_err;
use super::params::FarParams;
use super::{GridDims, KernelShape, NearBlend, TileBins};
use crate::context::Gpu;
use crate::error::{CudaError, invalid};

const K: &str = "dispersal_nearfar";

/// The far field's lattice, blend and bound envelope (see `nearfar.rs` for their meaning).
#[derive(Clone, Copy, Debug)]
pub struct FarLattice<'a> {
    pub origin_u_m: f64,
    pub origin_v_m: f64,
    pub hx_m: f64,
    pub hy_m: f64,
    pub nx: u32,
    pub ny: u32,
    pub px: u32,
    pub py: u32,
    pub periodic: bool,
    /// Shift of the bound's envelope (2s + √2 H).
    pub shift_m: f64,
    /// Sampled envelope D̄_n: distances (increasing) and values (non-increasing).
    pub table_r: &'a [f64],
    pub table_d: &'a [f64],
}

/// What [`dispersal_nearfar`] returns.
#[derive(Clone, Debug)]
pub struct NearFarOut {
    /// Near + far at every cell (f32).
    pub out: Vec<f32>,
    /// max of the near field (before the far field was added).
    pub near_max: f64,
    /// max of the bound convolution over the nodes nearest to cells.
    pub bound_conv_max: f64,
    pub near_ms: f32,
    pub far_ms: f32,
}

fn fft_err(action: &str) -> impl FnOnce(cudarc::cufft::result::CufftError) -> CudaError + '_ {
    move |source| CudaError::Cufft {
        action: action.to_string(),
        source,
    }
}

/// The far field's node weights in fixed point (`geofield::dispersal::nearfar::Fixed`): each
/// tree's terms rounded to units of `unit` = 1 / `scale` (powers of two) and summed exactly in
/// 128 bits; `reduce`, where several processes each spread a piece of the stand, adds every
/// process's sums (the lattices' nx × ny nodes as `[low, high]` halves of each node, the
/// Lagrange-spread lattice then the nearest-node one) and returns them, or `None` when another
/// process failed.
pub struct FarNodes<'a> {
    pub scale: f64,
    pub unit: f64,
    pub reduce: Option<&'a dyn Fn(Vec<u64>) -> Option<Vec<u64>>>,
}

/// Near field + far field of one species (open plot, or a torus with `far.periodic` and the
/// periodic images of the trees in `bins`; `u`, `v`, `w` the trees spread to the lattice, wrapped:
/// all of them, or this process's piece with `nodes.reduce`).
#[allow(clippy::too_many_arguments)]
pub fn dispersal_nearfar(
    gpu: &Gpu,
    grid: GridDims,
    shape: KernelShape,
    bins: &TileBins<'_>,
    radius_m: f64,
    blend: &NearBlend,
    (u, v, w): (&[f64], &[f64], &[f64]),
    far: &FarLattice<'_>,
    nodes: &FarNodes<'_>,
) -> Result<NearFarOut, CudaError> {
    if !crate::probe::cufft_present() {
        return Err(CudaError::CufftMissing);
    }
    let n = blend.coef.len();
    let (px, py) = (far.px as usize, far.py as usize);
    let ok = (n == 4 || n == 6)
        && u.len() == v.len()
        && u.len() == w.len()
        && u32::try_from(u.len()).is_ok()
        && !far.table_r.is_empty()
        && far.table_r.len() == far.table_d.len()
        && far.nx >= n as u32
        && far.ny >= n as u32
        && px >= far.nx as usize
        && py >= far.ny as usize
        && px.checked_mul(py).is_some_and(|m| m <= 1 << 28)
        && far.hx_m > 0.0
        && far.hy_m > 0.0;
    if !ok {
        return Err(invalid(
            K,
            format!(
                "inconsistent far-field lattice: {} x {} nodes padded to {} x {}, {} trees, {} table entries",
                far.nx,
                far.ny,
                far.px,
                far.py,
                u.len(),
                far.table_r.len()
            ),
        ));
    }
    let (ka, kb, shape_id) = match shape {
        KernelShape::Weibull { d, theta } => (d, theta, 0u32),
        KernelShape::Lognormal { x0, xb } => (x0, xb, 1),
        KernelShape::TwoDt { u, p } => (u, p, 2),
    };
    let mut c = [0.0f64; 8];
    c[..n.min(8)].copy_from_slice(&blend.coef[..n.min(8)]);
    let params = FarParams {
        origin_u_m: far.origin_u_m,
        origin_v_m: far.origin_v_m,
        hx_m: far.hx_m,
        hy_m: far.hy_m,
        cell_size_m: grid.cell_size_m,
        shift_m: far.shift_m,
        r1sq: blend.inner_m * blend.inner_m,
        r2sq: blend.outer_m * blend.outer_m,
        ka,
        kb,
        c,
        nx: far.nx,
        ny: far.ny,
        px: far.px,
        py: far.py,
        order: n as u32,
        periodic: u32::from(far.periodic),
        shape: shape_id,
        cols: grid.cols,
        rows: grid.rows,
        n_trees: u.len() as u32,
        table_len: far.table_r.len() as u32,
        pad0: 0,
        inv_hx: 1.0 / far.hx_m,
        inv_hy: 1.0 / far.hy_m,
    };
    // The near field on the device, kept there.
    let (near, near_ms) =
        super::launch::cutoff_blend_device(gpu, grid, shape, bins, radius_m, blend)?;
    let Some(mut out) = near else {
        return Ok(NearFarOut {
            out: Vec::new(),
            near_max: 0.0,
            bound_conv_max: 0.0,
            near_ms,
            far_ms: 0.0,
        });
    };
    let n_cells = grid.cols as usize * grid.rows as usize;
    let total = px * py;
    // At most: the fixed-point sums (4 words a node, within nx x ny), the weights (2) and the
    // spectra (~2).
    gpu.ensure_free("the near/far lattice", (8 * total * 8) as u64)?;
    let mut held = Some(gpu.hold());
    let du = gpu.upload(u, "tree u")?;
    let dv = gpu.upload(v, "tree v")?;
    let dw = gpu.upload(w, "tree weights")?;
    let tr = gpu.upload(far.table_r, "envelope distances")?;
    let td = gpu.upload(far.table_d, "envelope values")?;
    // The fixed-point sums (both lattices, two halves per node), then the f64 weights.
    let nodes_n = far.nx as usize * far.ny as usize;
    let mut sums = gpu.zeros::<u64>(4 * nodes_n, "lattice sums")?;
    let mut wl = gpu.zeros::<f64>(total, "lattice weights")?;
    let mut wb = gpu.zeros::<f64>(total, "lattice bound weights")?;
    let nc = py * (px / 2 + 1);
    let mut ca = gpu.zeros::<fft_sys::double2>(nc, "lattice spectrum")?;
    let mut cb = gpu.zeros::<fft_sys::double2>(nc, "kernel spectrum")?;
    let mut maxima = gpu.zeros::<u64>(2, "maxima")?;
    let stream = gpu.stream().clone();
    let d2z = CudaFft::plan_2d(
        py as i32,
        px as i32,
        fft_sys::cufftType::CUFFT_D2Z,
        stream.clone(),
    )
    .map_err(fft_err("planning the far field's forward FFT"))?;
    let z2d = CudaFft::plan_2d(py as i32, px as i32, fft_sys::cufftType::CUFFT_Z2D, stream)
        .map_err(fft_err("planning the far field's inverse FFT"))?;
    let f_spread = gpu.function("dispersal", &format!("dispersal_far_spread{n}"))?;
    let f_unfix = gpu.function("dispersal", "dispersal_far_unfix")?;
    let f_fill = gpu.function("dispersal", "dispersal_far_fill")?;
    let f_mul = gpu.function("dispersal", "dispersal_far_mul")?;
    let f_interp = gpu.function("dispersal", &format!("dispersal_far_interp{n}"))?;
    let sms = gpu.info().multiprocessors.max(1);
    let strided = LaunchConfig {
        grid_dim: (sms * 8, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    let start = gpu.mark()?;
    if !u.is_empty() {
        let (mut sl, mut sb) = sums.split_at_mut(2 * nodes_n);
        let mut b = gpu.stream().launch_builder(&f_spread);
        b.arg(&params)
            .arg(&nodes.scale)
            .arg(&du)
            .arg(&dv)
            .arg(&dw)
            .arg(&mut sl)
            .arg(&mut sb);
        let cfg = LaunchConfig {
            grid_dim: ((u.len() as u32).div_ceil(256), 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: dispersal_far_spread{4,6}(DispersalFarParams, double scale, const double* u,
        // v, w, u64* wl, wb): one thread per tree (< n_trees = len(u) = len(v) = len(w)); every
        // lattice index `at` = row nx + col it forms is within nx x ny (open: the lattice covers
        // the trees with a margin of the stencil, built by the host; torus: wrapped), and it
        // writes wl[2 at], wl[2 at + 1] (len(wl) = len(wb) = 2 nx ny).
        unsafe { b.launch(cfg) }.map_err(launch_err("dispersal_far_spread"))?;
    }
    if let Some(reduce) = nodes.reduce {
        let mine = gpu.download(&sums, 4 * nodes_n, "the lattice sums")?;
        // The device is let go while the processes add their lattices: parts of one process
        // sharing it (threads) spread theirs meanwhile.
        drop(held.take());
        let all = reduce(mine).ok_or_else(|| invalid(K, "another process failed"))?;
        if all.len() != 4 * nodes_n {
            return Err(invalid(K, "the processes' lattices differ in size"));
        }
        sums = gpu.upload(&all, "the lattice sums")?;
    }
    let _held = held.unwrap_or_else(|| gpu.hold());
    {
        let (sl, sb) = sums.split_at(2 * nodes_n);
        for (src, dst) in [(&sl, &mut wl), (&sb, &mut wb)] {
            let mut b = gpu.stream().launch_builder(&f_unfix);
            b.arg(&params).arg(&nodes.unit).arg(src).arg(dst);
            // SAFETY: dispersal_far_unfix(DispersalFarParams, double unit, const u64* acc,
            // double* out): grid-stride over i < nx ny; reads acc[2i], acc[2i + 1] < 2 nx ny =
            // len(acc); writes out[(i / nx) px + i % nx] < ny px <= px py = len(out) (nx <= px,
            // ny <= py: checked).
            unsafe { b.launch(strided) }.map_err(launch_err("dispersal_far_unfix"))?;
        }
    }
    drop(sums);
    let mut g = gpu.zeros::<f64>(total, "lattice kernel")?;
    let mut e = gpu.zeros::<f64>(total, "lattice envelope")?;
    {
        let mut b = gpu.stream().launch_builder(&f_fill);
        b.arg(&params).arg(&tr).arg(&td).arg(&mut g).arg(&mut e);
        // SAFETY: dispersal_far_fill(DispersalFarParams, const double* tab_r, tab_d, double* g,
        // e): grid-stride over px * py = len(g) = len(e); table indices < table_len = len(tab_r)
        // = len(tab_d) (checked non-empty).
        unsafe { b.launch(strided) }.map_err(launch_err("dispersal_far_fill"))?;
    }
    let scale = 1.0 / total as f64;
    let nc64 = nc as u64;
    for (src, ker, what) in [(&mut wl, &g, "far field"), (&mut wb, &e, "bound")] {
        d2z.exec_d2z(src, &mut ca)
            .map_err(fft_err("transforming the lattice weights"))?;
        d2z.exec_d2z(ker, &mut cb)
            .map_err(fft_err("transforming the lattice kernel"))?;
        {
            let mut b = gpu.stream().launch_builder(&f_mul);
            b.arg(&nc64).arg(&scale).arg(&mut ca).arg(&cb);
            // SAFETY: dispersal_far_mul(u64 n, double scale, double2* a, const double2* b):
            // grid-stride over n = len(ca) = len(cb).
            unsafe { b.launch(strided) }.map_err(launch_err("dispersal_far_mul"))?;
        }
        z2d.exec_z2d(&mut ca, src)
            .map_err(fft_err(if what == "bound" {
                "transforming the bound back"
            } else {
                "transforming the far field back"
            }))?;
    }
    {
        let mut b = gpu.stream().launch_builder(&f_interp);
        b.arg(&params)
            .arg(&wl)
            .arg(&wb)
            .arg(&mut out)
            .arg(&mut maxima);
        // SAFETY: dispersal_far_interp{4,6}(DispersalFarParams, const double* phi, bound, float* out,
        // unsigned long long* maxima): grid-stride over cols * rows = len(out); stencil and
        // nearest-node indices are within nx x ny (the lattice covers the grid with a margin, or
        // wraps) and below px * py = len(phi) = len(bound); two maxima.
        unsafe { b.launch(strided) }.map_err(launch_err("dispersal_far_interp"))?;
    }
    let far_ms = gpu.elapsed_ms(&start)?;
    let m = gpu.download(&maxima, 2, "the maxima")?;
    let out = gpu.download(&out, n_cells, "the output")?;
    Ok(NearFarOut {
        out,
        near_max: f64::from_bits(m[0]),
        bound_conv_max: f64::from_bits(m[1]),
        near_ms,
        far_ms,
    })
}
