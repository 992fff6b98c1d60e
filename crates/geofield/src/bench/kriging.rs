//! Benchmark and test hooks of [`crate::kriging`]: the systems one by one (build, evaluate a
//! grid with systems already built), the global and local systems, the paper's per-node
//! elimination and the device descriptions of a covariance and a grid.

pub use crate::kriging::cuda::device_covariance;
pub use crate::kriging::eval::{eval_points, krige_grid_with};
pub use crate::kriging::global::{CrossValidation, GlobalKriging};
pub use crate::kriging::local::LocalKriging;
pub use crate::kriging::paper::{PaperMode, paper_nodes};
pub use crate::kriging::space::{Covariance, Frame, NodeGrid};
pub use crate::kriging::systems::{
    Evaluated, Group, System, build, check_global_memory, global_memory_bytes,
};
