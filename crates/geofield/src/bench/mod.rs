//! Benchmark and test hooks: the pieces of each capability that `geofield bench` and the test
//! suites time or compare one by one (single methods, device buffers, profiling steps). They are
//! not part of the stable API; a user calls each capability's entry point instead
//! ([`crate::dispersal::disperse`], [`crate::kriging::krige`], [`crate::neighbors::knn`],
//! [`crate::flock::Flock`], [`crate::wind::compute`]).

pub mod dispersal;
pub mod flock;
pub mod kriging;
pub mod neighbors;
pub mod wind;
