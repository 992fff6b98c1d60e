//! `geofield disperse`: seed density maps from a stem map.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use geofield::dispersal::{
    self, DisperseOptions, ErrorMetrics, Method, Precision, Sources, SpeciesReport,
};

use crate::ctx::Ctx;
use crate::outputs::{Kind, Outputs};
use crate::{inputs, output, progress};

#[derive(Clone, Copy, ValueEnum)]
pub enum MethodArg {
    Exact,
    Multires,
    Cutoff,
    Auto,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum PrecisionArg {
    F32,
    F64,
}

#[derive(Clone, Copy, ValueEnum, PartialEq)]
pub enum VariantArg {
    A,
    B,
}

#[derive(Args)]
pub struct DisperseArgs {
    /// Stem map CSV with a header and columns x_m, y_m, dbh_cm, species (any order).
    #[arg(long)]
    pub trees: PathBuf,
    /// Species file (TOML, [[species]] tables).
    #[arg(long)]
    pub species: PathBuf,
    /// Output extent XMIN,YMIN,XMAX,YMAX in metres (a whole number of cells each way).
    #[arg(long, allow_hyphen_values = true)]
    pub extent: String,
    /// Cell size in metres.
    #[arg(long, allow_negative_numbers = true)]
    pub cell_size_m: f64,
    /// Output raster: .tif (GeoTIFF), .asc (ESRI ASCII, one file per species) or .npy.
    #[arg(long)]
    pub out: PathBuf,
    /// Also draw the maps to a PNG.
    #[arg(long)]
    pub png: Option<PathBuf>,
    /// PNG layout: one panel per species, or a colour blend of species (as the paper's Fig. 12).
    #[arg(long, default_value = "panels", value_parser = ["panels", "blend"])]
    pub png_layout: String,
    /// PNG colour scale.
    #[arg(long, default_value = "linear", value_parser = ["linear", "log"])]
    pub png_scale: String,
    /// PNG colour map.
    #[arg(long, default_value = "viridis", value_parser = crate::output::COLORMAPS)]
    pub colormap: String,
    /// exact: every tree to every cell; multires: the 2012 paper's quadtree method; cutoff: sum
    /// within a radius guaranteed by --tolerance; auto: the cheaper of exact and cutoff.
    #[arg(long, value_enum, default_value = "auto")]
    pub method: MethodArg,
    /// Cutoff tolerance: neglected contribution <= tolerance x band maximum at every cell.
    #[arg(long, default_value_t = 1e-6)]
    pub tolerance: f64,
    /// Periodic boundary: minimum-image distances on the extent's rectangle.
    #[arg(long)]
    pub torus: bool,
    /// Output precision. The GPU computes in f32 (compensated sums, ~1e-6 relative to the f64
    /// exact sum), so f64 needs --backend cpu.
    #[arg(long, value_enum, default_value = "f32")]
    pub precision: PrecisionArg,
    /// Also run the exact method and report the errors of the chosen one against it.
    #[arg(long)]
    pub compare_exact: bool,
    /// Trees of species missing from the species file are an error (default: skipped, reported).
    #[arg(long)]
    pub strict: bool,
    /// Multi-resolution opening rule: a (rho_q = rho 2^(q-1), default) or b (rho at every level).
    #[arg(long, value_enum, default_value = "a")]
    pub multires_variant: VariantArg,
}

#[derive(serde::Serialize)]
struct Summary<'a> {
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
    trees: &'a inputs::StandReport,
    species: &'a [SpeciesReport],
    compare_exact: Option<Vec<(String, ErrorMetrics)>>,
    seconds_total: f64,
    outputs: Vec<String>,
}

