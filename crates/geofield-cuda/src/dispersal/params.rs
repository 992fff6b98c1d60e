//! Kernel parameter structs (`#[repr(C)]`, mirrored in `kernels/dispersal.cu`, sizes checked on
//! both sides) and the host-side constants of each kernel shape.

use cudarc::driver::DeviceRepr;

use super::KernelShape;
use crate::error::{CudaError, invalid};

/// Parameters of `dispersal_exact_*` (C: `DispersalExactParams`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ExactParams {
    pub cell_size_m: f64,
    pub scale: f64,
    pub torus_lx_m: f64,
    pub torus_ly_m: f64,
    pub slice_stride: u64,
    pub a: f32,
    pub b: f32,
    pub cols: u32,
    pub rows: u32,
    pub n_trees: u32,
    pub trees_per_slice: u32,
    pub out_f64: u32,
    pub pad0: u32,
}

/// Parameters of `dispersal_cutoff_*` (C: `DispersalCutoffParams`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CutoffParams {
    pub cell_size_m: f64,
    pub scale: f64,
    pub tile_size_m: f64,
    pub origin_u_m: f64,
    pub origin_v_m: f64,
    pub visit_radius_m: f64,
    pub a: f32,
    pub b: f32,
    pub cut2: f32,
    pub cols: u32,
    pub rows: u32,
    pub tiles_x: u32,
    pub tiles_y: u32,
    pub out_f64: u32,
    /// First grid row computed (a strip's start; `rows` is the strip's end).
    pub row_offset: u32,
    pub pad0: u32,
}

/// The near/far blend's near factor (C: `DispersalBlendParams`): t = (x − x1)·inv_w on the
/// scaled squared distance x, 1 − S_n(t) = (1 − t)ⁿ Σ_k c_k tᵏ.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BlendParams {
    pub x1: f32,
    pub inv_w: f32,
    pub order: u32,
    pub pad0: u32,
    pub c: [f32; 8],
}

/// The near/far far field's lattice and kernel (C: `DispersalFarParams`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FarParams {
    pub origin_u_m: f64,
    pub origin_v_m: f64,
    pub hx_m: f64,
    pub hy_m: f64,
    pub cell_size_m: f64,
    pub shift_m: f64,
    pub r1sq: f64,
    pub r2sq: f64,
    pub ka: f64,
    pub kb: f64,
    pub c: [f64; 8],
    pub nx: u32,
    pub ny: u32,
    pub px: u32,
    pub py: u32,
    pub order: u32,
    pub periodic: u32,
    pub shape: u32,
    pub cols: u32,
    pub rows: u32,
    pub n_trees: u32,
    pub table_len: u32,
    pub pad0: u32,
    pub inv_hx: f64,
    pub inv_hy: f64,
}

/// Most pyramid levels the multires kernel takes (K <= 15: node indices stay below 2^32).
pub const MULTIRES_MAX_LEVELS: usize = 16;

/// Parameters of `dispersal_multires` (C: `DispersalMultiresParams`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MultiresParams {
    pub cell_size_m: f64,
    pub scale2: f32,
    pub a: f32,
    pub b: f32,
    pub shape: u32,
    pub cols: u32,
    pub rows: u32,
    pub levels: u32,
    pub out_f64: u32,
    pub level_offset: [u32; MULTIRES_MAX_LEVELS],
    pub rho_m: [f32; MULTIRES_MAX_LEVELS],
}

/// Parameters of `dispersal_finalize` (C: `DispersalFinalizeParams`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FinalizeParams {
    pub n_cells: u64,
    pub slices: u32,
    pub out_f64: u32,
}

/// (Rust type, C struct name, size in bytes): the C side asserts the same sizes with
/// `GF_CHECK_SIZE(name, size)`; a unit test checks that the two lists agree.
pub const PARAM_STRUCTS: &[(&str, &str, usize)] = &[
    ("ExactParams", "DispersalExactParams", 72),
    ("CutoffParams", "DispersalCutoffParams", 88),
    ("MultiresParams", "DispersalMultiresParams", 168),
    ("FinalizeParams", "DispersalFinalizeParams", 16),
    ("BlendParams", "DispersalBlendParams", 48),
    ("FarParams", "DispersalFarParams", 208),
];

const _: () = assert!(std::mem::size_of::<ExactParams>() == 72);
const _: () = assert!(std::mem::size_of::<CutoffParams>() == 88);
const _: () = assert!(std::mem::size_of::<MultiresParams>() == 168);
const _: () = assert!(std::mem::size_of::<FinalizeParams>() == 16);
const _: () = assert!(std::mem::size_of::<BlendParams>() == 48);
const _: () = assert!(std::mem::size_of::<FarParams>() == 208);

// SAFETY (all six): #[repr(C)] structs of plain f64/f32/u64/u32 fields (no pointers, no
// padding holes: sizes are the sums of the fields, asserted above and by the C static_asserts),
// field for field the C structs the kernels take by value.
unsafe impl DeviceRepr for ExactParams {}
unsafe impl DeviceRepr for CutoffParams {}
unsafe impl DeviceRepr for MultiresParams {}
unsafe impl DeviceRepr for FinalizeParams {}
unsafe impl DeviceRepr for BlendParams {}
unsafe impl DeviceRepr for FarParams {}

