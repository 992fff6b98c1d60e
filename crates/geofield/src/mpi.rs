//! Runs split over MPI ranks (cargo feature `mpi`, on rsmpi; started with `mpiexec -n R`).
//!
//! - [`Ranks::init`] starts MPI (asking for `MPI_THREAD_MULTIPLE`, which rank 0's dispatcher
//!   uses) and tells each rank its place: [`Ranks::rank`], [`Ranks::size`], the rank on its node
//!   ([`Ranks::local_rank`], which picks its GPU: one rank per GPU) and the MPI library
//!   ([`library_version`]).
//! - [`Ranks::agree`]: every rank learns whether every rank is fine, and if not, which rank
//!   failed and why (the lowest failing rank's message): inputs are checked before any work,
//!   and a bad input on one rank ends the whole job cleanly instead of leaving the others
//!   waiting.
//! - [`Ranks::ensemble`]: `n` independent cases (forest replicates, wind directions) with
//!   dynamic load balancing. Rank 0 hands out case numbers on request from a dispatcher thread
//!   while its main thread works on cases too; each rank runs its cases and keeps their results
//!   (bytes); at the end rank 0 gathers them in case order, so that it writes exactly what a
//!   single process writes. A failing case stops the handing out; every rank finishes its
//!   current case, and every rank returns the error, naming the rank and the cause. A rank that
//!   fails before the ensemble calls [`Ranks::fail`], which the others, waiting at the
//!   ensemble's start, receive.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use ::mpi::Threading;
use ::mpi::datatype::PartitionMut;
use ::mpi::topology::{Communicator, SimpleCommunicator};
use ::mpi::traits::*;

use crate::GeofieldError;

const TAG_ASK: i32 = 7101;
const TAG_GIVE: i32 = 7102;
/// Halo rows of the split wind solve going north (to the rank below in number) and south.
const TAG_NORTH: i32 = 7201;
const TAG_SOUTH: i32 = 7202;
/// [`crate::wind::split::Exchange::all_to_all`]'s messages.
const TAG_MAIL: i32 = 7301;
/// A worker's request: the next case, please (its last case went well).
const ASK: i64 = -1;
/// A worker's request after a failed case: stop handing out cases.
const FAILED: i64 = -2;
/// The dispatcher's answer when there is no case left (or the ensemble stops).
const NONE: i64 = -1;

/// The MPI library's version (the first line of its version string).
pub fn library_version() -> String {
    let v = ::mpi::environment::library_version().unwrap_or_else(|_| "unknown".into());
    v.lines()
        .next()
        .unwrap_or("unknown")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// This process's MPI rank within the job (MPI is finalised when it is dropped).
pub struct Ranks {
    _universe: ::mpi::environment::Universe,
    world: SimpleCommunicator,
    threaded: bool,
    local_rank: usize,
    local_size: usize,
    /// Whether this rank has reached [`Ranks::ensemble`] (then a later failure needs no
    /// [`Ranks::fail`]).
    entered: AtomicBool,
}

impl std::fmt::Debug for Ranks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "rank {} of {}", self.rank(), self.size())
    }
}

fn failed(what: &str) -> GeofieldError {
    GeofieldError::Invalid(format!("MPI: {what}"))
}

impl Ranks {
    /// Starts MPI (once per process).
    pub fn init() -> Result<Ranks, GeofieldError> {
        let (universe, threading) = ::mpi::initialize_with_threading(Threading::Multiple)
            .ok_or_else(|| failed("MPI was already initialised in this process"))?;
        let world = universe.world();
        let node = world.split_shared(0);
        let (local_rank, local_size) = (node.rank().max(0) as usize, node.size().max(1) as usize);
        Ok(Ranks {
            _universe: universe,
            world,
            threaded: threading == Threading::Multiple,
            local_rank,
            local_size,
            entered: AtomicBool::new(false),
        })
    }

    pub fn rank(&self) -> usize {
        self.world.rank().max(0) as usize
    }

