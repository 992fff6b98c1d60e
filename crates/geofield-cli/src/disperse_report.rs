//! What `geofield disperse` says: notes on the stem map read, the progress of the species, the
//! table of results and the `--json` summary.

use anyhow::{Result, bail};
use geofield::BackendSelection;
use geofield::dispersal::io::StandReport;
use geofield::dispersal::{DisperseOptions, ErrorMetrics, SpeciesReport, SpeciesStep};
use geofield_core::GridSpec;

use crate::cmd_disperse::DisperseArgs;
use crate::progress::Progress;

/// The table of results and the `--json` summary.
#[derive(serde::Serialize)]
pub struct Summary<'a> {
    command: &'static str,
    version: &'static str,
    cells: usize,
    cols: usize,
    rows: usize,
    cell_size_m: f64,
    backend: String,
    device: String,
    backend_fallback_reason: Option<String>,
    options: DisperseOptions,
    trees: &'a StandReport,
    species: &'a [SpeciesReport],
    compare_exact: Option<Vec<(String, ErrorMetrics)>>,
    pub seconds_total: f64,
    pub outputs: Vec<String>,
}

impl<'a> Summary<'a> {
    /// The summary of a run; `compare` holds the errors against the exact method, by species.
    pub fn new(
        grid: &GridSpec,
        sel: &BackendSelection,
        options: DisperseOptions,
        trees: &'a StandReport,
        species: &'a [SpeciesReport],
        compare: Option<Vec<ErrorMetrics>>,
    ) -> Self {
        Summary {
            command: "disperse",
            version: env!("CARGO_PKG_VERSION"),
            cells: grid.n_cells(),
            cols: grid.cols,
            rows: grid.rows,
            cell_size_m: grid.cell_size_m,
            backend: sel.backend.label(),
            device: sel.backend.device_name(),
            backend_fallback_reason: sel.fallback_reason.clone(),
            options,
            trees,
            species,
            compare_exact: compare.map(|c| species.iter().map(|r| r.name.clone()).zip(c).collect()),
            seconds_total: 0.0,
            outputs: Vec::new(),
        }
    }

    /// The table of results on stdout.
    pub fn print(&self) {
        let (trees, reports) = (self.trees, self.species);
        println!(
            "grid {} x {} = {} cells of {} m; backend {} ({}); {} trees read",
            self.cols,
            self.rows,
            self.cells,
            self.cell_size_m,
            self.backend,
            self.device,
            trees.rows
        );
        println!(
            "{:<20} {:>8} {:>8} {:>9} {:>10} {:>10} {:>14} {:>12}",
            "species",
            "trees",
            "used",
            "method",
            "R|rho (m)",
            "time (s)",
            "seeds on grid",
            "max (m-2)"
        );
        for (i, r) in reports.iter().enumerate() {
            let radius = r
                .radius_m
                .or(r.rho_m)
                .map(|v| format!("{v:.1}"))
                .unwrap_or_else(|| "-".into());
            println!(
                "{:<20} {:>8} {:>8} {:>9} {:>10} {:>10.3} {:>14.4e} {:>12.4e}",
                r.name,
                trees.trees_per_species.get(i).copied().unwrap_or(0),
                r.trees_contributing,
                r.method.name(),
                radius,
                r.seconds,
                r.seeds_on_grid,
                r.max_density_per_m2
            );
            if let Some(n) = &r.note {
                println!("{:<20} {n}", "");
            }
        }
        if let Some(c) = &self.compare_exact {
            println!(
                "{:<20} {:>12} {:>12} {:>14} {:>12}",
                "vs exact", "max rel", "mean rel", "max abs/max", "mass diff"
            );
            for (name, m) in c {
                println!(
                    "{:<20} {:>12.3e} {:>12.3e} {:>14.3e} {:>12.3e}",
                    name, m.max_rel, m.mean_rel, m.max_abs_over_max, m.mass_rel
                );
            }
        }
    }
}

/// Say what reading the stem map skipped or found outside the extent; refuse a stand of no
/// trees of the species (all-zero maps).
pub fn check_stand(a: &DisperseArgs, r: &StandReport) -> Result<()> {
    if r.unknown_species > 0 {
        eprintln!(
            "warning: {} trees of species not in {} were skipped ({}; first at lines {:?}); --strict makes this an error",
            r.unknown_species,
            a.species.display(),
            r.unknown_species_names.join(", "),
            r.unknown_species_first_lines
        );
    }
    if r.outside_extent > 0 {
        let how = if a.torus {
            " (wrapped onto the torus)"
        } else {
            " (seeds fly in)"
        };
        eprintln!(
            "note: {} trees lie outside the extent (first at lines {:?}); they still contribute{how}",
            r.outside_extent, r.outside_extent_first_lines
        );
    }
    if r.trees_per_species.iter().all(|&n| n == 0) {
        bail!(
            "{}: no trees of the species in {} ({} rows read): the maps would be all zero",
            a.trees.display(),
            a.species.display(),
            r.rows
        );
    }
    Ok(())
}

/// One step of a pass over the species on the bar; `warn` prints the species' warnings.
pub fn step(pb: &Progress, s: SpeciesStep<'_>, warn: bool) {
    match s {
        SpeciesStep::Start { species, .. } => pb.set_message(species.name.clone()),
        SpeciesStep::Done { report, .. } => {
            for w in report.warnings.iter().filter(|_| warn) {
                pb.suspend(|| eprintln!("warning: {}: {w}", report.name));
            }
            pb.inc(1);
        }
    }
}