/// The host constants of a kernel shape (see `common.cuh`): kernels evaluate
/// K from x = (s r)^2 with the shape-specific formula `id`, using constants `a`, `b`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ShapeConsts {
    /// `GfShapeId` in common.cuh.
    pub id: u32,
    /// Kernel-name suffix: w3, w2, w1, wgen, logn, t1, tgen.
    pub tag: &'static str,
    /// Coordinate scale s (1/m).
    pub scale: f64,
    pub a: f32,
    pub b: f32,
}

const LOG2_E: f64 = std::f64::consts::LOG2_E;

fn positive(kernel: &'static str, what: &str, x: f64) -> Result<f64, CudaError> {
    if x.is_finite() && x > 0.0 {
        Ok(x)
    } else {
        Err(invalid(
            kernel,
            format!("{what} must be finite and > 0, got {x}"),
        ))
    }
}

impl ShapeConsts {
    /// Validates the shape's parameters and derives its constants.
    pub fn new(shape: &KernelShape, kernel: &'static str) -> Result<ShapeConsts, CudaError> {
        let c = match *shape {
            KernelShape::Weibull { d, theta } => {
                let d = positive(kernel, "Weibull D", d)?;
                let theta = positive(kernel, "Weibull theta", theta)?;
                let scale = (d * LOG2_E).powf(1.0 / theta);
                let (id, tag) = if theta == 3.0 {
                    (0, "w3")
                } else if theta == 2.0 {
                    (1, "w2")
                } else if theta == 1.0 {
                    (2, "w1")
                } else {
                    (3, "wgen")
                };
                ShapeConsts {
                    id,
                    tag,
                    scale,
                    a: 0.0,
                    b: (theta / 2.0) as f32,
                }
            }
            KernelShape::Lognormal { x0, xb } => {
                let x0 = positive(kernel, "lognormal X0", x0)?;
                let xb = positive(kernel, "lognormal Xb", xb)?;
                let a = (std::f64::consts::LN_2 / (8.0 * xb * xb)).sqrt();
                ShapeConsts {
                    id: 4,
                    tag: "logn",
                    scale: 1.0 / x0,
                    a: a as f32,
                    b: 0.0,
                }
            }
            KernelShape::TwoDt { u, p } => {
                let u = positive(kernel, "2Dt u", u)?;
                let p = positive(kernel, "2Dt p", p)?;
                let scale = 1.0 / u.sqrt();
                if p == 1.0 {
                    ShapeConsts {
                        id: 5,
                        tag: "t1",
                        scale,
                        a: 2.0,
                        b: 0.0,
                    }
                } else {
                    ShapeConsts {
                        id: 6,
                        tag: "tgen",
                        scale,
                        a: (p + 1.0) as f32,
                        b: 0.0,
                    }
                }
            }
        };
        let ok = c.scale.is_normal()
            && c.a.is_finite()
            && c.b.is_finite()
            && (c.scale as f32).is_normal()
            && (c.scale * c.scale) as f32 != 0.0;
        if !ok {
            return Err(invalid(
                kernel,
                format!(
                    "kernel parameters {shape:?} are outside the range f32 kernels can evaluate"
                ),
            ));
        }
        Ok(c)
    }

    /// What the kernels compute for x = (s r)^2, in f64 (the same formulas, exact arithmetic):
    /// used by tests to check the constants against [`KernelShape::eval`].
    pub fn eval_scaled(&self, x: f64) -> f64 {
        let (a, b) = (f64::from(self.a), f64::from(self.b));
        match self.id {
            0 => (-(x * x.sqrt())).exp2(),
            1 => (-x).exp2(),
            2 => (-x.sqrt()).exp2(),
            3 => {
                if x > 0.0 {
                    (-(b * x.log2()).exp2()).exp2()
                } else {
                    1.0
                }
            }
            4 => {
                if x > 0.0 {
                    let t = a * x.log2();
                    (-(t * t)).exp2()
                } else {
                    0.0
                }
            }
            5 => 1.0 / ((1.0 + x) * (1.0 + x)),
            _ => (-(a * (1.0 + x).log2())).exp2(),
        }
    }
}

impl KernelShape {
    /// K(r) in f64, the model's definition (P6: K(0) = 1 for Weibull and 2Dt, 0 for lognormal).
    pub fn eval(&self, r_m: f64) -> f64 {
        match *self {
            KernelShape::Weibull { d, theta } => (-d * r_m.powf(theta)).exp(),
            KernelShape::Lognormal { x0, xb } => {
                if r_m > 0.0 {
                    let t = (r_m / x0).ln() / xb;
                    (-0.5 * t * t).exp()
                } else {
                    0.0
                }
            }
            KernelShape::TwoDt { u, p } => (1.0 + r_m * r_m / u).powf(-(p + 1.0)),
        }
    }
}
