//! The `#[repr(C)]` mirrors of `kernels/forest_year.cu`'s parameter structs, their size table
//! (checked against the kernel file by the tests) and the species' table built from
//! [`super::Demography`].

use cudarc::driver::{DeviceRepr, ValidAsZeroBits};

use super::{Demography, GrowthLaw};

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct FyCoarse {
    pub(super) x_min_m: f64,
    pub(super) y_max_m: f64,
    pub(super) cell_m: f64,
    pub(super) cols_f: f64,
    pub(super) rows_f: f64,
    pub(super) cols: u64,
    pub(super) n_cells: u64,
    pub(super) pad: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct FySpecies {
    pub(super) sapling_dbh_cm: f64,
    pub(super) adult_dbh_cm: f64,
    pub(super) annual: [f64; 3],
    pub(super) per_neighbour: [f64; 3],
    pub(super) g0: [f64; 3],
    pub(super) g1: [f64; 3],
    pub(super) g2: [f64; 3],
    pub(super) growth_kind: [u32; 3],
    pub(super) pad: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct FyCells {
    pub(super) coarse: FyCoarse,
    pub(super) x_min_m: f64,
    pub(super) y_max_m: f64,
    pub(super) cell_m: f64,
    pub(super) area: f64,
    pub(super) keep: [f64; 4],
    pub(super) tail: [f64; 2],
    pub(super) rain: f64,
    pub(super) dist_a: f64,
    pub(super) p_est: f64,
    pub(super) seedling_dbh_cm: f64,
    pub(super) cols: u64,
    pub(super) n_cells: u64,
    pub(super) key0: u32,
    pub(super) key1: u32,
    pub(super) year: u32,
    pub(super) species: u32,
    pub(super) dist_kind: u32,
    pub(super) has_map0: u32,
    pub(super) has_map1: u32,
    pub(super) has_landing: u32,
    pub(super) has_rain: u32,
    pub(super) has_suit: u32,
    pub(super) max_gap_density: u32,
    pub(super) pad: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct FySurvive {
    pub(super) coarse: FyCoarse,
    pub(super) n: u64,
    pub(super) existing: u64,
    pub(super) key0: u32,
    pub(super) key1: u32,
    pub(super) year: u32,
    pub(super) pad: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct FyCensus {
    pub(super) x0: f64,
    pub(super) x1: f64,
    pub(super) y0: f64,
    pub(super) y1: f64,
    pub(super) min_dbh_cm: f64,
    pub(super) n: u64,
    pub(super) s: u32,
    pub(super) pad: u32,
}

// SAFETY (all five): #[repr(C)] plain-old-data of f64, u64 and u32 fields in the order and with
// the sizes of their C mirrors in forest_year.cu (FyCoarse 64, FySpecies 152, FyCells 240,
// FySurvive 96, FyCensus 56 bytes, checked by GF_CHECK_SIZE there and by the unit test here), no
// implicit padding (each u32 run has an even length or ends the struct with an explicit pad).
unsafe impl DeviceRepr for FyCoarse {}
unsafe impl DeviceRepr for FySpecies {}
unsafe impl DeviceRepr for FyCells {}
unsafe impl DeviceRepr for FySurvive {}
unsafe impl DeviceRepr for FyCensus {}
// SAFETY: all-zero bits are a valid value of each (zeros and 0.0).
unsafe impl ValidAsZeroBits for FySpecies {}

/// (Rust name, C name, size in bytes) of the year's parameter structs.
pub const YEAR_STRUCTS: &[(&str, &str, usize)] = &[
    ("FyCoarse", "FyCoarse", 64),
    ("FySpecies", "FySpecies", 152),
    ("FyCells", "FyCells", 240),
    ("FySurvive", "FySurvive", 96),
    ("FyCensus", "FyCensus", 56),
];

/// The sizes of the Rust mirrors, for the test against [`YEAR_STRUCTS`].
pub fn year_struct_sizes() -> [usize; 5] {
    [
        std::mem::size_of::<FyCoarse>(),
        std::mem::size_of::<FySpecies>(),
        std::mem::size_of::<FyCells>(),
        std::mem::size_of::<FySurvive>(),
        std::mem::size_of::<FyCensus>(),
    ]
}

/// Kernels whose few spilled bytes (sm_80) the compile tests accept: forest_cells and
/// forest_place inline the whole random-number library (Poisson, gamma, binomial), and a few
/// bytes of local memory cost nothing next to their Philox blocks and polynomials.
pub const SPILLS_ALLOWED: &[&str] = &["forest_cells", "forest_place"];

/// The kernels of the year (for `Gpu::prepare`).
pub const YEAR_KERNELS: &[&str] = &[
    "forest_occupancy",
    "forest_cells",
    "forest_place",
    "forest_block_sums",
    "forest_block_scan",
    "forest_survive",
    "forest_select",
    "forest_compact",
    "forest_census",
];

pub(super) fn fy_species(d: &Demography) -> FySpecies {
    let mut s = FySpecies {
        sapling_dbh_cm: d.sapling_dbh_cm,
        adult_dbh_cm: d.adult_dbh_cm,
        annual: d.annual,
        per_neighbour: d.per_neighbour,
        ..FySpecies::default()
    };
    for (k, g) in d.growth.iter().enumerate() {
        match *g {
            GrowthLaw::ConstantRadial { radial_mm_per_yr } => {
                s.growth_kind[k] = 0;
                s.g0[k] = radial_mm_per_yr;
            }
            GrowthLaw::SizeDependent {
                max_cm_per_yr,
                peak_dbh_cm,
                min_cm_per_yr,
            } => {
                s.growth_kind[k] = 1;
                s.g0[k] = max_cm_per_yr;
                s.g1[k] = peak_dbh_cm;
                s.g2[k] = min_cm_per_yr;
            }
        }
    }
    s
}
