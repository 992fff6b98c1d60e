//! `mpiexec -n R geofield disperse ...`: the maps split by rows over the ranks (feature `mpi`).
//!
//! 1. Every rank reads the species and the whole stem map and opens its backend (its GPU under
//!    `--backend auto`); rank 0 also checks the outputs. Any rank failing here ends the job
//!    before any work ([`Ranks::agree`]).
//! 2. The rows are cut into one strip per rank ([`RowSplit`]: whole units of GeoTIFF tile rows,
//!    so that each strip's tiles are its own). Each rank computes its rows of every species'
//!    map ([`dispersal::disperse_rows`]: every value is the one-process run's) and compresses
//!    them as they come into its part of the GeoTIFF ([`CogPart`]): the full-resolution tiles
//!    and the largest overviews. The ranks combine what each needs of the others through
//!    [`Ranks::combine`] (the near/far certificate's maximum, the reports' totals).
//! 3. Rank 0 gathers each part's tile sizes and the small raw rows of the next overview, builds
//!    the coarse overviews, lays the file out and writes its head; each rank then writes its
//!    own tiles at the offsets rank 0 sent ([`geofield_io::geotiff::assemble`]). The file is
//!    byte for byte the one a single process writes.
//! 4. The maps are gathered whole on rank 0 only where an output needs them (`--png`, `.asc`,
//!    `.npy`).
//!
//! A rank that fails after the start tells the others at the next point where they combine or
//! agree, and every rank exits with "rank R: cause"; nothing is moved into place.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail};
use geofield::GeofieldError;
use geofield::dispersal::FarExchange;
use geofield::dispersal::{self, Precision, RowShare, SpeciesReport};
use geofield::mpi::Ranks;
use geofield_core::RasterData;
use geofield_io::RasterFormat;
use geofield_io::geotiff::{self, BigTiff, CogPart, RowSplit};

use crate::cmd_disperse::{DisperseArgs, Prepared, prepare_part, strip_height};
use crate::ctx::Ctx;
use crate::disperse_report;
use crate::disperse_sink::{BandSink, Encoder};
use crate::progress;

pub fn run(a: &DisperseArgs, ctx: &Ctx, ranks: &Ranks) -> Result<()> {
    let start = Instant::now();
    let root = ranks.rank() == 0;
    if a.compare_exact {
        bail!(
            "--compare-exact is not split over MPI ranks: run it in one process (without mpiexec)"
        );
    }
    // GEOFIELD_FAR_EXCHANGE: how near/far's far field crosses the ranks (every rank reads the
    // same environment, so every rank stops alike on a bad value).
    let far = far_exchange()?;
    // GEOFIELD_MPI_FAIL=R (rank R fails before the work) or band:B (the last rank fails as it
    // hands on band B's rows, while the others compute): how the tests check that one rank's
    // failure ends the whole job.
    let inject = std::env::var("GEOFIELD_MPI_FAIL").unwrap_or_default();
    // Each rank reads its byte range of the stem map (collective: every rank reads, then the
    // injected failure).
    let prepared = prepare_part(
        a,
        ctx,
        root,
        Some(ranks as &dyn geofield::wind::split::Exchange),
    );
    let prepared = match inject.parse::<usize>().ok() == Some(ranks.rank()) {
        true => Err(anyhow!(
            "injected failure before the work (GEOFIELD_MPI_FAIL)"
        )),
        false => prepared,
    };
    // A rank that found another's failure (`Ok(None)`) agrees: the failing rank's error comes.
    ranks.start(prepared.as_ref().map(|_| ()).map_err(|e| format!("{e:#}")))?;
    let mut p = prepared?.context("another rank failed reading the stem map")?;
    // Whether the ranks already know of a failure (the combining returned it): then no rank
    // waits for another word from this one.
    let known = AtomicBool::new(false);
    let result = compute(a, ctx, ranks, &mut p, &known, far);
    let (cog, kept, reports, t) = match result {
        Ok(r) => r,
        Err(e) => {
            if !known.load(Ordering::SeqCst) {
                // The others are at their next combining or agreeing point: tell them.
                let _ = ranks.agree(Err(format!("{e:#}")));
            }
            return Err(e);
        }
    };
    write(a, ctx, ranks, p, start, t, cog, kept, &reports)
}

/// `GEOFIELD_FAR_EXCHANGE` = `auto` (unset: the trees or the lattice, whichever crosses in fewer
/// words), `lattice` (each rank spreads its piece and the lattices are summed) or `trees` (every
/// rank gathers every tree): the same maps either way, a choice of traffic and memory.
fn far_exchange() -> Result<FarExchange> {
    match std::env::var("GEOFIELD_FAR_EXCHANGE").as_deref() {
        Err(_) | Ok("auto") => Ok(FarExchange::Auto),
        Ok("lattice") => Ok(FarExchange::Lattice),
        Ok("trees") => Ok(FarExchange::Trees),
        Ok(other) => Err(anyhow!(
            "GEOFIELD_FAR_EXCHANGE={other}: expected auto, lattice or trees"
        )),
    }
}

