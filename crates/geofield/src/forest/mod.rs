//! Forest dynamics: the seed paper's yearly loop with SORTIE-ND's seed placement (issue 17).
//!
//! The model, each sub-model in its own file with its equations and the SORTIE-ND behaviour it
//! stands for:
//!
//! - [`rng`]: the random numbers every sub-model draws, from a counter-based generator, so that a
//!   draw depends only on (run seed, year, species, cell or tree, purpose, draw index) and a run is
//!   the same for any thread count and on the CPU and the GPU (Philox4x32-10 is also cuRAND's and
//!   is a few integer multiplications in a kernel);
//! - [`fecundity`]: seed production with masting (groups, the masting CDF, STR laws, the trees
//!   taking part);
//! - [`per_seed`]: SORTIE-ND's spatial disperse, every seed drawn (exact distance laws,
//!   tabulated) and counted in its cell;
//! - [`seed_counts`]: SORTIE-ND's seed distribution methods applied to the expected map's cells;
//! - [`rain`]: non-spatial seed rain (intercept + slope × basal area);
//! - [`establishment`]: seeds become seedlings (binomial per cell, optional suitability);
//! - [`demography`]: growth, mortality (optionally density dependent), stage transitions;
//! - [`params`]: the parameters with units and defaults; [`trees`]: the state;
//! - [`simulate`]: the yearly loop (gap and canopy parents, dispersal by any method of
//!   [`crate::dispersal`] on the run's backend or per seed); [`experiment`]: replicates and
//!   method comparisons (the seed paper's Fig. 13); [`split`]: one stand split by rows over
//!   MPI ranks (or threads). On the GPU in expected mode the whole year
//!   runs on the device with the stand kept there (`device.rs`: what runs where).
//!
//! Files (feature `io`): [`species_file`] (the species TOML's forest tables), [`sortie`]
//! (SORTIE-ND parameter files), [`output`] (counts CSV, CF NetCDF densities, charts, GIF).

pub mod demography;
mod device;
pub mod establishment;
pub mod exact_math;
pub mod experiment;
pub mod fecundity;
mod landing;
#[cfg(feature = "io")]
pub mod output;
pub mod params;
pub mod per_seed;
mod per_seed_cuda;
pub mod rain;
pub mod rng;
pub mod seed_counts;
pub mod simulate;
#[cfg(feature = "io")]
pub mod sortie;
#[cfg(feature = "io")]
pub mod species_file;
pub mod split;
#[cfg(feature = "io")]
pub mod suitability;
pub mod trees;
