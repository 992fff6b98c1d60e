//! `geofield disperse`: seed density maps from a stem map.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use geofield::BackendSelection;
use geofield::GeofieldError;
use geofield::dispersal::io::{self as dio, MapStyle, StandReport};
use geofield::dispersal::{
    self, Dispersal, DisperseOptions, Method, Precision, Species, SpeciesReport, SpeciesStep, Stand,
};
use geofield_core::GridSpec;
use geofield_io::geotiff::{BigTiff, Compression};
use geofield_io::{Colormap, RasterFormat, RasterMeta};

use crate::ctx::Ctx;
use crate::disperse_report::Timing;
use crate::disperse_sink::{BandSink, Encoder};
use crate::outputs::{Kind, Outputs};
use crate::{disperse_report, inputs, output, progress};

#[derive(Clone, Copy, ValueEnum, PartialEq)]
pub enum MethodArg {
    Exact,
    Multires,
    Cutoff,
    /// Exact within a radius plus a lattice far field (FFT), certified bound; any kernel.
    Nearfar,
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
    /// within a radius guaranteed by --tolerance; nearfar: exact within a radius plus an FFT far
    /// field, error certified by --tolerance (any kernel, fat tails too); auto: the cheapest of
    /// exact, cutoff and nearfar.
    #[arg(long, value_enum, default_value = "auto")]
    pub method: MethodArg,
    /// Cutoff and near/far tolerance: error <= tolerance x band maximum at every cell.
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
    /// Rows per strip in which the cutoff computes a map and hands it to the GeoTIFF writer
    /// (rounded up to a multiple of 256); 0: each map whole. Default: whole maps while three of
    /// them take at most a quarter of the available memory (the faster way), else strips of
    /// about 32 MB of values (memory stays bounded by the strips and the compressed file).
    #[arg(long, value_name = "ROWS")]
    pub strip_rows: Option<usize>,
    /// Multi-resolution opening rule: a (rho_q = rho 2^(q-1), default) or b (rho at every level).
    #[arg(long, value_enum, default_value = "a")]
    pub multires_variant: VariantArg,
}

/// What every run needs before computing: the inputs read and checked, the outputs planned
/// (only where `plan` says: the process that writes them), the backend open.
pub(crate) struct Prepared {
    pub outs: Outputs,
    pub opts: DisperseOptions,
    pub crs: Option<u16>,
    pub compression: Compression,
    pub species: Vec<Species>,
    pub names: Vec<String>,
    pub grid: GridSpec,
    pub stand: Stand,
    pub stand_report: StandReport,
    pub sel: BackendSelection,
    pub timing: Timing,
}

pub(crate) fn prepare(a: &DisperseArgs, ctx: &Ctx, plan: bool) -> Result<Prepared> {
    prepare_part(a, ctx, plan, None)?.context("the stem map was not read")
}

/// [`prepare`] for one part of a run split by rows over the parts of `split` (MPI ranks): the
/// part reads its byte range of the stem map (its piece of the stand, with the whole file's
/// report) and checks the memory its rows need. `Ok(None)`: another part failed reading, and
/// reports it at the parts' next agreement.
pub(crate) fn prepare_part(
    a: &DisperseArgs,
    ctx: &Ctx,
    plan: bool,
    split: Option<&dyn geofield::wind::split::Exchange>,
) -> Result<Option<Prepared>> {
    let mut outs = Outputs::new();
    if plan {
        outs.input("--trees", &a.trees);
        outs.input("--species", &a.species);
        outs.plan("--out", &a.out, Kind::Raster)?;
        outs.plan_opt("--png", a.png.as_deref(), Kind::File)?;
        outs.plan_opt("--json", ctx.json(), Kind::File)?;
    }
    let opts = options(a)?;
    let crs = ctx.crs_epsg()?;
    let compression = ctx.compression()?;
    let extent = inputs::parse_extent(&a.extent)?;
    let species = inputs::read_species(&a.species)?;
    let grid = GridSpec::from_extent(extent, a.cell_size_m)
        .context("the output grid of --extent at cell size --cell-size-m")?;
    // A part of a split run holds its rows of the maps (rank 0 all of them where an output
    // needs them gathered: `--png`, `.asc`, `.npy`).
    let gathered = a.png.is_some() || RasterFormat::from_path(&a.out)? != RasterFormat::GeoTiff;
    let rows = match split {
        Some(ex) if !(plan && gathered) => {
            geofield_io::geotiff::RowSplit::new(grid.cols, grid.rows, ex.parts()).rows[ex.part()]
                .clone()
        }
        _ => 0..grid.rows,
    };
    let band = GridSpec {
        rows: rows.len().max(1),
        ..grid
    };
    dispersal::check_memory(&band, species.len(), opts.precision).context(
        "the output grid would not fit in this machine's available memory (MemAvailable)",
    )?;
    let mut timing = Timing::default();
    // The backend (a GPU's context takes a few tenths of a second to start) opens while the
    // stem map is read.
    let (trees, sel) = std::thread::scope(|s| {
        let opening = s.spawn(|| {
            let t = Instant::now();
            (ctx.open_backend(), t.elapsed().as_secs_f64())
        });
        let t = Instant::now();
        let trees = match split {
            Some(ex) => inputs::read_trees_piece(&a.trees, &species, &extent, a.strict, ex),
            None => inputs::read_trees(&a.trees, &species, &extent, a.strict).map(Some),
        };
        timing.read_s = t.elapsed().as_secs_f64();
        let (sel, seconds) = opening
            .join()
            .unwrap_or_else(|_| (Err(anyhow::anyhow!("opening the backend panicked")), 0.0));
        timing.backend_s = seconds;
        (trees, sel)
    });
    let Some((stand, stand_report)) = trees? else {
        return Ok(None);
    };
    if plan {
        disperse_report::check_stand(a, &stand_report)?;
    }
    let sel = sel?;
    let device_rows = match split {
        Some(_) => dispersal::device_rows(opts.method, &grid, &rows),
        None => grid.rows,
    };
    dispersal::check_device_memory_rows(&sel.backend, &grid, device_rows).with_context(|| {
        format!(
            "the grid would not fit in the memory of {} (use --backend cpu or a smaller extent)",
            sel.backend.device_name()
        )
    })?;
    let names = species.iter().map(|s| s.name.clone()).collect();
    Ok(Some(Prepared {
        outs,
        opts,
        crs,
        compression,
        species,
        names,
        grid,
        stand,
        stand_report,
        sel,
        timing,
    }))
}

