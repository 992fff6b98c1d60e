//! Forest dynamics: the seed paper's yearly loop with SORTIE-ND's seed placement (issue 17).
//!
//! Built so far: the random numbers every sub-model draws ([`rng`]): a counter-based generator,
//! so that a draw depends only on (run seed, year, species, cell or tree, purpose, draw index) and
//! a run is the same for any thread count and on the CPU and the GPU (Philox4x32-10 is also
//! cuRAND's and is a few integer multiplications in a kernel).
//!
//! To come, each in its own file with its equations and the SORTIE-ND behaviour it stands for:
//! seed production and masting, dispersal (expected maps from [`crate::dispersal`] with random
//! counts per cell, or per seed), establishment, growth, mortality and stage transitions, the
//! SORTIE-ND parameter file, and `geofield forest`.

pub mod per_seed;
pub mod rng;