    pub fn size(&self) -> usize {
        self.world.size().max(1) as usize
    }

    /// This rank's index among the ranks on its node (its GPU is `local_rank % GPUs`).
    pub fn local_rank(&self) -> usize {
        self.local_rank
    }

    /// The ranks on this rank's node (they share its cores: each takes its share of threads).
    pub fn local_size(&self) -> usize {
        self.local_size
    }

    /// Whether the library gave `MPI_THREAD_MULTIPLE` (then rank 0 works on cases while its
    /// dispatcher thread hands them out; otherwise rank 0 only dispatches).
    pub fn threaded(&self) -> bool {
        self.threaded
    }

    /// Every rank's `mine` combined: `Ok` on every rank when all are fine; otherwise every rank
    /// gets the error of the lowest failing rank, "rank R: message".
    pub fn agree(&self, mine: Result<(), String>) -> Result<(), GeofieldError> {
        let me = self.rank() as i32;
        let bad = if mine.is_err() { me } else { i32::MAX };
        let mut lowest = i32::MAX;
        self.world
            .all_reduce_into(&bad, &mut lowest, ::mpi::collective::SystemOperation::min());
        if lowest == i32::MAX {
            return Ok(());
        }
        let mut msg = match &mine {
            Err(m) if lowest == me => m.clone().into_bytes(),
            _ => Vec::new(),
        };
        let root = self.world.process_at_rank(lowest);
        let mut len = msg.len() as u64;
        root.broadcast_into(&mut len);
        msg.resize(len as usize, 0);
        root.broadcast_into(&mut msg[..]);
        Err(GeofieldError::Invalid(format!(
            "rank {lowest}: {}",
            String::from_utf8_lossy(&msg)
        )))
    }

    /// A failure of this rank before it reached [`Ranks::ensemble`] (reading or checking its
    /// inputs): the ranks waiting there learn it through [`Ranks::agree`] and return it, naming
    /// this rank, instead of waiting for this one forever. Does nothing after the ensemble.
    pub fn fail(&self, message: String) {
        if !self.entered.swap(true, Ordering::SeqCst) {
            let _ = self.agree(Err(message));
        }
    }

    /// The start of a split run: [`Ranks::agree`] on every rank's inputs. From here on a rank
    /// that fails tells the others itself, at their next combining or agreeing point
    /// ([`Ranks::fail`] does nothing any more).
    pub fn start(&self, mine: Result<(), String>) -> Result<(), GeofieldError> {
        self.entered.store(true, Ordering::SeqCst);
        self.agree(mine)
    }

    /// [`Ranks::agree`], then `[max, sum]` over the ranks of `mine`'s two values: the
    /// combining of a split dispersal ([`crate::dispersal::RowShare::combine`]).
    pub fn combine(&self, mine: Result<[f64; 2], String>) -> Result<[f64; 2], GeofieldError> {
        let v = match &mine {
            Ok(v) => *v,
            Err(_) => [0.0; 2],
        };
        self.agree(mine.map(|_| ()))?;
        let (mut max, mut sum) = (0.0f64, 0.0f64);
        self.world
            .all_reduce_into(&v[0], &mut max, ::mpi::collective::SystemOperation::max());
        self.world
            .all_reduce_into(&v[1], &mut sum, ::mpi::collective::SystemOperation::sum());
        Ok([max, sum])
    }

    /// Every rank's `mine`, on rank 0 in rank order (`None` on the others). Sent in rounds of
    /// at most 1 GiB over all ranks (MPI counts and displacements are 32-bit).
    pub fn gather_bytes(&self, mine: &[u8]) -> Option<Vec<Vec<u8>>> {
        self.gather(mine)
    }

