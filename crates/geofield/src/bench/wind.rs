//! Benchmark and test hooks of [`crate::wind`].