impl Prepared {
    /// The seed maps' metadata (provenance filled in at the end).
    pub fn meta(&self) -> RasterMeta {
        RasterMeta {
            compression: self.compression,
            ..dio::seed_map_meta(self.crs, &[])
        }
    }

    /// The provenance items of the outputs.
    pub fn provenance(&self, a: &DisperseArgs, reports: &[SpeciesReport]) -> Vec<(String, String)> {
        let method = dio::seed_map_provenance(reports, &self.opts, &a.trees, &a.species);
        output::provenance(&method)
    }
}

/// The strip height: `--strip-rows`, else [`strip_rows`].
pub(crate) fn strip_height(a: &DisperseArgs, grid: &GridSpec, precision: Precision) -> usize {
    match a.strip_rows {
        Some(0) => usize::MAX,
        Some(n) => n,
        None => strip_rows(grid, precision),
    }
}

pub fn run(a: &DisperseArgs, ctx: &Ctx) -> Result<()> {
    #[cfg(feature = "mpi")]
    if let Some(ranks) = ctx.split() {
        return crate::disperse_split::run(a, ctx, ranks);
    }
    let start = Instant::now();
    let mut p = prepare(a, ctx, true)?;
    let (grid, species, be) = (p.grid, &p.species, &p.sel.backend);
    let passes = if a.compare_exact { 2 } else { 1 };
    let pb = progress::bar(passes * species.len() as u64, ctx.quiet(), "dispersal");
    // Ctrl-C ends the process (the staged outputs are not renamed): no token is ever cancelled.
    let never = geofield::Cancel::new();
    let geotiff = RasterFormat::from_path(&a.out)? == RasterFormat::GeoTiff;
    let keep = a.png.is_some() || a.compare_exact;
    let mut sink = BandSink::new(
        &a.out,
        grid,
        p.names.clone(),
        p.opts.precision == Precision::F64,
        p.meta(),
        geotiff,
        keep,
        Some(be.clone()),
    )?;
    let t = Instant::now();
    let mut sink_error = None;
    let mut handoff_s = 0.0;
    let reports = dispersal::disperse_strips(
        be,
        &grid,
        species,
        &p.stand,
        &p.opts,
        strip_height(a, &grid, p.opts.precision),
        &mut |s| disperse_report::step(&pb, s, true),
        &never,
        &mut |strip| {
            let t = Instant::now();
            let r = sink.push(strip).map_err(|e| {
                sink_error = Some(e);
                GeofieldError::Invalid("the output stopped".into())
            });
            handoff_s += t.elapsed().as_secs_f64();
            r
        },
    );
    let reports = match (reports, sink_error) {
        (_, Some(e)) => return Err(e),
        (r, None) => r?,
    };
    p.timing.dispersal(t.elapsed().as_secs_f64(), &reports);
    p.timing.handoff_s = handoff_s;
    let t = Instant::now();
    let finished = sink.finish()?;
    p.timing.compress_s = finished.compress_s;
    let out = p.kept(finished.maps, &reports)?;
    let compare = match &out {
        Some(out) if a.compare_exact => {
            let step = &mut |s: SpeciesStep<'_>| disperse_report::step(&pb, s, false);
            Some(dispersal::compare_exact(
                be, &grid, species, &p.stand, out, &p.opts, step,
            )?)
        }
        _ => None,
    };
    pb.finish_and_clear();
    let provenance = p.provenance(a, &reports);
    let (crs, compression) = (p.crs, p.compression);
    let mut timing = p.timing.clone();
    let mut written = p.outs.write(&a.out, |path| {
        let files = match (finished.cog, &out) {
            (Some(Encoder::Whole(mut cog)), _) => {
                cog.set_provenance(provenance.clone());
                timing.file(&cog.finish(path, BigTiff::IfNeeded)?);
                vec![path.to_path_buf()]
            }
            (None, Some(out)) => {
                dio::write_seed_map(path, &out.raster, crs, &provenance, compression)?
            }
            _ => bail!("no maps were kept to write"),
        };
        output::warn_if_no_crs(path, crs, "declare one with --crs EPSG:CODE");
        Ok(files)
    })?;
    p.timing = timing;
    p.finish(
        a,
        ctx,
        start,
        t,
        out.as_ref(),
        &reports,
        compare,
        &mut written,
    )
}

