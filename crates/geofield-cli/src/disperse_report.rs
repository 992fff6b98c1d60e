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
    /// Where the time went.
    pub timing: Option<Timing>,
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
            timing: None,
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

/// Where a run's wall-clock time went, in seconds.
#[derive(serde::Serialize, Default, Clone, Debug)]
pub struct Timing {
    /// Reading the stem map (CSV).
    pub read_s: f64,
    /// Opening the backend (the GPU's context), on a thread while the stem map is read.
    pub backend_s: f64,
    /// The species, one after another (wall clock), and of it: preparing each method (bounds,
    /// binning, cost model), the GPU's kernels (device events), and the copies to and from the
    /// GPU (its compute time less the kernels).
    pub dispersal_s: f64,
    pub prepare_s: f64,
    pub kernels_s: Option<f64>,
    pub copies_s: Option<f64>,
    /// Of `dispersal_s`: waiting to hand strips to the GeoTIFF's compressing thread (its queue
    /// full: the compressing is slower than the computing).
    pub handoff_s: f64,
    /// Compressing the GeoTIFF's tiles, on a thread beside the computing (overlapped with it).
    pub compress_s: f64,
    /// From the last species to every file written: the rest of the compressing, the
    /// comparison with the exact sum if asked, the files and the PNG.
    pub output_s: f64,
    /// Of `output_s`: writing the GeoTIFF's bytes, and waiting for them to reach the disk.
    pub file_write_s: Option<f64>,
    pub disk_sync_s: Option<f64>,
    pub file_bytes: Option<u64>,
}

impl Timing {
    /// The species' wall time and the sums of their reports.
    pub fn dispersal(&mut self, wall_s: f64, reports: &[SpeciesReport]) {
        self.dispersal_s = wall_s;
        self.prepare_s = reports.iter().map(|r| r.prepare_s).sum();
        let kernels: Option<f64> = reports.iter().map(|r| r.kernel_ms).sum();
        self.kernels_s = kernels.map(|k| k / 1e3);
        self.copies_s = self
            .kernels_s
            .map(|k| (reports.iter().map(|r| r.compute_s).sum::<f64>() - k).max(0.0));
    }

    /// The GeoTIFF written.
    pub fn file(&mut self, w: &geofield_io::geotiff::CogWritten) {
        self.file_write_s = Some(w.write_s);
        self.disk_sync_s = Some(w.sync_s);
        self.file_bytes = Some(w.bytes);
    }

    /// One line on stdout.
    pub fn print(&self) {
        let mut gpu = String::new();
        if let (Some(k), Some(c)) = (self.kernels_s, self.copies_s) {
            gpu = format!(", GPU kernels {k:.3}, copies {c:.3}");
        }
        if self.handoff_s > 0.005 {
            gpu = format!("{gpu}, waiting for the writer {:.2}", self.handoff_s);
        }
        let mut file = String::new();
        if let (Some(w), Some(s), Some(b)) = (self.file_write_s, self.disk_sync_s, self.file_bytes)
        {
            file = format!(
                "; GeoTIFF {:.1} MB: writing {w:.2}, disk sync {s:.2}",
                b as f64 / 1e6
            );
        }
        let compress = if self.compress_s > 0.0 {
            format!(" (compressing {:.2} beside the species)", self.compress_s)
        } else {
            String::new()
        };
        println!(
            "time (s): read {:.2}, backend {:.2} (beside the reading), species {:.2} (preparing {:.2}{gpu}), output {:.2}{compress}{file}",
            self.read_s, self.backend_s, self.dispersal_s, self.prepare_s, self.output_s
        );
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
