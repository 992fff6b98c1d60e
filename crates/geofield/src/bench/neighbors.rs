//! Benchmark and test hooks of [`crate::neighbors`]: the CPU indexes behind
//! [`crate::neighbors::knn`], to time their builds one by one.

pub use crate::neighbors::dynamic::DynamicGrid;
pub use crate::neighbors::uniform::UniformGrid;
