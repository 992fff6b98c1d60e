//! geofield: GPU-accelerated spatial simulation of the environment.
//!
//! Every capability has one public entry point that dispatches on a [`Backend`]: the CPU backend
//! (rayon, always available) or the CUDA backend (`geofield-cuda`, NVRTC-compiled kernels).
//! Both compute the same function; every CUDA path has a parity test against the CPU path.
//!
//! Capabilities:
//! - [`dispersal`]: seed density maps from a stem map (SORTIE-ND-style kernels), exact, the
//!   2012 paper's multi-resolution method, and an error-bounded cutoff.
//! - [`neighbors`]: exact k-nearest-neighbour queries (brute force, uniform grid, dynamic grid).
//! - [`flock`]: OpenSteer's boids on those neighbour searches.
//! - [`kriging`]: variograms, simple/ordinary/universal kriging, global and local.
//! - [`wind`]: mass-consistent 3-D wind fields over terrain (WEST and Sherman).

pub mod backend;
pub mod dispersal;
mod error;
pub mod flock;
pub mod kriging;
pub mod neighbors;
pub mod synth;
pub mod wind;

pub use backend::{Backend, BackendChoice, BackendSelection};
pub use error::{GeofieldError, shown};
