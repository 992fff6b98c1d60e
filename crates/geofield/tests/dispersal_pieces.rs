//! Maps split by rows over parts that each hold only a piece of the stem map
//! (`RowShare::trees`: threads here; MPI ranks reading their byte ranges in the CLI's tests),
//! against one process holding every tree: every cell's bits, and the reports' radius, pairs
//! and tree counts, for 2 and 3 parts (one piece empty), with `cutoff`, `auto` and `nearfar`
//! (whose parts receive only the trees within the (near) radius of their rows; near/far's far
//! field from the parts' lattices summed) and `exact` and the torus (whose parts gather every
//! tree).
//!
//! With a GPU (`backends::for_each_backend`) the f32 cases run on it too: parts sharing the
//! device, against one process on the device.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod backends;

use geofield::dispersal::{
    self, DisperseOptions, FarExchange, Method, Precision, RowShare, SpeciesReport, Stand, Strip,
};
use geofield::forest::split::{LocalParts, band_rows};
use geofield::wind::split::Exchange;
use geofield::{Backend, Cancel, GeofieldError, synth};
use geofield_core::{Extent, GridSpec, RasterData};

/// 120 m × 700 m of 1 m cells (bands of 256 rows: parts of 256, 256 and 188 rows), and a
/// stand that reaches 60 m past the grid on every side (seeds fly in), clustered so that the
/// parts' halos hold different numbers of trees.
fn case() -> (GridSpec, Stand) {
    let grid = GridSpec::from_extent(Extent::new(0.0, 0.0, 120.0, 700.0).unwrap(), 1.0).unwrap();
    let around = Extent::new(-60.0, -60.0, 180.0, 760.0).unwrap();
    let stand = synth::forest(
        3000,
        &around,
        7,
        synth::Pattern::Clustered,
        synth::DbhModel::Uniform15to60,
        &synth::SBS_SHARES,
    );
    (grid, stand)
}

/// The stand's trees `range`, in order: a part's piece.
fn piece(s: &Stand, range: std::ops::Range<usize>) -> Stand {
    Stand::new(
        s.x_m[range.clone()].to_vec(),
        s.y_m[range.clone()].to_vec(),
        s.dbh_cm[range.clone()].to_vec(),
        s.species[range].to_vec(),
    )
    .unwrap()
}

type Run = (Vec<Strip>, Vec<SpeciesReport>);

fn whole(be: &Backend, grid: &GridSpec, stand: &Stand, opts: &DisperseOptions) -> Run {
    let mut strips = Vec::new();
    let reports = dispersal::disperse_strips(
        be,
        grid,
        &synth::sbs_species(),
        stand,
        opts,
        256,
        &mut |_| {},
        &Cancel::new(),
        &mut |s| {
            strips.push(s);
            Ok(())
        },
    )
    .unwrap();
    (strips, reports)
}

