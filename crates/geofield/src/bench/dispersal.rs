//! Benchmark and test hooks of [`crate::dispersal`]: one species at a time from its prepared
//! sources ([`disperse_species`], the step [`crate::dispersal::disperse`] repeats per species),
//! the CPU exact sum over all rows or a window of rows, the cutoff radius of a tolerance, and the
//! slow, obviously correct f64 direct sum ([`direct_sum`]), the oracle of the tests.

pub use crate::dispersal::band::{Band, disperse_species};
pub use crate::dispersal::exact_cpu::{exact, exact_rows};
pub use crate::dispersal::radius::{CutoffBound, cutoff_radius};
pub use crate::dispersal::reference::direct_sum;
pub use crate::dispersal::sources::Sources;