    /// [`Ranks::gather_bytes`] for any MPI type (f64 values go as they are, unconverted).
    pub fn gather<T>(&self, mine: &[T]) -> Option<Vec<Vec<T>>>
    where
        T: Equivalence + Clone + Default,
    {
        let round = ((1usize << 30) / std::mem::size_of::<T>().max(1) / self.size()).max(1);
        let root = self.world.process_at_rank(0);
        let rounds_mine = mine.len().div_ceil(round) as u64;
        let mut rounds = 0u64;
        self.world.all_reduce_into(
            &rounds_mine,
            &mut rounds,
            ::mpi::collective::SystemOperation::max(),
        );
        let mut all: Vec<Vec<T>> = vec![Vec::new(); if self.rank() == 0 { self.size() } else { 0 }];
        for k in 0..rounds.max(1) as usize {
            let piece = mine
                .get((k * round).min(mine.len())..((k + 1) * round).min(mine.len()))
                .unwrap_or(&[]);
            let len = piece.len() as i32;
            if self.rank() == 0 {
                let mut lens = vec![0i32; self.size()];
                root.gather_into_root(&len, &mut lens[..]);
                let mut displs = Vec::with_capacity(lens.len());
                let mut total = 0usize;
                for &l in &lens {
                    // A round is at most 1 GiB over all ranks: within i32.
                    displs.push(total as i32);
                    total += l as usize;
                }
                let mut buf = vec![T::default(); total];
                {
                    let mut part = PartitionMut::new(&mut buf[..], &lens[..], &displs[..]);
                    root.gather_varcount_into_root(piece, &mut part);
                }
                for (r, (&l, &d)) in lens.iter().zip(&displs).enumerate() {
                    all[r].extend_from_slice(&buf[d as usize..d as usize + l as usize]);
                }
            } else {
                root.gather_into(&len);
                root.gather_varcount_into(piece);
            }
        }
        (self.rank() == 0).then_some(all)
    }

    /// Rank 0's `bytes` on every rank (the others' argument is ignored).
    pub fn broadcast_bytes(&self, bytes: Vec<u8>) -> Vec<u8> {
        let root = self.world.process_at_rank(0);
        let mut b = if self.rank() == 0 { bytes } else { Vec::new() };
        let mut len = b.len() as u64;
        root.broadcast_into(&mut len);
        b.resize(len as usize, 0);
        root.broadcast_into(&mut b[..]);
        b
    }

