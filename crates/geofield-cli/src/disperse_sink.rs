//! Where `geofield disperse` puts each species' map as it is computed, strip by strip.
//!
//! For a GeoTIFF, a thread compresses each strip of rows into the file's tiles (full
//! resolution and overviews, in parallel over the tiles) while the next strip computes; the
//! file is laid out and written once the last band is in
//! ([`geofield_io::geotiff::CogBuilder::add_rows`]). The maps are kept in memory only when
//! something else needs them (the PNG, `--compare-exact`, or an `.asc`/`.npy` output, which is
//! written from the whole raster at the end).

use std::path::Path;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::JoinHandle;
use std::time::Instant;

use anyhow::{Result, anyhow};
use geofield::Backend;
use geofield::dispersal::Strip;
use geofield_core::{GridSpec, RasterData};
use geofield_io::geotiff::{BandValues, CogBuilder, CogPart};
use geofield_io::{IoError, RasterMeta};

/// What compresses the strips: the whole file's builder, or one MPI rank's part of the file
/// ([`geofield_io::geotiff::CogPart`], its strip of rows).
pub enum Encoder {
    Whole(CogBuilder),
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    Part(CogPart),
}

impl Encoder {
    fn add_rows(
        &mut self,
        path: &Path,
        band: usize,
        row0: usize,
        values: BandValues<'_>,
    ) -> Result<(), IoError> {
        match self {
            Encoder::Whole(c) => c.add_rows(path, band, row0, values),
            Encoder::Part(c) => c.add_rows(path, band, row0, values),
        }
    }
}

/// What the compressing thread hands back: the encoder, the maps it was asked to keep, and
/// the seconds it spent compressing.
type Encoded = (Encoder, Vec<RasterData>, f64);

/// The compressing thread.
type Worker = JoinHandle<Result<Encoded, IoError>>;

/// The bands of a run as they come.
pub struct BandSink {
    /// The compressing thread and its inbox, for a GeoTIFF.
    stream: Option<(SyncSender<Strip>, Worker)>,
    /// The maps, when not streamed or when kept.
    kept: Vec<Option<RasterData>>,
}

/// Strips waiting for the compressing thread: memory stays bounded if the computing outruns
/// the compressing.
const QUEUED_STRIPS: usize = 3;

/// Add a strip to the kept maps (strips of a band come in order).
fn keep_strip(kept: &mut Vec<Option<RasterData>>, s: Strip) {
    if kept.len() <= s.band {
        kept.resize_with(s.band + 1, || None);
    }
    match (&mut kept[s.band], s.data) {
        (Some(RasterData::F32(v)), RasterData::F32(w)) => v.extend_from_slice(&w),
        (Some(RasterData::F64(v)), RasterData::F64(w)) => v.extend_from_slice(&w),
        (slot, data) => *slot = Some(data),
    }
}

/// The kept maps in band order.
fn kept_maps(kept: Vec<Option<RasterData>>) -> Vec<RasterData> {
    kept.into_iter().flatten().collect()
}

/// The sink's result: the GeoTIFF encoder (every band compressed) if streamed, the maps if
/// kept, and the seconds spent compressing (overlapped with the computing).
pub struct Finished {
    pub cog: Option<Encoder>,
    pub maps: Vec<RasterData>,
    pub compress_s: f64,
}

impl BandSink {
    /// A sink for maps on `grid` (one band per name, f64 if `f64`). With `geotiff` the bands
    /// are compressed into a GeoTIFF for `out` with `meta` as they come, and kept only if
    /// `keep` (strips not kept are given back to `recycle`, the backend that computed them);
    /// otherwise they are all kept.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        out: &Path,
        grid: GridSpec,
        names: Vec<String>,
        f64: bool,
        meta: RasterMeta,
        geotiff: bool,
        keep: bool,
        recycle: Option<Backend>,
    ) -> Result<Self> {
        let cog = match geotiff {
            true => Some(Encoder::Whole(CogBuilder::new(
                out, grid, names, f64, meta,
            )?)),
            false => None,
        };
        Self::with_encoder(out, cog, keep, recycle)
    }

    /// A sink whose strips go to `cog` (compressed as they come; kept only if `keep`), or,
    /// without one, are all kept.
    pub fn with_encoder(
        out: &Path,
        cog: Option<Encoder>,
        keep: bool,
        recycle: Option<Backend>,
    ) -> Result<Self> {
        let Some(cog) = cog else {
            return Ok(Self {
                stream: None,
                kept: Vec::new(),
            });
        };
        let (tx, rx) = mpsc::sync_channel(QUEUED_STRIPS);
        let path = out.to_path_buf();
        let worker = std::thread::Builder::new()
            .name("geotiff".into())
            .spawn(move || compress(cog, rx, &path, keep, recycle))?;
        Ok(Self {
            stream: Some((tx, worker)),
            kept: Vec::new(),
        })
    }

    /// Take a strip (a band's strips in order). An error is the compressing thread's (it
    /// stopped).
    pub fn push(&mut self, strip: Strip) -> Result<()> {
        let Some((tx, _)) = &self.stream else {
            keep_strip(&mut self.kept, strip);
            return Ok(());
        };
        if tx.send(strip).is_ok() {
            return Ok(());
        }
        // The thread ended early: its error says why.
        match self.stream.take().map(|(_, w)| w.join()) {
            Some(Ok(Err(e))) => Err(e.into()),
            _ => Err(anyhow!("the GeoTIFF compressing thread stopped")),
        }
    }

    /// Wait for the last band to be compressed.
    pub fn finish(self) -> Result<Finished> {
        let Some((tx, worker)) = self.stream else {
            return Ok(Finished {
                cog: None,
                maps: kept_maps(self.kept),
                compress_s: 0.0,
            });
        };
        drop(tx);
        let (cog, maps, compress_s) = worker
            .join()
            .map_err(|_| anyhow!("the GeoTIFF compressing thread panicked"))??;
        Ok(Finished {
            cog: Some(cog),
            maps,
            compress_s,
        })
    }
}

/// The compressing thread: every strip received into `cog`, kept if `keep`.
fn compress(
    mut cog: Encoder,
    rx: Receiver<Strip>,
    path: &Path,
    keep: bool,
    recycle: Option<Backend>,
) -> Result<Encoded, IoError> {
    let (mut kept, mut busy) = (Vec::new(), 0.0);
    // Its own threads: in the shared pool, the species' preparing would queue behind a whole
    // band's tiles; with two pools the system shares the cores between them.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(rayon::current_num_threads())
        .thread_name(|i| format!("geotiff-{i}"))
        .build()
        .ok();
    for strip in rx {
        let t = Instant::now();
        let values = match &strip.data {
            RasterData::F32(v) => BandValues::F32(v),
            RasterData::F64(v) => BandValues::F64(v),
        };
        let (band, row0) = (strip.band, strip.row0);
        match &pool {
            Some(p) => p.install(|| cog.add_rows(path, band, row0, values))?,
            None => cog.add_rows(path, band, row0, values)?,
        }
        busy += t.elapsed().as_secs_f64();
        if keep {
            keep_strip(&mut kept, strip);
        } else if let Some(be) = &recycle {
            // The strip's buffer serves a later strip's download (no page faults).
            be.recycle(strip.data);
        }
    }
    Ok((cog, kept_maps(kept), busy))
}
