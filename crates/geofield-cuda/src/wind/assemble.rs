//! Sherman's problem assembled on the device from the grid: the host uploads the face
//! coefficients, the layers, the ground layer of each column and the first guess's divergence
//! (about half the bytes of a finished hierarchy), and the device forms the finest f64
//! operator, 1/V and b', then every coarser level and their f32 copies. The arithmetic is
//! geofield's `Level::finest`, `Level::coarsen` and `Problem::new`, in the same order.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, PushKernelArg};

use super::coarsening;
use super::hierarchy::{Hierarchy, LevelOp};
use super::params::WindParams;
use super::sherman::{CycleShape, FineOp, GpuSherman};
use super::{MODULE, cfg_1d, check_dims, check_finite, launch_err};
use crate::context::Gpu;
use crate::error::{CudaError, invalid};

pub(super) const K: &str = "wind_assemble";

/// Device bytes per finest cell of an assembled problem: the f64 finest operator, 1/V and b'
/// (48), the solver's f64 vectors x, r, p, Ap (32), the f32 levels' operators, vectors and
/// Thomas factors (36 × 4/3), the f64 coarse faces alive during the assembly (~10) and the cut
/// cells' volume fractions (8).
pub const SHERMAN_BYTES_PER_CELL: f64 = 148.0;

/// Sherman's problem as the grid describes it, in the device layout ([k][row][col]; x faces
/// [k][row][col+1], y faces [k][row+1][col] with face r the north edge of row r, z faces
/// [k][row][col] for k ≤ nz with face k the bottom of layer k).
#[derive(Clone, Copy, Debug)]
pub struct ShermanGrid<'a> {
    pub rows: usize,
    pub cols: usize,
    pub nz: usize,
    /// Horizontal cell size (m).
    pub dx_m: f64,
    /// Layer thicknesses (m), `nz`.
    pub dz_m: &'a [f64],
    /// Distance between the centres either side of each z face (m), `nz + 1`.
    pub dzc_m: &'a [f64],
    /// Face coefficients: T on x and y faces, α²T on z faces (0 closes a face).
    pub cu: &'a [f64],
    pub cv: &'a [f64],
    pub cw: &'a [f64],
    /// First fluid layer of each column, `rows × cols`.
    pub ground_k: &'a [u32],
    /// Divergence of the first guess per cell (s⁻¹).
    pub div0: &'a [f64],
    /// Cut cells: the fraction of each cell's volume V by which its flux imbalance is divided
    /// (geofield's `WindGrid::div_fraction`), cell order; `None`: whole cells.
    pub vol_frac: Option<&'a [f64]>,
}

fn check(g: &ShermanGrid) -> Result<usize, CudaError> {
    let (rows, cols, nz) = (g.rows, g.cols, g.nz);
    let n = check_dims(K, rows, cols, nz)?;
    if !(g.dx_m.is_finite() && g.dx_m > 0.0) {
        return Err(invalid(K, format!("cell size {} m", g.dx_m)));
    }
    check_finite(K, "dz", g.dz_m, nz)?;
    check_finite(K, "dzc", g.dzc_m, nz + 1)?;
    if let Some(d) = g.dz_m.iter().chain(&g.dzc_m[1..]).find(|&&d| d <= 0.0) {
        return Err(invalid(K, format!("non-positive layer distance {d} m")));
    }
    check_finite(K, "cu", g.cu, nz * rows * (cols + 1))?;
    check_finite(K, "cv", g.cv, nz * (rows + 1) * cols)?;
    check_finite(K, "cw", g.cw, (nz + 1) * rows * cols)?;
    check_finite(K, "div0", g.div0, n)?;
    if let Some(f) = g.vol_frac {
        check_finite(K, "vol_frac", f, n)?;
        if let Some(x) = f.iter().find(|&&x| x <= 0.0) {
            return Err(invalid(K, format!("non-positive volume fraction {x}")));
        }
    }
    if g.ground_k.len() != rows * cols {
        return Err(invalid(
            K,
            format!(
                "ground_k has {} values, expected {}",
                g.ground_k.len(),
                rows * cols
            ),
        ));
    }
    Ok(n)
}

