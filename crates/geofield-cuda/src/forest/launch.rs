//! [`place_seeds`] and [`seed_positions`]: check, upload, launch between two timing events,
//! download.

use cudarc::driver::{LaunchConfig, PushKernelArg};

use super::{
    FlightTables, KERNEL, MODULE, PlotGrid, SeedParents, StreamKey, THREADS, invalid, params,
};
use crate::context::Gpu;
use crate::error::CudaError;

/// Sheds the seeds of `parents` with `tables` and adds each seed that lands in `grid` to its
/// cell's count in `counts` (row-major from the north-west, `cols · rows` entries; counts wrap
/// at 2³², as the CPU's atomic additions do). Returns the kernel's time in ms (CUDA events
/// around the launch). See the [module docs](super) for the contract; an input outside it is an
/// [`CudaError::InvalidInput`], as is a seed whose draw falls beyond the quantile tables (which
/// a 32-bit draw cannot: the CPU would solve for it by bisection).
pub fn place_seeds(
    gpu: &Gpu,
    tables: &FlightTables<'_>,
    parents: &SeedParents<'_>,
    grid: &PlotGrid,
    key: StreamKey,
    counts: &mut [u32],
) -> Result<f32, CudaError> {
    Ok(run(gpu, tables, parents, grid, key, counts, false)?.0)
}

/// [`place_seeds`] that also returns, for every seed in order (parent by parent, seed by seed),
/// its distance r (m) and grid-relative landing position (u east of the west edge, v south of
/// the north edge, m; wrapped on a torus): the values the CPU computes, for the parity tests.
pub fn seed_positions(
    gpu: &Gpu,
    tables: &FlightTables<'_>,
    parents: &SeedParents<'_>,
    grid: &PlotGrid,
    key: StreamKey,
    counts: &mut [u32],
) -> Result<Vec<[f64; 3]>, CudaError> {
    let flat = run(gpu, tables, parents, grid, key, counts, true)?.1;
    Ok(flat.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect())
}

fn run(
    gpu: &Gpu,
    tables: &FlightTables<'_>,
    parents: &SeedParents<'_>,
    grid: &PlotGrid,
    key: StreamKey,
    counts: &mut [u32],
    record: bool,
) -> Result<(f32, Vec<f64>), CudaError> {
    let Some(p) = params(tables, parents, grid, key, counts.len(), record)? else {
        return Ok((0.0, Vec::new()));
    };
    let n_cells = counts.len();
    let seeds = usize::try_from(p.seeds)
        .map_err(|_| invalid(KERNEL, format!("{} seeds do not fit this host", p.seeds)))?;
    let rec_len = if record {
        seeds.checked_mul(3).ok_or_else(|| {
            invalid(
                KERNEL,
                format!("{seeds} seeds' positions do not fit this host"),
            )
        })?
    } else {
        1
    };
    let need = 4 * n_cells as u64
        + 8 * (tables.near.len() + tables.far.len() + 2 * tables.dir.len()) as u64
        + 32 * parents.x_m.len() as u64
        + 8 * rec_len as u64;
    gpu.ensure_free("per-seed placement (counts, tables, parents)", need)?;
    let f = gpu.function(MODULE, KERNEL)?;
    let dir: Vec<f64> = tables.dir.iter().flat_map(|&(c, s)| [c, s]).collect();
    let blocks = p
        .seeds
        .div_ceil(u64::from(THREADS))
        .min(u64::from(gpu.info().multiprocessors.max(1)) * 32)
        .max(1) as u32;
    let cfg = LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    let _held = gpu.hold();
    let dx = gpu.upload(parents.x_m, "parent x")?;
    let dy = gpu.upload(parents.y_m, "parent y")?;
    let did = gpu.upload(parents.id, "parent ids")?;
    let doff = gpu.upload(parents.offsets, "parent seed offsets")?;
    let dnear = gpu.upload(tables.near, "the near quantile table")?;
    let dfar = gpu.upload(tables.far, "the far quantile table")?;
    let ddir = gpu.upload(&dir, "the directions' table")?;
    let mut dcounts = gpu.zeros::<u32>(n_cells, "the seed counts")?;
    let mut dbeyond = gpu.zeros::<u64>(1, "the beyond-the-tables counter")?;
    let mut drec = gpu.zeros::<f64>(rec_len, "the seeds' positions")?;
    let start = gpu.mark()?;
    {
        let mut b = gpu.stream().launch_builder(&f);
        b.arg(&p)
            .arg(&dx)
            .arg(&dy)
            .arg(&did)
            .arg(&doff)
            .arg(&dnear)
            .arg(&dfar)
            .arg(&ddir)
            .arg(&mut dcounts)
            .arg(&mut dbeyond)
            .arg(&mut drec);
        // SAFETY: forest_place_seeds(ForestPlaceParams by value, const double* px, py, const
        // u64* pid, const u64* offsets, const double* near, far, const double2* dir, u32* counts,
        // u64* beyond, double* record) in order and type. px, py, pid hold p.parents ≥ 1
        // entries and offsets p.parents + 1, from 0 and non-decreasing to p.seeds (checked), so
        // the binary search's index is < p.parents; near and far hold p.table + 1 entries and
        // the kernel reads indices ≤ p.table; dir holds DIRECTIONS + 1 (cos, sin) pairs (16-byte
        // aligned allocation), read at k + 1 ≤ DIRECTIONS; counts holds cols · rows entries and
        // the kernel writes only cells with 0 ≤ col < cols, 0 ≤ row < rows; beyond holds one
        // u64; record holds 3 · p.seeds entries when p.record = 1 (written at 3g..3g + 3 for
        // g < p.seeds), and is not touched otherwise.
        unsafe { b.launch(cfg) }.map_err(|source| CudaError::Driver {
            action: format!("launching {KERNEL}"),
            source,
        })?;
    }
    let ms = gpu.elapsed_ms(&start)?;
    let beyond = gpu.download(&dbeyond, 1, "the beyond-the-tables counter")?;
    if let Some(&b) = beyond.first().filter(|&&b| b != 0) {
        return Err(invalid(
            KERNEL,
            format!(
                "{b} seeds drew a u beyond the quantile tables (a 32-bit draw never does: the \
                 tables or inv_step are wrong)"
            ),
        ));
    }
    let got = gpu.download(&dcounts, n_cells, "the seed counts")?;
    for (c, g) in counts.iter_mut().zip(&got) {
        *c = c.wrapping_add(*g);
    }
    gpu.recycle_host(got);
    let rec = if record {
        gpu.download(&drec, rec_len, "the seeds' positions")?
    } else {
        Vec::new()
    };
    Ok((ms, rec))
}
