//! What the device stand takes and gives: the coarse cells, the demography, the trees, the
//! grid and a year's per-cell inputs, the census.

/// The coarse cells of the gap test and the density dependence (the library's `CoarseCells`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Coarse {
    pub x_min_m: f64,
    pub y_max_m: f64,
    pub cell_m: f64,
    pub cols: usize,
    pub rows: usize,
}

/// A stage's annual diameter growth (the library's `Growth`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum GrowthLaw {
    ConstantRadial {
        radial_mm_per_yr: f64,
    },
    SizeDependent {
        max_cm_per_yr: f64,
        peak_dbh_cm: f64,
        min_cm_per_yr: f64,
    },
}

/// One species' demography: stage thresholds, and per stage (seedling, sapling, adult) the
/// mortality p = min(1, annual + per_neighbour n) and the growth.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Demography {
    pub sapling_dbh_cm: f64,
    pub adult_dbh_cm: f64,
    pub annual: [f64; 3],
    pub per_neighbour: [f64; 3],
    pub growth: [GrowthLaw; 3],
}

/// How a cell's seed count varies about its expected value (the library's `SeedDistribution`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SeedLaw {
    Deterministic,
    Poisson,
    NegativeBinomial { clumping: f64 },
    Normal { sd: f64 },
    Lognormal { sigma: f64 },
}

/// Trees on the host (struct of arrays).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HostTrees {
    pub x_m: Vec<f64>,
    pub y_m: Vec<f64>,
    pub dbh_cm: Vec<f64>,
    pub species: Vec<u32>,
    pub id: Vec<u64>,
}

/// The grid of the seed maps (row-major from the north-west).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CellGrid {
    pub x_min_m: f64,
    pub y_max_m: f64,
    pub cell_m: f64,
    pub cols: usize,
    pub rows: usize,
}

/// One species' year on the cells: see [`DeviceStand::cells`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CellYear {
    pub seed: u64,
    pub year: u32,
    pub species: u8,
    pub law: SeedLaw,
    /// Which covers' maps ([`DeviceStand::map_mut`]) hold this year's map: canopy, gap.
    pub maps: [bool; 2],
    /// The landing cover matters (the species has gap parameters).
    pub landing: bool,
    pub max_gap_density: u32,
    /// Survival of a seed from cover f landing in cover t: `keep[2 f + t]`.
    pub keep: [f64; 4],
    /// The torus' far tail of each cover's parents, seeds per m² (0: none).
    pub tail: [f64; 2],
    /// The non-spatial rain's expected seeds per cell, if the species has rain.
    pub rain: Option<f64>,
    pub establishment: f64,
    pub seedling_dbh_cm: f64,
    /// The id of the first new seedling.
    pub first_id: u64,
}

/// One species' census: trees by stage, the basal area of all its trees (m²) and that of its
/// reproductive trees inside the plot (m², the rain's).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Census {
    pub stages: [u64; 3],
    pub basal_m2: f64,
    pub reproductive_basal_m2: f64,
}
