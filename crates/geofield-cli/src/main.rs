//! The `geofield` command: argument parsing and glue over the library crates. Errors are printed
//! once with their chain; the exit code is 0 on success and 2 on any error.

mod bench;
mod cmd_cokrige;
mod cmd_disperse;
mod cmd_flock;
mod cmd_forest;
mod cmd_info;
mod cmd_knn;
mod cmd_krige;
mod cmd_krige3d;
mod cmd_pairs;
mod cmd_synth;
mod cmd_variogram;
mod cmd_wind;
mod ctx;
mod demo;
mod disperse_report;
mod disperse_sink;
#[cfg(feature = "mpi")]
mod disperse_split;
mod flock_report;
mod forest_report;
mod inputs;
mod krige_in;
mod krige_out;
mod krige_sim;
mod output;
mod outputs;
mod progress;
mod synth_terrain;
mod wind_diurnal;
mod wind_in;
mod wind_init;
mod wind_report;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// GPU-accelerated spatial simulation of the environment: seed dispersal maps, exact k
/// nearest neighbours, boids flocks, kriging and wind fields over terrain, on CUDA GPUs or plain
/// CPUs.
#[derive(Parser)]
#[command(name = "geofield", version, about, long_about = None, propagate_version = true)]
struct Cli {
    #[command(flatten)]
    global: ctx::GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Version, the CUDA probe (and why it falls back to the CPU), device name, compute capability, memory.
    Info(cmd_info::InfoArgs),
    /// Run every capability on built-in synthetic data and write maps into a folder.
    Demo(demo::DemoArgs),
    /// Seed density maps of a forest from a stem map (one band per species).
    Disperse(Box<cmd_disperse::DisperseArgs>),
    /// A forest through the years: seed production (masting), dispersal (expected maps or
    /// every seed), establishment, growth and mortality; SORTIE-ND parameter files.
    Forest(Box<cmd_forest::ForestArgs>),
    /// Exact k nearest neighbours of query points among a point set (2-D or 3-D).
    Knn(cmd_knn::KnnArgs),
    /// Ripley's K and Besag's L of a point pattern (a stem map) in its plot, with spatstat's
    /// edge corrections (border, translate, isotropic): clustering or regularity by distance.
    Pairs(cmd_pairs::PairsArgs),
    /// OpenSteer's boids flock on exact neighbour searches: state, frames, GIF, statistics.
    Flock(Box<cmd_flock::FlockArgs>),
    /// Kriging of one or many surfaces from scattered samples onto a grid, with variance and
    /// cross-validation.
    Krige(Box<cmd_krige::KrigeArgs>),
    /// 3-D kriging of (x, y, z, value) samples onto a 3-D grid (NetCDF, VTK) or at points, with
    /// variance and a 3-D anisotropy.
    Krige3d(Box<cmd_krige3d::Krige3dArgs>),
    /// Cokriging of a primary variable from its samples and secondary variables' (linear model
    /// of coregionalisation, gstat's fit.lmc), with variance.
    Cokrige(Box<cmd_cokrige::CokrigeArgs>),
    /// Empirical variogram of a sampled variable, and a fitted model (chart, JSON).
    Variogram(cmd_variogram::VariogramArgs),
    /// A mass-consistent 3-D wind field over a DEM from weather stations (Sherman or WEST).
    Wind(Box<cmd_wind::WindArgs>),
    /// Write synthetic inputs (stands of trees, wells, terrain and stations).
    #[command(subcommand)]
    Synth(cmd_synth::SynthCommand),
    /// Benchmarks: every method of a capability in one run, with medians, ratios and errors.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
}