/// One level's f64 faces and diagonal on the device.
pub(super) struct Faces64 {
    pub(super) kx: CudaSlice<f64>,
    pub(super) ky: CudaSlice<f64>,
    pub(super) kz: CudaSlice<f64>,
    pub(super) diag: CudaSlice<f64>,
}

/// The rows of a level that a (band's) coarsening covers: every row's height on the whole
/// level (in finest rows) and the band's first row and row count there. The y faces' factors
/// are the whole level's, so a band's edge faces inside the domain coarsen as interior faces.
#[derive(Clone, Debug)]
pub(super) struct RowBand {
    pub(super) all_w: Vec<u32>,
    pub(super) first: usize,
    pub(super) rows: usize,
}

impl RowBand {
    fn whole(rows: usize) -> Self {
        Self {
            all_w: vec![1; rows],
            first: 0,
            rows,
        }
    }

    /// The next coarser level's rows and the band's y-face factors (its rows + 1 faces).
    pub(super) fn coarsen(&self) -> (Self, Vec<f64>) {
        let all_w = coarsening::coarse_widths(&self.all_w);
        let factors = coarsening::face_factors(&self.all_w, &all_w);
        let (first, rows) = (self.first / 2, coarsening::coarse_count(self.rows));
        let fy = factors[first..=first + rows].to_vec();
        (Self { all_w, first, rows }, fy)
    }
}

/// Launches `wind_coarsen_f64` in `modes` from the fine faces (`fine_rows` × `fine_cols`) into
/// `c` (`rows` × `cols`).
#[allow(clippy::too_many_arguments)]
pub(super) fn coarsen_modes(
    gpu: &Gpu,
    nz: usize,
    (fine_rows, fine_cols): (usize, usize),
    (rc, cc): (usize, usize),
    (fx, fy): (&CudaSlice<f64>, &CudaSlice<f64>),
    (fkx, fky, fkz): (&CudaSlice<f64>, &CudaSlice<f64>, &CudaSlice<f64>),
    c: &mut Faces64,
    modes: std::ops::Range<usize>,
) -> Result<(), CudaError> {
    let coarsen = gpu.function(MODULE, "wind_coarsen_f64")?;
    let counts = [
        nz * rc * (cc + 1),
        nz * (rc + 1) * cc,
        (nz + 1) * rc * cc,
        nz * rc * cc,
    ];
    for mode in modes {
        let count = counts[mode];
        let p = WindParams {
            crows: rc as u32,
            ccols: cc as u32,
            mode: mode as u32,
            n: count as u32,
            ..WindParams::level(fine_rows, fine_cols, nz, 0.0)
        };
        let mut lb = gpu.stream().launch_builder(&coarsen);
        lb.arg(&p)
            .arg(fx)
            .arg(fy)
            .arg(fkx)
            .arg(fky)
            .arg(fkz)
            .arg(&mut c.kx)
            .arg(&mut c.ky)
            .arg(&mut c.kz)
            .arg(&mut c.diag);
        // SAFETY: wind_coarsen_f64(WindParams, const double* fx, fy, fkx, fky, fkz, double* ckx,
        // cky, ckz, cdiag): item i < the mode's count (the length of the coarse array it
        // writes, allocated by the caller for rc × cc × nz) reads fx[ic ≤ cc] (cc + 1 values)
        // or fy[jr ≤ rc] (rc + 1), the fine faces of its children (rows < fine_rows, cols <
        // fine_cols: coarsening::children of rc = coarse_count(fine_rows), cc =
        // coarse_count(fine_cols), inside the fine arrays) or, for the diagonal (mode 3), the
        // coarse faces written by the earlier modes on the same stream (or given whole), and
        // writes only its own item.
        unsafe { lb.launch(cfg_1d(count)) }.map_err(launch_err("wind_coarsen_f64"))?;
    }
    Ok(())
}

fn faces64(gpu: &Gpu, nz: usize, rc: usize, cc: usize) -> Result<Faces64, CudaError> {
    Ok(Faces64 {
        kx: gpu.zeros::<f64>(nz * rc * (cc + 1), "coarse x conductances")?,
        ky: gpu.zeros::<f64>(nz * (rc + 1) * cc, "coarse y conductances")?,
        kz: gpu.zeros::<f64>((nz + 1) * rc * cc, "coarse z conductances")?,
        diag: gpu.zeros::<f64>(nz * rc * cc, "coarse diagonal")?,
    })
}

