//! What every test file shares: the backends a test body runs on, and the one seeded generator
//! of the tests.
//!
//! [`for_each_backend`] runs a test body on the CPU and, when a GPU is usable, on CUDA. The body
//! compares what the backend computed with the CPU library (the oracle for every backend) and
//! with the independent references of its test file; on the CPU the comparison with itself is
//! exact, so the body's other checks (references, invariants) are what the CPU run tests.
//! Without a GPU the CUDA run is skipped with a printed notice; with `GEOFIELD_REQUIRE_GPU=1`
//! (set on the GPU machine) a missing GPU fails the test.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use geofield::Backend;
use rand::{Rng as _, RngCore, SeedableRng};
use rand_pcg::Pcg64;

/// The CPU, then the CUDA device when one is usable (see the module docs).
pub fn backends() -> Vec<Backend> {
    let mut v = vec![Backend::Cpu];
    if let Some(gpu) = geofield_cuda::test_gpu() {
        v.push(Backend::Cuda(gpu));
    }
    v
}

/// Runs `body` on every backend of [`backends`], naming each run on stderr.
pub fn for_each_backend(mut body: impl FnMut(&Backend)) {
    for be in backends() {
        eprintln!("--- backend {}", be.label());
        body(&be);
    }
}

/// The CUDA backend alone (for the tests of GPU-only features), or None after the notice.
pub fn gpu() -> Option<Backend> {
    geofield_cuda::test_gpu().map(Backend::Cuda)
}

/// The tests' seeded generator (PCG64): reproducible across runs and platforms.
pub struct Rng(Pcg64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(Pcg64::seed_from_u64(seed))
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        self.0.random::<f64>()
    }
    /// Uniform in [lo, hi).
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }
    /// Standard normal (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let u = self.unit().max(1e-300);
        let v = self.unit();
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
    /// Uniform in 0..n (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.0.random_range(0..n)
    }
}
