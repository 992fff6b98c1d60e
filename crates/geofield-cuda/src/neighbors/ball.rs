//! Radius queries on the device: safe wrappers over `kernels/ball.cu`. The cell list is built
//! by the host (geofield's `neighbors::ball`, the CPU's own, so both visit the same cells in the
//! same order) and handed over as plain arrays ([`Cells`]).

use cudarc::driver::{CudaSlice, DeviceRepr, LaunchConfig, PushKernelArg};

use super::launch_err;
use crate::context::Gpu;
use crate::error::{CudaError, invalid};

pub(super) const MODULE: &str = "ball";
const THREADS: u32 = 128;
/// Bins the kernels keep in shared memory (`BALL_SHARED_BINS` in ball.cu).
const SHARED_BINS: usize = 1024;

/// Parameters of the `ball_*` kernels (C: `BallKernelParams`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BallKernelParams {
    pub period: [f64; 3],
    pub origin: [f64; 3],
    pub width: [f64; 3],
    pub r: f64,
    pub thr: f64,
    pub scale: f64,
    pub win: [f64; 4],
    pub dims: [u32; 3],
    pub n_queries: u32,
    pub metric: u32,
    pub keep: u32,
    pub n_bins: u32,
    pub weighted: u32,
    pub mode: u32,
    pub flags: u32,
}

// SAFETY: #[repr(C)] plain-old-data of floats and integers matching the C mirror (sizes checked
// on both sides: GF_CHECK_SIZE and the test below).
unsafe impl DeviceRepr for BallKernelParams {}

/// A host-built cell list: `dim` (2 or 3) coordinates per stored point in cell order, their
/// original indices, the cells' start offsets (row-major, axis 0 fastest; `starts.len()` =
/// cells + 1), and the geometry (unused axes: period 0, dims 1).
#[derive(Debug, Clone, Copy)]
pub struct Cells<'a> {
    pub dim: usize,
    pub period: [f64; 3],
    pub origin: [f64; 3],
    pub width: [f64; 3],
    pub dims: [u32; 3],
    pub pts: &'a [f64],
    pub ids: &'a [u32],
    pub starts: &'a [u32],
}

/// Which stored points a row keeps besides the distance test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    All = 0,
    /// Not the query's own index (the queries are the points).
    NotSelf = 1,
    /// Only indices above the query's (pairs i < j).
    Above = 2,
}

/// The metric and radius of a query: `metric` 0 Euclidean, 1 Manhattan, 2 Chebyshev; `r` the
/// visited radius, `thr` the threshold the combined value is compared with (≤).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reach {
    pub metric: u32,
    pub r: f64,
    pub thr: f64,
}

pub(super) fn cfg(n: usize, shared_bytes: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (
            u32::try_from(n.div_ceil(THREADS as usize).max(1)).unwrap_or(u32::MAX),
            1,
            1,
        ),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: shared_bytes,
    }
}

impl Cells<'_> {
    pub(super) fn params(
        &self,
        queries: usize,
        reach: Reach,
    ) -> Result<BallKernelParams, CudaError> {
        const K: &str = "ball";
        if self.dim != 2 && self.dim != 3 {
            return Err(invalid(K, format!("dim = {} (2 or 3)", self.dim)));
        }
        let cells: usize = self.dims.iter().map(|&d| d as usize).product();
        if self.starts.len() != cells + 1
            || self.pts.len() != self.ids.len() * self.dim
            || self.starts.last().copied().unwrap_or(0) as usize != self.ids.len()
        {
            return Err(invalid(K, "the cell list's arrays do not agree"));
        }
        Ok(BallKernelParams {
            period: self.period,
            origin: self.origin,
            width: self.width,
            r: reach.r,
            thr: reach.thr,
            dims: self.dims,
            n_queries: u32::try_from(queries)
                .map_err(|_| invalid(K, format!("{queries} queries is too many")))?,
            metric: reach.metric,
            ..BallKernelParams::default()
        })
    }
}