/// The coarser levels of (a band of) a level in f64 (the CPU's arithmetic), each kept only
/// until the next is built: `steps` of them (`None`: down to at most 2 × 2 columns of the
/// whole level). Returns their f32 operators and the last level's f64 faces.
pub(super) fn coarsen_levels(
    gpu: &Gpu,
    nz: usize,
    (kx, ky, kz): (&CudaSlice<f64>, &CudaSlice<f64>, &CudaSlice<f64>),
    mut rows: RowBand,
    mut col_w: Vec<u32>,
    steps: Option<usize>,
) -> Result<(Vec<LevelOp>, Option<Faces64>), CudaError> {
    let mut ops = Vec::new();
    let mut prev: Option<Faces64> = None;
    let mut fc = col_w.len();
    let mut done = 0;
    while match steps {
        Some(n) => done < n,
        None => rows.all_w.len().max(col_w.len()) > 2,
    } {
        let (next, fy) = rows.coarsen();
        let ccol_w = coarsening::coarse_widths(&col_w);
        let (rc, cc) = (next.rows, ccol_w.len());
        let fx = gpu.upload(
            &coarsening::face_factors(&col_w, &ccol_w),
            "coarse x-face factors",
        )?;
        let fy = gpu.upload(&fy, "coarse y-face factors")?;
        let mut c = faces64(gpu, nz, rc, cc)?;
        let fine = match &prev {
            Some(p) => (&p.kx, &p.ky, &p.kz),
            None => (kx, ky, kz),
        };
        coarsen_modes(
            gpu,
            nz,
            (rows.rows, fc),
            (rc, cc),
            (&fx, &fy),
            fine,
            &mut c,
            0..4,
        )?;
        ops.push(to_f32_op(gpu, nz, &c.kx, &c.ky, &c.kz, &c.diag, rc, cc)?);
        prev = Some(c);
        fc = cc;
        rows = next;
        col_w = ccol_w;
        done += 1;
    }
    Ok((ops, prev))
}

impl GpuSherman {
    /// Checks `grid`, uploads it and assembles the problem and its hierarchy (levels down to
    /// at most 2 × 2 columns, as geofield's `Problem::new`) on the device.
    pub fn assemble(
        gpu: &Arc<Gpu>,
        grid: &ShermanGrid,
        shape: CycleShape,
    ) -> Result<Self, CudaError> {
        let _held = gpu.hold();
        let fine = Self::finest(gpu, grid, shape)?;
        let (rows, cols, nz) = (grid.rows, grid.cols, grid.nz);
        let mut ops = vec![to_f32_op(
            gpu, nz, &fine.kx, &fine.ky, &fine.kz, &fine.diag, rows, cols,
        )?];
        let (coarse, _) = coarsen_levels(
            gpu,
            nz,
            (&fine.kx, &fine.ky, &fine.kz),
            RowBand::whole(rows),
            vec![1; cols],
            None,
        )?;
        ops.extend(coarse);
        let mg = Hierarchy::from_device(gpu, ops, shape)?;
        Self::from_device(gpu, fine, mg)
    }

