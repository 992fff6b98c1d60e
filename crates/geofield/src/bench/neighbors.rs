//! Benchmark and test hooks of [`crate::neighbors`].