/// CSR rows: (offsets, indices, distances).
pub type Rows = (Vec<u64>, Vec<u32>, Vec<f64>);

/// Weights of the pair sums: (of the queries, of the stored points by original index, 2^F).
pub type Weights<'a> = Option<(Option<&'a [f64]>, Option<&'a [f64]>, f64)>;

/// The cell list and the queries on the device.
pub(super) struct Staged {
    pub(super) pts: CudaSlice<f64>,
    pub(super) ids: CudaSlice<u32>,
    pub(super) starts: CudaSlice<u32>,
    pub(super) queries: CudaSlice<f64>,
}

impl Staged {
    pub(super) fn new(gpu: &Gpu, cells: &Cells<'_>, queries: &[f64]) -> Result<Self, CudaError> {
        Ok(Staged {
            pts: gpu.upload(cells.pts, "the points")?,
            ids: gpu.upload(cells.ids, "the point ids")?,
            starts: gpu.upload(cells.starts, "the cell starts")?,
            queries: gpu.upload(queries, "the queries")?,
        })
    }
}

/// The row buffers of `ball_rows_D`: counts (nq), offsets (nq + 1), indices, distances.
struct RowBufs {
    counts: CudaSlice<u32>,
    offsets: CudaSlice<u64>,
    idx: CudaSlice<u32>,
    dist: CudaSlice<f64>,
}

/// One pass of `ball_rows_D` (`p.mode` 0: count, 1: write at the offsets).
fn rows_pass(
    gpu: &Gpu,
    name: &str,
    p: &BallKernelParams,
    st: &Staged,
    out: &mut RowBufs,
) -> Result<(), CudaError> {
    let f = gpu.function(MODULE, name)?;
    let mut b = gpu.stream().launch_builder(&f);
    b.arg(p)
        .arg(&st.pts)
        .arg(&st.ids)
        .arg(&st.starts)
        .arg(&st.queries)
        .arg(&mut out.counts)
        .arg(&out.offsets)
        .arg(&mut out.idx)
        .arg(&mut out.dist);
    // SAFETY: ball_rows_D(params, pts (n·D), ids (n), starts (cells + 1), qs (nq·D), counts
    // (nq), offsets, out_idx, out_d): reads the cell list within its bounds (params() checked
    // that the arrays agree); mode 0 writes counts[qi] for qi < nq only; mode 1 writes query
    // qi's row at offsets[qi] .. offsets[qi + 1], the points the count pass counted (same
    // visit, same tests), inside out_idx and out_d, sized to the counts' total.
    unsafe { b.launch(cfg(p.n_queries as usize, 0)) }.map_err(launch_err(name.to_string()))?;
    Ok(())
}

/// The count pass of [`ball_rows`]: the device buffers and each row's length.
fn count_pass(
    gpu: &Gpu,
    cells: &Cells<'_>,
    queries: &[f64],
    reach: Reach,
    keep: Keep,
) -> Result<(BallKernelParams, Staged, RowBufs, Vec<u32>), CudaError> {
    let nq = queries.len() / cells.dim.max(1);
    let mut p = cells.params(nq, reach)?;
    p.keep = keep as u32;
    p.mode = 0;
    let st = Staged::new(gpu, cells, queries)?;
    let mut out = RowBufs {
        counts: gpu.zeros::<u32>(nq, "the row counts")?,
        offsets: gpu.zeros::<u64>(1, "the row offsets")?,
        idx: gpu.zeros::<u32>(1, "the neighbour indices")?,
        dist: gpu.zeros::<f64>(1, "the neighbour distances")?,
    };
    if nq == 0 {
        return Ok((p, st, out, Vec::new()));
    }
    rows_pass(gpu, &format!("ball_rows_{}", cells.dim), &p, &st, &mut out)?;
    let c = gpu.download(&out.counts, nq, "the row counts")?;
    Ok((p, st, out, c))
}