/// What a rank computed: its part of the GeoTIFF, its rows of the kept maps, the reports, and
/// when the outputs' work started.
type Computed = (
    Option<geotiff::PartDone>,
    Vec<RasterData>,
    Vec<SpeciesReport>,
    Instant,
);

/// Step 2: this rank's rows of every map, compressed into its part as they come.
fn compute(
    a: &DisperseArgs,
    ctx: &Ctx,
    ranks: &Ranks,
    p: &mut Prepared,
    known: &AtomicBool,
    far: FarExchange,
) -> Result<Computed> {
    let grid = p.grid;
    let split = RowSplit::new(grid.cols, grid.rows, ranks.size());
    let mine = split.rows[ranks.rank()].clone();
    let f64 = p.opts.precision == Precision::F64;
    let geotiff = RasterFormat::from_path(&a.out)? == RasterFormat::GeoTiff;
    let keep = a.png.is_some() || !geotiff;
    let part = geotiff.then(|| {
        Encoder::Part(CogPart::new(
            &grid,
            p.species.len(),
            f64,
            &p.meta(),
            &split,
            ranks.rank(),
        ))
    });
    let be = p.sel.backend.clone();
    let mut sink = BandSink::with_encoder(&a.out, part, keep, Some(be.clone()))?;
    let pb = progress::bar(p.species.len() as u64, ctx.quiet(), "dispersal");
    let never = geofield::Cancel::new();
    let combine = |m: Result<[f64; 2], String>| {
        let r = ranks.combine(m);
        if r.is_err() {
            known.store(true, Ordering::SeqCst);
        }
        r
    };
    let share = RowShare {
        rows: mine,
        part: ranks.rank(),
        parts: ranks.size(),
        combine: Some(&combine),
        trees: Some(ranks),
        far,
    };
    let fail_band = std::env::var("GEOFIELD_MPI_FAIL")
        .ok()
        .and_then(|f| {
            f.strip_prefix("band:")
                .and_then(|b| b.parse::<usize>().ok())
        })
        .filter(|_| ranks.rank() + 1 == ranks.size());
    let t = Instant::now();
    let mut sink_error = None;
    let reports = dispersal::disperse_rows(
        &be,
        &grid,
        &p.species,
        &p.stand,
        &p.opts,
        strip_height(a, &grid, p.opts.precision),
        &share,
        &mut |s| disperse_report::step(&pb, s, true),
        &never,
        &mut |strip| {
            if fail_band == Some(strip.band) {
                return Err(GeofieldError::Invalid(
                    "injected failure (GEOFIELD_MPI_FAIL)".into(),
                ));
            }
            sink.push(strip).map_err(|e| {
                sink_error = Some(e);
                GeofieldError::Invalid("the output stopped".into())
            })
        },
    );
    let reports = match (reports, sink_error) {
        (_, Some(e)) => return Err(e),
        (r, None) => r?,
    };
    pb.finish_and_clear();
    p.timing.dispersal(t.elapsed().as_secs_f64(), &reports);
    let t = Instant::now();
    let finished = sink.finish()?;
    p.timing.compress_s = finished.compress_s;
    let part = match finished.cog {
        Some(Encoder::Part(part)) => Some(part.finish(&a.out)?),
        Some(Encoder::Whole(_)) => bail!("a rank's encoder is not a part"),
        None => None,
    };
    Ok((part, finished.maps, reports, t))
}

