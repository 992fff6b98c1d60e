//! Seed-dispersal kernels: safe wrappers over `kernels/dispersal.cu`.
//!
//! For one species, R(c) = Σ_k w_k K(d(k, c)) at every cell centre c (seeds m⁻² yr⁻¹ when w
//! carries STR/η), with K one of
//! - Weibull / exponential power exp(−D r^θ) (D in m^−θ),
//! - lognormal exp(−½ (ln(r/X0)/Xb)²) (K(0) = 0),
//! - 2Dt (1 + r²/u)^−(p+1) (u in m²).
//!
//! Coordinates are grid-relative metres: u = x − x_min (east), v = y_max − y (south); cell
//! (row, col) has its centre at ((col + ½) h, (row + ½) h); outputs are row-major, row 0 north.
//! Each wrapper checks its inputs (errors, not panics), uploads, launches, downloads and returns
//! the output with the kernels' time in ms (CUDA events around the launches only).
//!
//! Methods: [`dispersal_exact`] (every tree to every cell, optional torus),
//! [`dispersal_cutoff`] (trees within a radius, from host-binned tiles), and
//! [`dispersal_multires`] (the quadtree approximation of Fan et al. 2012,
//! doi:10.1631/jzus.C1200147). Distances and kernel values are f32; sums are compensated
//! (f32 groups folded into Kahan pairs) and agree with an f64 sum to ~1e-6 relative. Every cell
//! is summed by one thread in a fixed order: results are bitwise reproducible on a given device.

mod check;
mod far;
mod launch;
pub mod params;
mod plan;

pub use far::{FarLattice, FarNodes, NearFarOut, dispersal_nearfar};
pub use launch::{
    CutoffStrips, dispersal_cutoff, dispersal_cutoff_blend, dispersal_cutoff_into, dispersal_exact,
    dispersal_multires,
};

/// The near/far split's blend (see `geofield::dispersal::nearfar`): pairs within R are weighted
/// by 1 − S_n(t), t = (d² − R₁²)/(R² − R₁²), S_n(t) = tⁿ Σ_k coef[k] (1 − t)ᵏ; n = coef.len() ≤ 8.
#[derive(Clone, Debug, PartialEq)]
pub struct NearBlend {
    pub inner_m: f64,
    pub outer_m: f64,
    pub coef: Vec<f64>,
}
#[doc(hidden)]
pub use plan::{Plan, plan_cutoff, plan_exact, plan_multires};

/// The dispersal kernel K(r).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum KernelShape {
    /// exp(−d r^θ); θ = 3, 2, 1 take fast paths.
    Weibull { d: f64, theta: f64 },
    /// exp(−½ (ln(r/x0)/xb)²), x0 in m.
    Lognormal { x0: f64, xb: f64 },
    /// (1 + r²/u)^−(p+1), u in m²; p = 1 takes a fast path.
    TwoDt { u: f64, p: f64 },
}

/// Precision of the downloaded output (the accumulation is the same for both).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutPrecision {
    F32,
    F64,
}

/// A downloaded output band.
#[derive(Clone, Debug, PartialEq)]
pub enum HostOut {
    F32(Vec<f32>),
    F64(Vec<f64>),
}

impl HostOut {
    pub fn len(&self) -> usize {
        match self {
            HostOut::F32(v) => v.len(),
            HostOut::F64(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The values as f64 (a copy).
    pub fn to_f64(&self) -> Vec<f64> {
        match self {
            HostOut::F32(v) => v.iter().map(|&x| f64::from(x)).collect(),
            HostOut::F64(v) => v.clone(),
        }
    }
    pub(crate) fn empty(p: OutPrecision) -> HostOut {
        match p {
            OutPrecision::F32 => HostOut::F32(Vec::new()),
            OutPrecision::F64 => HostOut::F64(Vec::new()),
        }
    }
}

/// Output grid: `cols` x `rows` cells of `cell_size_m`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GridDims {
    pub cols: u32,
    pub rows: u32,
    pub cell_size_m: f64,
}

/// Trees binned into square source tiles of side `tile_size_m` (host-built, CSR layout).
/// Tile t = ty * tiles_x + tx covers u in [origin_u + tx T, + T), v in [origin_v + ty T, + T);
/// its trees are `tile_start[t]..tile_start[t + 1]`, at (`du`, `dv`) from the tile's corner.
/// The origin may be negative (trees outside the grid count); the host keeps tile corners
/// exactly representable.
#[derive(Clone, Copy, Debug)]
pub struct TileBins<'a> {
    pub tile_size_m: f64,
    pub tiles_x: u32,
    pub tiles_y: u32,
    pub origin_u_m: f64,
    pub origin_v_m: f64,
    pub tile_start: &'a [u32],
    pub du: &'a [f32],
    pub dv: &'a [f32],
    pub w: &'a [f32],
}

/// The quadtree of Fan et al. (2012) over the grid padded to 2^K x 2^K cells from (0, 0).
/// Level q (0 = leaves = cells) has side 2^(K−q); node (i, j) of level q is at
/// `level_offset[q] + i * side + j`, holding the unweighted mean position of its trees
/// (grid-relative, m) and the sum of their weights (0 = empty). `rho_m[q]` is the opening
/// distance of level q (unused at q = 0).
#[derive(Clone, Copy, Debug)]
pub struct Pyramid<'a> {
    pub levels: u32,
    pub level_offset: &'a [u32],
    pub node_u: &'a [f32],
    pub node_v: &'a [f32],
    pub node_w: &'a [f32],
    pub rho_m: &'a [f32],
}

/// Cells per block of the exact kernel (32 x 64) and of the cutoff kernel (32 x 32); the
/// multires kernel uses 32 x 8 (one cell per thread). Must match dispersal.cu.
pub const EXACT_TILE: (u32, u32) = (32, 64);
pub const CUTOFF_TILE: (u32, u32) = (32, 32);
pub const MULTIRES_BLOCK: (u32, u32) = (32, 8);

#[cfg(test)]
mod tests;