    /// Runs cases `0..n` over the ranks (see the [module docs](self)); case 0 runs on rank 0
    /// (which writes what only the first case produces). Returns, on rank 0, every case's bytes
    /// in case order, and `None` on the other ranks; an error on every rank if any case failed.
    pub fn ensemble(
        &self,
        n: usize,
        work: &mut dyn FnMut(usize) -> Result<Vec<u8>, GeofieldError>,
    ) -> Result<Option<Vec<Vec<u8>>>, GeofieldError> {
        // Every rank got here with its inputs read and checked, or the job stops now.
        self.start(Ok(()))?;
        let mut done: Vec<(usize, Vec<u8>)> = Vec::new();
        let mut error: Option<String> = None;
        if self.rank() == 0 {
            let next = AtomicUsize::new(1);
            let stop = AtomicBool::new(false);
            let mut lost = false;
            let mut run = |i: usize, done: &mut Vec<(usize, Vec<u8>)>| match work(i) {
                Ok(b) => done.push((i, b)),
                Err(e) => {
                    stop.store(true, Ordering::SeqCst);
                    error = Some(format!("case {i}: {e}"));
                }
            };
            if n > 0 {
                run(0, &mut done);
            }
            std::thread::scope(|s| {
                let dispatcher = (self.size() > 1).then(|| {
                    s.spawn(|| {
                        let mut finished = 0;
                        while finished < self.size() - 1 {
                            // A blocking receive spins (MPICH polls): it would take a core from
                            // rank 0's own work. Probe, and sleep a little between probes.
                            let Some(status) =
                                self.world.any_process().immediate_probe_with_tag(TAG_ASK)
                            else {
                                std::thread::sleep(std::time::Duration::from_micros(500));
                                continue;
                            };
                            let (msg, _) = self
                                .world
                                .process_at_rank(status.source_rank())
                                .receive_with_tag::<i64>(TAG_ASK);
                            if msg == FAILED {
                                stop.store(true, Ordering::SeqCst);
                            }
                            let i = if stop.load(Ordering::SeqCst) {
                                NONE
                            } else {
                                let i = next.fetch_add(1, Ordering::SeqCst);
                                if i < n { i as i64 } else { NONE }
                            };
                            if i == NONE {
                                finished += 1;
                            }
                            self.world
                                .process_at_rank(status.source_rank())
                                .send_with_tag(&i, TAG_GIVE);
                        }
                    })
                });
                if self.threaded || dispatcher.is_none() {
                    while !stop.load(Ordering::SeqCst) {
                        let i = next.fetch_add(1, Ordering::SeqCst);
                        if i >= n {
                            break;
                        }
                        run(i, &mut done);
                    }
                }
                if let Some(d) = dispatcher
                    && d.join().is_err()
                {
                    lost = true;
                }
            });
            if lost {
                error.get_or_insert_with(|| "rank 0's dispatcher thread failed".into());
            }
        } else {
            let root = self.world.process_at_rank(0);
            let mut ask = ASK;
            loop {
                root.send_with_tag(&ask, TAG_ASK);
                let (i, _) = root.receive_with_tag::<i64>(TAG_GIVE);
                if i < 0 {
                    break;
                }
                match work(i as usize) {
                    Ok(b) => done.push((i as usize, b)),
                    Err(e) => {
                        error = Some(format!("case {i}: {e}"));
                        ask = FAILED;
                    }
                }
            }
        }
        // Every rank's results (case, bytes) and error, gathered on rank 0.
        let mut mine = Vec::new();
        for (i, b) in &done {
            mine.extend_from_slice(&(*i as u64).to_le_bytes());
            mine.extend_from_slice(&(b.len() as u64).to_le_bytes());
            mine.extend_from_slice(b);
        }
        if let Some(e) = &error {
            mine.extend_from_slice(&u64::MAX.to_le_bytes());
            mine.extend_from_slice(&(e.len() as u64).to_le_bytes());
            mine.extend_from_slice(e.as_bytes());
        }
        let root = self.world.process_at_rank(0);
        let mut verdict = 0u8;
        let mut out = None;
        if let Some(all) = self.gather_bytes(&mine) {
            let mut cases: Vec<Option<Vec<u8>>> = vec![None; n];
            let mut errors = Vec::new();
            for (r, part) in all.iter().enumerate() {
                let mut at = 0;
                let end = part.len();
                while at + 16 <= end {
                    let i = u64::from_le_bytes(part[at..at + 8].try_into().unwrap_or([0; 8]));
                    let k = u64::from_le_bytes(part[at + 8..at + 16].try_into().unwrap_or([0; 8]))
                        as usize;
                    let body = part[at + 16..(at + 16 + k).min(end)].to_vec();
                    at += 16 + k;
                    if i == u64::MAX {
                        errors.push(format!("rank {r}: {}", String::from_utf8_lossy(&body)));
                    } else if let Some(c) = cases.get_mut(i as usize) {
                        *c = Some(body);
                    }
                }
            }
            if !errors.is_empty() {
                verdict = 1;
                error = Some(errors.join("; "));
            } else if cases.iter().any(Option::is_none) {
                verdict = 1;
                error = Some("a case's result went missing".into());
            } else {
                out = Some(cases.into_iter().flatten().collect());
            }
        }
        // Everyone learns the verdict (and rank 0's message), so that every rank exits alike.
        root.broadcast_into(&mut verdict);
        if verdict != 0 {
            let msg = self.broadcast_bytes(error.unwrap_or_default().into_bytes());
            return Err(GeofieldError::Invalid(
                String::from_utf8_lossy(&msg).into_owned(),
            ));
        }
        Ok(out)
    }
}

