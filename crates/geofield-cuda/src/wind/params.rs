//! The `#[repr(C)]` parameter block of `kernels/wind.cu` (size checked on both sides).

use cudarc::driver::DeviceRepr;

/// C `WindParams` (80 bytes): one block for every wind kernel; a kernel ignores the fields it
/// does not use.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WindParams {
    pub rows: u32,
    pub cols: u32,
    pub nz: u32,
    /// Active colour of a sweep (0 or 1).
    pub colour: u32,
    /// Coarse level's rows and columns (restriction, prolongation).
    pub crows: u32,
    pub ccols: u32,
    /// Scalar slots a kernel reads or writes.
    pub slot: u32,
    pub slot2: u32,
    /// Elements a 1-D kernel covers (cells of the level, or of the coarse level).
    pub n: u32,
    /// Kernel mode (`WIND_OP_*`, `WIND_DIR_*`).
    pub mode: u32,
    /// Sweeps of the coarsest-level kernel.
    pub sweeps: u32,
    /// Partials the final reduction combines.
    pub parts: u32,
    /// 1/Δx (1/m) and ω for the f32 kernels.
    pub inv_dx_f: f32,
    pub omega_f: f32,
    /// A band's halo rows (the split solve): bit 0 north, bit 1 south ([`HALO_NORTH`],
    /// [`HALO_SOUTH`]); 0 on the whole domain.
    pub halo: u32,
    pub pad1: u32,
    /// 1/Δx (1/m) and ω for the f64 kernels.
    pub inv_dx: f64,
    pub omega: f64,
}

impl WindParams {
    /// A level of `rows × cols × nz` cells with 1/Δx = `inv_dx`.
    pub(crate) fn level(rows: usize, cols: usize, nz: usize, inv_dx: f64) -> Self {
        // The constructors of the device objects checked that every count fits in u32.
        WindParams {
            rows: rows as u32,
            cols: cols as u32,
            nz: nz as u32,
            n: (rows * cols * nz) as u32,
            inv_dx_f: inv_dx as f32,
            inv_dx,
            ..Default::default()
        }
    }
}

/// `WindParams::halo`: the band has a halo row north of its row 0.
pub const HALO_NORTH: u32 = 1;
/// `WindParams::halo`: the band has a halo row south of its last row.
pub const HALO_SOUTH: u32 = 2;

/// `wind_op_f64`: out = A'x, partial Σ x·out.
pub(crate) const OP_APPLY_DOT: u32 = 0;
/// `wind_op_f64`: out = b − A'x, partial max |out / V|.
pub(crate) const OP_RESID_MAX: u32 = 1;
/// `wind_cg_dir_f64`: p = z + βp.
pub(crate) const DIR_NEXT: u32 = 0;
/// `wind_cg_dir_f64`: p = z.
pub(crate) const DIR_RESTART: u32 = 1;

// SAFETY: #[repr(C)] plain old data (u32, f32 and f64 fields, no implicit padding: 12 u32 + 2 f32
// + 2 u32 = 64 bytes, then two 8-aligned f64) whose layout matches the C mirror; the size is
// checked on both sides (GF_CHECK_SIZE and PARAM_SIZES' test).
unsafe impl DeviceRepr for WindParams {}

/// (C name, Rust size, size the C side asserts).
pub const PARAM_SIZES: &[(&str, usize, usize)] =
    &[("WindParams", std::mem::size_of::<WindParams>(), 80)];
