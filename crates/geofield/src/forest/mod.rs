//! Forest dynamics: the seed paper's yearly loop with SORTIE-ND's seed placement (issue 17).
//!
//! Built so far:
//!
//! - [`rng`]: the random numbers every sub-model draws, from a counter-based generator, so that a
//!   draw depends only on (run seed, year, species, cell or tree, purpose, draw index) and a run is
//!   the same for any thread count and on the CPU and the GPU (Philox4x32-10 is also cuRAND's and
//!   is a few integer multiplications in a kernel);
//! - [`per_seed`]: SORTIE-ND's spatial disperse, every seed drawn (exact distance laws,
//!   tabulated) and counted in its cell;
//! - [`seed_counts`]: SORTIE-ND's seed distribution methods applied to the expected map's cells;
//! - [`fecundity`]: seed production with masting (groups, the masting CDF, STR laws, the trees
//!   taking part);
//! - [`rain`]: non-spatial seed rain (intercept + slope × basal area).
//!
//! To come, each in its own file with its equations and the SORTIE-ND behaviour it stands for:
//! gap and canopy kernels, establishment,
//! growth, mortality and stage transitions, the SORTIE-ND parameter file, and `geofield forest`.

pub mod demography;
pub mod establishment;
pub mod experiment;
pub mod fecundity;
#[cfg(feature = "io")]
pub mod output;
pub mod params;
pub mod per_seed;
pub mod rain;
pub mod rng;
pub mod seed_counts;
pub mod simulate;
#[cfg(feature = "io")]
pub mod sortie;
#[cfg(feature = "io")]
pub mod species_file;
pub mod trees;
