//! The output files of `geofield forest`, each built from the [`Year`]s a run hands to its
//! observer ([`crate::forest::simulate::simulate`]).
//!
//! - [`counts`]: one CSV row per (year, replicate, species, method) with the seeds that landed,
//!   the stage counts, the recruits and the basal area ([`rows_of`], [`write_counts_csv`]).
//! - [`density`]: seed and seedling densities per year and species on a grid of k × k run
//!   cells, kept as `f32` in memory ([`DensityStack`]), and [`density_nc`]: written as CF-1.8
//!   NetCDF-3 ([`write_density_nc`]).
//! - [`chart`]: a PNG line chart of one column of the counts table over the years, per species
//!   and method, the mean over replicates ([`write_counts_png`]; `recruits` is the seed
//!   paper's Fig. 13).
//! - [`gif`]: a top view of the stand each year as an animated GIF ([`StandFrames`]).
//!
//! Every file is written atomically ([`geofield_io::write_atomic`]): a failed write leaves
//! nothing at the target. The renderers and encoders are geofield-io's ([`geofield_io::XyChart`],
//! [`geofield_io::write_gif`], [`geofield_io::write_netcdf`]); this module only arranges the
//! numbers.
//!
//! The accumulators ([`DensityStack::push`], [`StandFrames::push`]) never fail, so a run's
//! observer can feed them without error handling: a year that does not fit (more years than the
//! stack was sized for, seed counts of the wrong shape) is recorded and refused when the file
//! is written, with the reason.
//!
//! [`Year`]: crate::forest::simulate::Year

pub mod chart;
pub mod counts;
pub mod density;
pub mod density_nc;
pub mod gif;

pub use chart::write_counts_png;
pub use counts::{COUNTS_HEADER, CountsRow, rows_of, write_counts_csv};
pub use density::DensityStack;
pub use density_nc::write_density_nc;
pub use gif::StandFrames;

#[cfg(test)]
pub(crate) mod test_support;
