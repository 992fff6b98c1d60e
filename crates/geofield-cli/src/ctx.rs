//! The options every command shares (`--backend`, `--quiet`, `--json`, `--crs`, `--compress`) and the one place
//! that opens the backend and prints why the CPU is used.
//!
//! The shared options are clap `global` arguments of the top-level command, so they may be given
//! before or after the subcommand (`geofield -q knn ...` or `geofield knn ... -q`). A command that
//! has no use for one of them refuses it when it was given on the command line
//! ([`Ctx::refuse_unused`]); a value from the environment (`GEOFIELD_BACKEND`) is not an error.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;
use clap::parser::ValueSource;
use geofield::{BackendChoice, BackendSelection, backend};

/// Options shared by every command.
#[derive(Args, Clone, Debug)]
pub struct GlobalArgs {
    /// auto | cpu | cuda | cuda:N: where to compute (auto: the GPU when one works, else the
    /// CPU, with a note saying why).
    #[arg(
        long,
        global = true,
        env = "GEOFIELD_BACKEND",
        default_value = "auto",
        help_heading = "Global options"
    )]
    pub backend: String,
    /// No progress output and no notes; results, warnings and errors are still printed.
    #[arg(long, short, global = true, help_heading = "Global options")]
    pub quiet: bool,
    /// Write the run's summary (for `bench`: every measured row, as it is measured) as JSON.
    #[arg(
        long,
        global = true,
        value_name = "FILE",
        help_heading = "Global options"
    )]
    pub json: Option<PathBuf>,
    /// CRS of the coordinates as EPSG:CODE (e.g. EPSG:32633), written into every georeferenced
    /// output.
    #[arg(
        long,
        global = true,
        value_name = "EPSG:CODE",
        help_heading = "Global options"
    )]
    pub crs: Option<String>,
    /// deflate | zstd: how GeoTIFF outputs are compressed. DEFLATE is read everywhere;
    /// Zstandard writes 2.7x faster for the same size (GDAL >= 2.3, QGIS, rasterio, terra).
    #[arg(
        long,
        global = true,
        env = "GEOFIELD_COMPRESS",
        default_value = "deflate",
        value_name = "CODEC",
        help_heading = "Global options"
    )]
    pub compress: String,
}

/// One global option as named on the command line.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Global {
    Backend,
    Json,
    Crs,
    Compress,
}

impl Global {
    fn id(self) -> &'static str {
        match self {
            Global::Backend => "backend",
            Global::Json => "json",
            Global::Crs => "crs",
            Global::Compress => "compress",
        }
    }
}

/// What a command runs with: the shared options, and which of them the user gave explicitly.
#[derive(Clone, Debug)]
pub struct Ctx {
    pub args: GlobalArgs,
    /// The subcommand's name, for messages (`knn`, `bench wind`).
    pub command: String,
    explicit: Vec<Global>,
    /// The MPI job's ranks (feature `mpi`).
    #[cfg(feature = "mpi")]
    pub ranks: Option<std::sync::Arc<geofield::mpi::Ranks>>,
    /// A backend already open, which [`Ctx::open_backend`] hands out again (a wind atlas opens
    /// its GPU once for all its cases).
    pub opened: Option<BackendSelection>,
}

impl Ctx {
    /// The context of the subcommand whose matches are `m` (global arguments propagate to it).
    pub fn new(args: GlobalArgs, command: String, m: &clap::ArgMatches) -> Self {
        let explicit = [Global::Backend, Global::Json, Global::Crs, Global::Compress]
            .into_iter()
            .filter(|g| m.value_source(g.id()) == Some(ValueSource::CommandLine))
            .collect();
        Ctx {
            args,
            command,
            explicit,
            #[cfg(feature = "mpi")]
            ranks: None,
            opened: None,
        }
    }

    /// The MPI ranks of this job when it has more than one (feature `mpi`).
    #[cfg(feature = "mpi")]
    pub fn split(&self) -> Option<&geofield::mpi::Ranks> {
        self.ranks.as_deref().filter(|r| r.size() > 1)
    }