impl Prepared {
    /// The kept maps (every band whole) as a run's result, if any were kept.
    pub fn kept(
        &self,
        maps: Vec<geofield_core::RasterData>,
        reports: &[SpeciesReport],
    ) -> Result<Option<Dispersal>> {
        if maps.is_empty() {
            return Ok(None);
        }
        Ok(Some(Dispersal {
            raster: dispersal::stack_bands(&self.grid, self.names.clone(), maps)?,
            reports: reports.to_vec(),
        }))
    }

    /// The PNG, the summary, the JSON, and the outputs moved into place.
    #[allow(clippy::too_many_arguments)]
    pub fn finish(
        mut self,
        a: &DisperseArgs,
        ctx: &Ctx,
        start: Instant,
        outputs_from: Instant,
        out: Option<&Dispersal>,
        reports: &[SpeciesReport],
        compare: Option<Vec<dispersal::ErrorMetrics>>,
        written: &mut Vec<PathBuf>,
    ) -> Result<()> {
        if let (Some(p), Some(out)) = (&a.png, out) {
            let colormap = Colormap::from_name(&a.colormap).with_context(|| {
                format!(
                    "unknown colour map {:?}: {}",
                    a.colormap,
                    output::COLORMAPS.join(", ")
                )
            })?;
            let style = MapStyle {
                title: format!(
                    "Seed density, {} ({})",
                    out.method_label(),
                    self.sel.backend.label()
                ),
                blend: a.png_layout == "blend",
                log_scale: a.png_scale == "log",
                colormap,
            };
            written.push(
                self.outs
                    .write_one(p, |s| Ok(dio::write_seed_png(s, &out.raster, &style)?))?,
            );
        }
        self.timing.output_s = outputs_from.elapsed().as_secs_f64();
        let mut summary = disperse_report::Summary::new(
            &self.grid,
            &self.sel,
            self.opts,
            &self.stand_report,
            reports,
            compare,
        );
        summary.print();
        self.timing.print();
        if let Some(p) = ctx.json() {
            summary.seconds_total = start.elapsed().as_secs_f64();
            summary.timing = Some(self.timing.clone());
            summary.outputs = written.iter().map(|p| p.display().to_string()).collect();
            written.push(self.outs.write_json(p, &summary)?);
        }
        self.outs.commit()?;
        println!(
            "wrote {} ({:.2} s in all)",
            output::joined(written),
            start.elapsed().as_secs_f64()
        );
        Ok(())
    }
}

/// The options of the flags, refusing styles without a PNG and values out of range.
fn options(a: &DisperseArgs) -> Result<DisperseOptions> {
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
    if !(a.tolerance.is_finite() && a.tolerance > 0.0 && a.tolerance < 1.0) {
        bail!(
            "--tolerance must be a number in (0, 1), got {}",
            a.tolerance
        );
    }
    Ok(DisperseOptions {
        method: match a.method {
            MethodArg::Exact => Method::Exact,
            MethodArg::Multires => Method::Multires,
            MethodArg::Cutoff => Method::Cutoff,
            MethodArg::Nearfar => Method::NearFar,
            MethodArg::Auto => Method::Auto,
        },
        tolerance: a.tolerance,
        precision: match a.precision {
            PrecisionArg::F32 => Precision::F32,
            PrecisionArg::F64 => Precision::F64,
        },
        torus: a.torus,
        multires_variant_b: a.multires_variant == VariantArg::B,
    })
}

/// Rows of the strips a map is computed and compressed in (`usize::MAX`: whole maps).
///
/// Whole maps while three of them (one computing, one queued, one compressing) take at most a
/// quarter of the available memory: on the landscape (10240 x 10240 cells, 4 species, H100
/// host) whole maps were 0.1-0.3 s faster than strips, the compressing being the bottleneck
/// either way and working best on whole maps. Beyond, strips of whole GeoTIFF tile rows and
/// about 32 MB of values: the maps then never need to fit in memory, only the compressed file.
fn strip_rows(grid: &GridSpec, precision: Precision) -> usize {
    let bytes = match precision {
        Precision::F32 => 4,
        Precision::F64 => 8,
    };
    let band = grid.n_cells().saturating_mul(bytes) as u128;
    if band.saturating_mul(3) <= geofield_core::memory::memory_limit_bytes() / 4 {
        return usize::MAX;
    }
    let rows = (32usize << 20) / (grid.cols.max(1) * bytes);
    rows.max(1).div_ceil(dispersal::STRIP_ALIGN) * dispersal::STRIP_ALIGN
}
