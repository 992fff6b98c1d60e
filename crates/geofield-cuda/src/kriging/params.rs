//! `#[repr(C)]` parameter structs of `kernels/kriging.cu` (sizes checked on both sides).

use cudarc::driver::DeviceRepr;

use super::NodeGrid;

/// C `KrGrid` (64 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GridParams {
    pub ox: f64,
    pub oy: f64,
    pub cx: f64,
    pub cy: f64,
    pub rx: f64,
    pub ry: f64,
    pub rows: u32,
    pub cols: u32,
    pub row0: u32,
    pub pad: u32,
}

impl GridParams {
    pub(crate) fn from_grid(g: &NodeGrid) -> Self {
        GridParams {
            ox: g.origin[0],
            oy: g.origin[1],
            cx: g.col_step[0],
            cy: g.col_step[1],
            rx: g.row_step[0],
            ry: g.row_step[1],
            rows: g.rows as u32,
            cols: g.cols as u32,
            row0: g.row0 as u32,
            pad: 0,
        }
    }
}

/// C `KrDualParams` (128 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DualParams {
    pub grid: GridParams,
    pub drift_scale: f64,
    pub n_nodes: u64,
    pub n: u32,
    pub h: u32,
    pub p: u32,
    pub pad0: u32,
    pub k1: f64,
    pub eps2: f64,
    pub czero: f64,
    pub alpha_scale: f64,
}

/// C `KrVarParams` (384 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VarParams {
    pub grid: GridParams,
    pub drift_scale: f64,
    pub j0: u64,
    pub m: u32,
    pub n: u32,
    pub p: u32,
    pub ldw: u32,
    pub rinv: [f64; 36],
}

/// C `KrNodesParams` (80 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct NodesParams {
    pub grid: GridParams,
    pub j0: u64,
    pub m: u32,
    pub pad0: u32,
}

/// C `KrLocalParams` (120 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LocalParams {
    pub grid: GridParams,
    pub drift_scale: f64,
    pub j0: u64,
    pub n_nodes: u64,
    pub m: u32,
    pub k: u32,
    pub n: u32,
    pub h: u32,
    pub p: u32,
    pub want_var: u32,
    pub region: u32,
    pub pad0: u32,
}

/// C `KrSupportArgs` (32 bytes): device pointers (block points, the samples' and the nodes'
/// drift terms; 0 where the count says they are not read).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SupportArgs {
    pub boff: u64,
    pub sdrift: u64,
    pub fnode: u64,
    pub nb: u32,
    pub fstride: u32,
}

/// C `KrPaperParams` (88 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PaperParams {
    pub grid: GridParams,
    pub n_nodes: u64,
    pub n: u32,
    pub h: u32,
    pub mode: u32,
    pub surface: u32,
}

// SAFETY: all are #[repr(C)] plain old data (integers, floats and arrays of them) whose layouts
// match the C mirrors; sizes are checked on both sides (GF_CHECK_SIZE and PARAM_SIZES' test).
unsafe impl DeviceRepr for GridParams {}
// SAFETY: as above.
unsafe impl DeviceRepr for DualParams {}
// SAFETY: as above.
unsafe impl DeviceRepr for VarParams {}
// SAFETY: as above.
unsafe impl DeviceRepr for NodesParams {}
// SAFETY: as above.
unsafe impl DeviceRepr for LocalParams {}
// SAFETY: as above.
unsafe impl DeviceRepr for PaperParams {}
// SAFETY: as above (the pointers are plain 64-bit device addresses).
unsafe impl DeviceRepr for SupportArgs {}

/// (C name, Rust size, size the C side asserts).
pub const PARAM_SIZES: &[(&str, usize, usize)] = &[
    (
        "KrStructure",
        std::mem::size_of::<super::StructureParams>(),
        104,
    ),
    ("KrCov", std::mem::size_of::<super::CovParams>(), 464),
    ("KrGrid", std::mem::size_of::<GridParams>(), 64),
    ("KrDualParams", std::mem::size_of::<DualParams>(), 128),
    ("KrVarParams", std::mem::size_of::<VarParams>(), 384),
    ("KrNodesParams", std::mem::size_of::<NodesParams>(), 80),
    ("KrLocalParams", std::mem::size_of::<LocalParams>(), 120),
    ("KrPaperParams", std::mem::size_of::<PaperParams>(), 88),
    ("KrSupportArgs", std::mem::size_of::<SupportArgs>(), 32),
    ("KrPtsParams", std::mem::size_of::<super::PtsParams>(), 24),
];