impl Ranks {
    /// Sends `mine` to rank `to` and receives as many values from rank `from` (either may be
    /// absent: the domain's edge).
    fn shift(
        &self,
        mine: &[f64],
        to: Option<usize>,
        from: Option<usize>,
        tag: i32,
    ) -> Option<Vec<f64>> {
        use ::mpi::point_to_point::send_receive_into_with_tags;
        let at = |r: usize| self.world.process_at_rank(r as i32);
        let mut got = from.map(|_| vec![0.0; mine.len()]);
        match (to.map(at), from.map(at), got.as_mut()) {
            (Some(to), Some(from), Some(buf)) => {
                send_receive_into_with_tags(mine, &to, tag, &mut buf[..], &from, tag);
            }
            (Some(to), None, _) => to.send_with_tag(mine, tag),
            (None, Some(from), Some(buf)) => {
                from.receive_into_with_tag(&mut buf[..], tag);
            }
            _ => {}
        }
        got
    }
}

/// The split wind solve's exchanges ([`crate::wind::split`]): rank r holds the r-th band of
/// rows from the north.
impl crate::wind::split::Exchange for Ranks {
    fn part(&self) -> usize {
        self.rank()
    }

    fn parts(&self) -> usize {
        self.size()
    }

    fn halo(&self, first: &[f64], last: &[f64]) -> (Option<Vec<f64>>, Option<Vec<f64>>) {
        let r = self.rank();
        let north = r.checked_sub(1);
        let south = (r + 1 < self.size()).then_some(r + 1);
        // First rows go north (a chain from the last rank: no cycle, no deadlock), then last
        // rows go south.
        let from_south = self.shift(first, north, south, TAG_NORTH);
        let from_north = self.shift(last, south, north, TAG_SOUTH);
        (from_north, from_south)
    }

    fn all_gather(&self, mine: &[f64]) -> Vec<f64> {
        use rayon::prelude::*;
        let size = self.size();
        let mut lens = vec![0u64; size];
        self.world
            .all_gather_into(&(mine.len() as u64), &mut lens[..]);
        let lens: Vec<usize> = lens.into_iter().map(|l| l as usize).collect();
        let mut starts = Vec::with_capacity(size);
        let mut total = 0usize;
        for &l in &lens {
            starts.push(total);
            total += l;
        }
        // The result's pages first touched on every core: MPI's copies into fresh pages would
        // take the page faults one by one (seconds for gigabytes).
        let mut out: Vec<f64> = (0..total).into_par_iter().map(|_| 0.0).collect();
        // In rounds of at most 2^27 values (1 GiB) over all ranks (MPI counts are 32-bit),
        // each received straight into its place in `out` where the round's span of `out` has
        // 32-bit offsets, else through a compact buffer.
        let round = ((1usize << 27) / size).max(1);
        let rounds = lens.iter().max().map_or(0, |l| l.div_ceil(round)).max(1);
        for k in 0..rounds {
            let piece = mine
                .get((k * round).min(mine.len())..((k + 1) * round).min(mine.len()))
                .unwrap_or(&[]);
            let counts: Vec<usize> = lens
                .iter()
                .map(|&l| l.saturating_sub(k * round).min(round))
                .collect();
            let offs: Vec<usize> = starts.iter().map(|&s| s + k * round).collect();
            let used = || (0..size).filter(|&r| counts[r] > 0);
            let base = used().map(|r| offs[r]).min().unwrap_or(0);
            let end = used().map(|r| offs[r] + counts[r]).max().unwrap_or(base);
            let c32: Vec<i32> = counts.iter().map(|&c| c as i32).collect();
            if end - base <= i32::MAX as usize {
                let d32: Vec<i32> = (0..size)
                    .map(|r| {
                        if counts[r] > 0 {
                            (offs[r] - base) as i32
                        } else {
                            0
                        }
                    })
                    .collect();
                let mut part = PartitionMut::new(&mut out[base..end], &c32[..], &d32[..]);
                self.world.all_gather_varcount_into(piece, &mut part);
            } else {
                let mut d32 = Vec::with_capacity(size);
                let mut n = 0usize;
                for &c in &counts {
                    d32.push(n as i32);
                    n += c;
                }
                let mut buf = vec![0.0f64; n];
                {
                    let mut part = PartitionMut::new(&mut buf[..], &c32[..], &d32[..]);
                    self.world.all_gather_varcount_into(piece, &mut part);
                }
                for r in 0..size {
                    let at = d32[r] as usize;
                    out[offs[r]..offs[r] + counts[r]].copy_from_slice(&buf[at..at + counts[r]]);
                }
            }
        }
        out
    }