    /// Runs `f` on every core of this node when this is a split job's rank working alone after
    /// the others are done (rank 0 writing what it gathered): the global thread pool holds only
    /// this rank's share of the cores. Otherwise runs `f` as it is.
    pub fn with_all_cores<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        #[cfg(feature = "mpi")]
        if let Some(r) = self.split()
            && r.local_size() > 1
            && std::env::var_os("RAYON_NUM_THREADS").is_none()
        {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            if let Ok(pool) = rayon::ThreadPoolBuilder::new().num_threads(cores).build() {
                return pool.install(f);
            }
        }
        f()
    }

    /// The MPI ranks of this job (1 without mpiexec or without the feature `mpi`).
    pub fn rank_count(&self) -> usize {
        #[cfg(feature = "mpi")]
        if let Some(r) = self.split() {
            return r.size();
        }
        1
    }

    pub fn quiet(&self) -> bool {
        self.args.quiet
    }

    pub fn json(&self) -> Option<&std::path::Path> {
        self.args.json.as_deref()
    }

    /// Refuse the shared options in `unused` when the user gave them explicitly: this command
    /// would ignore them.
    pub fn refuse_unused(&self, unused: &[Global]) -> Result<()> {
        for g in unused {
            if self.explicit.contains(g) {
                bail!(
                    "--{} has no effect on `geofield {}`; leave it out",
                    g.id(),
                    self.command
                );
            }
        }
        Ok(())
    }

    /// The backend the user asked for, parsed.
    pub fn backend_choice(&self) -> Result<BackendChoice> {
        self.args
            .backend
            .parse()
            .map_err(|e: String| anyhow::anyhow!("--backend: {e}"))
    }

    /// The backend to open: `--backend`, where under MPI `auto` takes the GPU of the rank's
    /// place on its node (one rank per GPU).
    pub fn resolved_choice(&self) -> Result<BackendChoice> {
        let choice = self.backend_choice()?;
        #[cfg(feature = "mpi")]
        let choice = match (self.split(), choice) {
            (Some(r), BackendChoice::Auto) => match geofield_cuda::device_count() {
                Ok(n) if n > 0 => BackendChoice::Cuda(r.local_rank() % n),
                _ => choice,
            },
            _ => choice,
        };
        Ok(choice)
    }

    /// Open the backend (or hand out the one already open), printing the reason when `auto`
    /// falls back to the CPU.
    pub fn open_backend(&self) -> Result<BackendSelection> {
        if let Some(sel) = &self.opened {
            return Ok(sel.clone());
        }
        let sel = backend::select(self.resolved_choice()?)?;
        self.report_backend(&sel);
        Ok(sel)
    }

    /// Print the CPU-fallback note of a selection (made here or elsewhere, e.g. in a background
    /// thread), and on a GPU have GeoTIFF tiles compressed there from now on
    /// ([`geofield::gpu_tiles::install`]).
    pub fn report_backend(&self, sel: &BackendSelection) {
        if let Some(r) = &sel.fallback_reason {
            self.note(&format!("using the CPU backend: {r}"));
        }
        geofield::gpu_tiles::install(&sel.backend);
    }

    /// An informational line on stderr, suppressed by `--quiet`.
    pub fn note(&self, msg: &str) {
        if !self.args.quiet {
            eprintln!("note: {msg}");
        }
    }

    /// How GeoTIFF outputs are compressed (`--compress`).
    pub fn compression(&self) -> Result<geofield_io::geotiff::Compression> {
        geofield_io::geotiff::Compression::parse(&self.args.compress).with_context(|| {
            format!(
                "--compress {:?}: expected one of {}",
                self.args.compress,
                geofield_io::geotiff::Compression::NAMES
            )
        })
    }

    /// The CRS as an EPSG code, if given; a warning when geofield has no definition of it.
    pub fn crs_epsg(&self) -> Result<Option<u16>> {
        let code = parse_crs(self.args.crs.as_deref())?;
        if let Some(c) = code
            && geofield_io::crs::epsg_wkt(c).is_none()
        {
            eprintln!(
                "warning: --crs EPSG:{c} is not in geofield's EPSG table: GeoTIFFs record the \
                 code, but no .prj or NetCDF grid mapping can be written for it"
            );
        }
        Ok(code)
    }
}

/// Parse `EPSG:CODE` (or a bare code).
pub fn parse_crs(s: Option<&str>) -> Result<Option<u16>> {
    let Some(t) = s else { return Ok(None) };
    let code = t.trim().to_ascii_uppercase();
    let code = code.strip_prefix("EPSG:").unwrap_or(&code);
    let n = code
        .parse::<u16>()
        .ok()
        .filter(|&n| n > 0)
        .with_context(|| format!("--crs {t:?}: expected EPSG:CODE, e.g. EPSG:32633"))?;
    Ok(Some(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crs_codes_parse_and_bad_ones_are_refused() {
        assert_eq!(parse_crs(Some("EPSG:32633")).unwrap(), Some(32633));
        assert_eq!(parse_crs(Some(" epsg:4326 ")).unwrap(), Some(4326));
        assert_eq!(parse_crs(None).unwrap(), None);
        for bad in ["EPSG:", "EPSG:0", "UTM33", "EPSG:99999999"] {
            assert!(parse_crs(Some(bad)).is_err(), "{bad}");
        }
    }
}
