//! Benchmark and test hooks of [`crate::wind`]: the steps of the pipeline one by one (first
//! guess, operators, each solver, the GPU's timed sweeps) and the benchmark's built-in cases.
//! Each submodule carries the name of the internal module it exposes, so `ops::divergence`,
//! `multigrid::solve` or `west::run` read the same here as inside the library.

/// The first guess (steps 1–7 of the pipeline).
pub mod init {
    pub use crate::wind::init::{
        FirstGuess, MAX_STATION_SPEED_M_PER_S, MAX_STATIONS_PER_CELL, first_guess,
    };
}

/// Face coefficients, divergence, the potential's correction and WEST's divergence removal.
pub mod ops {
    pub use crate::wind::ops::{
        Coeffs, apply_potential, divergence, divergence_stats, remove_divergence,
    };
}

/// Sherman's problem and its solvers on the CPU (multigrid, MG-CG, SOR).
pub mod multigrid {
    pub use crate::wind::multigrid::{Problem, SolveRun, solve};
}

/// The paper's WEST sweeps on the CPU.
pub mod west {
    pub use crate::wind::west::{SweepRun, WestOperator, run};
}

/// SOR's optimal relaxation factor.
pub mod sor {
    pub use crate::wind::sor::optimal_omega;
}

/// The benchmark's grid family on a Gaussian hill (R1 … R64).
pub mod cases {
    pub use crate::wind::cases::{HILL_DOMAIN_M, hill_case, hill_grid};
}

/// Device timing of the WEST sweeps and Sherman's solvers on a GPU.
pub mod cuda {
    pub use crate::wind::cuda::{
        F32_FLOOR_ULPS, ShermanTiming, WestTiming, WestVariant, time_sherman, time_west,
    };
}