/// `parts` threads, part p holding the trees `cuts[p]..cuts[p + 1]` and computing its band.
fn split(
    be: &Backend,
    grid: &GridSpec,
    stand: &Stand,
    opts: &DisperseOptions,
    cuts: &[usize],
    far: FarExchange,
) -> Vec<Run> {
    let parts = cuts.len() - 1;
    let all = LocalParts::new(parts);
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..parts)
            .map(|p| {
                let (all, mine) = (&all, piece(stand, cuts[p]..cuts[p + 1]));
                s.spawn(move || {
                    let ex = all.part(p);
                    let combine = |m: Result<[f64; 2], String>| {
                        ex.agree(m.as_ref().map(|_| ()).map_err(Clone::clone))
                            .map_err(GeofieldError::Invalid)?;
                        let v = m.unwrap_or_default();
                        Ok([ex.max(v[0]), ex.sum(v[1])])
                    };
                    let share = RowShare {
                        rows: band_rows(grid.rows, p, parts),
                        part: p,
                        parts,
                        combine: Some(&combine),
                        trees: Some(&ex),
                        far,
                    };
                    let mut strips = Vec::new();
                    let reports = dispersal::disperse_rows(
                        be,
                        grid,
                        &synth::sbs_species(),
                        &mine,
                        opts,
                        256,
                        &share,
                        &mut |_| {},
                        &Cancel::new(),
                        &mut |s| {
                            strips.push(s);
                            Ok(())
                        },
                    )
                    .unwrap();
                    (strips, reports)
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// Every band's map from strips, as bits.
fn maps(strips: &[Strip], grid: &GridSpec, bands: usize) -> Vec<Vec<u64>> {
    let mut out = vec![vec![u64::MAX; grid.n_cells()]; bands];
    for s in strips {
        let bits: Vec<u64> = match &s.data {
            RasterData::F32(v) => v.iter().map(|x| u64::from(x.to_bits())).collect(),
            RasterData::F64(v) => v.iter().map(|x| x.to_bits()).collect(),
        };
        let at = s.row0 * grid.cols;
        out[s.band][at..at + bits.len()].copy_from_slice(&bits);
    }
    out
}

fn check(method: Method, torus: bool, precision: Precision) {
    check_far(method, torus, precision, FarExchange::Auto);
}

fn check_far(method: Method, torus: bool, precision: Precision, far: FarExchange) {
    for be in backends::backends() {
        if precision == Precision::F32 || !be.is_cuda() {
            check_on(&be, method, torus, precision, far);
        }
    }
}

fn check_on(be: &Backend, method: Method, torus: bool, precision: Precision, far: FarExchange) {
    eprintln!("--- backend {}", be.label());
    let (grid, stand) = case();
    let opts = DisperseOptions {
        method,
        torus,
        precision,
        tolerance: 1e-5,
        ..DisperseOptions::default()
    };
    let (w_strips, w_reports) = whole(be, &grid, &stand, &opts);
    let want = maps(&w_strips, &grid, w_reports.len());
    let n = stand.len();
    // Pieces cut anywhere in the file (uneven; in the second, part 1 holds no tree).
    for cuts in [vec![0, n / 3, n], vec![0, 1000, 1000, n]] {
        let runs = split(be, &grid, &stand, &opts, &cuts, far);
        let strips: Vec<Strip> = runs.iter().flat_map(|r| r.0.clone()).collect();
        let got = maps(&strips, &grid, w_reports.len());
        for (b, (g, w)) in got.iter().zip(&want).enumerate() {
            let differ = g.iter().zip(w).filter(|(a, b)| a != b).count();
            assert_eq!(
                differ,
                0,
                "{} {method:?} torus {torus} cuts {cuts:?}: band {b}: {differ} cells differ",
                be.label()
            );
        }
        for (p, (_, reports)) in runs.iter().enumerate() {
            for (r, w) in reports.iter().zip(&w_reports) {
                let what = format!(
                    "{} {method:?} cuts {cuts:?} part {p} species {}",
                    be.label(),
                    w.name
                );
                assert_eq!(r.method, w.method, "{what}");
                assert_eq!(r.trees_contributing, w.trees_contributing, "{what}");
                assert_eq!(
                    r.radius_m.map(f64::to_bits),
                    w.radius_m.map(f64::to_bits),
                    "{what}"
                );
                assert_eq!(r.pairs, w.pairs, "{what}");
                assert_eq!(r.max_density_per_m2, w.max_density_per_m2, "{what}");
            }
        }
    }
}

#[test]
fn pieces_with_the_cutoff_give_the_whole_stands_maps() {
    check(Method::Cutoff, false, Precision::F64);
    check(Method::Cutoff, false, Precision::F32);
}

#[test]
fn pieces_with_auto_give_the_whole_stands_maps() {
    check(Method::Auto, false, Precision::F32);
}

/// Near/far with pieces: each part's near field from its halo and the far field from the
/// parts' lattices summed (fixed point: the same bits in any order), or every tree gathered,
/// and the choice between them, in f64 and f32.
#[test]
fn pieces_with_nearfar_give_the_whole_stands_maps() {
    for far in [FarExchange::Lattice, FarExchange::Trees, FarExchange::Auto] {
        check_far(Method::NearFar, false, Precision::F64, far);
    }
    check_far(Method::NearFar, false, Precision::F32, FarExchange::Lattice);
}

#[test]
fn pieces_gathered_for_exact_and_the_torus() {
    check(Method::Exact, false, Precision::F64);
    check(Method::Cutoff, true, Precision::F64);
}

/// A cutoff part receives the trees within the radius R of its rows (all that its cells need)
/// and none beyond 3R (its bins' rows of tiles, a tile of at most R, and one more each side):
/// the parts do not gather every tree, which is the point of holding pieces. Checked through the
/// exchange's traffic.
#[test]
fn a_cutoff_part_receives_only_its_halo() {
    receives_only_its_halo(Method::Cutoff);
}

/// A near/far part receives the trees within its near field's radius of its rows, not every
/// tree: the far field crosses as one summed lattice (`sum_i128`, not counted here).
#[test]
fn a_nearfar_part_receives_only_its_near_fields_halo() {
    receives_only_its_halo(Method::NearFar);
}

fn receives_only_its_halo(method: Method) {
    let (grid, stand) = case();
    let opts = DisperseOptions {
        method,
        tolerance: 1e-5,
        ..DisperseOptions::default()
    };
    let n = stand.len();
    let all = LocalParts::new(3);
    let counted = Counting::new(3);
    std::thread::scope(|s| {
        for p in 0..3 {
            let (all, counted, grid, opts) = (&all, &counted, &grid, &opts);
            let mine = piece(&stand, n * p / 3..n * (p + 1) / 3);
            s.spawn(move || {
                let ex = Counted {
                    inner: all.part(p),
                    counted,
                };
                let share = RowShare {
                    rows: band_rows(grid.rows, p, 3),
                    part: p,
                    parts: 3,
                    combine: None,
                    trees: Some(&ex),
                    far: FarExchange::Lattice,
                };
                let reports = dispersal::disperse_rows(
                    &Backend::Cpu,
                    grid,
                    &synth::sbs_species()[..1],
                    &mine,
                    opts,
                    256,
                    &share,
                    &mut |_| {},
                    &Cancel::new(),
                    &mut |_| Ok(()),
                )
                .unwrap();
                assert_eq!(reports[0].method, method);
                *counted.radius.lock().unwrap() = reports[0].radius_m.unwrap();
            });
        }
    });
    let r = *counted.radius.lock().unwrap();
    let sp = &synth::sbs_species()[0];
    // Species 0's trees that carry seeds (DBH at least the species' minimum), by their v.
    let v: Vec<f64> = (0..n)
        .filter(|&i| stand.species[i] == 0 && sp.weight(stand.dbh_cm[i]).is_some())
        .map(|i| grid.y_max_m - stand.y_m[i])
        .collect();
    let within = |a: f64, b: f64| v.iter().filter(|&&t| t >= a && t <= b).count();
    for (p, &got) in counted.received().iter().enumerate() {
        let rows = band_rows(grid.rows, p, 3);
        let (a, b) = (rows.start as f64, rows.end as f64);
        let (need, most) = (within(a - r, b + r), within(a - 3.0 * r, b + 3.0 * r));
        let trees = got / 3;
        assert!(
            need <= trees && trees <= most && trees < v.len(),
            "part {p}: received {trees} trees; within R = {r:.1} m {need}, within 3R {most}, of {}",
            v.len()
        );
    }
}

/// An exchange that counts the values each part receives through `all_to_all`.
struct Counting {
    got: std::sync::Mutex<Vec<usize>>,
    radius: std::sync::Mutex<f64>,
}
impl Counting {
    fn new(n: usize) -> Self {
        Self {
            got: std::sync::Mutex::new(vec![0; n]),
            radius: std::sync::Mutex::new(0.0),
        }
    }
    fn received(&self) -> Vec<usize> {
        self.got.lock().unwrap().clone()
    }
}
struct Counted<'a> {
    inner: geofield::wind::split::LocalPart<'a>,
    counted: &'a Counting,
}
impl Exchange for Counted<'_> {
    fn part(&self) -> usize {
        self.inner.part()
    }
    fn parts(&self) -> usize {
        self.inner.parts()
    }
    fn halo(&self, first: &[f64], last: &[f64]) -> (Option<Vec<f64>>, Option<Vec<f64>>) {
        self.inner.halo(first, last)
    }
    fn all_gather(&self, mine: &[f64]) -> Vec<f64> {
        self.inner.all_gather(mine)
    }
    fn all_to_all(&self, to: Vec<Vec<f64>>) -> Vec<Vec<f64>> {
        let got = self.inner.all_to_all(to);
        self.counted.got.lock().unwrap()[self.part()] += got.iter().map(Vec::len).sum::<usize>();
        got
    }
    fn max(&self, x: f64) -> f64 {
        self.inner.max(x)
    }
    fn sum_i128(&self, mine: Vec<i128>) -> Vec<i128> {
        self.inner.sum_i128(mine)
    }
}