fn main() -> ExitCode {
    // `geofield info | head -1` closes stdout early: exit quietly instead of reporting a panic.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if info
            .payload_as_str()
            .is_some_and(|m| m.contains("Broken pipe"))
        {
            std::process::exit(0);
        }
        default_hook(info);
    }));
    let parsed = Cli::command()
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m).map(|c| (c, m)));
    let (cli, matches) = match parsed {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    outputs::install_signal_cleanup();
    // The deepest subcommand's matches carry the global options and where their values came from.
    let (mut leaf, mut names) = (&matches, Vec::new());
    while let Some((name, m)) = leaf.subcommand() {
        names.push(name.to_string());
        leaf = m;
    }
    #[allow(unused_mut)]
    let mut ctx = ctx::Ctx::new(cli.global, names.join(" "), leaf);
    // Under `mpiexec -n R` (feature `mpi`): every rank starts MPI; `disperse`, `krige`,
    // `forest` and `wind` (an atlas's cases, or one solve by rows) split their work over the
    // ranks, every other command refuses to run R times over the same outputs. Only rank 0 prints notes and errors.
    #[cfg(feature = "mpi")]
    {
        match geofield::mpi::Ranks::init() {
            Ok(r) => ctx.ranks = Some(std::sync::Arc::new(r)),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        }
        // The ranks on a node share its cores.
        if let Some(r) = ctx.split()
            && std::env::var_os("RAYON_NUM_THREADS").is_none()
        {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            let _ = rayon::ThreadPoolBuilder::new()
                .num_threads((cores / r.local_size()).max(1))
                .build_global();
        }
        if let Some(r) = ctx.split().map(|r| r.rank()) {
            if r > 0 {
                ctx.args.quiet = true;
            }
            let splits = matches!(
                &cli.command,
                Command::Forest(_)
                    | Command::Info(_)
                    | Command::Disperse(_)
                    | Command::Krige(_)
                    | Command::Wind(_)
            );
            if !splits {
                if r == 0 {
                    eprintln!(
                        "error: `geofield {}` does not split over MPI ranks yet (only `disperse`, \
                         `krige`, `forest` and `wind` do); run it without mpiexec or with -n 1",
                        ctx.command
                    );
                }
                return ExitCode::from(2);
            }
        }
    }
    // The first run on a machine compiles the GPU kernels it needs (cached on disk afterwards):
    // say so once on stderr, unless the command was asked to be quiet.
    if !ctx.quiet() {
        geofield_cuda::set_compile_hook(Some(Box::new(compile_notice)));
    }
    let result = match cli.command {
        Command::Info(a) => cmd_info::run(&a, &ctx),
        Command::Demo(a) => demo::run(&a, &ctx),
        Command::Disperse(a) => cmd_disperse::run(&a, &ctx),
        Command::Forest(a) => cmd_forest::run(&a, &ctx),
        Command::Knn(a) => cmd_knn::run(&a, &ctx),
        Command::Pairs(a) => cmd_pairs::run(&a, &ctx),
        Command::Flock(a) => cmd_flock::run(&a, &ctx),
        Command::Krige(a) => cmd_krige::run(&a, &ctx),
        Command::Krige3d(a) => cmd_krige3d::run(&a, &ctx),
        Command::Cokrige(a) => cmd_cokrige::run(&a, &ctx),
        Command::Variogram(a) => cmd_variogram::run(&a, &ctx),
        Command::Wind(a) => cmd_wind::run(&a, &ctx),
        Command::Synth(c) => cmd_synth::run(&c, &ctx),
        Command::Bench(c) => bench::run(&c, &ctx),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            #[cfg(feature = "mpi")]
            if let Some(r) = ctx.split() {
                // The other ranks may be waiting for this one at the ensemble's start.
                r.fail(render_error(&e));
                if r.rank() > 0 {
                    return ExitCode::from(2);
                }
            }
            eprintln!("error: {}", render_error(&e));
            ExitCode::from(2)
        }
    }
}

/// The command-line flag of a library parameter name (`dz_m` -> `--dz-m`), where one sets it.
fn flag_of(name: &str) -> Option<String> {
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    {
        return None;
    }
    let flag = match name {
        "max_iterations" => "iterations",
        "abs_tolerance_per_s" | "min_height_agl_m" => return None,
        other => other,
    };
    Some(format!("--{}", flag.replace('_', "-")))
}

/// The error and its causes, joined by ": " like anyhow's `{:#}`, with library parameter names
/// shown as the flags that set them, and a cause left out where the message before it already
/// ends with it (an OS error repeated by a wrapper).
fn render_error(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.chain() {
        let text = match cause.downcast_ref::<geofield::GeofieldError>() {
            Some(geofield::GeofieldError::InvalidParameter {
                name,
                value,
                expected,
            }) => match flag_of(name) {
                Some(flag) => format!("{flag} {value}: expected {expected}"),
                None => cause.to_string(),
            },
            _ => cause.to_string(),
        };
        // A cause the message so far already ends with (an OS error a wrapper repeats).
        if parts.join(": ").ends_with(&text) {
            continue;
        }
        parts.push(text);
    }
    parts.join(": ")
}

/// Prints "compiling GPU kernels (once per machine): ..." the first time NVRTC starts.
fn compile_notice(event: &geofield_cuda::CompileEvent) {
    use std::sync::atomic::{AtomicBool, Ordering};
    static SAID: AtomicBool = AtomicBool::new(false);
    if let geofield_cuda::CompileEvent::Start { module, kernels } = event
        && !SAID.swap(true, Ordering::Relaxed)
    {
        let what = if kernels.is_empty() {
            format!("module {module}")
        } else {
            kernels.join(", ")
        };
        eprintln!("compiling GPU kernels (once per machine): {what}");
    }
}