/// Every stored point within reach of each query (`queries`: `dim` coordinates each), as CSR
/// rows in the cell list's order: (offsets, indices, distances), the CPU's rows bit for bit.
pub fn ball_rows(
    gpu: &Gpu,
    cells: &Cells<'_>,
    queries: &[f64],
    reach: Reach,
    keep: Keep,
) -> Result<Rows, CudaError> {
    let _held = gpu.hold();
    let (mut p, st, mut out, c) = count_pass(gpu, cells, queries, reach, keep)?;
    let mut offsets = Vec::with_capacity(c.len() + 1);
    let mut total = 0u64;
    offsets.push(0);
    for &x in &c {
        total += u64::from(x);
        offsets.push(total);
    }
    if c.is_empty() {
        return Ok((offsets, Vec::new(), Vec::new()));
    }
    let total = usize::try_from(total).map_err(|_| invalid("ball_rows", "too many neighbours"))?;
    gpu.ensure_free("the neighbour rows", (total * 12 + c.len() * 8) as u64)?;
    out.offsets = gpu.upload(&offsets, "the row offsets")?;
    out.idx = gpu.zeros::<u32>(total, "the neighbour indices")?;
    out.dist = gpu.zeros::<f64>(total, "the neighbour distances")?;
    p.mode = 1;
    rows_pass(gpu, &format!("ball_rows_{}", cells.dim), &p, &st, &mut out)?;
    let idx = gpu.download(&out.idx, total, "the neighbour indices")?;
    let dist = gpu.download(&out.dist, total, "the neighbour distances")?;
    Ok((offsets, idx, dist))
}

/// The row lengths of [`ball_rows`] (its count pass alone).
pub fn ball_counts(
    gpu: &Gpu,
    cells: &Cells<'_>,
    queries: &[f64],
    reach: Reach,
    keep: Keep,
) -> Result<Vec<u32>, CudaError> {
    let _held = gpu.hold();
    Ok(count_pass(gpu, cells, queries, reach, keep)?.3)
}

/// Per-bin sums over the pairs (query i, stored point j) within reach, binned by the first of
/// the sorted `thresholds` ≥ the pair's value: counts, or with `weights` = (w of the queries,
/// w of the stored points by original index, 2^F) the 128-bit sums of rint(w_i·w_j·2^F).
pub fn ball_bins(
    gpu: &Gpu,
    cells: &Cells<'_>,
    queries: &[f64],
    reach: Reach,
    thresholds: &[f64],
    weights: Weights<'_>,
) -> Result<Vec<i128>, CudaError> {
    let nq = queries.len() / cells.dim.max(1);
    let nb = thresholds.len();
    let mut p = cells.params(nq, reach)?;
    p.n_bins = u32::try_from(nb).map_err(|_| invalid("ball_bins", "too many radii"))?;
    let (w1, w2) = match weights {
        Some((a, b, scale)) => {
            p.weighted = 1 | if a.is_some() { 2 } else { 0 } | if b.is_some() { 4 } else { 0 };
            p.scale = scale;
            (a, b)
        }
        None => (None, None),
    };
    let words = if p.weighted & 1 == 1 { 2 * nb } else { nb };
    let name = format!("ball_bins_{}", cells.dim);
    let f = gpu.function(MODULE, &name)?;
    let _held = gpu.hold();
    let st = Staged::new(gpu, cells, queries)?;
    let dt = gpu.upload(thresholds, "the radii")?;
    let dw1 = gpu.upload(w1.unwrap_or(&[]), "the weights")?;
    let dw2 = gpu.upload(w2.unwrap_or(&[]), "the weights")?;
    let mut out = gpu.zeros::<u64>(words, "the bins")?;
    if nq > 0 && nb > 0 {
        let shared = if nb <= SHARED_BINS { words * 8 } else { 0 };
        let mut b = gpu.stream().launch_builder(&f);
        b.arg(&p)
            .arg(&st.pts)
            .arg(&st.ids)
            .arg(&st.starts)
            .arg(&st.queries)
            .arg(&dt)
            .arg(&dw1)
            .arg(&dw2)
            .arg(&mut out);
        // SAFETY: ball_bins_D(params, pts, ids, starts, qs, thr (n_bins), w1 (nq when flagged),
        // w2 (stored points when flagged), bins (words)): reads within the checked arrays,
        // adds into `words` bins (shared memory of `words` u64 when n_bins ≤ 1024).
        unsafe { b.launch(cfg(nq, shared as u32)) }.map_err(launch_err(name.clone()))?;
    }
    let v = gpu.download(&out, words, "the bins")?;
    Ok(if p.weighted & 1 == 1 {
        v.chunks_exact(2)
            .map(|c| ((u128::from(c[1]) << 64) | u128::from(c[0])) as i128)
            .collect()
    } else {
        v.into_iter().map(i128::from).collect()
    })
}

