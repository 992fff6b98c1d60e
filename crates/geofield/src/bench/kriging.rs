//! Benchmark and test hooks of [`crate::kriging`].