    /// Checks and uploads `grid` and assembles its finest f64 operator, 1/V and b'.
    pub(super) fn finest(
        gpu: &Gpu,
        grid: &ShermanGrid,
        shape: CycleShape,
    ) -> Result<FineOp, CudaError> {
        let n = check(grid)?;
        if shape.coarsest_sweeps > u32::MAX as usize {
            return Err(invalid(K, "too many coarsest sweeps"));
        }
        let (rows, cols, nz) = (grid.rows, grid.cols, grid.nz);
        gpu.ensure_free(
            &format!("Sherman's problem on {rows} × {cols} × {nz} cells"),
            (SHERMAN_BYTES_PER_CELL * n as f64) as u64,
        )?;
        let mut fine = FineOp {
            rows,
            cols,
            nz,
            kx: gpu.upload(grid.cu, "the x-face coefficients")?,
            ky: gpu.upload(grid.cv, "the y-face coefficients")?,
            kz: gpu.upload(grid.cw, "the z-face coefficients")?,
            diag: gpu.zeros::<f64>(n, "the diagonal")?,
            b: gpu.upload(grid.div0, "the first guess's divergence")?,
            inv_vol: gpu.zeros::<f64>(n, "the inverse volumes")?,
        };
        let dz = gpu.upload(grid.dz_m, "the layer thicknesses")?;
        let dzc = gpu.upload(grid.dzc_m, "the distances between layer centres")?;
        let ground = gpu.upload(grid.ground_k, "the ground layers")?;
        // Whole cells: a one-value placeholder the kernel does not read (slot = 0).
        let frac = gpu.upload(grid.vol_frac.unwrap_or(&[1.0]), "the volume fractions")?;
        let has_frac = u32::from(grid.vol_frac.is_some());
        let f = gpu.function(MODULE, "wind_assemble_f64")?;
        let counts = [
            nz * rows * (cols + 1),
            nz * (rows + 1) * cols,
            (nz + 1) * rows * cols,
            n,
        ];
        for (mode, &count) in counts.iter().enumerate() {
            let p = WindParams {
                mode: mode as u32,
                n: count as u32,
                slot: has_frac,
                ..WindParams::level(rows, cols, nz, 0.0)
            };
            let mut lb = gpu.stream().launch_builder(&f);
            lb.arg(&p)
                .arg(&grid.dx_m)
                .arg(&dz)
                .arg(&dzc)
                .arg(&ground)
                .arg(&frac)
                .arg(&mut fine.kx)
                .arg(&mut fine.ky)
                .arg(&mut fine.kz)
                .arg(&mut fine.diag)
                .arg(&mut fine.inv_vol)
                .arg(&mut fine.b);
            // SAFETY: wind_assemble_f64(WindParams, double dx, const double* dz, dzc, const u32*
            // ground, const double* frac, double* kx, ky, kz, diag, inv_vol, b): item i < n = the
            // mode's count (the length of the array it writes, checked above) reads dz[k < nz]
            // (x, y faces and cells), dzc[k ≤ nz] (z faces), ground[rc < rows·cols], frac[i]
            // only when slot = 1 (then frac holds n values, checked above) and the faces of
            // cell i (mode 3, inside kx, ky, kz), and writes only its own item.
            unsafe { lb.launch(cfg_1d(count)) }.map_err(launch_err("wind_assemble_f64"))?;
        }
        Ok(fine)
    }
}

/// The f32 copy of a level's operator (wind_to_f32 on each array).
#[allow(clippy::too_many_arguments)]
pub(super) fn to_f32_op(
    gpu: &Gpu,
    nz: usize,
    kx: &CudaSlice<f64>,
    ky: &CudaSlice<f64>,
    kz: &CudaSlice<f64>,
    diag: &CudaSlice<f64>,
    rows: usize,
    cols: usize,
) -> Result<LevelOp, CudaError> {
    let f = gpu.function(MODULE, "wind_to_f32")?;
    let conv = |src: &CudaSlice<f64>, len: usize, what: &str| {
        let mut dst = gpu.zeros::<f32>(len, what)?;
        let p = WindParams {
            n: len as u32,
            ..Default::default()
        };
        let mut lb = gpu.stream().launch_builder(&f);
        lb.arg(&p).arg(src).arg(&mut dst);
        // SAFETY: wind_to_f32(WindParams, const double* r, float* b32): i < n = len reads src[i]
        // (src holds len values: the level's array of that kind) and writes dst[i] (len floats).
        unsafe { lb.launch(cfg_1d(len)) }.map_err(launch_err("wind_to_f32"))?;
        Ok::<_, CudaError>(dst)
    };
    Ok(LevelOp {
        rows,
        cols,
        nz,
        kx: conv(kx, nz * rows * (cols + 1), "f32 x conductances")?,
        ky: conv(ky, nz * (rows + 1) * cols, "f32 y conductances")?,
        kz: conv(kz, (nz + 1) * rows * cols, "f32 z conductances")?,
        diag: conv(diag, nz * rows * cols, "f32 diagonal")?,
    })
}