/// Ripley's K sums of the stored points against themselves (2-D), per radius: counts, the
/// border correction's difference array (radii + 1 entries), and the translate and isotropic
/// weights' 128-bit fixed-point sums (units 2^−F, `scale` = 2^F; `flags` 1 translate, 2
/// isotropic). `points` are the points in their original order (the queries).
pub struct RipleySums {
    pub none: Vec<u64>,
    pub border: Vec<i64>,
    pub trans: Vec<i128>,
    pub iso: Vec<i128>,
}

/// See [`RipleySums`]. `thresholds` are the radii's r·r, `window` (x0, y0, x1, y1).
#[allow(clippy::too_many_arguments)]
pub fn ball_ripley(
    gpu: &Gpu,
    cells: &Cells<'_>,
    points: &[f64],
    reach: Reach,
    thresholds: &[f64],
    radii: &[f64],
    window: [f64; 4],
    flags: u32,
    scale: f64,
) -> Result<RipleySums, CudaError> {
    let nq = points.len() / 2;
    let nb = radii.len();
    if cells.dim != 2 || thresholds.len() != nb {
        return Err(invalid(
            "ball_ripley",
            "2-D points and one threshold per radius",
        ));
    }
    let mut p = cells.params(nq, reach)?;
    p.n_bins = u32::try_from(nb).map_err(|_| invalid("ball_ripley", "too many radii"))?;
    p.win = window;
    p.flags = flags;
    p.scale = scale;
    let words = 6 * nb + 1;
    let f = gpu.function(MODULE, "ball_ripley")?;
    let _held = gpu.hold();
    let st = Staged::new(gpu, cells, points)?;
    let dt = gpu.upload(thresholds, "the radii")?;
    let dr = gpu.upload(radii, "the radii")?;
    let mut out = gpu.zeros::<u64>(words, "the sums")?;
    if nq > 0 && nb > 0 {
        let shared = if nb <= SHARED_BINS / 2 { words * 8 } else { 0 };
        let mut b = gpu.stream().launch_builder(&f);
        b.arg(&p)
            .arg(&st.pts)
            .arg(&st.ids)
            .arg(&st.starts)
            .arg(&st.queries)
            .arg(&dt)
            .arg(&dr)
            .arg(&mut out);
        // SAFETY: ball_ripley(params, pts, ids, starts, qs (nq·2), thr (nb), radii (nb), out
        // (6·nb + 1 words)): reads within the checked arrays, adds into the `words` outputs
        // (shared memory of `words` u64 when nb ≤ 512).
        unsafe { b.launch(cfg(nq, shared as u32)) }.map_err(launch_err("ball_ripley".into()))?;
    }
    let v = gpu.download(&out, words, "the sums")?;
    let wide = |s: &[u64]| -> Vec<i128> {
        s.chunks_exact(2)
            .map(|c| ((u128::from(c[1]) << 64) | u128::from(c[0])) as i128)
            .collect()
    };
    Ok(RipleySums {
        none: v[..nb].to_vec(),
        border: v[nb..2 * nb + 1].iter().map(|&x| x as i64).collect(),
        trans: wide(&v[2 * nb + 1..4 * nb + 1]),
        iso: wide(&v[4 * nb + 1..6 * nb + 1]),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn params_size_matches_the_kernel() {
        assert_eq!(std::mem::size_of::<super::BallKernelParams>(), 168);
    }
}
