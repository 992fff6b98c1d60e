//! Benchmark and test hooks of [`crate::flock`].
