//! CUDA glue: converts prepared host data to the kernels' layouts and calls the safe wrappers in
//! `geofield-cuda` (kernels in `crates/geofield-cuda/kernels/dispersal.cu`).

use geofield_core::GridSpec;
use geofield_cuda::Gpu;
use geofield_cuda::dispersal as gd;

use super::Precision;
use super::band::Band;
use super::bins::Bins;
use super::params::Kernel;
use super::pyramid::Pyramid;
use super::sources::Sources;
use crate::GeofieldError;

fn shape(k: &Kernel) -> gd::KernelShape {
    match *k {
        Kernel::Weibull { d, theta } => gd::KernelShape::Weibull { d, theta },
        Kernel::Lognormal { x0, xb } => gd::KernelShape::Lognormal { x0, xb },
        Kernel::TwoDt { u, p } => gd::KernelShape::TwoDt { u, p },
    }
}

fn dims(grid: &GridSpec) -> Result<gd::GridDims, GeofieldError> {
    let cols = u32::try_from(grid.cols)
        .map_err(|_| GeofieldError::Invalid("grid too wide for the GPU".into()))?;
    let rows = u32::try_from(grid.rows)
        .map_err(|_| GeofieldError::Invalid("grid too tall for the GPU".into()))?;
    Ok(gd::GridDims {
        cols,
        rows,
        cell_size_m: grid.cell_size_m,
    })
}

fn out_precision(p: Precision) -> gd::OutPrecision {
    match p {
        Precision::F32 => gd::OutPrecision::F32,
        Precision::F64 => gd::OutPrecision::F64,
    }
}

fn band(h: gd::HostOut) -> Band {
    match h {
        gd::HostOut::F32(v) => Band::F32(v),
        gd::HostOut::F64(v) => Band::F64(v),
    }
}

fn f32s(v: &[f64]) -> Vec<f32> {
    v.iter().map(|&x| x as f32).collect()
}

pub(super) fn exact(
    gpu: &Gpu,
    grid: &GridSpec,
    kernel: &Kernel,
    sources: &Sources,
    torus: bool,
    precision: Precision,
) -> Result<(Band, f64), GeofieldError> {
    let torus = torus.then(|| (grid.width_m(), grid.height_m()));
    let w = f32s(&sources.w);
    let (out, ms) = gd::dispersal_exact(
        gpu,
        dims(grid)?,
        shape(kernel),
        torus,
        &sources.u,
        &sources.v,
        &w,
        out_precision(precision),
    )?;
    Ok((band(out), ms as f64))
}

/// The kernels' view of the bins, with the f32 copies of positions and weights.
fn tile_bins<'a>(bins: &'a Bins, du: &'a [f32], dv: &'a [f32], w: &'a [f32]) -> gd::TileBins<'a> {
    gd::TileBins {
        tile_size_m: bins.tile_size_m,
        tiles_x: bins.tiles_x as u32,
        tiles_y: bins.tiles_y as u32,
        origin_u_m: bins.origin_u_m,
        origin_v_m: bins.origin_v_m,
        tile_start: &bins.tile_start,
        du,
        dv,
        w,
    }
}

pub(super) fn cutoff(
    gpu: &Gpu,
    grid: &GridSpec,
    kernel: &Kernel,
    bins: &Bins,
    radius_m: f64,
    precision: Precision,
) -> Result<(Band, f64), GeofieldError> {
    let (du, dv, w) = (f32s(&bins.du), f32s(&bins.dv), f32s(&bins.w));
    let tb = tile_bins(bins, &du, &dv, &w);
    let (out, ms) = gd::dispersal_cutoff(
        gpu,
        dims(grid)?,
        shape(kernel),
        &tb,
        radius_m,
        out_precision(precision),
    )?;
    Ok((band(out), ms as f64))
}

/// The cutoff in f32 straight into the device map `dst` (kept there), and the kernel's time in
/// ms: the values [`cutoff`] downloads.
pub(super) fn cutoff_into(
    gpu: &Gpu,
    grid: &GridSpec,
    kernel: &Kernel,
    bins: &Bins,
    radius_m: f64,
    dst: &mut geofield_cuda::CudaSlice<f32>,
) -> Result<f64, GeofieldError> {
    let (du, dv, w) = (f32s(&bins.du), f32s(&bins.dv), f32s(&bins.w));
    let tb = tile_bins(bins, &du, &dv, &w);
    let ms = gd::dispersal_cutoff_into(gpu, dims(grid)?, shape(kernel), &tb, radius_m, dst)?;
    Ok(ms as f64)
}

/// The cutoff prepared for strips of rows (bins uploaded once); `None` for an empty grid.
pub(super) fn cutoff_strips<'g>(
    gpu: &'g Gpu,
    grid: &GridSpec,
    kernel: &Kernel,
    bins: &Bins,
    radius_m: f64,
    precision: Precision,
) -> Result<Option<gd::CutoffStrips<'g>>, GeofieldError> {
    let (du, dv, w) = (f32s(&bins.du), f32s(&bins.dv), f32s(&bins.w));
    let tb = tile_bins(bins, &du, &dv, &w);
    Ok(gd::CutoffStrips::new(
        gpu,
        dims(grid)?,
        shape(kernel),
        &tb,
        radius_m,
        out_precision(precision),
    )?)
}

/// Rows `row0 .. row0 + nrows` of a prepared cutoff, and the kernel's time in ms.
pub(super) fn strip_rows(
    strips: &mut gd::CutoffStrips<'_>,
    row0: usize,
    nrows: usize,
) -> Result<(Band, f64), GeofieldError> {
    let too_big = |_| GeofieldError::Invalid("grid too tall for the GPU".into());
    let (out, ms) = strips.rows(
        u32::try_from(row0).map_err(too_big)?,
        u32::try_from(nrows).map_err(too_big)?,
    )?;
    Ok((band(out), ms as f64))
}