pub fn run(a: &DisperseArgs, ctx: &Ctx) -> Result<()> {
    let start = Instant::now();
    let mut outs = Outputs::new();
    outs.input("--trees", &a.trees);
    outs.input("--species", &a.species);
    outs.plan("--out", &a.out, Kind::Raster)?;
    outs.plan_opt("--png", a.png.as_deref(), Kind::File)?;
    outs.plan_opt("--json", ctx.json(), Kind::File)?;
    if a.png.is_none() {
        for (set, flag) in [
            (a.png_layout != "panels", "--png-layout"),
            (a.png_scale != "linear", "--png-scale"),
            (a.colormap != "viridis", "--colormap"),
        ] {
            if set {
                bail!("{flag} styles the map: give --png");
            }
        }
    }
    if a.multires_variant == VariantArg::B && !matches!(a.method, MethodArg::Multires) {
        bail!("--multires-variant applies to --method multires only");
    }
    let precision = match a.precision {
        PrecisionArg::F32 => Precision::F32,
        PrecisionArg::F64 => Precision::F64,
    };
    let method = match a.method {
        MethodArg::Exact => Method::Exact,
        MethodArg::Multires => Method::Multires,
        MethodArg::Cutoff => Method::Cutoff,
        MethodArg::Auto => Method::Auto,
    };
    if !(a.tolerance.is_finite() && a.tolerance > 0.0 && a.tolerance < 1.0) {
        bail!(
            "--tolerance must be a number in (0, 1), got {}",
            a.tolerance
        );
    }
    let crs = ctx.crs_epsg()?;
    let extent = inputs::parse_extent(&a.extent)?;
    let species = inputs::read_species(&a.species)?;
    let out_bytes = if precision == Precision::F32 { 4 } else { 8 };
    let grid = inputs::grid_for(&extent, a.cell_size_m, species.len(), out_bytes)?;
    let (stand, stand_report) = inputs::read_trees(&a.trees, &species, &extent, a.strict)?;
    if stand_report.unknown_species > 0 {
        eprintln!(
            "warning: {} trees of species not in {} were skipped ({}; first at lines {:?}); --strict makes this an error",
            stand_report.unknown_species,
            a.species.display(),
            stand_report.unknown_species_names.join(", "),
            stand_report.unknown_species_first_lines
        );
    }
    if stand_report.outside_extent > 0 {
        eprintln!(
            "note: {} trees lie outside the extent (first at lines {:?}); they still contribute{}",
            stand_report.outside_extent,
            stand_report.outside_extent_first_lines,
            if a.torus {
                " (wrapped onto the torus)"
            } else {
                " (seeds fly in)"
            }
        );
    }
    if stand_report.trees_per_species.iter().all(|&n| n == 0) {
        bail!(
            "{}: no trees of the species in {} ({} rows read): the maps would be all zero",
            a.trees.display(),
            a.species.display(),
            stand_report.rows
        );
    }
    let sel = ctx.open_backend()?;
    let be = sel.backend.clone();
    if let geofield::Backend::Cuda(g) = &be {
        // One species at a time on the device: its f64 output plus as much again for partials.
        grid.check_memory(2, 8, g.info().total_memory_bytes as u128).with_context(|| {
            format!("the grid would not fit in the memory of {} (use --backend cpu or a smaller extent)", g.info().name)
        })?;
    }
    let opts = DisperseOptions {
        method,
        tolerance: a.tolerance,
        precision,
        torus: a.torus,
        multires_variant_b: a.multires_variant == VariantArg::B,
    };
    let pb = progress::bar(species.len() as u64, ctx.quiet(), "dispersal");
    let mut bands = Vec::new();
    let mut reports = Vec::new();
    let mut compare = a.compare_exact.then(Vec::new);
    for (i, sp) in species.iter().enumerate() {
        pb.set_message(sp.name.clone());
        let sources = Sources::for_species(&stand, i as u32, sp, &grid, a.torus);
        let (band, rep) = dispersal::disperse_species(&be, &grid, sp, &sources, &opts)?;
        if let Some(c) = compare.as_mut() {
            let exact_opts = DisperseOptions {
                method: Method::Exact,
                precision: dispersal::reference_precision(&be),
                ..opts
            };
            let (exact, _) = dispersal::disperse_species(&be, &grid, sp, &sources, &exact_opts)?;
            c.push((
                sp.name.clone(),
                dispersal::compare(&band.to_f64(), &exact.to_f64()),
            ));
        }
        for w in &rep.warnings {
            pb.suspend(|| eprintln!("warning: {}: {w}", sp.name));
        }
        bands.push(band);
        reports.push(rep);
        pb.inc(1);
    }
    pb.finish_and_clear();
    let names: Vec<String> = species.iter().map(|s| s.name.clone()).collect();
    let raster = dispersal::bands_to_raster(&grid, names, bands, precision)?;
    let units = "seeds m-2 yr-1";
    let method = [
        ("method", method_label(&reports)),
        ("tolerance", opts.tolerance.to_string()),
        ("trees", a.trees.display().to_string()),
        ("species", a.species.display().to_string()),
    ];
    let mut written = outs.write(&a.out, |p| {
        output::write_raster_with(
            p,
            &raster,
            units,
            "expected seed density",
            crs,
            &method,
            false,
        )
    })?;
    if let Some(p) = &a.png {
        let title = format!("Seed density, {} ({})", method_label(&reports), be.label());
        written.push(outs.write_one(p, |s| {
            output::write_png(
                s,
                &raster,
                &title,
                units,
                a.png_layout == "blend",
                a.png_scale == "log",
                &a.colormap,
            )
        })?);
    }
    print_summary(&grid, &be, &stand_report, &reports, compare.as_deref());
    if let Some(p) = ctx.json() {
        let summary = Summary {
            command: "disperse",
            version: env!("CARGO_PKG_VERSION"),
            cells: grid.n_cells(),
            cols: grid.cols,
            rows: grid.rows,
            cell_size_m: grid.cell_size_m,
            backend: be.label(),
            device: be.device_name(),
            backend_fallback_reason: sel.fallback_reason.clone(),
            options: opts,
            trees: &stand_report,
            species: &reports,
            compare_exact: compare,
            seconds_total: start.elapsed().as_secs_f64(),
            outputs: written.iter().map(|p| p.display().to_string()).collect(),
        };
        written.push(outs.write_json(p, &summary)?);
    }
    outs.commit()?;
    println!(
        "wrote {} ({:.2} s in all)",
        output::joined(&written),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

fn method_label(reports: &[SpeciesReport]) -> String {
    let mut m: Vec<&str> = reports.iter().map(|r| r.method.name()).collect();
    m.dedup();
    m.join("/")
}

pub fn print_summary(
    grid: &geofield_core::GridSpec,
    be: &geofield::Backend,
    trees: &inputs::StandReport,
    reports: &[SpeciesReport],
    compare: Option<&[(String, ErrorMetrics)]>,
) {
    println!(
        "grid {} x {} = {} cells of {} m; backend {} ({}); {} trees read",
        grid.cols,
        grid.rows,
        grid.n_cells(),
        grid.cell_size_m,
        be.label(),
        be.device_name(),
        trees.rows
    );
    println!(
        "{:<20} {:>8} {:>8} {:>9} {:>10} {:>10} {:>14} {:>12}",
        "species", "trees", "used", "method", "R|rho (m)", "time (s)", "seeds on grid", "max (m-2)"
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
    if let Some(c) = compare {
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