    fn all_to_all(&self, to: Vec<Vec<f64>>) -> Vec<Vec<f64>> {
        let size = self.size();
        let send_lens: Vec<u64> = (0..size)
            .map(|q| to.get(q).map_or(0, Vec::len) as u64)
            .collect();
        // Every message's length on every rank: rank r's row of `lens` is what it sends.
        let mut lens = vec![0u64; size * size];
        self.world.all_gather_into(&send_lens[..], &mut lens[..]);
        let me = self.rank();
        let mut got: Vec<Vec<f64>> = (0..size)
            .map(|p| vec![0.0; lens[p * size + me] as usize])
            .collect();
        if let Some(own) = to.get(me) {
            got[me].copy_from_slice(own);
        }
        // Point to point in steps: in step k rank r sends to r + k and receives from r - k, so
        // that each step pairs every sender with one receiver; each message in rounds of at
        // most 2^27 values (MPI counts are 32-bit), as many rounds on every rank (the longest
        // message's).
        let round = 1usize << 27;
        let longest = lens.iter().copied().max().unwrap_or(0) as usize;
        let rounds = longest.div_ceil(round);
        for k in 1..size {
            let dst = (me + k) % size;
            let src = (me + size - k) % size;
            let out = to.get(dst).map_or(&[][..], Vec::as_slice);
            let (n_out, n_in) = (out.len(), got[src].len());
            for j in 0..rounds {
                let a = &out[(j * round).min(n_out)..((j + 1) * round).min(n_out)];
                let b_range = (j * round).min(n_in)..((j + 1) * round).min(n_in);
                let b = &mut got[src][b_range];
                ::mpi::point_to_point::send_receive_into_with_tags(
                    a,
                    &self.world.process_at_rank(dst as i32),
                    TAG_MAIL,
                    b,
                    &self.world.process_at_rank(src as i32),
                    TAG_MAIL,
                );
            }
        }
        got
    }

    fn agree(&self, mine: Result<(), String>) -> Result<(), String> {
        Ranks::agree(self, mine).map_err(|e| e.to_string())
    }

    /// Prints "error: rank R: message" and aborts the job (`MPI_Abort`, exit code 2): the other
    /// ranks may be waiting in a collective call this rank will not make.
    fn abandon(&self, message: &str) {
        use std::io::Write as _;
        eprintln!("error: rank {}: {message}", self.rank());
        let _ = std::io::stderr().flush();
        // The message sits in the pipe to the launcher's proxy; MPI_Abort makes the launcher
        // kill every process, and a proxy killed before it forwarded the pipe loses the only
        // line saying why (seen with Hydra, 2 runs in 5). Give it a moment to forward.
        std::thread::sleep(std::time::Duration::from_millis(500));
        self.world.abort(2)
    }

    fn max(&self, x: f64) -> f64 {
        // MPI's max leaves NaN to the implementation: reduce a NaN flag beside the value, so
        // that a rank that blew up stops every rank.
        let mine = [
            if x.is_nan() { f64::NEG_INFINITY } else { x },
            f64::from(u8::from(x.is_nan())),
        ];
        let mut m = [0.0f64; 2];
        self.world.all_reduce_into(
            &mine[..],
            &mut m[..],
            ::mpi::collective::SystemOperation::max(),
        );
        if m[1] > 0.0 { f64::NAN } else { m[0] }
    }
}