pub(super) fn multires(
    gpu: &Gpu,
    grid: &GridSpec,
    kernel: &Kernel,
    pyr: &Pyramid,
    rho: &[f64],
) -> Result<(Vec<f64>, f64), GeofieldError> {
    let (u, v, w, r) = (
        f32s(&pyr.node_u),
        f32s(&pyr.node_v),
        f32s(&pyr.node_w),
        f32s(rho),
    );
    let p = gd::Pyramid {
        levels: pyr.levels,
        level_offset: &pyr.level_offset,
        node_u: &u,
        node_v: &v,
        node_w: &w,
        rho_m: &r,
    };
    let (out, ms) =
        gd::dispersal_multires(gpu, dims(grid)?, shape(kernel), &p, gd::OutPrecision::F64)?;
    Ok((band(out).to_f64(), ms as f64))
}

/// The near/far split on the device (see `geofield_cuda::dispersal::dispersal_nearfar`).
#[allow(clippy::too_many_arguments)]
pub(super) fn nearfar(
    gpu: &Gpu,
    grid: &GridSpec,
    kernel: &Kernel,
    bins: &Bins,
    plan: &super::nearfar::NearFarPlan,
    env: &super::nearfar::Envelope,
    sources: &Sources,
    nodes: &gd::FarNodes<'_>,
) -> Result<gd::NearFarOut, GeofieldError> {
    let (du, dv, w) = (f32s(&bins.du), f32s(&bins.dv), f32s(&bins.w));
    let tb = tile_bins(bins, &du, &dv, &w);
    let blend = gd::NearBlend {
        inner_m: plan.blend.inner_m,
        outer_m: plan.blend.outer_m,
        coef: plan.blend.coef.clone(),
    };
    let lat = plan.lattice;
    let dim = |n: usize| {
        u32::try_from(n).map_err(|_| GeofieldError::Invalid("far-field lattice too large".into()))
    };
    // The bound's kernel by lattice distance (the shift is inside the table's windows).
    let win = env.window_table(plan.shift_m);
    let table_r = win.distances();
    let far = gd::FarLattice {
        origin_u_m: lat.origin_u_m,
        origin_v_m: lat.origin_v_m,
        hx_m: lat.hx_m,
        hy_m: lat.hy_m,
        nx: dim(lat.nx)?,
        ny: dim(lat.ny)?,
        px: dim(lat.px)?,
        py: dim(lat.py)?,
        periodic: lat.periodic,
        shift_m: 0.0,
        table_r: &table_r,
        table_d: &win.vals,
    };
    Ok(gd::dispersal_nearfar(
        gpu,
        dims(grid)?,
        shape(kernel),
        &tb,
        plan.blend.outer_m,
        &blend,
        (&sources.u, &sources.v, &sources.w),
        &far,
        nodes,
    )?)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use geofield_core::{Extent, GridSpec, RasterData};

    use super::super::{DisperseOptions, Eta, Kernel, Method, Species, Stand};
    use crate::{Backend, Cancel};

    /// The cutoff written into a device map is the map `disperse_each` hands back, bit for bit
    /// (open plot and torus; trees outside the grid too). Skipped without a GPU.
    #[test]
    fn cutoff_into_device_is_the_downloaded_map() {
        let Some(gpu) = geofield_cuda::test_gpu() else {
            return;
        };
        let grid =
            GridSpec::from_extent(Extent::new(0.0, 0.0, 300.0, 200.0).unwrap(), 1.0).unwrap();
        let mut s =
            crate::forest::rng::Stream::new(3, 0, 0, 0, crate::forest::rng::Purpose::Growth);
        let n = 2000;
        let (mut x, mut y, mut d) = (vec![], vec![], vec![]);
        for _ in 0..n {
            x.push(-30.0 + 360.0 * s.uniform());
            y.push(-30.0 + 260.0 * s.uniform());
            d.push(5.0 + 50.0 * s.uniform());
        }
        let stand = Stand::new(x, y, d, vec![0; n]).unwrap();
        let sp = Species::new(
            "w".into(),
            Kernel::Weibull {
                d: 1.3e-3,
                theta: 2.5,
            },
            100.0,
            2.0,
            Eta::Analytic,
            10.0,
            None,
        )
        .unwrap();
        for torus in [false, true] {
            let opts = DisperseOptions {
                method: Method::Cutoff,
                precision: super::Precision::F32,
                tolerance: 1e-5,
                torus,
                ..Default::default()
            };
            let mut host = Vec::new();
            super::super::disperse_each(
                &Backend::Cuda(gpu.clone()),
                &grid,
                std::slice::from_ref(&sp),
                &stand,
                &opts,
                &mut |_| {},
                &Cancel::new(),
                &mut |_, data| {
                    match data {
                        RasterData::F32(v) => host = v,
                        RasterData::F64(_) => panic!("f64 map"),
                    }
                    Ok(())
                },
            )
            .unwrap();
            let mut dst = gpu.stream().alloc_zeros::<f32>(grid.n_cells() + 7).unwrap();
            let done = super::super::cutoff_into_device(&gpu, &grid, &sp, &stand, &opts, &mut dst)
                .unwrap();
            assert!(done || torus, "the open plot's cutoff runs on the device");
            if done {
                let back = gpu.stream().clone_dtoh(&dst).unwrap();
                assert!(
                    back[..grid.n_cells()] == host[..],
                    "torus {torus}: the maps differ"
                );
                assert!(host.iter().any(|&v| v > 0.0));
            }
        }
    }
}
