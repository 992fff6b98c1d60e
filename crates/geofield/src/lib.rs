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
//!
//! With the default feature `io` each capability also reads and writes its domain files, next to
//! it: [`dispersal::io`] (species TOML, stem-map CSV; seed maps as GeoTIFF/ASCII/NPY and PNG),
//! [`kriging::io`] (sample CSV; surfaces, cross-validation CSV, maps, sections, voxel models),
//! [`neighbors::io`] (point CSV/NPY; index and distance arrays), [`flock::io`] (state NPY,
//! frames, GIF), [`wind::io`] (DEM GeoTIFF/ESRI ASCII, stations CSV; NetCDF/VTK/NPZ fields,
//! rasters, maps) and [`synth::io`], with errors ([`InputError`]) that name the file, line and
//! field. Sizes a file declares are checked against the file's length and the available memory
//! before anything is allocated.

pub mod backend;
#[doc(hidden)]
pub mod bench;
pub mod cancel;
#[cfg(feature = "io")]
mod cf_nc;
pub mod dispersal;
mod error;
pub mod flock;
pub mod forest;
#[cfg(feature = "io")]
pub mod gpu_tiles;
#[cfg(feature = "io")]
pub mod input_error;
pub mod kriging;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod neighbors;
pub mod synth;
pub mod wind;

pub use backend::{Backend, BackendChoice, BackendSelection};
pub use cancel::Cancel;
pub use error::{GeofieldError, shown};
#[cfg(feature = "io")]
pub use input_error::InputError;