/// Steps 3 and 4: the GeoTIFF written together, the kept maps gathered, rank 0's outputs.
#[allow(clippy::too_many_arguments)]
fn write(
    a: &DisperseArgs,
    ctx: &Ctx,
    ranks: &Ranks,
    mut p: Prepared,
    start: Instant,
    t: Instant,
    part: Option<geotiff::PartDone>,
    kept: Vec<RasterData>,
    reports: &[SpeciesReport],
) -> Result<()> {
    let root = ranks.rank() == 0;
    // Every rank computed its rows (or the job stops here).
    ranks.agree(Ok(()))?;
    let grid = p.grid;
    let split = RowSplit::new(grid.cols, grid.rows, ranks.size());
    let f64 = p.opts.precision == Precision::F64;
    let messages = part.as_ref().map(|d| ranks.gather_bytes(&d.message()));
    // The kept maps, whole on rank 0.
    let mut maps = Vec::new();
    if a.png.is_some() || part.is_none() {
        for band in 0..p.species.len() {
            let mine = match kept.get(band) {
                Some(RasterData::F32(v)) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
                Some(RasterData::F64(v)) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
                None => Vec::new(),
            };
            if let Some(all) = ranks.gather_bytes(&mine) {
                let bytes: Vec<u8> = all.concat();
                maps.push(match f64 {
                    false => RasterData::F32(
                        bytes
                            .chunks_exact(4)
                            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                            .collect(),
                    ),
                    true => RasterData::F64(
                        bytes
                            .chunks_exact(8)
                            .map(|b| f64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
                            .collect(),
                    ),
                });
            }
        }
    }
    let provenance = p.provenance(a, reports);
    let Some(part) = part else {
        // `.asc` / `.npy`: rank 0 writes the gathered maps.
        if !root {
            return Ok(());
        }
        let out = p
            .kept(maps, reports)?
            .context("the maps were not gathered")?;
        let (crs, compression) = (p.crs, p.compression);
        let mut written = p.outs.write(&a.out, |path| {
            Ok(dispersal::io::write_seed_map(
                path,
                &out.raster,
                crs,
                &provenance,
                compression,
            )?)
        })?;
        return p.finish(a, ctx, start, t, Some(&out), reports, None, &mut written);
    };
    if !root {
        // Where rank 0 put the file, and this rank's offsets in it.
        let plan = ranks.broadcast_bytes(Vec::new());
        let r = write_part(&part, &plan, ranks.rank(), ranks.size());
        ranks.agree(r.map_err(|e| format!("{e:#}")))?;
        return Ok(());
    }
    let messages = messages.flatten().context("the parts were not gathered")?;
    let mut meta = p.meta();
    meta.provenance = provenance;
    let names = p.names.clone();
    let mut bytes = 0;
    let mut called = false;
    // Rank 0's seconds laying the file out and writing (every rank's tiles in), then syncing.
    let (mut write_s, mut sync_s) = (0.0, 0.0);
    let written = p.outs.write(&a.out, |path| {
        called = true;
        let t0 = Instant::now();
        let laid = geotiff::assemble(
            path,
            &grid,
            &names,
            f64,
            &meta,
            &split,
            &messages,
            BigTiff::IfNeeded,
        );
        // The plan: the file's path, then every rank's offsets (an empty plan: rank 0 failed).
        let plan = match &laid {
            Ok(l) => {
                bytes = l.bytes;
                let mut b = Vec::new();
                let s = path.to_string_lossy().into_owned();
                b.extend_from_slice(&(s.len() as u64).to_le_bytes());
                b.extend_from_slice(s.as_bytes());
                for starts in &l.starts {
                    b.extend_from_slice(&(starts.len() as u64).to_le_bytes());
                    for x in starts {
                        b.extend_from_slice(&x.to_le_bytes());
                    }
                }
                b
            }
            Err(_) => Vec::new(),
        };
        let plan = ranks.broadcast_bytes(plan);
        let mine = match laid {
            Ok(_) => write_part(&part, &plan, 0, ranks.size()),
            Err(e) => Err(e.into()),
        };
        ranks.agree(mine.map_err(|e| format!("{e:#}")))?;
        write_s = t0.elapsed().as_secs_f64();
        // Every tile is in: the file to disk before it moves into place.
        let t1 = Instant::now();
        std::fs::File::open(path)
            .and_then(|f| f.sync_all())
            .with_context(|| format!("syncing {}", path.display()))?;
        sync_s = t1.elapsed().as_secs_f64();
        crate::output::warn_if_no_crs(path, p.crs, "declare one with --crs EPSG:CODE");
        Ok(vec![path.to_path_buf()])
    });
    let mut written = match written {
        Ok(w) => w,
        Err(e) => {
            if !called {
                // The others wait for the plan: an empty one, then the error.
                ranks.broadcast_bytes(Vec::new());
                let _ = ranks.agree(Err(format!("{e:#}")));
            }
            return Err(e);
        }
    };
    p.timing.file_bytes = Some(bytes);
    p.timing.file_write_s = Some(write_s);
    p.timing.disk_sync_s = Some(sync_s);
    let out = p.kept(maps, reports)?;
    if ranks.size() > 1 && !ctx.quiet() {
        eprintln!("split over {} ranks: rows {:?}", ranks.size(), split.rows);
    }
    p.finish(a, ctx, start, t, out.as_ref(), reports, None, &mut written)
}

/// Write this rank's tiles where `plan` (rank 0's broadcast) says.
fn write_part(part: &geotiff::PartDone, plan: &[u8], rank: usize, ranks: usize) -> Result<()> {
    let mut at = 0usize;
    let u64_at = |at: &mut usize| -> Result<u64> {
        let b = plan
            .get(*at..*at + 8)
            .ok_or_else(|| anyhow!("rank 0 could not lay the file out"))?;
        *at += 8;
        Ok(u64::from_le_bytes(b.try_into()?))
    };
    let n = u64_at(&mut at)? as usize;
    let path = plan
        .get(at..at + n)
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .ok_or_else(|| anyhow!("rank 0's plan is cut short"))?;
    at += n;
    let mut starts = Vec::new();
    for r in 0..ranks {
        let k = u64_at(&mut at)? as usize;
        let mut s = Vec::with_capacity(k.min(plan.len() / 8));
        for _ in 0..k {
            s.push(u64_at(&mut at)?);
        }
        if r == rank {
            starts = s;
        }
    }
    let path = Path::new(&path);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .with_context(|| format!("opening {} to write this rank's tiles", path.display()))?;
    part.write_at(path, &file, &starts)?;
    Ok(())
}
