//! Benchmark and test hooks of [`crate::dispersal`].
