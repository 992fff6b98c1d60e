//! Where `geofield disperse` puts each species' map as it is computed.
//!
//! For a GeoTIFF, a thread compresses each band into the file's tiles (full resolution and
//! overviews, in parallel over the tiles, in its own thread pool) while the next species
//! computes. The last band is handed over with the file's provenance: its overviews are
//! compressed, then its full-resolution tiles (the end of the file) while everything before
//! them is written and sent to the disk ([`CogBuilder::finish_with_last`]). The maps are kept
//! in memory only when something else needs them (the PNG, `--compare-exact`, or an
//! `.asc`/`.npy` output, which is written from the whole raster at the end).

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::JoinHandle;
use std::time::Instant;

use anyhow::{Result, anyhow};
use geofield_core::{GridSpec, RasterData};
use geofield_io::geotiff::{BandValues, BigTiff, CogBuilder, CogWritten};
use geofield_io::{IoError, RasterMeta};

/// A band for the compressing thread; the last one comes with the file's provenance.
struct Msg {
    index: usize,
    band: RasterData,
    provenance: Option<Vec<(String, String)>>,
}

/// What the compressing thread hands back: the file written (once the last band came), the
/// maps it was asked to keep, and the seconds it spent compressing and writing.
type Done = (Option<CogWritten>, Vec<RasterData>, f64);

/// The compressing thread.
type Worker = JoinHandle<Result<Done, IoError>>;

/// The bands of a run as they come.
pub struct BandSink {
    /// The compressing thread and its inbox, for a GeoTIFF.
    stream: Option<(SyncSender<Msg>, Worker)>,
    /// The maps, when not streamed.
    kept: Vec<RasterData>,
}

/// The sink's result: the GeoTIFF written (if streamed), the maps if kept, and the seconds
/// spent compressing and writing it (the most of it beside the species).
pub struct Finished {
    pub written: Option<CogWritten>,
    pub maps: Vec<RasterData>,
    pub compress_s: f64,
}

impl BandSink {
    /// A sink for maps on `grid` (one band per name, f64 if `f64`). With `staged` (a GeoTIFF's
    /// staged path; `out` names it in errors) the bands are compressed and the file written as
    /// they come, and kept only if `keep`; otherwise they are all kept.
    pub fn new(
        out: &Path,
        staged: Option<PathBuf>,
        grid: GridSpec,
        names: Vec<String>,
        f64: bool,
        meta: RasterMeta,
        keep: bool,
    ) -> Result<Self> {
        let Some(staged) = staged else {
            return Ok(Self {
                stream: None,
                kept: Vec::new(),
            });
        };
        let cog = CogBuilder::new(out, grid, names, f64, meta)?;
        // One band waiting while one is compressed: memory stays bounded if the computing
        // outruns the compressing.
        let (tx, rx) = mpsc::sync_channel(1);
        let worker = std::thread::Builder::new()
            .name("geotiff".into())
            .spawn(move || compress(cog, rx, &staged, keep))?;
        Ok(Self {
            stream: Some((tx, worker)),
            kept: Vec::new(),
        })
    }

    /// Take band `index`; the last band comes with the file's `provenance`. An error is the
    /// compressing thread's (it stopped).
    pub fn push(
        &mut self,
        index: usize,
        band: RasterData,
        provenance: Option<Vec<(String, String)>>,
    ) -> Result<()> {
        let Some((tx, _)) = &self.stream else {
            self.kept.push(band);
            return Ok(());
        };
        let msg = Msg {
            index,
            band,
            provenance,
        };
        if tx.send(msg).is_ok() {
            return Ok(());
        }
        // The thread ended early: its error says why.
        match self.stream.take().map(|(_, w)| w.join()) {
            Some(Ok(Err(e))) => Err(e.into()),
            _ => Err(anyhow!("the GeoTIFF compressing thread stopped")),
        }
    }

    /// Wait for the file to be written (or, not streamed, hand back the maps).
    pub fn finish(self) -> Result<Finished> {
        let Some((tx, worker)) = self.stream else {
            return Ok(Finished {
                written: None,
                maps: self.kept,
                compress_s: 0.0,
            });
        };
        drop(tx);
        let (written, maps, compress_s) = worker
            .join()
            .map_err(|_| anyhow!("the GeoTIFF compressing thread panicked"))??;
        Ok(Finished {
            written,
            maps,
            compress_s,
        })
    }
}

/// The compressing thread: every band received into `cog`, kept if `keep`; the band with the
/// provenance finishes the file at `path`.
fn compress(cog: CogBuilder, rx: Receiver<Msg>, path: &Path, keep: bool) -> Result<Done, IoError> {
    // Its own threads: in the shared pool, the species' preparing would queue behind a whole
    // band's tiles; with two pools the system shares the cores between them.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(rayon::current_num_threads())
        .thread_name(|i| format!("geotiff-{i}"))
        .build()
        .ok();
    let (mut cog, mut kept, mut busy, mut written) = (Some(cog), Vec::new(), 0.0, None);
    for msg in rx {
        let t = Instant::now();
        let values = values_of(&msg.band);
        let Some(mut c) = cog.take() else {
            return Err(IoError::InvalidOutput {
                path: path.to_path_buf(),
                reason: format!("band {} came after the last one", msg.index + 1),
            });
        };
        match msg.provenance.clone() {
            None => {
                in_pool(&pool, || c.add_band(path, msg.index, values))?;
                cog = Some(c);
            }
            Some(p) => {
                c.set_provenance(p);
                let last = || c.finish_with_last(path, BigTiff::IfNeeded, msg.index, values);
                written = Some(in_pool(&pool, last)?);
            }
        }
        busy += t.elapsed().as_secs_f64();
        if keep {
            kept.push(msg.band);
        }
    }
    Ok((written, kept, busy))
}

/// `f` in `pool` when there is one.
fn in_pool<R: Send>(pool: &Option<rayon::ThreadPool>, f: impl FnOnce() -> R + Send) -> R {
    match pool {
        Some(p) => p.install(f),
        None => f(),
    }
}

fn values_of(band: &RasterData) -> BandValues<'_> {
    match band {
        RasterData::F32(v) => BandValues::F32(v),
        RasterData::F64(v) => BandValues::F64(v),
    }
}
